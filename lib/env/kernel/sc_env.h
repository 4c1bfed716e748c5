/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Kernel environment of the SeaCache core.
 * Only seacache/compat.h includes this file.
 */
#ifndef SC_ENV_KERNEL_H
#define SC_ENV_KERNEL_H

#include <linux/atomic.h>
#include <linux/compiler.h>
#include <linux/jiffies.h>
#include <linux/list_lru.h>
#include <linux/errno.h>
#include <linux/ktime.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/prefetch.h>
#include <linux/printk.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/shrinker.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/types.h>
#include <linux/wait.h>

/*
 * kvzalloc: the core's tables (cache slots, CSI-Map entries, bucket arrays)
 * can be far larger than what kmalloc hands out in one piece.
 */
static inline void *sc_zalloc(size_t size)
{
	return kvzalloc(size, GFP_KERNEL);
}

/* Not zeroed: for memory the caller fills whole before it is read. */
static inline void *sc_malloc(size_t size)
{
	return kvmalloc(size, GFP_KERNEL);
}

static inline void *sc_calloc(size_t n, size_t size)
{
	return kvcalloc(n, size, GFP_KERNEL);
}

/*
 * A content cache's blocks are pages (block_mem.c).  A mount's cache has
 * one struct sc_block_mem: the memory cgroup of the task that mounted,
 * charged for every block whoever reads it, and a list_lru with one entry
 * per block, in the block's cgroup and node, which is how reclaim finds
 * the mount's shrinker for a cgroup and counts what it could free there.
 * NULL (the core's self-tests): pages charged to nobody.
 */
struct sc_block_mem {
	struct list_lru lru;
	struct mem_cgroup *memcg;
};

void *sc_block_alloc(struct sc_block_mem *mem, size_t size, bool reclaim);
void sc_block_free(struct sc_block_mem *mem, void *buf, size_t size);

/* For the module: mem's cgroup is the caller's; lru for shrinker s. */
int sc_block_mem_init(struct sc_block_mem *mem, struct shrinker *s);
void sc_block_mem_destroy(struct sc_block_mem *mem);
/* Blocks of mem in the cgroup and node that reclaim asks about. */
unsigned long sc_block_mem_count(struct sc_block_mem *mem,
				 struct shrink_control *sc);
int sc_block_mem_module_init(void);
void sc_block_mem_module_exit(void);

static inline void sc_free(void *p)
{
	kvfree(p);
}

struct sc_mutex {
	struct mutex m;
};

/*
 * A macro: mutex_init gives each place that calls it a lock class of its
 * own, so lockdep tells the core's mutexes apart (through one inline
 * function they would share a class, and one taken inside another, as the
 * host's lock inside its hello_lock, would read as recursion).
 */
#define sc_mutex_init(mx) mutex_init(&(mx)->m)

static inline void sc_mutex_destroy(struct sc_mutex *m)
{
	mutex_destroy(&m->m);
}

static inline void sc_mutex_lock(struct sc_mutex *m)
{
	mutex_lock(&m->m);
}

static inline void sc_mutex_unlock(struct sc_mutex *m)
{
	mutex_unlock(&m->m);
}

static inline bool sc_mutex_trylock(struct sc_mutex *m)
{
	return mutex_trylock(&m->m);
}

static inline int sc_mutex_lock_killable(struct sc_mutex *m)
{
	return mutex_lock_killable(&m->m);
}

/* TASK_KILLABLE: only a fatal signal cuts the back-off short. */
static inline int sc_msleep_killable(unsigned int ms)
{
	schedule_timeout_killable(msecs_to_jiffies(ms));
	return fatal_signal_pending(current) ? -EINTR : 0;
}

struct sc_waitq {
	wait_queue_head_t wq;
};

static inline void sc_waitq_init(struct sc_waitq *q)
{
	init_waitqueue_head(&q->wq);
}

static inline void sc_waitq_destroy(struct sc_waitq *q)
{
}

/*
 * wait_woken, not wait_event_killable_timeout: cond runs in TASK_RUNNING,
 * so it may take a mutex; a wake between cond and the sleep is not lost.
 */
static inline int sc_waitq_wait(struct sc_waitq *q, bool (*cond)(void *arg),
				void *arg, unsigned int ms)
{
	DEFINE_WAIT_FUNC(wait, woken_wake_function);
	long left = msecs_to_jiffies(ms);
	int err = 0;

	add_wait_queue(&q->wq, &wait);
	while (!cond(arg)) {
		if (fatal_signal_pending(current)) {
			err = -EINTR;
			break;
		}
		if (!left) {
			err = -ETIMEDOUT;
			break;
		}
		left = wait_woken(&wait, TASK_KILLABLE, left);
	}
	remove_wait_queue(&q->wq, &wait);
	return err;
}

static inline void sc_wake_all(struct sc_waitq *q)
{
	wake_up_all(&q->wq);
}

static inline unsigned int sc_nofs_save(void)
{
	return memalloc_nofs_save();
}

static inline void sc_nofs_restore(unsigned int flags)
{
	memalloc_nofs_restore(flags);
}

static inline void sc_cond_resched(void)
{
	cond_resched();
}

static inline void sc_prefetch(const void *p)
{
	prefetch(p);
}

/* A racy read, a guess only: KCSAN is told it is meant. */
#define sc_data_race(expr) data_race(expr)

/* A counter shared without a lock; see the user-space environment. */
typedef atomic_t sc_atomic_t;

static inline void sc_atomic_inc(sc_atomic_t *a)
{
	atomic_inc(a);
}

static inline u32 sc_atomic_inc_return(sc_atomic_t *a)
{
	return atomic_inc_return(a);
}

static inline u32 sc_atomic_dec_return(sc_atomic_t *a)
{
	return atomic_dec_return(a);
}

static inline u32 sc_atomic_read_acquire(const sc_atomic_t *a)
{
	return atomic_read_acquire(a);
}

static inline u64 sc_clock_ms(void)
{
	return ktime_to_ms(ktime_get());
}

static inline u64 sc_clock_us(void)
{
	return ktime_to_us(ktime_get());
}

#define sc_log_err(fmt, ...) pr_err(fmt "\n", ##__VA_ARGS__)
#define sc_log_warn(fmt, ...) pr_warn(fmt "\n", ##__VA_ARGS__)
#define sc_log_info(fmt, ...) pr_info(fmt "\n", ##__VA_ARGS__)
#define sc_log_err_ratelimited(fmt, ...) \
	pr_err_ratelimited(fmt "\n", ##__VA_ARGS__)
#define sc_log_warn_ratelimited(fmt, ...) \
	pr_warn_ratelimited(fmt "\n", ##__VA_ARGS__)

#endif /* SC_ENV_KERNEL_H */
