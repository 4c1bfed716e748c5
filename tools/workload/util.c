/* SPDX-License-Identifier: BSD-2-Clause */
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void say(const char *fmt, va_list ap)
{
	fputs("seacache-workload: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

int wl_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(fmt, ap);
	va_end(ap);
	return -1;
}

void wl_note(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(fmt, ap);
	va_end(ap);
}

static void oom(void)
{
	fputs("seacache-workload: out of memory\n", stderr);
	exit(1);
}

void *wl_malloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		oom();
	return p;
}

void *wl_calloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		oom();
	return p;
}

void *wl_realloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		oom();
	return p;
}

char *wl_strdup(const char *s)
{
	char *p = strdup(s);

	if (!p)
		oom();
	return p;
}

char *wl_printf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (r < 0)
		oom();
	return s;
}

void wl_u64vec_push(struct wl_u64vec *a, uint64_t x)
{
	if (a->n == a->cap) {
		a->cap = a->cap ? 2 * a->cap : 64;
		a->v = wl_realloc(a->v, a->cap * sizeof(*a->v));
	}
	a->v[a->n++] = x;
}

static int redirect(int fd, const char *path, int flags)
{
	int f = open(path, flags, 0644);

	if (f < 0)
		return -1;
	if (dup2(f, fd) < 0)
		return -1;
	close(f);
	return 0;
}

int wl_run(char *const argv[], const char *out_path, const char *err_path)
{
	char fake[32];
	pid_t pid;
	int st;

	snprintf(fake, sizeof(fake), "%llu", WL_FAKE_TIME);
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return wl_err("fork: %s", strerror(errno));
	if (pid == 0) {
		setenv("E2FSPROGS_FAKE_TIME", fake, 1);
		if (redirect(0, "/dev/null", O_RDONLY) ||
		    redirect(1, out_path ? out_path : "/dev/null",
			     O_WRONLY | O_CREAT | O_TRUNC) ||
		    (err_path && redirect(2, err_path, O_WRONLY | O_CREAT | O_TRUNC)))
			_exit(126);
		execvp(argv[0], argv);
		fprintf(stderr, "seacache-workload: %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return wl_err("waitpid: %s", strerror(errno));
	if (!WIFEXITED(st))
		return wl_err("%s died of signal %d", argv[0], WTERMSIG(st));
	return WEXITSTATUS(st);
}

bool wl_have(const char *prog)
{
	const char *path = getenv("PATH");
	char *copy, *dir, *save = NULL;
	bool found = false;

	if (!path)
		return false;
	copy = wl_strdup(path);
	for (dir = strtok_r(copy, ":", &save); dir && !found;
	     dir = strtok_r(NULL, ":", &save)) {
		char *p = wl_printf("%s/%s", dir, prog);

		found = access(p, X_OK) == 0;
		free(p);
	}
	free(copy);
	return found;
}

int wl_mkdir_p(const char *path)
{
	char *p = wl_strdup(path), *s;
	int rc = 0;

	for (s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, 0755) && errno != EEXIST)
			rc = -1;
		*s = '/';
	}
	if (mkdir(p, 0755) && errno != EEXIST)
		rc = -1;
	if (rc)
		wl_err("mkdir %s: %s", path, strerror(errno));
	free(p);
	return rc;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		return rmdir(path);
	return unlink(path);
}

int wl_rm_rf(const char *path)
{
	struct stat st;

	if (!path[0] || !strcmp(path, "/"))
		return wl_err("refusing to remove '%s'", path);
	if (lstat(path, &st) && errno == ENOENT)
		return 0;
	/* FTW_PHYS: never follow a symlink out of the tree; FTW_MOUNT: never
	 * descend into something mounted inside it. */
	if (nftw(path, rm_one, 64, FTW_DEPTH | FTW_PHYS | FTW_MOUNT))
		return wl_err("cannot remove %s: %s", path, strerror(errno));
	return 0;
}

/* The loop behind the three below: write (off < 0), pwrite or pread until
 * len bytes are done. */
static int io_all(int fd, uint8_t *p, size_t len, int64_t off, bool rd)
{
	while (len) {
		ssize_t n = rd ? pread(fd, p, len, (off_t)off) :
			    off < 0 ? write(fd, p, len) : pwrite(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
		if (off >= 0)
			off += n;
	}
	return 0;
}

int wl_write_all(int fd, const void *buf, size_t len)
{
	return io_all(fd, (uint8_t *)buf, len, -1, false);
}

int wl_pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
	return io_all(fd, (uint8_t *)buf, len, (int64_t)off, false);
}

int wl_pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	return io_all(fd, buf, len, (int64_t)off, true);
}

static bool all_zero(const uint8_t *p, size_t n)
{
	return p[0] == 0 && !memcmp(p, p + 1, n - 1);
}

int wl_copy_sparse(const char *src, const char *dst)
{
	enum { CHUNK = 1 << 20, BLK = 4096 };
	uint8_t *buf = wl_malloc(CHUNK);
	int in, out = -1, rc = -1;
	struct stat st;
	uint64_t off;

	in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0 || fstat(in, &st)) {
		wl_err("%s: %s", src, strerror(errno));
		goto done;
	}
	unlink(dst);
	out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out < 0 || ftruncate(out, st.st_size)) {
		wl_err("%s: %s", dst, strerror(errno));
		goto done;
	}
	for (off = 0; off < (uint64_t)st.st_size; off += CHUNK) {
		/* Skip the source's holes without reading them. */
		off_t data = lseek(in, (off_t)off, SEEK_DATA);
		size_t len, i;

		if (data < 0)
			break;
		if ((uint64_t)data >= off + CHUNK) {
			off = (uint64_t)data / CHUNK * CHUNK - CHUNK;
			continue;
		}
		len = (uint64_t)st.st_size - off < CHUNK ? (size_t)(st.st_size - off) : CHUNK;
		if (wl_pread_all(in, buf, len, off)) {
			wl_err("%s: read error", src);
			goto done;
		}
		for (i = 0; i < len; i += BLK) {
			size_t n = len - i < BLK ? len - i : BLK;

			if (!all_zero(buf + i, n) && wl_pwrite_all(out, buf + i, n, off + i)) {
				wl_err("%s: %s", dst, strerror(errno));
				goto done;
			}
		}
	}
	rc = 0;
done:
	if (in >= 0)
		close(in);
	if (out >= 0 && close(out) && !rc)
		rc = wl_err("%s: %s", dst, strerror(errno));
	free(buf);
	return rc;
}

char *wl_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t n = 0, cap = 0;

	if (!f) {
		wl_err("%s: %s", path, strerror(errno));
		return NULL;
	}
	for (;;) {
		size_t r;

		if (cap - n < 4096) {
			cap = cap ? 2 * cap : 65536;
			buf = wl_realloc(buf, cap + 1);
		}
		r = fread(buf + n, 1, cap - n, f);
		n += r;
		if (r == 0)
			break;
	}
	if (ferror(f)) {
		wl_err("%s: read error", path);
		free(buf);
		buf = NULL;
	} else {
		buf[n] = '\0';
		if (len)
			*len = n;
	}
	fclose(f);
	return buf;
}

bool wl_parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || *s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return false;
	*out = v;
	return true;
}

bool wl_parse_frac(const char *s, double *out)
{
	char *end;
	double v;

	if (!s || !*s)
		return false;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !(v >= 0.0 && v <= 1.0))
		return false;
	*out = v;
	return true;
}

double wl_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static char *tmpdir;

static void tmpdir_cleanup(void)
{
	if (tmpdir)
		wl_rm_rf(tmpdir);
}

const char *wl_tmpdir(void)
{
	const char *base = getenv("TMPDIR");
	char *t;

	if (tmpdir)
		return tmpdir;
	t = wl_printf("%s/seacache-workload.XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(t)) {
		wl_err("cannot make a scratch directory %s: %s", t, strerror(errno));
		exit(1);
	}
	tmpdir = t;
	atexit(tmpdir_cleanup);
	return tmpdir;
}

int wl_debugfs(const char *img, const char *cmds, bool write, const char *out_path)
{
	char *cmdf = wl_printf("%s/debugfs.cmds", wl_tmpdir());
	char *errf = wl_printf("%s/debugfs.err", wl_tmpdir());
	char *argw[] = { "debugfs", "-w", "-f", cmdf, (char *)img, NULL };
	char *argr[] = { "debugfs", "-f", cmdf, (char *)img, NULL };
	char *err = NULL, *line, *save = NULL;
	int fd, rc = -1, st;

	fd = open(cmdf, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || wl_write_all(fd, cmds, strlen(cmds))) {
		wl_err("%s: %s", cmdf, strerror(errno));
		if (fd >= 0)
			close(fd);
		goto done;
	}
	if (close(fd)) {
		wl_err("%s: %s", cmdf, strerror(errno));
		goto done;
	}
	st = wl_run(write ? argw : argr, out_path, errf);
	err = wl_read_file(errf, NULL);
	if (!err)
		goto done;
	rc = st ? -1 : 0;
	for (line = strtok_r(err, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		/* "debugfs 1.47.0 (5-Feb-2023)" */
		if (!strncmp(line, "debugfs ", 8))
			continue;
		wl_err("debugfs %s: %s", img, line);
		rc = -1;
	}
	if (st)
		wl_err("debugfs %s exited with %d", img, st);
done:
	free(err);
	free(cmdf);
	free(errf);
	return rc;
}
