// SPDX-License-Identifier: GPL-2.0-only
/*
 * A content cache's blocks in pages.
 *
 * A block is one allocation of 2^order pages (order 0 for the 4 KiB blocks
 * a VDI image uses), so a block that leaves the cache gives whole pages
 * back, and a reader can copy it into an iov_iter as pages.  Its memory is
 * kernel memory charged (__GFP_ACCOUNT) to the memory cgroup of the task
 * that mounted: the cache is the mount's, not the reading VM's, and a
 * cgroup limit on the mount's owner bounds it.
 *
 * Reclaim calls a memcg-aware shrinker for a cgroup only once that
 * cgroup has an object on one of the shrinker's list_lrus (mm/vmscan.c
 * keeps a bit per cgroup and node; list_lru sets it), and the kernel
 * lets a module put objects in a cgroup's list only through a slab
 * allocation (kmem_cache_alloc_lru).  So each block has a small entry, in
 * the same cgroup, on the mount's list_lru: its count per cgroup and node
 * is what the shrinker reports, and it needs no lock of ours.  The entry
 * is found from the block through its first page's private field.
 *
 * The allocations never wait long and never kill: a cache does without a
 * block rather than retry reclaim or invoke the OOM killer.
 */
#include "seacache/compat.h"

#include <linux/memcontrol.h>
#include <linux/swap.h>

struct sc_block_entry {
	struct list_head lru;
};

static struct kmem_cache *sc_block_entries;

int sc_block_mem_module_init(void)
{
	sc_block_entries = KMEM_CACHE(sc_block_entry, SLAB_ACCOUNT);
	return sc_block_entries ? 0 : -ENOMEM;
}

void sc_block_mem_module_exit(void)
{
	kmem_cache_destroy(sc_block_entries);
}

int sc_block_mem_init(struct sc_block_mem *mem, struct shrinker *s)
{
	int err = list_lru_init_memcg(&mem->lru, s);

	if (err)
		return err;
	mem->memcg = get_mem_cgroup_from_mm(current->mm);
	return 0;
}

void sc_block_mem_destroy(struct sc_block_mem *mem)
{
	list_lru_destroy(&mem->lru);
	mem_cgroup_put(mem->memcg);
}

unsigned long sc_block_mem_count(struct sc_block_mem *mem,
				 struct shrink_control *sc)
{
	return list_lru_shrink_count(&mem->lru, sc);
}

static gfp_t sc_block_gfp(const struct sc_block_mem *mem, bool reclaim)
{
	gfp_t gfp = reclaim ? GFP_KERNEL | __GFP_NORETRY : GFP_NOWAIT;

	return gfp | __GFP_NOWARN | (mem ? __GFP_ACCOUNT : 0);
}

void *sc_block_alloc(struct sc_block_mem *mem, size_t size, bool reclaim)
{
	gfp_t gfp = sc_block_gfp(mem, reclaim);
	struct mem_cgroup *old = mem ? set_active_memcg(mem->memcg) : NULL;
	struct sc_block_entry *e = NULL;
	struct page *page;

	page = alloc_pages(gfp, get_order(size));
	if (page && mem) {
		e = kmem_cache_alloc_lru(sc_block_entries, &mem->lru, gfp);
		if (e) {
			INIT_LIST_HEAD(&e->lru);
			list_lru_add(&mem->lru, &e->lru);
		} else {
			__free_pages(page, get_order(size));
			page = NULL;
		}
	}
	if (mem)
		set_active_memcg(old);
	if (!page)
		return NULL;
	set_page_private(page, (unsigned long)e);
	return page_address(page);
}

void sc_block_free(struct sc_block_mem *mem, void *buf, size_t size)
{
	struct sc_block_entry *e;
	struct page *page;

	if (!buf)
		return;
	page = virt_to_page(buf);
	e = (struct sc_block_entry *)page_private(page);
	if (e) {
		list_lru_del(&mem->lru, &e->lru);
		kmem_cache_free(sc_block_entries, e);
		set_page_private(page, 0);
	}
	/*
	 * Told to reclaim, as the slab allocator's frees are (and XFS's
	 * buffer pages): else reclaim, seeing nothing come back, goes on
	 * at ever higher priority until the whole cache is gone.
	 */
	if (current->reclaim_state)
		current->reclaim_state->reclaimed_slab += 1UL << get_order(size);
	__free_pages(page, get_order(size));
}
