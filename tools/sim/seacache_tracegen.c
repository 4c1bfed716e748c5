/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * seacache-tracegen: write a seeded synthetic VDI workload (tracegen.h) in
 * the SeaCache workload format, or read any trace with seacache-sim's
 * readers and report what they made of it and how fast.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "trace.h"
#include "tracegen.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: seacache-tracegen [OPTIONS]            write a synthetic VDI workload\n"
		"       seacache-tracegen --read TRACE [--format F] [--block-size B]\n"
		"       seacache-tracegen --convert TRACE -o FILE [--format F] [--block-size B]\n"
		"\n"
		"Writes a SeaCache workload (tools/sim/WORKLOAD-FORMAT.md): VMs cloned from a\n"
		"golden image, a boot storm (every VM reads the same blocks in one order) and\n"
		"a scan storm (every VM reads its whole image), with some writes.  The same\n"
		"options and seed give the same bytes.\n"
		"\n"
		"  -o, --output FILE     write here (default: standard output)\n"
		"  -s, --seed N          random seed (1)\n"
		"  -v, --vms N           VMs, each with its own clone (image N-1 for VM N-1) (8)\n"
		"  -n, --blocks N        golden image size in blocks (16384)\n"
		"  -b, --block-size B    block size in bytes, 4096..65536, k suffix allowed (4096)\n"
		"  -S, --shared F        fraction of blocks the same in every clone, 0..1 (0.9)\n"
		"      --boot-blocks N   blocks every VM reads in the boot storm; 0: no boot;\n"
		"                        at most --blocks (4096)\n"
		"      --no-scan         leave the scan storm out\n"
		"  -w, --writes F        probability that a read is followed by a write (0.02)\n"
		"  -m, --max-req N       blocks a request, at most, 1..1024 (8)\n"
		"      --fp-bytes N      fingerprint bytes, 8..32 (16)\n"
		"      --gap-us N        microseconds between one VM's requests (100)\n"
		"\n"
		"      --zipf ALPHA      instead: a cache benchmark trace, single-block reads of\n"
		"                        objects of Zipf(ALPHA) popularity, as MSR CSV\n"
		"      --objects N       with --zipf: objects (1000000)\n"
		"      --requests N      with --zipf: requests (8000000)\n"
		"\n"
		"  -r, --read TRACE      read TRACE (plain, gzip or zstd; - for stdin), print its\n"
		"                        statistics, its malformed lines and requests/s\n"
		"  -c, --convert TRACE   write TRACE (any format) as the project's binary trace\n"
		"                        (trace.h: block ids, no text; seacache-sim maps it)\n"
		"  -f, --format F        with --read, --convert: auto, fiu, fiu-pid, msr,\n"
		"                        seacache (auto)\n"
		"                        (--block-size: the blocks requests are mapped onto)\n"
		"  -h, --help            this text\n");
}

static bool parse_num(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (end != s && (*end == 'k' || *end == 'K') && end[1] == '\0') {
		if (v > max / 1024)
			return false;
		v *= 1024;
		end++;
	}
	if (errno || end == s || *end || v > max || *s == '-')
		return false;
	*out = v;
	return true;
}

static bool parse_real(const char *s, double max, double *out)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || *end || !(v >= 0 && v <= max))
		return false;
	*out = v;
	return true;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int read_trace(const char *path, const char *format, uint32_t bs)
{
	char err[512];
	struct sim_trace *t = sim_trace_open(path, format, bs, err, sizeof(err));
	struct sim_req req;
	uint64_t blocks = 0, sum = 0;
	double t0, secs;
	int rc;

	if (!t) {
		fprintf(stderr, "seacache-tracegen: %s\n", err);
		return 1;
	}
	t0 = now();
	while ((rc = sim_trace_next(t, &req)) == 1) {
		blocks += req.nblocks;
		/* touch what a simulator would, so the loop is not optimized away */
		sum += req.lbn + req.vm + (req.fp_len ? req.fp[0] : 0);
	}
	secs = now() - t0;
	sim_trace_report(t, stdout);
	printf("trace %s: %llu blocks, %.3f s, %.2f M requests/s, %.1f MB/s of input (check %llu)\n",
	       path, (unsigned long long)blocks, secs,
	       (double)sim_trace_stats(t)->requests / secs / 1e6,
	       (double)sim_trace_stats(t)->in_bytes / secs / 1e6,
	       (unsigned long long)sum % 1000);
	if (rc < 0)
		fprintf(stderr, "seacache-tracegen: %s\n", sim_trace_error(t));
	sim_trace_close(t);
	return rc < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
	enum { OPT_BOOT = 256, OPT_NOSCAN, OPT_FP, OPT_GAP, OPT_ZIPF,
	       OPT_OBJECTS, OPT_REQUESTS };
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "seed", required_argument, NULL, 's' },
		{ "vms", required_argument, NULL, 'v' },
		{ "blocks", required_argument, NULL, 'n' },
		{ "block-size", required_argument, NULL, 'b' },
		{ "shared", required_argument, NULL, 'S' },
		{ "boot-blocks", required_argument, NULL, OPT_BOOT },
		{ "no-scan", no_argument, NULL, OPT_NOSCAN },
		{ "writes", required_argument, NULL, 'w' },
		{ "max-req", required_argument, NULL, 'm' },
		{ "fp-bytes", required_argument, NULL, OPT_FP },
		{ "gap-us", required_argument, NULL, OPT_GAP },
		{ "zipf", required_argument, NULL, OPT_ZIPF },
		{ "objects", required_argument, NULL, OPT_OBJECTS },
		{ "requests", required_argument, NULL, OPT_REQUESTS },
		{ "read", required_argument, NULL, 'r' },
		{ "convert", required_argument, NULL, 'c' },
		{ "format", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct sim_gen_params p;
	struct sim_zipf_params zp = { .objects = 1000000, .requests = 8000000 };
	bool zipf = false;
	struct sim_gen_stats st;
	const char *output = NULL, *readpath = NULL, *format = NULL;
	const char *convert = NULL;
	bool bs_given = false;
	char err[512] = "";
	uint64_t v;
	FILE *out;
	int c;

	sim_gen_defaults(&p);
	while ((c = getopt_long(argc, argv, "o:s:v:n:b:S:w:m:r:c:f:h", opts, NULL)) != -1) {
		bool ok = true;

		switch (c) {
		case 'o': output = optarg; break;
		case 's': ok = parse_num(optarg, UINT64_MAX, &p.seed); break;
		case 'v': ok = parse_num(optarg, 1u << 24, &v) && v; p.vms = (uint32_t)v; break;
		case 'n': ok = parse_num(optarg, UINT32_MAX, &v) && v; p.blocks = (uint32_t)v; break;
		case 'b': ok = parse_num(optarg, 65536, &v); p.block_size = (uint32_t)v; bs_given = true; break;
		case 'S': ok = parse_real(optarg, 1, &p.shared); break;
		case OPT_BOOT: ok = parse_num(optarg, UINT32_MAX, &v); p.boot_blocks = (uint32_t)v; break;
		case OPT_NOSCAN: p.scan = false; break;
		case 'w': ok = parse_real(optarg, 1, &p.writes); break;
		case 'm': ok = parse_num(optarg, 1024, &v) && v; p.max_req = (uint32_t)v; break;
		case OPT_FP: ok = parse_num(optarg, 32, &v); p.fp_bytes = (uint32_t)v; break;
		case OPT_GAP: ok = parse_num(optarg, UINT32_MAX, &v); p.gap_us = (uint32_t)v; break;
		case OPT_ZIPF: ok = parse_real(optarg, 10, &zp.alpha); zipf = true; break;
		case OPT_OBJECTS: ok = parse_num(optarg, UINT32_MAX, &v) && v; zp.objects = (uint32_t)v; break;
		case OPT_REQUESTS: ok = parse_num(optarg, UINT64_MAX, &zp.requests); break;
		case 'r': readpath = optarg; break;
		case 'c': convert = optarg; break;
		case 'f': format = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
		if (!ok) {
			fprintf(stderr, "seacache-tracegen: bad value '%s' (see --help)\n",
				optarg);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	if (readpath)
		return read_trace(readpath, format, bs_given ? p.block_size : 0);
	if (convert) {
		if (!output) {
			fprintf(stderr, "seacache-tracegen: --convert needs -o FILE\n");
			return 2;
		}
		if (sim_trace_convert(convert, format, bs_given ? p.block_size : 0,
				      output, err, sizeof(err))) {
			fprintf(stderr, "seacache-tracegen: %s\n", err);
			return 1;
		}
		return 0;
	}
	if (p.boot_blocks > p.blocks)
		p.boot_blocks = p.blocks;
	out = output ? fopen(output, "w") : stdout;
	if (!out) {
		fprintf(stderr, "seacache-tracegen: %s: %s\n", output, strerror(errno));
		return 1;
	}
	zp.seed = p.seed;
	if ((zipf ? sim_gen_zipf(&zp, out, &st, err, sizeof(err)) :
		    sim_gen_write(&p, out, &st, err, sizeof(err))) ||
	    (output && fclose(out))) {
		fprintf(stderr, "seacache-tracegen: %s\n",
			output && !err[0] ? strerror(errno) : err);
		return 1;
	}
	fprintf(stderr,
		"seacache-tracegen: %llu requests (%llu reads, %llu writes), %llu blocks\n",
		(unsigned long long)st.requests, (unsigned long long)st.reads,
		(unsigned long long)st.writes, (unsigned long long)st.blocks);
	return 0;
}
