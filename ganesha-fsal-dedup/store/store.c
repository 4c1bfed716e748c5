// SPDX-License-Identifier: LGPL-3.0-or-later
/*
 * Opening, closing and inspecting a store; reclaiming dead slots; the
 * CSI-Map queries.
 *
 * Layout of a store directory:
 *   index/data.mdb, index/lock.mdb   the LMDB index
 *   containers/NNNNNNNN.dat          chunk data
 *   lock                             flock: one writer (or many readers)
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dstore_int.h"

void dstore_params_default(struct dstore_params *p)
{
	memset(p, 0, sizeof(*p));
	p->block_size = DSTORE_BLOCK_SIZE_DEFAULT;
	p->map_size = DSTORE_MAP_SIZE_DEFAULT;
	p->container_size = DSTORE_CONTAINER_SIZE_DEFAULT;
	p->max_readers = DSTORE_MAX_READERS_DEFAULT;
	p->verify_reads = true;
	p->reclaim_interval_ms = DSTORE_RECLAIM_INTERVAL_DEFAULT;
	p->writeback_bytes = DSTORE_WRITEBACK_DEFAULT;
	p->writeback_interval_ms = DSTORE_WRITEBACK_INTERVAL_DEFAULT;
}

uint32_t dstore_block_size(const struct dstore *ds)
{
	return ds->bsize;
}

int dstore_epoch_next(struct dstore *ds, uint64_t now, uint64_t *epoch)
{
	uint64_t last = 0;
	struct wtxn w;
	int rc = wtxn_begin(ds, &w);

	if (rc)
		return rc;
	rc = meta_get(ds, w.txn, "epoch", &last, sizeof(last));
	*epoch = now > last ? now : last + 1;
	if (!rc || rc == -ENOENT)
		rc = meta_put(ds, w.txn, "epoch", epoch, sizeof(*epoch));
	rc = wtxn_end(&w, rc);
	return rc ? rc : dstore_sync(ds);
}

uint64_t dstore_id(const struct dstore *ds)
{
	return ds->id;
}

static int open_dbs(struct dstore *ds, MDB_txn *txn)
{
	struct {
		const char *name;
		MDB_dbi *dbi;
	} dbs[] = {
		{ "meta", &ds->db_meta },	{ "inode", &ds->db_inode },
		{ "dirent", &ds->db_dirent },	{ "dircookie", &ds->db_dircookie },
		{ "bmap", &ds->db_bmap },	{ "chunk", &ds->db_chunk },
		{ "csimap", &ds->db_csimap },	{ "dead", &ds->db_dead },
		{ "pending", &ds->db_pending },
	};
	unsigned int flags = ds->read_only ? 0 : MDB_CREATE;

	for (size_t i = 0; i < sizeof(dbs) / sizeof(dbs[0]); i++) {
		int rc = mdb_dbi_open(txn, dbs[i].name, flags, dbs[i].dbi);

		if (rc)
			return idx_err(ds, rc, dbs[i].name);
	}
	return 0;
}

/* A new store: superblock, cursors, counters and the root directory. */
static int store_format(struct dstore *ds, const struct dstore_params *p)
{
	struct super_rec sb = { .magic = DSTORE_MAGIC, .format = DSTORE_FORMAT,
				.block_size = p->block_size,
				.container_size = p->container_size,
				.created = (uint64_t)time(NULL) };
	struct inode_rec root = { .type = DSTORE_DIR, .mode = 0755,
				  .nlink = 2, .parent = DSTORE_ROOT_INO,
				  .next_cookie = DSTORE_COOKIE_FIRST };
	struct wtxn w = { .ds = ds };
	int rc = idx_err(ds, mdb_txn_begin(ds->env, NULL, 0, &w.txn), "format");

	if (rc)
		return rc;
	w.cur.next_ino = DSTORE_ROOT_INO + 1;
	if (getrandom(&sb.id, sizeof(sb.id), 0) != sizeof(sb.id))
		sb.id = (uint64_t)time(NULL) ^ (uint64_t)getpid() << 32;
	inode_touch(&root, 0xf);
	rc = meta_put(ds, w.txn, "super", &sb, sizeof(sb));
	if (!rc)
		rc = inode_put(&w, DSTORE_ROOT_INO, &root, NULL);
	return wtxn_end(&w, rc);
}

static int store_check_super(struct dstore *ds, const struct dstore_params *p,
			     const struct super_rec *sb, char *err,
			     size_t errlen)
{
	if (sb->magic != DSTORE_MAGIC) {
		snprintf(err, errlen, "%s is not a dedup store (magic %#llx)",
			 ds->dir, (unsigned long long)sb->magic);
		return -EINVAL;
	}
	if (sb->format != DSTORE_FORMAT) {
		/* 1: the block map without each block's slot and check */
		snprintf(err, errlen,
			 "%s is a dedup store of format %u; this SeaCache opens format %d only (its block map keeps each block's slot): make a new store and copy the files over",
			 ds->dir, sb->format, DSTORE_FORMAT);
		return -EINVAL;
	}
	if (!ds->read_only && p->block_size && sb->block_size != p->block_size) {
		snprintf(err, errlen,
			 "%s was created with Block_Size = %u; it cannot change: set Block_Size = %u or use a new store",
			 ds->dir, sb->block_size, sb->block_size);
		return -EINVAL;
	}
	ds->id = sb->id;
	ds->bsize = sb->block_size;
	ds->bshift = (unsigned int)__builtin_ctz(sb->block_size);
	ds->container_size = sb->container_size;
	ds->slots_per_container = sb->container_size / sb->block_size;
	return 0;
}

static int store_lock(struct dstore *ds, char *err, size_t errlen)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/lock", ds->dir);
	ds->lock_fd = open(path, (ds->read_only ? O_RDONLY : O_RDWR | O_CREAT) |
			   O_CLOEXEC, 0600);
	if (ds->lock_fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -errno;
	}
	/* inspection reads a live store: LMDB readers need no lock */
	if (!ds->read_only && flock(ds->lock_fd, LOCK_EX | LOCK_NB)) {
		snprintf(err, errlen,
			 "%s is in use by another process (a running ganesha.nfsd or seacachectl); stop it first",
			 ds->dir);
		return -EBUSY;
	}
	return 0;
}

/* The index in directory name of the store (formatted if new). */
static int store_open_index(struct dstore *ds, const struct dstore_params *p,
			    const char *name, char *err, size_t errlen)
{
	char path[PATH_MAX];
	struct super_rec sb;
	MDB_txn *txn;
	/*
	 * With the kernel's readahead: a cold READ's block map and chunk
	 * lookups fault the index in a run of pages at a time, not one
	 * 4 KiB page per lookup (cold sequential 1 MiB reads 0.30 -> 0.54 of
	 * FSAL_VFS, 128 KiB x 8 0.41 -> 0.80).
	 */
	unsigned int flags = MDB_NOTLS | MDB_NOMETASYNC;
	int rc;

	snprintf(path, sizeof(path), "%s/%s", ds->dir, name);
	if (!ds->read_only && mkdir(path, 0700) && errno != EEXIST) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -errno;
	}
	if (ds->read_only)
		flags |= MDB_RDONLY;
	rc = mdb_env_create(&ds->env);
	if (!rc)
		rc = mdb_env_set_maxdbs(ds->env, 9);
	if (!rc)
		rc = mdb_env_set_mapsize(ds->env, p->map_size);
	if (!rc)
		rc = mdb_env_set_maxreaders(ds->env, p->max_readers);
	if (!rc)
		rc = mdb_env_open(ds->env, path, flags, 0600);
	if (rc) {
		snprintf(err, errlen, "index %s: %s", path, mdb_strerror(rc));
		return rc == EACCES || rc == ENOENT ? -rc : -EIO;
	}
	/* readers of a process that died hold no snapshot any more */
	mdb_reader_check(ds->env, NULL);
	rc = mdb_txn_begin(ds->env, NULL, ds->read_only ? MDB_RDONLY : 0, &txn);
	if (rc) {
		snprintf(err, errlen, "index %s: %s", path, mdb_strerror(rc));
		return -EIO;
	}
	rc = open_dbs(ds, txn);
	if (!rc)
		rc = meta_get(ds, txn, "super", &sb, sizeof(sb));
	if (rc == -ENOENT && !ds->read_only) {
		/* a new store: format it, then read it back like any other */
		rc = idx_err(ds, mdb_txn_commit(txn), "create");
		if (!rc)
			rc = store_format(ds, p);
		/* the index file, then its directory, in the store for good */
		if (!rc)
			rc = dir_sync(ds, path);
		if (!rc)
			rc = dir_sync(ds, ds->dir);
		if (!rc)
			rc = idx_err(ds, mdb_txn_begin(ds->env, NULL, 0, &txn),
				     "open");
		if (rc) {
			snprintf(err, errlen, "%s: cannot create the store: %s",
				 ds->dir, strerror(-rc));
			return rc;
		}
		rc = meta_get(ds, txn, "super", &sb, sizeof(sb));
	}
	if (rc) {
		mdb_txn_abort(txn);
		snprintf(err, errlen, "%s: cannot read the store's superblock (%s)",
			 ds->dir, strerror(-rc));
		return rc;
	}
	rc = store_check_super(ds, p, &sb, err, errlen);
	if (!rc) {
		struct cursor_rec cur;

		rc = meta_get(ds, txn, "cursor", &cur, sizeof(cur));
		ds->next_slot = rc ? 0 : cur.next_slot;
	}
	/* committed even when read-only: the database handles live on */
	if (!rc)
		rc = idx_err(ds, mdb_txn_commit(txn), "open");
	else
		mdb_txn_abort(txn);
	ds->index_ready = rc == 0;
	return rc;
}

static void *reclaimer_main(void *arg)
{
	struct dstore *ds = arg;
	struct timespec until;
	int64_t n;

	pthread_mutex_lock(&ds->reclaimer_lock);
	while (!ds->reclaimer_stop) {
		dstore_deadline(&until, ds->reclaim_interval_ms);
		pthread_cond_timedwait(&ds->reclaimer_cond, &ds->reclaimer_lock,
				       &until);
		if (ds->reclaimer_stop)
			break;
		pthread_mutex_unlock(&ds->reclaimer_lock);
		n = pending_apply_all(ds);
		if (!n)
			n = dstore_reclaim(ds);
		if (n < 0)
			dstore_logf(ds, DSTORE_LOG_WARN,
				    "housekeeping failed (%s); retrying in %u ms",
				    strerror((int)-n), ds->reclaim_interval_ms);
		pthread_mutex_lock(&ds->reclaimer_lock);
	}
	pthread_mutex_unlock(&ds->reclaimer_lock);
	return NULL;
}

static int reclaimer_start(struct dstore *ds, uint32_t interval_ms)
{
	pthread_condattr_t ca;
	int rc;

	ds->reclaim_interval_ms = interval_ms;
	if (ds->read_only || interval_ms == 0)
		return 0;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	rc = pthread_cond_init(&ds->reclaimer_cond, &ca);
	pthread_condattr_destroy(&ca);
	if (rc)
		return -rc;
	rc = pthread_mutex_init(&ds->reclaimer_lock, NULL);
	if (!rc)
		rc = pthread_create(&ds->reclaimer, NULL, reclaimer_main, ds);
	if (rc) {
		pthread_cond_destroy(&ds->reclaimer_cond);
		return -rc;
	}
	ds->reclaimer_running = true;
	return 0;
}

static void reclaimer_stop(struct dstore *ds)
{
	if (!ds->reclaimer_running)
		return;
	pthread_mutex_lock(&ds->reclaimer_lock);
	ds->reclaimer_stop = true;
	pthread_cond_signal(&ds->reclaimer_cond);
	pthread_mutex_unlock(&ds->reclaimer_lock);
	pthread_join(ds->reclaimer, NULL);
	pthread_cond_destroy(&ds->reclaimer_cond);
	pthread_mutex_destroy(&ds->reclaimer_lock);
	ds->reclaimer_running = false;
}

/* The store's directory in its parent for good, once it made it. */
static int parent_sync(struct dstore *ds)
{
	char *parent = strdup(ds->dir);
	char *slash = parent ? strrchr(parent, '/') : NULL;
	int rc;

	if (!parent)
		return -ENOMEM;
	if (slash)
		slash[slash == parent] = '\0';	/* "/x": the root */
	rc = dir_sync(ds, slash ? parent : ".");
	free(parent);
	return rc;
}

/*
 * A new store's index is made whole in index.new and then renamed to
 * index: a power cut while LMDB writes its first pages would otherwise
 * leave an index file LMDB refuses to open (and the store with it).  What
 * such a cut leaves of index.new is removed here.
 */
static int store_create_index(struct dstore *ds, const struct dstore_params *p,
			      char *err, size_t errlen)
{
	static const char *const files[] = { "data.mdb", "lock.mdb" };
	char tmp[PATH_MAX], final[PATH_MAX], f[PATH_MAX + 16];
	struct stat st;
	int rc;

	snprintf(final, sizeof(final), "%s/index", ds->dir);
	snprintf(f, sizeof(f), "%s/data.mdb", final);
	if (stat(f, &st) == 0)
		return 0;	/* formatted: opened as it is */
	snprintf(tmp, sizeof(tmp), "%s/index.new", ds->dir);
	/* and an index directory without data.mdb, as stores made before
	 * index.new was could leave */
	for (int d = 0; d < 2; d++) {
		for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
			snprintf(f, sizeof(f), "%s/%s", d ? final : tmp, files[i]);
			if (unlink(f) && errno != ENOENT)
				goto fail;
		}
		if (rmdir(d ? final : tmp) && errno != ENOENT)
			goto fail;
	}
	rc = store_open_index(ds, p, "index.new", err, errlen);
	if (!rc)
		rc = idx_err(ds, mdb_env_sync(ds->env, 1), "index sync");
	mdb_env_close(ds->env);
	ds->env = NULL;
	ds->index_ready = false;
	if (rc)
		return rc;
	if (rename(tmp, final))
		goto fail;
	return dir_sync(ds, ds->dir);
fail:
	rc = -errno;
	snprintf(err, errlen, "%s: cannot create the store's index: %s",
		 ds->dir, strerror(-rc));
	return rc;
}

int dstore_open(const char *dir, const struct dstore_params *p,
		struct dstore **out, char *err, size_t errlen)
{
	char dummy[8];
	struct dstore *ds;
	bool made_dir;
	int rc;

	if (!err) {
		err = dummy;
		errlen = sizeof(dummy);
	}
	err[0] = '\0';
	if (p->block_size == 0 || p->read_only) {
		/* inspection and repair: an existing store only */
		struct stat st;
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/index/data.mdb", dir);
		if (stat(path, &st)) {
			snprintf(err, errlen, "%s is not a SeaCache dedup store (no %s)",
				 dir, path);
			return -ENOENT;
		}
	} else if (!sc_block_size_valid(p->block_size)) {
		snprintf(err, errlen,
			 "Block_Size = %u is invalid: a power of two from %u to %u",
			 p->block_size, SC_BLOCK_SIZE_MIN, SC_BLOCK_SIZE_MAX);
		return -EINVAL;
	} else if (p->container_size < p->block_size ||
		   p->container_size % p->block_size) {
		snprintf(err, errlen,
			 "Container_Size = %llu must be a multiple of Block_Size = %u",
			 (unsigned long long)p->container_size, p->block_size);
		return -EINVAL;
	}
	if (p->map_size < DSTORE_MAP_SIZE_MIN) {
		snprintf(err, errlen, "Index_Map_Size = %llu is too small: at least %llu",
			 (unsigned long long)p->map_size,
			 (unsigned long long)DSTORE_MAP_SIZE_MIN);
		return -EINVAL;
	}
	made_dir = !p->read_only && mkdir(dir, 0700) == 0;
	if (!p->read_only && !made_dir && errno != EEXIST) {
		snprintf(err, errlen, "cannot create the store directory %s: %s",
			 dir, strerror(errno));
		return -errno;
	}
	ds = calloc(1, sizeof(*ds));
	if (!ds || !(ds->dir = strdup(dir))) {
		free(ds);
		return -ENOMEM;
	}
	ds->read_only = p->read_only;
	ds->verify_reads = p->verify_reads;
	ds->log = p->log;
	ds->log_ctx = p->log_ctx;
	ds->lock_fd = -1;
	rc = pthread_mutex_init(&ds->cont_lock, NULL) ||
	     pthread_mutex_init(&ds->fresh_lock, NULL) ||
	     pthread_mutex_init(&ds->write_lock, NULL) ? -ENOMEM : 0;
	if (!rc)
		rc = hashers_init(ds);
	if (!rc)
		rc = data_init(ds);
	if (!rc)
		rc = wb_init(ds, p->writeback_bytes > DSTORE_WRITEBACK_MIN ?
				 p->writeback_bytes : DSTORE_WRITEBACK_MIN,
			     p->writeback_interval_ms ?
				     p->writeback_interval_ms :
				     DSTORE_WRITEBACK_INTERVAL_DEFAULT);
	if (rc) {
		snprintf(err, errlen, "cannot initialize locks: %s", strerror(-rc));
		free(ds->dir);
		free(ds);
		return rc;
	}
	rc = store_lock(ds, err, errlen);
	if (!rc && !ds->read_only)
		rc = store_create_index(ds, p, err, errlen);
	if (!rc)
		rc = store_open_index(ds, p, "index", err, errlen);
	if (!rc)
		rc = containers_open(ds);
	if (!rc && made_dir)
		rc = parent_sync(ds);
	/* what a crash left pending: fresh chunks live in memory only */
	if (!rc && !ds->read_only)
		rc = pending_apply_all(ds);
	if (!rc)
		rc = reclaimer_start(ds, p->reclaim_interval_ms);
	if (!rc && !ds->read_only)
		rc = wb_start(ds);
	if (rc) {
		if (!err[0])
			snprintf(err, errlen, "%s: %s", dir, strerror(-rc));
		dstore_close(ds);
		return rc;
	}
	*out = ds;
	return 0;
}

void dstore_close(struct dstore *ds)
{
	if (!ds)
		return;
	if (wb_stop(ds))
		dstore_logf(ds, DSTORE_LOG_ERROR,
			    "closing: the writes held could not be indexed");
	reclaimer_stop(ds);
	if (ds->env) {
		if (ds->index_ready && !ds->read_only) {
			struct wtxn w;

			/* apply what is pending, fold in-memory counts in,
			 * then make it all durable */
			if (wtxn_begin(ds, &w) == 0)
				wtxn_end(&w, pending_apply(&w));
			dstore_sync(ds);
		}
		mdb_env_close(ds->env);
	}
	containers_close(ds);
	fresh_free_all(ds);
	if (ds->lock_fd >= 0)
		close(ds->lock_fd);
	hashers_fini(ds);
	wb_fini(ds);
	data_fini(ds);
	pthread_mutex_destroy(&ds->cont_lock);
	pthread_mutex_destroy(&ds->fresh_lock);
	pthread_mutex_destroy(&ds->write_lock);
	free(ds->dir);
	free(ds);
}

int dstore_stats(struct dstore *ds, struct dstore_stats *out)
{
	struct counter_rec c;
	MDB_envinfo info;
	MDB_stat st;
	MDB_dbi dbis[] = { ds->db_meta, ds->db_inode, ds->db_dirent,
			   ds->db_dircookie, ds->db_bmap, ds->db_chunk,
			   ds->db_csimap, ds->db_dead, ds->db_pending };
	MDB_txn *txn;
	/* counts what is indexed: the writes held first */
	int rc = ds->read_only ? 0 : wb_flush(ds);

	if (!rc)
		rc = rtxn_begin(ds, &txn);
	if (rc)
		return rc;
	memset(out, 0, sizeof(*out));
	rc = meta_get(ds, txn, "counters", &c, sizeof(c));
	for (size_t i = 0; !rc && i < sizeof(dbis) / sizeof(dbis[0]); i++) {
		uint64_t bytes;

		rc = idx_err(ds, mdb_stat(txn, dbis[i], &st), "stat");
		bytes = (uint64_t)st.ms_psize * (st.ms_branch_pages +
						 st.ms_leaf_pages +
						 st.ms_overflow_pages);
		out->index_bytes += bytes;
		if (dbis[i] == ds->db_chunk || dbis[i] == ds->db_dead)
			out->index_chunk_bytes += bytes;
		if (dbis[i] == ds->db_bmap || dbis[i] == ds->db_csimap ||
		    dbis[i] == ds->db_pending)
			out->index_map_bytes += bytes;
	}
	if (!rc)
		rc = idx_err(ds, mdb_stat(txn, 0, &st), "stat");
	if (!rc)
		out->index_bytes += (uint64_t)st.ms_psize *
				    (st.ms_branch_pages + st.ms_leaf_pages);
	mdb_txn_abort(txn);
	if (rc)
		return rc;
	mdb_env_info(ds->env, &info);
	mdb_env_stat(ds->env, &st);
	out->index_file_bytes = (uint64_t)(info.me_last_pgno + 1) * st.ms_psize;
	out->block_size = ds->bsize;
	out->files = c.files;
	out->logical_bytes = c.logical_bytes;
	out->logical_blocks = c.logical_blocks;
	out->mapped_blocks = c.mapped_blocks;
	out->chunks = c.chunks;
	out->physical_bytes = c.chunks * ds->bsize;
	out->dead_slots = c.dead_slots;
	out->silent_writes = c.silent_writes + atomic_load(&ds->silent_pending);
	out->dedup_writes = c.dedup_writes;
	out->data_writes = c.data_writes;
	out->zero_writes = c.zero_writes;
	out->reclaimed_slots = c.reclaimed_slots;
	out->verify_failures = atomic_load(&ds->verify_failures);
	out->container_bytes = containers_disk_bytes(ds);
	return 0;
}

#define RECLAIM_BATCH 4096

/*
 * Punches up to RECLAIM_BATCH dead slots with every reader shut out (a
 * reader that looked a block up before it died may still be reading it),
 * then forgets them in a transaction of their own: the reclaim lock is
 * never held while waiting for the index writer, which holds it shared.
 */
static int64_t reclaim_batch(struct dstore *ds)
{
	uint64_t slots[RECLAIM_BATCH];
	size_t n = 0;
	MDB_cursor *cur;
	MDB_txn *txn;
	MDB_val k, v;
	struct wtxn w;
	int rc;

	pthread_rwlock_wrlock(&ds->reclaim_lock);
	rc = rtxn_begin(ds, &txn);
	if (!rc && !(rc = idx_err(ds, mdb_cursor_open(txn, ds->db_dead, &cur),
				  "cursor"))) {
		for (int r = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
		     r == 0 && n < RECLAIM_BATCH;
		     r = mdb_cursor_get(cur, &k, &v, MDB_NEXT))
			if (k.mv_size == 8)
				slots[n++] = sc_get_be64(k.mv_data);
		mdb_cursor_close(cur);
	}
	if (!rc)
		mdb_txn_abort(txn);
	for (size_t i = 0; !rc && i < n; i++)
		rc = slot_punch(ds, slots[i]);
	pthread_rwlock_unlock(&ds->reclaim_lock);
	if (rc || n == 0)
		return rc;

	rc = wtxn_begin(ds, &w);
	for (size_t i = 0; !rc && i < n; i++) {
		uint8_t kb[8];
		MDB_val kk = { sizeof(kb), kb };

		sc_put_be64(kb, slots[i]);
		rc = mdb_del(w.txn, ds->db_dead, &kk, NULL);
		if (rc == 0) {
			w.c.dead_slots--;
			w.c.reclaimed_slots++;
		}
		rc = rc == MDB_NOTFOUND ? 0 : idx_err(ds, rc, "dead slots");
	}
	rc = wtxn_end(&w, rc);
	return rc ? rc : (int64_t)n;
}

int64_t dstore_reclaim(struct dstore *ds)
{
	int64_t total = 0, n;

	if (ds->read_only)
		return -EROFS;
	while ((n = reclaim_batch(ds)) > 0)
		total += n;
	return n < 0 ? n : total;
}

int dstore_apply_pending(struct dstore *ds)
{
	/* the writes held make deltas too */
	int rc = wb_flush(ds);

	return rc ? rc : pending_apply_all(ds);
}

int dstore_block_hash(struct dstore *ds, uint64_t ino, uint64_t lbn,
		      struct sc_hash *out)
{
	struct dstore_attr a;
	uint8_t mapped;
	int rc = dstore_block_hashes(ds, ino, lbn, 1, out, &mapped, &a);

	return rc ? rc : mapped ? 0 : -ENODATA;
}

int dstore_block_hashes(struct dstore *ds, uint64_t ino, uint64_t lbn,
			uint32_t n, struct sc_hash *h, uint8_t *mapped,
			struct dstore_attr *attr)
{
	struct inode_rec ir;
	struct wb_range hr;
	MDB_txn *txn;
	int rc = wb_range_get(ds, ino, lbn, n, &hr);

	if (rc)
		return rc;
	rc = rtxn_begin(ds, &txn);
	if (rc)
		goto out;
	memset(mapped, 0, n);
	rc = inode_get(ds, txn, ino, &ir, NULL, 0);
	if (!rc)
		rc = bmap_range(ds, txn, ino, lbn, n, h, mapped);
	mdb_txn_abort(txn);
	if (!rc) {
		inode_to_attr(ino, &ir, attr);
		wb_attr_apply(&hr.a, attr);
	}
out:
	for (uint32_t i = 0; hr.a.held && i < n; i++) {
		if (!hr.held[i])
			continue;
		mapped[i] = hr.bufs[i] != NULL;
		if (hr.bufs[i])
			h[i] = hr.bufs[i]->h;
	}
	wb_range_put(&hr);
	return rc;
}

/*
 * CSI-Map entries are keyed by a hash prefix: with confirm, each
 * candidate is confirmed against its block map entry, so a prefix shared
 * by two contents never names a wrong block.
 */
static int csimap_walk(struct dstore *ds, const struct sc_hash *h,
		       unsigned int max, bool confirm, dstore_holder_fn fn,
		       void *ctx)
{
	uint8_t kb[CSIMAP_PREFIX + 16];
	MDB_val k = { sizeof(kb), kb }, v;
	MDB_cursor *cur;
	MDB_txn *txn;
	struct sc_hash got;
	int given = 0, rc = rtxn_begin(ds, &txn);

	if (rc)
		return rc;
	rc = idx_err(ds, mdb_cursor_open(txn, ds->db_csimap, &cur), "cursor");
	if (rc) {
		mdb_txn_abort(txn);
		return rc;
	}
	key_csimap(kb, h, 0, 0);
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
	     rc == 0 && (unsigned int)given < max;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		const uint8_t *kp = k.mv_data;
		uint64_t ino, lbn;

		if (k.mv_size != sizeof(kb) || memcmp(kp, h->b, CSIMAP_PREFIX))
			break;
		ino = sc_get_be64(kp + CSIMAP_PREFIX);
		lbn = sc_get_be64(kp + CSIMAP_PREFIX + 8);
		if (confirm && (bmap_get(ds, txn, ino, lbn, &got, NULL) ||
				!sc_hash_eq(&got, h)))
			continue;
		given++;
		if (fn(ctx, ino, lbn))
			break;
	}
	mdb_cursor_close(cur);
	mdb_txn_abort(txn);
	return rc == 0 || rc == MDB_NOTFOUND ? given : idx_err(ds, rc, "CSI-Map");
}

int dstore_csimap_lookup(struct dstore *ds, const struct sc_hash *h,
			 unsigned int max, dstore_holder_fn fn, void *ctx)
{
	return csimap_walk(ds, h, max, true, fn, ctx);
}

int dstore_csimap_candidates(struct dstore *ds, const struct sc_hash *h,
			     unsigned int max, dstore_holder_fn fn, void *ctx)
{
	return csimap_walk(ds, h, max, false, fn, ctx);
}
