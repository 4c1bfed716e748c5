// SPDX-License-Identifier: BSD-2-Clause
/*
 * kconform: the guest side of kernel_conformance.  Runs in the busybox
 * guest of tests/kernel/run-guest (static: the guest has no libc).
 *
 *   kconform mount SOURCE TARGET OPTIONS   mount(2) of type "nfs" with the
 *                                          text options as given (busybox
 *                                          mount cannot pass NFSv3's)
 *   kconform rpc-stubs                     a stand-in rpcbind (127.0.0.1:111)
 *                                          and rpc.statd for the kernel's
 *                                          lockd, in the background
 *   kconform run DIR                       the scenarios in DIR, one line each
 *   kconform cross DIR-V3 DIR-V4.2         the two-client scenarios, in one
 *                                          directory seen over both mounts
 *   kconform list [cross]                  the scenarios' names
 *
 * The kernel's NLM client asks the local rpc.statd to monitor the server
 * before its first lock (nsm_monitor: no statd, no lock) and lockd
 * registers with the local rpcbind; the guest has neither, so rpc-stubs
 * answers both: every registration succeeds and SM_MON says "monitored".
 * Crash recovery (SM_NOTIFY) is not what is compared here.
 *
 * Each scenario prints one line "KCONF NAME: RESULT", the result made of
 * errno names and relations only (no inode numbers, no times), so the
 * transcript of one back end can be compared with another's line by line.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#define KiB 1024LL
#define MiB (1024 * KiB)
#define TiB (1024 * 1024 * MiB)
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static void die(const char *what)
{
	fprintf(stderr, "kconform: %s: %s\n", what, strerror(errno));
	exit(2);
}

/* --- results ------------------------------------------------------------ */

/* "ok" or the errno's name of a call that returned r (< 0 on failure). */
static const char *res(long r)
{
	const char *name;

	if (r >= 0)
		return "ok";
	name = strerrorname_np(errno);
	return name ? name : "E?";
}

static char line[4096];
static size_t line_len;

static void part(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	line_len += vsnprintf(line + line_len, sizeof(line) - line_len, fmt, ap);
	va_end(ap);
	if (line_len >= sizeof(line))
		line_len = sizeof(line) - 1;
}

/* the scenario running, named by its entry in the tables below */
static const char *scenario;

static void say(void)
{
	printf("KCONF %s: %s\n", scenario, line);
	fflush(stdout);
	line_len = 0;
	line[0] = 0;
}

/* The scenario's own directory: every path below is relative to it. */
static void enter(const char *base, const char *name)
{
	char p[4096];

	snprintf(p, sizeof(p), "%s/%s", base, name);
	if (mkdir(p, 0755) < 0 || chdir(p) < 0)
		die(p);
}

static int put(const char *path, const char *text)
{
	int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* The file's text (at most 63 bytes), or its errno's name. */
static const char *get(const char *path)
{
	static char buf[64];
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return res(-1);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return res(-1);
	buf[n] = 0;
	return buf;
}

static const char *exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0 ? "exists" : res(-1);
}

static long nlink(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0 ? (long)st.st_nlink : -1;
}

static const char *type_of(mode_t m)
{
	return S_ISREG(m) ? "file" : S_ISDIR(m) ? "dir" :
	       S_ISLNK(m) ? "link" : S_ISFIFO(m) ? "fifo" : "other";
}

/* --- names and directories ---------------------------------------------- */

static void sc_mkdir(void)
{
	part("mkdir %s", res(mkdir("d", 0755)));
	part(", again %s", res(mkdir("d", 0755)));
	part(", missing parent %s", res(mkdir("none/d", 0755)));
	put("f", "x");
	part(", under a file %s", res(mkdir("f/d", 0755)));
	part(", nlink %ld", nlink("d"));
	mkdir("d/a", 0755);
	mkdir("d/b", 0755);
	put("d/c", "x");
	part(", with 2 subdirs nlink %ld", nlink("d"));
	say();
}

static void sc_create(void)
{
	int fd = open("f", O_CREAT | O_EXCL | O_WRONLY, 0644);

	part("O_EXCL %s", res(fd));
	if (fd >= 0)
		close(fd);
	part(", again %s", res(open("f", O_CREAT | O_EXCL | O_WRONLY, 0644)));
	fd = open("f", O_CREAT | O_WRONLY, 0644);
	part(", O_CREAT on existing %s", res(fd));
	if (fd >= 0)
		close(fd);
	part(", missing %s", res(open("none", O_RDONLY)));
	symlink("nowhere", "dangling");
	part(", O_EXCL on a dangling symlink %s",
	     res(open("dangling", O_CREAT | O_EXCL | O_WRONLY, 0644)));
	fd = open("dangling", O_CREAT | O_WRONLY, 0644);
	part(", O_CREAT through it %s, made %s", res(fd), exists("nowhere"));
	if (fd >= 0)
		close(fd);
	mkdir("d", 0755);
	part(", dir O_WRONLY %s", res(open("d", O_WRONLY)));
	part(", dir O_CREAT %s", res(open("d", O_CREAT | O_WRONLY, 0644)));
	part(", O_DIRECTORY on a file %s", res(open("f", O_DIRECTORY)));
	part(", through a file %s", res(open("f/x", O_RDONLY)));
	put("t", "0123456789");
	fd = open("t", O_WRONLY | O_TRUNC);
	if (fd >= 0)
		close(fd);
	part(", O_TRUNC leaves '%s'", get("t"));
	fd = open("t", O_WRONLY | O_APPEND);
	if (fd >= 0) {
		if (write(fd, "ab", 2) != 2 || write(fd, "cd", 2) != 2)
			part(", append %s", res(-1));
		close(fd);
	}
	part(", O_APPEND makes '%s'", get("t"));
	say();
}

static void sc_remove(void)
{
	mkdir("d", 0755);
	put("d/f", "x");
	mkdir("e", 0755);
	put("f", "x");
	part("unlink missing %s", res(unlink("none")));
	part(", rmdir missing %s", res(rmdir("none")));
	part(", rmdir non-empty %s", res(rmdir("d")));
	part(", unlink dir %s", res(unlink("e")));
	part(", rmdir file %s", res(rmdir("f")));
	part(", rmdir through file %s", res(rmdir("f/x")));
	part(", unlink through file %s", res(unlink("f/x")));
	part(", rmdir empty %s", res(rmdir("e")));
	part(", unlink %s", res(unlink("f")));
	part(", gone %s", exists("f"));
	say();
}

static void sc_names(void)
{
	char name[300];
	int fd;

	memset(name, 'n', sizeof(name));
	name[255] = 0;
	fd = open(name, O_CREAT | O_WRONLY, 0644);
	part("255 bytes %s", res(fd));
	if (fd >= 0)
		close(fd);
	part(", stat %s", exists(name));
	name[255] = 'n';
	name[256] = 0;
	part(", 256 bytes %s", res(open(name, O_CREAT | O_WRONLY, 0644)));
	part(", mkdir 256 %s", res(mkdir(name, 0755)));
	say();
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The directory's entries but . and .., sorted, with their types; silly
 * (.nfsXXXX) names counted, not named.
 */
static void listing(const char *dir)
{
	char *names[64];
	int n = 0, silly = 0, i;
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d) {
		part("%s", res(-1));
		return;
	}
	while ((e = readdir(d)) && n < 64) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (!strncmp(e->d_name, ".nfs", 4)) {
			silly++;
			continue;
		}
		if (asprintf(&names[n], "%s/%c", e->d_name,
			     e->d_type == DT_DIR ? 'd' : e->d_type == DT_LNK ?
			     'l' : e->d_type == DT_REG ? 'f' : '?') < 0)
			die("asprintf");
		n++;
	}
	closedir(d);
	qsort(names, n, sizeof(*names), cmp_str);
	part("[");
	for (i = 0; i < n; i++) {
		part("%s%s", i ? " " : "", names[i]);
		free(names[i]);
	}
	part("]");
	if (silly)
		part(" +%d .nfs", silly);
}

static void sc_readdir(void)
{
	int i;
	char p[16];

	for (i = 0; i < 5; i++) {
		snprintf(p, sizeof(p), "f%d", i);
		put(p, "x");
	}
	mkdir("d1", 0755);
	mkdir("d2", 0755);
	symlink("f0", "l");
	listing(".");
	unlink("f2");
	rmdir("d1");
	part(", after removals ");
	listing(".");
	say();
}

/* --- rename and links ------------------------------------------------------ */

static void sc_rename_files(void)
{
	put("a", "A");
	put("b", "B");
	part("onto a file %s", res(rename("a", "b")));
	part(", target holds '%s', source %s", get("b"), exists("a"));
	part(", onto itself %s", res(rename("b", "b")));
	part(", missing source %s", res(rename("none", "c")));
	mkdir("d", 0755);
	part(", into a directory %s", res(rename("b", "d/b")));
	part(", there '%s'", get("d/b"));
	mkdir("e", 0755);
	part(", file onto a dir %s", res(rename("d/b", "e")));
	part(", into a missing dir %s", res(rename("d/b", "none/b")));
	link("d/b", "d/h");
	part(", onto its own hard link %s", res(rename("d/b", "d/h")));
	part(", both stay %s %s, nlink %ld", exists("d/b"), exists("d/h"),
	     nlink("d/b"));
	say();
}

static void sc_rename_dirs(void)
{
	mkdir("a", 0755);
	put("a/f", "x");
	mkdir("empty", 0755);
	mkdir("full", 0755);
	put("full/f", "x");
	put("file", "x");
	part("dir onto a file %s", res(rename("a", "file")));
	part(", onto a non-empty dir %s", res(rename("a", "full")));
	part(", onto an empty dir %s", res(rename("a", "empty")));
	part(", moved '%s', source %s", get("empty/f"), exists("a"));
	mkdir("empty/sub", 0755);
	part(", into its own child %s", res(rename("empty", "empty/sub/x")));
	part(", onto its own child %s", res(rename("empty", "empty/sub")));
	part(", onto its parent %s", res(rename("empty/sub", "empty")));
	part(", onto itself %s", res(rename("empty", "empty")));
	part(", nlink of parent %ld", nlink("."));
	say();
}

static void sc_links(void)
{
	put("f", "x");
	mkdir("d", 0755);
	part("link %s", res(link("f", "g")));
	part(", nlink %ld", nlink("f"));
	part(", onto an existing name %s", res(link("f", "g")));
	part(", of a directory %s", res(link("d", "e")));
	part(", of a missing file %s", res(link("none", "h")));
	part(", into a missing dir %s", res(link("f", "none/h")));
	put("g", "y");
	part(", write through one reads '%s'", get("f"));
	unlink("g");
	part(", after unlink nlink %ld", nlink("f"));
	say();
}

static void sc_symlinks(void)
{
	char buf[2048], target[1100];
	struct stat st;
	ssize_t n;

	put("f", "through");
	part("symlink %s", res(symlink("f", "l")));
	n = readlink("l", buf, sizeof(buf));
	part(", readlink %s '%.*s'", res(n), n > 0 ? (int)n : 0, buf);
	part(", reads '%s'", get("l"));
	part(", onto an existing name %s", res(symlink("f", "l")));
	lstat("l", &st);
	part(", lstat %s", type_of(st.st_mode));
	stat("l", &st);
	part(", stat %s", type_of(st.st_mode));
	symlink("none", "dangling");
	part(", dangling stat %s", res(stat("dangling", &st)));
	part(", readlink of a file %s", res(readlink("f", buf, sizeof(buf))));
	memset(target, 't', 1023);
	target[1023] = 0;
	part(", 1023-byte target %s", res(symlink(target, "long")));
	n = readlink("long", buf, sizeof(buf));
	part(" reads back %zd", n);
	mkdir("d", 0755);
	symlink("d", "ld");
	part(", rmdir of a link to a dir %s", res(rmdir("ld")));
	part(", unlink it %s, dir %s", res(unlink("ld")), exists("d"));
	say();
}

/* --- open, unlink, read (silly rename) ----------------------------------- */

static void sc_silly_rename(void)
{
	char buf[16];
	struct stat st;
	int fd, i;
	ssize_t n;

	put("f", "still here");
	fd = open("f", O_RDWR);
	part("open %s", res(fd));
	part(", unlink %s, name %s", res(unlink("f")), exists("f"));
	n = pread(fd, buf, sizeof(buf), 0);
	part(", read %s '%.*s'", res(n), n > 0 ? (int)n : 0, buf);
	part(", write %s", res(pwrite(fd, "STILL", 5, 0)));
	n = pread(fd, buf, sizeof(buf), 0);
	part(", reads '%.*s'", n > 0 ? (int)n : 0, buf);
	part(", fstat %s", res(fstat(fd, &st)));
	part(" nlink %ld, listing ", (long)st.st_nlink);
	listing(".");
	close(fd);
	/* the client removes its silly name after the last close, by itself */
	for (i = 0; i < 100; i++) {
		DIR *d = opendir(".");
		struct dirent *e;
		bool silly = false;

		while (d && (e = readdir(d)))
			silly |= !strncmp(e->d_name, ".nfs", 4);
		if (d)
			closedir(d);
		if (!silly)
			break;
		usleep(100000);
	}
	part(", after close ");
	listing(".");
	say();
}

/* --- large and sparse files --------------------------------------------- */

static const char *seek_name(int fd, off_t from, int whence)
{
	static char buf[2][32];
	static int i;
	off_t r = lseek(fd, from, whence);

	i ^= 1;
	if (r < 0)
		return res(-1);
	snprintf(buf[i], sizeof(buf[i]), "%#llx", (long long)r);
	return buf[i];
}

static bool all(const char *p, size_t n, char c)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != c)
			return false;
	return true;
}

static void sc_sparse(void)
{
	static char blk[4096], got[4096];
	int fd = open("big", O_CREAT | O_RDWR, 0644);
	struct stat st;

	memset(blk, 0x5a, sizeof(blk));
	part("truncate to 1 TiB %s", res(ftruncate(fd, TiB)));
	fstat(fd, &st);
	part(", size %#llx", (long long)st.st_size);
	part(", write at the end %s",
	     res(pwrite(fd, blk, sizeof(blk), TiB - 4096)));
	part(", fsync %s", res(fsync(fd)));
	fstat(fd, &st);
	part(", size %#llx, %s blocks", (long long)st.st_size,
	     st.st_blocks * 512LL <= MiB ? "few" : "many");
	part(", hole reads %s",
	     pread(fd, got, sizeof(got), TiB / 2) == sizeof(got) &&
	     all(got, sizeof(got), 0) ? "zeros" : res(-1));
	part(", end reads %s",
	     pread(fd, got, sizeof(got), TiB - 4096) == sizeof(got) &&
	     !memcmp(got, blk, sizeof(blk)) ? "back" : "wrong");
	part(", past the end reads %zd", pread(fd, got, 1, TiB));
	part(", SEEK_DATA 0 %s", seek_name(fd, 0, SEEK_DATA));
	part(", SEEK_HOLE 0 %s", seek_name(fd, 0, SEEK_HOLE));
	part(", SEEK_HOLE at the data %s",
	     seek_name(fd, TiB - 4096, SEEK_HOLE));
	part(", SEEK_DATA past the end %s", seek_name(fd, TiB, SEEK_DATA));
	part(", to 2 TiB %s", res(ftruncate(fd, 2 * TiB)));
	part(", to 8 KiB %s", res(ftruncate(fd, 8 * KiB)));
	fstat(fd, &st);
	part(", size %#llx", (long long)st.st_size);
	part(", SEEK_DATA 0 %s", seek_name(fd, 0, SEEK_DATA));
	close(fd);
	say();
}

static void sc_fallocate(void)
{
	static char buf[MiB];
	int fd = open("f", O_CREAT | O_RDWR, 0644);
	struct stat st;

	part("allocate 1 MiB %s", res(fallocate(fd, 0, 0, MiB)));
	fstat(fd, &st);
	part(", size %#llx", (long long)st.st_size);
	part(", keep size %s",
	     res(fallocate(fd, FALLOC_FL_KEEP_SIZE, MiB, MiB)));
	fstat(fd, &st);
	part(", size %#llx", (long long)st.st_size);
	memset(buf, 0xab, sizeof(buf));
	part(", write %s", res(pwrite(fd, buf, sizeof(buf), 0)));
	fsync(fd);
	part(", punch 256K..512K %s",
	     res(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			   256 * KiB, 256 * KiB)));
	fsync(fd);
	memset(buf, 0, sizeof(buf));
	if (pread(fd, buf, sizeof(buf), 0) != sizeof(buf))
		part(", read %s", res(-1));
	part(", reads %s", all(buf, 256 * KiB, (char)0xab) &&
	     all(buf + 256 * KiB, 256 * KiB, 0) &&
	     all(buf + 512 * KiB, 512 * KiB, (char)0xab) ?
	     "hole punched" : all(buf, MiB, (char)0xab) ? "unchanged" :
	     "wrong");
	fstat(fd, &st);
	part(", size %#llx", (long long)st.st_size);
	part(", SEEK_HOLE 0 %s", seek_name(fd, 0, SEEK_HOLE));
	part(", SEEK_DATA 256K %s", seek_name(fd, 256 * KiB, SEEK_DATA));
	part(", punch past the end %s",
	     res(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			   4 * MiB, MiB)));
	part(", zero range %s",
	     res(fallocate(fd, FALLOC_FL_ZERO_RANGE, 0, 4096)));
	part(", allocate past the end %s", res(fallocate(fd, 0, 3 * MiB, 4096)));
	fstat(fd, &st);
	part(", size %#llx", (long long)st.st_size);
	close(fd);
	say();
}

static void sc_data(void)
{
	static _Alignas(4096) char buf[MiB];
	static _Alignas(4096) char got[MiB];
	size_t i;
	int fd;

	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (char)(i * 7 + i / 4096);
	fd = open("f", O_CREAT | O_WRONLY, 0644);
	part("write 1 MiB %s", res(pwrite(fd, buf, sizeof(buf), 4096)));
	close(fd);
	fd = open("f", O_RDONLY | O_DIRECT);
	part(", O_DIRECT read %s", res(fd));
	part(" %s", pread(fd, got, sizeof(got), 4096) == sizeof(got) &&
	     !memcmp(got, buf, sizeof(got)) ? "same" : "differs");
	part(", head %s", pread(fd, got, 4096, 0) == 4096 &&
	     all(got, 4096, 0) ? "zeros" : "wrong");
	close(fd);
	say();
}

/* --- attributes and times -------------------------------------------------- */

struct times {
	struct timespec m, c;
};

static struct times times_of(const char *path)
{
	struct stat st;
	struct times t = { 0 };

	if (stat(path, &st) == 0) {
		t.m = st.st_mtim;
		t.c = st.st_ctim;
	}
	return t;
}

static bool same(struct timespec a, struct timespec b)
{
	return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

/* What OP (done after a pause longer than any time granularity) changed
 * of the times of the file (named BEFORE before it, AFTER after it) and of
 * the directory ".".
 */
#define CHANGES_AS(label, before, after, op)                                 \
	do {                                                                 \
		struct times f0 = times_of(before), d0 = times_of(".");      \
		struct times f1, d1;                                         \
		const char *r;                                               \
		usleep(1100000);                                             \
		r = res(op);                                                 \
		f1 = times_of(after);                                        \
		d1 = times_of(".");                                          \
		part("%s%s %s: file%s%s, dir%s%s", line_len ? "; " : "",    \
		     label, r, same(f0.m, f1.m) ? "" : " mtime",            \
		     same(f0.c, f1.c) ? "" : " ctime",                      \
		     same(d0.m, d1.m) ? "" : " mtime",                      \
		     same(d0.c, d1.c) ? "" : " ctime");                     \
	} while (0)
#define CHANGES(label, file, op) CHANGES_AS(label, file, file, op)

static void sc_times(void)
{
	struct timeval tv[2] = { { 1000000000, 0 }, { 1000000007, 500000 } };
	struct stat st;
	char buf[4];
	int fd;

	put("f", "0123456789");
	fd = open("f", O_RDWR);
	CHANGES("write", "f", pwrite(fd, "ab", 2, 0) + fsync(fd));
	CHANGES("read", "f", pread(fd, buf, 4, 0));
	CHANGES("chmod", "f", chmod("f", 0600));
	CHANGES("truncate same size", "f", ftruncate(fd, 10));
	CHANGES("truncate", "f", ftruncate(fd, 5));
	close(fd);
	CHANGES("link", "f", link("f", "g"));
	CHANGES("unlink a link", "f", unlink("g"));
	CHANGES_AS("rename", "f", "h", rename("f", "h"));
	CHANGES("create", "h", put("i", "x"));
	CHANGES("open O_TRUNC", "i", close(open("i", O_WRONLY | O_TRUNC)));
	CHANGES("utimes", "h", utimes("h", tv));
	stat("h", &st);
	part(", set mtime %s",
	     st.st_mtim.tv_sec == 1000000007 &&
	     st.st_mtim.tv_nsec == 500000000 ? "exact" : "differs");
	part(", set atime %s",
	     st.st_atim.tv_sec == 1000000000 ? "exact" : "differs");
	say();
}

static void sc_attrs(void)
{
	struct stat st;

	put("f", "x");
	part("chmod 0640 %s", res(chmod("f", 0640)));
	stat("f", &st);
	part(" mode %04o", st.st_mode & 07777);
	part(", chmod 06755 %s", res(chmod("f", 06755)));
	stat("f", &st);
	part(" mode %04o", st.st_mode & 07777);
	part(", chown 1234:5678 %s", res(chown("f", 1234, 5678)));
	stat("f", &st);
	part(" owner %u:%u mode %04o", st.st_uid, st.st_gid,
	     st.st_mode & 07777);
	part(", chown -1:-1 %s", res(chown("f", -1, -1)));
	chmod("f", 04755);
	part(", write by root %s", res(put("f", "yy")));
	stat("f", &st);
	part(" mode %04o size %lld", st.st_mode & 07777, (long long)st.st_size);
	mkdir("d", 0775);
	chown("d", 0, 4321);
	chmod("d", 02775);
	stat("d", &st);
	part(", setgid dir mode %04o", st.st_mode & 07777);
	put("d/f", "x");
	mkdir("d/e", 0755);
	stat("d/f", &st);
	part(", file in it gid %u", st.st_gid);
	stat("d/e", &st);
	part(", dir in it gid %u mode %04o", st.st_gid, st.st_mode & 07777);
	say();
}

static void sc_statfs(void)
{
	struct statvfs sv;

	part("statvfs %s", res(statvfs(".", &sv)));
	part(", namemax %lu", sv.f_namemax);
	say();
}

/* --- locks from two processes -------------------------------------------- */

/* fcntl lock TYPE over [start, start+len) on fd with F_SETLK or F_GETLK;
 * for F_GETLK, what it found.
 */
static const char *plock(int fd, int cmd, short type, off_t start, off_t len)
{
	static char buf[64];
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET,
			    .l_start = start, .l_len = len };

	if (fcntl(fd, cmd, &fl) < 0)
		return res(-1);
	if (cmd != F_GETLK)
		return "ok";
	if (fl.l_type == F_UNLCK)
		return "free";
	snprintf(buf, sizeof(buf), "%s %lld+%lld",
		 fl.l_type == F_WRLCK ? "write-locked" : "read-locked",
		 (long long)fl.l_start, (long long)fl.l_len);
	return buf;
}

/* Runs STEP in a child process (another lock owner, its own open of
 * PATH), whose result goes into the line.
 */
static void in_child_on(const char *path, void (*step)(int fd))
{
	int p[2], status;
	char buf[512];
	ssize_t n;
	pid_t pid;

	if (pipe(p) < 0)
		die("pipe");
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		int fd = open(path, O_RDWR);

		close(p[0]);
		line_len = 0;
		if (fd < 0)
			part("open %s", res(-1));
		else
			step(fd);
		if (write(p[1], line, line_len) < 0)
			_exit(1);
		_exit(0);
	}
	close(p[1]);
	n = read(p[0], buf, sizeof(buf) - 1);
	close(p[0]);
	waitpid(pid, &status, 0);
	buf[n > 0 ? n : 0] = 0;
	part("%s", buf);
}

static void in_child(void (*step)(int fd))
{
	in_child_on("f", step);
}

static void other_tries_write(int fd)
{
	part("[other: write 50+100 %s", plock(fd, F_SETLK, F_WRLCK, 50, 100));
	part(", read 100+100 %s", plock(fd, F_SETLK, F_RDLCK, 100, 100));
	part(", test 0+10 %s", plock(fd, F_GETLK, F_WRLCK, 0, 10));
	part(", test 200+10 %s]", plock(fd, F_GETLK, F_WRLCK, 200, 10));
}

static void other_tries_again(int fd)
{
	part("[other: write 50+100 %s", plock(fd, F_SETLK, F_WRLCK, 50, 100));
	part(", test 0+200 %s]", plock(fd, F_GETLK, F_WRLCK, 0, 200));
}

static void other_reads(int fd)
{
	part("[other: read 0+100 %s", plock(fd, F_SETLK, F_RDLCK, 0, 100));
	part(", write 0+100 %s", plock(fd, F_SETLK, F_WRLCK, 0, 100));
	part(", whole file %s]", plock(fd, F_SETLK, F_WRLCK, 0, 0));
}

static void other_gaps(int fd)
{
	part("[other: test 0+100 %s", plock(fd, F_GETLK, F_WRLCK, 0, 100));
	part(", write 40+20 %s", plock(fd, F_SETLK, F_WRLCK, 40, 20));
	part(", write 39+2 %s]", plock(fd, F_SETLK, F_WRLCK, 39, 2));
}

static void sc_fcntl_locks(void)
{
	int fd, fd2;

	put("f", "0123456789");
	fd = open("f", O_RDWR);
	part("write 0+100 %s ", plock(fd, F_SETLK, F_WRLCK, 0, 100));
	in_child(other_tries_write);
	part(", unlock %s ", plock(fd, F_SETLK, F_UNLCK, 0, 100));
	in_child(other_tries_again);
	part(", read 0+100 %s ", plock(fd, F_SETLK, F_RDLCK, 0, 100));
	in_child(other_reads);
	part(", upgrade %s", plock(fd, F_SETLK, F_WRLCK, 0, 100));
	part(", split %s ", plock(fd, F_SETLK, F_UNLCK, 40, 20));
	in_child(other_gaps);
	fd2 = open("f", O_RDONLY);
	close(fd2);
	part(", closing another descriptor drops them ");
	in_child(other_gaps);
	part(", beyond the end %s", plock(fd, F_SETLK, F_WRLCK, 1 << 30, 10));
	part(", to infinity %s", plock(fd, F_SETLK, F_WRLCK, 1 << 20, 0));
	fd2 = open("f", O_RDONLY);
	part(", write lock on a read-only fd %s",
	     plock(fd2, F_SETLK, F_WRLCK, 0, 1));
	close(fd2);
	close(fd);
	say();
}

static void other_flocks(int fd)
{
	part("[other: exclusive %s", res(flock(fd, LOCK_EX | LOCK_NB)));
	part(", shared %s", res(flock(fd, LOCK_SH | LOCK_NB)));
	part(", fcntl write %s]", plock(fd, F_SETLK, F_WRLCK, 0, 1));
}

static void sc_flock(void)
{
	int fd;

	put("f", "x");
	fd = open("f", O_RDWR);
	part("exclusive %s ", res(flock(fd, LOCK_EX | LOCK_NB)));
	in_child(other_flocks);
	part(", shared %s ", res(flock(fd, LOCK_SH | LOCK_NB)));
	in_child(other_flocks);
	part(", unlocked %s ", res(flock(fd, LOCK_UN)));
	in_child(other_flocks);
	close(fd);
	say();
}

/* --- two clients: the same directory over NFSv3 (a) and NFSv4.2 (b) ---- */

static const char *cross_a, *cross_b;

static const char *at(const char *dir, const char *name)
{
	static char buf[4][4096];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", dir, name);
	return buf[i];
}

static void other_locks_10(int fd)
{
	part("[other client: write 50+10 %s",
	     plock(fd, F_SETLK, F_WRLCK, 50, 10));
	part(", test 0+200 %s]", plock(fd, F_GETLK, F_WRLCK, 0, 200));
}

/* NLM's locks and NFSv4's meet in the server's lock state. */
static void sc_cross_locks(void)
{
	int fd;

	put(at(cross_a, "f"), "0123456789");
	fd = open(at(cross_a, "f"), O_RDWR);
	part("NFSv3 write 0+100 %s ", plock(fd, F_SETLK, F_WRLCK, 0, 100));
	in_child_on(at(cross_b, "f"), other_locks_10);
	part(", unlock %s ", plock(fd, F_SETLK, F_UNLCK, 0, 100));
	in_child_on(at(cross_b, "f"), other_locks_10);
	close(fd);
	fd = open(at(cross_b, "f"), O_RDWR);
	part(", NFSv4.2 write 0+100 %s ", plock(fd, F_SETLK, F_WRLCK, 0, 100));
	in_child_on(at(cross_a, "f"), other_locks_10);
	close(fd);
	say();
}

/* A file one client holds open while the other removes it: a client
 * renames a file it removes while open itself (silly_rename), the server
 * sees a plain REMOVE when another client removes it.
 */
static void removed_while_open(const char *opener, const char *remover)
{
	char buf[16];
	struct stat st;
	ssize_t n;
	int fd;

	put(at(opener, "g"), "still here");
	fd = open(at(opener, "g"), O_RDWR);
	part("open %s", res(fd));
	part(", other client's unlink %s", res(unlink(at(remover, "g"))));
	n = pread(fd, buf, sizeof(buf), 0);
	part(", read %s '%.*s'", res(n), n > 0 ? (int)n : 0, buf);
	part(", write %s", res(pwrite(fd, "STILL", 5, 0)));
	part(", fsync %s", res(fsync(fd)));
	part(", fstat %s", res(fstat(fd, &st)));
	part(", close %s", res(close(fd)));
}

static void sc_cross_removed_open_v4(void)
{
	removed_while_open(cross_b, cross_a);
	say();
}

static void sc_cross_removed_open_v3(void)
{
	removed_while_open(cross_a, cross_b);
	say();
}

static const struct {
	const char *name;
	void (*run)(void);
} cross_scenarios[] = {
	{ "cross_locks", sc_cross_locks },
	{ "open_v4.2_removed_by_v3", sc_cross_removed_open_v4 },
	{ "open_v3_removed_by_v4.2", sc_cross_removed_open_v3 },
};

/* --- a stand-in rpcbind and rpc.statd for the guest's lockd -------------- */

#define PMAP_PROG 100000
#define NSM_PROG 100024
#define STATD_PORT 4011

struct xdr {
	uint32_t *p, *end;
};

static uint32_t get32(struct xdr *x)
{
	return x->p < x->end ? ntohl(*x->p++) : 0;
}

static void skip_opaque(struct xdr *x)
{
	uint32_t n = get32(x);

	x->p += (n + 3) / 4;
}

/* The reply to the call in req (len bytes) into out; its length, or 0 for
 * no reply.
 */
static size_t rpc_answer(uint32_t *req, size_t len, uint32_t *out)
{
	struct xdr x = { req, req + len / 4 };
	uint32_t xid = x.p[0], prog, vers, proc, accept = 0;
	size_t n = 0;

	get32(&x);
	if (get32(&x) != 0 || get32(&x) != 2)	/* CALL, RPC version 2 */
		return 0;
	prog = get32(&x);
	vers = get32(&x);
	proc = get32(&x);
	get32(&x);		/* credential */
	skip_opaque(&x);
	get32(&x);		/* verifier */
	skip_opaque(&x);
	out[n++] = xid;
	out[n++] = htonl(1);	/* REPLY */
	out[n++] = htonl(0);	/* MSG_ACCEPTED */
	out[n++] = htonl(0);	/* AUTH_NONE verifier */
	out[n++] = htonl(0);
	out[n++] = 0;		/* accept status, set below */
	if (prog == PMAP_PROG && proc == 3 && vers == 2) {	/* GETPORT */
		out[n++] = htonl(get32(&x) == NSM_PROG ? STATD_PORT : 0);
	} else if (prog == PMAP_PROG && proc == 3) {	/* GETADDR v3, v4 */
		char addr[32];
		size_t l;

		l = get32(&x) == NSM_PROG ?
		    (size_t)snprintf(addr, sizeof(addr), "127.0.0.1.%d.%d",
				     STATD_PORT >> 8, STATD_PORT & 255) : 0;
		out[n++] = htonl(l);
		memset(&out[n], 0, (l + 3) / 4 * 4);
		memcpy(&out[n], addr, l);
		n += (l + 3) / 4;
	} else if (prog == PMAP_PROG && (proc == 1 || proc == 2)) {
		out[n++] = htonl(1);		/* SET, UNSET: done */
	} else if (prog == PMAP_PROG && proc == 0) {
		;
	} else if (prog == NSM_PROG) {
		/* SM_STAT, SM_MON: STAT_SUCC and a state; SM_UNMON(_ALL): a
		 * state; NULL, SM_SIMU_CRASH, SM_NOTIFY: nothing
		 */
		if (proc == 1 || proc == 2)
			out[n++] = htonl(0);
		if (proc >= 1 && proc <= 4)
			out[n++] = htonl(1);
	} else {
		accept = 1;	/* PROG_UNAVAIL */
	}
	out[5] = htonl(accept);
	return n * 4;
}

static int listener(int type, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int one = 1, s = socket(AF_INET, type, 0);

	if (s < 0)
		die("socket");
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(s, (struct sockaddr *)&a, sizeof(a)) < 0)
		die("bind");
	if (type == SOCK_STREAM && listen(s, 16) < 0)
		die("listen");
	return s;
}

static bool read_full(int fd, void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = read(fd, (char *)buf + done, len - done);

		if (n <= 0)
			return false;
		done += n;
	}
	return true;
}

/* One record of a TCP connection answered; false when it closed. */
static bool serve_tcp(int fd)
{
	static uint32_t req[2048], out[2048];
	uint32_t mark;
	size_t len, n;

	if (!read_full(fd, &mark, 4))
		return false;
	len = ntohl(mark) & 0x7fffffff;	/* the kernel sends one fragment */
	if (len > sizeof(req) || !read_full(fd, req, len))
		return false;
	n = rpc_answer(req, len, out + 1);
	out[0] = htonl(0x80000000 | n);
	return n == 0 || write(fd, out, n + 4) == (ssize_t)(n + 4);
}

static void rpc_stubs(void)
{
	struct pollfd pf[64];
	int nfds = 0, i;

	pf[nfds++].fd = listener(SOCK_STREAM, 111);
	pf[nfds++].fd = listener(SOCK_DGRAM, 111);
	pf[nfds++].fd = listener(SOCK_STREAM, STATD_PORT);
	pf[nfds++].fd = listener(SOCK_DGRAM, STATD_PORT);
	for (i = 0; i < nfds; i++)
		pf[i].events = POLLIN;
	if (fork() != 0)
		return;		/* the parent tells the script it is ready */
	setsid();
	for (;;) {
		if (poll(pf, nfds, -1) < 0)
			continue;
		for (i = 0; i < nfds; i++) {
			static uint32_t req[2048], out[2048];
			struct sockaddr_in from;
			socklen_t fl = sizeof(from);
			ssize_t len;
			size_t n;

			if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (i == 0 || i == 2) {		/* TCP listener */
				int c = accept(pf[i].fd, NULL, NULL);

				if (c >= 0 && nfds < 64) {
					pf[nfds].fd = c;
					pf[nfds++].events = POLLIN;
				} else if (c >= 0) {
					close(c);
				}
			} else if (i == 1 || i == 3) {	/* UDP */
				len = recvfrom(pf[i].fd, req, sizeof(req), 0,
					       (struct sockaddr *)&from, &fl);
				n = len > 0 ? rpc_answer(req, len, out) : 0;
				if (n)
					sendto(pf[i].fd, out, n, 0,
					       (struct sockaddr *)&from, fl);
			} else if (!serve_tcp(pf[i].fd)) {
				close(pf[i].fd);
				pf[i--] = pf[--nfds];
			}
		}
	}
}

/* --- main --------------------------------------------------------------- */

static const struct {
	const char *name;
	void (*run)(void);
} scenarios[] = {
	{ "mkdir", sc_mkdir },
	{ "create", sc_create },
	{ "remove", sc_remove },
	{ "names", sc_names },
	{ "readdir", sc_readdir },
	{ "rename_files", sc_rename_files },
	{ "rename_dirs", sc_rename_dirs },
	{ "links", sc_links },
	{ "symlinks", sc_symlinks },
	{ "silly_rename", sc_silly_rename },
	{ "sparse", sc_sparse },
	{ "fallocate", sc_fallocate },
	{ "data", sc_data },
	{ "times", sc_times },
	{ "attrs", sc_attrs },
	{ "statfs", sc_statfs },
	{ "fcntl_locks", sc_fcntl_locks },
	{ "flock", sc_flock },
};

int main(int argc, char **argv)
{
	size_t i;

	if (argc == 5 && !strcmp(argv[1], "mount")) {
		if (mount(argv[2], argv[3], "nfs", 0, argv[4]) < 0)
			die("mount");
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "rpc-stubs")) {
		rpc_stubs();
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "list")) {
		for (i = 0; i < ARRAY_SIZE(scenarios); i++)
			printf("%s\n", scenarios[i].name);
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "list") &&
	    !strcmp(argv[2], "cross")) {
		for (i = 0; i < sizeof(cross_scenarios) /
			    sizeof(cross_scenarios[0]); i++)
			printf("%s\n", cross_scenarios[i].name);
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "cross")) {
		for (i = 0; i < sizeof(cross_scenarios) /
			    sizeof(cross_scenarios[0]); i++) {
			cross_a = argv[2];
			cross_b = argv[3];
			scenario = cross_scenarios[i].name;
			cross_scenarios[i].run();
		}
		return 0;
	}
	if (argc != 3 || strcmp(argv[1], "run")) {
		fprintf(stderr, "usage: kconform mount SOURCE TARGET OPTIONS | rpc-stubs | run DIR | cross DIR-V3 DIR-V4.2 | list [cross]\n");
		return 2;
	}
	umask(022);
	for (i = 0; i < ARRAY_SIZE(scenarios); i++) {
		scenario = scenarios[i].name;
		enter(argv[2], scenario);
		scenarios[i].run();
	}
	return 0;
}
