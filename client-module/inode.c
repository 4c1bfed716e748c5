// SPDX-License-Identifier: GPL-2.0-only
/*
 * seacache.ko: inodes and dentries.  The namespace passes through to the
 * lower NFS file system: every upper dentry holds its lower dentry, every
 * upper inode its lower inode, and every operation is the lower one's,
 * so the stack answers what the plain NFS mount answers.
 */
#include <linux/fs_stack.h>
#include <linux/namei.h>
#include <linux/slab.h>
#include <linux/xattr.h>

#include "seacache.h"

static struct kmem_cache *scfs_inode_cachep;

struct inode *scfs_alloc_inode(struct super_block *sb)
{
	struct scfs_inode_info *si;

	si = alloc_inode_sb(sb, scfs_inode_cachep, GFP_KERNEL);
	if (!si)
		return NULL;
	si->lower = NULL;
	si->flags = 0;
	return &si->vfs_inode;
}

void scfs_free_inode(struct inode *inode)
{
	kmem_cache_free(scfs_inode_cachep, scfs_i(inode));
}

void scfs_evict_inode(struct inode *inode)
{
	truncate_inode_pages_final(&inode->i_data);
	clear_inode(inode);
	iput(scfs_lower_inode(inode));
}

static void scfs_inode_once(void *p)
{
	struct scfs_inode_info *si = p;

	init_rwsem(&si->csi_writes);
	inode_init_once(&si->vfs_inode);
}

int scfs_inode_cache_init(void)
{
	scfs_inode_cachep = kmem_cache_create("scfs_inode_cache",
					      sizeof(struct scfs_inode_info), 0,
					      SLAB_RECLAIM_ACCOUNT |
					      SLAB_MEM_SPREAD | SLAB_ACCOUNT,
					      scfs_inode_once);
	return scfs_inode_cachep ? 0 : -ENOMEM;
}

void scfs_inode_cache_destroy(void)
{
	rcu_barrier();	/* inodes freed by RCU callbacks are gone */
	kmem_cache_destroy(scfs_inode_cachep);
}

/* iget5 keys: one upper inode per lower inode. */
static int scfs_inode_test(struct inode *inode, void *lower)
{
	return scfs_lower_inode(inode) == lower;
}

static int scfs_inode_set(struct inode *inode, void *data)
{
	struct inode *lower = data;

	scfs_i(inode)->lower = lower;
	inode->i_ino = lower->i_ino;
	inode->i_mapping->a_ops = &scfs_aops;
	scfs_copy_attr(inode);
	if (S_ISDIR(inode->i_mode)) {
		inode->i_op = &scfs_dir_iops;
		inode->i_fop = &scfs_dir_fops;
	} else if (S_ISLNK(inode->i_mode)) {
		inode->i_op = &scfs_symlink_iops;
	} else if (S_ISREG(inode->i_mode)) {
		inode->i_op = &scfs_file_iops;
		inode->i_fop = &scfs_file_fops;
	} else {
		inode->i_op = &scfs_file_iops;
		init_special_inode(inode, inode->i_mode, inode->i_rdev);
	}
	return 0;
}

/* The upper inode of lower (a new reference of it is taken if needed). */
struct inode *scfs_get_inode(struct super_block *sb, struct inode *lower)
{
	struct inode *inode;

	if (!igrab(lower))
		return ERR_PTR(-ESTALE);
	inode = iget5_locked(sb, (unsigned long)lower, scfs_inode_test,
			     scfs_inode_set, lower);
	if (!inode) {
		iput(lower);
		return ERR_PTR(-ENOMEM);
	}
	if (inode->i_state & I_NEW)
		unlock_new_inode(inode);
	else
		iput(lower);	/* the inode holds its reference already */
	return inode;
}

/* ---- dentries ---------------------------------------------------------- */

static int scfs_d_revalidate(struct dentry *dentry, unsigned int flags)
{
	struct dentry *lower = scfs_lower_dentry(dentry);
	int valid = 1;

	if (flags & LOOKUP_RCU)
		return -ECHILD;
	if (lower->d_flags & DCACHE_OP_REVALIDATE)
		valid = lower->d_op->d_revalidate(lower, flags);
	if (valid > 0 && d_really_is_positive(dentry)) {
		if (d_inode(lower) != scfs_lower_inode(d_inode(dentry)))
			return 0;
		fsstack_copy_attr_all(d_inode(dentry), d_inode(lower));
	}
	return valid;
}

static void scfs_d_release(struct dentry *dentry)
{
	dput(scfs_lower_dentry(dentry));
}

const struct dentry_operations scfs_dops = {
	.d_revalidate = scfs_d_revalidate,
	.d_release = scfs_d_release,
};

/*
 * Joins an upper dentry to the lower dentry of the same name.  The lower
 * dentry's reference passes to the upper dentry.
 */
static struct dentry *scfs_interpose(struct dentry *dentry,
				     struct dentry *lower)
{
	struct inode *lower_inode = READ_ONCE(lower->d_inode);
	struct inode *inode = NULL;

	dentry->d_fsdata = lower;
	if (lower_inode) {
		inode = scfs_get_inode(dentry->d_sb, lower_inode);
		if (IS_ERR(inode))
			return ERR_CAST(inode);
	}
	return d_splice_alias(inode, dentry);
}

static struct dentry *scfs_lookup(struct inode *dir, struct dentry *dentry,
				  unsigned int flags)
{
	struct dentry *lower_dir = scfs_lower_dentry(dentry->d_parent);
	struct dentry *lower;

	lower = lookup_one_len_unlocked(dentry->d_name.name, lower_dir,
					dentry->d_name.len);
	if (IS_ERR(lower))
		return ERR_CAST(lower);
	return scfs_interpose(dentry, lower);
}

/*
 * Locks the lower parent of dentry for a namespace change; fails if the
 * lower dentry moved away from it meanwhile (a rename on the server).
 */
static int scfs_lock_parent(struct dentry *dentry, struct inode **lower_dir)
{
	struct dentry *lower_parent = scfs_lower_dentry(dentry->d_parent);

	*lower_dir = d_inode(lower_parent);
	inode_lock_nested(*lower_dir, I_MUTEX_PARENT);
	if (scfs_lower_dentry(dentry)->d_parent != lower_parent) {
		inode_unlock(*lower_dir);
		return -ESTALE;
	}
	return 0;
}

/* After a create in dir: instantiate dentry from its lower dentry. */
static int scfs_instantiate(struct inode *dir, struct dentry *dentry,
			    struct inode *lower_dir)
{
	struct dentry *lower = scfs_lower_dentry(dentry);
	struct inode *inode;

	fsstack_copy_attr_times(dir, lower_dir);
	fsstack_copy_inode_size(dir, lower_dir);
	set_nlink(dir, lower_dir->i_nlink);
	if (d_really_is_negative(lower))
		return -ENOENT;	/* NFS may leave it negative: look it up again */
	inode = scfs_get_inode(dir->i_sb, d_inode(lower));
	if (IS_ERR(inode))
		return PTR_ERR(inode);
	d_instantiate(dentry, inode);
	return 0;
}

/* What a create in a directory makes: the lower file system's call. */
struct scfs_make {
	umode_t mode;
	dev_t dev;		/* mknod */
	const char *target;	/* symlink */
	bool excl;		/* create */
};

static int scfs_make(struct inode *dir, struct dentry *dentry,
		     const struct scfs_make *m)
{
	struct dentry *lower = scfs_lower_dentry(dentry);
	struct inode *lower_dir;
	int err = scfs_lock_parent(dentry, &lower_dir);

	if (err)
		return err;
	if (m->target)
		err = vfs_symlink(&init_user_ns, lower_dir, lower, m->target);
	else if (S_ISDIR(m->mode))
		err = vfs_mkdir(&init_user_ns, lower_dir, lower, m->mode);
	else if (S_ISREG(m->mode))
		err = vfs_create(&init_user_ns, lower_dir, lower, m->mode,
				 m->excl);
	else
		err = vfs_mknod(&init_user_ns, lower_dir, lower, m->mode,
				m->dev);
	if (!err)
		err = scfs_instantiate(dir, dentry, lower_dir);
	inode_unlock(lower_dir);
	return err;
}

static int scfs_create(struct user_namespace *ns, struct inode *dir,
		       struct dentry *dentry, umode_t mode, bool excl)
{
	struct scfs_make m = { .mode = S_IFREG | mode, .excl = excl };

	return scfs_make(dir, dentry, &m);
}

static int scfs_mkdir(struct user_namespace *ns, struct inode *dir,
		      struct dentry *dentry, umode_t mode)
{
	struct scfs_make m = { .mode = S_IFDIR | mode };

	return scfs_make(dir, dentry, &m);
}

static int scfs_mknod(struct user_namespace *ns, struct inode *dir,
		      struct dentry *dentry, umode_t mode, dev_t dev)
{
	struct scfs_make m = { .mode = mode, .dev = dev };

	return scfs_make(dir, dentry, &m);
}

static int scfs_symlink(struct user_namespace *ns, struct inode *dir,
			struct dentry *dentry, const char *target)
{
	struct scfs_make m = { .mode = S_IFLNK, .target = target };

	return scfs_make(dir, dentry, &m);
}

static int scfs_link(struct dentry *old, struct inode *dir,
		     struct dentry *dentry)
{
	struct inode *lower_dir;
	int err = scfs_lock_parent(dentry, &lower_dir);

	if (err)
		return err;
	err = vfs_link(scfs_lower_dentry(old), &init_user_ns, lower_dir,
		       scfs_lower_dentry(dentry), NULL);
	if (!err)
		err = scfs_instantiate(dir, dentry, lower_dir);
	if (!err)
		set_nlink(d_inode(old), scfs_lower_inode(d_inode(old))->i_nlink);
	inode_unlock(lower_dir);
	return err;
}

/* unlink and rmdir: the lower dentry stays referenced by the upper one. */
static int scfs_remove(struct inode *dir, struct dentry *dentry, bool is_dir)
{
	struct dentry *lower = scfs_lower_dentry(dentry);
	struct inode *inode = d_inode(dentry);
	struct inode *lower_dir;
	int err = scfs_lock_parent(dentry, &lower_dir);

	if (err)
		return err;
	dget(lower);
	if (is_dir)
		err = vfs_rmdir(&init_user_ns, lower_dir, lower);
	else
		err = vfs_unlink(&init_user_ns, lower_dir, lower, NULL);
	if (!err) {
		fsstack_copy_attr_times(dir, lower_dir);
		set_nlink(dir, lower_dir->i_nlink);
		if (is_dir)
			clear_nlink(inode);
		else
			set_nlink(inode, scfs_lower_inode(inode)->i_nlink);
		inode->i_ctime = dir->i_ctime;
	}
	dput(lower);
	inode_unlock(lower_dir);
	if (!err)
		d_drop(dentry);
	return err;
}

static int scfs_unlink(struct inode *dir, struct dentry *dentry)
{
	return scfs_remove(dir, dentry, false);
}

static int scfs_rmdir(struct inode *dir, struct dentry *dentry)
{
	return scfs_remove(dir, dentry, true);
}

static int scfs_rename(struct user_namespace *ns, struct inode *old_dir,
		       struct dentry *old, struct inode *new_dir,
		       struct dentry *new, unsigned int flags)
{
	struct dentry *lower_old = scfs_lower_dentry(old);
	struct dentry *lower_new = scfs_lower_dentry(new);
	struct dentry *lower_old_dir = scfs_lower_dentry(old->d_parent);
	struct dentry *lower_new_dir = scfs_lower_dentry(new->d_parent);
	struct renamedata rd = {
		.old_mnt_userns = &init_user_ns,
		.old_dir = d_inode(lower_old_dir),
		.old_dentry = lower_old,
		.new_mnt_userns = &init_user_ns,
		.new_dir = d_inode(lower_new_dir),
		.new_dentry = lower_new,
		.flags = flags,
	};
	struct dentry *trap;
	int err = -ESTALE;

	trap = lock_rename(lower_old_dir, lower_new_dir);
	dget(lower_new);
	if (lower_old->d_parent != lower_old_dir ||
	    lower_new->d_parent != lower_new_dir ||
	    d_unhashed(lower_old) || d_unhashed(lower_new))
		goto out;
	err = -EINVAL;		/* source is an ancestor of the target */
	if (trap == lower_old)
		goto out;
	err = -ENOTEMPTY;	/* target is an ancestor of the source */
	if (trap == lower_new)
		goto out;
	err = vfs_rename(&rd);
	if (err)
		goto out;
	fsstack_copy_attr_all(new_dir, d_inode(lower_new_dir));
	if (new_dir != old_dir)
		fsstack_copy_attr_all(old_dir, d_inode(lower_old_dir));
out:
	dput(lower_new);
	unlock_rename(lower_old_dir, lower_new_dir);
	return err;
}

static const char *scfs_get_link(struct dentry *dentry, struct inode *inode,
				 struct delayed_call *done)
{
	if (!dentry)
		return ERR_PTR(-ECHILD);
	return vfs_get_link(scfs_lower_dentry(dentry), done);
}

static int scfs_permission(struct user_namespace *ns, struct inode *inode,
			   int mask)
{
	return inode_permission(&init_user_ns, scfs_lower_inode(inode), mask);
}

static int scfs_setattr(struct user_namespace *ns, struct dentry *dentry,
			struct iattr *ia)
{
	struct dentry *lower = scfs_lower_dentry(dentry);
	struct inode *inode = d_inode(dentry);
	struct iattr lower_ia = *ia;
	int err;

	err = setattr_prepare(&init_user_ns, dentry, ia);
	if (err)
		return err;
	if (ia->ia_valid & ATTR_FILE)
		lower_ia.ia_file = ia->ia_file->private_data;
	/* the lower file system clears setuid/setgid its own way */
	if (lower_ia.ia_valid & (ATTR_KILL_SUID | ATTR_KILL_SGID))
		lower_ia.ia_valid &= ~ATTR_MODE;
	if ((ia->ia_valid & ATTR_SIZE) && S_ISREG(inode->i_mode)) {
		err = scfs_settle(dentry);
		if (err)
			return err;
	}
	inode_lock(d_inode(lower));
	err = notify_change(&init_user_ns, lower, &lower_ia, NULL);
	inode_unlock(d_inode(lower));
	if (!err && (ia->ia_valid & ATTR_SIZE) && S_ISREG(inode->i_mode)) {
		/*
		 * A truncate through NFS moved the change id: the file's
		 * CSI-Map entries past the new size (and any other) must go.
		 */
		int idx;
		struct sc_host *host = scfs_host_enter(dentry->d_sb, &idx);

		if (host)
			sc_host_forget_file(host, scfs_fileid(inode));
		scfs_host_exit(dentry->d_sb, idx);
		i_size_write(inode, ia->ia_size);
	}
	fsstack_copy_attr_all(inode, d_inode(lower));
	return err;
}

static int scfs_getattr(struct user_namespace *ns, const struct path *path,
			struct kstat *stat, u32 request_mask,
			unsigned int flags)
{
	struct inode *inode = d_inode(path->dentry);
	struct path lower;
	int err;

	scfs_lower_path(path->dentry, &lower);
	err = scfs_lower_getattr(inode, &lower, stat, request_mask, flags);
	if (err)
		return err;
	scfs_copy_attr(inode);
	/* the stack's own device: its mount, its sysfs directory */
	stat->dev = inode->i_sb->s_dev;
	return 0;
}

static ssize_t scfs_listxattr(struct dentry *dentry, char *list, size_t size)
{
	return vfs_listxattr(scfs_lower_dentry(dentry), list, size);
}

const struct inode_operations scfs_dir_iops = {
	.lookup = scfs_lookup,
	.create = scfs_create,
	.mkdir = scfs_mkdir,
	.mknod = scfs_mknod,
	.symlink = scfs_symlink,
	.link = scfs_link,
	.unlink = scfs_unlink,
	.rmdir = scfs_rmdir,
	.rename = scfs_rename,
	.permission = scfs_permission,
	.setattr = scfs_setattr,
	.getattr = scfs_getattr,
	.listxattr = scfs_listxattr,
};

const struct inode_operations scfs_file_iops = {
	.permission = scfs_permission,
	.setattr = scfs_setattr,
	.getattr = scfs_getattr,
	.listxattr = scfs_listxattr,
};

const struct inode_operations scfs_symlink_iops = {
	.get_link = scfs_get_link,
	.permission = scfs_permission,
	.setattr = scfs_setattr,
	.getattr = scfs_getattr,
	.listxattr = scfs_listxattr,
};

/* ---- extended attributes: every name is the lower file's --------------- */

static int scfs_xattr_get(const struct xattr_handler *handler,
			  struct dentry *dentry, struct inode *inode,
			  const char *name, void *value, size_t size)
{
	return vfs_getxattr(&init_user_ns, scfs_lower_dentry(dentry), name,
			    value, size);
}

static int scfs_xattr_set(const struct xattr_handler *handler,
			  struct user_namespace *ns, struct dentry *dentry,
			  struct inode *inode, const char *name,
			  const void *value, size_t size, int flags)
{
	struct dentry *lower = scfs_lower_dentry(dentry);
	int err;

	if (value)
		err = vfs_setxattr(&init_user_ns, lower, name, value, size,
				   flags);
	else
		err = vfs_removexattr(&init_user_ns, lower, name);
	fsstack_copy_attr_all(inode, d_inode(lower));
	return err;
}

static const struct xattr_handler scfs_xattr_handler = {
	.prefix = "",	/* every name */
	.get = scfs_xattr_get,
	.set = scfs_xattr_set,
};

const struct xattr_handler *scfs_xattr_handlers[] = {
	&scfs_xattr_handler,
	NULL
};
