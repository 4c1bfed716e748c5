// SPDX-License-Identifier: BSD-2-Clause
/*
 * seacachectl: the operator's view of a SeaCache dedup store.
 *
 *   seacachectl stats STORE [--json]      space, dedup and write counters
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
		"\n"
		"commands:\n"
		"  stats STORE        logical and physical bytes, dedup ratio, chunks,\n"
		"                     holes, silent writes, reclaimable bytes, index size\n"
		"                     (safe while ganesha.nfsd serves the store)\n"
		"  fsck STORE         check every reference count, block map entry,\n"
		"                     CSI-Map entry and chunk hash; exit status 0 clean,\n"
		"                     1 problems repaired, 4 problems left, 8 could not run\n"
		"  gc STORE           punch out the space of unreferenced chunks now\n"
		"\n"
		"options:\n"
		"  --json             machine-readable output\n"
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

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "repair", no_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool json = false, repair = false;
	const char *cmd, *dir;
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'r':
			repair = true;
			break;
		case 'h':
			usage(stdout);
			return EXIT_CLEAN;
		default:
			usage(stderr);
			return EXIT_OPERATIONAL;
		}
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
