// SPDX-License-Identifier: BSD-2-Clause
/*
 * seacache-sim: the trace-driven simulator (README.md).  This file: the
 * command line and configuration file, sweeps, the CSV rows, the progress
 * line, and the `bench` subcommand.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "seacache/policy.h"
#include "seacache/prng.h"
#include "sim_model.h"

#define MAXL 32

struct list {
	char buf[1024];
	const char *v[MAXL];
	int n;
};

/* Option values read from a configuration file, freed at exit. */
static char *cfg_strs[256];
static unsigned int ncfg_strs;

static const char *keep_str(const char *s)
{
	char *d = strdup(s);

	if (!d || ncfg_strs == 256) {
		fprintf(stderr, "seacache-sim: configuration file too long\n");
		exit(2);
	}
	cfg_strs[ncfg_strs++] = d;
	return d;
}

static void free_strs(void)
{
	while (ncfg_strs)
		free(cfg_strs[--ncfg_strs]);
}

struct opts {
	enum sim_mode mode;
	struct list variants, policies, host_cache, block_sizes, vms;
	const char *vm_cache, *server_cache, *format, *csv, *server_policy;
	uint32_t vms_per_host, hash_bytes, hdr_bytes, max_push, window;
	double net_ms, disk_ms;
	bool header, quiet, delegate_cached;
	const char *trace;
};

static void usage(FILE *f)
{
	unsigned int i;

	fprintf(f,
		"usage: seacache-sim [OPTIONS] TRACE        replay a trace, one CSV row per run\n"
		"       seacache-sim bench [--requests N]   policy-only speed (no trace), metadata bytes\n"
		"\n"
		"Every LIST option (comma-separated) is swept: each combination replays the\n"
		"trace from its start.  --config FILE reads 'key = value' lines with these\n"
		"option names (without --); the command line overrides the file.\n"
		"\n"
		"  --mode system|cache   system (default): VMs, hosts, server, the seven variants;\n"
		"                        cache: one storage cache fed every block (policy papers)\n"
		"  --variants LIST       all (default) or any of these; the names in\n"
		"                        parentheses (seacache-host's) name them too:\n");
	for (i = 0; i < SC_VARIANT_COUNT; i++) {
		fprintf(f, "                          %s", sc_variants[i].paper_name);
		if (strcmp(sc_variants[i].name, sc_variants[i].paper_name))
			fprintf(f, " (%s)", sc_variants[i].name);
		fputc('\n', f);
	}
	fprintf(f,
		"  --policy LIST         host cache (system) or the cache (cache mode); default lru\n"
		"  --host-cache LIST     sizes: N blocks, N[K|M|G] bytes, N%% of the trace's\n"
		"                        distinct blocks (default 25%%)\n"
		"  --vm-cache SIZE       each VM's private LRU cache (default 0: none)\n"
		"  --server-cache SIZE   the server's content cache (default 10%%)\n"
		"  --server-policy P     the server cache's policy (default lru)\n"
		"  --delegate-cached     coop: delegate content the server's cache holds too\n"
		"                        (CSI_Delegate_Cached; default: only server misses)\n"
		"  --block-size LIST     4k..64k (default 4k)\n"
		"  --vms LIST            replay the first N VMs (default: all)\n"
		"  --vms-per-host K      VMs per host (default 10); hosts = ceil(vms/K), <= 64\n"
		"  --net-ms X            one network round trip (default 7.5)\n"
		"  --disk-ms Y           one disk access (default 5)\n"
		"  --hash-bytes N        a hash / CSI entry on the wire (default 24)\n"
		"  --hdr-bytes N         a request header on the wire (default 0)\n"
		"  --max-push N          CSI entries pushed per reply (default 256)\n"
		"  --window N            system mode: requests held back at most for their issue\n"
		"                        time (default 1048576; README.md, \"Time\")\n"
		"  --format F            trace format: auto, fiu, fiu-pid, msr, seacache (a binary\n"
		"                        trace of seacache-tracegen --convert is told by its magic)\n"
		"  --csv FILE            write CSV to FILE (default stdout)\n"
		"  --no-header           no CSV header line\n"
		"  --quiet               no progress line on stderr\n"
		"  --config FILE         read options from FILE\n"
		"  --help                this text\n"
		"\n"
		"Policies (host cache or cache):\n");
	for (i = 0; sc_policy_at(i); i++)
		fprintf(f, "  %-10s a content cache: %s\n", sc_policy_at(i)->name,
			sc_policy_at(i)->help);
	for (i = 1; sc_dcache_at(i); i++)
		fprintf(f, "  %-10s %s\n", sc_dcache_at(i)->name,
			sc_dcache_at(i)->help);
	fprintf(f, "\nCSV columns: see tools/sim/README.md.\n");
}

static void split(struct list *l, const char *s)
{
	char *tok, *save = NULL;

	l->n = 0;
	snprintf(l->buf, sizeof(l->buf), "%s", s);
	for (tok = strtok_r(l->buf, ",", &save); tok && l->n < MAXL;
	     tok = strtok_r(NULL, ",", &save))
		l->v[l->n++] = tok;
}

static bool parse_u32(const char *s, uint32_t *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v > UINT32_MAX)
		return false;
	*out = (uint32_t)v;
	return true;
}

static bool parse_bs(const char *s, uint32_t *out)
{
	char *end;
	unsigned long v = strtoul(s, &end, 10);

	if (*end == 'k' || *end == 'K') {
		v *= 1024;
		end++;
	}
	if (*end || v < 4096 || v > 65536 || (v & (v - 1)))
		return false;
	*out = (uint32_t)v;
	return true;
}

/* A cache size: blocks, bytes (K/M/G) or percent of distinct blocks. */
static bool parse_size(const char *s, uint32_t bs, struct sim_size *z)
{
	char *end;
	double v = strtod(s, &end);
	double b;

	z->pct = -1;
	z->blocks = 0;
	if (end == s || v < 0)
		return false;
	switch (*end) {
	case 0:
		b = v;
		break;
	case '%':
		z->pct = v;
		return !end[1];
	case 'k': case 'K':
		b = v * 1024 / bs;
		break;
	case 'm': case 'M':
		b = v * 1048576 / bs;
		break;
	case 'g': case 'G':
		b = v * 1073741824.0 / bs;
		break;
	default:
		return false;
	}
	if (*end && end[1])
		return false;
	if (b > UINT32_MAX - 1)
		return false;
	z->blocks = (uint32_t)b;
	return true;
}

enum {
	O_MODE = 256, O_VARIANTS, O_POLICY, O_HOST_CACHE, O_VM_CACHE,
	O_SERVER_CACHE, O_SERVER_POLICY, O_BLOCK_SIZE, O_VMS, O_VPH, O_NET,
	O_DISK, O_HASH, O_HDR, O_PUSH, O_WINDOW, O_FORMAT, O_CSV, O_NOHDR, O_QUIET,
	O_CONFIG, O_HELP, O_DELEG_CACHED,
};

static const struct option longopts[] = {
	{ "mode", required_argument, NULL, O_MODE },
	{ "variants", required_argument, NULL, O_VARIANTS },
	{ "policy", required_argument, NULL, O_POLICY },
	{ "host-cache", required_argument, NULL, O_HOST_CACHE },
	{ "vm-cache", required_argument, NULL, O_VM_CACHE },
	{ "server-cache", required_argument, NULL, O_SERVER_CACHE },
	{ "server-policy", required_argument, NULL, O_SERVER_POLICY },
	{ "delegate-cached", no_argument, NULL, O_DELEG_CACHED },
	{ "block-size", required_argument, NULL, O_BLOCK_SIZE },
	{ "vms", required_argument, NULL, O_VMS },
	{ "vms-per-host", required_argument, NULL, O_VPH },
	{ "net-ms", required_argument, NULL, O_NET },
	{ "disk-ms", required_argument, NULL, O_DISK },
	{ "hash-bytes", required_argument, NULL, O_HASH },
	{ "hdr-bytes", required_argument, NULL, O_HDR },
	{ "max-push", required_argument, NULL, O_PUSH },
	{ "window", required_argument, NULL, O_WINDOW },
	{ "format", required_argument, NULL, O_FORMAT },
	{ "csv", required_argument, NULL, O_CSV },
	{ "no-header", no_argument, NULL, O_NOHDR },
	{ "quiet", no_argument, NULL, O_QUIET },
	{ "config", required_argument, NULL, O_CONFIG },
	{ "help", no_argument, NULL, O_HELP },
	{ NULL, 0, NULL, 0 },
};

static int apply(struct opts *o, int id, const char *val);

static int read_config(struct opts *o, const char *path)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	unsigned int ln = 0;

	if (!f) {
		fprintf(stderr, "seacache-sim: cannot open %s: %s\n", path,
			strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		char *k = line, *eq, *v, *e;
		const struct option *lo;

		ln++;
		while (*k == ' ' || *k == '\t')
			k++;
		if (*k == '#' || *k == '\n' || !*k)
			continue;
		eq = strchr(k, '=');
		if (!eq) {
			fprintf(stderr, "seacache-sim: %s:%u: expected 'key = value'\n",
				path, ln);
			fclose(f);
			return -1;
		}
		for (e = eq; e > k && (e[-1] == ' ' || e[-1] == '\t'); e--)
			;
		*e = 0;
		v = eq + 1;
		while (*v == ' ' || *v == '\t')
			v++;
		for (e = v + strlen(v); e > v && (e[-1] == '\n' ||
			e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'); e--)
			;
		*e = 0;
		for (lo = longopts; lo->name; lo++)
			if (!strcmp(lo->name, k))
				break;
		if (!lo->name || lo->val == O_CONFIG || lo->val == O_HELP) {
			fprintf(stderr, "seacache-sim: %s:%u: unknown key '%s'\n",
				path, ln, k);
			fclose(f);
			return -1;
		}
		if (apply(o, lo->val, keep_str(v))) {
			fprintf(stderr, "seacache-sim: %s:%u: bad value for %s\n",
				path, ln, k);
			fclose(f);
			return -1;
		}
	}
	fclose(f);
	return 0;
}

static int apply(struct opts *o, int id, const char *val)
{
	uint32_t u;
	char *end;

	switch (id) {
	case O_MODE:
		if (!strcmp(val, "system"))
			o->mode = SIM_MODE_SYSTEM;
		else if (!strcmp(val, "cache"))
			o->mode = SIM_MODE_CACHE;
		else
			return -1;
		return 0;
	case O_VARIANTS:
		split(&o->variants, val);
		return 0;
	case O_POLICY:
		split(&o->policies, val);
		return 0;
	case O_HOST_CACHE:
		split(&o->host_cache, val);
		return 0;
	case O_VM_CACHE:
		o->vm_cache = val;
		return 0;
	case O_SERVER_CACHE:
		o->server_cache = val;
		return 0;
	case O_SERVER_POLICY:
		o->server_policy = val;
		return 0;
	case O_BLOCK_SIZE:
		split(&o->block_sizes, val);
		return 0;
	case O_VMS:
		split(&o->vms, val);
		return 0;
	case O_VPH:
		return parse_u32(val, &o->vms_per_host) && o->vms_per_host ?
			       0 : -1;
	case O_NET:
		o->net_ms = strtod(val, &end);
		return *end || o->net_ms < 0 ? -1 : 0;
	case O_DISK:
		o->disk_ms = strtod(val, &end);
		return *end || o->disk_ms < 0 ? -1 : 0;
	case O_HASH:
		return parse_u32(val, &o->hash_bytes) ? 0 : -1;
	case O_HDR:
		return parse_u32(val, &o->hdr_bytes) ? 0 : -1;
	case O_PUSH:
		return parse_u32(val, &u) && u ? (o->max_push = u, 0) : -1;
	case O_WINDOW:
		return parse_u32(val, &u) && u ? (o->window = u, 0) : -1;
	case O_FORMAT:
		o->format = val;
		return 0;
	case O_CSV:
		o->csv = val;
		return 0;
	case O_NOHDR:
		o->header = false;
		return 0;
	case O_QUIET:
		o->quiet = true;
		return 0;
	case O_DELEG_CACHED:
		o->delegate_cached = true;
		return 0;
	case O_CONFIG:
		return read_config(o, val);
	}
	return -1;
}

static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static const char *const csv_header =
	"mode,variant,policy,block_size,vms,hosts,vm_cache_blocks,host_cache_blocks,"
	"server_cache_blocks,cache_pct,requests,reads,writes,read_blocks,write_blocks,"
	"vm_hits,host_hits,content_hits,read_misses,read_hit_ratio,overall_hit_ratio,"
	"loads,load_rate,server_bytes,data_bytes,csi_bytes,peer_bytes,disk_reads,"
	"disk_writes,avg_latency_ms,avg_read_latency_ms,evictions,silent_writes,events,"
	"tracked_blocks,sim_meta_bytes,meta_bytes_per_block,seconds,blocks_per_s,trace,"
	"flight_waits,makespan_ms";

static double ratio(double a, double b)
{
	return b > 0 ? a / b : 0;
}

static void csv_row(FILE *f, const struct opts *o, const struct sim_params *p,
		    double pct, const struct sim_result *r, double secs)
{
	bool sys = p->mode == SIM_MODE_SYSTEM;
	uint64_t blocks = r->read_blocks + r->write_blocks;
	int i;

	fprintf(f, "%s,%s,%s,%u,%u,%u,%u,%u,%u,", sys ? "system" : "cache",
		sys ? sc_variants[p->variant].paper_name : "", p->policy,
		p->block_size, r->vms, r->hosts, sys ? r->vm_cache_blocks : 0,
		r->host_cache_blocks, sys ? r->server_cache_blocks : 0);
	if (pct >= 0)
		fprintf(f, "%.2f", pct);
	fprintf(f, ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
		",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.6f,",
		r->requests, r->reads, r->writes, r->read_blocks,
		r->write_blocks, r->vm_hits, r->host_hits, r->content_hits,
		r->read_misses,
		ratio((double)(r->vm_hits + r->host_hits), (double)r->read_blocks));
	if (!sys)
		fprintf(f, "%.6f", ratio((double)(r->host_hits + r->write_hits),
					 (double)blocks));
	fprintf(f, ",%" PRIu64 ",%.6f,", r->loads,
		ratio((double)r->loads, (double)blocks));
	if (sys)
		fprintf(f, "%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
			",%" PRIu64 ",%" PRIu64 ",%.4f,%.4f",
			r->server_bytes, r->data_bytes, r->csi_bytes,
			r->peer_bytes, r->disk_reads, r->disk_writes,
			ratio(r->lat_sum_ms, (double)r->requests),
			ratio(r->read_lat_sum_ms, (double)r->reads));
	else
		fprintf(f, ",,,,,,,");
	fprintf(f, ",%" PRIu64 ",%" PRIu64 ",", r->evictions, r->silent_writes);
	if (r->event_names) {
		fputc('"', f);
		for (i = 0; r->event_names[i] && i < SC_DC_EVENTS_MAX; i++)
			fprintf(f, "%s%s=%" PRIu64, i ? ";" : "",
				r->event_names[i], r->events[i]);
		fputc('"', f);
	}
	fprintf(f, ",%" PRIu64 ",%" PRIu64 ",%.2f,%.3f,%.0f,%s,",
		r->tracked_blocks, r->sim_meta_bytes,
		ratio((double)r->sim_meta_bytes, (double)r->tracked_blocks),
		secs, ratio((double)blocks, secs), o->trace);
	if (sys)
		fprintf(f, "%" PRIu64 ",%.3f", r->flight_waits, r->end_ms);
	else
		fputc(',', f);
	fputc('\n', f);
	fflush(f);
}

static struct sim_trace *open_trace(const struct opts *o, uint32_t bs)
{
	char err[256];
	struct sim_trace *t = sim_trace_open(o->trace, o->format, bs, err,
					     sizeof(err));

	if (!t) {
		fprintf(stderr, "seacache-sim: %s\n", err);
		exit(1);
	}
	sim_trace_want_ids(t);
	return t;
}

static void read_error(const struct opts *o, struct sim_trace *t, int rc,
		       bool report)
{
	if (rc < 0) {
		fprintf(stderr, "seacache-sim: %s: %s\n", o->trace,
			sim_trace_error(t));
		exit(1);
	}
	if (report && sim_trace_stats(t)->malformed)
		sim_trace_report(t, stderr);
}

/*
 * Requests looked ahead (binary traces): each is told to the simulator
 * when it is AHEAD requests away and again at AHEAD / 2 (sim_prefetch).
 */
#define AHEAD 64

struct lookahead {
	struct sim_req req[AHEAD];
	uint64_t got;		/* requests taken from the ahead cursor */
};

/* Before request n (from 0) is fed. */
static void look_ahead(struct sim_trace *t, struct sim *s,
		       struct lookahead *la, uint64_t n)
{
	struct sim_req *r;

	while (la->got <= n + AHEAD &&
	       sim_trace_ahead(t, r = &la->req[la->got % AHEAD]) == 1) {
		sim_prefetch(s, r, true);
		la->got++;
	}
	if (la->got > n + AHEAD / 2)
		sim_prefetch(s, &la->req[(n + AHEAD / 2) % AHEAD], false);
}

/*
 * Replay the whole trace into s (system mode: after the preload pass);
 * the reader's memory joins the result's.
 */
static void replay(const struct opts *o, struct sim *s, uint32_t bs,
		   const char *label, bool report, bool preload,
		   struct sim_result *r)
{
	struct sim_trace *t = open_trace(o, bs);
	const struct sim_trace_stats *st;
	struct lookahead la = { .got = 1 };
	struct sim_req req;
	double t0 = now_s(), last = t0, now;
	uint64_t n = 0;
	int rc;

	if (preload) {
		while ((rc = sim_trace_next(t, &req)) == 1)
			sim_preload(s, &req);
		read_error(o, t, rc, false);
		sim_preload_done(s);
		sim_trace_close(t);
		t = open_trace(o, bs);
	}
	while ((rc = sim_trace_next(t, &req)) == 1) {
		if (!preload)
			look_ahead(t, s, &la, n);
		sim_feed(s, &req);
		if (++n & 0xffff || o->quiet)
			continue;
		now = now_s();
		if (now - last < 1.0)
			continue;
		last = now;
		st = sim_trace_stats(t);
		if (st->in_size)
			fprintf(stderr, "\r%s: %" PRIu64 " requests, %.1f%% of the trace, %.0f s   ",
				label, n, 100.0 * st->in_bytes / st->in_size,
				now - t0);
		else
			fprintf(stderr, "\r%s: %" PRIu64 " requests, %.0f s   ",
				label, n, now - t0);
	}
	if (!o->quiet && now_s() - t0 >= 1.0)
		fprintf(stderr, "\r%s: done, %" PRIu64 " requests, %.1f s%20s\n",
			label, n, now_s() - t0, "");
	read_error(o, t, rc, report);
	sim_finish(s, sim_trace_id_bytes(t), r);
	sim_trace_close(t);
}

/*
 * Distinct blocks of the trace at block size bs, for the first vms VMs
 * (cache mode's percentages): a binary trace's header says for all VMs,
 * else a pass counts them.
 */
static uint64_t distinct_blocks(const struct opts *o, uint32_t bs, uint32_t vms)
{
	struct sim_trace *t = open_trace(o, bs);
	uint32_t addrs, contents, i;
	uint8_t *bits = NULL;
	uint64_t n = 0, cap = 0;
	struct sim_req req;
	int rc;

	if (sim_trace_ids(t, &addrs, &contents) && !vms) {
		sim_trace_close(t);
		return addrs;
	}
	if (!o->quiet)
		fprintf(stderr, "seacache-sim: counting distinct blocks\n");
	while ((rc = sim_trace_next(t, &req)) == 1) {
		if (vms && req.vm >= vms)
			continue;
		for (i = 0; i < req.nblocks; i++) {
			uint32_t a = req.addr[i];

			if (a / 8 >= cap) {
				uint64_t ncap = cap ? cap * 2 : 4096;

				while (ncap <= a / 8)
					ncap *= 2;
				bits = realloc(bits, ncap);
				if (!bits)
					exit(3);
				memset(bits + cap, 0, ncap - cap);
				cap = ncap;
			}
			n += !(bits[a / 8] & (1u << (a & 7)));
			bits[a / 8] |= (uint8_t)(1u << (a & 7));
		}
	}
	read_error(o, t, rc, true);
	free(bits);
	sim_trace_close(t);
	return n;
}

/* Ids the trace will hand out, when it says (a binary trace). */
static void id_hints(const struct opts *o, uint32_t bs, uint32_t *addrs,
		     uint32_t *contents)
{
	struct sim_trace *t;

	*addrs = *contents = 0;
	if (!strcmp(o->trace, "-"))	/* standard input is read once */
		return;
	t = open_trace(o, bs);
	if (!sim_trace_ids(t, addrs, contents))
		*addrs = *contents = 0;
	sim_trace_close(t);
}

static int run_all(struct opts *o)
{
	FILE *out = stdout;
	int ib, iv, ic, ip, ivar, nvar = 0;
	enum sc_variant vars[SC_VARIANT_COUNT * 2];
	bool cache_pct = false;
	int k;

	if (o->csv && !(out = fopen(o->csv, "w"))) {
		fprintf(stderr, "seacache-sim: cannot write %s: %s\n", o->csv,
			strerror(errno));
		return 1;
	}
	for (k = 0; k < o->variants.n; k++) {
		enum sc_variant v;

		if (!strcmp(o->variants.v[k], "all")) {
			for (v = 0; v < SC_VARIANT_COUNT; v++)
				vars[nvar++] = v;
			continue;
		}
		if (sc_variant_parse(o->variants.v[k], &v)) {
			fprintf(stderr, "seacache-sim: unknown variant '%s' (see --help)\n",
				o->variants.v[k]);
			return 2;
		}
		if (nvar < SC_VARIANT_COUNT * 2)
			vars[nvar++] = v;
	}
	if (o->mode == SIM_MODE_CACHE) {
		nvar = 1;
		/* Only the cache's size matters, and the system mode's preload
		 * pass gives its distinct blocks on the way. */
		for (k = 0; k < o->host_cache.n; k++)
			cache_pct |= strchr(o->host_cache.v[k], '%') != NULL;
	}
	if (o->header)
		fprintf(out, "%s\n", csv_header);
	for (ib = 0; ib < o->block_sizes.n; ib++) {
		uint32_t bs, addrs_hint, contents_hint;

		if (!parse_bs(o->block_sizes.v[ib], &bs)) {
			fprintf(stderr, "seacache-sim: bad block size '%s': 4k to 64k, a power of two\n",
				o->block_sizes.v[ib]);
			return 2;
		}
		id_hints(o, bs, &addrs_hint, &contents_hint);
		for (iv = 0; iv < (o->vms.n ? o->vms.n : 1); iv++) {
			uint32_t vms = 0;
			uint64_t distinct = 0;
			struct sim_size vmc, svc;

			if (o->vms.n && (!parse_u32(o->vms.v[iv], &vms) || !vms)) {
				fprintf(stderr, "seacache-sim: bad --vms '%s'\n",
					o->vms.v[iv]);
				return 2;
			}
			if (cache_pct)
				distinct = distinct_blocks(o, bs, vms);
			if (!parse_size(o->vm_cache, bs, &vmc) ||
			    !parse_size(o->server_cache, bs, &svc)) {
				fprintf(stderr, "seacache-sim: bad cache size\n");
				return 2;
			}
			for (ic = 0; ic < o->host_cache.n; ic++) {
				struct sim_size hc;

				if (!parse_size(o->host_cache.v[ic], bs, &hc) ||
				    (hc.pct < 0 && !hc.blocks)) {
					fprintf(stderr, "seacache-sim: bad host cache size '%s' (0 blocks?)\n",
						o->host_cache.v[ic]);
					return 2;
				}
				if (o->mode == SIM_MODE_CACHE && hc.pct >= 0) {
					hc.blocks = (uint32_t)(hc.pct / 100 *
							       (double)distinct);
					if (!hc.blocks) {
						fprintf(stderr, "seacache-sim: host cache '%s' is 0 blocks\n",
							o->host_cache.v[ic]);
						return 2;
					}
				}
				for (ip = 0; ip < o->policies.n; ip++) {
					for (ivar = 0; ivar < nvar; ivar++) {
						struct sim_params p = {
							.mode = o->mode,
							.variant = vars[ivar],
							.policy = o->policies.v[ip],
							.server_policy = o->server_policy,
							.delegate_cached = o->delegate_cached,
							.block_size = bs,
							.vms = vms,
							.vms_per_host = o->vms_per_host,
							.vm_cache = vmc,
							.host_cache = hc,
							.server_cache = svc,
							.net_ms = o->net_ms,
							.disk_ms = o->disk_ms,
							.hash_bytes = o->hash_bytes,
							.hdr_bytes = o->hdr_bytes,
							.max_push = o->max_push,
							.window = o->window,
							.addrs_hint = addrs_hint,
							.contents_hint = contents_hint,
						};
						struct sim_result r;
						char label[160];
						struct sim *s = sim_new(&p);
						bool sys = o->mode == SIM_MODE_SYSTEM;
						double t0, pct = hc.pct;

						if (!s)
							return 2;
						snprintf(label, sizeof(label),
							 "%s %s %s bs %u",
							 sys ? sc_variants[p.variant].paper_name :
							 "cache", p.policy,
							 o->host_cache.v[ic], bs);
						t0 = now_s();
						replay(o, s, bs, label, ib == 0 &&
						       iv == 0 && ic == 0 &&
						       ip == 0 && ivar == 0,
						       sys, &r);
						if (pct < 0 && sys && r.tracked_blocks)
							pct = 100.0 * r.host_cache_blocks /
							      (double)r.tracked_blocks;
						else if (pct < 0 && distinct)
							pct = 100.0 * r.host_cache_blocks /
							      (double)distinct;
						csv_row(out, o, &p, pct, &r,
							now_s() - t0);
						sim_free(s);
					}
				}
			}
		}
	}
	if (out != stdout)
		fclose(out);
	return 0;
}

/* ---- bench ---- */

struct breq {
	uint64_t addr, content;
	uint8_t op;
};

/*
 * A seeded stream: addresses drawn with an 80/20 skew over a working set
 * four times the cache, contents shared by 4 addresses on average, 10%
 * writes (a write gives the address a new content).
 */
static struct breq *bench_stream(uint64_t n, uint32_t ws)
{
	struct breq *q = malloc(n * sizeof(*q));
	uint64_t *cont = malloc((size_t)ws * sizeof(*cont));
	struct sc_prng rng;
	uint64_t i, wseq = 1ull << 40;
	uint32_t a;

	if (!q || !cont)
		exit(3);
	sc_prng_seed(&rng, 42);
	for (a = 0; a < ws; a++)
		cont[a] = sc_prng_below(&rng, ws / 4) + 1;
	for (i = 0; i < n; i++) {
		if (sc_prng_below(&rng, 10) < 8)
			a = sc_prng_below(&rng, ws / 5);
		else
			a = sc_prng_below(&rng, ws);
		q[i].addr = a;
		q[i].op = sc_prng_below(&rng, 10) == 0;
		if (q[i].op)
			cont[a] = ++wseq;
		q[i].content = sc_mix64(cont[a]);
	}
	free(cont);
	return q;
}

static int bench(int argc, char **argv)
{
	/*
	 * The targets, M req per CPU-second, so that traces far larger than
	 * a live run can replay stay quick to compare (libCacheSim reports
	 * over 20 for LRU): 10 for LRU and ELRU-16, 2 for the dedup-aware
	 * organisations (address and content); none was set for the
	 * others (0).
	 */
	static const struct {
		const char *spec;
		double target;
	} specs[] = {
		{ "lru", 10 }, { "elru:16", 10 }, { "arc", 0 }, { "dlru", 2 },
		{ "darc", 2 }, { "cdac-lru", 2 }, { "cdac-arc", 2 },
		{ "cbbc", 2 }, { "acq", 0 }, { "lruca:exact", 0 },
		{ "lruca:bloom", 0 },
	};
	uint64_t n = 10000000, i;
	uint32_t cap = 65536, ws = 4 * 65536;
	struct breq *q;
	size_t k;

	if (argc > 2 && !strcmp(argv[1], "--requests"))
		n = strtoull(argv[2], NULL, 10);
	if (!n)
		n = 1;
	q = bench_stream(n, ws);
	printf("# seacache-sim bench: %" PRIu64 " requests (80/20 over %u addresses, ~4 per content, 10%% writes), cache %u blocks of 4 KiB, one core\n",
	       n, ws, cap);
	printf("%-12s %10s %10s %8s %8s %11s  %s\n", "policy", "Mreq/cpu-s",
	       "Mreq/s", "hit", "load", "meta B/blk", "target Mreq/cpu-s");
	for (k = 0; k < sizeof(specs) / sizeof(specs[0]); k++) {
		struct sc_dc_config cfg = { .data_blocks = cap, .block_size = 4096 };
		struct sc_dcache c;
		struct sc_dc_res res;
		double t0, c0, t, ct;

		if (sc_dcache_create(&c, specs[k].spec, &cfg))
			return 2;
		t0 = now_s();
		c0 = cpu_s();
		for (i = 0; i < n; i++) {
			struct sc_dc_req r = {
				.addr = q[i].addr, .content = q[i].content,
				.op = q[i].op, .share = 1,
			};

			sc_dcache_access(&c, &r, &res);
		}
		t = now_s() - t0;
		ct = cpu_s() - c0;
		printf("%-12s %10.2f %10.2f %8.4f %8.4f %11.1f  ", specs[k].spec,
		       n / ct / 1e6, n / t / 1e6,
		       (double)c.st.read_hits / (double)(c.st.reads ? c.st.reads : 1),
		       (double)c.st.loads / (double)n,
		       (double)c.ops->bytes(&c) / cap);
		if (specs[k].target > 0)
			printf(">= %g: %s\n", specs[k].target,
			       n / ct / 1e6 >= specs[k].target ? "met" : "MISSED");
		else
			printf("-\n");
		sc_dcache_destroy(&c);
	}
	free(q);
	printf("# Mreq/cpu-s: per second of this thread's CPU time (robust on a shared machine); Mreq/s: wall clock\n");
	printf("# hit: reads answered as address hits; load: contents loaded per request\n");
	printf("# meta B/blk: the policy's metadata bytes per data block of capacity (split caches include\n");
	printf("#   their metadata cache of 4 addresses per block), no block data; the <= 64 B target is the\n");
	printf("#   system mode's metadata per tracked block (meta_bytes_per_block, in make bench's system-mode part)\n");
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = {
		.mode = SIM_MODE_SYSTEM,
		.vm_cache = "0", .server_cache = "10%", .format = "auto",
		.server_policy = "lru", .vms_per_host = 10, .hash_bytes = 24,
		.hdr_bytes = 0, .max_push = 256, .net_ms = 7.5, .disk_ms = 5,
		.window = 1u << 20,
		.header = true,
	};
	int c;

	if (argc > 1 && !strcmp(argv[1], "bench"))
		return bench(argc - 1, argv + 1);
	split(&o.variants, "all");
	split(&o.policies, "lru");
	split(&o.host_cache, "25%");
	split(&o.block_sizes, "4k");
	/* The configuration file first, so the command line overrides it. */
	for (c = 1; c < argc - 1; c++)
		if (!strcmp(argv[c], "--config") && read_config(&o, argv[c + 1]))
			return 2;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (c == 'h' || c == O_HELP) {
			usage(stdout);
			return 0;
		}
		if (c == O_CONFIG)
			continue;
		if (c == '?' || apply(&o, c, optarg)) {
			if (c != '?')
				fprintf(stderr, "seacache-sim: bad value '%s' for an option\n",
					optarg);
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "seacache-sim: give one TRACE (see --help)\n");
		return 2;
	}
	o.trace = argv[optind];
	c = run_all(&o);
	free_strs();
	return c;
}
