// SPDX-License-Identifier: BSD-2-Clause
/*
 * seacache-dedupbox: the on-wire de-duplication box of the paper's §II, as
 * a pair of processes (README.md).  Options, and --bench: the codec's
 * speed on NFS-shaped traffic, in process.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <seacache/prng.h>

#include "box.h"
#include "codec.h"

static void usage(FILE *f)
{
	fprintf(f,
"usage: seacache-dedupbox --side host --link ADDR --forward LISTEN=TARGET... [options]\n"
"       seacache-dedupbox --side server --link ADDR --target TARGET... [options]\n"
"       seacache-dedupbox --bench [--bench-mib N]\n"
"\n"
"An on-wire de-duplication box.  The host box listens where the stock NFS\n"
"client connects; the server box connects to the NFS server; between them\n"
"one TCP link on which blocks the other box holds travel as SHA-256\n"
"fingerprints.  Reads are deduplicated (Dedup-Read); --rw on the host box\n"
"deduplicates writes too (Dedup-RW).\n"
"\n"
"  --side host|server     which end this box is\n"
"  --link ADDR            host: the server box's link address; server: where\n"
"                         to listen for host boxes (ADDR: HOST:PORT, or PORT\n"
"                         for 127.0.0.1)\n"
"  --forward LISTEN=TARGET  host (repeatable, up to %d): clients connecting to\n"
"                         LISTEN reach TARGET through the server box (e.g.\n"
"                         NFS and MOUNT each a pair)\n"
"  --target TARGET        server (repeatable): a TARGET host boxes may reach;\n"
"                         any other is refused\n"
"  --cache-mib N          blocks this box keeps for its peer, per link\n"
"                         (default 256; the peer's index follows it)\n"
"  --rw                   host: deduplicate writes too (Dedup-RW)\n"
"  --json                 statistics as one JSON line\n"
"  --quiet                no log line per connection\n"
"  --bench                measure the codec in process and exit\n"
"  --bench-mib N          data per bench pass (default 256)\n"
"  --help                 this text\n"
"\n"
"Statistics (bytes on the link each way, per block kind) go to stdout on\n"
"SIGUSR1 and at exit (SIGTERM, SIGINT).  Logs go to stderr.\n",
		BOX_FWD_MAX);
}

static int parse_u32(const char *s, uint32_t min, uint32_t max, uint32_t *v)
{
	char *end;
	unsigned long long n;

	errno = 0;
	n = strtoull(s, &end, 10);
	if (errno || end == s || *end || n < min || n > max)
		return -1;
	*v = (uint32_t)n;
	return 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- --bench ------------------------------------------------------------ */

static int bench_data(void *ctx, uint32_t ch, const void *data, size_t len)
{
	static uint8_t sink[65536];

	/* where the box copies what it decodes: the connection's buffer */
	(void)ch;
	memcpy(sink, data, len);
	*(uint64_t *)ctx += len;
	return 0;
}

static int bench_ctl(void *ctx, uint32_t ch)
{
	(void)ctx;
	(void)ch;
	return 0;
}

static int bench_credit(void *ctx, uint32_t ch, uint32_t n)
{
	(void)ctx;
	(void)ch;
	(void)n;
	return 0;
}

static int bench_open(void *ctx, uint32_t ch, const char *t)
{
	(void)ctx;
	(void)ch;
	(void)t;
	return 0;
}

/*
 * NFSv3 READ replies of 64 KiB (record mark, 116 bytes of RPC and READ3res
 * header, the data) for `mib` MiB of file data from seed, into buf.
 */
static size_t make_replies(uint8_t *buf, uint32_t mib, uint64_t seed, uint32_t xid)
{
	const uint32_t data = 65536, head = 116;
	struct sc_prng g;
	size_t off = 0;

	sc_prng_seed(&g, seed);
	for (uint32_t r = 0; r < mib * 16; r++, xid++) {
		uint32_t frag = head + data;
		uint8_t *p = buf + off;

		memset(p, 0, 4 + head);
		p[0] = 0x80 | (uint8_t)(frag >> 24);
		p[1] = (uint8_t)(frag >> 16);
		p[2] = (uint8_t)(frag >> 8);
		p[3] = (uint8_t)frag;
		memcpy(p + 4, &xid, 4);
		p[4 + head - 4] = (uint8_t)(data >> 24);
		p[4 + head - 3] = (uint8_t)(data >> 16);
		p[4 + head - 2] = (uint8_t)(data >> 8);
		p[4 + head - 1] = (uint8_t)data;
		sc_prng_fill(&g, p + 4 + head, data);
		off += 4 + head + data;
	}
	return off;
}

/*
 * Encode in at most 64 KiB reads, as the box does, decoding each piece's
 * frames at once; encode and decode timed apart.
 */
static int bench_pass(const char *what, struct dbx_encoder *e,
		      struct dbx_decoder *d, const uint8_t *in, size_t len)
{
	struct dbx_chunker ck;
	struct dbx_buf out = { 0 };
	uint64_t link0 = e->st.link_bytes;
	double tenc = 0, tdec = 0, t0, t1;
	int rc = 0;

	dbx_chunker_init(&ck);
	for (size_t off = 0; off < len && !rc; off += 65536) {
		size_t n = len - off < 65536 ? len - off : 65536;
		long used;

		t0 = now_s();
		rc = dbx_encode(e, &ck, 1, in + off, n, &out);
		t1 = now_s();
		used = dbx_decode(d, out.p + out.off, dbx_buf_pending(&out));
		tenc += t1 - t0;
		tdec += now_s() - t1;
		if (used < 0)
			rc = -1;
		else
			dbx_buf_consume(&out, (size_t)used);
	}
	if (!rc && dbx_buf_pending(&out))
		rc = -1;
	if (!rc)
		printf("%-34s %6.0f MB/s encode %6.0f MB/s decode, link %6.2f%% of the stream\n",
		       what, len / 1e6 / tenc, len / 1e6 / tdec,
		       100.0 * (double)(e->st.link_bytes - link0) / (double)len);
	dbx_buf_free(&out);
	return rc;
}

static int bench(uint32_t mib)
{
	static const struct dbx_decoder_ops ops = {
		.open = bench_open, .close = bench_ctl, .data = bench_data,
		.credit = bench_credit,
	};
	size_t cap = (size_t)mib * 16 * (65536 + 120);
	uint8_t *a = malloc(cap), *c = malloc(cap);
	uint32_t slots = mib * 256 * 2;
	struct dbx_encoder e, lit;
	struct dbx_decoder d;
	uint64_t sum = 0;
	size_t alen, clen;
	int rc = 1;

	if (!a || !c || dbx_encoder_init(&e, true, slots) ||
	    dbx_encoder_init(&lit, false, 0) ||
	    dbx_decoder_init(&d, slots, &ops, &sum)) {
		fprintf(stderr, "seacache-dedupbox: out of memory for the bench\n");
		goto out;
	}
	alen = make_replies(a, mib, 1, 1);
	clen = make_replies(c, mib, 2, 1);
	printf("dedup box codec, one core, NFSv3 READ replies of 64 KiB, %u MiB each pass\n",
	       mib);
	if (bench_pass("unique data", &e, &d, a, alen) ||
	    bench_pass("the same data again (new XIDs)", &e, &d, a, alen) ||
	    bench_pass("literal only (Dedup-Read's calls)", &lit, &d, c, clen)) {
		fprintf(stderr, "seacache-dedupbox: bench failed\n");
		goto out;
	}
	rc = 0;
out:
	dbx_encoder_destroy(&e);
	dbx_encoder_destroy(&lit);
	dbx_decoder_destroy(&d);
	free(a);
	free(c);
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "side", required_argument, NULL, 's' },
		{ "link", required_argument, NULL, 'l' },
		{ "forward", required_argument, NULL, 'f' },
		{ "target", required_argument, NULL, 't' },
		{ "cache-mib", required_argument, NULL, 'c' },
		{ "rw", no_argument, NULL, 'w' },
		{ "json", no_argument, NULL, 'j' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "bench", no_argument, NULL, 'b' },
		{ "bench-mib", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct box_config cfg = { .side = SIDE_HOST };
	const char *side = NULL;
	uint32_t cache_mib = 256, bench_mib = 256;
	unsigned int nfwd = 0, ntarget = 0;
	bool do_bench = false;
	char h[256], p[16];
	int o;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		char *eq;

		switch (o) {
		case 's':
			side = optarg;
			break;
		case 'l':
			cfg.link = optarg;
			break;
		case 'f':
			eq = strchr(optarg, '=');
			if (!eq || nfwd == BOX_FWD_MAX) {
				fprintf(stderr, "seacache-dedupbox: --forward %s: want LISTEN=TARGET (at most %d)\n",
					optarg, BOX_FWD_MAX);
				return 2;
			}
			*eq = '\0';
			cfg.fwd_listen[nfwd] = optarg;
			cfg.fwd_target[nfwd++] = eq + 1;
			break;
		case 't':
			if (ntarget == BOX_FWD_MAX) {
				fprintf(stderr, "seacache-dedupbox: at most %d --target\n",
					BOX_FWD_MAX);
				return 2;
			}
			cfg.fwd_target[ntarget++] = optarg;
			break;
		case 'c':
			if (parse_u32(optarg, 1, DBX_SLOTS_MAX / 256, &cache_mib)) {
				fprintf(stderr, "seacache-dedupbox: --cache-mib %s: want 1..%u\n",
					optarg, DBX_SLOTS_MAX / 256);
				return 2;
			}
			break;
		case 'w':
			cfg.rw = true;
			break;
		case 'j':
			cfg.json = true;
			break;
		case 'q':
			cfg.quiet = true;
			break;
		case 'b':
			do_bench = true;
			break;
		case 'm':
			if (parse_u32(optarg, 1, 4096, &bench_mib)) {
				fprintf(stderr, "seacache-dedupbox: --bench-mib %s: want 1..4096\n",
					optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "seacache-dedupbox: unexpected argument %s\n", argv[optind]);
		return 2;
	}
	if (do_bench)
		return bench(bench_mib);
	if (!side || (strcmp(side, "host") && strcmp(side, "server"))) {
		fprintf(stderr, "seacache-dedupbox: --side host or --side server is required (--help)\n");
		return 2;
	}
	cfg.side = strcmp(side, "host") ? SIDE_SERVER : SIDE_HOST;
	if (!cfg.link) {
		fprintf(stderr, "seacache-dedupbox: --link ADDR is required\n");
		return 2;
	}
	if (cfg.side == SIDE_HOST && (!nfwd || ntarget)) {
		fprintf(stderr, "seacache-dedupbox: a host box takes --forward LISTEN=TARGET (at least one) and no --target\n");
		return 2;
	}
	if (cfg.side == SIDE_SERVER && (!ntarget || nfwd || cfg.rw)) {
		fprintf(stderr, "seacache-dedupbox: a server box takes --target TARGET (at least one), no --forward and no --rw (the host box decides)\n");
		return 2;
	}
	cfg.nfwd = cfg.side == SIDE_HOST ? nfwd : ntarget;
	for (unsigned int i = 0; i < cfg.nfwd; i++) {
		const char *bad = NULL;

		if (cfg.side == SIDE_HOST &&
		    box_split_addr(cfg.fwd_listen[i], h, sizeof(h), p, sizeof(p)))
			bad = cfg.fwd_listen[i];
		else if (box_split_addr(cfg.fwd_target[i], h, sizeof(h), p, sizeof(p)) ||
			 strlen(cfg.fwd_target[i]) > 255)
			bad = cfg.fwd_target[i];
		if (bad) {
			fprintf(stderr, "seacache-dedupbox: bad address %s: want HOST:PORT or PORT\n",
				bad);
			return 2;
		}
	}
	if (box_split_addr(cfg.link, h, sizeof(h), p, sizeof(p))) {
		fprintf(stderr, "seacache-dedupbox: bad --link %s: want HOST:PORT or PORT\n",
			cfg.link);
		return 2;
	}
	cfg.store_slots = cache_mib * (uint32_t)(1048576 / DBX_BLOCK);
	return box_run(&cfg) ? 1 : 0;
}
