// SPDX-License-Identifier: BSD-2-Clause
/*
 * seacachectl: the operator's view of a SeaCache dedup store.
 *
 *   seacachectl stats STORE [--json]      space, dedup and write counters
 *   seacachectl stats --server HOST:PORT [--json|--prometheus]
 *                                         a running CSI service's counters
 *   seacachectl fsck STORE [--repair] [--json]
 *   seacachectl gc STORE [--json]         reclaim dead chunks now
 *
 * stats reads a live store (the server may be running); fsck and gc need
 * the store to themselves (stop ganesha.nfsd first; a running server
 * reclaims by itself every Housekeeping_Interval).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <seacache/csi_codec.h>
#include <seacache/rpc_transport.h>

#include "dstore.h"

/* fsck exit codes, as e2fsck's */
#define EXIT_CLEAN 0
#define EXIT_REPAIRED 1
#define EXIT_PROBLEMS 4
#define EXIT_OPERATIONAL 8

static void usage(FILE *out)
{
	fprintf(out,
		"usage: seacachectl COMMAND STORE [options]\n"
		"       seacachectl stats --server HOST:PORT [--json|--prometheus]\n"
		"\n"
		"commands:\n"
		"  stats STORE        logical and physical bytes, dedup ratio, chunks,\n"
		"                     holes, silent writes, reclaimable bytes, index size\n"
		"                     (safe while ganesha.nfsd serves the store)\n"
		"  stats --server HOST:PORT\n"
		"                     the counters of a running CSI service (DEDUP {\n"
		"                     CSI_Port }), server-wide and per registered host\n"
		"  fsck STORE         check every reference count, block map entry,\n"
		"                     CSI-Map entry and chunk hash; exit status 0 clean,\n"
		"                     1 problems repaired, 4 problems left, 8 could not run\n"
		"  gc STORE           punch out the space of unreferenced chunks now\n"
		"\n"
		"options:\n"
		"  --json             machine-readable output\n"
		"  --prometheus       (stats --server) Prometheus text exposition format\n"
		"  --repair           (fsck) fix what can be fixed without guessing data\n"
		"  -h, --help         this text\n"
		"\n"
		"fsck and gc need the store to themselves: stop the ganesha.nfsd that\n"
		"serves it first (a running server reclaims space by itself).\n");
}

static void log_stderr(void *ctx, int level, const char *msg)
{
	static const char *const names[] = { "error", "warning", "info" };

	(void)ctx;
	fprintf(stderr, "seacachectl: %s: %s\n", names[level < 0 || level > 2 ? 0 : level],
		msg);
}

static struct dstore *store_open(const char *dir, bool read_only)
{
	struct dstore_params p;
	struct dstore *ds;
	char err[512];
	int rc;

	dstore_params_default(&p);
	p.block_size = 0;	/* whatever the store was created with */
	p.read_only = read_only;
	p.reclaim_interval_ms = 0;
	p.log = log_stderr;
	rc = dstore_open(dir, &p, &ds, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "seacachectl: %s\n", err);
		return NULL;
	}
	return ds;
}

static double ratio(uint64_t a, uint64_t b)
{
	return b ? (double)a / (double)b : 0.0;
}

static int cmd_stats(const char *dir, bool json)
{
	struct dstore_stats s;
	struct dstore *ds = store_open(dir, true);
	uint64_t holes;
	int rc;

	if (!ds)
		return EXIT_OPERATIONAL;
	rc = dstore_stats(ds, &s);
	dstore_close(ds);
	if (rc) {
		fprintf(stderr, "seacachectl: stats of %s: %s\n", dir, strerror(-rc));
		return EXIT_OPERATIONAL;
	}
	holes = s.logical_blocks - s.mapped_blocks;
	if (json) {
		printf("{\"store\":\"%s\",\"block_size\":%u,\"files\":%" PRIu64
		       ",\"logical_bytes\":%" PRIu64 ",\"logical_blocks\":%" PRIu64
		       ",\"mapped_blocks\":%" PRIu64 ",\"holes\":%" PRIu64
		       ",\"chunks\":%" PRIu64 ",\"physical_bytes\":%" PRIu64
		       ",\"dedup_ratio\":%.4f,\"space_ratio\":%.4f"
		       ",\"silent_writes\":%" PRIu64 ",\"dedup_writes\":%" PRIu64
		       ",\"data_writes\":%" PRIu64 ",\"zero_writes\":%" PRIu64
		       ",\"reclaimable_bytes\":%" PRIu64 ",\"reclaimed_bytes\":%" PRIu64
		       ",\"container_bytes\":%" PRIu64 ",\"index_bytes\":%" PRIu64
		       ",\"index_file_bytes\":%" PRIu64
		       ",\"index_bytes_per_chunk\":%.1f"
		       ",\"index_bytes_per_mapped_block\":%.1f}\n",
		       dir, s.block_size, s.files, s.logical_bytes, s.logical_blocks,
		       s.mapped_blocks, holes, s.chunks, s.physical_bytes,
		       ratio(s.mapped_blocks, s.chunks),
		       ratio(s.logical_bytes, s.physical_bytes), s.silent_writes,
		       s.dedup_writes, s.data_writes, s.zero_writes,
		       s.dead_slots * s.block_size,
		       s.reclaimed_slots * s.block_size, s.container_bytes,
		       s.index_bytes, s.index_file_bytes,
		       ratio(s.index_chunk_bytes, s.chunks),
		       ratio(s.index_map_bytes, s.mapped_blocks));
		return EXIT_CLEAN;
	}
	printf("store              %s (block size %u)\n", dir, s.block_size);
	printf("files              %" PRIu64 "\n", s.files);
	printf("logical bytes      %" PRIu64 " (%" PRIu64 " blocks, %" PRIu64
	       " of them holes)\n", s.logical_bytes, s.logical_blocks, holes);
	printf("physical bytes     %" PRIu64 " (%" PRIu64 " distinct chunks)\n",
	       s.physical_bytes, s.chunks);
	printf("dedup ratio        %.2f (mapped blocks per chunk); logical/physical %.2f\n",
	       ratio(s.mapped_blocks, s.chunks),
	       ratio(s.logical_bytes, s.physical_bytes));
	printf("blocks written     %" PRIu64 " new data, %" PRIu64 " deduplicated, %"
	       PRIu64 " silent, %" PRIu64 " zero\n", s.data_writes,
	       s.dedup_writes, s.silent_writes, s.zero_writes);
	printf("reclaimable bytes  %" PRIu64 " (%" PRIu64 " reclaimed so far)\n",
	       s.dead_slots * s.block_size, s.reclaimed_slots * s.block_size);
	printf("container disk use %" PRIu64 " bytes\n", s.container_bytes);
	printf("index              %" PRIu64 " bytes in use (file %" PRIu64
	       "): %.1f per chunk, %.1f per mapped block\n", s.index_bytes,
	       s.index_file_bytes, ratio(s.index_chunk_bytes, s.chunks),
	       ratio(s.index_map_bytes, s.mapped_blocks));
	return EXIT_CLEAN;
}

static int cmd_fsck(const char *dir, bool repair, bool json)
{
	struct dstore_fsck_report r;
	struct dstore *ds = store_open(dir, false);
	int rc, code;

	if (!ds)
		return EXIT_OPERATIONAL;
	rc = dstore_fsck(ds, repair ? DSTORE_FSCK_REPAIR : 0, &r);
	if (!rc && repair && r.repaired) {
		struct dstore_fsck_report again;

		/* what is left after repair decides the exit status */
		rc = dstore_fsck(ds, 0, &again);
		again.repaired = r.repaired;
		r = again;
	}
	dstore_close(ds);
	if (rc) {
		fprintf(stderr, "seacachectl: fsck of %s could not run: %s\n", dir,
			strerror(-rc));
		return EXIT_OPERATIONAL;
	}
	code = r.problems ? EXIT_PROBLEMS : r.repaired ? EXIT_REPAIRED : EXIT_CLEAN;
	if (json) {
		printf("{\"store\":\"%s\",\"clean\":%s,\"problems\":%" PRIu64
		       ",\"repaired\":%" PRIu64 ",\"inodes\":%" PRIu64
		       ",\"dirents\":%" PRIu64 ",\"bmap_entries\":%" PRIu64
		       ",\"chunks\":%" PRIu64 ",\"csimap_entries\":%" PRIu64 "}\n",
		       dir, r.problems ? "false" : "true", r.problems, r.repaired,
		       r.inodes, r.dirents, r.bmap_entries, r.chunks,
		       r.csimap_entries);
		return code;
	}
	printf("%s: %" PRIu64 " inodes, %" PRIu64 " directory entries, %" PRIu64
	       " mapped blocks, %" PRIu64 " chunks, %" PRIu64 " CSI-Map entries\n",
	       dir, r.inodes, r.dirents, r.bmap_entries, r.chunks,
	       r.csimap_entries);
	if (r.repaired)
		printf("repaired %" PRIu64 " problems\n", r.repaired);
	if (r.problems)
		printf("%" PRIu64 " problems %s (listed above)%s\n", r.problems,
		       repair ? "remain" : "found",
		       repair ? "" : "; seacachectl fsck --repair fixes what it safely can");
	else
		printf("clean\n");
	return code;
}

static int cmd_gc(const char *dir, bool json)
{
	struct dstore *ds = store_open(dir, false);
	int64_t n;

	if (!ds)
		return EXIT_OPERATIONAL;
	n = dstore_reclaim(ds);
	dstore_close(ds);
	if (n < 0) {
		fprintf(stderr, "seacachectl: gc of %s: %s\n", dir, strerror((int)-n));
		return EXIT_OPERATIONAL;
	}
	if (json)
		printf("{\"store\":\"%s\",\"reclaimed_chunks\":%" PRId64 "}\n", dir, n);
	else
		printf("%s: reclaimed %" PRId64 " dead chunks\n", dir, n);
	return EXIT_CLEAN;
}

/* A counter name as a Prometheus metric name: seacache_csi_read_calls. */
static void prom_name(const struct csi_bytes *n, char *out, size_t len)
{
	size_t o = (size_t)snprintf(out, len, "seacache_csi_");

	for (uint32_t i = 0; i < n->len && o + 1 < len; i++) {
		char ch = (char)n->p[i];

		out[o++] = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ?
			   ch : '_';
	}
	out[o] = '\0';
}

static void print_counters(const struct csi_counter *c, uint32_t n,
			   const char *indent)
{
	for (uint32_t i = 0; i < n; i++)
		printf("%s%-32.*s %" PRIu64 "\n", indent, (int)c[i].name.len,
		       (const char *)c[i].name.p, c[i].value);
}

static void json_counters(const struct csi_counter *c, uint32_t n)
{
	printf("{");
	for (uint32_t i = 0; i < n; i++)
		printf("%s\"%.*s\":%" PRIu64, i ? "," : "", (int)c[i].name.len,
		       (const char *)c[i].name.p, c[i].value);
	printf("}");
}

static void prom_counters(const struct csi_counter *c, uint32_t n,
			  const struct csi_host_stats *h)
{
	char name[128];

	for (uint32_t i = 0; i < n; i++) {
		prom_name(&c[i].name, name, sizeof(name));
		if (h)
			printf("%s{host=\"%" PRIu64 "\",host_name=\"%.*s\"} %" PRIu64 "\n",
			       name, h->host, (int)h->host_name.len,
			       (const char *)h->host_name.p, c[i].value);
		else
			printf("%s %" PRIu64 "\n", name, c[i].value);
	}
}

static int cmd_stats_server(const char *addr, bool json, bool prom)
{
	struct sc_rpc_client_opts o = { .prog = CSI_PROG, .timeout_ms = 10000 };
	struct csi_stats_args a = { .per_host = true };
	struct csi_stats_res r;
	struct sc_rpc_client *c;
	struct sc_rpc_reply *rep;
	char host[64];
	const char *colon = strrchr(addr, ':');
	int rc;

	if (!colon || colon == addr || (size_t)(colon - addr) >= sizeof(host) ||
	    atoi(colon + 1) <= 0 || atoi(colon + 1) > 65535) {
		fprintf(stderr, "seacachectl: --server wants HOST:PORT (numeric address), not '%s'\n",
			addr);
		return EXIT_OPERATIONAL;
	}
	memcpy(host, addr, (size_t)(colon - addr));
	host[colon - addr] = '\0';
	o.host = host;
	o.port = (uint16_t)atoi(colon + 1);
	rc = sc_rpc_client_open(&o, &c);
	if (rc) {
		fprintf(stderr, "seacachectl: cannot reach the CSI service at %s: %s (is CSI_Port set in the DEDUP block?)\n",
			addr, strerror(-rc));
		return EXIT_OPERATIONAL;
	}
	rc = sc_rpc_call(c, CSI_PROC_STATS, &a, &r, &rep);
	sc_rpc_client_close(c);
	if (rc || r.status != CSI_OK) {
		fprintf(stderr, "seacachectl: STATS from %s failed: %s\n", addr,
			rc ? strerror(-rc) : "refused by the server");
		if (!rc)
			sc_rpc_reply_free(rep);
		return EXIT_OPERATIONAL;
	}
	if (json) {
		printf("{\"server\":\"%s\",\"epoch\":%" PRIu64 ",\"counters\":", addr,
		       r.epoch);
		json_counters(r.counters, r.ncounters);
		printf(",\"hosts\":[");
		for (uint32_t i = 0; i < r.nhosts; i++) {
			printf("%s{\"host\":%" PRIu64 ",\"name\":\"%.*s\",\"counters\":",
			       i ? "," : "", r.hosts[i].host,
			       (int)r.hosts[i].host_name.len,
			       (const char *)r.hosts[i].host_name.p);
			json_counters(r.hosts[i].counters, r.hosts[i].ncounters);
			printf("}");
		}
		printf("]}\n");
	} else if (prom) {
		prom_counters(r.counters, r.ncounters, NULL);
		for (uint32_t i = 0; i < r.nhosts; i++)
			prom_counters(r.hosts[i].counters, r.hosts[i].ncounters,
				      &r.hosts[i]);
	} else {
		printf("CSI service %s, epoch %016" PRIx64 "\n", addr, r.epoch);
		print_counters(r.counters, r.ncounters, "  ");
		for (uint32_t i = 0; i < r.nhosts; i++) {
			printf("host %" PRIu64 " (%.*s)\n", r.hosts[i].host,
			       (int)r.hosts[i].host_name.len,
			       (const char *)r.hosts[i].host_name.p);
			print_counters(r.hosts[i].counters,
				       r.hosts[i].ncounters, "  ");
		}
	}
	sc_rpc_reply_free(rep);
	return EXIT_CLEAN;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "repair", no_argument, NULL, 'r' },
		{ "server", required_argument, NULL, 's' },
		{ "prometheus", no_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool json = false, repair = false, prom = false;
	const char *cmd, *dir, *server = NULL;
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'r':
			repair = true;
			break;
		case 's':
			server = optarg;
			break;
		case 'p':
			prom = true;
			break;
		case 'h':
			usage(stdout);
			return EXIT_CLEAN;
		default:
			usage(stderr);
			return EXIT_OPERATIONAL;
		}
	}
	if (server || prom) {
		if (!server || argc - optind != 1 || strcmp(argv[optind], "stats") ||
		    (json && prom)) {
			fprintf(stderr, "seacachectl: usage: seacachectl stats --server HOST:PORT [--json|--prometheus]\n");
			return EXIT_OPERATIONAL;
		}
		return cmd_stats_server(server, json, prom);
	}
	if (argc - optind != 2) {
		usage(stderr);
		return EXIT_OPERATIONAL;
	}
	cmd = argv[optind];
	dir = argv[optind + 1];
	if (repair && strcmp(cmd, "fsck") != 0) {
		fprintf(stderr, "seacachectl: --repair goes with fsck only\n");
		return EXIT_OPERATIONAL;
	}
	if (strcmp(cmd, "stats") == 0)
		return cmd_stats(dir, json);
	if (strcmp(cmd, "fsck") == 0)
		return cmd_fsck(dir, repair, json);
	if (strcmp(cmd, "gc") == 0)
		return cmd_gc(dir, json);
	fprintf(stderr, "seacachectl: unknown command '%s' (stats, fsck, gc)\n", cmd);
	return EXIT_OPERATIONAL;
}
