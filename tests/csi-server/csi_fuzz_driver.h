/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A fuzzing client for a live CSI service, in this process
 * (test_csi_fuzz_live) or in a ganesha.nfsd (test_fsal_csi_fuzz).
 *
 * While a "good" client registers and keeps reading one known file, block
 * by block checked against its content, several fuzzing connections send:
 * valid calls of every procedure (encoded with the codec, as one record or
 * in fragments and pieces), the same calls mutated (bit flips, truncation,
 * inflated counts, other programs, versions and procedures, random host
 * ids and epochs), records with bogus or oversize record marks, records
 * cut by a close, pipelines, random bytes, and bursts of connections over
 * the server's limit.
 *
 * Every answer is judged by what is certain: a call that decodes gets the
 * answer PROTOCOL.md §1.2 gives for it (or one of those its faults
 * allow), a successful result decodes, READ, GET_HASHES, GET_MAP and
 * pushes about the known file tell its true content, and a GET_MAP
 * answered OK was well formed, with an entry per file of the lengths
 * §7.11 gives.  First, fixed probes check
 * exact outcomes: GARBAGE_ARGS, PROG_UNAVAIL, PROG_MISMATCH, PROC_UNAVAIL,
 * RPC_MISMATCH and AUTH_TOOWEAK on one connection that then still works;
 * a dropped connection for a non-call, an oversize record mark and
 * fragments over the record limit; a record in three fragments answered;
 * a burst of max_conns + 8 connections of which at least 8 are refused.
 *
 * No fuzzing call may change the known file: one that would write it (as
 * the server decodes it) is not sent.  The process ignores SIGPIPE: the
 * project's RPC client writes with write(2), and a server that hung up
 * must be an error there, not the end of the program.
 */
#ifndef CSI_FUZZ_DRIVER_H
#define CSI_FUZZ_DRIVER_H

#include <stddef.h>
#include <stdint.h>

struct csi_fuzz_opts {
	const char *host;		/* the service: numeric address */
	uint16_t port;
	uint64_t seed;
	double seconds;			/* of random fuzzing, after the probes */
	unsigned int fuzzers;		/* fuzzing connections at once */
	unsigned int max_conns;		/* the server's connection limit */
	uint64_t file;			/* the known file ... */
	const uint8_t *content;		/* ... and its bytes (size of them, */
	uint64_t size;			/* at least 16 blocks) */
	uint64_t scratch;		/* a file fuzzing WRITEs aim at */
};

/* What was sent and seen, for the caller to print and check. */
struct csi_fuzz_report {
	uint64_t records;		/* sent whole (fragments count once) */
	uint64_t answered;		/* replies judged */
	uint64_t garbage_args;		/* GARBAGE_ARGS replies */
	uint64_t rpc_errors;		/* other RPC-level errors */
	uint64_t dropped;		/* connections the server closed */
	uint64_t refused;		/* burst connections closed unanswered */
	uint64_t cut;			/* records or replies cut by our close */
	uint64_t withheld;		/* mutants that would write the file */
	uint64_t bad_credentials;	/* AUTH_BADCRED replies */
	uint64_t good_calls;		/* the good client's */
	uint64_t good_blocks;		/* blocks it checked */
};

/*
 * The seed from CSI_FUZZ_SEED (else the clock) and the time from
 * CSI_FUZZ_SECONDS (else default_seconds).
 */
void csi_fuzz_opts_env(struct csi_fuzz_opts *o, double default_seconds);

/*
 * Probe, fuzz for o->seconds, then check that the good client still
 * reads the whole file right and that STATS answers.  0, or -1 with what
 * failed in err (a failing record is also dumped to stderr in hex, with
 * the seed, as a reproducer).
 */
int csi_fuzz_run(const struct csi_fuzz_opts *o, struct csi_fuzz_report *rep,
		 char *err, size_t errlen);
/* One line on stdout: what the run sent and saw. */
void csi_fuzz_report_print(const struct csi_fuzz_report *rep);

#endif /* CSI_FUZZ_DRIVER_H */
