/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The host's parts shared by its files (lib/host/README.md: which calls
 * which).  Not a public interface.
 *
 * Locks: hello_lock serializes HELLOs and is held across one, resend_lock
 * a resend or drain of unstable blocks, across its calls: both are taken
 * killably, so a task stuck behind a silent server can die; lock guards
 * the registration, the notice queue, the unstable blocks, the hashers
 * and the counters, and is held only briefly, never across a call.  The
 * host cache's lock may be taken with neither held, and the cache's
 * eviction callback takes lock under the cache's lock, so lock is never
 * held while calling into the cache.
 */
#ifndef SEACACHE_HOST_PRIV_H
#define SEACACHE_HOST_PRIV_H

#include "seacache/host.h"
#include "seacache/peer_serve.h"

/* A registration: what one HELLO reply fixed (§4 item 3). */
struct host_reg {
	uint64_t id, epoch;
	uint32_t max_blocks, max_push, max_evict, features, lease;
};

/*
 * A block written UNSTABLE, kept until a COMMIT in the same epoch covers
 * it, to be written again (as data) in a new epoch (§6.2 item 5).  Its
 * bytes are apart from it: a 4 KiB block is one 4 KiB allocation, where
 * block and header together would take an 8 KiB one from kmalloc.
 */
struct host_pin {
	struct host_pin *next;
	uint64_t file, lbn, epoch, seq;
	uint32_t len;		/* bytes of the block before the write's end */
	uint8_t *data;		/* the block (block size bytes) */
};

#define HOST_HASHERS 8
/* Resends whose files a WRITE's answer can tell (host_pins.c). */
#define HOST_RESEND_LOG 8
/* Buckets of the contents in flight (host_read.c), a power of two. */
#define HOST_FLIGHT_BUCKETS 64
/* Files whose map windows the host keeps (host_map.c). */
#define HOST_MAP_WINDOWS 64

/* A file's map window: blocks start..end-1 mapped by GET_MAP. */
struct host_mapwin {
	uint64_t file, start, end;
	uint64_t used;		/* map_clock when last read; 0: free */
	uint64_t next;		/* the block after the last read's */
	uint64_t streak;	/* blocks read in order up to next */
	uint32_t grow;		/* the next window's blocks */
	bool sequential;	/* the last read began at about next */
};

struct rd_blk;

struct sc_host {
	struct sc_host_transport tr;
	uint8_t uuid[CSI_HOST_UUID_SIZE];
	char name[CSI_MAX_NAME + 1];
	struct csi_peer_addr peer;
	uint32_t requested;	/* features */
	uint32_t cache_blocks;
	uint32_t max_pins;	/* unstable blocks kept before a write commits */
	uint32_t bs;		/* B, fixed by the first HELLO */
	uint32_t bshift;	/* log2(bs): offsets to blocks by shifts */
	uint32_t io_retries;	/* a call's tries after transport errors */
	bool fail_fast;		/* host.h */
	struct sc_hostcache *hc;
	/* notices a shrink could not queue: the lock was held (host.c) */
	sc_atomic_t notices_lost;

	struct sc_mutex hello_lock;
	/* one resend of stale pins at a time (host_pins.c) */
	struct sc_mutex resend_lock;
	struct sc_mutex lock;	/* everything below */
	struct host_reg reg;
	uint64_t reg_gen;	/* HELLOs that succeeded */
	bool tracked;		/* the server keeps a tracker for us (§4 9) */
	struct sc_hash *nq;	/* eviction notices, a ring */
	uint32_t nq_cap, nq_head, nq_len;
	uint64_t last_send_ms;
	/* failed delegations to report (§7.12), a ring; the oldest go */
	struct csi_peer_failure pfq[CSI_MAX_PEER_REPORTS];
	uint32_t pfq_head, pfq_len;
	bool down;		/* fail_fast: no call goes out but a probe */
	struct host_pin *pins, *pins_tail;
	uint32_t npins, stale_pins;	/* stale: of an earlier epoch */
	uint64_t pin_seq;
	uint64_t resend_gen;	/* resends begun */
	uint64_t resend_files[HOST_RESEND_LOG];	/* resend g's: [g % LOG] */
	bool resending;		/* the last is under way (its pins taken out) */
	struct sc_hasher *hashers[HOST_HASHERS];
	uint32_t nhashers;
	/* READ calls in flight, numbered in start order (host_read.c) */
	uint64_t rd_seq;
	uint64_t *rd_live;
	uint32_t rd_nlive, rd_cap;
	struct sc_waitq rd_done;	/* woken as each READ ends */
	/* the contents our reads are fetching, by hash: single flight */
	struct rd_blk *flights[HOST_FLIGHT_BUCKETS];
	/* SS-Push's yield since the span began (host_read.c) */
	uint64_t push_span_from, push_hits_from;
	uint32_t push_probe;
	bool push_idle;		/* pushes did not pay: asked for by probes */
	/* map windows (host_map.c): one GET_MAP in flight at a time */
	struct host_mapwin wins[HOST_MAP_WINDOWS];
	uint64_t map_clock;
	bool map_busy;		/* the GET_MAP below is in flight */
	uint64_t map_lbn;
	uint32_t map_count, map_nfiles;
	uint64_t map_files[CSI_MAX_MAP_FILES];
	uint32_t map_cap;	/* entries one GET_MAP may bring */
	struct sc_waitq map_done;	/* woken as a GET_MAP ends */
	struct sc_host_stats st;
	struct sc_host_time times[SC_HT_KINDS];
};

/* One call's outcome, for the reply's handler. */
struct host_call {
	uint64_t id, epoch;	/* the registration it was sent under */
	uint64_t since;		/* the cache's tag generation before it */
	uint32_t status;	/* never BAD_EPOCH or UNKNOWN_HOST */
	void *reply;
};

/* One WRITE request's blocks and counters (host_pins.c, host_write.c). */
struct wr_blk {
	const uint8_t *data;	/* block_size bytes */
	struct sc_hash h;
	uint32_t kind;		/* CSI_WK_* */
	bool need;		/* answered NEED_DATA */
};

struct wr {
	struct sc_host *h;
	uint64_t file;
	uint32_t bs, bshift, stable, max_blocks, max_evict, features;
	bool resend;	/* writes stale pins again, holding resend_lock */
	bool raced;	/* a WRITE may have landed before a resend's bytes */
	struct csi_write_block *wb;	/* max_blocks */
	struct wr_blk *b;		/* max_blocks */
	struct sc_hasher *hs;
	uint64_t hash_blocks, need_data, data_bytes, sync_fallbacks;
};

/*
 * The files' calls go down only (README.md): host.c and host_write.c on
 * top, then host_read.c, host_pins.c, host_call.c, and host_util.c at
 * the bottom.  The prototypes below are by file, from the bottom up.
 */

/* ---- host_util.c ---- */

/* The errno of a status a call's handler does not deal with itself. */
int host_status_err(uint32_t status);
/* Logs a reply that breaks the protocol; -SC_EIO. */
int host_proto_err(struct sc_host *h, const char *what);
/* The registration now. */
void host_reg_get(struct sc_host *h, struct host_reg *r);
/* Registered anew (a new epoch or host id) since before was taken? */
bool host_reg_moved(struct sc_host *h, const struct host_reg *before);
struct sc_hasher *host_hasher_get(struct sc_host *h);
void host_hasher_put(struct sc_host *h, struct sc_hasher *hs);
/* A reply's attrs of file, into the cache (§7.7); its status's errno. */
int host_attr_reply(struct sc_host *h, const struct host_call *c,
		    const struct csi_fileattr *attr, uint64_t file);
/* One more of kind k, which began at since (sc_clock_us). */
void host_time_add(struct sc_host *h, enum sc_host_time_kind k,
		   uint64_t since);

/* ---- host_call.c ---- */

/*
 * One CSI call under §5.1 and §6: hdr (NULL for HELLO) gets the current
 * registration and queued notices; no reply is retried (the transport
 * reconnects), BAD_EPOCH and UNKNOWN_HOST register again and retry, BUSY
 * backs off and retries.  0 with c filled (release it with
 * host_release), or a negative errno.
 */
int host_call(struct sc_host *h, uint32_t proc, struct csi_reqhdr *hdr,
	      const void *args, void *res, struct host_call *c);
void host_release(struct sc_host *h, struct host_call *c);
/*
 * HELLO (§4), unless another thread registered since seen_gen (0: the
 * first registration).
 */
int host_register(struct sc_host *h, uint64_t seen_gen);
/* Queue a notice for content h no longer holds. */
void host_notice(struct sc_host *h, const struct sc_hash *hash);
/* ... only if the lock is free now; false if not queued. */
bool host_notice_try(struct sc_host *h, const struct sc_hash *hash);
/* One EVICT: the queued notices, or the keep-alive (§5.3, §7.6). */
int host_evict(struct sc_host *h);
/*
 * With the service marked down (fail_fast): one EVICT that goes out
 * anyway, and the service up again if it is answered.
 */
int host_probe(struct sc_host *h);
/* Is the service marked down? */
bool host_down(struct sc_host *h);
/* Send EVICT while more than keep notices are queued. */
int host_flush(struct sc_host *h, uint32_t keep);
/* Queue b, a delegation its peer did not deliver, for host_report_peers. */
void host_peer_failed(struct sc_host *h, const struct csi_read_block *b);
/* The queued failed delegations in one PEER_REPORT (§7.12), if granted. */
int host_report_peers(struct sc_host *h);

/* ---- host_map.c ---- */

/* The entries one GET_MAP may bring into hc's CSI-Map. */
uint32_t host_map_cap(struct sc_hostcache *hc);
/*
 * A read of blocks first..last of file is about to look them up (!miss),
 * or found block first unknown (miss): fetch the map window it needs
 * after the GET_MAP in flight, if any (PROTOCOL.md §7.11).  0, or
 * -SC_EINTR on a fatal signal: a window that could not be had leaves the
 * read to ask as it would without.
 */
int host_map_ahead(struct sc_host *h, uint64_t file, uint64_t first,
		   uint64_t last, bool miss);
/*
 * How far after block last of file content read-ahead (host_read.c) may
 * go: 0 unless its reader is sequential (its read began about where the
 * last ended), else as many blocks as it has read in order (as the
 * kernel's read-ahead grows with the reader's run), within its window.
 */
uint64_t host_map_seq_span(struct sc_host *h, uint64_t file, uint64_t last);

/* ---- host_pins.c ---- */

/* The unstable blocks a host of that cache keeps, at most (max_pins). */
uint32_t host_max_pins(uint32_t cache_blocks);
void host_pins_free(struct sc_host *h);
/* Does the host keep unstable blocks of file (uncommitted writes)? */
bool host_file_pinned(struct sc_host *h, uint64_t file);
/* Write again, as data, file's blocks of an earlier epoch. */
int host_pins_resend(struct sc_host *h, uint64_t file);
/* A WRITE request of file (stable: CSI_*); 0 or -SC_ENOMEM. */
int host_wr_init(struct wr *w, struct sc_host *h, uint64_t file,
		 uint32_t stable);
/* The request's counters into the host's; frees what init took. */
void host_wr_fini(struct wr *w);
/* b's hash of its data. */
int host_wr_hash(struct wr *w, struct wr_blk *b);
/*
 * b[0..n) from lbn, up to end: WRITE, the bytes of every block answered
 * NEED_DATA, and again after every resend it raced (§6.2 item 5).
 */
int host_wr_blocks(struct wr *w, uint64_t lbn, struct wr_blk *b,
		   uint32_t n, uint64_t end);

/* ---- host_read.c ---- */

/*
 * Wait up to max_ms, while the READs in flight now are, for content hash
 * to come into the cache; 1 with it copied to buf, 0 if it did not come,
 * -SC_EINTR on a fatal signal.
 */
int host_content_wait(struct sc_host *h, const struct sc_hash *hash,
		      void *buf, uint32_t max_ms);
/* How long a peer read waits for a content our READs are bringing. */
#define HOST_PEER_WAIT_MS 200
/* The size a read needs, from the cache or a getattr. */
int host_file_size(struct sc_host *h, uint64_t file, uint64_t *size);

#endif /* SEACACHE_HOST_PRIV_H */
