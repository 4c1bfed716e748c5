// SPDX-License-Identifier: GPL-2.0-only
/*
 * seacache.ko: the file system type, its mount options, the super block
 * and the host behind it, and the module's life.
 *
 *   mount -t seacache -o lower=DIR,server=ADDR[,csi_port=N,cache=SIZE,
 *         policy=SPEC,variant=NAME,peer=ADDR:PORT,csi_timeo=DS] none MOUNTPOINT
 *
 * One mount is one SeaCache host: one content cache for every file (every
 * VM image) under it, registered with the CSI service as a host of its own.
 */
#include <linux/fs_context.h>
#include <linux/fs_parser.h>
#include <linux/idr.h>
#include <linux/inet.h>
#include <linux/module.h>
#include <linux/mount.h>
#include <linux/namei.h>
#include <linux/nfs_fs.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/statfs.h>
#include <linux/utsname.h>
#include <linux/uuid.h>
#include <net/net_namespace.h>

#include "seacache.h"

/* How often an unreachable CSI service is tried again, at most. */
#define SCFS_CONNECT_RETRY_MAX (60 * HZ)
/*
 * After SC_HOST_MOUNT_IO_RETRIES failed connects the service is marked
 * down (the host's fail_fast): every I/O goes to the lower NFS file at
 * once until the idle work's probe is answered.  A call unanswered by its
 * deadline (csi_timeo=) marks it down without another try.  So a dead or
 * silent CSI service costs a VM one deadline at most, not one per I/O.
 */
/* csi_timeo= in tenths of a second, as NFS's timeo= */
#define SCFS_CSI_TIMEO_DEFAULT (SC_CSI_FALLBACK_TIMEOUT_MS / 100)
/* Leases and eviction notices: well inside the shortest lease. */
#define SCFS_IDLE_PERIOD HZ

enum {
	Opt_lower, Opt_server, Opt_csi_port, Opt_cache, Opt_policy,
	Opt_variant, Opt_peer, Opt_csi_timeo,
};

static const struct fs_parameter_spec scfs_param_specs[] = {
	fsparam_string("lower", Opt_lower),
	fsparam_string("server", Opt_server),
	fsparam_u32("csi_port", Opt_csi_port),
	fsparam_string("cache", Opt_cache),
	fsparam_string("policy", Opt_policy),
	fsparam_string("variant", Opt_variant),
	fsparam_string("peer", Opt_peer),
	fsparam_u32("csi_timeo", Opt_csi_timeo),
	{}
};

static void scfs_options_free(struct scfs_options *o)
{
	kfree(o->lower);
	kfree(o->server);
	kfree(o->policy);
	kfree(o->peer);
}

/* "ADDR" with port, or "ADDR:PORT" / "[V6ADDR]:PORT" into addr. */
static int scfs_parse_addr(struct net *net, const char *text, u16 port,
			   struct sockaddr_storage *addr)
{
	char host[INET6_ADDRSTRLEN + 2], portstr[8];
	const char *colon = strrchr(text, ':');
	size_t len = strlen(text);

	if (port) {
		snprintf(portstr, sizeof(portstr), "%u", port);
	} else {
		if (!colon || colon == text || strlen(colon + 1) >= sizeof(portstr))
			return -EINVAL;
		strscpy(portstr, colon + 1, sizeof(portstr));
		len = colon - text;
	}
	if (len >= 2 && text[0] == '[' && text[len - 1] == ']') {
		text++;
		len -= 2;
	}
	if (len >= sizeof(host))
		return -EINVAL;
	memcpy(host, text, len);
	host[len] = '\0';
	return inet_pton_with_scope(net, AF_UNSPEC, host, portstr, addr);
}

static int scfs_parse_param(struct fs_context *fc, struct fs_parameter *param)
{
	struct scfs_options *o = fc->fs_private;
	struct fs_parse_result res;
	char **text = NULL;
	int opt;

	opt = fs_parse(fc, scfs_param_specs, param, &res);
	if (opt < 0)
		return opt;
	switch (opt) {
	case Opt_lower:
		text = &o->lower;
		break;
	case Opt_server:
		text = &o->server;
		break;
	case Opt_csi_port:
		if (!res.uint_32 || res.uint_32 > 65535)
			return invalfc(fc, "csi_port=%u: a TCP port, 1-65535",
				       res.uint_32);
		o->csi_port = res.uint_32;
		return 0;
	case Opt_cache: {
		char *end;

		o->cache_bytes = memparse(param->string, &end);
		if (*end || o->cache_bytes < SC_HOST_CACHE_BYTES_MIN)
			return invalfc(fc, "cache=%s: a size of at least 64K (suffixes K, M, G)",
				       param->string);
		return 0;
	}
	case Opt_policy:
		text = &o->policy;
		break;
	case Opt_variant:
		if (sc_variant_parse(param->string, &o->variant))
			return invalfc(fc, "variant=%s: one of baseline, readhash, tracker, push, coop, dedup-rw, seacache",
				       param->string);
		return 0;
	case Opt_peer:
		text = &o->peer;
		break;
	case Opt_csi_timeo:
		if (!res.uint_32 || res.uint_32 > SC_HOST_CSI_TIMEO_MAX)
			return invalfc(fc, "csi_timeo=%u: tenths of a second a CSI call may take, 1-%u",
				       res.uint_32, SC_HOST_CSI_TIMEO_MAX);
		o->csi_timeo = res.uint_32;
		return 0;
	}
	kfree(*text);
	*text = param->string;	/* taken over */
	param->string = NULL;
	return 0;
}

/* The options that name the host's peers and server: fixed per mount. */
static int scfs_check_options(struct fs_context *fc, struct scfs_options *o)
{
	if (!o->lower)
		return invalfc(fc, "lower= is missing: the directory of the NFS mount to stack on");
	if (!o->server)
		return invalfc(fc, "server= is needed: the CSI service's numeric address");
	if (!o->csi_port)
		o->csi_port = SC_CSI_PORT;
	if (scfs_parse_addr(fc->net_ns, o->server, o->csi_port, &o->server_addr))
		return invalfc(fc, "server=%s: not a numeric IPv4 or IPv6 address",
			       o->server);
	if (o->peer && scfs_parse_addr(fc->net_ns, o->peer, 0, &o->peer_addr))
		return invalfc(fc, "peer=%s: expected ADDR:PORT (IPv6 as [ADDR]:PORT)",
			       o->peer);
	return 0;
}

/* ---- the host: HELLO until the service answers -------------------------- */

/* host_lock held. */
static int scfs_host_start(struct super_block *sb)
{
	struct scfs_sb_info *sbi = scfs_sb(sb);
	struct sc_host_config c = {
		.name = utsname()->nodename,
		.variant = sbi->opts.variant,
		.cache_blocks = sbi->opts.cache_bytes >> 12,
		.policy = sbi->opts.policy,
		.block_mem = &sbi->block_mem,
		.io_retries = SC_HOST_MOUNT_IO_RETRIES,
		.fail_fast = true,
	};
	struct sc_host *host;
	int err;

	memcpy(c.uuid, sbi->uuid, sizeof(c.uuid));
	scfs_transport_bind(sbi->tr, &c.tr);
	scfs_transport_peer_addr(sbi->tr, &c.peer);
	err = sc_host_create(&c, &host);
	if (err)
		return err;
	scfs_transport_set_host(sbi->tr, host);
	rcu_assign_pointer(sbi->host, host);
	schedule_delayed_work(&sbi->idle_work, SCFS_IDLE_PERIOD);
	return 0;
}

/*
 * host_lock held.  Once the uses in progress are done, every unstable
 * write is committed, through NFS where CSI fails (what was acknowledged
 * stays on the server), the host leaves the server and its memory is
 * freed.  I/O that comes meanwhile goes to the lower file.  If a file's
 * unstable writes reach the server neither way: with keep, the host
 * stays, with them, and the error is returned; without (unmount), they
 * are lost, and said so.
 */
static int scfs_host_stop(struct scfs_sb_info *sbi, bool keep)
{
	struct sc_host *host = rcu_dereference_protected(sbi->host,
					lockdep_is_held(&sbi->host_lock));
	int err;

	if (!host)
		return 0;
	RCU_INIT_POINTER(sbi->host, NULL);
	synchronize_srcu(&sbi->host_srcu);
	cancel_delayed_work_sync(&sbi->idle_work);
	err = scfs_settle_all(sbi->sb, host);
	/* and the files no inode names any more, through CSI only */
	if (!err)
		err = sc_host_commit_all(host);
	if (err && keep) {
		rcu_assign_pointer(sbi->host, host);
		schedule_delayed_work(&sbi->idle_work, SCFS_IDLE_PERIOD);
		return err;
	}
	if (err)
		pr_err("%s: unstable writes reached the server neither through CSI nor NFS (%d): lost if the server restarts\n",
		       sbi->sb->s_id, err);
	scfs_transport_set_host(sbi->tr, NULL);
	sc_host_destroy(host);
	return 0;
}

static void scfs_connect_work(struct work_struct *work)
{
	struct scfs_sb_info *sbi = container_of(to_delayed_work(work),
						struct scfs_sb_info,
						connect_work);
	struct super_block *sb = sbi->sb;
	unsigned long next;
	int err;

	mutex_lock(&sbi->host_lock);
	err = rcu_access_pointer(sbi->host) ? 0 : scfs_host_start(sb);
	mutex_unlock(&sbi->host_lock);
	if (!err) {
		pr_info("%s: CSI service %s port %u reached: reads and writes go through the host cache now\n",
			sb->s_id, sbi->opts.server, sbi->opts.csi_port);
		return;
	}
	next = min_t(unsigned long, sbi->connect_delay * 2,
		     SCFS_CONNECT_RETRY_MAX);
	sbi->connect_delay = next;
	schedule_delayed_work(&sbi->connect_work, next);
}

static void scfs_idle_work(struct work_struct *work)
{
	struct scfs_sb_info *sbi = container_of(to_delayed_work(work),
						struct scfs_sb_info, idle_work);
	struct sc_host *host;
	int idx;

	host = scfs_host_enter(sbi->sb, &idx);
	if (host) {
		sc_host_idle(host);
		schedule_delayed_work(&sbi->idle_work, SCFS_IDLE_PERIOD);
	}
	scfs_host_exit(sbi->sb, idx);
}

/* ---- super block --------------------------------------------------------- */

static int scfs_statfs(struct dentry *dentry, struct kstatfs *buf)
{
	int err = vfs_statfs(&scfs_sb(dentry->d_sb)->lower, buf);

	buf->f_type = SCFS_MAGIC;
	return err;
}

static int scfs_show_options(struct seq_file *m, struct dentry *root)
{
	struct scfs_options *o = &scfs_sb(root->d_sb)->opts;

	seq_show_option(m, "lower", o->lower);
	seq_show_option(m, "server", o->server);
	seq_printf(m, ",csi_port=%u,cache=%lluk,csi_timeo=%u", o->csi_port,
		   o->cache_bytes >> 10, o->csi_timeo);
	seq_show_option(m, "policy", o->policy);
	seq_show_option(m, "variant", sc_variants[o->variant].name);
	if (o->peer)
		seq_show_option(m, "peer", o->peer);
	return 0;
}

static const struct super_operations scfs_sops = {
	.alloc_inode = scfs_alloc_inode,
	.free_inode = scfs_free_inode,
	.evict_inode = scfs_evict_inode,
	.statfs = scfs_statfs,
	.show_options = scfs_show_options,
};

/*
 * A mount is a host of its own (its own cache), so it registers under a
 * uuid of its own: that of the lowest slot no live mount holds, which is
 * scfs_uuid_base with the slot in its last two bytes.  So a mount that
 * follows an unmount, and a host restarted by a cache= remount or a
 * reconnect, register again as the host they replace, and the server
 * drops that registration at once instead of keeping it until its lease
 * runs out (CSI_Max_Hosts_Per_Addr of those would refuse the next
 * mount).  The base is drawn at module load: after a reboot or a reload
 * the uuids are new, and the old ones' leases run out.
 */
static u8 scfs_uuid_base[16];
static DEFINE_IDA(scfs_uuid_slots);

static int scfs_uuid_take(struct scfs_sb_info *sbi)
{
	int slot = ida_alloc_max(&scfs_uuid_slots, U16_MAX, GFP_KERNEL);

	if (slot < 0)
		return slot;
	sbi->uuid_slot = slot + 1;
	memcpy(sbi->uuid, scfs_uuid_base, sizeof(sbi->uuid));
	sbi->uuid[14] ^= slot >> 8;
	sbi->uuid[15] ^= slot & 0xff;
	return 0;
}

static int scfs_fill_super(struct super_block *sb, struct fs_context *fc)
{
	struct scfs_options *o = fc->fs_private;
	struct scfs_sb_info *sbi;
	struct super_block *lower_sb;
	struct inode *root;
	int err;

	err = scfs_check_options(fc, o);
	if (err)
		return err;
	sbi = kzalloc(sizeof(*sbi), GFP_KERNEL);
	if (!sbi)
		return -ENOMEM;
	sb->s_fs_info = sbi;
	sbi->sb = sb;
	sbi->opts = *o;		/* the strings are the super block's now */
	memset(o, 0, sizeof(*o));
	mutex_init(&sbi->host_lock);
	INIT_DELAYED_WORK(&sbi->connect_work, scfs_connect_work);
	INIT_DELAYED_WORK(&sbi->idle_work, scfs_idle_work);
	err = init_srcu_struct(&sbi->host_srcu);
	if (err)
		return err;
	sbi->host_srcu_ready = true;
	err = scfs_uuid_take(sbi);
	if (err)
		return err;
	err = kern_path(sbi->opts.lower, LOOKUP_FOLLOW | LOOKUP_DIRECTORY,
			&sbi->lower);
	if (err)
		return invalfc(fc, "lower=%s: %d: not a directory that can be looked up",
			       sbi->opts.lower, err);
	lower_sb = sbi->lower.mnt->mnt_sb;
	if (lower_sb->s_magic != NFS_SUPER_MAGIC)
		return invalfc(fc, "lower=%s: not an NFS mount (the CSI file ids are NFS fileids)",
			       sbi->opts.lower);
	sb->s_stack_depth = lower_sb->s_stack_depth + 1;
	if (sb->s_stack_depth > FILESYSTEM_MAX_STACK_DEPTH)
		return invalfc(fc, "lower=%s: stacked too deep", sbi->opts.lower);
	sb->s_magic = SCFS_MAGIC;
	/*
	 * Its log lines name the mount as its sysfs directory does; an
	 * anonymous super block's id is the type's name, the same for all.
	 */
	snprintf(sb->s_id, sizeof(sb->s_id), "%u:%u", MAJOR(sb->s_dev),
		 MINOR(sb->s_dev));
	sb->s_op = &scfs_sops;
	sb->s_d_op = &scfs_dops;
	sb->s_xattr = scfs_xattr_handlers;
	sb->s_maxbytes = lower_sb->s_maxbytes;
	sb->s_blocksize = lower_sb->s_blocksize;
	sb->s_blocksize_bits = lower_sb->s_blocksize_bits;
	sb->s_time_gran = lower_sb->s_time_gran;

	root = scfs_get_inode(sb, d_inode(sbi->lower.dentry));
	if (IS_ERR(root))
		return PTR_ERR(root);
	sb->s_root = d_make_root(root);
	if (!sb->s_root)
		return -ENOMEM;
	sb->s_root->d_fsdata = dget(sbi->lower.dentry);

	err = scfs_transport_create(fc->net_ns, &sbi->opts.server_addr,
				    sbi->opts.peer ? &sbi->opts.peer_addr : NULL,
				    SC_BLOCK_SIZE_DEFAULT,
				    sbi->opts.csi_timeo * 100, &sbi->tr);
	if (err)
		return invalfc(fc, "peer=%s: %d: cannot serve peer reads there",
			       sbi->opts.peer ? sbi->opts.peer : "", err);
	err = scfs_sysfs_add(sb);
	if (err)
		return err;
	/* the cache's memory, given back under pressure (shrinker.c) */
	err = scfs_shrinker_register(sb);
	if (err)
		return err;
	mutex_lock(&sbi->host_lock);
	err = scfs_host_start(sb);
	mutex_unlock(&sbi->host_lock);
	if (err) {
		pr_warn("%s: CSI service %s port %u: %d: serving from NFS alone until it answers\n",
			sb->s_id, sbi->opts.server, sbi->opts.csi_port, err);
		sbi->connect_delay = HZ;
		schedule_delayed_work(&sbi->connect_work, sbi->connect_delay);
	}
	return 0;
}

static void scfs_kill_sb(struct super_block *sb)
{
	struct scfs_sb_info *sbi = scfs_sb(sb);

	if (sbi) {
		scfs_shrinker_unregister(sb);	/* before the host stops */
		cancel_delayed_work_sync(&sbi->connect_work);
		scfs_sysfs_del(sb);
		/* while the inodes, which name the lower files, are here */
		mutex_lock(&sbi->host_lock);
		scfs_host_stop(sbi, false);
		mutex_unlock(&sbi->host_lock);
	}
	kill_anon_super(sb);
	if (!sbi)
		return;
	if (sbi->tr)
		scfs_transport_destroy(sbi->tr);
	scfs_block_mem_destroy(sb);	/* the host gave its blocks back */
	if (sbi->host_srcu_ready)
		cleanup_srcu_struct(&sbi->host_srcu);
	path_put(&sbi->lower);
	scfs_options_free(&sbi->opts);
	if (sbi->uuid_slot)
		ida_free(&scfs_uuid_slots, sbi->uuid_slot - 1);
	kfree(sbi);
}

/* ---- fs_context ----------------------------------------------------------- */

static int scfs_get_tree(struct fs_context *fc)
{
	return get_tree_nodev(fc, scfs_fill_super);
}

/*
 * A new cache size: the host is stopped (its unstable writes committed)
 * and started again with a cache of the new size, empty.  Meanwhile I/O
 * goes to the lower file.  Unstable writes that reach the server neither
 * through CSI nor NFS fail the remount and stay with the host as it was.
 */
static int scfs_resize_cache(struct scfs_sb_info *sbi, u64 bytes)
{
	bool running;
	int err = 0;

	cancel_delayed_work_sync(&sbi->connect_work);
	mutex_lock(&sbi->host_lock);
	running = rcu_access_pointer(sbi->host);
	err = scfs_host_stop(sbi, true);
	if (err) {
		mutex_unlock(&sbi->host_lock);
		return err;
	}
	sbi->opts.cache_bytes = bytes;
	if (running)
		err = scfs_host_start(sbi->sb);
	mutex_unlock(&sbi->host_lock);
	if (err || !running) {
		sbi->connect_delay = HZ;
		schedule_delayed_work(&sbi->connect_work, 0);
	}
	pr_info("%s: content cache of %llu KiB from now on\n",
		sbi->sb->s_id, bytes >> 10);
	return 0;
}

/*
 * Remount: the host's identity, server and peers stay; only cache= may
 * change.
 */
static int scfs_reconfigure(struct fs_context *fc)
{
	struct super_block *sb = fc->root->d_sb;
	struct scfs_sb_info *sbi = scfs_sb(sb);
	struct scfs_options *o = fc->fs_private;

	if ((o->lower && strcmp(o->lower, sbi->opts.lower)) ||
	    (o->server && strcmp(o->server, sbi->opts.server)) ||
	    (o->csi_port && o->csi_port != sbi->opts.csi_port) ||
	    (o->csi_timeo && o->csi_timeo != sbi->opts.csi_timeo) ||
	    (o->peer && (!sbi->opts.peer || strcmp(o->peer, sbi->opts.peer))))
		return invalfc(fc, "remount may change cache= only; unmount to change lower=, server=, csi_port=, csi_timeo= or peer=");
	if (!o->cache_bytes || o->cache_bytes == sbi->opts.cache_bytes)
		return 0;
	return scfs_resize_cache(sbi, o->cache_bytes);
}

static void scfs_free_fc(struct fs_context *fc)
{
	struct scfs_options *o = fc->fs_private;

	if (o) {
		scfs_options_free(o);
		kfree(o);
	}
}

static const struct fs_context_operations scfs_context_ops = {
	.parse_param = scfs_parse_param,
	.get_tree = scfs_get_tree,
	.reconfigure = scfs_reconfigure,
	.free = scfs_free_fc,
};

static int scfs_init_fs_context(struct fs_context *fc)
{
	struct scfs_options *o = kzalloc(sizeof(*o), GFP_KERNEL);

	if (!o)
		return -ENOMEM;
	if (fc->purpose != FS_CONTEXT_FOR_RECONFIGURE) {
		o->cache_bytes = SC_HOST_CACHE_BYTES_DEFAULT;
		o->csi_timeo = SCFS_CSI_TIMEO_DEFAULT;
		o->variant = SC_VARIANT_SEACACHE;
		o->policy = kstrdup(SC_HOST_POLICY_DEFAULT, GFP_KERNEL);
		if (!o->policy) {
			kfree(o);
			return -ENOMEM;
		}
	}
	fc->fs_private = o;
	fc->ops = &scfs_context_ops;
	return 0;
}

static struct file_system_type scfs_fs_type = {
	.owner = THIS_MODULE,
	.name = SCFS_NAME,
	.init_fs_context = scfs_init_fs_context,
	.parameters = scfs_param_specs,
	.kill_sb = scfs_kill_sb,
};
MODULE_ALIAS_FS(SCFS_NAME);

static int __init scfs_init(void)
{
	int err;

	generate_random_uuid(scfs_uuid_base);
	err = scfs_inode_cache_init();
	if (err)
		return err;
	err = sc_block_mem_module_init();
	if (err)
		goto out_cache;
	err = scfs_sysfs_init();
	if (err)
		goto out_blocks;
	err = register_filesystem(&scfs_fs_type);
	if (err)
		goto out_sysfs;
	return 0;
out_sysfs:
	scfs_sysfs_exit();
out_blocks:
	sc_block_mem_module_exit();
out_cache:
	scfs_inode_cache_destroy();
	return err;
}

static void __exit scfs_exit(void)
{
	unregister_filesystem(&scfs_fs_type);
	scfs_sysfs_exit();
	sc_block_mem_module_exit();
	scfs_inode_cache_destroy();
}

module_init(scfs_init);
module_exit(scfs_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("SeaCache: a VDI host's content cache stacked on NFS");
MODULE_SOFTDEP("pre: nfs");
