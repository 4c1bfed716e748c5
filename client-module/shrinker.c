// SPDX-License-Identifier: GPL-2.0-only
/*
 * A memory shrinker per mount: under memory pressure the kernel asks the
 * mount's host to give content-cache blocks back.  They leave through the
 * eviction policy, so the least valuable go first, and each is queued as
 * an eviction notice, which the idle work (kicked here) sends: the server
 * stops counting them as held here.  The cache then holds no more than
 * what is left until memory is free again (lib/include/seacache/ccache.h).
 *
 * The host's calls allocate under the host cache's lock in a NOFS scope,
 * and reclaim from such a scope arrives here without __GFP_FS: taking the
 * lock then could deadlock on ourselves, so neither count nor scan does.
 * Otherwise the work is short: the lock, some evictions and frees, no
 * network and no allocation.
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
	unsigned long n = 0;
	struct sc_host *host;
	int idx;

	if (!(sc->gfp_mask & __GFP_FS))
		return 0;
	host = scfs_host_enter(sbi->sb, &idx);
	if (host)
		n = sc_host_cache_blocks(host);
	scfs_host_exit(sbi->sb, idx);
	return n;
}

static unsigned long scfs_shrink_scan(struct shrinker *s,
				      struct shrink_control *sc)
{
	struct scfs_sb_info *sbi = scfs_shrinker_sbi(s);
	unsigned long freed = SHRINK_STOP;
	struct sc_host *host;
	int idx;

	if (!(sc->gfp_mask & __GFP_FS))
		return SHRINK_STOP;
	host = scfs_host_enter(sbi->sb, &idx);
	if (host) {
		freed = sc_host_shrink(host, min_t(unsigned long,
						   sc->nr_to_scan, U32_MAX));
		/* the notices out soon; the work stops with the host */
		if (freed)
			mod_delayed_work(system_wq, &sbi->idle_work, 0);
	}
	scfs_host_exit(sbi->sb, idx);
	return freed;
}

int scfs_shrinker_register(struct super_block *sb)
{
	struct scfs_sb_info *sbi = scfs_sb(sb);

	sbi->shrinker.count_objects = scfs_shrink_count;
	sbi->shrinker.scan_objects = scfs_shrink_scan;
	sbi->shrinker.seeks = DEFAULT_SEEKS;
	return register_shrinker(&sbi->shrinker, "seacache-%u:%u",
				 MAJOR(sb->s_dev), MINOR(sb->s_dev));
}

void scfs_shrinker_unregister(struct super_block *sb)
{
	/* a no-op if never registered */
	unregister_shrinker(&scfs_sb(sb)->shrinker);
}
