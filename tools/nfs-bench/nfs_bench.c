// SPDX-License-Identifier: BSD-2-Clause
/*
 * nfs-bench: one NFS workload against a server, through libnfs's async API
 * (several requests in flight on one connection):
 *
 *   seq-write  SIZE bytes of unique data to a new file, IO-SIZE writes,
 *              DEPTH in flight, then COMMIT (time includes the COMMIT)
 *   rewrite    the same data to a second file (data the server already has)
 *   seq-read   the first file back, IO-SIZE reads, DEPTH in flight
 *   rand-read  COUNT random 4 KiB reads of the first file, RDEPTH in flight
 *
 * --reads-only runs the last two on the file an earlier --keep run left
 * (a cold read: the server restarted, its page cache dropped).
 *
 * Data: 4 KiB blocks, each from a PRNG seeded by (seed, block number); the
 * first 16 bytes of each block name it, and reads check them.
 * Progress goes to stderr, results to stdout (a table, or --json).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <nfsc/libnfs.h>

#include <seacache/prng.h>

#define BLK 4096u
#define MAGIC 0x6e66736265e7c400ull

static struct {
	const char *url;
	uint64_t size;
	size_t io;
	int depth;
	long rand_reads;
	int rand_depth;
	uint64_t seed;
	bool json, keep, quiet, reads_only;
	const char *prefix;
} opt = {
	.size = 256ull << 20,
	.io = 1u << 20,
	.depth = 8,
	.rand_reads = 20000,
	.rand_depth = 16,
	.seed = 1,
	.prefix = "nfs-bench",
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: nfs-bench --url nfs://SERVER/EXPORT[?nfsport=N&mountport=N] [options]\n"
		"  --size BYTES        file size (K, M, G suffixes; default 256M)\n"
		"  --io-size BYTES     sequential request size (default 1M)\n"
		"  --depth N           sequential requests in flight (default 8)\n"
		"  --rand-reads N      random 4 KiB reads (default 20000; 0: none)\n"
		"  --rand-depth N      random reads in flight (default 16)\n"
		"  --seed N            data and offsets (default 1)\n"
		"  --prefix NAME       files NAME-a and NAME-b in the export's root\n"
		"  --keep              leave the files (default: removed at the end)\n"
		"  --reads-only        seq-read and rand-read only, of the file a --keep run\n"
		"                      with the same --prefix, --size and --seed left\n"
		"  --json              one JSON object on stdout instead of the table\n"
		"  --quiet             no progress on stderr\n"
		"phases: seq-write (unique data, then COMMIT), rewrite (the same data to a\n"
		"second file, then COMMIT), seq-read, rand-read.  MB = 10^6 bytes.\n");
}

static uint64_t parse_size(const char *s)
{
	char *end;
	uint64_t v = strtoull(s, &end, 0);

	switch (*end) {
	case 'k': case 'K': v <<= 10; break;
	case 'm': case 'M': v <<= 20; break;
	case 'g': case 'G': v <<= 30; break;
	case '\0': break;
	default:
		fprintf(stderr, "nfs-bench: bad size '%s'\n", s);
		exit(2);
	}
	return v;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* --- data ------------------------------------------------------------------ */

static void block_head(uint64_t blk, uint64_t h[2])
{
	h[0] = MAGIC ^ blk;
	h[1] = sc_mix64(opt.seed ^ (blk * 0xd6e8feb86659fd93ull));
}

/* A checkable head, then bytes unique to (seed, block). */
static void fill_block(unsigned char *p, uint64_t blk)
{
	struct sc_prng r;
	uint64_t h[2];

	block_head(blk, h);
	memcpy(p, h, 16);
	sc_prng_seed(&r, opt.seed * 0x9e3779b97f4a7c15ull ^ blk);
	sc_prng_fill(&r, p + 16, BLK - 16);
}

static void fill(unsigned char *p, uint64_t off, size_t len)
{
	for (size_t o = 0; o < len; o += BLK)
		fill_block(p + o, (off + o) / BLK);
}

/* 0 if every block head in P (file offset OFF, LEN bytes) is right */
static int check_heads(const unsigned char *p, uint64_t off, size_t len, uint64_t *bad)
{
	for (size_t o = 0; o < len; o += BLK) {
		uint64_t h[2];

		block_head((off + o) / BLK, h);
		if (memcmp(p + o, h, len - o < 16 ? len - o : 16)) {
			*bad = off + o;
			return -1;
		}
	}
	return 0;
}

/* --- the async engine -------------------------------------------------------- */

enum kind { WRITE, READ, RAND };

struct run {
	struct nfs_context *nfs;
	struct nfsfh *fh;
	enum kind kind;
	size_t io;
	int depth;
	uint64_t next, end;	/* sequential: next offset, end; rand: ops issued, ops */
	uint64_t done_bytes, done_ops;
	int inflight;
	int error;
	const char *what;
	unsigned char **bufs;	/* WRITE: one buffer per slot */
	int *free_slots, nfree;
	struct sc_prng rng;
	double t0, last_progress;
};

struct req {
	struct run *run;
	uint64_t off;
	size_t len;
	int slot;
};

static void progress(struct run *r, bool last)
{
	double t = now();

	if (opt.quiet || (!last && (t - r->last_progress < 0.5 || !isatty(2))))
		return;
	r->last_progress = t;
	if (r->kind == RAND)
		fprintf(stderr, "\rnfs-bench: %-9s %8" PRIu64 " / %" PRIu64 " reads", r->what,
			r->done_ops, r->end);
	else
		fprintf(stderr, "\rnfs-bench: %-9s %8.1f / %.1f MiB", r->what,
			r->done_bytes / 1048576.0, r->end / 1048576.0);
	if (last)
		fprintf(stderr, "  %.2f s\n", t - r->t0);
}

static void issue(struct run *r);

static void done_cb(int status, struct nfs_context *nfs, void *data, void *priv)
{
	struct req *q = priv;
	struct run *r = q->run;
	uint64_t bad;

	(void)nfs;
	r->inflight--;
	if (status < 0) {
		fprintf(stderr, "\nnfs-bench: %s at %" PRIu64 ": %s\n", r->what, q->off,
			(char *)data);
		r->error = status;
	} else if ((size_t)status != q->len) {
		fprintf(stderr, "\nnfs-bench: %s at %" PRIu64 ": %d bytes, want %zu\n", r->what,
			q->off, status, q->len);
		r->error = -EIO;
	} else {
		if (r->kind != WRITE && check_heads(data, q->off, q->len, &bad)) {
			fprintf(stderr, "\nnfs-bench: %s: wrong data in the block at %" PRIu64 "\n",
				r->what, bad);
			r->error = -EIO;
		}
		r->done_bytes += q->len;
		r->done_ops++;
	}
	if (q->slot >= 0)
		r->free_slots[r->nfree++] = q->slot;
	free(q);
	if (!r->error)
		issue(r);
}

static void issue(struct run *r)
{
	while (!r->error && r->inflight < r->depth && r->next < r->end) {
		struct req *q = calloc(1, sizeof(*q));
		int rc;

		if (!q) {
			r->error = -ENOMEM;
			return;
		}
		q->run = r;
		q->slot = -1;
		if (r->kind == RAND) {
			uint64_t nblk = opt.size / BLK;

			q->off = sc_prng_next(&r->rng) % nblk * BLK;
			q->len = BLK;
			r->next++;
			rc = nfs_pread_async(r->nfs, r->fh, q->off, q->len, done_cb, q);
		} else {
			q->off = r->next;
			q->len = r->end - r->next < r->io ? (size_t)(r->end - r->next) : r->io;
			r->next += q->len;
			if (r->kind == WRITE) {
				q->slot = r->free_slots[--r->nfree];
				fill(r->bufs[q->slot], q->off, q->len);
				rc = nfs_pwrite_async(r->nfs, r->fh, q->off, q->len,
						      r->bufs[q->slot], done_cb, q);
			} else {
				rc = nfs_pread_async(r->nfs, r->fh, q->off, q->len, done_cb, q);
			}
		}
		if (rc < 0) {
			fprintf(stderr, "\nnfs-bench: %s: cannot queue: %s\n", r->what,
				nfs_get_error(r->nfs));
			if (q->slot >= 0)
				r->free_slots[r->nfree++] = q->slot;
			free(q);
			r->error = -EIO;
			return;
		}
		r->inflight++;
	}
}

static int pump(struct run *r)
{
	while (r->inflight > 0) {
		struct pollfd pfd = { nfs_get_fd(r->nfs), (short)nfs_which_events(r->nfs), 0 };

		if (poll(&pfd, 1, 1000) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (nfs_service(r->nfs, pfd.revents) < 0) {
			fprintf(stderr, "\nnfs-bench: connection lost: %s\n", nfs_get_error(r->nfs));
			return -EIO;
		}
		progress(r, false);
	}
	return r->error;
}

struct result {
	double seconds;
	uint64_t bytes, ops;
};

static int run_phase(struct nfs_context *nfs, struct nfsfh *fh, enum kind kind,
		     const char *what, struct result *res)
{
	struct run r = { 0 };
	int rc;

	r.nfs = nfs;
	r.fh = fh;
	r.kind = kind;
	r.what = what;
	r.io = opt.io;
	r.depth = kind == RAND ? opt.rand_depth : opt.depth;
	r.end = kind == RAND ? (uint64_t)opt.rand_reads : opt.size;
	sc_prng_seed(&r.rng, opt.seed * 0x2545f4914f6cdd1dull + 17);
	if (kind == WRITE) {
		r.bufs = calloc((size_t)r.depth, sizeof(*r.bufs));
		r.free_slots = calloc((size_t)r.depth, sizeof(int));
		if (!r.bufs || !r.free_slots)
			return -ENOMEM;
		for (int i = 0; i < r.depth; i++) {
			r.bufs[i] = aligned_alloc(BLK, (opt.io + BLK - 1) / BLK * BLK);
			if (!r.bufs[i])
				return -ENOMEM;
			r.free_slots[r.nfree++] = i;
		}
	}
	r.t0 = r.last_progress = now();
	issue(&r);
	rc = pump(&r);
	if (rc == 0 && kind == WRITE) {
		rc = nfs_fsync(nfs, fh);
		if (rc < 0)
			fprintf(stderr, "\nnfs-bench: %s: COMMIT: %s\n", what, nfs_get_error(nfs));
	}
	res->seconds = now() - r.t0;
	res->bytes = r.done_bytes;
	res->ops = r.done_ops;
	progress(&r, true);
	if (r.bufs) {
		for (int i = 0; i < r.depth; i++)
			free(r.bufs[i]);
		free(r.bufs);
		free(r.free_slots);
	}
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "url", required_argument, NULL, 'u' },
		{ "size", required_argument, NULL, 's' },
		{ "io-size", required_argument, NULL, 'i' },
		{ "depth", required_argument, NULL, 'd' },
		{ "rand-reads", required_argument, NULL, 'r' },
		{ "rand-depth", required_argument, NULL, 'R' },
		{ "seed", required_argument, NULL, 'S' },
		{ "prefix", required_argument, NULL, 'p' },
		{ "keep", no_argument, NULL, 'k' },
		{ "reads-only", no_argument, NULL, 'O' },
		{ "json", no_argument, NULL, 'j' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct result res[4] = { 0 };
	static const char *const names[4] = { "seq-write", "rewrite", "seq-read", "rand-read" };
	struct nfs_context *nfs;
	struct nfs_url *u;
	struct nfsfh *fa, *fb = NULL;
	bool ran[4] = { false };
	char pa[512], pb[512];
	int c, rc = 0;

	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'u': opt.url = optarg; break;
		case 's': opt.size = parse_size(optarg); break;
		case 'i': opt.io = (size_t)parse_size(optarg); break;
		case 'd': opt.depth = atoi(optarg); break;
		case 'r': opt.rand_reads = atol(optarg); break;
		case 'R': opt.rand_depth = atoi(optarg); break;
		case 'S': opt.seed = strtoull(optarg, NULL, 0); break;
		case 'p': opt.prefix = optarg; break;
		case 'k': opt.keep = true; break;
		case 'O': opt.reads_only = true; break;
		case 'j': opt.json = true; break;
		case 'q': opt.quiet = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!opt.url || optind != argc || opt.depth < 1 || opt.rand_depth < 1 ||
	    opt.io < BLK || opt.io % BLK || opt.size < BLK || opt.size % BLK) {
		if (opt.url)
			fprintf(stderr, "nfs-bench: sizes must be multiples of 4 KiB, depths >= 1\n");
		usage(stderr);
		return 2;
	}

	nfs = nfs_init_context();
	if (!nfs)
		return 1;
	u = nfs_parse_url_dir(nfs, opt.url);
	if (!u) {
		fprintf(stderr, "nfs-bench: bad URL %s: %s\n", opt.url, nfs_get_error(nfs));
		return 2;
	}
	if (nfs_mount(nfs, u->server, u->path) != 0) {
		fprintf(stderr, "nfs-bench: mount %s: %s\n", opt.url, nfs_get_error(nfs));
		return 1;
	}
	if (opt.io > nfs_get_writemax(nfs) || opt.io > nfs_get_readmax(nfs)) {
		fprintf(stderr, "nfs-bench: --io-size %zu is above the server's maximum (%" PRIu64
			" write, %" PRIu64 " read)\n",
			opt.io, nfs_get_writemax(nfs), nfs_get_readmax(nfs));
		return 2;
	}
	snprintf(pa, sizeof(pa), "/%s-a", opt.prefix);
	snprintf(pb, sizeof(pb), "/%s-b", opt.prefix);
	if (opt.reads_only ? nfs_open(nfs, pa, O_RDONLY, &fa) != 0 :
	    nfs_create(nfs, pa, O_CREAT | O_TRUNC | O_RDWR, 0644, &fa) != 0 ||
	    nfs_create(nfs, pb, O_CREAT | O_TRUNC | O_RDWR, 0644, &fb) != 0) {
		fprintf(stderr, "nfs-bench: %s: %s\n", opt.reads_only ? "open" : "create",
			nfs_get_error(nfs));
		return 1;
	}
	if (!opt.quiet)
		fprintf(stderr, "nfs-bench: %s: %.1f MiB, %zu KiB requests x %d, %ld random 4 KiB reads x %d\n",
			opt.url, opt.size / 1048576.0, opt.io / 1024, opt.depth, opt.rand_reads,
			opt.rand_depth);
	ran[0] = ran[1] = !opt.reads_only;
	ran[2] = true;
	ran[3] = opt.rand_reads > 0;
	for (int i = 0; i < 4 && !rc; i++)
		if (ran[i])
			rc = run_phase(nfs, i == 1 ? fb : fa, i < 2 ? WRITE : i == 2 ? READ : RAND,
				       names[i], &res[i]);
	nfs_close(nfs, fa);
	if (fb)
		nfs_close(nfs, fb);
	if (!opt.keep) {
		nfs_unlink(nfs, pa);
		nfs_unlink(nfs, pb);
	}
	nfs_destroy_url(u);
	nfs_destroy_context(nfs);
	if (rc) {
		fprintf(stderr, "nfs-bench: failed: %s\n", strerror(-rc));
		return 1;
	}

	if (opt.json) {
		printf("{\"tool\": \"nfs-bench\", \"url\": \"%s\", \"size_bytes\": %" PRIu64
		       ", \"io_bytes\": %zu, \"depth\": %d, \"rand_reads\": %ld, \"rand_depth\": %d, "
		       "\"seed\": %" PRIu64,
		       opt.url, opt.size, opt.io, opt.depth, opt.rand_reads, opt.rand_depth, opt.seed);
		for (int i = 0; i < 4; i++) {
			char key[16];

			if (!ran[i])
				continue;
			snprintf(key, sizeof(key), "%s", names[i]);
			for (char *k = strchr(key, '-'); k; k = strchr(k, '-'))
				*k = '_';
			if (i == 3)
				printf(",\n \"%s_iops\": %.0f", key, res[i].ops / res[i].seconds);
			else
				printf(",\n \"%s_mb_s\": %.1f", key,
				       res[i].bytes / 1e6 / res[i].seconds);
			printf(", \"%s_s\": %.3f", key, res[i].seconds);
		}
		printf("}\n");
	} else {
		printf("%-10s %12s %9s %10s\n", "phase", "bytes", "seconds", "result");
		for (int i = 0; i < 4; i++) {
			if (!ran[i])
				continue;
			if (i == 3)
				printf("%-10s %12" PRIu64 " %9.3f %7.0f IOPS\n", names[i],
				       res[i].bytes, res[i].seconds, res[i].ops / res[i].seconds);
			else
				printf("%-10s %12" PRIu64 " %9.3f %7.1f MB/s\n", names[i],
				       res[i].bytes, res[i].seconds, res[i].bytes / 1e6 / res[i].seconds);
		}
	}
	return 0;
}
