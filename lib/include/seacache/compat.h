/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The one door between the SeaCache core and its environment.
 *
 * The core's own files include this header and nothing else from libc or
 * the kernel.  The build puts exactly one environment directory on the
 * include path (lib/env/user or lib/env/kernel); its sc_env.h provides:
 *   fixed-width integers, bool, size_t, NULL;
 *   sc_zalloc/sc_calloc/sc_free (zeroed memory, may be large);
 *   struct sc_block_mem, where a content cache's blocks come from (NULL:
 *     the environment's plain memory; kernel: a mount's pages, charged to
 *     its memory cgroup and counted for its shrinker), with
 *     sc_block_alloc(mem, size, reclaim): a block's memory, not zeroed,
 *     NULL rather than an out-of-memory kill; without reclaim only memory
 *     free now (kernel: GFP_NOWAIT), so a cache shrunk under pressure grows
 *     back only into free memory; and sc_block_free(mem, buf, size);
 *   memcpy, memcmp, memset, strcmp, strncmp, strlen and the errno values
 *     (used here through the sc_ names below);
 *   struct sc_mutex with sc_mutex_init/lock/unlock/destroy,
 *     sc_mutex_trylock (true if taken) for reclaim, which must not wait,
 *     and sc_mutex_lock_killable: 0 once taken, -EINTR on a fatal signal
 *     (kernel only), for a lock whose holder may wait on the network;
 *   sc_msleep_killable(ms): sleeps; -EINTR if the task got a fatal signal
 *     (kernel; user space is never cut short), else 0;
 *   struct sc_waitq with sc_waitq_init/destroy, sc_wake_all and
 *     sc_waitq_wait(q, cond, arg, ms): 0 once cond(arg) holds (tested
 *     again after every wake, never in atomic context: it may take a
 *     mutex), -ETIMEDOUT after ms, -EINTR on a fatal signal (kernel only),
 *     so a task stuck on a dead server can be killed;
 *   sc_nofs_save/sc_nofs_restore: a scope whose allocations never recurse
 *     into a file system under reclaim (kernel: memalloc_nofs_save);
 *   sc_cond_resched: a rescheduling point for long loops that hold only
 *     sleeping locks;
 *   sc_clock_ms and sc_clock_us (monotonic milli- and microseconds);
 *   sc_prefetch(p): a hint to bring p's cache line in for reading;
 *   sc_data_race(expr): expr read while another thread may write it (a
 *     guess for prefetches and counts; kernel: data_race, for KCSAN);
 *   sc_atomic_t, a 32-bit counter shared without a lock (zeroed memory is
 *     0), with sc_atomic_inc (unordered), sc_atomic_inc_return and
 *     sc_atomic_dec_return (fully ordered) and sc_atomic_read_acquire;
 *   sc_log_err/sc_log_warn/sc_log_info, and sc_log_err_ratelimited/
 *     sc_log_warn_ratelimited for whatever a server or peer can trigger.
 */
#ifndef SEACACHE_COMPAT_H
#define SEACACHE_COMPAT_H

#include "sc_env.h"

/*
 * Both environments provide these under their C names; the core returns
 * negative errno values, as the kernel does.
 */
#define SC_ENOMEM ENOMEM
#define SC_EINVAL EINVAL
#define SC_EEXIST EEXIST
#define SC_ENOENT ENOENT
#define SC_EIO EIO
#define SC_EACCES EACCES
#define SC_EBUSY EBUSY		/* overloaded: try later or elsewhere */
#define SC_EBADMSG EBADMSG	/* malformed input */
#define SC_EMSGSIZE EMSGSIZE	/* output buffer too small */
#define SC_E2BIG E2BIG		/* a count over a protocol limit */
#define SC_ESTALE ESTALE	/* the file is gone */
#define SC_ENOSPC ENOSPC
#define SC_EPROTO EPROTO	/* the peer broke the protocol */
#define SC_EPROTONOSUPPORT EPROTONOSUPPORT	/* program, version refused */
#define SC_EREMOTEIO EREMOTEIO	/* the other side failed (SYSTEM_ERR) */
#define SC_EINTR EINTR		/* a fatal signal ended a wait */
#define SC_EFAULT EFAULT	/* the caller's memory could not be written */
#define SC_ETIMEDOUT ETIMEDOUT

#define sc_memcpy(d, s, n) memcpy((d), (s), (n))
#define sc_memcmp(a, b, n) memcmp((a), (b), (n))
#define sc_memset(d, c, n) memset((d), (c), (n))
#define sc_strcmp(a, b) strcmp((a), (b))
#define sc_strncmp(a, b, n) strncmp((a), (b), (n))
#define sc_strlen(s) strlen(s)

#define SC_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Index value meaning "no slot" in the core's index-linked structures. */
#define SC_NIL ((uint32_t)0xffffffffu)

/* Big-endian (network order) integers in byte buffers. */
static inline void sc_put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline uint32_t sc_get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static inline void sc_put_be64(uint8_t *p, uint64_t v)
{
	sc_put_be32(p, (uint32_t)(v >> 32));
	sc_put_be32(p + 4, (uint32_t)v);
}

static inline uint64_t sc_get_be64(const uint8_t *p)
{
	return (uint64_t)sc_get_be32(p) << 32 | sc_get_be32(p + 4);
}

static inline bool sc_is_pow2(uint64_t x)
{
	return x && !(x & (x - 1));
}

/* log2 of a power of two. */
static inline uint32_t sc_ilog2(uint64_t x)
{
	uint32_t n = 0;

	while (x >>= 1)
		n++;
	return n;
}

/* Smallest power of two >= x (x >= 1, x <= 2^31). */
static inline uint32_t sc_roundup_pow2(uint32_t x)
{
	uint32_t p = 1;

	while (p < x)
		p <<= 1;
	return p;
}

/* Largest power of two <= x (x >= 1). */
static inline uint32_t sc_rounddown_pow2(uint32_t x)
{
	uint32_t p = 1;

	while (p <= x / 2)
		p <<= 1;
	return p;
}

/* A 64-bit mixer (SplitMix64's finaliser): spreads structured keys. */
static inline uint64_t sc_mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

#endif /* SEACACHE_COMPAT_H */
