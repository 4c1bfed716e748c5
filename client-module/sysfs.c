// SPDX-License-Identifier: GPL-2.0-only
/*
 * seacache.ko: statistics in /sys/fs/seacache/<major:minor>/, one value per
 * file as ext4 and btrfs have them.  <major:minor> is the mount's device
 * number (stat -c %d of the mount point, or /proc/self/mountinfo), so
 * `seacachectl stats --mount DIR` finds them from the mount point.
 */
#include <linux/kobject.h>
#include <linux/slab.h>
#include <linux/sysfs.h>

#include "seacache.h"

static struct kset *scfs_kset;

/* Where a counter lives: the host's statistics or the mount's own. */
enum scfs_stat_src { SCFS_HOST, SCFS_CACHE, SCFS_IO, SCFS_TRANSPORT };

struct scfs_stat_attr {
	struct attribute attr;
	enum scfs_stat_src src;
	size_t off;		/* of a u64 (atomic64_t for SCFS_IO) */
};

#define SCFS_STAT(_name, _src, _type, _field)				\
	static struct scfs_stat_attr scfs_stat_##_name = {		\
		.attr = { .name = #_name, .mode = 0444 },		\
		.src = _src,						\
		.off = offsetof(_type, _field),				\
	}

/* What a VDI operator asks first: where did the reads go? */
SCFS_STAT(reads, SCFS_HOST, struct sc_host_stats, reads);
SCFS_STAT(read_blocks, SCFS_HOST, struct sc_host_stats, read_blocks);
SCFS_STAT(address_hits, SCFS_HOST, struct sc_host_stats, addr_hits);
SCFS_STAT(content_hits, SCFS_HOST, struct sc_host_stats, content_hits);
SCFS_STAT(misses, SCFS_HOST, struct sc_host_stats, misses);
SCFS_STAT(hole_blocks, SCFS_HOST, struct sc_host_stats, hole_blocks);
SCFS_STAT(bytes_from_server, SCFS_HOST, struct sc_host_stats,
	  server_data_bytes);
SCFS_STAT(bytes_from_peers, SCFS_HOST, struct sc_host_stats, peer_bytes);
SCFS_STAT(blocks_to_peers, SCFS_HOST, struct sc_host_stats, peer_served);
SCFS_STAT(server_calls, SCFS_HOST, struct sc_host_stats, server_calls);
SCFS_STAT(hash_only_blocks, SCFS_HOST, struct sc_host_stats,
	  hash_only_blocks);
SCFS_STAT(force_data_blocks, SCFS_HOST, struct sc_host_stats,
	  force_data_blocks);
SCFS_STAT(pushes_received, SCFS_HOST, struct sc_host_stats,
	  pushes_received);
SCFS_STAT(pushes_used, SCFS_HOST, struct sc_host_stats, pushed_hits);
SCFS_STAT(map_calls, SCFS_HOST, struct sc_host_stats, map_calls);
SCFS_STAT(map_entries, SCFS_HOST, struct sc_host_stats, map_entries);
SCFS_STAT(maps_used, SCFS_HOST, struct sc_host_stats, mapped_hits);
SCFS_STAT(readahead_blocks, SCFS_HOST, struct sc_host_stats,
	  readahead_blocks);
SCFS_STAT(delegations, SCFS_HOST, struct sc_host_stats, delegations);
SCFS_STAT(peer_failures, SCFS_HOST, struct sc_host_stats, peer_failures);
SCFS_STAT(peer_reports, SCFS_HOST, struct sc_host_stats, peer_reports);
SCFS_STAT(csi_down, SCFS_HOST, struct sc_host_stats, csi_down);
SCFS_STAT(down_trips, SCFS_HOST, struct sc_host_stats, down_trips);
SCFS_STAT(down_calls, SCFS_HOST, struct sc_host_stats, down_calls);
SCFS_STAT(writes, SCFS_HOST, struct sc_host_stats, writes);
SCFS_STAT(write_blocks, SCFS_HOST, struct sc_host_stats, write_blocks);
SCFS_STAT(write_hash_blocks, SCFS_HOST, struct sc_host_stats,
	  write_hash_blocks);
SCFS_STAT(write_data_bytes, SCFS_HOST, struct sc_host_stats,
	  write_data_bytes);
SCFS_STAT(eviction_notices, SCFS_HOST, struct sc_host_stats, notices_sent);
SCFS_STAT(registrations, SCFS_HOST, struct sc_host_stats, registrations);
SCFS_STAT(unstable_blocks, SCFS_HOST, struct sc_host_stats, pinned_blocks);
SCFS_STAT(memory_bytes, SCFS_HOST, struct sc_host_stats, mem_bytes);
SCFS_STAT(cache_blocks, SCFS_CACHE, struct sc_ccache_stats, blocks);
SCFS_STAT(cache_evictions, SCFS_CACHE, struct sc_ccache_stats, evictions);
/* Memory given back under pressure (shrinker.c) and the limit it left. */
SCFS_STAT(cache_shrunk, SCFS_CACHE, struct sc_ccache_stats, shrunk);
SCFS_STAT(cache_limit, SCFS_CACHE, struct sc_ccache_stats, limit);
SCFS_STAT(eviction_notices_dropped, SCFS_HOST, struct sc_host_stats,
	  notices_dropped);
SCFS_STAT(fallback_reads, SCFS_IO, struct scfs_io_stats, reads);
SCFS_STAT(fallback_read_bytes, SCFS_IO, struct scfs_io_stats,
	  read_bytes);
SCFS_STAT(fallback_writes, SCFS_IO, struct scfs_io_stats,
	  writes);
SCFS_STAT(fallback_write_bytes, SCFS_IO, struct scfs_io_stats,
	  write_bytes);
SCFS_STAT(mapped_io, SCFS_IO, struct scfs_io_stats, mapped_io);
SCFS_STAT(drained_blocks, SCFS_IO, struct scfs_io_stats,
	  drained_blocks);
SCFS_STAT(csi_read_bytes, SCFS_IO, struct scfs_io_stats, csi_read_bytes);
SCFS_STAT(read_copied_bytes, SCFS_IO, struct scfs_io_stats,
	  read_copied_bytes);
SCFS_STAT(transport_calls, SCFS_TRANSPORT, struct scfs_transport_stats,
	  calls);
SCFS_STAT(transport_reconnects, SCFS_TRANSPORT, struct scfs_transport_stats,
	  reconnects);
SCFS_STAT(transport_timeouts, SCFS_TRANSPORT, struct scfs_transport_stats,
	  timeouts);
SCFS_STAT(peer_served_bytes, SCFS_TRANSPORT, struct scfs_transport_stats,
	  peer_served_bytes);
SCFS_STAT(peer_refused, SCFS_TRANSPORT, struct scfs_transport_stats,
	  peer_refused);
SCFS_STAT(peer_conns_refused, SCFS_TRANSPORT, struct scfs_transport_stats,
	  peer_conns_refused);

static ssize_t scfs_stat_show(struct scfs_sb_info *sbi,
			      const struct scfs_stat_attr *a, char *buf)
{
	struct scfs_transport_stats ts;
	struct sc_host_stats hs = {};
	struct sc_host *host;
	const void *base;
	u64 v;
	int idx;

	switch (a->src) {
	case SCFS_IO:
		v = atomic64_read((atomic64_t *)((char *)&sbi->fb + a->off));
		return sysfs_emit(buf, "%llu\n", v);
	case SCFS_TRANSPORT:
		scfs_transport_get_stats(sbi->tr, &ts);
		base = &ts;
		break;
	default:
		host = scfs_host_enter(sbi->sb, &idx);
		if (host)
			sc_host_get_stats(host, &hs);
		scfs_host_exit(sbi->sb, idx);
		base = a->src == SCFS_CACHE ? (void *)&hs.cache.cache : &hs;
	}
	v = *(const u64 *)((const char *)base + a->off);
	return sysfs_emit(buf, "%llu\n", v);
}

/* The mount's settings, as text. */
static ssize_t scfs_text_show(struct scfs_sb_info *sbi, const char *name,
			      char *buf)
{
	struct scfs_options *o = &sbi->opts;

	if (!strcmp(name, "policy"))
		return sysfs_emit(buf, "%s\n", o->policy);
	if (!strcmp(name, "variant"))
		return sysfs_emit(buf, "%s\n", sc_variants[o->variant].name);
	if (!strcmp(name, "cache_bytes"))
		return sysfs_emit(buf, "%llu\n", o->cache_bytes);
	if (!strcmp(name, "server"))
		return sysfs_emit(buf, "%s:%u\n", o->server, o->csi_port);
	if (!strcmp(name, "host_uuid"))
		return sysfs_emit(buf, "%pUb\n", sbi->uuid);
	/* "connected" */
	return sysfs_emit(buf, "%d\n", !!rcu_access_pointer(sbi->host));
}

static struct attribute scfs_text_attrs[] = {
	{ .name = "policy", .mode = 0444 },
	{ .name = "variant", .mode = 0444 },
	{ .name = "cache_bytes", .mode = 0444 },
	{ .name = "server", .mode = 0444 },
	{ .name = "connected", .mode = 0444 },
	{ .name = "host_uuid", .mode = 0444 },
};

static bool scfs_is_text_attr(const struct attribute *attr)
{
	return attr >= scfs_text_attrs &&
	       attr < scfs_text_attrs + ARRAY_SIZE(scfs_text_attrs);
}

static ssize_t scfs_attr_show(struct kobject *kobj, struct attribute *attr,
			      char *buf)
{
	struct scfs_sb_info *sbi = container_of(kobj, struct scfs_sb_info,
						kobj);

	if (scfs_is_text_attr(attr))
		return scfs_text_show(sbi, attr->name, buf);
	return scfs_stat_show(sbi, container_of(attr, struct scfs_stat_attr,
						attr), buf);
}

#define A(_name) (&scfs_stat_##_name.attr)
static struct attribute *scfs_attrs[] = {
	A(reads), A(read_blocks), A(address_hits), A(content_hits), A(misses),
	A(hole_blocks), A(bytes_from_server), A(bytes_from_peers),
	A(blocks_to_peers), A(server_calls), A(hash_only_blocks),
	A(force_data_blocks), A(pushes_received), A(pushes_used),
	A(map_calls), A(map_entries), A(maps_used), A(readahead_blocks),
	A(delegations), A(peer_failures), A(peer_reports), A(csi_down), A(down_trips),
	A(down_calls), A(writes), A(write_blocks),
	A(write_hash_blocks), A(write_data_bytes), A(eviction_notices),
	A(registrations), A(unstable_blocks), A(memory_bytes), A(cache_blocks),
	A(cache_evictions), A(cache_shrunk), A(cache_limit),
	A(eviction_notices_dropped), A(fallback_reads), A(fallback_read_bytes),
	A(fallback_writes), A(fallback_write_bytes), A(mapped_io),
	A(drained_blocks), A(csi_read_bytes), A(read_copied_bytes),
	A(transport_calls), A(transport_reconnects), A(transport_timeouts),
	A(peer_served_bytes), A(peer_refused),
	A(peer_conns_refused),
	&scfs_text_attrs[0], &scfs_text_attrs[1], &scfs_text_attrs[2],
	&scfs_text_attrs[3], &scfs_text_attrs[4], &scfs_text_attrs[5],
	NULL
};

#undef A
ATTRIBUTE_GROUPS(scfs);

static void scfs_kobj_release(struct kobject *kobj)
{
	struct scfs_sb_info *sbi = container_of(kobj, struct scfs_sb_info,
						kobj);

	complete(&sbi->kobj_released);
}

static const struct sysfs_ops scfs_sysfs_ops = {
	.show = scfs_attr_show,
};

static struct kobj_type scfs_ktype = {
	.sysfs_ops = &scfs_sysfs_ops,
	.default_groups = scfs_groups,
	.release = scfs_kobj_release,
};

int scfs_sysfs_add(struct super_block *sb)
{
	struct scfs_sb_info *sbi = scfs_sb(sb);
	int err;

	init_completion(&sbi->kobj_released);
	sbi->kobj.kset = scfs_kset;
	err = kobject_init_and_add(&sbi->kobj, &scfs_ktype, NULL, "%u:%u",
				   MAJOR(sb->s_dev), MINOR(sb->s_dev));
	if (err) {
		kobject_put(&sbi->kobj);
		wait_for_completion(&sbi->kobj_released);
		return err;
	}
	sbi->kobj_added = true;
	return 0;
}

void scfs_sysfs_del(struct super_block *sb)
{
	struct scfs_sb_info *sbi = scfs_sb(sb);

	if (!sbi->kobj_added)
		return;
	kobject_del(&sbi->kobj);
	kobject_put(&sbi->kobj);
	wait_for_completion(&sbi->kobj_released);
}

int scfs_sysfs_init(void)
{
	scfs_kset = kset_create_and_add(SCFS_NAME, NULL, fs_kobj);
	return scfs_kset ? 0 : -ENOMEM;
}

void scfs_sysfs_exit(void)
{
	kset_unregister(scfs_kset);
}
