// SPDX-License-Identifier: GPL-2.0-only
/*
 * A memory shrinker per mount: under memory pressure the kernel asks the
 * mount's host to give content-cache blocks back.  They leave through the
 * eviction policy, so the least valuable go first, and each is queued as
 * an eviction notice, which the idle work (kicked here) sends: the server
 * stops counting them as held here.  The cache then holds no more than
 * what is left until memory is free again (lib/include/seacache/ccache.h).
 *
 * The blocks are pages charged to the memory cgroup of whoever mounted
 * (lib/env/kernel/block_mem.c), each with an entry on the mount's
 * list_lru, so the shrinker is memcg-aware: a cgroup at its limit
 * reclaims the caches it owns, and other cgroups' reclaim never empties
 * them.  It is NUMA-aware in its counts: a node's reclaim is told of the
 * blocks on that node, and asks for no more.  The victims are still the
 * policy's, which on a machine of several nodes may sit on another one:
 * the policy knows recency and sharing, not nodes.
 *
 * Neither count nor scan waits for a lock, so reclaim may come in from
 * anywhere, our own NOFS allocations under the host's locks included: the
 * count is the list_lru's, the scan takes the host cache's lock only if
 * it is free (SHRINK_STOP when held), and the host's, for each eviction
 * notice, the same way (a notice it keeps out is lost and counted,
 * lib/host/host.c).  NOFS reclaim must be let in: the CSI socket's
 * buffers are charged to the mounter's cgroup too, and allocated NOFS,
 * and in a cgroup at its limit the cache is what reclaim can free.  The
 * work itself is short: some evictions and frees, no network and no
 * allocation.
 */
#include "seacache.h"

static struct scfs_sb_info *scfs_shrinker_sbi(struct shrinker *s)
{
	return container_of(s, struct scfs_sb_info, shrinker);
}

static unsigned long scfs_shrink_count(struct shrinker *s,
				       struct shrink_control *sc)
{
	struct scfs_sb_info *sbi = scfs_shrinker_sbi(s);

	/*
	 * Registered before the list_lru, which needs the shrinker's id:
	 * pairs with the release in scfs_shrinker_register.
	 */
	if (!smp_load_acquire(&sbi->block_mem_ready))
		return 0;
	return sc_block_mem_count(&sbi->block_mem, sc);
}

static unsigned long scfs_shrink_scan(struct shrinker *s,
				      struct shrink_control *sc)
{
	struct scfs_sb_info *sbi = scfs_shrinker_sbi(s);
	unsigned long freed = 0;
	struct sc_host *host;
	int idx;

	host = scfs_host_enter(sbi->sb, &idx);
	if (host) {
		freed = sc_host_shrink(host, min_t(unsigned long,
						   sc->nr_to_scan, U32_MAX));
		/* the notices out soon; the work stops with the host */
		if (freed)
			mod_delayed_work(system_wq, &sbi->idle_work, 0);
	}
	scfs_host_exit(sbi->sb, idx);
	return freed ? freed : SHRINK_STOP;
}

int scfs_shrinker_register(struct super_block *sb)
{
	struct scfs_sb_info *sbi = scfs_sb(sb);
	int err;

	sbi->shrinker.count_objects = scfs_shrink_count;
	sbi->shrinker.scan_objects = scfs_shrink_scan;
	sbi->shrinker.seeks = DEFAULT_SEEKS;
	sbi->shrinker.flags = SHRINKER_MEMCG_AWARE | SHRINKER_NUMA_AWARE;
	err = register_shrinker(&sbi->shrinker, "seacache-%u:%u",
				MAJOR(sb->s_dev), MINOR(sb->s_dev));
	if (err)
		return err;
	err = sc_block_mem_init(&sbi->block_mem, &sbi->shrinker);
	if (err)
		return err;
	/* the list_lru whole before a count sees it: pairs with its acquire */
	smp_store_release(&sbi->block_mem_ready, true);
	return 0;
}

void scfs_shrinker_unregister(struct super_block *sb)
{
	/* a no-op if never registered */
	unregister_shrinker(&scfs_sb(sb)->shrinker);
}

/* After the host, whose cache's blocks were the list_lru's entries. */
void scfs_block_mem_destroy(struct super_block *sb)
{
	struct scfs_sb_info *sbi = scfs_sb(sb);

	if (sbi->block_mem_ready)
		sc_block_mem_destroy(&sbi->block_mem);
}
