/* SPDX-License-Identifier: LGPL-3.0-or-later */
/*
 * Inside the dedup store: on-disk records, the index transaction helpers
 * (index.c), the deferred index updates (delta.c, fresh.c, pending.c),
 * the container files (containers.c), the data path (block.c, intent.c,
 * data.c with its group commit), the namespace (namespace.c), the check
 * (fsck.c), and the helpers all of them share (util.c).  README.md says
 * which file calls which.
 *
 * Keys are big-endian so LMDB orders them numerically; values are in the
 * host's byte order (a store is not moved between architectures).
 */
#ifndef DEDUP_STORE_INT_H
#define DEDUP_STORE_INT_H

#include <lmdb.h>
#include <pthread.h>
#include <stdatomic.h>

#include <uthash.h>

#include "dstore.h"

#define DSTORE_MAGIC 0x5343445354523031ull	/* "SCDSTR01" */
/* 2: the block map keeps each block's slot and check (struct block_loc) */
#define DSTORE_FORMAT 2
#define DSTORE_NO_SLOT UINT64_MAX
/* Writers whose range has a partial block lock its file exclusively. */
#define DSTORE_WRITE_STRIPES 64
/* csimap keys carry this much of the hash; lookups confirm via bmap. */
#define CSIMAP_PREFIX 8

struct super_rec {
	uint64_t magic;
	uint32_t format;
	uint32_t block_size;
	uint64_t container_size;
	uint64_t created;
	uint64_t id;		/* random: names this store in NFS handles */
};

/* meta "cursor": allocation state */
struct cursor_rec {
	uint64_t next_ino;
	uint64_t next_slot;
	uint64_t next_pending;	/* key of the next pending-delta record */
	uint64_t pending_deltas; /* deltas not applied yet */
};

/* meta "counters": totals kept exact by every transaction */
struct counter_rec {
	uint64_t files;
	uint64_t logical_bytes;
	uint64_t logical_blocks;
	uint64_t mapped_blocks;
	uint64_t chunks;
	uint64_t dead_slots;
	uint64_t silent_writes;
	uint64_t dedup_writes;
	uint64_t data_writes;
	uint64_t zero_writes;
	uint64_t reclaimed_slots;
};

struct inode_rec {
	uint32_t type;
	uint32_t mode;
	uint32_t nlink;
	uint32_t uid;
	uint32_t gid;
	uint32_t pad;
	uint64_t size;
	uint64_t rdev;
	uint64_t blocks_mapped;
	uint64_t change;
	uint64_t parent;	/* directories: the one directory holding it */
	uint64_t next_cookie;	/* directories */
	int64_t time_s[4];	/* atime, mtime, ctime, btime */
	uint32_t time_ns[4];
	/* symlinks: the target follows, not NUL-terminated */
};

enum { T_ATIME, T_MTIME, T_CTIME, T_BTIME };

/*
 * check: the low 32 bits of the data's XXH3-64, verified on every read
 * (Verify_Reads) at memory speed; fsck recomputes the full SHA-256.
 */
struct chunk_rec {
	uint64_t slot;
	uint64_t refs;
	uint32_t check;
} __attribute__((packed));

/*
 * hashtab.c: a set of objects that begin with their struct sc_hash (so
 * the object's address is its hash's), found by that hash.  Not locked.
 * Iterate over s[0 .. cap) where obj is set (no adds or dels meanwhile).
 */
struct hash_slot {
	uint64_t key;		/* sc_hash_key64 of obj */
	struct sc_hash *obj;	/* NULL: free */
};
struct hash_table {
	struct hash_slot *s;
	size_t cap;		/* a power of two, or 0 */
	size_t n;
};
void *htab_find(const struct hash_table *t, const struct sc_hash *h);
/* Room for more objects added (each once, not yet in t) with htab_add. */
int htab_reserve(struct hash_table *t, size_t more);
void htab_add(struct hash_table *t, struct sc_hash *obj);
/* obj, which is in t, leaves it. */
void htab_del(struct hash_table *t, const struct sc_hash *obj);
/* The table's memory (not the objects'). */
void htab_free(struct hash_table *t);

/*
 * A chunk stored by a committed transaction whose chunk index insert is
 * still a pending delta: found here until the delta is applied.
 */
struct fresh_chunk {
	struct sc_hash h;	/* first: a hash_table object */
	struct chunk_rec c;
};

struct dstore {
	char *dir;
	MDB_env *env;
	MDB_dbi db_meta, db_inode, db_dirent, db_dircookie, db_bmap,
		db_chunk, db_csimap, db_dead, db_pending;
	uint32_t bsize;
	unsigned int bshift;
	uint64_t container_size;
	uint64_t slots_per_container;
	bool verify_reads;
	bool read_only;
	bool index_ready;	/* opened completely: close may write */
	uint64_t id;
	dstore_log_fn log;
	void *log_ctx;
	int lock_fd;

	/* containers.c: slot allocation and container files */
	pthread_mutex_t cont_lock;
	int *cont_fds;
	bool *cont_dirty;
	void **cont_maps;	/* PROT_READ maps for mincore, never touched */
	size_t n_cont;
	uint64_t next_slot;

	/* writeback.c: writes held in memory until a flush */
	pthread_mutex_t wb_lock;
	pthread_cond_t wb_cond;		/* a flush ended, or room was made */
	pthread_cond_t wb_kick;		/* the flusher has work */
	struct wb_file *wb_files;
	struct hash_table wb_held;	/* every content held (wb_buf) */
	uint64_t wb_bytes;		/* held by wb_held */
	/* buffers let go, reused by the next writes (wb_pool_lock) */
	pthread_mutex_t wb_pool_lock;
	struct wb_buf *wb_pool;
	size_t wb_pool_n;
	uint64_t wb_limit;
	uint32_t wb_interval_ms;
	uint64_t wb_seq;		/* the last write held */
	uint64_t wb_flushed;		/* every write up to it is indexed */
	bool wb_flushing;
	bool wb_stop;
	bool wb_flusher_running;
	pthread_t wb_flusher;

	/*
	 * Readers hold it shared from the index lookup to the end of their
	 * chunk reads; reclaim holds it exclusive while punching dead slots,
	 * so no reader reads a slot punched under it.
	 */
	pthread_rwlock_t reclaim_lock;
	pthread_rwlock_t write_stripe[DSTORE_WRITE_STRIPES];

	/* store.c: the online reclaimer */
	pthread_t reclaimer;
	bool reclaimer_running;
	bool reclaimer_stop;
	uint32_t reclaim_interval_ms;
	pthread_mutex_t reclaimer_lock;
	pthread_cond_t reclaimer_cond;

	/* index.c: one write transaction, with its aftermath, at a time */
	pthread_mutex_t write_lock;
	/* transactions committed, counted from 1 (0: never synced) */
	_Atomic uint64_t idx_commits;

	/*
	 * data.c: group commit.  Callers of dstore_sync take tickets in
	 * order; one sync at a time covers every ticket taken before it
	 * started, so concurrent COMMITs share its fdatasyncs.
	 */
	pthread_mutex_t sync_lock;
	pthread_cond_t sync_cond;	/* a sync ended */
	uint64_t sync_asked;		/* the last ticket taken */
	uint64_t sync_done;		/* every ticket up to it is durable */
	uint64_t idx_synced;		/* idx_commits the last sync covered */
	uint64_t syncs;			/* syncs run */
	uint64_t index_syncs;		/* of them, those that synced the index */
	bool syncing;

	/* fresh.c: fresh chunks; readers look here under reclaim_lock */
	pthread_mutex_t fresh_lock;
	struct hash_table fresh;	/* struct fresh_chunk */

	pthread_key_t hasher_key;
	/* counted in memory, folded into the counters by the next commit */
	_Atomic uint64_t silent_pending;
	_Atomic uint64_t verify_failures;
};

/* util.c */
void dstore_logf(struct dstore *ds, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* An LMDB return code as a negative errno, logged when it needs action. */
int idx_err(struct dstore *ds, int rc, const char *what);
/*
 * Makes the entries of directory path durable: a new file or directory is
 * in its parent for sure after a power cut only once the parent is synced.
 */
int dir_sync(struct dstore *ds, const char *path);
/* One hashing context per thread, made on first use (hashers_init). */
int hashers_init(struct dstore *ds);
void hashers_fini(struct dstore *ds);
struct sc_hasher *dstore_hasher(struct dstore *ds);
void dstore_now(struct timespec *ts);
/* ms from now on CLOCK_MONOTONIC (condition variables' clock). */
void dstore_deadline(struct timespec *ts, uint32_t ms);

/* index.c: keys, records, and a write transaction that keeps counters */
struct wtxn {
	struct dstore *ds;
	MDB_txn *txn;
	struct counter_rec c;
	struct cursor_rec cur;
	/* deltas of this transaction, one pending record at its end */
	uint8_t *delta;
	size_t delta_len, delta_cap;
	/* chunks this transaction stored: fresh once it commits */
	struct hash_table fresh_new;	/* struct fresh_chunk */
	/* fresh chunks this transaction put in the chunk index */
	struct sc_hash *applied;
	size_t n_applied, cap_applied;
	bool locked;		/* holds ds->write_lock */
};

int wtxn_begin(struct dstore *ds, struct wtxn *w);
void wtxn_abort(struct wtxn *w);
/* Commits, or aborts when rc < 0; returns rc or the commit's error. */
int wtxn_end(struct wtxn *w, int rc);
int rtxn_begin(struct dstore *ds, MDB_txn **txn);

void key_bmap(uint8_t out[16], uint64_t ino, uint64_t lbn);
void key_csimap(uint8_t out[CSIMAP_PREFIX + 16], const struct sc_hash *h,
		uint64_t ino, uint64_t lbn);

int meta_get(struct dstore *ds, MDB_txn *txn, const char *name, void *out,
	     size_t len);
int meta_put(struct dstore *ds, MDB_txn *txn, const char *name,
	     const void *v, size_t len);

/* The inode record and, for symlinks, its target (NUL-terminated in tgt). */
int inode_get(struct dstore *ds, MDB_txn *txn, uint64_t ino,
	      struct inode_rec *r, char *tgt, size_t tgtlen);
int inode_put(struct wtxn *w, uint64_t ino, const struct inode_rec *r,
	      const char *tgt);
void inode_to_attr(uint64_t ino, const struct inode_rec *r,
		   struct dstore_attr *a);
/* inode_get of a regular file: -EISDIR, -EINVAL for other types. */
int inode_regular(struct dstore *ds, MDB_txn *txn, uint64_t ino,
		  struct inode_rec *r);
void inode_touch(struct inode_rec *r, unsigned int which_mask);
uint64_t blocks_of(const struct dstore *ds, uint64_t size);

/*
 * Where a mapped block's content is: its chunk's slot and check, kept in
 * the block map beside the hash, so a read looks up no chunk by its hash.
 * The copy cannot go stale: a chunk keeps its slot while any block maps to
 * it (a slot is written once and punched only after its chunk is freed,
 * which needs the last mapping gone).
 */
struct block_loc {
	uint64_t slot;
	uint32_t check;
};

#define BMAP_GROUP 8
/* per mapped block: hash, slot, check */
#define BMAP_ENTRY (SC_HASH_LEN + 8 + 4)
struct bmap_group {
	uint8_t bits;		/* block i of the group is mapped */
	struct sc_hash h[BMAP_GROUP];
	struct block_loc loc[BMAP_GROUP];
};

#define BMAP_GROUP_MAX (1 + BMAP_GROUP * BMAP_ENTRY)
int group_decode(struct dstore *ds, const MDB_val *v, struct bmap_group *g);
/* Rewrites the group under cursor c (fsck). */
int group_write(struct wtxn *w, MDB_cursor *c, const struct bmap_group *g);

/* -ENODATA for a hole; loc may be NULL. */
int bmap_get(struct dstore *ds, MDB_txn *txn, uint64_t ino, uint64_t lbn,
	     struct sc_hash *h, struct block_loc *loc);
/* The mapped blocks of ino from lbn on, in order; -ENODATA at the end. */
struct bmap_iter {
	struct dstore *ds;
	MDB_cursor *cur;
	uint64_t ino;
	uint64_t next;
	uint64_t gno;
	struct bmap_group g;
	bool started;
};
int bmap_iter_start(struct dstore *ds, MDB_txn *txn, struct bmap_iter *it,
		    uint64_t ino, uint64_t lbn);
/* loc may be NULL */
int bmap_iter_next(struct bmap_iter *it, uint64_t *lbn, struct sc_hash *h,
		   struct block_loc *loc);
void bmap_iter_end(struct bmap_iter *it);
/* What blocks lbn .. lbn + n - 1 map to: h[i] where mapped[i]. */
int bmap_range(struct dstore *ds, MDB_txn *txn, uint64_t ino, uint64_t lbn,
	       size_t n, struct sc_hash *h, uint8_t *mapped);
/* The chunk index only. */
int chunk_get(struct dstore *ds, MDB_txn *txn, const struct sc_hash *h,
	      struct chunk_rec *c);
/*
 * Is content h stored, and where: the chunk index as txn sees it, the
 * fresh chunks, and (w not NULL) those w itself stored.  Readers hold
 * reclaim_lock shared from before txn began.
 */
int chunk_find(struct dstore *ds, MDB_txn *txn, const struct wtxn *w,
	       const struct sc_hash *h, struct chunk_rec *c);
/*
 * Makes sure content h is stored, for a mapping about to be made.  slot is
 * where the writer stored h's data (DSTORE_NO_SLOT if it relied on the
 * chunk being present); a slot not needed (another writer stored h first)
 * is marked dead.  -EAGAIN when h is neither stored nor given a slot (its
 * last reference went away since the writer looked).  loc: where h is
 * stored, for the mapping.
 */
int chunk_ref(struct wtxn *w, const struct sc_hash *h, uint64_t slot,
	      uint32_t check, struct block_loc *loc);
uint32_t chunk_checksum(const void *data, size_t len);
/* A block's new content (NULL: a hole) and where chunk_ref found it. */
struct block_change {
	uint64_t lbn;
	const struct sc_hash *h;
	struct block_loc loc;
};
/*
 * Maps each ch[i].lbn (ascending) to its content, which chunk_ref made sure
 * of; the reference counts and CSI-Map entries of the old and new contents
 * follow as pending deltas; the counters are exact at once.  Each block
 * map group is read and written once.
 */
int blocks_map(struct wtxn *w, struct inode_rec *ir, uint64_t ino,
	       const struct block_change *ch, size_t n);
int chunk_put(struct wtxn *w, const struct sc_hash *h,
	      const struct chunk_rec *c);
int slot_mark_dead(struct wtxn *w, uint64_t slot);
int csimap_set(struct wtxn *w, const struct sc_hash *h, uint64_t ino,
	       uint64_t lbn, bool present);

/*
 * delta.c: reference counts and CSI-Map entries, recorded to apply later;
 * an entry of a pending record starts with these flags (format: delta.c).
 */
#define DELTA_OLD 1u
#define DELTA_NEW 2u
#define DELTA_CHUNK 4u
#define DELTA_MAX (1 + 8 + 8 + 2 * SC_HASH_LEN)
int delta_add(struct wtxn *w, uint64_t ino, uint64_t lbn,
	      const struct sc_hash *old, const struct sc_hash *new_h);
int delta_add_chunk(struct wtxn *w, const struct sc_hash *h,
		    const struct chunk_rec *c);
int delta_flush(struct wtxn *w);
void delta_free(struct wtxn *w);

/* fresh.c */
bool fresh_find(struct dstore *ds, const struct wtxn *w,
		const struct sc_hash *h, struct chunk_rec *c);
int fresh_reserve(struct wtxn *w);
/* After w committed: publish its new chunks, retire the applied ones. */
void fresh_commit(struct wtxn *w);
/* Frees the objects of t (struct fresh_chunk) and t's memory. */
void fresh_table_free(struct hash_table *t);
void fresh_free_all(struct dstore *ds);

/* pending.c: the recorded deltas applied */
/*
 * Pending deltas that make a writer apply them in its batch (a test build
 * lowers it: tests/crash).
 */
#ifndef PENDING_APPLY_AT
#define PENDING_APPLY_AT (1u << 18)
#endif
/* Applies every pending delta inside w; or in a transaction of its own. */
int pending_apply(struct wtxn *w);
int pending_apply_all(struct dstore *ds);

/* chunk_ref, then blocks_map of one block. */
int block_set(struct wtxn *w, struct inode_rec *ir, uint64_t ino,
	      uint64_t lbn, const struct sc_hash *h, uint64_t slot,
	      uint32_t check);
/* Unmaps every block at or after first_lbn. */
int blocks_drop_from(struct wtxn *w, struct inode_rec *ir, uint64_t ino,
		     uint64_t first_lbn);
void size_account(struct wtxn *w, uint64_t old_size, uint64_t new_size);

/* containers.c */
int containers_open(struct dstore *ds);
void containers_close(struct dstore *ds);
/* Reserves n consecutive slots; returns the first. */
uint64_t slots_reserve(struct dstore *ds, uint64_t n);
/*
 * How slots_rw goes to the containers.  SLOT_READ_CACHED reads only what
 * is in the page cache: -EAGAIN, nothing read from the disk, if a block
 * is not (or the kernel cannot tell).
 */
enum slot_io { SLOT_READ, SLOT_READ_CACHED, SLOT_WRITE };
/* Reads or writes slots first .. first + n - 1, block i at bufs[i]. */
int slots_rw(struct dstore *ds, enum slot_io io, uint64_t first, size_t n,
	     void *const *bufs);
int slot_punch(struct dstore *ds, uint64_t slot);
/* fdatasync every container written since the last call. */
int containers_sync(struct dstore *ds);
uint64_t containers_disk_bytes(struct dstore *ds);

/* block.c */
bool block_is_zero(const uint8_t *p, size_t len);
/* 0, or -EIO (logged) when verify_reads is on and buf fails loc's check. */
int block_verify(struct dstore *ds, const struct block_loc *loc,
		 const struct sc_hash *h, const void *buf);
/* Content h's bytes from where it is stored, verified if configured. */
int block_read_verified(struct dstore *ds, const struct block_loc *loc,
			const struct sc_hash *h, void *buf);
/* Current content of (ino, lbn) into buf; the reclaim lock held shared. */
int block_current(struct dstore *ds, MDB_txn *txn, uint64_t ino,
		  uint64_t lbn, uint8_t *buf);

/* The write stripe of file ino (DSTORE_WRITE_STRIPES). */
static inline pthread_rwlock_t *write_stripe(struct dstore *ds, uint64_t ino)
{
	return &ds->write_stripe[ino % DSTORE_WRITE_STRIPES];
}

/* intent.c: write intents into the index */
enum plan_kind { PLAN_HOLE, PLAN_SILENT, PLAN_KNOWN, PLAN_NEW };

struct block_plan {
	uint64_t lbn;
	struct sc_hash h;
	uint32_t check;
	enum plan_kind kind;
	uint64_t slot;
	const uint8_t *data;
	/* an earlier block of the batch with the same content, or NULL */
	const struct block_plan *first;
};

/* One file's held writes, turned into one index change by a flush. */
struct write_intent {
	struct write_intent *next;
	uint64_t ino;
	uint64_t end;		/* the file is at least this long after */
	uint64_t change;	/* its change id becomes at least this */
	struct timespec mtime;	/* of the last write */
	struct block_plan *plan; /* ascending lbn */
	size_t n;
	bool applied;		/* changed the index (so cannot fail alone) */
	int rc;
};

/*
 * Classifies, stores and indexes a batch of intents: their new contents
 * written to fresh slots and made durable, then one index transaction
 * (not synced: dstore_sync does that).  An intent that cannot be applied
 * (its file is gone; -EAGAIN: a content it relied on went away
 * meanwhile) fails alone with its rc; an error of the batch is returned.
 */
int intents_commit(struct dstore *ds, struct write_intent *batch);
/*
 * What blocks p[0 .. n) (ascending lbn) map to in the index: cur[i] where
 * mapped[i].
 */
int plan_current(struct dstore *ds, MDB_txn *txn, uint64_t ino,
		 const struct block_plan *p, size_t n,
		 struct sc_hash *cur, uint8_t *mapped);
/* Does block p already hold its planned content (now; NULL: zeros)? */
bool plan_silent(const struct block_plan *p, const struct sc_hash *now);
/* The file shortened or extended to size inside w; see intent.c. */
int truncate_locked(struct dstore *ds, uint64_t ino, uint64_t size,
		    struct wtxn *w, struct inode_rec *ir);

/* data.c: the data path's upper half (the public reads and writes) */
int data_init(struct dstore *ds);
void data_fini(struct dstore *ds);

/*
 * writeback.c: a write is held in memory (content hashed, shared by every
 * block holding it) and answered; a flush (dstore_sync, a full buffer,
 * the flusher's timer) turns everything held into intents for
 * intents_commit.  Readers look here before the index: what is held is
 * newer than anything indexed.
 */
struct wb_buf {
	struct sc_hash h;	/* first: a hash_table object */
	_Atomic uint32_t refs;	/* the table's (while held) and borrowers' */
	uint32_t holders;	/* blocks holding it; under wb_lock */
	const struct block_plan *first;	/* the flush building a batch */
	struct wb_buf *next_free;	/* in the pool */
	uint8_t data[];
};

/* What a file's held writes change in its attributes. */
struct wb_attr {
	bool held;
	uint64_t end;
	uint64_t change;
	struct timespec mtime;
	int64_t mapped;		/* blocks mapped, more (or fewer) */
};

/* Locks and limits (data_init); wb_fini lets go of what is still held. */
int wb_init(struct dstore *ds, uint64_t limit, uint32_t interval_ms);
void wb_fini(struct dstore *ds);
/* The flusher thread; wb_stop stops it and flushes what is held. */
int wb_start(struct dstore *ds);
int wb_stop(struct dstore *ds);
/*
 * Does ino have writes held?  Then held[i] is set for those of blocks
 * first .. first + n - 1, bufs[i] their content (a reference to give back
 * with wb_buf_put) or NULL for zeros; the arrays are untouched otherwise.
 * a (optional) gets the file's held attributes.
 */
bool wb_lookup(struct dstore *ds, uint64_t ino, uint64_t first, size_t n,
	       struct wb_buf **bufs, uint8_t *held, struct wb_attr *a);
void wb_buf_put(struct dstore *ds, struct wb_buf *b);
/*
 * What the write-back buffer holds of blocks first .. first + n - 1, as
 * wb_lookup gives it, in memory of its own (wb_range_put gives it back).
 * Taken before the index snapshot: a flush indexes, then lets go, so
 * nothing written is missed between the two.
 */
struct wb_range {
	struct dstore *ds;
	struct wb_attr a;
	struct wb_buf **bufs;
	uint8_t *held;
	size_t n;
};
int wb_range_get(struct dstore *ds, uint64_t ino, uint64_t first, size_t n,
		 struct wb_range *hr);
void wb_range_put(struct wb_range *hr);
/* The attributes as the file's held writes make them. */
void wb_attr_apply(const struct wb_attr *wa, struct dstore_attr *a);
/*
 * Holds the blocks of p that are not PLAN_SILENT (data or PLAN_HOLE) and
 * the file's new end; mapped[i]: the index maps block i (for the mapped
 * block count); change is the file's change id as the write found it
 * (the index's, or its held writes' if higher).
 * Waits for room while the buffer is full.  a (optional) is the index's
 * attributes, made what the file looks like after the write.
 */
int wb_hold(struct dstore *ds, uint64_t ino, const struct block_plan *p,
	    const uint8_t *mapped, size_t n, uint64_t end, uint64_t change,
	    struct dstore_attr *a);
/* Does ino have writes held? */
bool wb_holds(struct dstore *ds, uint64_t ino);
/* Indexes every write held when called (not synced). */
int wb_flush(struct dstore *ds);
/* Content h if held: 0 and its bytes in buf, or -ENOENT. */
int wb_read_content(struct dstore *ds, const struct sc_hash *h, void *buf);

/* namespace.c */
int setattr_locked(struct dstore *ds, uint64_t ino,
		   const struct dstore_attr *a, uint32_t mask,
		   struct dstore_attr *out);

#endif /* DEDUP_STORE_INT_H */
