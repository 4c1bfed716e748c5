// SPDX-License-Identifier: BSD-2-Clause
/*
 * FSAL_DEDUP against FSAL_VFS, side by side: the same scenarios of file
 * and directory operations run on both (each under its own ganesha-run),
 * every answer is written down, and the two transcripts must agree except
 * for the differences listed, each with its reason, in known_differences
 * below.  A difference not listed fails, and so does a listed one that no
 * longer happens (the table must stay true).
 *
 *   test_fsal_conformance record FILE    (under scripts/ganesha-run)
 *   test_fsal_conformance compare VFS_FILE DEDUP_FILE
 *
 * Scenarios (ganesha-fsal-dedup/README.md, "Conformance with FSAL_VFS",
 * lists them): over NFSv3 and NFSv4.0 (libnfs) in directories of their
 * own, file and directory operations with their errors, renames and links
 * at their edges, symlinks and special files, large sparse files,
 * attributes, which times each operation changes, listings, what an
 * unprivileged user may not do; over NFSv3 by raw calls, CREATE's modes and
 * NLM locks (ganesha-run --nlm); over NFSv4.1/4.2 (nfs4_client.h), OPEN's
 * modes and refusals, byte-range locks, shares, a file removed while open,
 * ALLOCATE, DEALLOCATE and SEEK, a lease running out (ganesha-run --lease).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <time.h>

#include "nfs4_client.h"
#include "nfs_harness.h"

#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-nfs.h>
#include <nfsc/libnfs-raw-nlm.h>

/*
 * The differences allowed: step, FSAL_VFS's answer, FSAL_DEDUP's answer,
 * and why.  Steps are "vN/scenario/what" as recorded.
 */
static const struct difference {
	const char *step;
	const char *vfs;
	const char *dedup;
	const char *reason;
} known_differences[] = {
	{ "v4.1/unlinked/read-after-remove", "NFS4_OK 'still here'", "NFS4ERR_70 ''",
	  "a file removed while open is gone at once from the dedup store (its "
	  "inode and blocks go with its last name: the store keeps no inode "
	  "without a name), so the open's handle is stale; ext4 keeps an "
	  "unlinked inode while FSAL_VFS holds it open.  Linux clients do not "
	  "see it (they rename an open file instead of removing it)" },
	{ "v4.1/unlinked/write-after-remove", "NFS4_OK", "NFS4ERR_70",
	  "the same: a removed file's handle is stale" },
	{ "v4.1/unlinked/close", "NFS4_OK", "NFS4ERR_70",
	  "the same: a removed file's handle is stale" },
	{ "v4.2/zeros/seek-data", "OK data at 0", "OK eof",
	  "an all-zero block written is stored as a hole in the dedup store" },
};

#define NDIFF (sizeof(known_differences) / sizeof(known_differences[0]))

static FILE *out;
static char pfx[64];		/* "v3/", "v4/", "v4.1/", "v4.2/" */
static char scen[64];		/* the scenario */

static void say(const char *what, const char *fmt, ...)
{
	va_list ap;

	fprintf(out, "%s%s/%s\t", pfx, scen, what);
	va_start(ap, fmt);
	vfprintf(out, fmt, ap);
	va_end(ap);
	fputc('\n', out);
}

static const char *ename(int rc)
{
	static char buf[32];
	static const struct {
		int e;
		const char *name;
	} names[] = {
		{ EPERM, "EPERM" },	{ ENOENT, "ENOENT" },	{ EIO, "EIO" },
		{ ENXIO, "ENXIO" },	{ EBADF, "EBADF" },	{ EAGAIN, "EAGAIN" },
		{ EACCES, "EACCES" },	{ EEXIST, "EEXIST" },	{ EXDEV, "EXDEV" },
		{ ENOTDIR, "ENOTDIR" }, { EISDIR, "EISDIR" },	{ EINVAL, "EINVAL" },
		{ EFBIG, "EFBIG" },	{ ENOSPC, "ENOSPC" },	{ EROFS, "EROFS" },
		{ EMLINK, "EMLINK" },	{ ENAMETOOLONG, "ENAMETOOLONG" },
		{ ENOTEMPTY, "ENOTEMPTY" }, { ELOOP, "ELOOP" },
		{ ENOTSUP, "ENOTSUP" }, { ESTALE, "ESTALE" },	{ ENOSYS, "ENOSYS" },
	};

	if (rc >= 0)
		return "OK";
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].e == -rc)
			return names[i].name;
	snprintf(buf, sizeof(buf), "E%d", -rc);
	return buf;
}

/* The answer of a call returning 0 or -errno. */
#define STEP(what, call) say(what, "%s", ename(call))

static struct nfs_context *nfs;
static char dir[128];

static const char *P(const char *name)
{
	static char buf[4][256];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", dir, name);
	return buf[i];
}

static const char *type_name(uint64_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return "file";
	case S_IFDIR: return "dir";
	case S_IFLNK: return "symlink";
	default: return "other";
	}
}

/* What a stat says that both back ends are expected to agree on. */
static void stat_of(struct nfs_context *ctx, const char *what, const char *path, bool follow)
{
	struct nfs_stat_64 st;
	int rc = follow ? nfs_stat64(ctx, path, &st) : nfs_lstat64(ctx, path, &st);

	if (rc < 0) {
		say(what, "%s", ename(rc));
		return;
	}
	say(what, "%s mode %04" PRIo64 " nlink %" PRIu64 " uid %" PRIu64 " gid %" PRIu64
		  " size %" PRIu64, type_name(st.nfs_mode), st.nfs_mode & 07777, st.nfs_nlink,
	    st.nfs_uid, st.nfs_gid, (st.nfs_mode & S_IFMT) == S_IFDIR ? 0 : st.nfs_size);
}

static void say_stat(const char *what, const char *path, bool follow)
{
	stat_of(nfs, what, path, follow);
}

static void say_stat_ctx(struct nfs_context *ctx, const char *what, const char *path)
{
	stat_of(ctx, what, path, true);
}

static int put_file(const char *name, const char *content)
{
	struct nfsfh *fh;
	int rc = nfs_create(nfs, P(name), O_CREAT | O_TRUNC | O_RDWR, 0644, &fh);

	if (rc < 0)
		return rc;
	if (*content)
		rc = nfs_pwrite(nfs, fh, 0, strlen(content), content);
	nfs_close(nfs, fh);
	return rc < 0 ? rc : 0;
}

static void say_content(const char *what, const char *name)
{
	char buf[64] = { 0 };
	struct nfsfh *fh;
	int rc = nfs_open(nfs, P(name), O_RDONLY, &fh);

	if (rc == 0) {
		rc = nfs_pread(nfs, fh, 0, sizeof(buf) - 1, buf);
		nfs_close(nfs, fh);
	}
	say(what, rc < 0 ? "%s" : "'%s'", rc < 0 ? ename(rc) : buf);
}

/* The answer of creating PATH (closed again when it was). */
static void create_step(const char *what, const char *path, int flags, int mode)
{
	struct nfsfh *fh;
	int rc = nfs_create(nfs, path, flags, mode, &fh);

	STEP(what, rc);
	if (rc == 0)
		nfs_close(nfs, fh);
}

/* The answer of opening PATH (closed again when it was). */
static void open_step(const char *what, const char *path, int flags)
{
	struct nfsfh *fh;
	int rc = nfs_open(nfs, path, flags, &fh);

	STEP(what, rc);
	if (rc == 0)
		nfs_close(nfs, fh);
}

static void lookups_and_creations(void)
{
	snprintf(scen, sizeof(scen), "create");
	STEP("stat-missing", nfs_stat64(nfs, P("missing"), &(struct nfs_stat_64){ 0 }));
	open_step("open-missing", P("missing"), O_RDONLY);
	create_step("create", P("f"), O_CREAT | O_EXCL | O_RDWR, 0640);
	say_stat("created", P("f"), true);
	create_step("create-exclusive-existing", P("f"), O_CREAT | O_EXCL | O_RDWR, 0640);
	STEP("mkdir", nfs_mkdir(nfs, P("d")));
	say_stat("made", P("d"), true);
	STEP("mkdir-existing-dir", nfs_mkdir(nfs, P("d")));
	STEP("mkdir-existing-file", nfs_mkdir(nfs, P("f")));
	STEP("mkdir-missing-parent", nfs_mkdir(nfs, P("nodir/x")));
	STEP("mkdir-under-file", nfs_mkdir(nfs, P("f/x")));
	create_step("create-under-file", P("f/x"), O_CREAT | O_RDWR, 0644);
	STEP("stat-under-file", nfs_stat64(nfs, P("f/x"), &(struct nfs_stat_64){ 0 }));
	open_step("open-dir-for-write", P("d"), O_WRONLY);

	snprintf(scen, sizeof(scen), "remove");
	STEP("mkdir-nonempty", nfs_mkdir(nfs, P("full")));
	STEP("fill", put_file("full/x", "x"));
	STEP("rmdir-nonempty", nfs_rmdir(nfs, P("full")));
	STEP("rmdir-file", nfs_rmdir(nfs, P("f")));
	STEP("unlink-dir", nfs_unlink(nfs, P("d")));
	STEP("unlink-missing", nfs_unlink(nfs, P("missing")));
	STEP("rmdir-missing", nfs_rmdir(nfs, P("missing")));
	STEP("unlink", nfs_unlink(nfs, P("full/x")));
	STEP("rmdir", nfs_rmdir(nfs, P("full")));
	say_stat("removed", P("full"), true);
}

static void renames(void)
{
	snprintf(scen, sizeof(scen), "rename");
	STEP("put-a", put_file("a", "content of a"));
	STEP("put-b", put_file("b", "content of b"));
	STEP("file-onto-file", nfs_rename(nfs, P("a"), P("b")));
	say_stat("source-after", P("a"), true);
	say_content("target-after", "b");
	STEP("mkdir-e", nfs_mkdir(nfs, P("e")));
	STEP("mkdir-e2", nfs_mkdir(nfs, P("e2")));
	STEP("mkdir-full", nfs_mkdir(nfs, P("full")));
	STEP("fill", put_file("full/x", "x"));
	STEP("file-onto-dir", nfs_rename(nfs, P("b"), P("e")));
	STEP("dir-onto-file", nfs_rename(nfs, P("e"), P("b")));
	STEP("dir-onto-nonempty-dir", nfs_rename(nfs, P("e"), P("full")));
	STEP("dir-onto-empty-dir", nfs_rename(nfs, P("e"), P("e2")));
	say_stat("dir-source-after", P("e"), true);
	STEP("mkdir-p", nfs_mkdir(nfs, P("p")));
	STEP("mkdir-p-c", nfs_mkdir(nfs, P("p/c")));
	STEP("dir-into-own-child", nfs_rename(nfs, P("p"), P("p/c/x")));
	STEP("dir-onto-own-child", nfs_rename(nfs, P("p"), P("p/c")));
	STEP("onto-itself", nfs_rename(nfs, P("b"), P("b")));
	say_stat("itself-after", P("b"), true);
	STEP("missing", nfs_rename(nfs, P("missing"), P("m2")));
	STEP("into-missing-dir", nfs_rename(nfs, P("b"), P("nodir/b")));
	STEP("link-b-b2", nfs_link(nfs, P("b"), P("b2")));
	STEP("onto-own-hard-link", nfs_rename(nfs, P("b"), P("b2")));
	say_stat("hard-link-source-after", P("b"), true);
	say_stat("hard-link-target-after", P("b2"), true);
	STEP("across-dirs", nfs_rename(nfs, P("b2"), P("p/c/b3")));
	say_stat("across-dirs-after", P("p/c/b3"), true);
}

static void links(void)
{
	char buf[256];

	snprintf(scen, sizeof(scen), "link");
	STEP("put", put_file("l", "linked"));
	STEP("link", nfs_link(nfs, P("l"), P("l2")));
	say_stat("linked", P("l"), true);
	STEP("link-onto-existing", nfs_link(nfs, P("l"), P("l2")));
	STEP("link-missing", nfs_link(nfs, P("missing"), P("l3")));
	STEP("mkdir", nfs_mkdir(nfs, P("ld")));
	STEP("link-dir", nfs_link(nfs, P("ld"), P("ld2")));
	STEP("link-into-missing-dir", nfs_link(nfs, P("l"), P("nodir/l")));
	STEP("unlink-one", nfs_unlink(nfs, P("l2")));
	say_stat("after-unlink", P("l"), true);

	snprintf(scen, sizeof(scen), "symlink");
	STEP("symlink", nfs_symlink(nfs, "target/of/s", P("s")));
	say_stat("lstat", P("s"), false);
	memset(buf, 0, sizeof(buf));
	STEP("readlink", nfs_readlink(nfs, P("s"), buf, sizeof(buf)));
	say("readlink-target", "'%s'", buf);
	STEP("readlink-file", nfs_readlink(nfs, P("l"), buf, sizeof(buf)));
	STEP("symlink-existing", nfs_symlink(nfs, "x", P("l")));
	STEP("stat-dangling", nfs_stat64(nfs, P("s"), &(struct nfs_stat_64){ 0 }));
	STEP("unlink", nfs_unlink(nfs, P("s")));
}

static void sizes(void)
{
	static uint8_t buf[4096];
	struct nfsfh *fh;
	size_t z;
	int rc;

	snprintf(scen, sizeof(scen), "sparse");
	rc = nfs_create(nfs, P("sp"), O_CREAT | O_RDWR, 0644, &fh);
	STEP("create", rc);
	if (rc < 0)
		return;
	STEP("write-at-1T", nfs_pwrite(nfs, fh, 1ull << 40, 1, "x"));
	say_stat("after-write", P("sp"), true);
	memset(buf, 0xff, sizeof(buf));
	rc = nfs_pread(nfs, fh, 1ull << 39, sizeof(buf), buf);
	z = nh_first_diff(buf, (uint8_t[4096]){ 0 }, sizeof(buf));
	say("read-in-hole", "%s count %d zeros %zu", ename(rc), rc, z);
	rc = nfs_pread(nfs, fh, (1ull << 40) - 2, 8, buf);
	say("read-across-end", "%s count %d bytes %02x %02x %02x", ename(rc), rc, buf[0], buf[1],
	    buf[2]);
	STEP("truncate-shrink", nfs_ftruncate(nfs, fh, 3 * 4096 + 5));
	say_stat("after-shrink", P("sp"), true);
	rc = nfs_pread(nfs, fh, 3 * 4096 + 5, 100, buf);
	say("read-at-end", "%s count %d", ename(rc), rc);
	STEP("truncate-extend", nfs_ftruncate(nfs, fh, 1ull << 33));
	say_stat("after-extend", P("sp"), true);
	memset(buf, 0xff, sizeof(buf));
	rc = nfs_pread(nfs, fh, (1ull << 33) - 100, 200, buf);
	z = nh_first_diff(buf, (uint8_t[100]){ 0 }, 100);
	say("read-extension", "%s count %d zeros %zu", ename(rc), rc, z);
	nfs_close(nfs, fh);
	STEP("truncate-path", nfs_truncate(nfs, P("sp"), 10));
	say_stat("after-truncate-path", P("sp"), true);
	STEP("truncate-dir", nfs_truncate(nfs, P("ld"), 0));
	STEP("truncate-missing", nfs_truncate(nfs, P("missing"), 0));
}

struct times {
	uint64_t m, mn, c, cn;
};

static struct times times_of(const char *path)
{
	struct nfs_stat_64 st = { 0 };

	(void)nfs_stat64(nfs, path, &st);
	return (struct times){ st.nfs_mtime, st.nfs_mtime_nsec, st.nfs_ctime, st.nfs_ctime_nsec };
}

/*
 * Which of mtime and ctime an operation changed.  The clocks behind the
 * times tick coarsely (the kernel's, under ext4): wait more than a tick
 * first, so a change cannot be lost in one.
 */
static void say_changed(const char *what, const char *path, struct times before)
{
	struct times t = times_of(path);
	char step[64];

	snprintf(step, sizeof(step), "%s-times", what);
	say(step, "mtime %s ctime %s",
	    t.m != before.m || t.mn != before.mn ? "changed" : "same",
	    t.c != before.c || t.cn != before.cn ? "changed" : "same");
}

static struct times before(const char *path)
{
	struct timespec tick = { 0, 30 * 1000 * 1000 };
	struct times t = times_of(path);

	nanosleep(&tick, NULL);
	return t;
}

static void attributes(void)
{
	struct timeval tv[2] = { { 1000000000, 250000 }, { 1100000000, 500000 } };
	struct nfs_stat_64 st = { 0 };
	struct nfsfh *fh;
	struct times t;
	int rc;

	snprintf(scen, sizeof(scen), "attrs");
	STEP("put", put_file("t", "times"));
	STEP("chmod", nfs_chmod(nfs, P("t"), 0600));
	say_stat("after-chmod", P("t"), true);
	STEP("chmod-setuid", nfs_chmod(nfs, P("t"), 04755));
	say_stat("after-chmod-setuid", P("t"), true);
	STEP("chown", nfs_chown(nfs, P("t"), 1234, 5678));
	say_stat("after-chown", P("t"), true);
	STEP("utimes", nfs_utimes(nfs, P("t"), tv));
	rc = nfs_stat64(nfs, P("t"), &st);
	say("after-utimes", "%s atime %" PRIu64 ".%09" PRIu64 " mtime %" PRIu64 ".%09" PRIu64,
	    ename(rc), st.nfs_atime, st.nfs_atime_nsec, st.nfs_mtime, st.nfs_mtime_nsec);
	STEP("chmod-symlink", nfs_symlink(nfs, "t", P("ts")));
	STEP("lchmod", nfs_lchmod(nfs, P("ts"), 0600));
	say_stat("lchmod-after", P("ts"), false);

	snprintf(scen, sizeof(scen), "times");
	t = before(P("t"));
	rc = nfs_open(nfs, P("t"), O_WRONLY, &fh);
	STEP("open", rc);
	if (rc == 0) {
		STEP("write", nfs_pwrite(nfs, fh, 2, 3, "abc"));
		nfs_close(nfs, fh);
	}
	say_changed("write", P("t"), t);
	t = before(P("t"));
	STEP("chmod", nfs_chmod(nfs, P("t"), 0644));
	say_changed("chmod", P("t"), t);
	t = before(P("t"));
	STEP("truncate", nfs_truncate(nfs, P("t"), 1));
	say_changed("truncate", P("t"), t);
	t = before(P("t"));
	STEP("truncate-same-size", nfs_truncate(nfs, P("t"), 1));
	say_changed("truncate-same-size", P("t"), t);
	t = before(P("t"));
	STEP("link", nfs_link(nfs, P("t"), P("t2")));
	say_changed("link-file", P("t"), t);
	t = before(dir);
	STEP("create-in-dir", put_file("t3", ""));
	say_changed("create-dir", dir, t);
	t = before(dir);
	STEP("unlink-in-dir", nfs_unlink(nfs, P("t3")));
	say_changed("unlink-dir", dir, t);
	t = before(P("t"));
	STEP("unlink-link", nfs_unlink(nfs, P("t2")));
	say_changed("unlink-link-file", P("t"), t);
	t = before(P("t"));
	STEP("rename-file", nfs_rename(nfs, P("t"), P("t4")));
	say_changed("rename-file", P("t4"), t);
	t = before(dir);
	STEP("rename-in-dir", nfs_rename(nfs, P("t4"), P("t")));
	say_changed("rename-dir", dir, t);
	t = before(P("t"));
	rc = nfs_open(nfs, P("t"), O_RDONLY, &fh);
	if (rc == 0) {
		char b[8];

		rc = nfs_pread(nfs, fh, 0, sizeof(b), b);
		nfs_close(nfs, fh);
	}
	STEP("read", rc);
	say_changed("read", P("t"), t);
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void listing(void)
{
	struct nfsdirent *e;
	struct nfsdir *d;
	char *names[128];
	char name[32];
	size_t n = 0, len = 0;
	char all[2048] = "";
	int rc;

	snprintf(scen, sizeof(scen), "readdir");
	STEP("mkdir", nfs_mkdir(nfs, P("list")));
	for (int i = 0; i < 60; i++) {
		snprintf(name, sizeof(name), "list/entry-%02d", i);
		if (put_file(name, "") < 0)
			break;
	}
	STEP("mkdir-sub", nfs_mkdir(nfs, P("list/sub")));
	rc = nfs_opendir(nfs, P("list"), &d);
	STEP("opendir", rc);
	if (rc < 0)
		return;
	while ((e = nfs_readdir(nfs, d)) != NULL && n < 128)
		names[n++] = strdup(e->name);
	qsort(names, n, sizeof(names[0]), name_cmp);
	for (size_t i = 0; i < n; i++) {
		len += (size_t)snprintf(all + len, sizeof(all) - len, "%s%s", i ? "," : "", names[i]);
		free(names[i]);
	}
	nfs_closedir(nfs, d);
	say("entries", "%zu", n);
	say("names", "%s", all);
	say_stat("dir-nlink", P("list"), true);
	STEP("opendir-file", nfs_opendir(nfs, P("l"), &d));
}

static void special_files(void)
{
	char target[1024];

	snprintf(scen, sizeof(scen), "special");
	STEP("mknod-fifo", nfs_mknod(nfs, P("fifo"), S_IFIFO | 0644, 0));
	say_stat("fifo", P("fifo"), false);
	STEP("mknod-char", nfs_mknod(nfs, P("chr"), S_IFCHR | 0600, makedev(1, 3)));
	say_stat("char", P("chr"), false);
	STEP("mknod-existing", nfs_mknod(nfs, P("fifo"), S_IFIFO | 0644, 0));
	STEP("unlink-fifo", nfs_unlink(nfs, P("fifo")));
	/* (libnfs 4.0 sends no target much longer) */
	memset(target, 't', sizeof(target));
	target[1000] = '\0';
	STEP("symlink-1000", nfs_symlink(nfs, target, P("long")));
	memset(target, 0, sizeof(target));
	STEP("readlink-1000", nfs_readlink(nfs, P("long"), target, sizeof(target)));
	/* its first 1000 bytes: libnfs 4.0 leaves NFSv4's target unterminated */
	say("readlink-1000-target", "%s",
	    strspn(target, "t") >= 1000 ? "1000 bytes as written" : "differs");
}

/* A set-group-ID directory hands its group down, and the bit to subdirs. */
static void setgid_dir(void)
{
	snprintf(scen, sizeof(scen), "setgid");
	STEP("mkdir", nfs_mkdir(nfs, P("sg")));
	STEP("chown", nfs_chown(nfs, P("sg"), 0, 4321));
	STEP("chmod", nfs_chmod(nfs, P("sg"), 02775));
	say_stat("dir", P("sg"), true);
	STEP("mkdir-sub", nfs_mkdir(nfs, P("sg/sub")));
	say_stat("sub", P("sg/sub"), true);
	STEP("create", put_file("sg/f", ""));
	say_stat("file", P("sg/f"), true);
}

/*
 * What an unprivileged user (uid 1000, gid 1000, through AUTH_SYS) may do:
 * the checks the back end shares with Ganesha.
 */
static void permissions(int version)
{
	struct nfs_context *root = nfs;
	struct nfsfh *fh;
	int rc;

	snprintf(scen, sizeof(scen), "perm");
	STEP("mkdir-private", nfs_mkdir(nfs, P("private")));
	STEP("chmod-private", nfs_chmod(nfs, P("private"), 0700));
	STEP("mkdir-sticky", nfs_mkdir(nfs, P("sticky")));
	STEP("chmod-sticky", nfs_chmod(nfs, P("sticky"), 01777));
	STEP("put-secret", put_file("secret", "secret"));
	STEP("chmod-secret", nfs_chmod(nfs, P("secret"), 0600));
	STEP("put-rootfile", put_file("sticky/rootfile", "r"));
	STEP("chmod-dir", nfs_chmod(nfs, dir, 0777));

	nfs = nh_mount_user(version, 1000, 1000);
	STEP("user-create", put_file("mine", "mine"));
	say_stat("user-created", P("mine"), true);
	STEP("user-create-in-private", put_file("private/x", ""));
	STEP("user-mkdir-in-private", nfs_mkdir(nfs, P("private/d")));
	STEP("user-stat-in-private", nfs_stat64(nfs, P("private/x"), &(struct nfs_stat_64){ 0 }));
	rc = nfs_open(nfs, P("secret"), O_RDONLY, &fh);
	STEP("user-open-secret", rc);
	if (rc == 0)
		nfs_close(nfs, fh);
	STEP("user-chmod-others", nfs_chmod(nfs, P("secret"), 0666));
	STEP("user-chown-own-to-other", nfs_chown(nfs, P("mine"), 2000, 1000));
	STEP("user-chmod-own", nfs_chmod(nfs, P("mine"), 0640));
	STEP("user-utimes-others", nfs_utimes(nfs, P("secret"),
					      (struct timeval[2]){ { 1, 0 }, { 2, 0 } }));
	STEP("user-unlink-in-sticky", nfs_unlink(nfs, P("sticky/rootfile")));
	STEP("user-rename-in-sticky", nfs_rename(nfs, P("sticky/rootfile"), P("sticky/x")));
	STEP("user-create-in-sticky", put_file("sticky/userfile", "u"));
	STEP("user-unlink-own-in-sticky", nfs_unlink(nfs, P("sticky/userfile")));
	STEP("user-unlink-secret", nfs_unlink(nfs, P("secret")));
	STEP("user-link-secret", nfs_link(nfs, P("secret"), P("secret2")));
	STEP("user-truncate-secret", nfs_truncate(nfs, P("secret"), 0));
	nh_umount(nfs);
	nfs = root;
	say_stat("secret-after", P("secret"), true);
	STEP("chmod-dir-back", nfs_chmod(nfs, dir, 0755));
}

struct create3_cb {
	int done;
	int status;
};

static void create3_done(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct create3_cb *cb = priv;
	CREATE3res *res = data;

	(void)rpc;
	cb->done = 1;
	cb->status = status != RPC_STATUS_SUCCESS ? -EIO :
		     res->status != NFS3_OK	  ? nfsstat3_to_errno(res->status) :
						    0;
}

/* A raw CREATE3 of NAME in DIR with HOW (libnfs makes only UNCHECKED). */
static int create3(struct nfsfh *dirfh, const char *name, createmode3 how,
		   const char *verf)
{
	struct nh_fh h = nh_fh_of(dirfh);
	struct create3_cb cb = { 0 };
	CREATE3args args;
	int rc;

	memset(&args, 0, sizeof(args));
	args.where.dir.data.data_len = h.len;
	args.where.dir.data.data_val = (char *)h.val;
	args.where.name = (char *)name;
	args.how.mode = how;
	if (how == EXCLUSIVE)
		memcpy(args.how.createhow3_u.verf, verf, NFS3_CREATEVERFSIZE);
	if (rpc_nfs3_create_async(nfs_get_rpc_context(nfs), create3_done, &args, &cb) != 0)
		return -EIO;
	rc = nh_rpc_wait(nfs, &cb.done);
	return rc < 0 ? rc : cb.status;
}

/* NFSv3 CREATE's three modes, the exclusive one with its verifier. */
static void creates_v3(void)
{
	struct nfsfh *dirfh;
	char name[257];
	int rc;

	snprintf(scen, sizeof(scen), "create3");
	rc = nfs_open(nfs, dir, O_RDONLY, &dirfh);
	STEP("open-dir", rc);
	if (rc < 0)
		return;
	STEP("exclusive-new", create3(dirfh, "x3", EXCLUSIVE, "verifier"));
	STEP("exclusive-same-verifier", create3(dirfh, "x3", EXCLUSIVE, "verifier"));
	STEP("exclusive-other-verifier", create3(dirfh, "x3", EXCLUSIVE, "another!"));
	say_stat("exclusive-stat", P("x3"), true);
	STEP("setattr-after-exclusive", nfs_chmod(nfs, P("x3"), 0640));
	STEP("exclusive-after-setattr", create3(dirfh, "x3", EXCLUSIVE, "verifier"));
	STEP("guarded-new", create3(dirfh, "g3", GUARDED, NULL));
	STEP("guarded-existing", create3(dirfh, "g3", GUARDED, NULL));
	STEP("unchecked-existing", create3(dirfh, "g3", UNCHECKED, NULL));
	STEP("exclusive-over-dir", create3(dirfh, "d", EXCLUSIVE, "verifier"));
	STEP("unchecked-over-dir", create3(dirfh, "d", UNCHECKED, NULL));
	/* names of 255 and 256 bytes, as sent (libnfs's path calls cut them) */
	memset(name, 'm', 256);
	name[256] = '\0';
	STEP("name-256", create3(dirfh, name, UNCHECKED, NULL));
	name[255] = '\0';
	STEP("name-255", create3(dirfh, name, UNCHECKED, NULL));
	nfs_close(nfs, dirfh);
}

/*
 * NLM, NFSv3's locks, by libnfs's raw calls: an nfs_context that mounts
 * nothing holds the RPC connection to the server's lock manager.
 */
static struct nfs_context *nlm;

struct nlm_cb {
	int done;
	int status;			/* RPC_STATUS_* */
	int proc;			/* NLM4_TEST, NLM4_LOCK, NLM4_UNLOCK */
	int stat;			/* nlmstat4 */
};

static void nlm_done(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct nlm_cb *cb = priv;

	(void)rpc;
	cb->done = 1;
	cb->status = status;
	if (status != RPC_STATUS_SUCCESS || !data)
		return;
	if (cb->proc == NLM4_TEST)
		cb->stat = ((NLM4_TESTres *)data)->reply.status;
	else if (cb->proc == NLM4_LOCK)
		cb->stat = ((NLM4_LOCKres *)data)->status;
	else
		cb->stat = ((NLM4_UNLOCKres *)data)->status;
}

static int nlm_connect(void)
{
	struct nlm_cb cb = { 0 };

	nlm = nfs_init_context();
	if (!nlm || rpc_connect_program_async(nfs_get_rpc_context(nlm), nh_env("NFS_SERVER"),
					      NLM_PROGRAM, NLM_V4, nlm_done, &cb) != 0)
		return -EIO;
	if (nh_rpc_wait(nlm, &cb.done) < 0 || cb.status != RPC_STATUS_SUCCESS)
		return -EIO;
	return 0;
}

/* PROC (NLM4_TEST, NLM4_LOCK, NLM4_UNLOCK) of OWNER's range; the answer. */
static void nlm_step(const char *what, int proc, struct nfsfh *fh, const char *owner,
		     bool exclusive, uint64_t off, uint64_t len)
{
	static const char *const stat_name[] = {
		"GRANTED", "DENIED", "DENIED_NOLOCKS", "BLOCKED", "DENIED_GRACE_PERIOD",
		"DEADLCK", "ROFS", "STALE_FH", "FBIG", "FAILED",
	};
	struct rpc_context *rpc = nfs_get_rpc_context(nlm);
	struct nh_fh h = nh_fh_of(fh);
	struct nlm_cb cb = { .proc = proc };
	nlm4_lock lock = {
		.caller_name = "sc-conformance",
		.fh = { { h.len, (char *)h.val } },
		.oh = (char *)owner,
		.svid = (u_int)owner[strlen(owner) - 1],
		.l_offset = off,
		.l_len = len,
	};
	char cookie[4] = "ck01";
	int rc;

	if (proc == NLM4_TEST) {
		NLM4_TESTargs a = { { { 4, cookie } }, exclusive, lock };

		rc = rpc_nlm4_test_async(rpc, nlm_done, &a, &cb);
	} else if (proc == NLM4_LOCK) {
		NLM4_LOCKargs a = { { { 4, cookie } }, 0, exclusive, lock, 0, 0 };

		rc = rpc_nlm4_lock_async(rpc, nlm_done, &a, &cb);
	} else {
		NLM4_UNLOCKargs a = { { { 4, cookie } }, lock };

		rc = rpc_nlm4_unlock_async(rpc, nlm_done, &a, &cb);
	}
	if (rc == 0)
		rc = nh_rpc_wait(nlm, &cb.done);
	if (rc < 0 || cb.status != RPC_STATUS_SUCCESS)
		say(what, "RPC failed");
	else if (cb.stat >= 0 && cb.stat < (int)(sizeof(stat_name) / sizeof(stat_name[0])))
		say(what, "NLM4_%s", stat_name[cb.stat]);
	else
		say(what, "NLM4_%d", cb.stat);
}

static void nlm_locks(void)
{
	struct nfsfh *fh;
	int rc;

	snprintf(scen, sizeof(scen), "nlm");
	STEP("connect", nlm_connect());
	rc = nfs_create(nfs, P("nlm"), O_CREAT | O_RDWR, 0644, &fh);
	STEP("create", rc);
	if (rc < 0 || !nlm)
		return;
	nlm_step("a-write-lock", NLM4_LOCK, fh, "owner-a", true, 0, 100);
	nlm_step("b-test-overlap", NLM4_TEST, fh, "owner-b", true, 50, 10);
	nlm_step("b-test-read-overlap", NLM4_TEST, fh, "owner-b", false, 99, 1);
	nlm_step("b-test-after", NLM4_TEST, fh, "owner-b", true, 100, 10);
	nlm_step("b-read-lock-after", NLM4_LOCK, fh, "owner-b", false, 100, 10);
	nlm_step("b-write-lock-overlap", NLM4_LOCK, fh, "owner-b", true, 0, 10);
	nlm_step("a-test-own", NLM4_TEST, fh, "owner-a", true, 0, 10);
	nlm_step("a-unlock", NLM4_UNLOCK, fh, "owner-a", true, 0, 100);
	nlm_step("b-write-lock-freed", NLM4_LOCK, fh, "owner-b", true, 0, 10);
	nlm_step("a-read-lock-denied", NLM4_LOCK, fh, "owner-a", false, 5, 1);
	nlm_step("a-lock-to-end", NLM4_LOCK, fh, "owner-a", true, 1000, 0);
	nlm_step("b-test-far", NLM4_TEST, fh, "owner-b", false, 1ull << 40, 1);
	nlm_step("a-unlock-all", NLM4_UNLOCK, fh, "owner-a", true, 0, 0);
	nlm_step("b-unlock-all", NLM4_UNLOCK, fh, "owner-b", true, 0, 0);
	nlm_step("a-after-all", NLM4_LOCK, fh, "owner-a", true, 0, 0);
	nlm_step("a-unlock-end", NLM4_UNLOCK, fh, "owner-a", true, 0, 0);
	nfs_close(nfs, fh);
	nfs_destroy_context(nlm);
	nlm = NULL;
}

static void fs_scenarios(int version)
{
	snprintf(pfx, sizeof(pfx), "v%d/", version);
	snprintf(dir, sizeof(dir), "/conformance-v%d", version);
	nfs = nh_mount(version);
	if (nh_rm_rf(nfs, dir) < 0 || nfs_mkdir(nfs, dir) < 0) {
		fprintf(stderr, "conformance: cannot make %s\n", dir);
		exit(1);
	}
	lookups_and_creations();
	if (version == 3) {
		creates_v3();
		nlm_locks();
	}
	renames();
	links();
	sizes();
	attributes();
	listing();
	special_files();
	setgid_dir();
	permissions(version);
	nh_umount(nfs);
}

/* NFSv4.1 and 4.2 through the raw client. */
static struct n4_client *c;
static struct n4_fh n4dir;

static void n4_setup(uint32_t minor, const char *name)
{
	char path[256];

	snprintf(pfx, sizeof(pfx), "v4.%u/", minor);
	c = n4_connect(minor, name);
	snprintf(path, sizeof(path), "%s/conformance-v4", nh_env("NFS_EXPORT"));
	if (!c || n4_lookup(c, path, &n4dir) != 0) {
		fprintf(stderr, "conformance: cannot set up the v4.%u client\n", minor);
		exit(1);
	}
}

static void say4(const char *what, int status)
{
	say(what, "%s", status < 0 ? "client error" : n4_status_name(status));
}

/* OPEN's ways of creating, and what it refuses to open. */
static void opens(void)
{
	static const uint8_t verf[8] = "verifier", other[8] = "another!";
	struct nfs_context *v3 = nh_mount(3);
	struct n4_stateid sid;
	struct n4_fh fh;
	uint64_t size = 0;
	char name[257];

	snprintf(scen, sizeof(scen), "open");
	say("mkdir", "%s", ename(nfs_mkdir(v3, "/conformance-v4/od")));
	say("symlink", "%s", ename(nfs_symlink(v3, "od", "/conformance-v4/ol")));
	say4("open-dir", n4_open_how(c, &n4dir, "od", "o", N4_ACCESS_READ, N4_DENY_NONE,
				N4_NOCREATE, NULL, &sid, &fh));
	say4("open-symlink", n4_open_how(c, &n4dir, "ol", "o", N4_ACCESS_READ, N4_DENY_NONE,
				    N4_NOCREATE, NULL, &sid, &fh));
	say4("open-missing", n4_open_how(c, &n4dir, "om", "o", N4_ACCESS_READ, N4_DENY_NONE,
				    N4_NOCREATE, NULL, &sid, &fh));
	say4("create-over-dir", n4_open_how(c, &n4dir, "od", "o", N4_ACCESS_BOTH,
					    N4_DENY_NONE, N4_UNCHECKED, NULL, &sid, &fh));
	memset(name, 'm', 256);
	name[256] = '\0';
	say4("create-name-256", n4_open_how(c, &n4dir, name, "o", N4_ACCESS_BOTH, N4_DENY_NONE,
					    N4_GUARDED, NULL, &sid, &fh));
	name[255] = '\0';
	say4("create-name-255", n4_open_how(c, &n4dir, name, "o", N4_ACCESS_BOTH, N4_DENY_NONE,
					    N4_GUARDED, NULL, &sid, &fh));
	say4("close-name-255", n4_close(c, &fh, &sid));
	say4("guarded-new", n4_open_how(c, &n4dir, "og", "o", N4_ACCESS_BOTH, N4_DENY_NONE,
					N4_GUARDED, NULL, &sid, &fh));
	say4("write", n4_write(c, &fh, &sid, 0, "guarded", 7, true));
	say4("close", n4_close(c, &fh, &sid));
	say4("guarded-existing", n4_open_how(c, &n4dir, "og", "o", N4_ACCESS_BOTH,
					     N4_DENY_NONE, N4_GUARDED, NULL, &sid, &fh));
	say4("unchecked-existing", n4_open_how(c, &n4dir, "og", "o", N4_ACCESS_BOTH,
					       N4_DENY_NONE, N4_UNCHECKED, NULL, &sid, &fh));
	say4("size", n4_size(c, &fh, &size));
	say("size-kept", "%" PRIu64, size);
	say4("close-unchecked", n4_close(c, &fh, &sid));
	say4("exclusive-new", n4_open_how(c, &n4dir, "ox", "o", N4_ACCESS_BOTH, N4_DENY_NONE,
					  N4_EXCLUSIVE41, verf, &sid, &fh));
	say4("close-exclusive", n4_close(c, &fh, &sid));
	say4("exclusive-again-same-verifier",
	     n4_open_how(c, &n4dir, "ox", "o", N4_ACCESS_BOTH, N4_DENY_NONE, N4_EXCLUSIVE41,
			 verf, &sid, &fh));
	say4("close-again", n4_close(c, &fh, &sid));
	say4("exclusive-other-verifier",
	     n4_open_how(c, &n4dir, "ox", "o", N4_ACCESS_BOTH, N4_DENY_NONE, N4_EXCLUSIVE41,
			 other, &sid, &fh));
	say_stat_ctx(v3, "exclusive-stat", "/conformance-v4/ox");
	say4("exclusive-over-file", n4_open_how(c, &n4dir, "og", "o", N4_ACCESS_BOTH,
						N4_DENY_NONE, N4_EXCLUSIVE41, verf, &sid, &fh));
	nh_umount(v3);
}

/* A file removed (over NFSv3) while an NFSv4 client holds it open. */
static void open_unlinked(void)
{
	struct nfs_context *v3 = nh_mount(3);
	struct n4_stateid sid;
	struct n4_fh fh;
	char buf[16] = "";
	uint32_t got = 0;
	int rc;

	snprintf(scen, sizeof(scen), "unlinked");
	say4("open", n4_open(c, &n4dir, "ul", "owner-a", N4_ACCESS_BOTH, N4_DENY_NONE, true,
			     &sid, &fh));
	say4("write", n4_write(c, &fh, &sid, 0, "still here", 10, true));
	say("remove-while-open", "%s", ename(nfs_unlink(v3, "/conformance-v4/ul")));
	rc = n4_read(c, &fh, &sid, 0, buf, sizeof(buf) - 1, &got);
	say("read-after-remove", "%s '%.*s'", n4_status_name(rc), (int)got, buf);
	say4("write-after-remove", n4_write(c, &fh, &sid, 0, "again", 5, true));
	say4("close", n4_close(c, &fh, &sid));
	say4("read-after-close", n4_read(c, &fh, &sid, 0, buf, sizeof(buf) - 1, &got));
	nh_umount(v3);
}

static void locks_and_shares(void)
{
	struct n4_stateid a, b, la = { 0 }, lb = { 0 };
	struct n4_fh fh;
	uint8_t buf[16];
	uint32_t got;

	n4_setup(1, "sc-conformance-41");
	snprintf(scen, sizeof(scen), "locks");
	say4("open-a", n4_open(c, &n4dir, "lk", "owner-a", N4_ACCESS_BOTH, N4_DENY_NONE, true,
			       &a, &fh));
	say4("open-b", n4_open(c, &n4dir, "lk", "owner-b", N4_ACCESS_BOTH, N4_DENY_NONE, false,
			       &b, &fh));
	say4("a-write-lock", n4_lock(c, &fh, &a, "lock-a", true, true, 0, 100, &la));
	say4("b-test-overlap", n4_lockt(c, &fh, "lock-b", true, 50, 10));
	say4("b-test-read-overlap", n4_lockt(c, &fh, "lock-b", false, 99, 1));
	say4("b-test-after", n4_lockt(c, &fh, "lock-b", true, 100, 10));
	say4("b-read-lock-after", n4_lock(c, &fh, &b, "lock-b", true, false, 100, 10, &lb));
	say4("b-write-lock-overlap", n4_lock(c, &fh, &b, "lock-b", false, true, 0, 10, &lb));
	say4("a-test-own", n4_lockt(c, &fh, "lock-a", true, 0, 10));
	say4("a-close-with-locks", n4_close(c, &fh, &a));
	say4("a-unlock", n4_locku(c, &fh, &la, 0, 100));
	say4("b-write-lock-freed", n4_lock(c, &fh, &b, "lock-b", false, true, 0, 10, &lb));
	say4("a-read-lock-denied", n4_lock(c, &fh, &a, "lock-a", false, false, 5, 1, &la));
	say4("b-unlock-all", n4_locku(c, &fh, &lb, 0, UINT64_MAX));
	say4("a-close", n4_close(c, &fh, &a));
	say4("b-close", n4_close(c, &fh, &b));

	snprintf(scen, sizeof(scen), "share");
	say4("a-open-write-only", n4_open(c, &n4dir, "sh", "owner-a", N4_ACCESS_WRITE,
					  N4_DENY_NONE, true, &a, &fh));
	say4("a-write", n4_write(c, &fh, &a, 0, "data", 4, true));
	say4("a-read-under-write-only", n4_read(c, &fh, &a, 0, buf, sizeof(buf), &got));
	say4("b-open-write-deny-read", n4_open(c, &n4dir, "sh", "owner-b", N4_ACCESS_WRITE,
					       N4_DENY_READ, false, &b, &fh));
	say4("a-read-against-deny", n4_read(c, &fh, &a, 0, buf, sizeof(buf), &got));
	say4("b-read-own-deny", n4_read(c, &fh, &b, 0, buf, sizeof(buf), &got));
	say4("b-close", n4_close(c, &fh, &b));
	say4("a-close", n4_close(c, &fh, &a));
	open_unlinked();
	opens();
	n4_disconnect(c);
}

static void say_seek(const char *what, struct n4_fh *fh, struct n4_stateid *sid, uint64_t off,
		     uint32_t whence)
{
	bool eof = false;
	uint64_t at = 0;
	int rc = n4_seek(c, fh, sid, off, whence, &eof, &at);

	if (rc != N4_OK)
		say4(what, rc);
	else if (eof && whence == N4_CONTENT_DATA)
		say(what, "OK eof");
	else
		say(what, "OK %s at %" PRIu64 "%s", whence == N4_CONTENT_DATA ? "data" : "hole",
		    at, eof ? " eof" : "");
}

/* ALLOCATE and DEALLOCATE of 4 KiB, and which times they change. */
static const struct falloc {
	const char *what;
	bool punch;
	uint64_t off;
} fallocs[] = {
	{ "deallocate-data", true, 8192 },
	{ "deallocate-hole", true, 20480 },
	{ "deallocate-past-end", true, 65536 },
	{ "allocate-within", false, 0 },
	{ "allocate-extend", false, 32768 },
};

static void v42(void)
{
	static uint8_t data[4096];
	struct times t;
	struct n4_stateid sid;
	struct n4_fh fh;
	uint64_t size = 0;

	n4_setup(2, "sc-conformance-42");
	nh_fill_seeded(data, sizeof(data), 42);
	snprintf(scen, sizeof(scen), "allocate");
	say4("open", n4_open(c, &n4dir, "al", "owner", N4_ACCESS_BOTH, N4_DENY_NONE, true, &sid,
			     &fh));
	say4("write", n4_write(c, &fh, &sid, 0, data, sizeof(data), true));
	say4("allocate", n4_allocate(c, &fh, &sid, 16384, 16384));
	say4("size", n4_size(c, &fh, &size));
	say("size-after", "%" PRIu64, size);
	say_seek("seek-hole", &fh, &sid, 0, N4_CONTENT_HOLE);
	say_seek("seek-data-in-allocated", &fh, &sid, 8192, N4_CONTENT_DATA);
	say4("deallocate", n4_deallocate(c, &fh, &sid, 0, 4096));
	say_seek("seek-data-after-punch", &fh, &sid, 0, N4_CONTENT_DATA);
	say_seek("seek-past-end", &fh, &sid, size, N4_CONTENT_HOLE);
	say4("allocate-overflow", n4_allocate(c, &fh, &sid, UINT64_MAX - 10, 100));

	/* which times ALLOCATE and DEALLOCATE change (seen over NFSv3) */
	nfs = nh_mount(3);
	say4("write-data", n4_write(c, &fh, &sid, 8192, data, sizeof(data), true));
	for (size_t i = 0; i < sizeof(fallocs) / sizeof(fallocs[0]); i++) {
		const struct falloc *f = &fallocs[i];

		t = before("/conformance-v4/al");
		say4(f->what, f->punch ? n4_deallocate(c, &fh, &sid, f->off, 4096) :
					 n4_allocate(c, &fh, &sid, f->off, 4096));
		say_changed(f->what, "/conformance-v4/al", t);
	}
	nh_umount(nfs);
	nfs = NULL;
	say4("close", n4_close(c, &fh, &sid));

	/* zeros written are data on ext4, a hole in the dedup store */
	snprintf(scen, sizeof(scen), "zeros");
	memset(data, 0, sizeof(data));
	say4("open", n4_open(c, &n4dir, "zeros", "owner", N4_ACCESS_BOTH, N4_DENY_NONE, true,
			     &sid, &fh));
	say4("write", n4_write(c, &fh, &sid, 0, data, sizeof(data), true));
	say_seek("seek-data", &fh, &sid, 0, N4_CONTENT_DATA);
	say4("close", n4_close(c, &fh, &sid));
	n4_disconnect(c);
}

/*
 * A client that goes silent loses its state when its lease runs out: the
 * server drops its opens (and their share reservations) so another client
 * may open what they denied, and the silent client's session is gone.  The
 * run's lease is short (ganesha-run --lease); the other client asks again
 * until it is let in, with a bound far above the lease.
 */
static void lease_expiry(void)
{
	struct timespec pause = { 0, 100 * 1000 * 1000 };
	struct n4_client *a = n4_connect(1, "sc-conformance-lease-a");
	struct n4_client *b = n4_connect(1, "sc-conformance-lease-b");
	struct n4_stateid sa, sb;
	struct n4_fh fh;
	int rc = -1;

	snprintf(pfx, sizeof(pfx), "v4.1/");
	snprintf(scen, sizeof(scen), "lease");
	if (!a || !b) {
		say("clients", "cannot connect");
		return;
	}
	say4("a-open-deny-both", n4_open(a, &n4dir, "lease", "owner-a", N4_ACCESS_BOTH,
					 N4_DENY_BOTH, true, &sa, &fh));
	say4("b-open-denied", n4_open(b, &n4dir, "lease", "owner-b", N4_ACCESS_READ,
				      N4_DENY_NONE, false, &sb, &fh));
	for (int i = 0; i < 1200; i++) {
		rc = n4_open(b, &n4dir, "lease", "owner-b", N4_ACCESS_READ, N4_DENY_NONE, false,
			     &sb, &fh);
		if (rc != N4ERR_SHARE_DENIED)
			break;
		nanosleep(&pause, NULL);
	}
	say4("b-open-after-a-expired", rc);
	say4("a-close-after-expiry", n4_close(a, &fh, &sa));
	say4("b-close", n4_close(b, &fh, &sb));
	n4_disconnect(a);
	n4_disconnect(b);
}

static int record(const char *path)
{
	out = fopen(path, "w");
	if (!out) {
		perror(path);
		return 1;
	}
	fs_scenarios(3);
	fs_scenarios(4);
	locks_and_shares();
	v42();
	lease_expiry();
	return fclose(out) == 0 ? 0 : 1;
}

/* --- compare ------------------------------------------------------------ */

struct line {
	char *step;
	char *answer;
};

static size_t load(const char *path, struct line **lines)
{
	FILE *f = fopen(path, "r");
	char buf[4096];
	size_t n = 0;

	if (!f) {
		perror(path);
		exit(1);
	}
	*lines = NULL;
	while (fgets(buf, sizeof(buf), f)) {
		char *tab = strchr(buf, '\t');

		buf[strcspn(buf, "\n")] = '\0';
		if (!tab)
			continue;
		*tab = '\0';
		*lines = realloc(*lines, (n + 1) * sizeof(**lines));
		(*lines)[n].step = strdup(buf);
		(*lines)[n].answer = strdup(tab + 1);
		n++;
	}
	fclose(f);
	return n;
}

static int compare(const char *vfs_path, const char *dedup_path)
{
	struct line *v, *d;
	size_t nv = load(vfs_path, &v), nd = load(dedup_path, &d);
	bool used[NDIFF] = { false };
	int bad = 0;
	size_t i, k;

	if (nv != nd || nv == 0) {
		fprintf(stderr, "conformance: %zu steps on FSAL_VFS, %zu on FSAL_DEDUP\n", nv, nd);
		return 1;
	}
	for (i = 0; i < nv; i++) {
		if (strcmp(v[i].step, d[i].step) != 0) {
			fprintf(stderr, "conformance: step %zu is %s on VFS, %s on DEDUP\n", i,
				v[i].step, d[i].step);
			return 1;
		}
		if (strcmp(v[i].answer, d[i].answer) == 0)
			continue;
		for (k = 0; k < NDIFF; k++)
			if (strcmp(known_differences[k].step, v[i].step) == 0 &&
			    strcmp(known_differences[k].vfs, v[i].answer) == 0 &&
			    strcmp(known_differences[k].dedup, d[i].answer) == 0)
				break;
		if (k < NDIFF) {
			used[k] = true;
			printf("# %s: VFS '%s', DEDUP '%s': known (%s)\n", v[i].step,
			       v[i].answer, d[i].answer, known_differences[k].reason);
			continue;
		}
		fprintf(stderr, "conformance: %s: VFS '%s', DEDUP '%s'\n", v[i].step, v[i].answer,
			d[i].answer);
		bad++;
	}
	for (k = 0; k < NDIFF; k++)
		if (!used[k]) {
			fprintf(stderr, "conformance: known difference %s ('%s' / '%s') did not happen: "
					"update the table\n",
				known_differences[k].step, known_differences[k].vfs,
				known_differences[k].dedup);
			bad++;
		}
	printf("# %zu steps compared, %d unexplained differences\n", nv, bad);
	for (i = 0; i < nv; i++) {
		free(v[i].step);
		free(v[i].answer);
		free(d[i].step);
		free(d[i].answer);
	}
	free(v);
	free(d);
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "record") == 0)
		return record(argv[2]);
	if (argc == 4 && strcmp(argv[1], "compare") == 0)
		return compare(argv[2], argv[3]);
	fprintf(stderr, "usage: %s record FILE | compare VFS_FILE DEDUP_FILE\n", argv[0]);
	return 2;
}
