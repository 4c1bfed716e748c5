// SPDX-License-Identifier: BSD-2-Clause
/*
 * seacache-host: one process is one VDI host.  It runs VMs VM_FIRST ..
 * VM_FIRST + VMS - 1 of a workload at once, each replaying its requests
 * against its own image file through the host's one cache, and prints
 * per-VM and per-host statistics (text, or key=value lines for the lab).
 */
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "backends.h"
#include "replay.h"
#include "seacache/defaults.h"
#include "seacache/variant.h"

/* One line of --help: the variant's names (the paper's, if other). */
static void print_variant(FILE *f, const struct sc_variant_info *v)
{
	fprintf(f, "                         %s", v->name);
	if (strcmp(v->name, v->paper_name))
		fprintf(f, " (or %s)", v->paper_name);
	fputc('\n', f);
}

static void usage(FILE *f)
{
	unsigned int i;

	fprintf(f,
"usage: seacache-host --workload FILE (--server ADDR | --mode nfs --nfs-url URL |\n"
"                     --mode file --mount DIR) [options]\n"
"   or: seacache-host --load IMAGE --nfs-url URL [--dir DIR]\n"
"       (copies a local image into the export over NFS)\n"
"Replays VMs of a storm (the SeaCache workload format) as one host: reads\n"
"checked against the workload, writes (a patch storm's bytes from FILE.blocks)\n"
"made stable at each VM's end.\n"
"\n"
"  --workload FILE      the storm (seacache-workload storm ...)\n"
"  --server ADDR        csi: the CSI service's numeric address\n"
"  --mode nfs|csi|file  nfs: plain NFSv3 and an address-indexed cache (the\n"
"                       lab's Baseline); csi: the SeaCache host library\n"
"                       (default); file: the images under --mount DIR, read\n"
"                       with pread (a seacache.ko mount: a kernel host)\n"
"  --mount DIR          file: the mounted export (its counters are the\n"
"                       seacache.ko mount's, if it is one)\n"
"  --nfs-url URL        nfs: nfs://ADDR/EXPORT[?nfsport=P&mountport=P]\n"
"  --variant NAME       csi: the protocol variant (seacache), one of\n");
	for (i = 0; i < SC_VARIANT_COUNT; i++)
		print_variant(f, &sc_variants[i]);
	fprintf(f,
"  --csi-port P         the CSI service's port (%d)\n"
"  --export PATH        the export's pseudo path (/export)\n"
"  --dir DIR            the images' directory below the export (lab)\n"
"  --pattern FMT        image k's file name, printf of k (vm-%%03u.img)\n"
"  --vm-first N         first VM of the workload this host runs (0)\n"
"  --vms K              how many (4)\n"
"  --cache-mib M        host cache size (64)\n"
"  --policy P           csi: content cache eviction (default %s)\n"
"  --peer-bind ADDR     csi: serve peer reads on ADDR (coop, seacache)\n"
"  --name NAME          host name, as the server's STATS show it (host)\n"
"  --uuid-file FILE     csi: the host's identity, kept in FILE (made, with\n"
"                       a random uuid, if absent): a restarted host takes\n"
"                       its registration back; without it each run\n"
"                       registers anew\n"
"  --no-verify          do not check blocks against the workload\n"
"  --json               one JSON object instead of text\n"
"  --kv                 key=value lines instead of text (scripts/lab)\n"
"  --quiet              no progress line\n"
"  --linger-until FILE  csi: after the results, go on serving peer reads\n"
"                       until FILE exists (hosts that finish first stay\n"
"                       peers of the others; at most 10 minutes)\n"
"  --help\n"
"Exit status: 0 all reads right, 1 a read failed or mismatched, 2 usage,\n"
"3 could not run.\n", SC_CSI_PORT, SC_HOST_POLICY_DEFAULT);
}

struct opts {
	const char *workload, *server, *nfs_url, *mode, *variant, *policy;
	const char *peer_bind, *load, *linger, *mount;
	const char *name, *uuid_file;
	struct host_paths paths;
	unsigned int vm_first, vms, csi_port, cache_mib;
	bool verify, kv, json, quiet;
};

static int parse_uint(const char *s, unsigned int max, unsigned int *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v > max)
		return -1;
	*out = (unsigned int)v;
	return 0;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "workload", 1, 0, 'w' }, { "server", 1, 0, 's' },
		{ "nfs-url", 1, 0, 'u' }, { "load", 1, 0, 'L' },
		{ "mode", 1, 0, 'm' }, { "variant", 1, 0, 'V' },
		{ "csi-port", 1, 0, 'p' }, { "export", 1, 0, 'e' },
		{ "dir", 1, 0, 'd' }, { "pattern", 1, 0, 'P' },
		{ "vm-first", 1, 0, 'f' }, { "vms", 1, 0, 'k' },
		{ "cache-mib", 1, 0, 'c' }, { "policy", 1, 0, 'y' },
		{ "peer-bind", 1, 0, 'b' }, { "name", 1, 0, 'n' },
		{ "uuid-file", 1, 0, 'U' },
		{ "no-verify", 0, 0, 'N' }, { "kv", 0, 0, 'K' },
		{ "json", 0, 0, 'J' }, { "linger-until", 1, 0, 'W' },
		{ "quiet", 0, 0, 'q' }, { "mount", 1, 0, 'M' },
		{ "help", 0, 0, 'h' },
		{ 0, 0, 0, 0 }
	};
	int c;

	*o = (struct opts){ .mode = "csi", .variant = "seacache",
			    .name = "host", .vms = 4, .csi_port = SC_CSI_PORT,
			    .cache_mib = 64, .verify = true };
	o->paths = (struct host_paths){ .export = "/export", .dir = "lab",
					.pattern = "vm-%03u.img" };
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'w': o->workload = optarg; break;
		case 's': o->server = optarg; break;
		case 'u': o->nfs_url = optarg; break;
		case 'L': o->load = optarg; break;
		case 'm': o->mode = optarg; break;
		case 'V': o->variant = optarg; break;
		case 'e': o->paths.export = optarg; break;
		case 'd': o->paths.dir = optarg; break;
		case 'P': o->paths.pattern = optarg; break;
		case 'y': o->policy = optarg; break;
		case 'b': o->peer_bind = optarg; break;
		case 'n': o->name = optarg; break;
		case 'U': o->uuid_file = optarg; break;
		case 'N': o->verify = false; break;
		case 'K': o->kv = true; break;
		case 'J': o->json = true; break;
		case 'W': o->linger = optarg; break;
		case 'M': o->mount = optarg; break;
		case 'q': o->quiet = true; break;
		case 'p':
			if (parse_uint(optarg, 65535, &o->csi_port))
				goto bad;
			break;
		case 'f':
			if (parse_uint(optarg, 1u << 24, &o->vm_first))
				goto bad;
			break;
		case 'k':
			if (parse_uint(optarg, 1024, &o->vms) || !o->vms)
				goto bad;
			break;
		case 'c':
			if (parse_uint(optarg, 1u << 20, &o->cache_mib) ||
			    !o->cache_mib)
				goto bad;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (strcmp(o->mode, "nfs") && strcmp(o->mode, "csi") &&
	    strcmp(o->mode, "file")) {
		fprintf(stderr, "seacache-host: --mode is nfs, csi or file\n");
		return -1;
	}
	if (o->load) {
		o->paths.nfs_url = o->nfs_url;
		if (o->nfs_url && optind == argc)
			return 0;
		fprintf(stderr, "seacache-host: --load needs --nfs-url\n");
		return -1;
	}
	if (!o->workload || optind != argc ||
	    !(!strcmp(o->mode, "nfs") ? o->nfs_url :
	      !strcmp(o->mode, "file") ? o->mount : o->server)) {
		fprintf(stderr, "seacache-host: --workload and --server (csi), --nfs-url (nfs) or --mount (file) are needed\n");
		usage(stderr);
		return -1;
	}
	if (!host_pattern_ok(o->paths.pattern)) {
		fprintf(stderr, "seacache-host: --pattern needs exactly one %%u\n");
		return -1;
	}
	o->paths.nfs_url = o->nfs_url;
	return 0;
bad:
	fprintf(stderr, "seacache-host: bad value '%s' (see --help)\n",
		optarg);
	return -1;
}

/* The process's user + system CPU time so far, in seconds. */
static double cpu_seconds(void)
{
	struct rusage u;

	if (getrusage(RUSAGE_SELF, &u))
		return 0;
	return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
	       (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

/* struct host_totals's counters, in its order, as the lab names them. */
static const struct {
	const char *key;
	size_t off;
} totals_keys[] = {
#define TK(f) { #f, offsetof(struct host_totals, f) }
	TK(server_bytes), TK(written_bytes), TK(peer_bytes),
	TK(peer_served_bytes),
	TK(server_calls), TK(cache_blocks_hit), TK(blocks_read),
	/* csi only: how the misses went */
	TK(delegations), TK(peer_failures), TK(force_data_blocks),
	TK(waited_blocks), TK(hash_only_blocks), TK(pushes_received),
	TK(pushed_hits), TK(map_calls), TK(map_entries), TK(mapped_hits),
	TK(readahead_blocks),
#undef TK
};
#define TOTALS_MISSES 7		/* the first of the csi-only counters */
#define TOTALS_N (sizeof(totals_keys) / sizeof(totals_keys[0]))

/* Counters from .. to - 1 of t: JSON members, or " key=value" each. */
static void print_totals(const struct host_totals *t, size_t from, size_t to,
			 bool json)
{
	for (size_t i = from; i < to; i++) {
		unsigned long long v = *(const uint64_t *)
			((const char *)t + totals_keys[i].off);

		if (json)
			printf("%s\"%s\": %llu", i ? ", " : "",
			       totals_keys[i].key, v);
		else
			printf(" %s=%llu", totals_keys[i].key, v);
	}
}

static void print_json(const struct opts *o, const char *label,
		       const struct replay *r, const struct vm_result *res,
		       const struct host_totals *t, double cpu_s)
{
	printf("{\"host\": \"%s\", \"mode\": \"%s\", \"cpu_s\": %.3f, \"vms\": [",
	       o->name, label, cpu_s);
	for (unsigned int v = 0; v < r->nvms; v++) {
		const struct vm_result *x = &res[v];

		printf("%s\n  {\"vm\": %u, \"requests\": %llu, \"blocks\": %llu, \"write_blocks\": %llu, \"verified\": %llu, \"mismatches\": %llu, \"errors\": %llu, \"lat_mean_us\": %.1f, \"lat_p50_us\": %.1f, \"lat_p99_us\": %.1f, \"seconds\": %.3f}",
		       v ? "," : "", r->vm_first + v,
		       (unsigned long long)x->requests,
		       (unsigned long long)x->blocks,
		       (unsigned long long)x->write_blocks,
		       (unsigned long long)x->verified,
		       (unsigned long long)x->mismatches,
		       (unsigned long long)x->errors, x->lat_mean_us,
		       x->lat_p50_us, x->lat_p99_us, x->seconds);
	}
	printf("],\n ");
	print_totals(t, 0, TOTALS_N, true);
	printf("}\n");
}

/* cpu_s: the process's CPU time during the replay (its VMs' requests). */
static void print_results(const struct opts *o, const struct replay *r,
			  const struct vm_result *res,
			  const struct host_totals *t, double cpu_s)
{
	const char *label = strcmp(o->mode, "csi") ? o->mode : o->variant;
	struct vm_result sum = { 0 };
	double lat_mean = 0, p50 = 0, p99 = 0, secs = 0, start = 0, end = 0;

	if (o->json) {
		print_json(o, label, r, res, t, cpu_s);
		return;
	}

	for (unsigned int v = 0; v < r->nvms; v++) {
		const struct vm_result *x = &res[v];

		sum.requests += x->requests;
		sum.blocks += x->blocks;
		sum.write_blocks += x->write_blocks;
		sum.verified += x->verified;
		sum.mismatches += x->mismatches;
		sum.errors += x->errors;
		lat_mean += x->lat_mean_us * (double)x->requests;
		p50 = x->lat_p50_us > p50 ? x->lat_p50_us : p50;
		p99 = x->lat_p99_us > p99 ? x->lat_p99_us : p99;
		secs = x->seconds > secs ? x->seconds : secs;
		if (x->requests && (!start || x->start < start))
			start = x->start;
		end = x->end > end ? x->end : end;
		if (o->kv)
			printf("vm.%u requests=%llu blocks=%llu lat_mean_us=%.1f lat_p50_us=%.1f lat_p99_us=%.1f mismatches=%llu errors=%llu seconds=%.3f\n",
			       r->vm_first + v,
			       (unsigned long long)x->requests,
			       (unsigned long long)x->blocks, x->lat_mean_us,
			       x->lat_p50_us, x->lat_p99_us,
			       (unsigned long long)x->mismatches,
			       (unsigned long long)x->errors, x->seconds);
		else
			printf("  VM %-4u %8llu requests %9llu blocks  latency mean %8.1f us  p50 %8.1f us  p99 %9.1f us  %6.2f s%s\n",
			       r->vm_first + v,
			       (unsigned long long)x->requests,
			       (unsigned long long)x->blocks, x->lat_mean_us,
			       x->lat_p50_us, x->lat_p99_us, x->seconds,
			       x->mismatches || x->errors ? "  WRONG" : "");
	}
	if (sum.requests)
		lat_mean /= (double)sum.requests;
	if (o->kv) {
		printf("host name=%s mode=%s requests=%llu blocks=%llu write_blocks=%llu verified=%llu mismatches=%llu errors=%llu lat_mean_us=%.1f lat_p50_max_us=%.1f lat_p99_max_us=%.1f seconds=%.3f start=%.6f end=%.6f cpu_s=%.3f",
		       o->name, label, (unsigned long long)sum.requests,
		       (unsigned long long)sum.blocks,
		       (unsigned long long)sum.write_blocks,
		       (unsigned long long)sum.verified,
		       (unsigned long long)sum.mismatches,
		       (unsigned long long)sum.errors, lat_mean, p50, p99,
		       secs, start, end, cpu_s);
		print_totals(t, 0, TOTALS_MISSES, false);
		printf("\nmisses");
		print_totals(t, TOTALS_MISSES, TOTALS_N, false);
		printf("\n");
		return;
	}
	printf("host %s (%s): %llu requests, %llu blocks in %.2f s (CPU %.2f s); %llu blocks checked, %llu wrong, %llu errors\n",
	       o->name, label, (unsigned long long)sum.requests,
	       (unsigned long long)sum.blocks, secs, cpu_s,
	       (unsigned long long)sum.verified,
	       (unsigned long long)sum.mismatches,
	       (unsigned long long)sum.errors);
	printf("  to the server %.1f MiB (%llu blocks written)\n",
	       (double)t->written_bytes / 1048576.0,
	       (unsigned long long)sum.write_blocks);
	printf("  from the server %.1f MiB in %llu calls, from peers %.1f MiB, to peers %.1f MiB, host cache hits %.1f%%\n",
	       (double)t->server_bytes / 1048576.0,
	       (unsigned long long)t->server_calls,
	       (double)t->peer_bytes / 1048576.0,
	       (double)t->peer_served_bytes / 1048576.0,
	       t->blocks_read ? 100.0 * (double)t->cache_blocks_hit /
				(double)t->blocks_read : 0.0);
	if (strcmp(o->mode, "nfs"))
		printf("  hash-only answers %llu (waited for a READ in flight %llu, re-read with FORCE_DATA %llu), delegations %llu (failed %llu), pushed entries %llu (used %llu), map windows %llu (entries %llu, used %llu), contents read ahead %llu\n",
		       (unsigned long long)t->hash_only_blocks,
		       (unsigned long long)t->waited_blocks,
		       (unsigned long long)t->force_data_blocks,
		       (unsigned long long)t->delegations,
		       (unsigned long long)t->peer_failures,
		       (unsigned long long)t->pushes_received,
		       (unsigned long long)t->pushed_hits,
		       (unsigned long long)t->map_calls,
		       (unsigned long long)t->map_entries,
		       (unsigned long long)t->mapped_hits,
		       (unsigned long long)t->readahead_blocks);
}

/*
 * What the host served to peers in all, printed after linger: the results
 * are printed when its own VMs are done, and the other hosts go on
 * reading from it until the last is done, so their bytes from peers add
 * up to this, not to the results' peer_served_bytes.
 */
static void print_served(const struct opts *o, const struct host_totals *t)
{
	if (o->kv)
		printf("served peer_served_bytes=%llu\n",
		       (unsigned long long)t->peer_served_bytes);
	else if (!o->json)
		printf("  to peers in all, until the last host was done, %.1f MiB\n",
		       (double)t->peer_served_bytes / 1048576.0);
}

/* Until file exists (at most 10 minutes): the host stays registered. */
static void linger(const char *file)
{
	for (int i = 0; file && i < 6000 && access(file, F_OK); i++)
		usleep(100 * 1000);
}

int main(int argc, char **argv)
{
	struct opts o;
	struct replay r;
	struct vm_result *res;
	struct host_totals t;
	const struct backend_ops *ops;
	uint32_t cache_blocks;
	char err[512];
	double cpu;
	void *be;
	int rc;

	/*
	 * One malloc arena for every VM thread.  glibc grows a thread's own
	 * arena a page at a time, an mprotect() holding the address space's
	 * lock for writing, so each new 4 KiB cache or pin block a VM thread
	 * took cost a system call that stalled the other threads' page
	 * faults; the main arena grows by M_TOP_PAD (128 KiB) at once.  The
	 * patch storm's host time per 7-block write: 160-200 -> 99-164 us
	 * (README).
	 */
	mallopt(M_ARENA_MAX, 1);
	if (parse_args(argc, argv, &o))
		return 2;
	if (o.load)
		return nfs_load_image(&o.paths, o.load, !o.quiet) ? 3 : 0;
	if (replay_load(&r, o.workload, o.vm_first, o.vms, err, sizeof(err))) {
		fprintf(stderr, "seacache-host: %s\n", err);
		return 3;
	}
	cache_blocks = (uint32_t)(((uint64_t)o.cache_mib << 20) / r.block_size);
	if (!strcmp(o.mode, "nfs")) {
		ops = &nfs_backend_ops;
		be = nfs_backend_new(&o.paths, r.block_size, cache_blocks, err,
				     sizeof(err));
	} else if (!strcmp(o.mode, "file")) {
		ops = &file_backend_ops;
		be = file_backend_new(&o.paths, o.mount, r.block_size, err,
				      sizeof(err));
	} else {
		struct csi_backend_opts co = {
			.server = o.server, .port = (uint16_t)o.csi_port,
			.variant = o.variant, .cache_blocks = cache_blocks,
			.policy = o.policy, .peer_bind = o.peer_bind,
			.name = o.name,
			.uuid_file = o.uuid_file,
		};

		ops = &csi_backend_ops;
		be = csi_backend_new(&o.paths, &co, err, sizeof(err));
	}
	res = calloc(o.vms, sizeof(*res));
	if (!be || !res) {
		fprintf(stderr, "seacache-host: %s\n", be ? "out of memory" : err);
		replay_free(&r);
		return 3;
	}
	cpu = cpu_seconds();
	rc = replay_run(&r, ops, be, o.verify, !o.quiet, res, err,
			sizeof(err));
	cpu = cpu_seconds() - cpu;
	if (rc) {
		fprintf(stderr, "seacache-host: %s\n", err);
		rc = 3;
	} else {
		if (ops == &nfs_backend_ops)
			nfs_backend_totals(be, &t);
		else if (ops == &file_backend_ops)
			file_backend_totals(be, &t);
		else
			csi_backend_totals(be, &t);
		print_results(&o, &r, res, &t, cpu);
		fflush(stdout);
		linger(o.linger);
		if (ops == &csi_backend_ops && o.linger) {
			csi_backend_totals(be, &t);
			print_served(&o, &t);
		}
		if (ops == &csi_backend_ops && o.kv)
			csi_backend_print_times(be);
		rc = 0;
		for (unsigned int v = 0; v < o.vms; v++)
			if (res[v].mismatches || res[v].errors)
				rc = 1;
	}
	if (ops == &nfs_backend_ops)
		nfs_backend_free(be);
	else if (ops == &file_backend_ops)
		file_backend_free(be);
	else
		csi_backend_free(be);
	free(res);
	replay_free(&r);
	return rc;
}
