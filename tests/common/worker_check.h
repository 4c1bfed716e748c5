/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef SC_WORKER_CHECK_H
#define SC_WORKER_CHECK_H
/*
 * Checks on worker threads.  cmocka's assertions longjmp to the test's own
 * thread: called on another one they crash or hang the run instead of
 * failing the test.  A worker checks with WCHECK / WCHECK_EQ, which record
 * the first failure (with its place) and count them all, and returns; the
 * test asserts worker_checks_passed() after joining its workers, which
 * fails it with the first failure recorded and resets the record.
 */
#include <stdbool.h>

bool worker_check(bool cond, const char *file, int line, const char *fmt,
		  ...) __attribute__((format(printf, 4, 5)));
bool worker_check_eq(long long got, long long want, const char *what,
		     const char *file, int line);

#define WCHECK(cond) worker_check((cond), __FILE__, __LINE__, "%s", #cond)
#define WCHECK_EQ(got, want) \
	worker_check_eq((long long)(got), (long long)(want), \
			#got " == " #want, __FILE__, __LINE__)

/* On the test's thread, after the join: cmocka-fails if a check failed. */
void worker_checks_passed(void);

#endif
