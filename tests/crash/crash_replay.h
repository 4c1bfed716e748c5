/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Crash states from a crash log (crashlog.h): what a directory could hold
 * after a power cut at a point of the log.  The model is in
 * crash_replay.c's header comment.
 */
#ifndef SEACACHE_CRASH_REPLAY_H
#define SEACACHE_CRASH_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct crash_log;

/* Loads and checks a log; NULL and err filled in on failure. */
struct crash_log *crash_log_load(const char *path, char *err, size_t errlen);
void crash_log_free(struct crash_log *log);
/* Records in the log: a crash point is 0 .. this. */
size_t crash_log_len(const struct crash_log *log);
/*
 * Records in the log when it was size bytes long: another process (an NFS
 * client of a recorded ganesha.nfsd) that stat()s the log when a reply
 * comes knows the crash point after which that reply's promise must hold
 * (the recorder appends a call's record before the call returns).
 */
size_t crash_log_len_at(const struct crash_log *log, uint64_t size);
/* The marks (crashrec_mark) before crash point cut, in order: fn each. */
void crash_log_marks(const struct crash_log *log, size_t cut,
		     void (*fn)(void *ctx, uint64_t kind, uint64_t value),
		     void *ctx);

struct crash_opts {
	double drop;	/* chance that a change not yet durable is lost */
	double tear;	/* chance that a kept, not durable write is torn */
	bool posix_dirs; /* entries durable only by their directory's fsync */
};

struct crash_info {
	size_t forced;	/* changes a barrier made durable: applied */
	size_t kept;	/* not durable, applied whole */
	size_t torn;	/* not durable, applied in part (512-byte sectors) */
	size_t dropped;	/* not durable, lost */
};

/*
 * Builds in out (created; must not exist) what the recorded directory
 * holds after a power cut once the first cut records happened: initial
 * (the recorded directory's content when recording began, copied; NULL:
 * empty), then the changes, chosen at random from seed.  0 or -errno.
 */
int crash_state_build(const struct crash_log *log, const char *initial,
		      const char *out, size_t cut, uint64_t seed,
		      const struct crash_opts *o, struct crash_info *info);

/* rm -rf path: a crash state once checked. 0 or -EIO. */
int crash_tree_remove(const char *path);

#endif /* SEACACHE_CRASH_REPLAY_H */
