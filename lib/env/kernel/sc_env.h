/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Kernel environment of the SeaCache core.
 * Only seacache/compat.h includes this file.
 */
#ifndef SC_ENV_KERNEL_H
#define SC_ENV_KERNEL_H

#include <linux/delay.h>
#include <linux/errno.h>
#include <linux/ktime.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/printk.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/types.h>

/*
 * kvzalloc: the core's tables (cache slots, CSI-Map entries, bucket arrays)
 * can be far larger than what kmalloc hands out in one piece.
 */
static inline void *sc_zalloc(size_t size)
{
	return kvzalloc(size, GFP_KERNEL);
}

static inline void *sc_calloc(size_t n, size_t size)
{
	return kvcalloc(n, size, GFP_KERNEL);
}

static inline void sc_free(void *p)
{
	kvfree(p);
}

struct sc_mutex {
	struct mutex m;
};

static inline void sc_mutex_init(struct sc_mutex *m)
{
	mutex_init(&m->m);
}

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

static inline void sc_msleep(unsigned int ms)
{
	msleep(ms);
}

static inline u64 sc_clock_ms(void)
{
	return ktime_to_ms(ktime_get());
}

#define sc_log_err(fmt, ...) pr_err("seacache: " fmt "\n", ##__VA_ARGS__)
#define sc_log_warn(fmt, ...) pr_warn("seacache: " fmt "\n", ##__VA_ARGS__)
#define sc_log_info(fmt, ...) pr_info("seacache: " fmt "\n", ##__VA_ARGS__)

#endif /* SC_ENV_KERNEL_H */
