// SPDX-License-Identifier: BSD-2-Clause
#include "worker_check.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

static pthread_mutex_t wc_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long wc_failures;
static char wc_first[512];

bool worker_check(bool cond, const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (cond)
		return true;
	pthread_mutex_lock(&wc_lock);
	if (wc_failures++ == 0) {
		n = snprintf(wc_first, sizeof(wc_first), "%s:%d: ", file, line);
		va_start(ap, fmt);
		vsnprintf(wc_first + n, sizeof(wc_first) - (size_t)n, fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&wc_lock);
	return false;
}

bool worker_check_eq(long long got, long long want, const char *what,
		     const char *file, int line)
{
	return worker_check(got == want, file, line, "%s: %lld, not %lld",
			    what, got, want);
}

void worker_checks_passed(void)
{
	unsigned long n;
	char first[sizeof(wc_first)];

	pthread_mutex_lock(&wc_lock);
	n = wc_failures;
	snprintf(first, sizeof(first), "%s", wc_first);
	wc_failures = 0;
	wc_first[0] = '\0';
	pthread_mutex_unlock(&wc_lock);
	if (n)
		fail_msg("%lu check(s) failed on worker threads; the first: %s",
			 n, first);
}
