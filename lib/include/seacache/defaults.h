/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * SeaCache's defaults and limits: what a host (seacache.ko, the host
 * library, the tools) and the CSI service must agree on, and the defaults
 * of the service's DEDUP { } parameters, each spelled here and nowhere
 * else.  Plain macros and no includes, so that the kernel module, the
 * FSAL and the tools all take them from this file.
 *
 * Outside C they come from here too: lib/defaults.cmake reads the integer
 * #defines below into CMake variables of the same names (the tests'
 * environment and .conf files), and `seacachectl defaults` prints them
 * as shell lines NAME=VALUE (scripts/lab).  A value is therefore a
 * decimal integer, optionally with a u/ull suffix, or a parenthesised
 * shift or product of such; a string is C-only.  A new integer goes into
 * seacachectl's list too, in this order: tests/seacachectl/defaults.sh
 * compares the two.
 *
 * The limits the XDR spec fixes (CSI_MAX_BLOCKS, CSI_MAX_PUSH, ...) stay
 * in csi_proto.h with the protocol they describe.
 */
#ifndef SEACACHE_DEFAULTS_H
#define SEACACHE_DEFAULTS_H

/*
 * The CSI service's TCP port where nothing else is said: seacache-host's
 * --csi-port, seacache.ko's csi_port=, the packaged ganesha.conf's and
 * the tests' and the lab's DEDUP { CSI_Port }.  The service itself has no
 * default port: CSI_Port = 0 (the default) keeps it off.
 */
#define SC_CSI_PORT 20050

/* Block size: a power of two in this range, fixed per store or cache. */
#define SC_BLOCK_SIZE_MIN 4096u
#define SC_BLOCK_SIZE_MAX 65536u
#define SC_BLOCK_SIZE_DEFAULT 4096u

/* ---- the CSI service: DEFAULT its DEDUP { } default, MIN/MAX its range */

#define SC_CSI_MAX_HOSTS_DEFAULT 64u
#define SC_CSI_MAX_HOSTS_MAX 65535u
/* (host, content) pairs the tracker holds */
#define SC_CSI_TRACKER_ENTRIES_DEFAULT (1u << 20)
#define SC_CSI_TRACKER_ENTRIES_MIN 64u
#define SC_CSI_TRACKER_ENTRIES_MAX (1u << 30)
/*
 * The share of the tracker one host may hold (percent): a host with a
 * cache larger than its share is answered with data for the rest, and no
 * host can push the others' entries out.
 */
#define SC_CSI_TRACKER_HOST_PERCENT_DEFAULT 25u
#define SC_CSI_TRACKER_HOST_PERCENT_MIN 1u
#define SC_CSI_TRACKER_HOST_PERCENT_MAX 100u
/*
 * Registrations from one address at once: a stranger that is admitted
 * from one address cannot take every slot.  One host is one
 * registration; several share an address only behind NAT or in tests.
 */
#define SC_CSI_HOSTS_PER_ADDR_DEFAULT 16u
/*
 * A registration's lease (seconds).  A host renews well inside the
 * shortest (seacache.ko every second), so MIN bounds how often it must.
 */
#define SC_CSI_LEASE_S_DEFAULT 90u
#define SC_CSI_LEASE_S_MIN 5u
#define SC_CSI_LEASE_S_MAX 3600u
/* Blocks per READ, GET_HASHES or WRITE (at most CSI_MAX_BLOCKS). */
#define SC_CSI_MAX_BLOCKS_DEFAULT 256u
/* Eviction notices per request (at most CSI_MAX_EVICT). */
#define SC_CSI_MAX_EVICT_DEFAULT 1024u
/* Pushed entries per READ reply (at most CSI_MAX_PUSH). */
#define SC_CSI_MAX_PUSH_DEFAULT 256u
/* How long a READ's push search may look (ms; 0: no limit). */
#define SC_CSI_PUSH_SEARCH_MS_DEFAULT 2u
#define SC_CSI_PUSH_SEARCH_MS_MAX 1000u
/* A peer token's lifetime (seconds; at most SC_PEER_TOKEN_MAX_AHEAD). */
#define SC_CSI_TOKEN_S_DEFAULT 30u
/*
 * A peer's failed delegations (PEER_REPORT) before the server stops
 * delegating to it, and for how long it stops (PROTOCOL.md §7.12).  MAX
 * is the reports a peer's record remembers against replays.
 */
#define SC_CSI_PEER_FAILURES_DEFAULT 8u
#define SC_CSI_PEER_FAILURES_MAX 32u
#define SC_CSI_PEER_SUSPEND_S_DEFAULT 60u
#define SC_CSI_PEER_SUSPEND_S_MAX 3600u
/* Files remembered per host as used, for pushes. */
#define SC_CSI_USED_FILES_DEFAULT 4096u
/* The service's worker threads, and the calls one connection has open. */
#define SC_CSI_WORKERS_DEFAULT 16u
#define SC_CSI_WORKERS_MAX 64u
#define SC_CSI_MAX_CALLS_PER_CONN_DEFAULT 16u
#define SC_CSI_MAX_CALLS_PER_CONN_MAX 1024u

/* ---- the transport, on both sides of a connection ---------------------- */

/*
 * The largest record either side accepts: a READ reply of CSI_MAX_BLOCKS
 * blocks of SC_BLOCK_SIZE_MAX (16 MiB) and its headers.
 */
#define SC_RPC_MAX_RECORD_DEFAULT (17u << 20)
/* A host's CSI call fails after this long without its reply (ms). */
#define SC_CSI_CALL_TIMEOUT_MS 30000
/*
 * ... a host's that has somewhere else to go (fail_fast in host.h: a
 * kernel host's NFS mount): a silent service costs a VM this once.
 */
#define SC_CSI_FALLBACK_TIMEOUT_MS 5000
/*
 * The CSI service's connections from one address at most (of its 256): a
 * host needs one or two, and one host or stranger cannot take them all.
 */
#define SC_CSI_MAX_CONNS_PER_ADDR 32u
/*
 * A server closes a connection with nothing in flight that sent nothing
 * for this long (ms; a host's keep-alive, §5.3, comes far more often), and
 * one that began a record and did not send all of it within this long: a
 * stalled or slow-loris client holds a slot and a record's bytes only so
 * long.  One whose other end stops answering TCP keep-alives (sent after
 * KEEPALIVE_S idle seconds, KEEPALIVE_S apart, PROBES unanswered) is
 * closed too, calls in flight or not: a host that died with calls open
 * frees its slot and their replies in under a minute.
 */
#define SC_RPC_IDLE_TIMEOUT_MS 300000
#define SC_RPC_RECORD_TIMEOUT_MS 30000
#define SC_RPC_KEEPALIVE_S 10
#define SC_KEEPALIVE_PROBES 3
/* A peer read gives up fast (ms): the server has the block too. */
#define SC_PEER_FETCH_TIMEOUT_MS 1000
/*
 * The longest PEER_READ call a peer reads: 24 bytes of header, a
 * credential and a verifier of at most 8 + 400 bytes each and 88 bytes of
 * arguments; anything longer is not worth reading.
 */
#define SC_PEER_MAX_REQUEST 4096u
/* Peer connections a host serves at once; more are refused at accept. */
#define SC_PEER_MAX_CONNS 64
/*
 * Of them from one address: a requester keeps one to each peer (its
 * pool) and opens a one-shot one now and then.  A connection that sent
 * nothing for IDLE, or that began a request and did not send all of it
 * within RECORD (or does not take its reply within it), is closed, as is
 * one whose other end stops answering TCP keep-alives (KEEPALIVE_S).
 */
#define SC_PEER_MAX_CONNS_PER_ADDR 8u
#define SC_PEER_IDLE_TIMEOUT_MS 60000u
#define SC_PEER_RECORD_TIMEOUT_MS 5000u
#define SC_PEER_KEEPALIVE_S 10
/*
 * Room in a PEER_READ reply beyond the block: reply header, a verifier
 * the decoder accepts (8 + 400 bytes), status and length.  A longer
 * record cannot be a valid answer: the transport fails it without
 * reading it whole.
 */
#define SC_PEER_REPLY_SLACK 1024u
/* Peers a host keeps a connection to; the others get one-shot ones. */
#define SC_PEER_POOL_SIZE 16

/* ---- a host ------------------------------------------------------------- */

/*
 * A mounted host's content cache (seacache.ko's and seacache-fuse's
 * cache=), in bytes: the default and the least it takes.
 */
#define SC_HOST_CACHE_BYTES_DEFAULT (256ull << 20)
#define SC_HOST_CACHE_BYTES_MIN (64ull << 10)
/*
 * A mounted host's tries of one call after the transport failed to
 * connect (back-off 10, 20, 40 ms), before it marks the service down and
 * sends its I/O to NFS: it has NFS to go to, so it waits little.
 */
#define SC_HOST_MOUNT_IO_RETRIES 3
/*
 * A mounted host's csi_timeo=, in tenths of a second as NFS's timeo=: at
 * most 10 minutes (the default is SC_CSI_FALLBACK_TIMEOUT_MS).
 */
#define SC_HOST_CSI_TIMEO_MAX 6000
/* The content cache's eviction policy when none is given. */
#define SC_HOST_POLICY_DEFAULT "elru:16"
/*
 * seacache-fuse's file system type in /proc/self/mountinfo, and where it
 * keeps each mount's statistics (DIR/<major:minor>/, one value a file, as
 * seacache.ko's /sys/fs/seacache/<major:minor>/): seacachectl finds them.
 */
#define SC_FUSE_FSTYPE "fuse.seacache-fuse"
#define SC_FUSE_STATS_DIR "/run/seacache-fuse"

#endif
