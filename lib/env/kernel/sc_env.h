/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Kernel environment of the SeaCache core.
 * Only seacache/compat.h includes this file.
 */
#ifndef SC_ENV_KERNEL_H
#define SC_ENV_KERNEL_H

#include <linux/errno.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/printk.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/types.h>

#define SC_ENOMEM ENOMEM
#define SC_EINVAL EINVAL
#define SC_EEXIST EEXIST
#define SC_ENOENT ENOENT
#define SC_EIO EIO

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

#define sc_memcpy(d, s, n) memcpy((d), (s), (n))
#define sc_memcmp(a, b, n) memcmp((a), (b), (n))
#define sc_memset(d, c, n) memset((d), (c), (n))
#define sc_strcmp(a, b) strcmp((a), (b))
#define sc_strncmp(a, b, n) strncmp((a), (b), (n))
#define sc_strlen(s) strlen(s)

typedef struct mutex sc_mutex_t;

static inline void sc_mutex_init(sc_mutex_t *m)
{
	mutex_init(m);
}

static inline void sc_mutex_destroy(sc_mutex_t *m)
{
	mutex_destroy(m);
}

static inline void sc_mutex_lock(sc_mutex_t *m)
{
	mutex_lock(m);
}

static inline void sc_mutex_unlock(sc_mutex_t *m)
{
	mutex_unlock(m);
}

#define sc_log_err(fmt, ...) pr_err("seacache: " fmt "\n", ##__VA_ARGS__)
#define sc_log_warn(fmt, ...) pr_warn("seacache: " fmt "\n", ##__VA_ARGS__)
#define sc_log_info(fmt, ...) pr_info("seacache: " fmt "\n", ##__VA_ARGS__)

#endif /* SC_ENV_KERNEL_H */
