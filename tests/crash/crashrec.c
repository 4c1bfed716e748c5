// SPDX-License-Identifier: BSD-2-Clause
/*
 * The crash recorder: an LD_PRELOAD shim that logs every change a process
 * makes to the files under one directory, with the data, and every
 * durability barrier, in the order they happened (crashlog.h), so that
 * crash_replay.c can build the states a power cut could leave.
 *
 *   CRASHREC_DIR=/abs/dir CRASHREC_LOG=/abs/log LD_PRELOAD=libcrashrec.so prog
 *
 * Without both variables every call passes straight through.
 *
 * Seen: open/openat/creat with O_CREAT (a new file) or O_TRUNC, write,
 * writev, pwrite, pwritev, pwritev2 (with the file position for write and
 * writev, and O_DSYNC/O_SYNC/RWF_DSYNC as durable writes), ftruncate,
 * truncate, fallocate (allocate, punch, zero range), fsync, fdatasync,
 * sync_file_range (logged, not a barrier: it waits for nothing on disk),
 * msync with MS_SYNC, sync, syncfs, mkdir, rmdir, unlink, rename; dup'ed
 * fds keep being seen.  What the log cannot hold is logged as
 * CL_UNTRACEABLE and makes the log unusable instead of silently
 * incomplete: a writable shared mmap of a file (its stores are invisible
 * here: LMDB with MDB_WRITEMAP would be one), a hard or symbolic link,
 * copy_file_range or sendfile into a file, fallocate modes that move data.
 *
 * Not recorded: LMDB's lock file (lock.mdb, a shared-memory reader table
 * that LMDB rebuilds when the first process opens the environment: no
 * state survives a restart in it), and reads.
 *
 * Every recorded call runs under one lock, from the call to its log
 * record, so the log's order is an order in which the calls really
 * happened (a write logged before an fsync completed before it began).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "crashlog.h"

#define EXPORT __attribute__((visibility("default")))
#define MAX_FDS 65536
#define VOLATILE_NAME "lock.mdb"

static struct {
	pthread_once_t once;
	pthread_mutex_t lock;
	_Atomic bool on;
	int log_fd;
	char dir[PATH_MAX];
	size_t dir_len;
	/*
	 * fd -> path relative to dir, for the files and dirs recorded; read
	 * without the lock to let other fds (sockets, stderr) pass at once
	 */
	_Atomic(char *) fd_path[MAX_FDS];
} R = { .once = PTHREAD_ONCE_INIT, .lock = PTHREAD_MUTEX_INITIALIZER,
	.log_fd = -1 };

/* The real functions, resolved once. */
#define REAL(name) real_##name
#define DECLARE_REAL(ret, name, ...) static ret (*real_##name)(__VA_ARGS__)
DECLARE_REAL(int, open, const char *, int, ...);
DECLARE_REAL(int, openat, int, const char *, int, ...);
DECLARE_REAL(int, close, int);
DECLARE_REAL(int, dup, int);
DECLARE_REAL(int, dup2, int, int);
DECLARE_REAL(int, dup3, int, int, int);
DECLARE_REAL(ssize_t, write, int, const void *, size_t);
DECLARE_REAL(ssize_t, writev, int, const struct iovec *, int);
DECLARE_REAL(ssize_t, pwrite, int, const void *, size_t, off_t);
DECLARE_REAL(ssize_t, pwritev, int, const struct iovec *, int, off_t);
DECLARE_REAL(ssize_t, pwritev2, int, const struct iovec *, int, off_t, int);
DECLARE_REAL(int, ftruncate, int, off_t);
DECLARE_REAL(int, truncate, const char *, off_t);
DECLARE_REAL(int, fallocate, int, int, off_t, off_t);
DECLARE_REAL(int, fsync, int);
DECLARE_REAL(int, fdatasync, int);
DECLARE_REAL(int, sync_file_range, int, off_t, off_t, unsigned int);
DECLARE_REAL(int, msync, void *, size_t, int);
DECLARE_REAL(void, sync, void);
DECLARE_REAL(int, syncfs, int);
DECLARE_REAL(void *, mmap, void *, size_t, int, int, int, off_t);
DECLARE_REAL(int, mkdir, const char *, mode_t);
DECLARE_REAL(int, mkdirat, int, const char *, mode_t);
DECLARE_REAL(int, rmdir, const char *);
DECLARE_REAL(int, unlink, const char *);
DECLARE_REAL(int, unlinkat, int, const char *, int);
DECLARE_REAL(int, rename, const char *, const char *);
DECLARE_REAL(int, renameat, int, const char *, int, const char *);
DECLARE_REAL(int, renameat2, int, const char *, int, const char *,
	     unsigned int);
DECLARE_REAL(int, link, const char *, const char *);
DECLARE_REAL(int, linkat, int, const char *, int, const char *, int);
DECLARE_REAL(int, symlink, const char *, const char *);
DECLARE_REAL(int, symlinkat, const char *, int, const char *);
DECLARE_REAL(ssize_t, copy_file_range, int, off_t *, int, off_t *, size_t,
	     unsigned int);
DECLARE_REAL(ssize_t, sendfile, int, int, off_t *, size_t);

#define RESOLVE(name) (real_##name = (__typeof__(real_##name))dlsym(RTLD_NEXT, #name))

static void resolve(void)
{
	RESOLVE(open); RESOLVE(openat); RESOLVE(close); RESOLVE(dup);
	RESOLVE(dup2); RESOLVE(dup3); RESOLVE(write); RESOLVE(writev);
	RESOLVE(pwrite); RESOLVE(pwritev); RESOLVE(pwritev2);
	RESOLVE(ftruncate); RESOLVE(truncate); RESOLVE(fallocate);
	RESOLVE(fsync); RESOLVE(fdatasync); RESOLVE(sync_file_range);
	RESOLVE(msync); RESOLVE(sync); RESOLVE(syncfs); RESOLVE(mmap);
	RESOLVE(mkdir); RESOLVE(mkdirat); RESOLVE(rmdir); RESOLVE(unlink);
	RESOLVE(unlinkat); RESOLVE(rename); RESOLVE(renameat);
	RESOLVE(renameat2); RESOLVE(link); RESOLVE(linkat); RESOLVE(symlink);
	RESOLVE(symlinkat); RESOLVE(copy_file_range); RESOLVE(sendfile);
}

/*
 * Recording starts once the process is up (a sanitizer's runtime calls
 * open before the environment can be read): calls before pass through.
 */
__attribute__((constructor)) static void start(void)
{
	const char *dir = getenv("CRASHREC_DIR");
	const char *log = getenv("CRASHREC_LOG");
	uint64_t magic = CRASHLOG_MAGIC;

	pthread_once(&R.once, resolve);
	if (!dir || !log || dir[0] != '/' || strlen(dir) >= sizeof(R.dir))
		return;
	strcpy(R.dir, dir);
	R.dir_len = strlen(dir);
	while (R.dir_len > 1 && R.dir[R.dir_len - 1] == '/')
		R.dir[--R.dir_len] = '\0';
	R.log_fd = real_open(log, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND |
			     O_CLOEXEC, 0600);
	if (R.log_fd < 0) {
		fprintf(stderr, "crashrec: %s: %s\n", log, strerror(errno));
		abort();
	}
	if (real_write(R.log_fd, &magic, sizeof(magic)) != sizeof(magic))
		abort();
	atomic_store(&R.on, true);
}

static void init(void)
{
	pthread_once(&R.once, resolve);
}

static void log_append(uint32_t op, uint32_t flags, uint64_t off,
		       uint64_t len, const char *path, const char *path2,
		       const struct iovec *data, int data_cnt, size_t data_len)
{
	struct crashlog_rec rec = {
		.op = op, .flags = flags, .off = off, .len = len,
		.path_len = path ? (uint32_t)strlen(path) : 0,
		.path2_len = path2 ? (uint32_t)strlen(path2) : 0,
		.data_len = data_len,
	};
	struct iovec iov[3 + IOV_MAX];
	int n = 0;
	size_t want = sizeof(rec) + rec.path_len + rec.path2_len;
	size_t left = data_len;

	iov[n++] = (struct iovec){ &rec, sizeof(rec) };
	if (rec.path_len)
		iov[n++] = (struct iovec){ (void *)path, rec.path_len };
	if (rec.path2_len)
		iov[n++] = (struct iovec){ (void *)path2, rec.path2_len };
	for (int i = 0; i < data_cnt && left > 0 && n < 3 + IOV_MAX; i++) {
		size_t l = data[i].iov_len < left ? data[i].iov_len : left;

		if (l)
			iov[n++] = (struct iovec){ data[i].iov_base, l };
		left -= l;
	}
	want += data_len;
	/* the log is opened O_APPEND; a short write is completed here */
	for (int i = 0; want > 0;) {
		ssize_t got = real_writev(R.log_fd, iov + i, n - i);

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			fprintf(stderr, "crashrec: log write: %s\n",
				strerror(errno));
			abort();
		}
		want -= (size_t)got;
		while (i < n && (size_t)got >= iov[i].iov_len)
			got -= (ssize_t)iov[i++].iov_len;
		if (i < n) {
			iov[i].iov_base = (char *)iov[i].iov_base + got;
			iov[i].iov_len -= (size_t)got;
		}
	}
}

static void log_simple(uint32_t op, uint32_t flags, uint64_t off,
		       uint64_t len, const char *path, const char *path2)
{
	log_append(op, flags, off, len, path, path2, NULL, 0, 0);
}

static const char *fd_rel(int fd)
{
	return fd >= 0 && fd < MAX_FDS ?
	       atomic_load_explicit(&R.fd_path[fd], memory_order_acquire) : NULL;
}

/*
 * The path of name (relative to dirfd) below the recorded directory, into
 * out; false when it lies outside or is LMDB's lock file.
 */
static bool rel_path(int dirfd, const char *name, char *out, size_t len)
{
	char abs[PATH_MAX * 2];
	const char *base;
	size_t n;

	if (name[0] == '/') {
		snprintf(abs, sizeof(abs), "%s", name);
	} else if (dirfd != AT_FDCWD) {
		if (!fd_rel(dirfd))
			return false;
		snprintf(abs, sizeof(abs), "%s/%s/%s", R.dir, fd_rel(dirfd),
			 name);
	} else {
		char cwd[PATH_MAX];

		if (!getcwd(cwd, sizeof(cwd)))
			return false;
		snprintf(abs, sizeof(abs), "%s/%s", cwd, name);
	}
	if (strncmp(abs, R.dir, R.dir_len) ||
	    (abs[R.dir_len] != '/' && abs[R.dir_len] != '\0'))
		return false;
	/* normalize: no "//", no "/./", no trailing "/" */
	n = 0;
	for (const char *p = abs + R.dir_len; *p;) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		if (p[0] == '.' && (p[1] == '/' || !p[1])) {
			p++;
			continue;
		}
		if (p[0] == '.' && p[1] == '.' && (p[2] == '/' || !p[2]))
			return false;	/* not in the store's paths */
		if (n && n + 1 < len)
			out[n++] = '/';
		while (*p && *p != '/' && n + 1 < len)
			out[n++] = *p++;
	}
	out[n] = '\0';
	base = strrchr(out, '/');
	base = base ? base + 1 : out;
	return strcmp(base, VOLATILE_NAME) != 0;
}

/* Both under the lock. */
static void fd_forget(int fd)
{
	if (fd >= 0 && fd < MAX_FDS)
		free(atomic_exchange(&R.fd_path[fd], NULL));
}

static void fd_note(int fd, const char *rel)
{
	char *copy;

	if (fd < 0)
		return;
	if (fd >= MAX_FDS) {
		fprintf(stderr, "crashrec: fd %d beyond the table\n", fd);
		abort();
	}
	copy = strdup(rel);
	if (!copy)
		abort();
	free(atomic_exchange(&R.fd_path[fd], copy));
}

static int do_openat(int dirfd, const char *name, int flags, mode_t mode)
{
	char rel[PATH_MAX];
	struct stat st;
	bool existed, tracked;
	int fd;

	init();
	if (!R.on)
		return real_openat(dirfd, name, flags, mode);
	pthread_mutex_lock(&R.lock);
	tracked = rel_path(dirfd, name, rel, sizeof(rel));
	existed = fstatat(dirfd, name, &st, 0) == 0;
	fd = real_openat(dirfd, name, flags, mode);
	if (fd >= 0 && tracked) {
		int e = errno;

		if ((flags & O_CREAT) && !existed)
			log_simple(CL_CREATE, 0, 0, 0, rel, NULL);
		else if ((flags & O_TRUNC) && existed && S_ISREG(st.st_mode) &&
			 st.st_size > 0)
			log_simple(CL_TRUNCATE, 0, 0, 0, rel, NULL);
		fd_note(fd, rel);
		errno = e;
	} else if (fd >= 0) {
		fd_forget(fd);
	}
	pthread_mutex_unlock(&R.lock);
	return fd;
}

static mode_t open_mode(int flags, va_list ap)
{
	return (flags & (O_CREAT | __O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;
}

EXPORT int open(const char *name, int flags, ...)
{
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = open_mode(flags, ap);
	va_end(ap);
	return do_openat(AT_FDCWD, name, flags, mode);
}

EXPORT int openat(int dirfd, const char *name, int flags, ...)
{
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = open_mode(flags, ap);
	va_end(ap);
	return do_openat(dirfd, name, flags, mode);
}

EXPORT int creat(const char *name, mode_t mode)
{
	return do_openat(AT_FDCWD, name, O_CREAT | O_WRONLY | O_TRUNC, mode);
}

EXPORT int close(int fd)
{
	int rc;

	init();
	if (!R.on)
		return real_close(fd);
	pthread_mutex_lock(&R.lock);
	fd_forget(fd);
	rc = real_close(fd);
	pthread_mutex_unlock(&R.lock);
	return rc;
}

/* A new fd for what old names, seen as old is. */
static int dup_done(int old, int fd)
{
	const char *rel;

	pthread_mutex_lock(&R.lock);
	rel = fd_rel(old);
	if (fd >= 0 && fd != old) {
		if (rel)
			fd_note(fd, rel);
		else
			fd_forget(fd);
	}
	pthread_mutex_unlock(&R.lock);
	return fd;
}

EXPORT int dup(int old)
{
	init();
	return R.on ? dup_done(old, real_dup(old)) : real_dup(old);
}

EXPORT int dup2(int old, int new_fd)
{
	init();
	return R.on ? dup_done(old, real_dup2(old, new_fd)) :
		      real_dup2(old, new_fd);
}

EXPORT int dup3(int old, int new_fd, int flags)
{
	init();
	return R.on ? dup_done(old, real_dup3(old, new_fd, flags)) :
		      real_dup3(old, new_fd, flags);
}

static uint32_t fd_durable(int fd, int rwf)
{
	int fl = fcntl(fd, F_GETFL);

	return (fl >= 0 && (fl & O_DSYNC)) || (rwf & (RWF_DSYNC | RWF_SYNC)) ?
	       CL_F_DURABLE : 0;
}

/*
 * The write calls: the real call and its record under the lock.  off < 0:
 * at the file position (where it ended, less what was written).
 */
static ssize_t write_done(int fd, const struct iovec *iov, int cnt,
			  off_t off, int rwf, ssize_t got)
{
	const char *rel = fd_rel(fd);

	if (got > 0 && rel) {
		int e = errno;

		if (off < 0)
			off = lseek(fd, 0, SEEK_CUR) - got;
		log_append(CL_WRITE, fd_durable(fd, rwf), (uint64_t)off,
			   (uint64_t)got, rel, NULL, iov, cnt, (size_t)got);
		errno = e;
	}
	pthread_mutex_unlock(&R.lock);
	return got;
}

EXPORT ssize_t write(int fd, const void *buf, size_t len)
{
	struct iovec iov = { (void *)buf, len };

	init();
	if (!R.on || !fd_rel(fd))
		return real_write(fd, buf, len);
	pthread_mutex_lock(&R.lock);
	return write_done(fd, &iov, 1, -1, 0, real_write(fd, buf, len));
}

EXPORT ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
	init();
	if (!R.on || !fd_rel(fd))
		return real_writev(fd, iov, cnt);
	pthread_mutex_lock(&R.lock);
	return write_done(fd, iov, cnt, -1, 0, real_writev(fd, iov, cnt));
}

EXPORT ssize_t pwrite(int fd, const void *buf, size_t len, off_t off)
{
	struct iovec iov = { (void *)buf, len };

	init();
	if (!R.on || !fd_rel(fd))
		return real_pwrite(fd, buf, len, off);
	pthread_mutex_lock(&R.lock);
	return write_done(fd, &iov, 1, off, 0, real_pwrite(fd, buf, len, off));
}

EXPORT ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
	init();
	if (!R.on || !fd_rel(fd))
		return real_pwritev(fd, iov, cnt, off);
	pthread_mutex_lock(&R.lock);
	return write_done(fd, iov, cnt, off, 0,
			  real_pwritev(fd, iov, cnt, off));
}

EXPORT ssize_t pwritev2(int fd, const struct iovec *iov, int cnt, off_t off,
			int flags)
{
	init();
	if (!R.on || !fd_rel(fd))
		return real_pwritev2(fd, iov, cnt, off, flags);
	pthread_mutex_lock(&R.lock);
	return write_done(fd, iov, cnt, off, flags,
			  real_pwritev2(fd, iov, cnt, off, flags));
}

EXPORT int ftruncate(int fd, off_t size)
{
	int rc;

	init();
	if (!R.on || !fd_rel(fd))
		return real_ftruncate(fd, size);
	pthread_mutex_lock(&R.lock);
	rc = real_ftruncate(fd, size);
	if (!rc)
		log_simple(CL_TRUNCATE, 0, (uint64_t)size, 0, fd_rel(fd), NULL);
	pthread_mutex_unlock(&R.lock);
	return rc;
}

EXPORT int truncate(const char *name, off_t size)
{
	char rel[PATH_MAX];
	int rc;

	init();
	if (!R.on)
		return real_truncate(name, size);
	pthread_mutex_lock(&R.lock);
	rc = real_truncate(name, size);
	if (!rc && rel_path(AT_FDCWD, name, rel, sizeof(rel)))
		log_simple(CL_TRUNCATE, 0, (uint64_t)size, 0, rel, NULL);
	pthread_mutex_unlock(&R.lock);
	return rc;
}

EXPORT int fallocate(int fd, int mode, off_t off, off_t len)
{
	const char *rel;
	int rc;

	init();
	if (!R.on || !fd_rel(fd))
		return real_fallocate(fd, mode, off, len);
	pthread_mutex_lock(&R.lock);
	rc = real_fallocate(fd, mode, off, len);
	rel = fd_rel(fd);
	if (!rc) {
		int e = errno;

		if (mode == (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE))
			log_simple(CL_PUNCH, 0, (uint64_t)off, (uint64_t)len,
				   rel, NULL);
		else if ((mode & ~FALLOC_FL_KEEP_SIZE) == FALLOC_FL_ZERO_RANGE)
			log_simple(CL_ZERO, mode & FALLOC_FL_KEEP_SIZE ?
				   CL_F_KEEP_SIZE : 0, (uint64_t)off,
				   (uint64_t)len, rel, NULL);
		else if (mode == 0)
			log_simple(CL_EXTEND, 0, (uint64_t)off, (uint64_t)len,
				   rel, NULL);
		else if (mode != FALLOC_FL_KEEP_SIZE)	/* that one: no change */
			log_simple(CL_UNTRACEABLE, 0, (uint64_t)mode, 0, rel,
				   NULL);
		errno = e;
	}
	pthread_mutex_unlock(&R.lock);
	return rc;
}

static int barrier_done(int fd, int rc)
{
	if (!rc)
		log_simple(CL_FSYNC, 0, 0, 0, fd_rel(fd), NULL);
	pthread_mutex_unlock(&R.lock);
	return rc;
}

EXPORT int fsync(int fd)
{
	init();
	if (!R.on || !fd_rel(fd))
		return real_fsync(fd);
	pthread_mutex_lock(&R.lock);
	return barrier_done(fd, real_fsync(fd));
}

/* The file's data and the metadata to read it (its size): all the model
 * distinguishes, so a barrier like fsync. */
EXPORT int fdatasync(int fd)
{
	init();
	if (!R.on || !fd_rel(fd))
		return real_fdatasync(fd);
	pthread_mutex_lock(&R.lock);
	return barrier_done(fd, real_fdatasync(fd));
}

EXPORT int sync_file_range(int fd, off_t off, off_t len, unsigned int flags)
{
	int rc;

	init();
	if (!R.on || !fd_rel(fd))
		return real_sync_file_range(fd, off, len, flags);
	pthread_mutex_lock(&R.lock);
	rc = real_sync_file_range(fd, off, len, flags);
	/* even WAIT_AFTER flushes no disk cache and no metadata */
	if (!rc)
		log_simple(CL_WRITEBACK, flags, (uint64_t)off, (uint64_t)len,
			   fd_rel(fd), NULL);
	pthread_mutex_unlock(&R.lock);
	return rc;
}

/*
 * Writable shared mappings of recorded files are refused (logged as
 * untraceable), so an msync can only flush mappings the log does not
 * need: passed through.
 */
EXPORT int msync(void *addr, size_t len, int flags)
{
	init();
	return real_msync(addr, len, flags);
}

EXPORT void sync(void)
{
	init();
	if (!R.on) {
		real_sync();
		return;
	}
	pthread_mutex_lock(&R.lock);
	real_sync();
	log_simple(CL_SYNC, 0, 0, 0, NULL, NULL);
	pthread_mutex_unlock(&R.lock);
}

EXPORT int syncfs(int fd)
{
	int rc;

	init();
	if (!R.on)
		return real_syncfs(fd);
	pthread_mutex_lock(&R.lock);
	rc = real_syncfs(fd);
	if (!rc)
		log_simple(CL_SYNC, 0, 0, 0, NULL, NULL);
	pthread_mutex_unlock(&R.lock);
	return rc;
}

EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd,
		  off_t off)
{
	init();
	if (R.on && (prot & PROT_WRITE) && (flags & MAP_SHARED) &&
	    !(flags & MAP_ANONYMOUS) && fd_rel(fd)) {
		pthread_mutex_lock(&R.lock);
		log_simple(CL_UNTRACEABLE, 0, 0, 0, fd_rel(fd), "mmap");
		pthread_mutex_unlock(&R.lock);
		fprintf(stderr,
			"crashrec: %s is mapped writable and shared: its stores cannot be logged\n",
			fd_rel(fd));
	}
	return real_mmap(addr, len, prot, flags, fd, off);
}

/* A namespace call on one path: the real call, then its record. */
static int path_done(uint32_t op, int dirfd, const char *name, int rc)
{
	char rel[PATH_MAX];

	if (!rc && rel_path(dirfd, name, rel, sizeof(rel)))
		log_simple(op, 0, 0, 0, rel, NULL);
	pthread_mutex_unlock(&R.lock);
	return rc;
}

EXPORT int mkdir(const char *name, mode_t mode)
{
	init();
	if (!R.on)
		return real_mkdir(name, mode);
	pthread_mutex_lock(&R.lock);
	return path_done(CL_MKDIR, AT_FDCWD, name, real_mkdir(name, mode));
}

EXPORT int mkdirat(int dirfd, const char *name, mode_t mode)
{
	init();
	if (!R.on)
		return real_mkdirat(dirfd, name, mode);
	pthread_mutex_lock(&R.lock);
	return path_done(CL_MKDIR, dirfd, name, real_mkdirat(dirfd, name, mode));
}

EXPORT int rmdir(const char *name)
{
	init();
	if (!R.on)
		return real_rmdir(name);
	pthread_mutex_lock(&R.lock);
	return path_done(CL_RMDIR, AT_FDCWD, name, real_rmdir(name));
}

EXPORT int unlink(const char *name)
{
	init();
	if (!R.on)
		return real_unlink(name);
	pthread_mutex_lock(&R.lock);
	return path_done(CL_UNLINK, AT_FDCWD, name, real_unlink(name));
}

EXPORT int unlinkat(int dirfd, const char *name, int flags)
{
	init();
	if (!R.on)
		return real_unlinkat(dirfd, name, flags);
	pthread_mutex_lock(&R.lock);
	return path_done(flags & AT_REMOVEDIR ? CL_RMDIR : CL_UNLINK, dirfd,
			 name, real_unlinkat(dirfd, name, flags));
}

static int rename_done(int olddirfd, const char *oldname, int newdirfd,
		       const char *newname, int rc)
{
	char o[PATH_MAX], n[PATH_MAX];
	bool oin = rel_path(olddirfd, oldname, o, sizeof(o));
	bool nin = rel_path(newdirfd, newname, n, sizeof(n));

	if (!rc && oin && nin)
		log_simple(CL_RENAME, 0, 0, 0, o, n);
	else if (!rc && (oin || nin))	/* into or out of the tree */
		log_simple(CL_UNTRACEABLE, 0, 0, 0, oin ? o : n, "rename");
	pthread_mutex_unlock(&R.lock);
	return rc;
}

EXPORT int rename(const char *oldname, const char *newname)
{
	init();
	if (!R.on)
		return real_rename(oldname, newname);
	pthread_mutex_lock(&R.lock);
	return rename_done(AT_FDCWD, oldname, AT_FDCWD, newname,
			   real_rename(oldname, newname));
}

EXPORT int renameat(int od, const char *oldname, int nd, const char *newname)
{
	init();
	if (!R.on)
		return real_renameat(od, oldname, nd, newname);
	pthread_mutex_lock(&R.lock);
	return rename_done(od, oldname, nd, newname,
			   real_renameat(od, oldname, nd, newname));
}

EXPORT int renameat2(int od, const char *oldname, int nd, const char *newname,
		     unsigned int flags)
{
	init();
	if (!R.on)
		return real_renameat2(od, oldname, nd, newname, flags);
	pthread_mutex_lock(&R.lock);
	/* RENAME_EXCHANGE is two renames at once: not in the model */
	if (flags & RENAME_EXCHANGE) {
		int rc = real_renameat2(od, oldname, nd, newname, flags);

		if (!rc)
			log_simple(CL_UNTRACEABLE, 0, 0, 0, "", "rename exchange");
		pthread_mutex_unlock(&R.lock);
		return rc;
	}
	return rename_done(od, oldname, nd, newname,
			   real_renameat2(od, oldname, nd, newname, flags));
}

/* Calls whose effect on a recorded file the log cannot hold. */
static void untraceable(int dirfd, const char *name, const char *what)
{
	char rel[PATH_MAX];

	pthread_mutex_lock(&R.lock);
	if (rel_path(dirfd, name, rel, sizeof(rel)))
		log_simple(CL_UNTRACEABLE, 0, 0, 0, rel, what);
	pthread_mutex_unlock(&R.lock);
}

EXPORT int link(const char *oldname, const char *newname)
{
	init();
	if (R.on)
		untraceable(AT_FDCWD, newname, "link");
	return real_link(oldname, newname);
}

EXPORT int linkat(int od, const char *oldname, int nd, const char *newname,
		  int flags)
{
	init();
	if (R.on)
		untraceable(nd, newname, "link");
	return real_linkat(od, oldname, nd, newname, flags);
}

EXPORT int symlink(const char *target, const char *name)
{
	init();
	if (R.on)
		untraceable(AT_FDCWD, name, "symlink");
	return real_symlink(target, name);
}

EXPORT int symlinkat(const char *target, int dirfd, const char *name)
{
	init();
	if (R.on)
		untraceable(dirfd, name, "symlink");
	return real_symlinkat(target, dirfd, name);
}

static void untraceable_fd(int fd, const char *what)
{
	pthread_mutex_lock(&R.lock);
	if (fd_rel(fd))
		log_simple(CL_UNTRACEABLE, 0, 0, 0, fd_rel(fd), what);
	pthread_mutex_unlock(&R.lock);
}

EXPORT ssize_t copy_file_range(int in, off_t *in_off, int out, off_t *out_off,
			       size_t len, unsigned int flags)
{
	init();
	if (R.on)
		untraceable_fd(out, "copy_file_range");
	return real_copy_file_range(in, in_off, out, out_off, len, flags);
}

EXPORT ssize_t sendfile(int out, int in, off_t *off, size_t len)
{
	init();
	if (R.on)
		untraceable_fd(out, "sendfile");
	return real_sendfile(out, in, off, len);
}

EXPORT void crashrec_mark(uint64_t kind, uint64_t value)
{
	init();
	if (!R.on)
		return;
	pthread_mutex_lock(&R.lock);
	log_simple(CL_MARK, 0, kind, value, NULL, NULL);
	pthread_mutex_unlock(&R.lock);
}

/* The LFS names: the same calls (off_t is 64 bits here). */
#define ALIAS(name, of) __typeof__(of) name __attribute__((alias(#of)))
EXPORT ALIAS(open64, open);
EXPORT ALIAS(openat64, openat);
EXPORT ALIAS(creat64, creat);
EXPORT ALIAS(pwrite64, pwrite);
EXPORT ALIAS(pwritev64, pwritev);
EXPORT ALIAS(pwritev64v2, pwritev2);
EXPORT ALIAS(ftruncate64, ftruncate);
EXPORT ALIAS(truncate64, truncate);
EXPORT ALIAS(fallocate64, fallocate);
EXPORT ALIAS(mmap64, mmap);
EXPORT ALIAS(sendfile64, sendfile);
