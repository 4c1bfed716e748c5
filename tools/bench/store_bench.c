// SPDX-License-Identifier: BSD-2-Clause
/*
 * dstore-bench: the dedup store on its own, without NFS: sequential write
 * of unique data, of the same data to a second file (deduplicated), the
 * same data over itself (silent), sequential and random reads, and the
 * index's size per unique block and per mapped block.
 *
 *   dstore-bench [--dir DIR] [--mib N] [--threads T]
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dstore.h"
#include "seacache/prng.h"

#define IO (1u << 20)

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what, int rc)
{
	fprintf(stderr, "dstore-bench: %s: %s\n", what, strerror(rc < 0 ? -rc : rc));
	exit(1);
}

struct job {
	struct dstore *ds;
	uint64_t ino;
	const uint8_t *img;
	uint64_t len;
	unsigned int threads, id;
	bool read;
};

/* Thread id writes (or reads) every threads-th MiB: several in flight. */
static void *job_main(void *arg)
{
	struct job *j = arg;
	uint8_t *buf = malloc(IO);
	bool eof;

	for (uint64_t off = (uint64_t)j->id * IO; off < j->len;
	     off += (uint64_t)j->threads * IO) {
		ssize_t n = j->read ?
			dstore_read(j->ds, j->ino, off, buf, IO, &eof) :
			dstore_write(j->ds, j->ino, off, j->img + off, IO, false,
				     NULL);

		if (n != IO)
			die(j->read ? "read" : "write", (int)n);
		if (j->read && memcmp(buf, j->img + off, IO))
			die("read back differs", EIO);
	}
	free(buf);
	return NULL;
}

static double run(struct job *proto, unsigned int threads)
{
	pthread_t t[64];
	struct job j[64];
	double t0 = now();

	for (unsigned int i = 0; i < threads; i++) {
		j[i] = *proto;
		j[i].threads = threads;
		j[i].id = i;
		pthread_create(&t[i], NULL, job_main, &j[i]);
	}
	for (unsigned int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	return (double)proto->len / (now() - t0) / 1e6;
}

static uint64_t mkfile(struct dstore *ds, const char *name)
{
	struct dstore_new n = { .type = DSTORE_REG, .mode = 0644 };
	struct dstore_attr a;
	int rc = dstore_create(ds, DSTORE_ROOT_INO, name, &n, &a);

	if (rc)
		die("create", rc);
	return a.ino;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "mib", required_argument, NULL, 'm' },
		{ "threads", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *dir = "/var/tmp/seacache-dstore-bench";
	unsigned int mib = 256, threads = 8;
	struct dstore_params p;
	struct dstore_stats st;
	struct dstore *ds;
	struct sc_prng r;
	struct job j = { 0 };
	char err[512], cmd[600];
	uint8_t *img, buf[4096];
	double t0, w_unique, w_dup, w_silent, rd;
	uint64_t n_rand = 20000;
	bool eof;
	int c, rc;

	while ((c = getopt_long(argc, argv, "d:m:t:h", opts, NULL)) != -1) {
		switch (c) {
		case 'd': dir = optarg; break;
		case 'm': mib = (unsigned int)atoi(optarg); break;
		case 't': threads = (unsigned int)atoi(optarg); break;
		default:
			printf("usage: dstore-bench [--dir DIR (emptied first)] [--mib N (256)] [--threads T (8)]\n");
			return c == 'h' ? 0 : 2;
		}
	}
	if (mib == 0 || threads == 0 || threads > 64) {
		fprintf(stderr, "dstore-bench: --mib > 0, --threads 1..64\n");
		return 2;
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		die("cannot empty the bench directory", EIO);
	dstore_params_default(&p);
	p.reclaim_interval_ms = 0;
	rc = dstore_open(dir, &p, &ds, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "dstore-bench: %s\n", err);
		return 1;
	}
	j.len = (uint64_t)mib << 20;
	img = malloc(j.len);
	sc_prng_seed(&r, 42);
	sc_prng_fill(&r, img, j.len);
	j.ds = ds;
	j.img = img;

	j.ino = mkfile(ds, "unique");
	w_unique = run(&j, threads);
	t0 = now();
	dstore_sync(ds);
	printf("write unique      %8.1f MB/s  (%u threads, 1 MiB writes; then a sync of %.1f ms)\n",
	       w_unique, threads, (now() - t0) * 1e3);
	j.ino = mkfile(ds, "clone");
	w_dup = run(&j, threads);
	printf("write stored data %8.1f MB/s  (a clone: no data I/O)\n", w_dup);
	w_silent = run(&j, threads);
	printf("write same again  %8.1f MB/s  (silent)\n", w_silent);
	j.read = true;
	rd = run(&j, threads);
	printf("read sequential   %8.1f MB/s\n", rd);
	t0 = now();
	for (uint64_t i = 0; i < n_rand; i++) {
		uint64_t blk = sc_prng_below(&r, (uint32_t)(j.len / 4096));

		if (dstore_read(ds, j.ino, blk * 4096, buf, 4096, &eof) != 4096 ||
		    memcmp(buf, img + blk * 4096, 4096))
			die("random read", EIO);
	}
	printf("read random 4 KiB %8.0f IOPS  (one thread)\n",
	       (double)n_rand / (now() - t0));
	rc = dstore_stats(ds, &st);
	if (rc)
		die("stats", rc);
	printf("index             %.1f bytes per unique block (chunk index), "
	       "%.1f per mapped block (block map + CSI-Map), %llu bytes in all\n",
	       (double)st.index_chunk_bytes / (double)st.chunks,
	       (double)st.index_map_bytes / (double)st.mapped_blocks,
	       (unsigned long long)st.index_bytes);
	dstore_close(ds);
	free(img);
	return 0;
}
