/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Trace readers for seacache-sim: one request at a time from a stream, so a
 * trace of any size replays in constant memory.
 *
 * Formats (one file each, trace_<name>.c):
 *   "fiu"       FIU IODedup blkparse lines, content fingerprints (MD5);
 *               vm = the device (major:minor)
 *   "fiu-pid"   the same, vm = the process id
 *   "msr"       MSR Cambridge CSV, address only (fp_len 0)
 *   "seacache"  the SeaCache workload format (WORKLOAD-FORMAT.md)
 *   "binary"    the project's own compact form of any of them (below),
 *               read with mmap; told by its magic, never by --format
 *   "auto"/NULL detected from the first line.
 * Plain, gzip and zstd files are all read directly (detected by magic).
 * Mapping details (alignment, 512 B hashes, larger blocks): README.md,
 * section "Trace readers".
 *
 * A bad line is never skipped silently and never fatal: it is counted, the
 * first SIM_TRACE_BAD_KEEP are kept with their line number and reason, and
 * reading goes on.  Only I/O and decompression errors end a trace early.
 */
#ifndef SEACACHE_SIM_TRACE_H
#define SEACACHE_SIM_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * One request, covering whole blocks of the block size given to
 * sim_trace_open() (a request that is not block aligned is widened to the
 * blocks it touches and counted in stats.unaligned).
 *
 * vm and file are dense ids from 0: the trace's own small integers for the
 * workload format, else numbered in order of first appearance.  fp points
 * into the reader and stays valid until the next sim_trace_next() call.
 *
 * addr and content (after sim_trace_want_ids(), and always from a binary
 * trace) give each block dense ids from 0 in order of first appearance:
 * addr names the (file, block) address, content the fingerprint
 * (sim_fp_key), NULL when the trace has none.  A simulator indexes arrays
 * by them: one lookup per block here, none from a binary trace.  A binary
 * trace gives no file, lbn or fp (0, 0, NULL).
 */
struct sim_req {
	uint64_t ts_ns; /* since the first request (0 if earlier); not sorted */
	uint32_t vm;
	uint8_t op; /* 'R' or 'W' */
	uint64_t file;
	uint64_t lbn; /* in blocks of the block size */
	uint32_t nblocks; /* >= 1 */
	const uint8_t *fp; /* nblocks fingerprints of fp_len bytes each */
	uint32_t fp_len; /* 0: no fingerprints (address-only trace) */
	const uint32_t *addr; /* nblocks address ids, or NULL */
	const uint32_t *content; /* nblocks content ids, or NULL */
};

#define SIM_TRACE_BAD_KEEP 8

struct sim_trace_stats {
	uint64_t lines; /* every line read, comments and blanks included */
	uint64_t requests; /* returned by sim_trace_next() */
	uint64_t malformed; /* lines rejected (also counted in lines) */
	uint64_t unaligned; /* requests widened to block boundaries */
	uint64_t in_bytes; /* bytes read from the file (compressed) */
	uint64_t in_size; /* file size, 0 if unknown: in_bytes/in_size = progress */
	uint32_t nbad; /* entries used in bad[] */
	struct sim_trace_bad {
		uint64_t line; /* 1-based */
		char reason[64];
	} bad[SIM_TRACE_BAD_KEEP];
};

struct sim_trace;

/*
 * Open path ("-" for stdin) in format (see above); block_size is a power of
 * two from 4096 to 65536, or 0 for the trace's own (4096 unless the file
 * says otherwise).  NULL on error, with a message in err.
 */
struct sim_trace *sim_trace_open(const char *path, const char *format,
				 uint32_t block_size, char *err, size_t errlen);
/* 1: *req filled; 0: end of trace; -1: I/O or decompression error (message
 * from sim_trace_error()).  Malformed lines never return -1. */
int sim_trace_next(struct sim_trace *t, struct sim_req *req);
/*
 * A binary trace's requests after those read, one a call, from a cursor of
 * its own that reads nothing (for a simulator that prefetches what they
 * will touch): 1, or 0 at the end, on a truncated record and always from
 * a text trace.  Its ids stay valid until sim_trace_close().
 */
int sim_trace_ahead(struct sim_trace *t, struct sim_req *req);
const struct sim_trace_stats *sim_trace_stats(const struct sim_trace *t);
const char *sim_trace_error(const struct sim_trace *t);
/* Name of the format read ("fiu", "msr", ...), after detection. */
const char *sim_trace_format(const struct sim_trace *t);
uint32_t sim_trace_block_size(const struct sim_trace *t);
/*
 * How the trace's fingerprints were made, as its header says (a SeaCache
 * workload's fingerprint=, e.g. "xxh128": workload_fp.h), or "".
 */
const char *sim_trace_fingerprint(const struct sim_trace *t);
/* Give every request's blocks address and content ids (struct sim_req). */
void sim_trace_want_ids(struct sim_trace *t);
/*
 * Ids handed out so far (every id given is below them); from a binary
 * trace, those of the whole trace from the start, and then true.
 */
bool sim_trace_ids(const struct sim_trace *t, uint32_t *addrs,
		   uint32_t *contents);
/* Bytes of the reader's id tables. */
size_t sim_trace_id_bytes(const struct sim_trace *t);
/* 64-bit content key of a fingerprint (fp_len bytes, >= 8 used fully). */
uint64_t sim_fp_key(const uint8_t *fp, uint32_t len);

/*
 * The binary trace: a 64-byte header, then per request a record, all
 * little-endian:
 *   header  "SCTRACE1", u32 block_size, u32 flags (1: content ids),
 *           u64 requests, u64 blocks, u32 addresses, u32 contents,
 *           u32 vms, zeros to 64 bytes
 *   record  u64 ts_ns, u32 vm, u32 nblocks | 1 << 31 for a write,
 *           u32 address id per block, then u32 content id per block (flag 1)
 * Write one from any trace: 0, or -1 with a message in err.
 */
int sim_trace_convert(const char *in, const char *format, uint32_t block_size,
		      const char *out, char *err, size_t errlen);

/* Lines, requests and every kept malformed line, one per line, to f. */
void sim_trace_report(const struct sim_trace *t, FILE *f);
void sim_trace_close(struct sim_trace *t);

#endif /* SEACACHE_SIM_TRACE_H */
