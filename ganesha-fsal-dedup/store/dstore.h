/* SPDX-License-Identifier: LGPL-3.0-or-later */
/*
 * The deduplicated store behind FSAL_DEDUP: a whole file system (inodes,
 * directories, symlinks, file data) kept as
 *
 *   - an index in LMDB (one environment, several named databases):
 *       inode     ino -> attributes (symlink target appended)
 *       dirent    (dir, name) -> (cookie, child)
 *       dircookie (dir, cookie) -> (child, name)     readdir order, stable cookies
 *       bmap      (ino, lbn / 8) -> present hashes     per-file block map
 *       chunk     hash -> (slot, references)           the chunk store's index
 *       csimap    (hash prefix, ino, lbn) -> ()        CSI-Map reverse entries
 *       dead      slot -> ()                           unreferenced, to reclaim
 *       pending   seq -> deltas                        refcount/CSI-Map changes to apply
 *       meta      superblock, allocation cursors, counters
 *   - chunk data in large container files of fixed-size slots, appended to
 *     and never rewritten in place; a slot whose chunk lost its last
 *     reference is punched out (space returned to the file system) once no
 *     reader can still be reading it.
 *
 * Holes are blocks with no bmap entry; an all-zero block written becomes a
 * hole.  Content is named by SHA-256 (seacache/hash.h, collision policy there):
 * equal 32-byte hashes are the same content.
 *
 * Writes are held in memory (write-back, up to writeback_bytes) and
 * visible at once to every call; dstore_sync(), a stable write, a full
 * buffer or the flusher's timer index them.  Crash safety: chunk data is
 * written and fdatasync'ed before the index transaction that references
 * it commits; index transactions are atomic (LMDB, MDB_NOMETASYNC:
 * integrity always, the newest transaction durable at the next
 * dstore_sync()).  A crash loses the writes not synced, nothing else.
 *
 * Every call is thread-safe.  Errors are negative errno values.
 */
#ifndef DEDUP_STORE_H
#define DEDUP_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <seacache/hash.h>

#define DSTORE_ROOT_INO 1
#define DSTORE_NAME_MAX 255
#define DSTORE_SYMLINK_MAX 4095
/* Readdir cookies below this are never handed out (NFS reserves 0..2). */
#define DSTORE_COOKIE_FIRST 3

enum dstore_type {
	DSTORE_REG = 1,
	DSTORE_DIR,
	DSTORE_SYMLINK,
	DSTORE_CHR,
	DSTORE_BLK,
	DSTORE_FIFO,
	DSTORE_SOCK,
};

struct dstore_attr {
	uint64_t ino;
	uint32_t type;		/* enum dstore_type */
	uint32_t mode;		/* permission bits, 07777 */
	uint32_t nlink;
	uint32_t uid;
	uint32_t gid;
	uint64_t size;
	uint64_t rdev;		/* devices: makedev(major, minor) */
	uint64_t blocks_mapped;	/* blocks that are not holes */
	struct timespec atime;
	struct timespec mtime;
	struct timespec ctime;
	struct timespec btime;	/* creation */
	uint64_t change;	/* moves on every change of data or attributes */
};

/* dstore_setattr() mask */
#define DSTORE_SET_MODE  (1u << 0)
#define DSTORE_SET_UID   (1u << 1)
#define DSTORE_SET_GID   (1u << 2)
#define DSTORE_SET_SIZE  (1u << 3)
#define DSTORE_SET_ATIME (1u << 4)
#define DSTORE_SET_MTIME (1u << 5)

typedef void (*dstore_log_fn)(void *ctx, int level, const char *msg);
#define DSTORE_LOG_ERROR 0
#define DSTORE_LOG_WARN  1
#define DSTORE_LOG_INFO  2

struct dstore_params {
	uint32_t block_size;	/* new stores; an existing store must match;
				 * 0: open an existing store, whatever its size */
	uint64_t map_size;	/* LMDB map size: the index's size limit */
	uint64_t container_size; /* bytes per container file (new stores) */
	uint32_t max_readers;	/* concurrent read transactions */
	bool verify_reads;	/* check every chunk read (XXH3); EIO on mismatch */
	uint32_t reclaim_interval_ms; /* housekeeping: apply pending deltas,
				       * reclaim dead slots; 0: off */
	bool read_only;		/* inspection (seacachectl stats) */
	uint64_t writeback_bytes; /* written data held in memory at most */
	uint32_t writeback_interval_ms; /* what is held is indexed this often */
	dstore_log_fn log;	/* NULL: stderr */
	void *log_ctx;
};

#define DSTORE_BLOCK_SIZE_DEFAULT SC_BLOCK_SIZE_DEFAULT
#define DSTORE_MAP_SIZE_DEFAULT (64ull << 30)
#define DSTORE_MAP_SIZE_MIN (16ull << 20)
#define DSTORE_CONTAINER_SIZE_DEFAULT (1ull << 30)
#define DSTORE_MAX_READERS_DEFAULT 1024u
#define DSTORE_RECLAIM_INTERVAL_DEFAULT 1000u
#define DSTORE_WRITEBACK_DEFAULT (512ull << 20)
#define DSTORE_WRITEBACK_MIN (1ull << 20)
#define DSTORE_WRITEBACK_INTERVAL_DEFAULT 2000u

void dstore_params_default(struct dstore_params *p);

struct dstore;

/*
 * Opens the store in directory dir, creating it (and dir) when dir is empty
 * or missing.  An exclusive lock on the directory keeps a second writer
 * (another ganesha, seacachectl fsck/gc) out; read_only opens share it.
 * On failure *err (if given) names the cause and what to do.
 */
int dstore_open(const char *dir, const struct dstore_params *p,
		struct dstore **out, char *err, size_t errlen);
/* Syncs and closes. */
void dstore_close(struct dstore *ds);
uint32_t dstore_block_size(const struct dstore *ds);
/*
 * An epoch larger than every one this store handed out before and at
 * least now, made durable: a server's start, so that the NFS write
 * verifier built from it differs after every start.
 */
int dstore_epoch_next(struct dstore *ds, uint64_t now, uint64_t *epoch);
/* Random at creation: tells this store from any other (NFS handles). */
uint64_t dstore_id(const struct dstore *ds);

/* Namespace */
int dstore_getattr(struct dstore *ds, uint64_t ino, struct dstore_attr *out);
/* "." is dir itself, ".." its parent (the root's is the root). */
int dstore_lookup(struct dstore *ds, uint64_t dir, const char *name,
		  struct dstore_attr *out);

struct dstore_new {
	uint32_t type;		/* enum dstore_type */
	uint32_t mode;
	uint32_t uid;
	uint32_t gid;
	uint64_t rdev;
	const char *symlink;	/* DSTORE_SYMLINK: the target */
};
/* -EEXIST when name exists (out is then that object's attributes). */
int dstore_create(struct dstore *ds, uint64_t dir, const char *name,
		  const struct dstore_new *n, struct dstore_attr *out);
int dstore_link(struct dstore *ds, uint64_t ino, uint64_t dir,
		const char *name);
/* Files, symlinks, specials and empty directories (-ENOTEMPTY otherwise). */
int dstore_remove(struct dstore *ds, uint64_t dir, const char *name);
/* Replaces an existing target of a compatible type (POSIX rename rules). */
int dstore_rename(struct dstore *ds, uint64_t olddir, const char *oldname,
		  uint64_t newdir, const char *newname);

/* Return non-zero to stop; that entry is then not consumed. */
typedef int (*dstore_dirent_fn)(void *ctx, const char *name, uint64_t ino,
				uint64_t cookie);
/* Entries after cookie (0: from the start), in cookie order. */
int dstore_readdir(struct dstore *ds, uint64_t dir, uint64_t cookie,
		   dstore_dirent_fn fn, void *ctx, bool *eof);
/* The target's length, or an error; buf gets it NUL-terminated. */
int dstore_readlink(struct dstore *ds, uint64_t ino, char *buf, size_t len);
int dstore_setattr(struct dstore *ds, uint64_t ino,
		   const struct dstore_attr *a, uint32_t mask,
		   struct dstore_attr *out);

/* Data */
ssize_t dstore_read(struct dstore *ds, uint64_t ino, uint64_t off,
		    void *buf, size_t len, bool *eof);
/*
 * dstore_read when all of it is in memory (the page cache or held
 * writes): -EAGAIN, having read nothing from the disk, when a block is
 * not (a partial block counts as not).  The CSI service delegates a read
 * to a peer host only for data the server would have to read from disk.
 */
ssize_t dstore_read_cached(struct dstore *ds, uint64_t ino, uint64_t off,
			   void *buf, size_t len, bool *eof);
/*
 * Held in memory when it returns; stable: synced (dstore_sync) too.
 * out (optional): the attributes after the write.
 */
ssize_t dstore_write(struct dstore *ds, uint64_t ino, uint64_t off,
		     const void *buf, size_t len, bool stable,
		     struct dstore_attr *out);
/* A CSI WRITE's blocks, for dstore_write_blocks. */
struct dstore_wblocks {
	uint64_t lbn;			/* first block */
	uint32_t n;			/* blocks */
	const uint8_t *buf;		/* n whole blocks */
	const uint8_t *skip;		/* skip[i]: leave block i; or NULL */
	/*
	 * The SHA-256 of each block of buf, which the caller has verified
	 * (or took from the store): not computed again.  Or NULL.
	 */
	const struct sc_hash *hash;
	uint64_t end;			/* the size becomes max(size, end) */
	bool stable;
};

/*
 * Writes the blocks of w except the skipped ones, and makes the size
 * max(old size, w->end), as one step no other data write of the file can
 * interleave with: pre and post (both required) are the attributes just
 * before and just after, so pre->change tells whether anybody else
 * changed the file in between (the CSI WRITE's change_info).  Bytes of
 * the blocks past the new size are not stored (they must be zeros: the
 * caller checks).  0 or a negative errno; on error some blocks may have
 * been written.
 */
int dstore_write_blocks(struct dstore *ds, uint64_t ino,
			const struct dstore_wblocks *w, struct dstore_attr *pre,
			struct dstore_attr *post);
/*
 * The bytes of stored content h (one block, verified if configured), or
 * -ENOENT when the store does not hold h: the "store still has H" half of
 * a hash-only write's proof of possession.
 */
int dstore_read_content(struct dstore *ds, const struct sc_hash *h,
			void *buf);
/*
 * Everything returned so far (the writes held included) is durable when
 * this returns 0.
 */
int dstore_sync(struct dstore *ds);

/*
 * Reference counts and CSI-Map entries follow block map changes as
 * pending deltas (pending.c), applied in bulk by the housekeeper every
 * reclaim_interval_ms, at close, before fsck, or now by this call (which
 * indexes the writes held first).
 */
int dstore_apply_pending(struct dstore *ds);

/* CSI-Map */
/* The hash of (ino, lbn) without reading data; -ENODATA for a hole. */
int dstore_block_hash(struct dstore *ds, uint64_t ino, uint64_t lbn,
		      struct sc_hash *out);
/*
 * The hashes of blocks lbn .. lbn + n - 1 and the file's attributes, all
 * from one snapshot (so they agree); mapped[i] is 0 for a hole.
 */
int dstore_block_hashes(struct dstore *ds, uint64_t ino, uint64_t lbn,
			uint32_t n, struct sc_hash *h, uint8_t *mapped,
			struct dstore_attr *attr);
typedef int (*dstore_holder_fn)(void *ctx, uint64_t ino, uint64_t lbn);
/*
 * Up to max (ino, lbn) holding content h; returns how many were given.
 * Each is confirmed against the block map; holders whose deltas are still
 * pending may be missing.
 */
int dstore_csimap_lookup(struct dstore *ds, const struct sc_hash *h,
			 unsigned int max, dstore_holder_fn fn, void *ctx);
/*
 * dstore_csimap_lookup unconfirmed: up to max (ino, lbn) whose CSI-Map
 * entry names h's hash prefix, from the CSI-Map alone.  One may hold
 * another content by now (a rewrite whose delta is pending) or another
 * content of the same prefix, so the caller confirms what it uses, e.g.
 * a run of a file at a time with dstore_block_hashes: confirming each
 * candidate on its own is a random block-map lookup, a disk read each on
 * a cold index.
 */
int dstore_csimap_candidates(struct dstore *ds, const struct sc_hash *h,
			     unsigned int max, dstore_holder_fn fn, void *ctx);

/* Space and statistics */
struct dstore_stats {
	uint32_t block_size;
	uint64_t files;
	uint64_t logical_bytes;	/* sum of file sizes */
	uint64_t logical_blocks; /* blocks within file sizes */
	uint64_t mapped_blocks;	/* of those, not holes */
	uint64_t chunks;	/* distinct contents stored (frees lag until
				 * pending deltas are applied) */
	uint64_t physical_bytes; /* chunks * block size */
	uint64_t dead_slots;	/* unreferenced, not yet reclaimed */
	uint64_t silent_writes;	/* blocks written with the content they had */
	uint64_t dedup_writes;	/* blocks whose content was already stored */
	uint64_t data_writes;	/* blocks that stored new content */
	uint64_t zero_writes;	/* all-zero blocks stored as holes */
	uint64_t reclaimed_slots;
	uint64_t verify_failures;
	uint64_t index_bytes;	/* pages in use by the index: */
	uint64_t index_chunk_bytes; /*  the chunk store's (per unique block) */
	uint64_t index_map_bytes; /*  block maps and CSI-Map (per mapped block) */
	uint64_t index_file_bytes; /* the index file's size */
	uint64_t container_bytes; /* disk space used by containers */
};
/* Indexes the writes held first. */
int dstore_stats(struct dstore *ds, struct dstore_stats *out);
/*
 * Punches out dead slots no reader can still use; how many, or an error.
 * A store opened with reclaim_interval_ms does this by itself.
 */
int64_t dstore_reclaim(struct dstore *ds);

/* Consistency check (the store opened for writing, no server using it). */
struct dstore_fsck_report {
	uint64_t problems;	/* found */
	uint64_t repaired;
	uint64_t inodes, dirents, bmap_entries, chunks, csimap_entries;
};
#define DSTORE_FSCK_REPAIR      (1u << 0)
/* Every problem is also reported through the log function. */
int dstore_fsck(struct dstore *ds, unsigned int flags,
		struct dstore_fsck_report *out);

#endif /* DEDUP_STORE_H */
