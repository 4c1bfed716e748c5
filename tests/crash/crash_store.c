// SPDX-License-Identifier: BSD-2-Clause
/*
 * Power cuts on the dedup store.  A seeded workload runs on a new store
 * through the store API, in a child process preloaded with the crash
 * recorder (crashrec.c), which logs every change the store makes to its
 * files and every barrier; then crash states are built from the log
 * (crash_replay.c: a cut point, changes not yet durable lost or torn, the
 * model in its header comment) and each is checked: the store opens,
 * `fsck` finds no problem (no index entry naming a slot that does not
 * hold its content, reference counts and totals right), and every byte
 * whose durability was acknowledged before the cut reads back.
 *
 * The workload calls the store as FSAL_DEDUP's object handles do (dedup_*.c):
 * dstore_write with stable set for FILE_SYNC/DATA_SYNC WRITEs, dstore_sync
 * for COMMIT, dstore_write_blocks for the CSI service's WRITE,
 * dstore_setattr for a size change, dstore_remove and dstore_create;
 * plus what the housekeeper does (apply the pending deltas, then reclaim
 * dead slots), each of those alone, and restarts (close, open), each at seeded points, so a log and
 * its crash states are the same for the same seed.  Data comes from a
 * small pool of blocks (dedup), zeros (holes) and fresh bytes, in writes
 * aligned to blocks or not.  In-process rather than through ganesha and
 * NFS: the same store calls, at a thousand crash states a second rather
 * than one, and a deterministic log.
 *
 * What counts as acknowledged (the durability contract, as the FSAL
 * README states it): a stable write's bytes once it returned; everything
 * (data, sizes, creations, removals) once a dstore_sync that began after
 * it returned.  A byte then reads as its acknowledged value or as the
 * value of a later change that had begun before the cut; a byte nothing
 * acknowledged reads as one of the values it was ever given (or as
 * absent/zero).  Sizes are checked through the bytes: a byte past the end
 * counts as absent, and absent matches zero (a hole).
 *
 *   crash_store [--seed S] [--ops N] [--states N] [--shim LIB] [--dir D]
 *               [--keep] [--posix-dirs] [--claim-unstable-durable]
 *
 * --posix-dirs: directory entries durable only by an fsync of their
 * directory (crash_replay.c).  --claim-unstable-durable: the checker's own
 * check, which must fail: it takes an UNSTABLE write as acknowledged once
 * it returned, which the store does not promise.
 *   crash_store --replay LOG (--cut K | --cut-bytes B) [--seed S]
 *               [--posix-dirs] --out DIR
 *
 * --replay builds one crash state of a log recorded elsewhere (say of a
 * ganesha.nfsd run with the recorder preloaded: CRASHREC_DIR=<the store's
 * parent> CRASHREC_LOG=<log> LD_PRELOAD=libcrashrec.so), cut after K
 * records or where the log was B bytes long (a client stat()ing the log
 * when a COMMIT reply came gets B), half the changes not yet durable lost
 * and some torn.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <dlfcn.h>

#include <seacache/prng.h>

#include "crash_replay.h"
#include "crashlog.h"
#include "dstore.h"

#define BS 4096u
#define FILES 4
#define MAX_SIZE (24u * BS)
#define POOL 6
#define MARK_BEGIN 1
#define MARK_END 2

extern char **environ;

enum op_kind {
	OP_CREATE, OP_WRITE, OP_WRITE_BLOCKS, OP_COMMIT, OP_TRUNCATE,
	OP_REMOVE, OP_APPLY_PENDING, OP_RECLAIM, OP_HOUSEKEEP, OP_REOPEN,
};

struct op {
	enum op_kind kind;
	int file;
	uint64_t off, len;	/* a write's range; a truncation's size (off) */
	bool stable;
	uint8_t *data;
};

static struct {
	uint64_t seed;
	unsigned int n_ops;
	unsigned int states;
	const char *shim;
	const char *dir;
	bool keep;
	bool posix_dirs;
	bool claim_unstable;
	struct op *ops;
} T = { .seed = 1, .n_ops = 200, .states = 300, .shim = CRASHREC_SO };

/* The workload: a pure function of the seed. */
static void workload_make(void)
{
	static uint8_t pool[POOL][BS];
	bool exists[FILES] = { 0 };
	struct sc_prng r;

	sc_prng_seed(&r, T.seed);
	for (int i = 0; i < POOL; i++)
		sc_prng_fill(&r, pool[i], BS);
	T.ops = calloc(T.n_ops, sizeof(*T.ops));
	if (!T.ops)
		abort();
	for (unsigned int i = 0; i < T.n_ops; i++) {
		struct op *o = &T.ops[i];
		uint32_t what = sc_prng_below(&r, 100);

		o->file = (int)sc_prng_below(&r, FILES);
		if (!exists[o->file] && what < 80) {
			o->kind = OP_CREATE;
			exists[o->file] = true;
			continue;
		}
		if (what < 45) {
			bool aligned = sc_prng_below(&r, 2);

			o->kind = OP_WRITE;
			o->off = sc_prng_below(&r, MAX_SIZE / BS) * BS;
			o->len = (1 + sc_prng_below(&r, 6)) * BS;
			if (!aligned) {
				o->off += sc_prng_below(&r, BS);
				o->len -= sc_prng_below(&r, BS);
			}
			o->stable = sc_prng_below(&r, 4) == 0;
		} else if (what < 55) {
			o->kind = OP_WRITE_BLOCKS;
			o->off = sc_prng_below(&r, MAX_SIZE / BS) * BS;
			o->len = (1 + sc_prng_below(&r, 4)) * BS;
			o->stable = sc_prng_below(&r, 2) == 0;
		} else if (what < 67) {
			o->kind = OP_COMMIT;
		} else if (what < 74) {
			o->kind = OP_TRUNCATE;
			o->off = sc_prng_below(&r, MAX_SIZE);
		} else if (what < 80) {
			o->kind = OP_REMOVE;
			exists[o->file] = false;
		} else if (what < 85) {
			o->kind = OP_APPLY_PENDING;
		} else if (what < 90) {
			o->kind = OP_RECLAIM;
		} else if (what < 97) {
			o->kind = OP_HOUSEKEEP;
		} else {
			o->kind = OP_REOPEN;
		}
		if (o->kind != OP_WRITE && o->kind != OP_WRITE_BLOCKS)
			continue;
		if (o->off + o->len > MAX_SIZE)
			o->len = MAX_SIZE - o->off;
		o->data = malloc(o->len);
		if (!o->data)
			abort();
		for (uint64_t b = 0; b < o->len; b += BS) {
			uint64_t n = o->len - b < BS ? o->len - b : BS;
			uint32_t kind = sc_prng_below(&r, 10);

			if (kind < 5)
				memcpy(o->data + b, pool[sc_prng_below(&r, POOL)], n);
			else if (kind < 7)
				memset(o->data + b, 0, n);
			else
				sc_prng_fill(&r, o->data + b, n);
		}
	}
}

static void params(struct dstore_params *p)
{
	dstore_params_default(p);
	p->block_size = BS;
	p->map_size = DSTORE_MAP_SIZE_MIN;
	/* small containers: slots cross into new container files */
	p->container_size = 64 * BS;
	/*
	 * No thread of the store's own acts at a time of its choosing: the
	 * housekeeper's work happens as seeded operations instead, held
	 * writes are flushed by the calls that flush them (COMMIT, a stable
	 * write, SETATTR, close), not by the timer, so the log of a seed is
	 * the same every run
	 */
	p->reclaim_interval_ms = 0;
	p->writeback_interval_ms = 3600 * 1000;
}

static void store_log(void *ctx, int level, const char *msg)
{
	(void)ctx;
	if (level <= DSTORE_LOG_WARN)
		fprintf(stderr, "store: %s\n", msg);
}

static int store_open(const char *dir, struct dstore **ds)
{
	struct dstore_params p;
	char err[512];
	int rc;

	params(&p);
	p.log = store_log;
	rc = dstore_open(dir, &p, ds, err, sizeof(err));
	if (rc)
		fprintf(stderr, "open %s: %s\n", dir, err);
	return rc;
}

static int file_ino(struct dstore *ds, int f, uint64_t *ino)
{
	struct dstore_attr a;
	char name[16];
	int rc;

	snprintf(name, sizeof(name), "f%d", f);
	rc = dstore_lookup(ds, DSTORE_ROOT_INO, name, &a);
	*ino = a.ino;
	return rc;
}

#define CHECK(call)                                                          \
	do {                                                                 \
		long long rc_ = (long long)(call);                           \
		if (rc_ < 0) {                                               \
			fprintf(stderr, "op %u: %s: %s\n", i, #call,         \
				strerror((int)-rc_));                        \
			return 1;                                            \
		}                                                            \
	} while (0)

/* The child: the workload on a new store, every op between two marks. */
static int record(const char *dir)
{
	crashrec_mark_fn mark = (crashrec_mark_fn)dlsym(RTLD_DEFAULT,
							CRASHREC_MARK_SYMBOL);
	struct dstore *ds;
	struct dstore_attr a, pre;
	uint64_t ino;

	if (!mark) {
		fprintf(stderr, "the crash recorder is not preloaded\n");
		return 1;
	}
	if (store_open(dir, &ds))
		return 1;
	for (unsigned int i = 0; i < T.n_ops; i++) {
		struct op *o = &T.ops[i];
		struct dstore_new n = { .type = DSTORE_REG, .mode = 0644 };
		char name[16];

		snprintf(name, sizeof(name), "f%d", o->file);
		mark(MARK_BEGIN, i);
		switch (o->kind) {
		case OP_CREATE:
			CHECK(dstore_create(ds, DSTORE_ROOT_INO, name, &n, &a));
			break;
		case OP_WRITE:
			CHECK(file_ino(ds, o->file, &ino));
			CHECK(dstore_write(ds, ino, o->off, o->data, o->len,
					   o->stable, NULL));
			break;
		case OP_WRITE_BLOCKS: {
			struct dstore_wblocks w = {
				.lbn = o->off / BS, .n = (uint32_t)(o->len / BS),
				.buf = o->data, .end = o->off + o->len,
				.stable = o->stable,
			};

			CHECK(file_ino(ds, o->file, &ino));
			CHECK(dstore_write_blocks(ds, ino, &w, &pre, &a));
			break;
		}
		case OP_COMMIT:
			CHECK(dstore_sync(ds));
			break;
		case OP_TRUNCATE:
			a.size = o->off;
			CHECK(file_ino(ds, o->file, &ino));
			CHECK(dstore_setattr(ds, ino, &a, DSTORE_SET_SIZE, NULL));
			break;
		case OP_REMOVE:
			CHECK(dstore_remove(ds, DSTORE_ROOT_INO, name));
			break;
		case OP_APPLY_PENDING:
			CHECK(dstore_apply_pending(ds));
			break;
		case OP_RECLAIM:
			CHECK(dstore_reclaim(ds));
			break;
		case OP_HOUSEKEEP:	/* as the housekeeper thread does */
			CHECK(dstore_apply_pending(ds));
			CHECK(dstore_reclaim(ds));
			break;
		case OP_REOPEN:
			dstore_close(ds);
			if (store_open(dir, &ds))
				return 1;
			break;
		}
		mark(MARK_END, i);
	}
	dstore_close(ds);
	return 0;
}

/* What the marks before a cut say: ops begun, ops returned. */
struct progress {
	unsigned int begun, ended;
};

static void progress_mark(void *ctx, uint64_t kind, uint64_t value)
{
	struct progress *p = ctx;

	if (kind == MARK_BEGIN)
		p->begun = (unsigned int)value + 1;
	else if (kind == MARK_END)
		p->ended = (unsigned int)value + 1;
}

/* Acknowledged durable before the cut: see the header comment. */
static bool acked(const struct progress *p, unsigned int last_commit_done,
		  unsigned int i)
{
	const struct op *o = &T.ops[i];

	if (i < last_commit_done)
		return true;
	return (o->kind == OP_WRITE || o->kind == OP_WRITE_BLOCKS) &&
	       (o->stable || T.claim_unstable) && i < p->ended;
}

/* A byte value: 0..255, or ABSENT (past the end, or no file). */
#define ABSENT (-1)

static bool same(int got, int want)
{
	return got == want || (want == ABSENT && got == 0);
}

/*
 * The file's bytes as read (ABSENT past the end) against every op on it
 * begun before the cut: a byte must match its last acknowledged value or
 * a later value.  The first byte that does not is described in why.
 */
static bool file_matches(const struct progress *p, unsigned int last_commit_done,
			 int f, const int *got, char *why, size_t whylen)
{
	static bool ok[MAX_SIZE];
	static unsigned int last_ack[MAX_SIZE];

	for (uint64_t b = 0; b < MAX_SIZE; b++) {
		ok[b] = got[b] == ABSENT;	/* before any op: no file */
		last_ack[b] = UINT_MAX;
	}
	for (unsigned int i = 0; i < p->begun; i++) {
		const struct op *o = &T.ops[i];
		bool ack = acked(p, last_commit_done, i);
		uint64_t from = 0, to = MAX_SIZE;

		if (o->file != f)
			continue;
		switch (o->kind) {
		case OP_WRITE:
		case OP_WRITE_BLOCKS:
			from = o->off;
			to = o->off + o->len;
			break;
		case OP_TRUNCATE:
			from = o->off;
			break;
		case OP_CREATE:
		case OP_REMOVE:
			break;
		default:
			continue;
		}
		for (uint64_t b = from; b < to; b++) {
			int v = o->kind == OP_WRITE || o->kind == OP_WRITE_BLOCKS ?
				o->data[b - o->off] : ABSENT;

			if (ack) {
				ok[b] = same(got[b], v);
				last_ack[b] = i;
			} else {
				ok[b] = ok[b] || same(got[b], v);
			}
		}
	}
	for (uint64_t b = 0; b < MAX_SIZE; b++) {
		if (ok[b])
			continue;
		if (last_ack[b] == UINT_MAX)
			snprintf(why, whylen,
				 "f%d byte %" PRIu64 " reads %d, a value never written to it",
				 f, b, got[b]);
		else
			snprintf(why, whylen,
				 "f%d byte %" PRIu64 " reads %d: op %u (acknowledged) or a later one wrote something else",
				 f, b, got[b], last_ack[b]);
		return false;
	}
	return true;
}

/* Opens the crash state's store and checks it; false with why. */
static bool state_check(const char *dir, const struct progress *p, char *why,
			size_t whylen)
{
	static uint8_t buf[MAX_SIZE];
	static int got[MAX_SIZE];
	unsigned int last_commit_done = 0;
	struct dstore_fsck_report rep;
	struct dstore *ds;
	bool good = true;
	int rc;

	for (unsigned int i = 0; i < p->ended; i++)
		if (T.ops[i].kind == OP_COMMIT)
			last_commit_done = i;
	if (store_open(dir, &ds)) {
		snprintf(why, whylen, "the store does not open");
		return false;
	}
	rc = dstore_fsck(ds, 0, &rep);
	if (rc || rep.problems) {
		snprintf(why, whylen, "fsck: %s, %" PRIu64 " problems",
			 strerror(-rc), rep.problems);
		good = false;
	}
	for (int f = 0; good && f < FILES; f++) {
		struct dstore_attr a;
		uint64_t ino;
		ssize_t n = 0;
		bool eof;

		rc = file_ino(ds, f, &ino);
		if (rc == 0)
			rc = dstore_getattr(ds, ino, &a);
		if (rc == 0 && a.size > MAX_SIZE) {
			snprintf(why, whylen, "f%d is %" PRIu64 " bytes long",
				 f, a.size);
			good = false;
			break;
		}
		if (rc == 0)
			n = dstore_read(ds, ino, 0, buf, MAX_SIZE, &eof);
		if ((rc && rc != -ENOENT) || n < 0 ||
		    (rc == 0 && (uint64_t)n != a.size)) {
			snprintf(why, whylen, "f%d: lookup or read failed: %s",
				 f, strerror(rc ? -rc : n < 0 ? (int)-n : EIO));
			good = false;
			break;
		}
		for (uint64_t b = 0; b < MAX_SIZE; b++)
			got[b] = b < (uint64_t)n ? buf[b] : ABSENT;
		good = file_matches(p, last_commit_done, f, got, why, whylen);
	}
	dstore_close(ds);
	return good;
}

/* Runs this program with --record under the recorder; 0 when it passed. */
static int record_child(const char *work, const char *log)
{
	char rec[512], store[PATH_MAX], seed[32], ops[32];
	char e_pre[PATH_MAX + 16], e_dir[PATH_MAX + 16], e_log[PATH_MAX + 16];
	char e_asan[512];
	const char *asan = getenv("ASAN_OPTIONS");
	char **env;
	size_t n_env = 0;
	pid_t pid;
	int st;

	snprintf(rec, sizeof(rec), "%s/rec", work);
	snprintf(store, sizeof(store), "%s/store", rec);
	if (mkdir(rec, 0700))
		return -1;
	snprintf(seed, sizeof(seed), "%" PRIu64, T.seed);
	snprintf(ops, sizeof(ops), "%u", T.n_ops);
	snprintf(e_pre, sizeof(e_pre), "LD_PRELOAD=%s", T.shim);
	snprintf(e_dir, sizeof(e_dir), "CRASHREC_DIR=%s", rec);
	snprintf(e_log, sizeof(e_log), "CRASHREC_LOG=%s", log);
	/* the preloaded recorder comes before the sanitizer's runtime */
	snprintf(e_asan, sizeof(e_asan), "ASAN_OPTIONS=%s%sverify_asan_link_order=0",
		 asan ? asan : "", asan ? ":" : "");
	while (environ[n_env])
		n_env++;
	env = calloc(n_env + 5, sizeof(*env));
	if (!env)
		return -1;
	n_env = 0;
	for (char **e = environ; *e; e++)
		if (strncmp(*e, "LD_PRELOAD=", 11) && strncmp(*e, "CRASHREC_", 9) &&
		    strncmp(*e, "ASAN_OPTIONS=", 13))
			env[n_env++] = *e;
	env[n_env++] = e_pre;
	env[n_env++] = e_dir;
	env[n_env++] = e_log;
	env[n_env++] = e_asan;
	{
		char *argv[] = { "crash_store", "--record", store, "--seed", seed,
				 "--ops", ops, NULL };

		if (posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv, env)) {
			free(env);
			return -1;
		}
	}
	free(env);
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		return -1;
	return 0;
}

static uint64_t state_seed(unsigned int s)
{
	return sc_mix64(T.seed * 0x9e3779b97f4a7c15ull + s + 1);
}

/* Crash state s of the log: its cut and options, from the seed. */
static void state_pick(unsigned int s, size_t n, size_t *cut,
		       struct crash_opts *o)
{
	static const double drops[] = { 0.0, 0.1, 0.5, 0.9, 1.0 };
	struct sc_prng g;

	sc_prng_seed(&g, state_seed(s));
	/*
	 * the first two: the whole log, all of it kept / none of it; then
	 * anywhere, one in eight in the first 64 records (the store's
	 * creation, a few records among thousands)
	 */
	if (s < 2)
		*cut = n;
	else if (sc_prng_below(&g, 8) == 0)
		*cut = (size_t)(sc_prng_next(&g) % ((n < 64 ? n : 64) + 1));
	else
		*cut = (size_t)(sc_prng_next(&g) % (n + 1));
	o->drop = s == 0 ? 0.0 : s == 1 ? 1.0 : drops[sc_prng_below(&g, 5)];
	o->tear = s >= 2 && (s & 1) ? 0.3 : 0.0;
	o->posix_dirs = T.posix_dirs;
}

static int run(void)
{
	char work[256], log[PATH_MAX], state[512], err[512];
	const char *base = T.dir ? T.dir :
			   access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	struct crash_log *l;
	unsigned int passed = 0, failed = 0;
	size_t n;

	if (strlen(base) > sizeof(work) - 32) {
		fprintf(stderr, "%s: too long a path\n", base);
		return 1;
	}
	snprintf(work, sizeof(work), "%s/crash-store-XXXXXX", base);
	if (!mkdtemp(work)) {
		perror(work);
		return 1;
	}
	snprintf(log, sizeof(log), "%s/log", work);
	if (record_child(work, log)) {
		fprintf(stderr, "the workload failed under the recorder (seed %" PRIu64 "); kept %s\n",
			T.seed, work);
		return 1;
	}
	l = crash_log_load(log, err, sizeof(err));
	if (!l) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	n = crash_log_len(l);
	for (unsigned int s = 0; s < T.states; s++) {
		struct crash_opts o;
		struct crash_info info;
		struct progress p = { 0 };
		char why[512];
		size_t cut;

		state_pick(s, n, &cut, &o);
		snprintf(state, sizeof(state), "%s/state-%u", work, s);
		if (crash_state_build(l, NULL, state, cut, state_seed(s), &o,
				      &info)) {
			fprintf(stderr, "state %u: cannot build it\n", s);
			failed++;
			continue;
		}
		crash_log_marks(l, cut, progress_mark, &p);
		snprintf(log, sizeof(log), "%s/store", state);
		if (state_check(log, &p, why, sizeof(why))) {
			passed++;
			crash_tree_remove(state);
			continue;
		}
		failed++;
		fprintf(stderr,
			"FAIL crash state %u (seed %" PRIu64 ", cut %zu of %zu records, op %u begun, %u returned; %zu durable, %zu kept, %zu torn, %zu lost): %s%s%s\n",
			s, T.seed, cut, n, p.begun, p.ended, info.forced,
			info.kept, info.torn, info.dropped, why,
			T.keep ? "; kept in " : "", T.keep ? state : "");
		if (!T.keep)
			crash_tree_remove(state);
	}
	crash_log_free(l);
	printf("crash states: %u checked, %u passed, %u failed (seed %" PRIu64 ", %u ops, %zu log records)\n",
	       passed + failed, passed, failed, T.seed, T.n_ops, n);
	if (!T.keep || !failed)
		crash_tree_remove(work);
	return failed ? 1 : 0;
}

/*
 * One crash state into out, for a look or another checker (say of a
 * recorded ganesha.nfsd's store); the cut in records, or as the log's size
 * in bytes.
 */
static int replay_one(const char *logp, const char *out, size_t cut,
		      uint64_t cut_bytes)
{
	struct crash_opts o = { .drop = 0.5, .tear = 0.3,
				.posix_dirs = T.posix_dirs };
	struct crash_info info;
	char err[512];
	struct crash_log *l = crash_log_load(logp, err, sizeof(err));
	int rc;

	if (!l) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	if (cut_bytes != UINT64_MAX)
		cut = crash_log_len_at(l, cut_bytes);
	rc = crash_state_build(l, NULL, out, cut, T.seed, &o, &info);
	printf("cut %zu of %zu records: %zu durable, %zu kept, %zu torn, %zu lost\n",
	       cut, crash_log_len(l), info.forced, info.kept, info.torn,
	       info.dropped);
	crash_log_free(l);
	return rc ? 1 : 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: crash_store [--seed S] [--ops N] [--states N] [--shim LIB] [--dir D] [--keep] [--posix-dirs]\n"
		"                   [--claim-unstable-durable]\n"
		"       crash_store --replay LOG (--cut K | --cut-bytes B) [--seed S] [--posix-dirs] --out DIR\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *record_dir = NULL, *replay = NULL, *out = NULL;
	size_t cut = SIZE_MAX;
	uint64_t cut_bytes = UINT64_MAX;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--keep")) {
			T.keep = true;
			continue;
		}
		if (!strcmp(a, "--posix-dirs")) {
			T.posix_dirs = true;
			continue;
		}
		if (!strcmp(a, "--claim-unstable-durable")) {
			T.claim_unstable = true;
			continue;
		}
		if (!v)
			usage();
		i++;
		if (!strcmp(a, "--seed"))
			T.seed = strtoull(v, NULL, 0);
		else if (!strcmp(a, "--ops"))
			T.n_ops = (unsigned int)strtoul(v, NULL, 0);
		else if (!strcmp(a, "--states"))
			T.states = (unsigned int)strtoul(v, NULL, 0);
		else if (!strcmp(a, "--shim"))
			T.shim = v;
		else if (!strcmp(a, "--dir"))
			T.dir = v;
		else if (!strcmp(a, "--record"))
			record_dir = v;
		else if (!strcmp(a, "--replay"))
			replay = v;
		else if (!strcmp(a, "--out"))
			out = v;
		else if (!strcmp(a, "--cut"))
			cut = strtoull(v, NULL, 0);
		else if (!strcmp(a, "--cut-bytes"))
			cut_bytes = strtoull(v, NULL, 0);
		else
			usage();
	}
	if (replay) {
		if (!out || (cut == SIZE_MAX) == (cut_bytes == UINT64_MAX))
			usage();
		return replay_one(replay, out, cut, cut_bytes);
	}
	workload_make();
	return record_dir ? record(record_dir) : run();
}
