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

/* The core returns negative errno values, as the kernel does. */
#define SC_ENOMEM ENOMEM
#define SC_EINVAL EINVAL
#define SC_EEXIST EEXIST
#define SC_ENOENT ENOENT
#define SC_EIO EIO

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

#define sc_memcpy(d, s, n) memcpy((d), (s), (n))
#define sc_memcmp(a, b, n) memcmp((a), (b), (n))
#define sc_memset(d, c, n) memset((d), (c), (n))
#define sc_strcmp(a, b) strcmp((a), (b))
#define sc_strncmp(a, b, n) strncmp((a), (b), (n))
#define sc_strlen(s) strlen(s)

typedef pthread_mutex_t sc_mutex_t;

static inline void sc_mutex_init(sc_mutex_t *m)
{
	pthread_mutex_init(m, NULL);
}

static inline void sc_mutex_destroy(sc_mutex_t *m)
{
	pthread_mutex_destroy(m);
}

static inline void sc_mutex_lock(sc_mutex_t *m)
{
	pthread_mutex_lock(m);
}

static inline void sc_mutex_unlock(sc_mutex_t *m)
{
	pthread_mutex_unlock(m);
}

#define sc_log_err(fmt, ...) \
	fprintf(stderr, "seacache: error: " fmt "\n", ##__VA_ARGS__)
#define sc_log_warn(fmt, ...) \
	fprintf(stderr, "seacache: warning: " fmt "\n", ##__VA_ARGS__)
#define sc_log_info(fmt, ...) \
	fprintf(stderr, "seacache: " fmt "\n", ##__VA_ARGS__)

#endif /* SC_ENV_USER_H */
