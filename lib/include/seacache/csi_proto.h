/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The CSI protocol's messages in C: one struct per XDR type of
 * protocol/seacache.x (the normative definition; PROTOCOL.md gives the
 * semantics).  Names carry a csi_ prefix where the XDR has sc_, so that
 * tests can hold these and rpcgen's structs side by side.
 *
 * Variable-length fields point into the buffer they were decoded from
 * (zero-copy): a decoded message lives as long as that buffer and the
 * decode arena.  Strings are counted, not NUL-terminated.  XDR unions are
 * flattened: the discriminant plus the fields of every arm, of which only
 * those of the selected arm are meaningful.
 */
#ifndef SEACACHE_CSI_PROTO_H
#define SEACACHE_CSI_PROTO_H

#include "compat.h"
#include "defaults.h"
#include "hash.h"

#define CSI_PROG 0x20534341u
#define CSI_PEER_PROG 0x20534350u
#define CSI_VERS 1u

enum csi_proc {
	CSI_PROC_NULL = 0,
	CSI_PROC_HELLO = 1,
	CSI_PROC_LOOKUP = 2,
	CSI_PROC_GET_HASHES = 3,
	CSI_PROC_READ = 4,
	CSI_PROC_WRITE = 5,
	CSI_PROC_COMMIT = 6,
	CSI_PROC_EVICT = 7,
	CSI_PROC_STATS = 8,
	CSI_PROC_GET_MAP = 9,
	CSI_PROC_PEER_REPORT = 10,
};

enum csi_peer_proc {
	CSI_PEER_PROC_NULL = 0,
	CSI_PEER_PROC_READ = 1,
};

#define CSI_MAC_SIZE 32
#define CSI_SECRET_SIZE 32
#define CSI_HOST_UUID_SIZE 16
#define CSI_ADDR_SIZE 16
#define CSI_MAX_BLOCK_SIZE 65536u
#define CSI_MAX_BLOCKS 256u
#define CSI_MAX_PUSH 1024u
#define CSI_MAX_EVICT 4096u
#define CSI_MAX_NAME 255u
#define CSI_MAX_PATH 4096u
#define CSI_MAX_COUNTERS 256u
#define CSI_MAX_COUNTER_NAME 64u
#define CSI_MAX_HOSTS 1024u
#define CSI_MAX_MAP_FILES 16u
#define CSI_MAX_MAP_BLOCKS 2048u
#define CSI_MAX_MAP_HOLES 256u		/* CSI_MAX_MAP_BLOCKS / 8 */
#define CSI_MAX_PEER_REPORTS 64u

#define CSI_FEAT_READ_HASH 0x01u
#define CSI_FEAT_TRACKER 0x02u
#define CSI_FEAT_PUSH 0x04u
#define CSI_FEAT_COOP 0x08u
#define CSI_FEAT_DEDUP_WRITE 0x10u
#define CSI_FEAT_MAP 0x20u
#define CSI_FEAT_PEER_REPORT 0x40u
#define CSI_FEAT_ALL 0x7fu

#define CSI_READ_WANT_DATA 0x01u
#define CSI_READ_FORCE_DATA 0x02u
#define CSI_READ_ACCEPT_DELEG 0x04u
#define CSI_READ_ACCEPT_PUSH 0x08u

enum csi_status {
	CSI_OK = 0,
	CSI_ERR_INVAL = 1,
	CSI_ERR_TOO_BIG = 2,
	CSI_ERR_UNKNOWN_HOST = 3,
	CSI_ERR_BAD_EPOCH = 4,
	CSI_ERR_STALE = 5,
	CSI_ERR_NOENT = 6,
	CSI_ERR_ACCESS = 7,
	CSI_ERR_BUSY = 8,
	CSI_ERR_IO = 9,
	CSI_ERR_NOSPC = 10,
	CSI_ERR_NOTSUPP = 11,
	CSI_ERR_BAD_TOKEN = 12,
	CSI_ERR_HASH_MISMATCH = 13,
};
#define CSI_STATUS_MAX CSI_ERR_HASH_MISMATCH

/* opaque<> and string<>: bytes of a buffer, not NUL-terminated. */
struct csi_bytes {
	const uint8_t *p;
	uint32_t len;
};

enum csi_addr_family {
	CSI_AF_NONE = 0,
	CSI_AF_INET = 1,
	CSI_AF_INET6 = 2,
};

struct csi_peer_addr {
	uint32_t family;		/* enum csi_addr_family */
	uint8_t addr[CSI_ADDR_SIZE];
	uint32_t port;
};

struct csi_token {
	uint64_t expiry;
	uint8_t mac[CSI_MAC_SIZE];
};

struct csi_reqhdr {
	uint64_t host;
	uint64_t epoch;
	const struct sc_hash *evicted;	/* may point into the decoded buffer */
	uint32_t nevicted;
};

struct csi_fileattr {
	uint64_t file;
	uint64_t size;
	uint64_t change;
};

/* HELLO */
struct csi_hello_args {
	uint8_t host_uuid[CSI_HOST_UUID_SIZE];
	struct csi_bytes host_name;
	struct csi_peer_addr peer;
	uint64_t cache_bytes;
	uint32_t features;
};

struct csi_hello_res {
	uint32_t status;
	/* CSI_OK: */
	uint64_t host;
	uint64_t epoch;
	uint32_t block_size;
	uint32_t max_blocks;
	uint32_t max_push;
	uint32_t max_evict;
	uint32_t features;
	uint32_t lease_seconds;
	uint8_t peer_secret[CSI_SECRET_SIZE];
};

/* LOOKUP */
struct csi_lookup_args {
	struct csi_reqhdr hdr;
	struct csi_bytes export_path;
	struct csi_bytes path;
};

struct csi_lookup_res {
	uint32_t status;
	struct csi_fileattr attr;	/* CSI_OK */
};

/* GET_HASHES */
struct csi_gethashes_args {
	struct csi_reqhdr hdr;
	uint64_t file;
	uint64_t lbn;
	uint32_t count;
};

enum csi_hkind {
	CSI_HK_HOLE = 0,
	CSI_HK_HASH = 1,
};

struct csi_block_hash {
	uint32_t kind;			/* enum csi_hkind */
	struct sc_hash hash;		/* CSI_HK_HASH */
};

struct csi_gethashes_res {
	uint32_t status;
	/* CSI_OK: */
	struct csi_fileattr attr;
	struct csi_block_hash *blocks;
	uint32_t nblocks;
};

/* GET_MAP */
struct csi_getmap_args {
	struct csi_reqhdr hdr;
	const uint64_t *files;		/* nfiles (decoded into the arena) */
	uint32_t nfiles;
	uint64_t lbn;
	uint32_t count;
};

/* One file's window: nblocks blocks from lbn, cut at end of file. */
struct csi_map_file {
	uint32_t status;
	/* CSI_OK: */
	struct csi_fileattr attr;
	const uint8_t *holes;		/* (nblocks + 7) / 8 bytes, bit i: lbn + i */
	uint32_t nholes_bytes;
	const struct sc_hash *hashes;	/* the blocks not holes, in order */
	uint32_t nhashes;
};

struct csi_getmap_res {
	uint32_t status;
	/* CSI_OK: */
	struct csi_map_file *files;
	uint32_t nfiles;
};

/* READ */
struct csi_read_args {
	struct csi_reqhdr hdr;
	uint64_t file;
	uint64_t lbn;
	uint32_t count;
	uint32_t flags;			/* CSI_READ_* */
};

enum csi_rkind {
	CSI_RK_HOLE = 0,
	CSI_RK_DATA = 1,
	CSI_RK_HASH = 2,
	CSI_RK_DELEGATED = 3,
};

struct csi_read_block {
	uint32_t kind;			/* enum csi_rkind */
	struct sc_hash hash;		/* DATA, HASH, DELEGATED */
	struct csi_bytes data;		/* DATA */
	uint64_t peer_host;		/* DELEGATED */
	struct csi_peer_addr peer;	/* DELEGATED */
	struct csi_token token;		/* DELEGATED */
};

struct csi_push_entry {
	uint64_t file;
	uint64_t lbn;
	uint64_t change;
	struct sc_hash hash;
};

struct csi_read_res {
	uint32_t status;
	/* CSI_OK: */
	struct csi_fileattr attr;
	struct csi_read_block *blocks;
	uint32_t nblocks;
	struct csi_push_entry *pushed;
	uint32_t npushed;
};

/* WRITE, COMMIT */
enum csi_stable {
	CSI_UNSTABLE = 0,
	CSI_DATA_SYNC = 1,
	CSI_FILE_SYNC = 2,
};

enum csi_wkind {
	CSI_WK_DATA = 1,
	CSI_WK_HASH = 2,
};

struct csi_write_block {
	uint32_t kind;			/* enum csi_wkind */
	struct sc_hash hash;
	struct csi_bytes data;		/* CSI_WK_DATA */
};

struct csi_write_args {
	struct csi_reqhdr hdr;
	uint64_t file;
	uint64_t lbn;
	uint64_t end;
	uint32_t stable;		/* enum csi_stable */
	struct csi_write_block *blocks;
	uint32_t nblocks;
};

enum csi_wstatus {
	CSI_W_OK = 0,
	CSI_W_NEED_DATA = 1,
};

struct csi_write_res {
	uint32_t status;
	/* CSI_OK: */
	uint64_t pre_change;
	struct csi_fileattr attr;
	uint32_t committed;		/* enum csi_stable */
	uint32_t *blocks;		/* enum csi_wstatus per block */
	uint32_t nblocks;
};

struct csi_commit_args {
	struct csi_reqhdr hdr;
	uint64_t file;
};

struct csi_commit_res {
	uint32_t status;
	struct csi_fileattr attr;	/* CSI_OK */
};

/* EVICT */
struct csi_evict_args {
	struct csi_reqhdr hdr;
};

struct csi_evict_res {
	uint32_t status;
};

/* STATS */
struct csi_stats_args {
	bool per_host;
};

struct csi_counter {
	struct csi_bytes name;
	uint64_t value;
};

struct csi_host_stats {
	uint64_t host;
	struct csi_bytes host_name;
	struct csi_counter *counters;
	uint32_t ncounters;
};

struct csi_stats_res {
	uint32_t status;
	/* CSI_OK: */
	uint64_t epoch;
	struct csi_counter *counters;
	uint32_t ncounters;
	struct csi_host_stats *hosts;
	uint32_t nhosts;
};

/* PEER_REPORT (its result is csi_evict_res) */
struct csi_peer_failure {
	uint64_t peer_host;
	struct sc_hash hash;
	struct csi_token token;
};

struct csi_peer_report_args {
	struct csi_reqhdr hdr;
	const struct csi_peer_failure *failures;	/* in the arena */
	uint32_t nfailures;
};

/* PEER_READ */
struct csi_peer_read_args {
	uint64_t requester;
	uint64_t epoch;
	struct sc_hash hash;
	struct csi_token token;
};

struct csi_peer_read_res {
	uint32_t status;
	struct csi_bytes data;		/* CSI_OK */
};

#endif /* SEACACHE_CSI_PROTO_H */
