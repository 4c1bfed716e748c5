/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The host cache: a CSI-Map cache and a content cache under one lock, with
 * the read-path accounting of the SeaCache paper.
 *
 * A read of (file, lbn) ends in exactly one of:
 *   address hit  the CSI-Map knows the address and its content is cached:
 *                served locally, no network;
 *   content hit  the address was not known here, the server named its hash,
 *                and that content was cached: a round trip, no data;
 *   miss         the content had to be fetched.
 * The sharing count of every cached block follows the CSI-Map: the number
 * of known addresses that hold it (learnt and pushed alike).
 *
 * Change ids (PROTOCOL.md §7.7).  The functions ending in _at take the
 * change id a reply showed for the file and keep, per file, one tag: the
 * change id every mapping of the file was learnt under.  A mapping is
 * recorded only under the file's tag, so an address hit (which needs no
 * tag check) never serves a mapping of another state.  The tag moves
 * when a reply shows another change id and nothing newer is known
 * (sc_hostcache_file_seen: the mappings are dropped), or with the host's
 * own writes (sc_hostcache_write_end: re-tagged when nobody else wrote in
 * between, else dropped).  Pushed entries under another change id than
 * the file's tag are not recorded (a hint may be dropped, §7.3); a file
 * not known yet takes the pushed entry's change id as its tag, to be
 * checked at open like any other.  The table of files is bounded
 * (max_files); a file forgotten for room loses its mappings with its tag.
 * The functions without _at record mappings with no tag at all, for
 * callers (models, benchmarks) whose files never change.
 */
#ifndef SEACACHE_HOSTCACHE_H
#define SEACACHE_HOSTCACHE_H

#include "ccache.h"
#include "csimap.h"

struct sc_hostcache_config {
	uint32_t block_size;
	uint32_t cache_blocks;		/* content cache capacity */
	const char *policy;		/* content cache eviction policy */
	uint64_t csimap_budget;		/* bytes for the CSI-Map cache */
	uint32_t expected_sharing;	/* 0: default */
	/* Files with a change-id tag; 0: one per 64 cached blocks, >= 64. */
	uint32_t max_files;
	/*
	 * Told of every content that leaves the content cache by eviction,
	 * under the cache's lock (it must not call back into the cache), or
	 * NULL.
	 */
	void (*on_evict)(void *ctx, const struct sc_hash *h);
	void *ctx;
	struct sc_block_mem *block_mem;	/* the blocks' memory, or NULL */
};

enum sc_read_result {
	SC_ADDR_HIT,		/* data copied out */
	SC_CONTENT_HIT,		/* data copied out */
	SC_NEED_HASH,		/* address unknown: ask the server */
	SC_NEED_DATA,		/* content named by *h is not cached: fetch it */
};

struct sc_hostcache_stats {
	uint64_t reads;
	uint64_t addr_hits;
	uint64_t pushed_hits;	/* address hits through a pushed entry */
	uint64_t mapped_hits;	/* address hits through a map window's entry */
	uint64_t content_hits;
	uint64_t misses;
	uint64_t evictions;
	uint64_t bytes_in;	/* block bytes placed into the cache */
	uint64_t files;		/* files with a tag or size known */
	uint64_t files_dropped;	/* tags moved by a reply: mappings dropped */
	uint64_t mem_bytes;	/* everything held, block data included */
	struct sc_ccache_stats cache;
	struct sc_csimap_stats map;
};

struct sc_hostcache;

struct sc_hostcache *sc_hostcache_create(const struct sc_hostcache_config *c);
void sc_hostcache_destroy(struct sc_hostcache *hc);

/*
 * Start a read of (file, lbn).  SC_ADDR_HIT: buf holds the block.
 * SC_NEED_DATA: *h names the content to fetch.  SC_NEED_HASH: ask the
 * server, then call sc_hostcache_read_hash.
 */
enum sc_read_result sc_hostcache_read(struct sc_hostcache *hc, uint64_t file,
				      uint64_t lbn, void *buf,
				      struct sc_hash *h);
/*
 * The hit path of a read of blocks lbn..lbn+n-1 of file (n <=
 * SC_CCACHE_PINS), under one lock, after unpinning what p held: the
 * leading address hits are pinned in p (p->n of them), for the caller to
 * copy out with no lock held; the block after them, if p->n < n, is
 * looked up as by sc_hostcache_read but not copied, and its result
 * returned (SC_NEED_HASH, or SC_NEED_DATA with *h); SC_ADDR_HIT when all
 * n hit.  *sized (unless NULL): whether the file's size is known, then
 * in *size.
 */
enum sc_read_result sc_hostcache_read_run(struct sc_hostcache *hc,
					  uint64_t file, uint64_t lbn,
					  uint32_t n, struct sc_ccache_pins *p,
					  struct sc_hash *h, uint64_t *size,
					  bool *sized);
/*
 * Read-ahead's look at blocks lbn..lbn+n-1 of file (n <= CSI_MAX_BLOCKS),
 * under one lock and counted as no read: the number of them, from lbn,
 * whose content the CSI-Map names (it stops at the first it does not),
 * each's hash in h[i] and lacking[i] set if the content cache lacks it.
 */
uint32_t sc_hostcache_lacking(struct sc_hostcache *hc, uint64_t file,
			      uint64_t lbn, uint32_t n, struct sc_hash *h,
			      uint8_t *lacking);
/*
 * Unpin what sc_hostcache_read_run pinned in p: no lock taken, unless a
 * block left the cache while pinned and its buffer is to be freed.
 */
void sc_hostcache_unpin(struct sc_hostcache *hc, struct sc_ccache_pins *p);
/* The server says (file, lbn) holds h: SC_CONTENT_HIT or SC_NEED_DATA. */
enum sc_read_result sc_hostcache_read_hash(struct sc_hostcache *hc,
					   uint64_t file, uint64_t lbn,
					   const struct sc_hash *h, void *buf);
/* The data of (file, lbn), content h, arrived: cache it and the mapping. */
int sc_hostcache_fill(struct sc_hostcache *hc, uint64_t file, uint64_t lbn,
		      const struct sc_hash *h, const void *data);
/* A mapping the server pushed ahead of any read. */
void sc_hostcache_learn(struct sc_hostcache *hc, uint64_t file, uint64_t lbn,
			const struct sc_hash *h);

/* A snapshot to take before sending a request, for file_seen. */
uint64_t sc_hostcache_gen(struct sc_hostcache *hc);
/*
 * A reply to a request sent at generation since showed file at change,
 * with size bytes.  If change is not the file's tag and nothing newer is
 * known (no tag set since, none of the host's writes to the file in
 * flight), the file's mappings are dropped and change becomes its tag.
 * Returns whether change is the file's tag now: whether the reply's
 * answers may be mapped.
 */
bool sc_hostcache_file_seen(struct sc_hostcache *hc, uint64_t file,
			    uint64_t change, uint64_t size, uint64_t since);
/* The file's size as last seen; false if unknown. */
bool sc_hostcache_file_size(struct sc_hostcache *hc, uint64_t file,
			    uint64_t *size);
/* A write of the host to file is going out: the tag stays until it ends. */
void sc_hostcache_write_begin(struct sc_hostcache *hc, uint64_t file);
/*
 * That write ended.  ok: its reply said pre -> change, size; the file is
 * re-tagged if pre was its tag, else its mappings are dropped.  !ok: the
 * file's state is unknown (a failed write may have written some blocks):
 * its mappings and tag are dropped.
 */
void sc_hostcache_write_end(struct sc_hostcache *hc, uint64_t file, bool ok,
			    uint64_t pre, uint64_t change, uint64_t size);

/* sc_hostcache_read_hash, mapping only if change is the file's tag. */
enum sc_read_result sc_hostcache_read_hash_at(struct sc_hostcache *hc,
					      uint64_t file, uint64_t lbn,
					      uint64_t change,
					      const struct sc_hash *h,
					      void *buf);
/*
 * sc_hostcache_fill, mapping only if change is the file's tag; the
 * content is cached either way (0), unless a different block with hash h
 * is (-SC_EEXIST).
 */
int sc_hostcache_fill_at(struct sc_hostcache *hc, uint64_t file, uint64_t lbn,
			 uint64_t change, const struct sc_hash *h,
			 const void *data);
/*
 * A map window of file under change (PROTOCOL.md §7.11): n blocks from
 * lbn, block i a hole when bit i of holes is set, the others' hashes in
 * order in hashes.  Recorded only if change is the file's tag (a file not
 * known yet takes it); returns the entries recorded.
 */
uint32_t sc_hostcache_learn_map(struct sc_hostcache *hc, uint64_t file,
				uint64_t lbn, uint64_t change,
				const uint8_t *holes,
				const struct sc_hash *hashes, uint32_t n);
/* A pushed entry under change; false if not recorded. */
bool sc_hostcache_learn_at(struct sc_hostcache *hc, uint64_t file,
			   uint64_t lbn, uint64_t change,
			   const struct sc_hash *h);
/* Copy content h out (a peer read); false if not cached. */
bool sc_hostcache_get(struct sc_hostcache *hc, const struct sc_hash *h,
		      void *buf);

/* Forget what (file, lbn) holds, e.g. after a write elsewhere. */
bool sc_hostcache_forget(struct sc_hostcache *hc, uint64_t file, uint64_t lbn);
/* Forget every mapping of file (its change id moved); cached data stays. */
uint32_t sc_hostcache_drop_file(struct sc_hostcache *hc, uint64_t file);
/*
 * Forget every mapping of file and its change id and size: it changed in
 * a way the CSI protocol did not see (a write through NFS); the next reply
 * about it tags it anew.  Cached data stays.
 */
void sc_hostcache_forget_file(struct sc_hostcache *hc, uint64_t file);
/* Forget every mapping (a new server epoch, §6.2); tags and data stay. */
uint32_t sc_hostcache_drop_all(struct sc_hostcache *hc);
/*
 * Memory is short: up to n cached blocks leave through the eviction
 * policy (each told to on_evict) and their memory is freed; the content
 * cache holds no more than what is left until memory is free again
 * (ccache.h).  Returns the blocks given back: 0 without waiting if the
 * lock is held, as when reclaim comes from an allocation under it.
 * on_evict runs as for any eviction, with whatever locks it takes.
 */
uint32_t sc_hostcache_shrink(struct sc_hostcache *hc, uint32_t n);
/*
 * For on_evict (which runs under the lock): true if the eviction is a
 * shrink's, which is memory reclaim and must not wait for other locks.
 */
bool sc_hostcache_shrinking(const struct sc_hostcache *hc);
/* Blocks in the content cache now (no lock: a moment's count). */
uint32_t sc_hostcache_blocks(struct sc_hostcache *hc);
/* Sharing count of cached content h, or SC_NIL if it is not cached. */
uint32_t sc_hostcache_block_share(struct sc_hostcache *hc,
				  const struct sc_hash *h);

void sc_hostcache_get_stats(struct sc_hostcache *hc,
			    struct sc_hostcache_stats *out);

#endif /* SEACACHE_HOSTCACHE_H */
