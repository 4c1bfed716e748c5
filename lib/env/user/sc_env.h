/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * User-space environment of the SeaCache core: libc and pthreads.
 * Only seacache/compat.h includes this file.
 */
#ifndef SC_ENV_USER_H
#define SC_ENV_USER_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline void *sc_zalloc(size_t size)
{
	return calloc(1, size);
}

/* Zeroed array of n elements; NULL on overflow or exhaustion. */
static inline void *sc_calloc(size_t n, size_t size)
{
	return calloc(n, size);
}

static inline void sc_free(void *p)
{
	free(p);
}

struct sc_mutex {
	pthread_mutex_t m;
};

static inline void sc_mutex_init(struct sc_mutex *m)
{
	pthread_mutex_init(&m->m, NULL);
}

static inline void sc_mutex_destroy(struct sc_mutex *m)
{
	pthread_mutex_destroy(&m->m);
}

static inline void sc_mutex_lock(struct sc_mutex *m)
{
	pthread_mutex_lock(&m->m);
}

static inline void sc_mutex_unlock(struct sc_mutex *m)
{
	pthread_mutex_unlock(&m->m);
}

static inline void sc_msleep(unsigned int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000,
			       .tv_nsec = (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

static inline uint64_t sc_clock_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

#define sc_log_err(fmt, ...) \
	fprintf(stderr, "seacache: error: " fmt "\n", ##__VA_ARGS__)
#define sc_log_warn(fmt, ...) \
	fprintf(stderr, "seacache: warning: " fmt "\n", ##__VA_ARGS__)
#define sc_log_info(fmt, ...) \
	fprintf(stderr, "seacache: " fmt "\n", ##__VA_ARGS__)

#endif /* SC_ENV_USER_H */
