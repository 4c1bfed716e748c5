// SPDX-License-Identifier: BSD-2-Clause
/*
 * seacachectl: the operator's view of a SeaCache dedup store.
 *
 *   seacachectl stats STORE [--json]      space, dedup and write counters
 *   seacachectl stats --server HOST:PORT [--json|--prometheus]
 *                                         a running CSI service's counters
 *   seacachectl stats --mount DIR [--json|--prometheus]
 *                                         a mounted host's statistics
 *   seacachectl fsck STORE [--repair] [--json]
 *   seacachectl gc STORE [--json]         reclaim dead chunks now
 *   seacachectl defaults [NAME...] [--json]
 *                                         the built-in defaults and limits
 *
 * stats reads a live store (the server may be running); fsck and gc need
 * the store to themselves (stop ganesha.nfsd first; a running server
 * reclaims by itself every Housekeeping_Interval).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <seacache/csi_codec.h>
#include <seacache/defaults.h>
#include <seacache/rpc_transport.h>

#include "dstore.h"

/* fsck exit codes, as e2fsck's */
#define EXIT_CLEAN 0
#define EXIT_REPAIRED 1
#define EXIT_PROBLEMS 4
#define EXIT_OPERATIONAL 8

/* seacache.ko's file system type (client-module/super.c) */
#define SEACACHE_FSTYPE "seacache"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: seacachectl COMMAND STORE [options]\n"
		"       seacachectl stats --server HOST:PORT [--json|--prometheus]\n"
		"       seacachectl stats --mount DIR [--json|--prometheus]\n"
		"       seacachectl defaults [NAME...] [--json]\n"
		"\n"
		"commands:\n"
		"  stats STORE        logical and physical bytes, dedup ratio, chunks,\n"
		"                     holes, silent writes, reclaimable bytes, index size\n"
		"                     (safe while ganesha.nfsd serves the store)\n"
		"  stats --server HOST:PORT\n"
		"                     the counters of a running CSI service (DEDUP {\n"
		"                     CSI_Port }), server-wide and per registered host\n"
		"  stats --mount DIR  the statistics of the seacache.ko or seacache-fuse\n"
		"                     mount on DIR (/sys/fs/seacache/MAJOR:MINOR/ or\n"
		"                     " SC_FUSE_STATS_DIR "/MAJOR:MINOR/, one value a file)\n"
		"  fsck STORE         check every reference count, block map entry,\n"
		"                     CSI-Map entry and chunk hash; exit status 0 clean,\n"
		"                     1 problems repaired, 4 problems left, 8 could not run\n"
		"  gc STORE           punch out the space of unreferenced chunks now\n"
		"  defaults [NAME...] the defaults and limits built in (seacache/\n"
		"                     defaults.h) as shell lines NAME=VALUE, e.g.\n"
		"                     SC_CSI_PORT=%d; with NAMEs, just their values,\n"
		"                     one a line\n"
		"\n"
		"options:\n"
		"  --json             machine-readable output\n"
		"  --prometheus       (stats --server/--mount) Prometheus text format\n"
		"  --repair           (fsck) fix what can be fixed without guessing data\n"
		"  -h, --help         this text\n"
		"\n"
		"fsck and gc need the store to themselves: stop the ganesha.nfsd that\n"
		"serves it first (a running server reclaims space by itself).\n",
		SC_CSI_PORT);
}

/* ---------------------------------------------------------------------
 * defaults
 */

struct named_default {
	const char *name;
	unsigned long long value;
};

/* Every integer of seacache/defaults.h, in its order. */
#define D(name) { #name, (unsigned long long)(name) }
static const struct named_default defaults[] = {
	D(SC_CSI_PORT),
	D(SC_BLOCK_SIZE_MIN),
	D(SC_BLOCK_SIZE_MAX),
	D(SC_BLOCK_SIZE_DEFAULT),
	D(SC_CSI_MAX_HOSTS_DEFAULT),
	D(SC_CSI_MAX_HOSTS_MAX),
	D(SC_CSI_TRACKER_ENTRIES_DEFAULT),
	D(SC_CSI_TRACKER_ENTRIES_MIN),
	D(SC_CSI_TRACKER_ENTRIES_MAX),
	D(SC_CSI_TRACKER_HOST_PERCENT_DEFAULT),
	D(SC_CSI_TRACKER_HOST_PERCENT_MIN),
	D(SC_CSI_TRACKER_HOST_PERCENT_MAX),
	D(SC_CSI_HOSTS_PER_ADDR_DEFAULT),
	D(SC_CSI_LEASE_S_DEFAULT),
	D(SC_CSI_LEASE_S_MIN),
	D(SC_CSI_LEASE_S_MAX),
	D(SC_CSI_MAX_BLOCKS_DEFAULT),
	D(SC_CSI_MAX_EVICT_DEFAULT),
	D(SC_CSI_MAX_PUSH_DEFAULT),
	D(SC_CSI_PUSH_SEARCH_MS_DEFAULT),
	D(SC_CSI_PUSH_SEARCH_MS_MAX),
	D(SC_CSI_TOKEN_S_DEFAULT),
	D(SC_CSI_PEER_FAILURES_DEFAULT),
	D(SC_CSI_PEER_FAILURES_MAX),
	D(SC_CSI_PEER_SUSPEND_S_DEFAULT),
	D(SC_CSI_PEER_SUSPEND_S_MAX),
	D(SC_CSI_USED_FILES_DEFAULT),
	D(SC_CSI_WORKERS_DEFAULT),
	D(SC_CSI_WORKERS_MAX),
	D(SC_CSI_MAX_CALLS_PER_CONN_DEFAULT),
	D(SC_CSI_MAX_CALLS_PER_CONN_MAX),
	D(SC_RPC_MAX_RECORD_DEFAULT),
	D(SC_CSI_CALL_TIMEOUT_MS),
	D(SC_CSI_FALLBACK_TIMEOUT_MS),
	D(SC_CSI_MAX_CONNS_PER_ADDR),
	D(SC_RPC_IDLE_TIMEOUT_MS),
	D(SC_RPC_RECORD_TIMEOUT_MS),
	D(SC_RPC_KEEPALIVE_S),
	D(SC_KEEPALIVE_PROBES),
	D(SC_PEER_FETCH_TIMEOUT_MS),
	D(SC_PEER_MAX_REQUEST),
	D(SC_PEER_MAX_CONNS),
	D(SC_PEER_MAX_CONNS_PER_ADDR),
	D(SC_PEER_IDLE_TIMEOUT_MS),
	D(SC_PEER_RECORD_TIMEOUT_MS),
	D(SC_PEER_KEEPALIVE_S),
	D(SC_PEER_REPLY_SLACK),
	D(SC_PEER_POOL_SIZE),
	D(SC_HOST_CACHE_BYTES_DEFAULT),
	D(SC_HOST_CACHE_BYTES_MIN),
	D(SC_HOST_MOUNT_IO_RETRIES),
	D(SC_HOST_CSI_TIMEO_MAX),
};
#undef D

static const struct named_default *default_find(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++)
		if (strcmp(defaults[i].name, name) == 0)
			return &defaults[i];
	return NULL;
}

/*
 * Scripts take the values from here rather than spelling them: all as
 * lines a shell can source, or the values of the names asked for, in
 * that order (for $(seacachectl defaults SC_CSI_PORT)).
 */
static int cmd_defaults(char **names, int n, bool json)
{
	size_t i;
	int k;

	for (k = 0; k < n; k++)
		if (!default_find(names[k])) {
			fprintf(stderr, "seacachectl: no default named '%s' (seacachectl defaults lists them)\n",
				names[k]);
			return EXIT_OPERATIONAL;
		}
	if (json) {
		printf("{");
		for (i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++)
			printf("%s\"%s\": %llu", i ? ", " : "",
			       defaults[i].name, defaults[i].value);
		printf("}\n");
	} else if (n) {
		for (k = 0; k < n; k++)
			printf("%llu\n", default_find(names[k])->value);
	} else {
		for (i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++)
			printf("%s=%llu\n", defaults[i].name, defaults[i].value);
	}
	return EXIT_CLEAN;
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

/*
 * Counters print from one table whoever gave them, a CSI service's STATS
 * answer or a mount's sysfs files: human (aligned, byte counts also in
 * IEC units), JSON, or Prometheus text.
 */

/* A name with a text value: a Prometheus label, a mount's policy. */
struct named_text {
	const char *name;
	struct csi_bytes value;
};

static struct csi_bytes str_bytes(const char *s)
{
	return (struct csi_bytes){ .p = (const uint8_t *)s,
				   .len = (uint32_t)strlen(s) };
}

/* s in double quotes, escaped for JSON or for a Prometheus label value. */
static void put_quoted(struct csi_bytes s, bool json)
{
	putchar('"');
	for (uint32_t i = 0; i < s.len; i++) {
		unsigned char ch = s.p[i];

		if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else if (ch == '\n')
			fputs("\\n", stdout);
		else if (json && ch < 0x20)
			printf("\\u%04x", ch);
		else
			putchar(ch);
	}
	putchar('"');
}

static bool counts_bytes(const struct csi_bytes *name)
{
	static const char unit[] = "bytes";

	for (uint32_t i = 0; i + sizeof(unit) - 1 <= name->len; i++)
		if (!memcmp(name->p + i, unit, sizeof(unit) - 1))
			return true;
	return false;
}

static void print_counters(const struct csi_counter *c, uint32_t n,
			   const char *indent)
{
	static const char *const iec[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };

	for (uint32_t i = 0; i < n; i++) {
		double v = (double)c[i].value / 1024;
		unsigned int u = 0;

		printf("%s%-32.*s %" PRIu64, indent, (int)c[i].name.len,
		       (const char *)c[i].name.p, c[i].value);
		if (counts_bytes(&c[i].name) && c[i].value >= 1024) {
			for (; v >= 1024 && u + 1 < sizeof(iec) / sizeof(iec[0]); u++)
				v /= 1024;
			printf(" (%.1f %s)", v, iec[u]);
		}
		putchar('\n');
	}
}

static void print_texts(const struct named_text *t, uint32_t n,
			const char *indent)
{
	for (uint32_t i = 0; i < n; i++)
		printf("%s%-32s %.*s\n", indent, t[i].name, (int)t[i].value.len,
		       (const char *)t[i].value.p);
}

static void json_counters(const struct csi_counter *c, uint32_t n)
{
	putchar('{');
	for (uint32_t i = 0; i < n; i++) {
		if (i)
			putchar(',');
		put_quoted(c[i].name, true);
		printf(":%" PRIu64, c[i].value);
	}
	putchar('}');
}

static void json_texts(const struct named_text *t, uint32_t n)
{
	putchar('{');
	for (uint32_t i = 0; i < n; i++) {
		if (i)
			putchar(',');
		put_quoted(str_bytes(t[i].name), true);
		putchar(':');
		put_quoted(t[i].value, true);
	}
	putchar('}');
}

static void prom_labels(const struct named_text *l, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		printf("%s%s=", i ? "," : "{", l[i].name);
		put_quoted(l[i].value, false);
	}
	if (n)
		putchar('}');
}

/* One sample per counter, named prefix + the counter's name in [a-z0-9_]. */
static void prom_counters(const struct csi_counter *c, uint32_t n,
			  const char *prefix, const struct named_text *labels,
			  uint32_t nlabels)
{
	for (uint32_t i = 0; i < n; i++) {
		fputs(prefix, stdout);
		for (uint32_t j = 0; j < c[i].name.len; j++) {
			char ch = (char)c[i].name.p[j];

			putchar((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ?
				ch : '_');
		}
		prom_labels(labels, nlabels);
		printf(" %" PRIu64 "\n", c[i].value);
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
			printf("%s{\"host\":%" PRIu64 ",\"name\":", i ? "," : "",
			       r.hosts[i].host);
			put_quoted(r.hosts[i].host_name, true);
			printf(",\"counters\":");
			json_counters(r.hosts[i].counters, r.hosts[i].ncounters);
			printf("}");
		}
		printf("]}\n");
	} else if (prom) {
		prom_counters(r.counters, r.ncounters, "seacache_csi_", NULL, 0);
		for (uint32_t i = 0; i < r.nhosts; i++) {
			struct named_text l[2];
			char id[24];

			snprintf(id, sizeof(id), "%" PRIu64, r.hosts[i].host);
			l[0] = (struct named_text){ "host", str_bytes(id) };
			l[1] = (struct named_text){ "host_name",
						    r.hosts[i].host_name };
			prom_counters(r.hosts[i].counters, r.hosts[i].ncounters,
				      "seacache_csi_", l, 2);
		}
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

/* ---- stats --mount: a seacache.ko or seacache-fuse mount's files ------- */

/*
 * /proc/self/mountinfo and seacache.ko's sysfs directory, or a test's
 * fixture tree in their place.
 */
static const char *env_or(const char *name, const char *dflt)
{
	const char *v = getenv(name);

	return v && *v ? v : dflt;
}

/* mountinfo writes space, tab, newline and backslash as \ooo: undo that. */
static void unescape_octal(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' &&
		    s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 |
				      (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

/*
 * The device number (major:minor) of the seacache file system mounted at
 * dir, and dir's canonical path (*real, to free).  Of several mounts on
 * one directory the last listed is on top.
 */
static int mount_device(const char *dir, char **realp, char *dev,
			size_t devlen, bool *fuse)
{
	const char *path = env_or("SEACACHE_MOUNTINFO", "/proc/self/mountinfo");
	char *real = realpath(dir, NULL), *line = NULL, fstype[64] = "";
	size_t cap = 0;
	FILE *f;

	if (!real) {
		fprintf(stderr, "seacachectl: %s: %s\n", dir, strerror(errno));
		return EXIT_OPERATIONAL;
	}
	f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "seacachectl: %s: %s\n", path, strerror(errno));
		free(real);
		return EXIT_OPERATIONAL;
	}
	/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE ... */
	while (getline(&line, &cap, f) > 0) {
		char *save, *field[5], *t;
		int i;

		for (i = 0, t = strtok_r(line, " \n", &save); t && i < 5;
		     t = strtok_r(NULL, " \n", &save))
			field[i++] = t;
		if (i < 5)
			continue;
		unescape_octal(field[4]);
		if (strcmp(field[4], real))
			continue;
		while (t && strcmp(t, "-"))
			t = strtok_r(NULL, " \n", &save);
		t = t ? strtok_r(NULL, " \n", &save) : NULL;
		snprintf(fstype, sizeof(fstype), "%s", t ? t : "?");
		snprintf(dev, devlen, "%s", field[2]);
	}
	free(line);
	fclose(f);
	*fuse = !strcmp(fstype, SC_FUSE_FSTYPE);
	if (strcmp(fstype, SEACACHE_FSTYPE) && !*fuse) {
		if (*fstype)
			fprintf(stderr, "seacachectl: %s is not a seacache mount (%s is mounted there)\n",
				real, fstype);
		else
			fprintf(stderr, "seacachectl: %s is not a mount point (give the directory a seacache file system is mounted on)\n",
				real);
		free(real);
		return EXIT_OPERATIONAL;
	}
	*realp = real;
	return EXIT_CLEAN;
}

/*
 * A mount's statistics: the files holding a number, and the others with
 * the mount itself first (the labels of its Prometheus info metric).
 */
struct mount_stats {
	struct csi_counter *counters;
	uint32_t ncounters;
	struct named_text *texts;	/* mount, then policy, variant, ... */
	uint32_t ntexts;
};

static void mount_stats_free(struct mount_stats *ms)
{
	for (uint32_t i = 0; i < ms->ncounters; i++)
		free((void *)ms->counters[i].name.p);
	for (uint32_t i = 1; i < ms->ntexts; i++) {
		free((void *)ms->texts[i].name);
		free((void *)ms->texts[i].value.p);
	}
	free(ms->counters);
	free(ms->texts);
}

/* The value of one sysfs file, without its newline; NULL after an error. */
static char *read_value(int dirfd, const char *name)
{
	char buf[4096];
	struct stat st;
	ssize_t n;
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		errno = EISDIR;
		return NULL;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return NULL;
	while (n > 0 && buf[n - 1] == '\n')
		n--;
	buf[n] = '\0';
	return strdup(buf);
}

/* Every file of dir, sorted by name. */
static int mount_stats_read(const char *dir, const char *mnt,
			    struct mount_stats *ms)
{
	struct dirent **ents = NULL;
	int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int n = dirfd < 0 ? -1 : scandir(dir, &ents, NULL, alphasort);
	int rc = EXIT_OPERATIONAL;

	memset(ms, 0, sizeof(*ms));
	if (n < 0) {
		fprintf(stderr, "seacachectl: %s: %s (where the mount keeps its statistics)\n",
			dir, strerror(errno));
		goto out;
	}
	ms->counters = calloc((size_t)n + 1, sizeof(*ms->counters));
	ms->texts = calloc((size_t)n + 1, sizeof(*ms->texts));
	if (!ms->counters || !ms->texts) {
		fprintf(stderr, "seacachectl: out of memory\n");
		goto out;
	}
	ms->texts[ms->ntexts++] = (struct named_text){ "mount", str_bytes(mnt) };
	for (int i = 0; i < n; i++) {
		const char *name = ents[i]->d_name;
		char *value, *end, *copy;
		unsigned long long v;

		if (name[0] == '.')
			continue;
		value = read_value(dirfd, name);
		copy = strdup(name);
		if (!value || !copy) {
			fprintf(stderr, "seacachectl: %s/%s: %s\n", dir, name,
				strerror(errno));
			free(value);
			free(copy);
			goto out;
		}
		errno = 0;
		v = strtoull(value, &end, 10);
		if (*value >= '0' && *value <= '9' && !*end && !errno) {
			ms->counters[ms->ncounters++] = (struct csi_counter){
				.name = str_bytes(copy), .value = v };
			free(value);
		} else {
			ms->texts[ms->ntexts++] = (struct named_text){
				.name = copy, .value = str_bytes(value) };
		}
	}
	rc = EXIT_CLEAN;
out:
	if (dirfd >= 0)
		close(dirfd);
	for (int i = 0; i < n; i++)
		free(ents[i]);
	free(ents);
	if (rc)
		mount_stats_free(ms);
	return rc;
}

static int cmd_stats_mount(const char *dir_arg, bool json, bool prom)
{
	char dev[32], dir[4096], *mnt;
	struct mount_stats ms;
	bool fuse;
	int rc = mount_device(dir_arg, &mnt, dev, sizeof(dev), &fuse);

	if (rc)
		return rc;
	snprintf(dir, sizeof(dir), "%s/%s",
		 fuse ? env_or("SEACACHE_FUSE_STATS_ROOT", SC_FUSE_STATS_DIR) :
			env_or("SEACACHE_SYSFS_ROOT", "/sys/fs/seacache"), dev);
	rc = mount_stats_read(dir, mnt, &ms);
	if (rc) {
		free(mnt);
		return rc;
	}
	if (json) {
		printf("{\"mount\":");
		put_quoted(ms.texts[0].value, true);
		printf(",\"device\":\"%s\",\"counters\":", dev);
		json_counters(ms.counters, ms.ncounters);
		printf(",\"settings\":");
		json_texts(ms.texts + 1, ms.ntexts - 1);
		printf("}\n");
	} else if (prom) {
		prom_counters(ms.counters, ms.ncounters, "seacache_", ms.texts, 1);
		/* the settings as the labels of an info metric, the usual way */
		printf("seacache_mount_info");
		prom_labels(ms.texts, ms.ntexts);
		printf(" 1\n");
	} else {
		printf("seacache mount %s (device %s, %s)\n", mnt, dev, dir);
		print_counters(ms.counters, ms.ncounters, "  ");
		print_texts(ms.texts + 1, ms.ntexts - 1, "  ");
	}
	mount_stats_free(&ms);
	free(mnt);
	return EXIT_CLEAN;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "repair", no_argument, NULL, 'r' },
		{ "server", required_argument, NULL, 's' },
		{ "mount", required_argument, NULL, 'm' },
		{ "prometheus", no_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool json = false, repair = false, prom = false;
	const char *cmd, *dir, *server = NULL, *mount = NULL;
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
		case 'm':
			mount = optarg;
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
	if (server || mount || prom) {
		if (!server == !mount || argc - optind != 1 ||
		    strcmp(argv[optind], "stats") || (json && prom)) {
			fprintf(stderr, "seacachectl: usage: seacachectl stats --server HOST:PORT|--mount DIR [--json|--prometheus]\n");
			return EXIT_OPERATIONAL;
		}
		return server ? cmd_stats_server(server, json, prom) :
				cmd_stats_mount(mount, json, prom);
	}
	if (optind < argc && strcmp(argv[optind], "defaults") == 0) {
		if (repair || (json && argc - optind > 1)) {
			fprintf(stderr, "seacachectl: usage: seacachectl defaults [NAME...] [--json]\n");
			return EXIT_OPERATIONAL;
		}
		return cmd_defaults(argv + optind + 1, argc - optind - 1, json);
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
	fprintf(stderr, "seacachectl: unknown command '%s' (stats, fsck, gc, defaults)\n", cmd);
	return EXIT_OPERATIONAL;
}
