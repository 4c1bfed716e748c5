// SPDX-License-Identifier: BSD-2-Clause
/*
 * seacache-fuse against a real ganesha.nfsd with FSAL_DEDUP and its CSI
 * service (scripts/ganesha-run: private namespaces).  The test mounts two
 * seacache-fuse hosts (peers of each other) in its own directory, their
 * CSI traffic through scfs-fault-proxy so that the CSI service can go
 * away while NFS stays, and uses them as a VM would: POSIX calls on the
 * mounts, checked against a model and against the server read over plain
 * NFS (libnfs).
 *
 * Environment: SEACACHE_FUSE, SCFS_PROXY, SEACACHECTL (the programs),
 * CSI_PORT, and
 * ganesha-run's (NFS_PORT, MNT_PORT, GANESHA_CTL, ...); FUSE_TEST_OPS,
 * FUSE_TEST_SEED for the randomized case; FUSE_TEST_ONLY, a glob of the
 * cases to run.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <seacache/prng.h>

#include "nfs_harness.h"

#define BS 4096u
#define HOSTS 2
/* the proxies' ports (CSI_PORT + 1 + k) and the peer servers' */
#define PEER_PORT_BASE 21050

struct mnt {
	char dir[200];
	char stats[512];		/* its statistics directory */
	pid_t fuse;
	pid_t proxy;
	uint16_t proxy_port;
};

static struct mnt mnts[HOSTS];
static char work[160];
static struct nfs_context *nfs;

/* ---- the programs ------------------------------------------------------- */

static pid_t spawn(char *const argv[], int *out_fd)
{
	int pfd[2] = { -1, -1 };
	pid_t pid;

	if (out_fd && pipe(pfd))
		return -1;
	pid = fork();
	if (pid == 0) {
		if (out_fd) {
			dup2(pfd[1], STDOUT_FILENO);
			close(pfd[0]);
			close(pfd[1]);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	if (out_fd) {
		close(pfd[1]);
		*out_fd = pfd[0];
	}
	return pid;
}

static void proxy_start(struct mnt *m)
{
	char listen[64], target[64], line[16] = "";
	char *argv[] = { (char *)nh_env("SCFS_PROXY"), listen, target, NULL };
	int fd = -1;
	ssize_t n;

	snprintf(listen, sizeof(listen), "127.0.0.1:%u", m->proxy_port);
	snprintf(target, sizeof(target), "127.0.0.1:%s", nh_env("CSI_PORT"));
	m->proxy = spawn(argv, &fd);
	assert_true(m->proxy > 0);
	n = read(fd, line, sizeof(line) - 1);	/* "ready" once it listens */
	close(fd);
	assert_true(n > 0 && !strncmp(line, "ready", 5));
}

static void proxy_stop(struct mnt *m)
{
	kill(m->proxy, SIGKILL);
	waitpid(m->proxy, NULL, 0);
	m->proxy = 0;
}

/* A statistic of the mount (its value, or -1 if there is none yet). */
static long long stat_of(const struct mnt *m, const char *name)
{
	char path[600], buf[64] = "";
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", m->stats, name);
	f = fopen(path, "r");
	if (f) {
		if (fgets(buf, sizeof(buf), f))
			v = strtoll(buf, NULL, 10);
		fclose(f);
	}
	return v;
}

/* Waits up to 30 s for name to reach at least v (stats: every second). */
static bool stat_reaches(const struct mnt *m, const char *name, long long v,
			 bool at_most)
{
	for (int i = 0; i < 300; i++) {
		long long now = stat_of(m, name);

		if (now >= 0 && (at_most ? now <= v : now >= v))
			return true;
		usleep(100000);
	}
	fprintf(stderr, "%s: %s is %lld, want %s %lld\n", m->dir, name,
		stat_of(m, name), at_most ? "<=" : ">=", v);
	return false;
}

static void mount_start(struct mnt *m, int k)
{
	char opts[1024], src[] = "127.0.0.1:/export";
	char *argv[] = { (char *)nh_env("SEACACHE_FUSE"), src, m->dir, "-f",
			 "-o", opts, NULL };
	struct stat st, up;

	snprintf(opts, sizeof(opts),
		 "nfsport=%s,mountport=%s,csi_port=%u,cache=1M,peer=127.0.0.1:%d,stats_dir=%s/stats,csi_timeo=20",
		 nh_env("NFS_PORT"), nh_env("MNT_PORT"), m->proxy_port,
		 PEER_PORT_BASE + k, work);
	assert_int_equal(stat(work, &up), 0);
	m->fuse = spawn(argv, NULL);
	assert_true(m->fuse > 0);
	for (int i = 0; i < 300; i++) {
		if (!stat(m->dir, &st) && st.st_dev != up.st_dev)
			break;
		usleep(100000);
	}
	assert_int_not_equal(st.st_dev, up.st_dev);
	snprintf(m->stats, sizeof(m->stats), "%s/stats/%u:%u", work,
		 major(st.st_dev), minor(st.st_dev));
	assert_true(stat_reaches(m, "connected", 1, false));
}

static void mount_stop(struct mnt *m)
{
	char *argv[] = { "/bin/fusermount3", "-u", m->dir, NULL };
	int status, tries = 0;

	/* the kernel sends the last RELEASE after close returns: busy a while */
	while (nh_run(argv, NULL) && ++tries < 50)
		usleep(100000);
	assert_true(tries < 50);

	assert_int_equal(waitpid(m->fuse, &status, 0), m->fuse);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	m->fuse = 0;
}

/* ---- files -------------------------------------------------------------- */

static char *at(const struct mnt *m, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static char *at(const struct mnt *m, const char *fmt, ...)
{
	static __thread char paths[4][512];
	static __thread int next;
	char *p = paths[next++ % 4];
	int n = snprintf(p, 512, "%s/", m->dir);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p + n, 512 - (size_t)n, fmt, ap);
	va_end(ap);
	return p;
}

static void put_file(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, buf, len, 0), (ssize_t)len);
	assert_int_equal(close(fd), 0);
}

/* path holds exactly buf[0..len), read in pieces of piece bytes */
static void check_file(const char *path, const void *buf, size_t len,
		       int flags)
{
	uint8_t *got = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC | flags);

	assert_true(fd >= 0);
	assert_int_equal(posix_memalign((void **)&got, BS, len + BS), 0);
	assert_int_equal(pread(fd, got, len + BS, 0), (ssize_t)len);
	if (memcmp(got, buf, len))
		fail_msg("%s: first difference at %zu", path,
			 nh_first_diff(got, buf, len));
	free(got);
	close(fd);
}

/* name made anew on m, len bytes of buf written, still open: its fd */
static int open_written(const struct mnt *m, const char *name,
			const void *buf, size_t len)
{
	int fd = open(at(m, "%s", name),
		      O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, buf, len, 0), (ssize_t)len);
	return fd;
}

static void fill(void *buf, size_t len, uint64_t seed)
{
	nh_fill_seeded(buf, len, seed);
}

/* ---- scenarios ---------------------------------------------------------- */

/* The namespace as NFS has it, through both hosts. */
static void test_namespace(void **state)
{
	static uint8_t a[3 * BS + 100], b[5000];
	struct mnt *m0 = &mnts[0], *m1 = &mnts[1];
	char target[64] = "";
	struct dirent *e;
	struct stat st;
	int seen = 0;
	DIR *d;

	(void)state;
	fill(a, sizeof(a), 1);
	fill(b, sizeof(b), 2);
	assert_int_equal(mkdir(at(m0, "ns"), 0755), 0);
	assert_int_equal(mkdir(at(m0, "ns/sub"), 0750), 0);
	put_file(at(m0, "ns/a"), a, sizeof(a));
	put_file(at(m0, "ns/sub/b"), b, sizeof(b));
	/* renamed across directories, by the other host too */
	assert_int_equal(rename(at(m0, "ns/a"), at(m0, "ns/sub/a2")), 0);
	check_file(at(m0, "ns/sub/a2"), a, sizeof(a), 0);
	check_file(at(m1, "ns/sub/a2"), a, sizeof(a), 0);
	assert_int_equal(rename(at(m1, "ns/sub"), at(m1, "ns/moved")), 0);
	check_file(at(m1, "ns/moved/b"), b, sizeof(b), 0);
	/* (the other host may see the old name a second: directories' cache) */
	assert_int_equal(stat(at(m1, "ns/sub"), &st), -1);
	assert_int_equal(errno, ENOENT);
	check_file(at(m0, "ns/moved/b"), b, sizeof(b), 0);
	/* a hard link outlives the name it was made from */
	assert_int_equal(link(at(m0, "ns/moved/b"), at(m0, "ns/hard")), 0);
	assert_int_equal(stat(at(m0, "ns/hard"), &st), 0);
	assert_int_equal(st.st_nlink, 2);
	assert_int_equal(unlink(at(m0, "ns/moved/b")), 0);
	check_file(at(m0, "ns/hard"), b, sizeof(b), 0);
	assert_int_equal(truncate(at(m0, "ns/hard"), 1000), 0);
	check_file(at(m0, "ns/hard"), b, 1000, 0);
	/* symlinks, modes, times */
	assert_int_equal(symlink("moved/a2", at(m0, "ns/sym")), 0);
	assert_int_equal(readlink(at(m1, "ns/sym"), target, sizeof(target) - 1),
			 8);
	assert_string_equal(target, "moved/a2");
	check_file(at(m1, "ns/sym"), a, sizeof(a), 0);
	assert_int_equal(chmod(at(m0, "ns/hard"), 0600), 0);
	{
		struct timespec ts[2] = { { 1000000, 0 }, { 2000000, 5000 } };

		assert_int_equal(utimensat(AT_FDCWD, at(m0, "ns/hard"), ts, 0), 0);
	}
	assert_int_equal(stat(at(m0, "ns/hard"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(st.st_mtim.tv_sec, 2000000);
	assert_int_equal(st.st_size, 1000);
	/* exclusive create, and rmdir of a full directory refused */
	assert_int_equal(open(at(m0, "ns/hard"), O_CREAT | O_EXCL | O_WRONLY |
			      O_CLOEXEC, 0644), -1);
	assert_int_equal(errno, EEXIST);
	assert_int_equal(rmdir(at(m0, "ns/moved")), -1);
	assert_int_equal(errno, ENOTEMPTY);
	/* the listing, on the other host */
	d = opendir(at(m1, "ns"));
	assert_non_null(d);
	while ((e = readdir(d)))
		seen |= !strcmp(e->d_name, "moved") << 0 |
			!strcmp(e->d_name, "hard") << 1 |
			!strcmp(e->d_name, "sym") << 2 |
			!strcmp(e->d_name, ".") << 3;
	closedir(d);
	assert_int_equal(seen, 15);
	/* and on the server */
	assert_int_equal(nh_check_file(nfs, "/ns/moved/a2", a, sizeof(a)), 0);
	assert_int_equal(nh_check_file(nfs, "/ns/hard", b, 1000), 0);
	assert_int_equal(unlink(at(m0, "ns/sym")), 0);
	assert_int_equal(unlink(at(m0, "ns/hard")), 0);
	assert_int_equal(unlink(at(m0, "ns/moved/a2")), 0);
	assert_int_equal(rmdir(at(m0, "ns/moved")), 0);
	assert_int_equal(rmdir(at(m0, "ns")), 0);
	assert_int_equal(stat(at(m1, "ns"), &st), -1);
}

/* close and fsync commit what a VM wrote; until then the host keeps it */
static void test_commit_on_close(void **state)
{
	static uint8_t buf[64 * BS];
	struct mnt *m = &mnts[0];
	int fd;

	(void)state;
	fill(buf, sizeof(buf), 3);
	fd = open_written(m, "commit", buf, sizeof(buf));
	assert_true(stat_reaches(m, "unstable_blocks", 1, false));
	assert_int_equal(fsync(fd), 0);
	assert_true(stat_reaches(m, "unstable_blocks", 0, true));
	assert_int_equal(pwrite(fd, buf, BS, 8 * BS), BS);
	assert_true(stat_reaches(m, "unstable_blocks", 1, false));
	assert_int_equal(close(fd), 0);
	assert_true(stat_reaches(m, "unstable_blocks", 0, true));
	memcpy(buf + 8 * BS, buf, BS);
	assert_int_equal(nh_check_file(nfs, "/commit", buf, sizeof(buf)), 0);
	/* the other host reads it, served from this one's cache (coop) */
	check_file(at(&mnts[1], "commit"), buf, sizeof(buf), O_DIRECT);
	assert_true(stat_reaches(&mnts[1], "bytes_from_peers", 1, false));
	assert_int_equal(unlink(at(m, "commit")), 0);
}

/* shared mappings: through the kernel's page cache, written as writes */
static void test_mmap(void **state)
{
	const size_t len = 256 * BS;
	uint8_t *want = malloc(len), *p;
	int fd;

	(void)state;
	assert_non_null(want);
	fill(want, len, 4);
	fd = open(at(&mnts[0], "mapped"), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)len), 0);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(p != MAP_FAILED);
	memcpy(p, want, len);
	assert_int_equal(msync(p, len, MS_SYNC), 0);
	assert_int_equal(memcmp(p, want, len), 0);
	assert_int_equal(munmap(p, len), 0);
	assert_int_equal(close(fd), 0);
	check_file(at(&mnts[1], "mapped"), want, len, 0);
	assert_int_equal(nh_check_file(nfs, "/mapped", want, len), 0);
	/* a mapping of what another host wrote reads it */
	fill(want, 2 * BS, 5);
	fd = open(at(&mnts[1], "mapped"), O_RDWR | O_CLOEXEC);
	assert_int_equal(pwrite(fd, want, 2 * BS, 0), 2 * BS);
	assert_int_equal(close(fd), 0);
	fd = open(at(&mnts[0], "mapped"), O_RDONLY | O_CLOEXEC);
	p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	assert_true(p != MAP_FAILED);
	assert_int_equal(memcmp(p, want, len), 0);
	munmap(p, len);
	close(fd);
	assert_int_equal(unlink(at(&mnts[0], "mapped")), 0);
	free(want);
}

/*
 * The CSI service goes away under open files with unstable writes: reads
 * and writes go to NFS, close puts the host's unstable blocks through NFS,
 * nothing is lost; the service back, CSI carries the I/O again.
 */
static void test_csi_down(void **state)
{
	static uint8_t buf[32 * BS], got[32 * BS];
	struct mnt *m = &mnts[0];
	long long csi_bytes;
	int fd;

	(void)state;
	fill(buf, sizeof(buf), 6);
	fd = open_written(m, "down", buf, sizeof(buf));
	assert_true(stat_reaches(m, "unstable_blocks", 32, false));
	proxy_stop(m);
	/* a write, then a read of it, with the service gone */
	fill(buf + 4 * BS, BS + 10, 7);
	assert_int_equal(pwrite(fd, buf + 4 * BS, BS + 10, 4 * BS), BS + 10);
	assert_int_equal(pread(fd, got, sizeof(got), 0), (ssize_t)sizeof(got));
	assert_int_equal(memcmp(got, buf, sizeof(buf)), 0);
	assert_true(stat_reaches(m, "fallback_writes", 1, false));
	assert_true(stat_reaches(m, "fallback_reads", 1, false));
	assert_true(stat_reaches(m, "drained_blocks", 32, false));
	assert_true(stat_reaches(m, "csi_down", 1, false));
	assert_int_equal(close(fd), 0);
	assert_int_equal(nh_check_file(nfs, "/down", buf, sizeof(buf)), 0);
	/* back: the probe finds it, and reads go over CSI again */
	proxy_start(m);
	assert_true(stat_reaches(m, "csi_down", 0, true));
	csi_bytes = stat_of(m, "csi_read_bytes");
	check_file(at(m, "down"), buf, sizeof(buf), O_DIRECT);
	assert_true(stat_reaches(m, "csi_read_bytes",
				 csi_bytes + (long long)sizeof(buf), false));
	assert_int_equal(unlink(at(m, "down")), 0);
}

/* A server restart (a new epoch) under unstable writes: resent, kept. */
static void test_server_restart(void **state)
{
	static uint8_t buf[16 * BS];
	struct mnt *m = &mnts[1];
	int fd;

	(void)state;
	fill(buf, sizeof(buf), 8);
	fd = open_written(m, "restart", buf, sizeof(buf));
	nh_umount(nfs);
	assert_int_equal(nh_ctl("restart"), 0);
	nfs = nh_mount(3);
	fill(buf + BS, BS, 9);
	assert_int_equal(pwrite(fd, buf + BS, BS, BS), BS);
	assert_int_equal(close(fd), 0);
	assert_int_equal(nh_check_file(nfs, "/restart", buf, sizeof(buf)), 0);
	check_file(at(&mnts[0], "restart"), buf, sizeof(buf), 0);
	assert_int_equal(unlink(at(m, "restart")), 0);
}

/* seacachectl finds a FUSE host's statistics from its mount point. */
static void test_stats_mount(void **state)
{
	char root[300], *out = NULL;
	char *argv[] = { (char *)nh_env("SEACACHECTL"), "stats", "--mount",
			 mnts[0].dir, "--json", NULL };
	uint64_t reads, connected;

	(void)state;
	snprintf(root, sizeof(root), "%s/stats", work);
	setenv("SEACACHE_FUSE_STATS_ROOT", root, 1);
	assert_int_equal(nh_run(argv, &out), 0);
	assert_int_equal(nh_json_u64(out, "reads", &reads), 0);
	assert_true(reads > 0);
	assert_int_equal(nh_json_u64(out, "connected", &connected), 0);
	assert_int_equal(connected, 1);
	assert_non_null(strstr(out, "\"policy\":\"elru:16\""));
	free(out);
}

/* ---- randomized: both hosts, threads each, against a model ------------- */

#define RND_FILES 5
#define RND_THREADS 3
#define RND_MAX (32 * BS)

struct rnd_file {
	pthread_mutex_t lock;		/* one operation at a time */
	uint8_t ref[RND_MAX];
	size_t size;
};

static struct rnd_file rf[RND_FILES];
static uint8_t pool[8 * BS];		/* shared blocks: dedup, hash hits */
static atomic_bool rnd_failed;

struct rnd_thread {
	pthread_t thread;
	const struct mnt *m;
	uint64_t seed, ops_wanted, ops;
	char err[512];
};

static void rnd_data(struct sc_prng *r, uint8_t *buf, size_t len)
{
	for (size_t i = 0; i < len; i += BS) {
		size_t n = len - i < BS ? len - i : BS;

		if (sc_prng_below(r, 3))
			memcpy(buf + i, pool + sc_prng_below(r, 8) * BS, n);
		else
			sc_prng_fill(r, buf + i, n);
	}
}

static int rnd_op(struct rnd_thread *t, struct sc_prng *r, uint8_t *buf)
{
	uint32_t k = sc_prng_below(r, RND_FILES);
	struct rnd_file *f = &rf[k];
	int flags = sc_prng_below(r, 2) ? O_DIRECT : 0;
	uint64_t off = sc_prng_below(r, RND_MAX);
	size_t len = 1 + sc_prng_below(r, (uint32_t)(RND_MAX - off)), want;
	ssize_t n;
	int fd, rc = 0;

	pthread_mutex_lock(&f->lock);
	fd = open(at(t->m, "rnd/%u", k), O_RDWR | O_CLOEXEC | flags);
	if (fd < 0) {
		snprintf(t->err, sizeof(t->err), "open rnd/%u: %s", k,
			 strerror(errno));
		rc = -1;
		goto out;
	}
	if (sc_prng_below(r, 3)) {
		want = off >= f->size ? 0 :
		       (f->size - off < len ? f->size - off : len);
		n = pread(fd, buf, len, (off_t)off);
		if (n != (ssize_t)want || memcmp(buf, f->ref + off, want)) {
			snprintf(t->err, sizeof(t->err),
				 "%s read rnd/%u %llu+%zu%s: %zd of %zu bytes, first difference at %zu",
				 t->m->dir, k, (unsigned long long)off, len,
				 flags ? " O_DIRECT" : "", n, want,
				 n > 0 ? nh_first_diff(buf, f->ref + off,
						       (size_t)n) : 0);
			rc = -1;
		}
	} else {
		if (sc_prng_below(r, 2)) {	/* whole blocks, mostly */
			off -= off % BS;
			len = len < BS ? BS : len - len % BS;
			if (off + len > RND_MAX)
				len = RND_MAX - off;
		}
		rnd_data(r, buf, len);
		n = pwrite(fd, buf, len, (off_t)off);
		if (n != (ssize_t)len) {
			snprintf(t->err, sizeof(t->err), "write rnd/%u: %zd (%s)",
				 k, n, strerror(errno));
			rc = -1;
		} else {
			if (off > f->size)	/* a hole: zeros */
				memset(f->ref + f->size, 0, off - f->size);
			memcpy(f->ref + off, buf, len);
			if (off + len > f->size)
				f->size = off + len;
			if (!sc_prng_below(r, 4) && fsync(fd))
				rc = -1;
		}
	}
	if (close(fd) && !rc) {
		snprintf(t->err, sizeof(t->err), "close rnd/%u: %s", k,
			 strerror(errno));
		rc = -1;
	}
out:
	pthread_mutex_unlock(&f->lock);
	return rc;
}

static void *rnd_main(void *arg)
{
	struct rnd_thread *t = arg;
	uint8_t *buf = NULL;
	struct sc_prng r;

	if (posix_memalign((void **)&buf, BS, RND_MAX))
		return NULL;
	sc_prng_seed(&r, t->seed);
	while (t->ops < t->ops_wanted && !atomic_load(&rnd_failed)) {
		if (rnd_op(t, &r, buf)) {
			atomic_store(&rnd_failed, true);
			break;
		}
		t->ops++;
	}
	free(buf);
	return NULL;
}

static void test_random(void **state)
{
	struct rnd_thread th[HOSTS * RND_THREADS];
	const char *env = getenv("FUSE_TEST_OPS");
	uint64_t ops = env ? strtoull(env, NULL, 0) : 2000;
	uint64_t seed = (uint64_t)time(NULL);
	long long csi_bytes[HOSTS], fallbacks[HOSTS];
	struct sc_prng r;
	char path[64];
	int i, k;

	(void)state;
	env = getenv("FUSE_TEST_SEED");
	if (env)
		seed = strtoull(env, NULL, 0);
	printf("randomized: seed %llu (FUSE_TEST_SEED), %llu operations per thread (FUSE_TEST_OPS), %d hosts x %d threads\n",
	       (unsigned long long)seed, (unsigned long long)ops, HOSTS,
	       RND_THREADS);
	sc_prng_seed(&r, seed);
	sc_prng_fill(&r, pool, sizeof(pool));
	assert_int_equal(mkdir(at(&mnts[0], "rnd"), 0755), 0);
	for (k = 0; k < RND_FILES; k++) {
		pthread_mutex_init(&rf[k].lock, NULL);
		rf[k].size = 4 * BS + sc_prng_below(&r, 8 * BS);
		rnd_data(&r, rf[k].ref, rf[k].size);
		put_file(at(&mnts[0], "rnd/%d", k), rf[k].ref, rf[k].size);
	}
	for (i = 0; i < HOSTS; i++) {
		csi_bytes[i] = stat_of(&mnts[i], "csi_read_bytes");
		fallbacks[i] = stat_of(&mnts[i], "fallback_reads");
	}
	memset(th, 0, sizeof(th));
	atomic_store(&rnd_failed, false);
	for (i = 0; i < HOSTS * RND_THREADS; i++) {
		th[i].m = &mnts[i % HOSTS];
		th[i].seed = seed * 131 + (uint64_t)i;
		th[i].ops_wanted = ops;
		assert_int_equal(pthread_create(&th[i].thread, NULL, rnd_main,
						&th[i]), 0);
	}
	for (i = 0; i < HOSTS * RND_THREADS; i++)
		assert_int_equal(pthread_join(th[i].thread, NULL), 0);
	for (i = 0; i < HOSTS * RND_THREADS; i++)
		if (th[i].err[0])
			fail_msg("thread %d (seed %llu): %s", i,
				 (unsigned long long)seed, th[i].err);
	for (i = 0; i < HOSTS * RND_THREADS; i++)
		assert_int_equal(th[i].ops, ops);
	for (k = 0; k < RND_FILES; k++) {
		snprintf(path, sizeof(path), "/rnd/%d", k);
		assert_int_equal(nh_check_file(nfs, path, rf[k].ref,
					       rf[k].size), 0);
	}
	/* the data went over CSI, served from the caches too */
	for (i = 0; i < HOSTS; i++) {
		assert_true(stat_reaches(&mnts[i], "csi_read_bytes",
					 csi_bytes[i] + 1, false));
		printf("  host %d: address hits %lld, content hits %lld, misses %lld, hash-only %lld, from peers %lld B (delegations %lld, failed %lld), fallback reads %lld (before: %lld)\n",
		       i, stat_of(&mnts[i], "address_hits"),
		       stat_of(&mnts[i], "content_hits"),
		       stat_of(&mnts[i], "misses"),
		       stat_of(&mnts[i], "hash_only_blocks"),
		       stat_of(&mnts[i], "bytes_from_peers"),
		       stat_of(&mnts[i], "delegations"),
		       stat_of(&mnts[i], "peer_failures"),
		       stat_of(&mnts[i], "fallback_reads"), fallbacks[i]);
		assert_int_equal(stat_of(&mnts[i], "fallback_reads"),
				 fallbacks[i]);
	}
	for (k = 0; k < RND_FILES; k++)
		assert_int_equal(unlink(at(&mnts[0], "rnd/%d", k)), 0);
	assert_int_equal(rmdir(at(&mnts[0], "rnd")), 0);
}

static int setup(void **state)
{
	const char *tmp = getenv("TMPDIR");

	(void)state;
	snprintf(work, sizeof(work), "%s/seacache-fuse-test.XXXXXX",
		 tmp ? tmp : "/tmp");
	if (!mkdtemp(work))
		return -1;
	nfs = nh_mount(3);
	for (int k = 0; k < HOSTS; k++) {
		struct mnt *m = &mnts[k];

		snprintf(m->dir, sizeof(m->dir), "%s/host%d", work, k);
		if (mkdir(m->dir, 0755))
			return -1;
		m->proxy_port = (uint16_t)(atoi(nh_env("CSI_PORT")) + 1 + k);
		proxy_start(m);
		mount_start(m, k);
	}
	return 0;
}

static int teardown(void **state)
{
	char *argv[] = { "/bin/rm", "-rf", work, NULL };

	(void)state;
	for (int k = 0; k < HOSTS; k++) {
		if (mnts[k].fuse)
			mount_stop(&mnts[k]);
		if (mnts[k].proxy)
			proxy_stop(&mnts[k]);
	}
	nh_umount(nfs);
	return nh_run(argv, NULL) ? -1 : 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_namespace),
		cmocka_unit_test(test_commit_on_close),
		cmocka_unit_test(test_mmap),
		cmocka_unit_test(test_csi_down),
		cmocka_unit_test(test_server_restart),
		cmocka_unit_test(test_random),
		cmocka_unit_test(test_stats_mount),
	};

	if (getenv("FUSE_TEST_ONLY"))	/* a glob of the cases to run */
		cmocka_set_test_filter(getenv("FUSE_TEST_ONLY"));
	return cmocka_run_group_tests(tests, setup, teardown);
}
