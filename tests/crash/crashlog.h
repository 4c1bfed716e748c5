/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The crash log: what the recorder (crashrec.c, an LD_PRELOAD shim) saw a
 * process do to the files under one directory, in the order it happened,
 * and what the replayer (crash_replay.c) builds crash states from.
 *
 * A log is a sequence of records, each a struct crashlog_rec followed by
 * path_len bytes of path, path2_len bytes of a second path and data_len
 * bytes of data.  Paths are relative to the recorded directory, without a
 * leading slash ("" is the directory itself).  Integers are in the host's
 * byte order: a log is read on the machine that wrote it.
 */
#ifndef SEACACHE_CRASHLOG_H
#define SEACACHE_CRASHLOG_H

#include <stdint.h>

#define CRASHLOG_MAGIC 0x31474f4c48535243ull	/* "CRSHLOG1" */

enum crashlog_op {
	CL_WRITE = 1,	/* off, data: bytes written (pwrite, write, writev...) */
	CL_TRUNCATE,	/* off: the new size (ftruncate, truncate, O_TRUNC) */
	CL_PUNCH,	/* off, len: hole punched, size kept */
	CL_ZERO,	/* off, len: zeroed (fallocate ZERO_RANGE); CL_F_KEEP_SIZE */
	CL_EXTEND,	/* off, len: fallocate mode 0: size >= off + len */
	CL_FSYNC,	/* path: fsync/fdatasync/msync(MS_SYNC) of the file or dir */
	CL_SYNC,	/* sync(), syncfs(): every file */
	CL_CREATE,	/* path: a new regular file */
	CL_MKDIR,	/* path: a new directory */
	CL_UNLINK,	/* path: a file's name removed */
	CL_RMDIR,	/* path */
	CL_RENAME,	/* path -> path2 */
	CL_WRITEBACK,	/* off, len: sync_file_range without a wait: no barrier */
	CL_MARK,	/* off: kind, len: value; from crashrec_mark() */
	CL_UNTRACEABLE,	/* path: a change the log cannot hold (a writable
			 * shared mapping, a hard link, copy_file_range...):
			 * the log is unusable */
};

/* CL_WRITE: the write was durable when it returned (O_DSYNC, RWF_DSYNC). */
#define CL_F_DURABLE 1u
/* CL_ZERO: the size does not change. */
#define CL_F_KEEP_SIZE 2u

struct crashlog_rec {
	uint32_t op;		/* enum crashlog_op */
	uint32_t flags;
	uint64_t off;
	uint64_t len;
	uint32_t path_len;
	uint32_t path2_len;
	uint64_t data_len;
};

/*
 * The recorder exports this; a driver preloaded with it finds it with
 * dlsym(RTLD_DEFAULT, CRASHREC_MARK_SYMBOL) and notes its own events
 * (an operation begun, acknowledged...) in the log, in order with the
 * file changes around them.
 */
#define CRASHREC_MARK_SYMBOL "crashrec_mark"
typedef void (*crashrec_mark_fn)(uint64_t kind, uint64_t value);

#endif /* SEACACHE_CRASHLOG_H */
