/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A SeaCache host: the client half of the CSI protocol (PROTOCOL.md §11,
 * "A host's life") over one host cache (hostcache.h) that serves every VM
 * of the host from one copy of each content.
 *
 * Environment independent, like the rest of the core: the network goes
 * through struct sc_host_transport (user space: lib/rpc/host_transport.c
 * over the project's RPC client and peer server; the kernel module brings
 * its own), memory and locks through compat.h.
 *
 * What it does, per the protocol:
 *   - HELLO with the features of its variant, and again on BAD_EPOCH or
 *     UNKNOWN_HOST (§6.2: drop queued notices and every CSI-Map entry, keep
 *     the content cache);
 *   - reads block by block through the host cache: address hits cost
 *     nothing; the misses of one request go to the server in as few READ
 *     calls as max_blocks allows (Read#: GET_HASHES first, READ only for
 *     contents not cached); every reply kind is handled: DATA (verified,
 *     cached), HASH (served from the cache, or re-read with FORCE_DATA
 *     when it is not there any more), DELEGATED (PEER_READ through the
 *     transport, FORCE_DATA from the server on any failure), HOLE, pushes
 *     (learnt under their change ids);
 *   - change ids (§7.7): a file's mappings are dropped when a reply shows
 *     a change id the host did not cause;
 *   - eviction notices for every content that leaves the cache, carried in
 *     the next request's header (EVICT when nothing else goes out);
 *   - write-through: whole blocks (read-modify-write for partial ones),
 *     by hash when DEDUP_WRITE is granted and the content is cached, with
 *     the bytes for every NEED_DATA block;
 *   - the peer side: sc_host_peer_get answers a peer read from the cache.
 *
 * Thread-safe: any number of VM threads may read and write at once; the
 * cache lock is never held across a network call, nor a cached block's
 * copy to the caller.  Reads of one content at once fetch it once (single
 * flight): the others wait for the read fetching it.  A VM thread waiting
 * for a server (a back-off, another VM's read in flight) can be killed:
 * the call then returns -EINTR.
 *
 * The I/O entry points (getattr, lookup, read, write, commit, idle, peer
 * get) run in a NOFS allocation scope (compat.h): in the kernel they are
 * a file system's I/O path, called with the VFS's inode and page locks
 * held, and they allocate (up to 128 KiB, some under the host's locks,
 * and in the transport) where reclaim must not re-enter a file system,
 * this one included.  A scope at the door covers every allocation behind
 * it, the transport's too, where GFP_NOFS at each site would not.
 */
#ifndef SEACACHE_HOST_H
#define SEACACHE_HOST_H

#include "csi_proto.h"
#include "hostcache.h"
#include "variant.h"

/* One block of a reply's delegated reads, for peer_fetch_many. */
struct sc_peer_fetch {
	const struct csi_peer_addr *where;
	const struct sc_hash *h;
	const struct csi_token *tok;
	void *out;
	int err;		/* what peer_fetch would have returned */
};

/* How the host reaches the server and its peers. */
struct sc_host_transport {
	/*
	 * One CSI_PROG call: 0 with *res decoded (its memory held by
	 * *reply until release), or a negative errno when no reply came
	 * (connection lost, timeout): the host then retries per §6.1.
	 */
	int (*call)(void *ctx, uint32_t proc, const void *args, void *res,
		    void **reply);
	void (*release)(void *ctx, void *reply);
	/*
	 * PEER_READ of h at where, as requester in epoch, presenting tok:
	 * 0 with the verified, zero-filled block in out (the host caches
	 * it without hashing it again), or a negative errno (then the
	 * host reads the block from the server).
	 */
	int (*peer_fetch)(void *ctx, const struct csi_peer_addr *where,
			  uint64_t requester, uint64_t epoch,
			  const struct sc_hash *h, const struct csi_token *tok,
			  void *out);
	/*
	 * Optional: peer_fetch of each f[0..n), their calls in flight
	 * together, each one's result in f[i].err.  NULL: the host calls
	 * peer_fetch for one block after another.
	 */
	void (*peer_fetch_many)(void *ctx, uint64_t requester,
				uint64_t epoch, struct sc_peer_fetch *f,
				uint32_t n);
	/* After every HELLO: the identity the peer server must check. */
	void (*identity)(void *ctx, uint64_t host, uint64_t epoch,
			 const uint8_t secret[CSI_SECRET_SIZE]);
	void *ctx;
};

struct sc_host_config {
	uint8_t uuid[CSI_HOST_UUID_SIZE];	/* stable identity (§4 item 5) */
	const char *name;			/* for STATS */
	enum sc_variant variant;
	uint32_t cache_blocks;			/* content cache capacity */
	const char *policy;			/* eviction policy; NULL: elru:16 */
	uint64_t csimap_budget;			/* bytes; 0: 64 per cached block */
	/* where the cached blocks' memory comes from (compat.h), or NULL */
	struct sc_block_mem *block_mem;
	struct csi_peer_addr peer;		/* where it serves peer reads */
	/*
	 * How often one call is tried again after the transport failed
	 * (with back-off, 10 ms doubling to 2 s); 0: 12, about 10 s.  A
	 * host that has somewhere else to go (a kernel host's NFS mount)
	 * sets few.
	 */
	uint32_t io_retries;
	/*
	 * For a host that has somewhere else to go: a call the server did
	 * not answer by the transport's deadline (or after io_retries
	 * failed connections) marks the service down, and from then on
	 * every call fails at once with -EIO, without waiting, until
	 * sc_host_idle's probe is answered.  So a silent server costs a VM
	 * one deadline, not one per I/O and try.
	 */
	bool fail_fast;
	struct sc_host_transport tr;
};

/*
 * Where a host's requests spend their time (sc_host_get_times), to tell
 * what a storm's requests wait on: per kind, how many, their microseconds
 * in all and by powers of two (bucket k: under 2^k us; the last: the
 * rest).  Apart from struct sc_host_stats, whose readers (the kernel
 * module's sysfs files) keep it on the stack: all kinds take 1.6 KiB.
 */
#define SC_HOST_TIME_BUCKETS 20
struct sc_host_time {
	uint64_t n, us;
	uint64_t hist[SC_HOST_TIME_BUCKETS];
};

enum sc_host_time_kind {
	SC_HT_FETCH,		/* a read's misses, from lookup to the last */
	SC_HT_CALL,		/* a READ, sent to answered */
	SC_HT_PEER,		/* a reply's delegated blocks from peers */
	SC_HT_HASH_WAIT,	/* HASH answers waiting for earlier READs */
	SC_HT_FLIGHT_WAIT,	/* blocks waiting for another read's flight */
	SC_HT_SERVE_WAIT,	/* a peer read waiting for our READs */
	SC_HT_WRITE,		/* a WRITE, sent to answered */
	SC_HT_WRITE_REQ,	/* a write, whole: hashes, pins, cache, WRITEs */
	SC_HT_COMMIT,		/* a COMMIT, sent to answered */
	SC_HT_MAP,		/* a GET_MAP, sent to its windows in the cache */
	SC_HT_KINDS
};

struct sc_host_stats {
	uint64_t reads, read_blocks;	/* sc_host_read calls, blocks asked */
	uint64_t addr_hits;		/* served with no network at all */
	uint64_t pushed_hits;		/* ... of them through a pushed entry */
	uint64_t mapped_hits;		/* ... through a map window's entry */
	uint64_t content_hits;		/* the server named a cached content */
	uint64_t misses;		/* content fetched */
	uint64_t hole_blocks;
	uint64_t server_calls;		/* CSI calls sent (HELLO included) */
	uint64_t server_data_blocks, server_data_bytes;	/* DATA received */
	uint64_t hash_only_blocks;	/* HASH answers */
	uint64_t force_data_blocks;	/* re-reads with FORCE_DATA */
	/*
	 * Served by another VM's read in flight: a HASH answer's content,
	 * or a content another read was fetching (single flight)
	 */
	uint64_t waited_blocks;
	uint64_t readahead_blocks;	/* contents read ahead (rd_ahead) */
	uint64_t pushes_received;
	uint64_t map_calls;		/* GET_MAP calls (map windows) */
	uint64_t map_entries;		/* CSI-Map entries they brought */
	uint64_t map_waits;		/* reads that waited for a GET_MAP */
	uint64_t delegations;		/* DELEGATED answers */
	uint64_t peer_blocks, peer_bytes; /* fetched from peers */
	uint64_t peer_failures;		/* delegations read from the server */
	uint64_t peer_reports;		/* of them reported (PEER_REPORT) */
	uint64_t peer_served;		/* blocks this host served to peers */
	uint64_t writes, write_blocks;
	uint64_t write_hash_blocks;	/* accepted by hash */
	uint64_t write_need_data;	/* NEED_DATA answers */
	uint64_t write_data_bytes;	/* block bytes sent in WRITE */
	/* UNSTABLE writes sent FILE_SYNC: no memory to keep their blocks */
	uint64_t write_sync_fallbacks;
	uint64_t notices_sent;
	uint64_t notices_dropped;	/* lost to a full queue (bandwidth) */
	uint64_t registrations;		/* HELLOs that succeeded */
	/* fail_fast: times the service was marked down, calls failed so */
	uint64_t down_trips, down_calls;
	uint64_t csi_down;		/* marked down now (gauge, 0 or 1) */
	uint64_t files_dropped;		/* mappings dropped on a change id */
	uint64_t pinned_blocks;		/* unstable blocks kept (gauge) */
	uint64_t mem_bytes;		/* all the host holds, cache included */
	struct sc_hostcache_stats cache;
};

struct sc_host;

/* Creates the host and registers it (HELLO); 0 or a negative errno. */
int sc_host_create(const struct sc_host_config *c, struct sc_host **out);
/* Sends the queued notices, then frees.  The transport is not closed. */
void sc_host_destroy(struct sc_host *h);

/* The file's size and change id from the server; validates (§7.7). */
int sc_host_getattr(struct sc_host *h, uint64_t file,
		    struct csi_fileattr *attr);
/* LOOKUP (§7.1); also marks the file used, so pushes may name it. */
int sc_host_lookup(struct sc_host *h, const char *export_path,
		   const char *path, struct csi_fileattr *attr);

/*
 * Reads len bytes at off of file into buf; the bytes read (short only at
 * end of file) or a negative errno (-EIO, -ESTALE, -EACCES, ...).
 */
ssize_t sc_host_read(struct sc_host *h, uint64_t file, uint64_t off,
		     void *buf, size_t len);

/*
 * Where a read's bytes go when they have no flat buffer (a kernel's
 * iov_iter): copy copies n bytes from src to offset off of the request
 * and returns how many it copied, fewer where the caller's memory
 * faulted.  The bytes come in any order, some more than once (a block
 * asked again); blocks that hit are copied straight from the cache, with
 * no lock held, and the misses from the block they were read into.
 */
struct sc_read_sink {
	size_t (*copy)(void *ctx, uint64_t off, const void *src, size_t n);
	void *ctx;
};

/*
 * sc_host_read to a sink: the bytes read, short at end of file or where
 * the sink faulted (-EFAULT if at once), or a negative errno.
 */
ssize_t sc_host_read_sink(struct sc_host *h, uint64_t file, uint64_t off,
			  const struct sc_read_sink *to, size_t len);
/*
 * Writes len bytes at off of file, through to the server (stable: with
 * FILE_SYNC, else UNSTABLE until sc_host_commit); len or a negative errno.
 */
ssize_t sc_host_write(struct sc_host *h, uint64_t file, uint64_t off,
		      const void *buf, size_t len, bool stable);
int sc_host_commit(struct sc_host *h, uint64_t file);
/*
 * Hands every unstable block of file the host keeps (oldest first) to put
 * (offset, bytes) and forgets it: for a host that reaches the same file
 * another way (a kernel host's NFS mount) when the server cannot be
 * reached, so that what it acknowledged is not lost and is not written
 * again later over newer data.  0, or put's error (the blocks not put are
 * kept).
 */
int sc_host_pins_drain(struct sc_host *h, uint64_t file,
		       int (*put)(void *ctx, uint64_t off, const void *data,
				  uint32_t len),
		       void *ctx);
/* COMMIT of every file with unstable writes (before the host goes away). */
int sc_host_commit_all(struct sc_host *h);
/*
 * file changed behind the host's back (written through NFS): none of its
 * CSI-Map entries, its size or change id is used again until the server
 * tells them anew.
 */
void sc_host_forget_file(struct sc_host *h, uint64_t file);

/*
 * Sends queued eviction notices (and renews the lease) when idle; with
 * the service marked down (fail_fast), one probe of it instead (an
 * EVICT), which brings it back when answered.  Call it about every
 * second.
 */
int sc_host_idle(struct sc_host *h);

/*
 * For a memory shrinker: the blocks in the content cache (read without
 * a lock), and up to nr of them given back (evicted through the policy,
 * their memory freed; the returned count).  No network and no
 * allocation: the eviction notices are queued for the next request or
 * sc_host_idle (those a full queue cannot take are dropped and counted,
 * as for any eviction).  The shrink waits for no lock, so reclaim may
 * call it from anywhere, the host's own allocations under its locks
 * included: 0 if the cache's lock is held, and a notice the host's lock
 * keeps out is lost and counted as dropped.
 */
uint32_t sc_host_cache_blocks(struct sc_host *h);
uint32_t sc_host_shrink(struct sc_host *h, uint32_t nr);

/* For the peer server (sc_peer_get_fn): copy content hash out of cache. */
int sc_host_peer_get(void *host, const struct sc_hash *hash, void *buf,
		     uint32_t *len);

uint32_t sc_host_block_size(const struct sc_host *h);
uint32_t sc_host_features(const struct sc_host *h);	/* granted */
void sc_host_get_stats(struct sc_host *h, struct sc_host_stats *st);
void sc_host_get_times(struct sc_host *h,
		       struct sc_host_time t[SC_HT_KINDS]);

#endif /* SEACACHE_HOST_H */
