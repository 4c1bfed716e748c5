/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * User-space environment of the SeaCache core: libc and pthreads.
 * Only seacache/compat.h includes this file.
 */
#ifndef SC_ENV_USER_H
#define SC_ENV_USER_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/*
 * Allocation failure injection for the tests (user space only): the
 * calling thread's allocations still to go before one fails, 0 if none is
 * armed.  Per thread, so the servers a test runs in process do not eat
 * the count.
 */
extern _Thread_local unsigned int sc_alloc_fail_in;

/*
 * Makes the calling thread's n-th next allocation fail (n = 0:
 * none); returns the count the previous arming still had to go, so 0
 * after arming n means the failure happened.
 */
unsigned int sc_fault_inject_alloc(unsigned int n);

static inline bool sc_alloc_fails(void)
{
	return sc_alloc_fail_in && !--sc_alloc_fail_in;
}

static inline void *sc_zalloc(size_t size)
{
	return sc_alloc_fails() ? NULL : calloc(1, size);
}

/* Not zeroed: for memory the caller fills whole before it is read. */
static inline void *sc_malloc(size_t size)
{
	return sc_alloc_fails() ? NULL : malloc(size);
}

/* Zeroed array of n elements; NULL on overflow or exhaustion. */
static inline void *sc_calloc(size_t n, size_t size)
{
	return sc_alloc_fails() ? NULL : calloc(n, size);
}

/*
 * Blocks come from malloc: user space has no reclaim to tell apart (what
 * malloc gives is free memory) and no memory cgroup to charge, so a
 * cache's block memory is NULL.
 */
struct sc_block_mem;

static inline void *sc_block_alloc(struct sc_block_mem *mem, size_t size,
				   bool reclaim)
{
	(void)mem;
	(void)reclaim;
	return sc_malloc(size);
}

static inline void sc_block_free(struct sc_block_mem *mem, void *buf,
				 size_t size)
{
	(void)mem;
	(void)size;
	free(buf);
}

static inline void sc_free(void *p)
{
	free(p);
}

struct sc_mutex {
	pthread_mutex_t m;
};

/*
 * Adaptive where glibc has it: a thread that finds the mutex taken spins
 * a while before it sleeps, as the kernel's mutexes do; the core holds
 * its mutexes for well under a microsecond on its hot paths, where a
 * futex sleep and wake-up would cost more than the wait.
 */
static inline void sc_mutex_init(struct sc_mutex *m)
{
	pthread_mutexattr_t a;

	pthread_mutexattr_init(&a);
#ifdef PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
#endif
	pthread_mutex_init(&m->m, &a);
	pthread_mutexattr_destroy(&a);
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

static inline bool sc_mutex_trylock(struct sc_mutex *m)
{
	return pthread_mutex_trylock(&m->m) == 0;
}

/* A process is killed outright here: the wait is never cut short. */
static inline int sc_mutex_lock_killable(struct sc_mutex *m)
{
	pthread_mutex_lock(&m->m);
	return 0;
}

/* A process is killed outright here: the sleep is never cut short. */
static inline int sc_msleep_killable(unsigned int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000,
			       .tv_nsec = (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
	return 0;
}

/*
 * A wait queue: wakes counts sc_wake_all calls, so a waiter that saw the
 * count before testing its condition cannot miss the wake that follows.
 */
struct sc_waitq {
	pthread_mutex_t m;
	pthread_cond_t c;
	uint64_t wakes;
};

static inline void sc_waitq_init(struct sc_waitq *q)
{
	pthread_condattr_t a;

	pthread_mutex_init(&q->m, NULL);
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&q->c, &a);
	pthread_condattr_destroy(&a);
	q->wakes = 0;
}

static inline void sc_waitq_destroy(struct sc_waitq *q)
{
	pthread_cond_destroy(&q->c);
	pthread_mutex_destroy(&q->m);
}

static inline int sc_waitq_wait(struct sc_waitq *q, bool (*cond)(void *arg),
				void *arg, unsigned int ms)
{
	struct timespec until;
	uint64_t seen;
	int timed_out = 0;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (long)(ms % 1000) * 1000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	for (;;) {
		pthread_mutex_lock(&q->m);
		seen = q->wakes;
		pthread_mutex_unlock(&q->m);
		if (cond(arg))
			return 0;
		if (timed_out)
			return -ETIMEDOUT;
		pthread_mutex_lock(&q->m);
		while (q->wakes == seen && !timed_out)
			timed_out = pthread_cond_timedwait(&q->c, &q->m,
							   &until) == ETIMEDOUT;
		pthread_mutex_unlock(&q->m);
	}
}

static inline void sc_wake_all(struct sc_waitq *q)
{
	pthread_mutex_lock(&q->m);
	q->wakes++;
	pthread_cond_broadcast(&q->c);
	pthread_mutex_unlock(&q->m);
}

/* No reclaim re-enters a file system from user space. */
static inline unsigned int sc_nofs_save(void)
{
	return 0;
}

static inline void sc_nofs_restore(unsigned int flags)
{
	(void)flags;
}

/* Threads are preempted here. */
static inline void sc_cond_resched(void)
{
}

static inline void sc_prefetch(const void *p)
{
	__builtin_prefetch(p);
}

/*
 * A read that another thread may be writing: the value is only a guess
 * (the callers use it for prefetches, never to decide anything).
 */
#define sc_data_race(expr) (expr)

/*
 * A counter shared without a lock.  inc is unordered (the caller's lock
 * orders it); inc_return and dec_return are fully ordered; read_acquire
 * orders what follows after the read.
 */
typedef atomic_uint sc_atomic_t;

static inline void sc_atomic_inc(sc_atomic_t *a)
{
	atomic_fetch_add_explicit(a, 1, memory_order_relaxed);
}

static inline uint32_t sc_atomic_inc_return(sc_atomic_t *a)
{
	return atomic_fetch_add(a, 1) + 1;
}

static inline uint32_t sc_atomic_dec_return(sc_atomic_t *a)
{
	return atomic_fetch_sub(a, 1) - 1;
}

static inline uint32_t sc_atomic_read_acquire(const sc_atomic_t *a)
{
	return atomic_load_explicit(a, memory_order_acquire);
}

static inline uint64_t sc_clock_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static inline uint64_t sc_clock_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

#define sc_log_err(fmt, ...) \
	fprintf(stderr, "seacache: error: " fmt "\n", ##__VA_ARGS__)
#define sc_log_warn(fmt, ...) \
	fprintf(stderr, "seacache: warning: " fmt "\n", ##__VA_ARGS__)
#define sc_log_info(fmt, ...) \
	fprintf(stderr, "seacache: " fmt "\n", ##__VA_ARGS__)
/* A process's stderr is its own log: nothing to protect from a flood. */
#define sc_log_err_ratelimited sc_log_err
#define sc_log_warn_ratelimited sc_log_warn

#endif /* SC_ENV_USER_H */
