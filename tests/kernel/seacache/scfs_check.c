// SPDX-License-Identifier: BSD-2-Clause
/*
 * scfs-check: the data checks of the seacache.ko tests, a static program
 * run in the test guest (and on the host side to make the images).
 *
 *   scfs-check random DIR SEED OPS THREADS MAXSIZE
 *       THREADS threads, each on a file of its own in DIR, run OPS seeded
 *       random operations (buffered and O_DIRECT writes and reads,
 *       truncates, appends, fsyncs, close and reopen) and check every byte
 *       read against an in-memory model of the file.  A third of the
 *       written blocks repeat one of a few contents, so the host cache
 *       sees shared content.  The same seed gives the same operations.
 *   scfs-check mmap FILE
 *       read(), write() and a shared mapping of FILE see each other.
 *   scfs-check image SEED SIZE OUT [CLONE_SEED PERMILLE]
 *       a seeded image of SIZE bytes, or a clone of it with PERMILLE of its
 *       4 KiB blocks rewritten (seeded by CLONE_SEED).
 *   scfs-check hold SEED SIZE OUT UNTIL
 *       the image of SEED written to OUT, which then stays open (a close
 *       would commit its unstable writes) until the file UNTIL exists;
 *       "written" on stdout once the bytes are.
 *   scfs-check bench FILE BLOCK COUNT [direct]
 *       COUNT random reads of BLOCK bytes from FILE (O_DIRECT if asked);
 *       prints the MB/s.
 *   scfs-check seq FILE BLOCK
 *       the whole of FILE in reads of BLOCK bytes; prints the MB/s.
 *
 * Exit status 0 when every check passed; a failure names the file, the
 * offset and the operation.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BS 4096u
#define MAX_IO (256u << 10)
#define HIST 24u	/* operations remembered per file */
#define SHARED_CONTENTS 8

static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rng_below(uint64_t *s, uint64_t n)
{
	return n ? rng_next(s) % n : 0;
}

static void rng_fill(uint64_t *s, uint8_t *p, size_t n)
{
	while (n >= 8) {
		uint64_t v = rng_next(s);

		memcpy(p, &v, 8);
		p += 8;
		n -= 8;
	}
	while (n--)
		*p++ = (uint8_t)rng_next(s);
}

static void die(const char *what)
{
	fprintf(stderr, "scfs-check: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void *xalloc(size_t n)
{
	void *p;

	if (posix_memalign(&p, BS, n ? n : BS))
		die("memory");
	return p;
}

/* pread/pwrite until done or error (short only at end of file). */
static ssize_t full_io(int fd, void *buf, size_t len, off_t off, bool wr)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = wr ? pwrite(fd, (char *)buf + done, len - done,
					off + done) :
				 pread(fd, (char *)buf + done, len - done,
				       off + done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		done += n;
	}
	return done;
}

/* ---- random: a seeded workload against a model ------------------------- */

struct worker {
	pthread_t t;
	char path[512];
	uint64_t seed, ops, max;
	uint8_t *model;		/* max bytes */
	uint64_t size;		/* the model's file size */
	uint8_t *shared;	/* SHARED_CONTENTS blocks, equal in all threads */
	int fd, dfd, afd;	/* buffered, O_DIRECT, O_APPEND */
	uint64_t counts[8];
	int failed;
	/* the last operations, printed when a check fails */
	struct { int op; bool direct; uint64_t off, len; } hist[HIST];
	uint64_t nhist;
};

enum { OP_WRITE, OP_READ, OP_TRUNC, OP_APPEND, OP_FSYNC, OP_REOPEN, OP_FULL };
static const char *const op_names[] = { "write", "read", "truncate", "append",
					"fsync", "reopen", "full-read" };

static void w_history(const struct worker *w)
{
	uint64_t i = w->nhist > HIST ? w->nhist - HIST : 0;

	for (; i < w->nhist; i++) {
		int op = w->hist[i % HIST].op;
		bool direct = w->hist[i % HIST].direct && op <= OP_READ;

		fprintf(stderr, "scfs-check: %s: op %" PRIu64 ": %s%s at %" PRIu64 " len %" PRIu64 "\n",
			w->path, i, direct ? "O_DIRECT " : "", op_names[op],
			w->hist[i % HIST].off, w->hist[i % HIST].len);
	}
}

static void w_open(struct worker *w)
{
	w->fd = open(w->path, O_RDWR | O_CREAT, 0644);
	w->dfd = open(w->path, O_RDWR | O_DIRECT);
	w->afd = open(w->path, O_WRONLY | O_APPEND);
	if (w->fd < 0 || w->dfd < 0 || w->afd < 0)
		die(w->path);
}

static void w_close(struct worker *w)
{
	if (close(w->fd) || close(w->dfd) || close(w->afd))
		die("close");
}

/* Fill len bytes: some blocks a shared content, the rest random. */
static void w_data(struct worker *w, uint8_t *buf, size_t len)
{
	size_t i;

	for (i = 0; i < len; i += BS) {
		size_t n = len - i < BS ? len - i : BS;

		if (rng_below(&w->seed, 3) == 0)
			memcpy(buf + i, w->shared + BS *
			       rng_below(&w->seed, SHARED_CONTENTS), n);
		else
			rng_fill(&w->seed, buf + i, n);
	}
}

static int w_check(struct worker *w, const uint8_t *got, ssize_t n,
		   uint64_t off, size_t len, const char *op)
{
	uint64_t expect = off >= w->size ? 0 :
			  (w->size - off < len ? w->size - off : len);
	uint64_t i, first, last, bad = 0;

	if (n < 0 || (uint64_t)n != expect) {
		fprintf(stderr, "scfs-check: %s: %s at %" PRIu64 " len %zu: got %zd bytes, expected %" PRIu64 " (%s)\n",
			w->path, op, off, len, n, expect,
			n < 0 ? strerror(errno) : "short/long");
		w_history(w);
		return -1;
	}
	for (i = 0; i < expect && got[i] == w->model[off + i]; i++)
		;
	if (i == expect)
		return 0;
	first = last = i;
	for (; i < expect; i++)
		if (got[i] != w->model[off + i]) {
			last = i;
			bad++;
		}
	fprintf(stderr, "scfs-check: %s: %s at %" PRIu64 " len %zu: byte %" PRIu64 " is %#x, expected %#x; %" PRIu64 " bytes differ in %" PRIu64 "..%" PRIu64 " (file size %" PRIu64 ")\n",
		w->path, op, off, len, off + first, got[first],
		w->model[off + first], bad + 1, off + first, off + last,
		w->size);
	w_history(w);
	return -1;
}

/* Every byte of the file, in MAX_IO pieces, and one past its end. */
static int w_full_read(struct worker *w, uint8_t *buf)
{
	uint64_t off;
	ssize_t n;

	for (off = 0; off <= w->size; off += MAX_IO) {
		n = full_io(w->fd, buf, MAX_IO, off, false);
		if (w_check(w, buf, n, off, MAX_IO, "full read"))
			return -1;
	}
	return 0;
}

static int w_op(struct worker *w, uint8_t *buf)
{
	unsigned int r = rng_below(&w->seed, 100);
	bool direct = rng_below(&w->seed, 4) == 0;
	uint64_t off, len;
	ssize_t n;
	int op;

	op = r < 35 ? OP_WRITE : r < 72 ? OP_READ : r < 80 ? OP_TRUNC :
	     r < 88 ? OP_APPEND : r < 93 ? OP_FSYNC : r < 97 ? OP_REOPEN :
	     OP_FULL;
	w->counts[op]++;
	len = 1 + rng_below(&w->seed, MAX_IO);
	off = rng_below(&w->seed, w->max - len);
	if (direct) {
		len = (len + BS - 1) / BS * BS;
		off = off / BS * BS;
		if (off + len > w->max)
			off = w->max - len;
	}
	w->hist[w->nhist % HIST].op = op;
	w->hist[w->nhist % HIST].direct = direct;
	w->hist[w->nhist % HIST].off = off;
	w->hist[w->nhist % HIST].len = len;
	w->nhist++;
	switch (op) {
	case OP_WRITE:
		w_data(w, buf, len);
		n = full_io(direct ? w->dfd : w->fd, buf, len, off, true);
		if (n != (ssize_t)len)
			die("write");
		if (off > w->size)	/* the gap reads as zeros */
			memset(w->model + w->size, 0, off - w->size);
		memcpy(w->model + off, buf, len);
		if (off + len > w->size)
			w->size = off + len;
		return 0;
	case OP_READ:
		n = full_io(direct ? w->dfd : w->fd, buf, len, off, false);
		return w_check(w, buf, n, off, len,
			       direct ? "O_DIRECT read" : "read");
	case OP_TRUNC:
		off = rng_below(&w->seed, w->max + 1);
		if (ftruncate(w->fd, off))
			die("ftruncate");
		w->hist[(w->nhist - 1) % HIST].off = off;
		w->hist[(w->nhist - 1) % HIST].len = 0;
		if (off > w->size)
			memset(w->model + w->size, 0, off - w->size);
		w->size = off;
		return 0;
	case OP_APPEND:
		if (w->size + len > w->max)
			return 0;
		w_data(w, buf, len);
		w->hist[(w->nhist - 1) % HIST].off = w->size;
		if (write(w->afd, buf, len) != (ssize_t)len)
			die("append");
		memcpy(w->model + w->size, buf, len);
		w->size += len;
		return 0;
	case OP_FSYNC:
		if (fsync(w->fd))
			die("fsync");
		return 0;
	case OP_REOPEN:
		w_close(w);
		w_open(w);
		return 0;
	default: /* OP_FULL */
		return w_full_read(w, buf);
	}
}

static void *w_run(void *arg)
{
	struct worker *w = arg;
	uint8_t *buf = xalloc(MAX_IO);
	uint64_t i;

	w_open(w);
	if (ftruncate(w->fd, 0))
		die("ftruncate");
	for (i = 0; i < w->ops && !w->failed; i++)
		if (w_op(w, buf))
			w->failed = 1;
	/* Last: every byte, after a close and reopen. */
	if (!w->failed) {
		w_close(w);
		w_open(w);
		w->counts[OP_FULL]++;
		w->failed = w_full_read(w, buf);
	}
	w_close(w);
	free(buf);
	return NULL;
}

static int cmd_random(const char *dir, uint64_t seed, uint64_t ops,
		      unsigned int threads, uint64_t max)
{
	struct worker *w = calloc(threads, sizeof(*w));
	uint8_t *shared = xalloc(SHARED_CONTENTS * BS);
	uint64_t s = seed ^ 0x5eacac4e, totals[8] = { 0 };
	unsigned int i, j;
	int failed = 0;

	if (!w || max < 2 * MAX_IO) {
		fprintf(stderr, "scfs-check: random: MAXSIZE must be >= %u\n",
			2 * MAX_IO);
		return 2;
	}
	rng_fill(&s, shared, SHARED_CONTENTS * BS);
	for (i = 0; i < threads; i++) {
		snprintf(w[i].path, sizeof(w[i].path), "%s/random-%u", dir, i);
		w[i].seed = seed * 1000003 + i;
		w[i].ops = ops;
		w[i].max = max;
		w[i].model = calloc(1, max);
		w[i].shared = shared;
		if (!w[i].model)
			die("model memory");
		if (pthread_create(&w[i].t, NULL, w_run, &w[i]))
			die("pthread_create");
	}
	for (i = 0; i < threads; i++) {
		pthread_join(w[i].t, NULL);
		failed |= w[i].failed;
		for (j = 0; j < 7; j++)
			totals[j] += w[i].counts[j];
		free(w[i].model);
	}
	printf("scfs-check random %s seed %" PRIu64 ":", dir, seed);
	for (j = 0; j < 7; j++)
		printf(" %s %" PRIu64, op_names[j], totals[j]);
	printf(" -> %s\n", failed ? "FAILED" : "every byte as written");
	free(shared);
	free(w);
	return failed;
}

static int mm_expect(const char *what, const uint8_t *got,
		     const uint8_t *want, size_t n)
{
	if (!memcmp(got, want, n))
		return 0;
	fprintf(stderr, "scfs-check: mmap: %s differs\n", what);
	return 1;
}

/* read, write and a shared mapping of one file agree. */
static int cmd_mmap(const char *path)
{
	size_t len = 64 * BS;
	uint8_t *a = xalloc(len), *b = xalloc(len);
	uint64_t s = 42;
	uint8_t *map;
	int fd, bad = 0;

	rng_fill(&s, a, len);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || full_io(fd, a, len, 0, true) != (ssize_t)len)
		die(path);
	map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		die("mmap");
	bad |= mm_expect("mapping after write()", map, a, len);
	/* write() after mmap: the mapping sees it */
	rng_fill(&s, a + 5 * BS, 3 * BS);
	if (full_io(fd, a + 5 * BS, 3 * BS, 5 * BS, true) != 3 * BS)
		die("pwrite");
	bad |= mm_expect("mapping after pwrite()", map, a, len);
	/* a store through the mapping: read() sees it, after msync too */
	memset(map + 9 * BS + 100, 0xab, 2 * BS);
	memset(a + 9 * BS + 100, 0xab, 2 * BS);
	if (full_io(fd, b, len, 0, false) != (ssize_t)len)
		die("pread");
	bad |= mm_expect("read() after a store", b, a, len);
	if (msync(map, len, MS_SYNC))
		die("msync");
	munmap(map, len);
	close(fd);
	fd = open(path, O_RDONLY);
	if (fd < 0 || full_io(fd, b, len, 0, false) != (ssize_t)len)
		die("reopen");
	bad |= mm_expect("read() after close and reopen", b, a, len);
	close(fd);
	printf("scfs-check mmap %s -> %s\n", path, bad ? "FAILED" : "coherent");
	free(a);
	free(b);
	return bad;
}

static int cmd_image(uint64_t seed, uint64_t size, const char *out,
		     uint64_t clone_seed, unsigned int permille,
		     const char *hold_until)
{
	uint8_t *buf = xalloc(BS);
	uint64_t s = seed, c = clone_seed, off;
	int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0)
		die(out);
	for (off = 0; off < size; off += BS) {
		size_t n = size - off < BS ? size - off : BS;

		rng_fill(&s, buf, BS);
		if (permille && rng_below(&c, 1000) < permille)
			rng_fill(&c, buf, BS);
		if (full_io(fd, buf, n, off, true) != (ssize_t)n)
			die("write");
	}
	if (hold_until) {
		printf("written\n");
		fflush(stdout);
		while (access(hold_until, F_OK))
			usleep(100000);
	}
	if (close(fd))
		die("close");
	free(buf);
	return 0;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static int cmd_bench(const char *path, uint64_t block, uint64_t count,
		     bool direct)
{
	int fd = open(path, O_RDONLY | (direct ? O_DIRECT : 0));
	uint8_t *buf = xalloc(block);
	struct stat st;
	uint64_t s = 7, i, blocks;
	double t0;

	if (fd < 0 || fstat(fd, &st) || (uint64_t)st.st_size < block)
		die(path);
	blocks = st.st_size / block;
	t0 = now_s();
	for (i = 0; i < count; i++)
		if (full_io(fd, buf, block, rng_below(&s, blocks) * block,
			    false) != (ssize_t)block)
			die("read");
	printf("scfs-check bench %s: %.1f MB/s\n", path,
	       count * block / (now_s() - t0) / 1e6);
	close(fd);
	free(buf);
	return 0;
}

static int cmd_seq(const char *path, uint64_t block)
{
	int fd = open(path, O_RDONLY);
	uint8_t *buf = xalloc(block);
	uint64_t total = 0;
	ssize_t n;
	double t0;

	if (fd < 0)
		die(path);
	t0 = now_s();
	while ((n = full_io(fd, buf, block, total, false)) > 0)
		total += n;
	if (n < 0)
		die("read");
	printf("scfs-check seq %s: %" PRIu64 " bytes, %.1f MB/s\n", path, total,
	       total / (now_s() - t0) / 1e6);
	close(fd);
	free(buf);
	return 0;
}

static uint64_t num(const char *s)
{
	char *end;
	uint64_t v = strtoull(s, &end, 0);

	if (*end == 'K' || *end == 'k')
		v <<= 10, end++;
	else if (*end == 'M' || *end == 'm')
		v <<= 20, end++;
	if (*end) {
		fprintf(stderr, "scfs-check: '%s' is not a number\n", s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	if (argc == 7 && !strcmp(argv[1], "random"))
		return cmd_random(argv[2], num(argv[3]), num(argv[4]),
				  num(argv[5]), num(argv[6]));
	if (argc == 3 && !strcmp(argv[1], "mmap"))
		return cmd_mmap(argv[2]);
	if ((argc == 5 || argc == 7) && !strcmp(argv[1], "image"))
		return cmd_image(num(argv[2]), num(argv[3]), argv[4],
				 argc == 7 ? num(argv[5]) : 0,
				 argc == 7 ? num(argv[6]) : 0, NULL);
	if (argc == 6 && !strcmp(argv[1], "hold"))
		return cmd_image(num(argv[2]), num(argv[3]), argv[4], 0, 0,
				 argv[5]);
	if ((argc == 5 || argc == 6) && !strcmp(argv[1], "bench"))
		return cmd_bench(argv[2], num(argv[3]), num(argv[4]),
				 argc == 6 && !strcmp(argv[5], "direct"));
	if (argc == 4 && !strcmp(argv[1], "seq"))
		return cmd_seq(argv[2], num(argv[3]));
	fprintf(stderr,
		"usage: scfs-check random DIR SEED OPS THREADS MAXSIZE\n"
		"       scfs-check mmap FILE\n"
		"       scfs-check image SEED SIZE OUT [CLONE_SEED PERMILLE]\n"
		"       scfs-check hold SEED SIZE OUT UNTIL\n"
		"       scfs-check bench FILE BLOCK COUNT [direct]\n"
		"       scfs-check seq FILE BLOCK\n");
	return 2;
}
