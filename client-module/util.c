// SPDX-License-Identifier: GPL-2.0-only
/*
 * seacache.ko: what the other files share about the lower NFS file system:
 * lower paths and files, attribute copies, and telling NFS that a file
 * changed behind its back.
 */
#include <linux/file.h>
#include <linux/fs_stack.h>
#include <linux/mount.h>
#include <linux/pagemap.h>

#include "seacache.h"

void scfs_lower_path(const struct dentry *dentry, struct path *out)
{
	out->mnt = scfs_sb(dentry->d_sb)->lower.mnt;
	out->dentry = scfs_lower_dentry(dentry);
}

/*
 * The lower file is opened with the real lower path (not the upper one as
 * a fake path, as overlayfs does): NFS takes its open context from the
 * file's dentry.
 */
struct file *scfs_open_lower(const struct dentry *dentry, int flags)
{
	struct path lower;

	scfs_lower_path(dentry, &lower);
	return dentry_open(&lower, flags & ~(O_CREAT | O_EXCL | O_NOCTTY |
					     O_TRUNC), current_cred());
}

/*
 * The upper inode mirrors the lower one.  The size of a regular file is
 * kept by the writes through the mount (the lower NFS inode learns of
 * them only at its next GETATTR): take the lower size only when it is
 * known to be current, that is after a GETATTR (scfs_getattr, open).
 */
void scfs_copy_attr(struct inode *inode)
{
	struct inode *lower = scfs_lower_inode(inode);

	fsstack_copy_attr_all(inode, lower);
	fsstack_copy_inode_size(inode, lower);
}

/*
 * A CSI write changed the file on the server behind NFS's back.  Its
 * cached pages go now (a reader of the lower mount reads the server's
 * data again); its attributes are fetched again (a GETATTR) the next time
 * this module uses them, so no write pays a round trip for it.
 */
void scfs_lower_changed(struct inode *inode)
{
	struct address_space *mapping = scfs_lower_inode(inode)->i_mapping;

	set_bit(SCFS_LOWER_STALE, &scfs_i(inode)->flags);
	if (mapping->nrpages)
		invalidate_inode_pages2(mapping);
}

/* vfs_getattr of the lower file, from the server if CSI wrote it since. */
int scfs_lower_getattr(struct inode *inode, const struct path *lower,
		       struct kstat *st, u32 mask, unsigned int flags)
{
	bool stale = test_and_clear_bit(SCFS_LOWER_STALE,
					&scfs_i(inode)->flags);
	int err;

	if (stale)
		flags = (flags & ~AT_STATX_SYNC_TYPE) | AT_STATX_FORCE_SYNC;
	err = vfs_getattr(lower, st, mask, flags);
	if (err && stale)
		set_bit(SCFS_LOWER_STALE, &scfs_i(inode)->flags);
	return err;
}

/* Where sc_host_pins_drain puts a file's unstable blocks. */
struct scfs_drain {
	struct file *lower;
	struct scfs_io_stats *fb;
};

static int scfs_put_lower(void *ctx, u64 off, const void *data, u32 len)
{
	struct scfs_drain *d = ctx;
	loff_t pos = off;
	ssize_t n = kernel_write(d->lower, data, len, &pos);

	if (n != len)
		return n < 0 ? n : -EIO;
	atomic64_inc(&d->fb->drained_blocks);
	return 0;
}

/*
 * Before the lower file is written, truncated or read behind the host's
 * back: the host's unstable writes of the file must not be lost (a server
 * restart drops what was not committed) nor written again later over what
 * NFS writes now.  They are committed through CSI, or if the service
 * cannot be reached, written through the lower file and flushed.
 */
static int scfs_settle_host(struct dentry *dentry, struct sc_host *host)
{
	u64 id = scfs_fileid(d_inode(dentry));
	struct scfs_drain d = { .fb = &scfs_sb(dentry->d_sb)->fb };
	int err = sc_host_commit(host, id);

	if (err && scfs_fallback_err(err)) {
		d.lower = scfs_open_lower(dentry, O_WRONLY);
		err = PTR_ERR_OR_ZERO(d.lower);
		if (!err) {
			err = sc_host_pins_drain(host, id, scfs_put_lower, &d);
			if (!err)
				err = vfs_fsync(d.lower, 1);
			fput(d.lower);
		}
	}
	return err;
}

int scfs_settle(struct dentry *dentry)
{
	struct sc_host *host;
	int idx, err = 0;

	host = scfs_host_enter(dentry->d_sb, &idx);
	if (host)
		err = scfs_settle_host(dentry, host);
	scfs_host_exit(dentry->d_sb, idx);
	return err;
}

int scfs_settle_all(struct super_block *sb, struct sc_host *host)
{
	struct inode *inode, *done = NULL;
	struct dentry *alias;
	int err = 0, e;
	bool skip;

	spin_lock(&sb->s_inode_list_lock);
	list_for_each_entry(inode, &sb->s_inodes, i_sb_list) {
		spin_lock(&inode->i_lock);
		skip = (inode->i_state & (I_NEW | I_FREEING | I_WILL_FREE)) ||
		       !S_ISREG(inode->i_mode);
		spin_unlock(&inode->i_lock);
		if (skip || !igrab(inode))
			continue;
		spin_unlock(&sb->s_inode_list_lock);
		/* the reference keeps inode on the list while we walk on */
		iput(done);
		done = inode;
		alias = d_find_alias(inode);
		if (alias) {
			e = scfs_settle_host(alias, host);
			dput(alias);
			err = err ? err : e;
		}
		cond_resched();
		spin_lock(&sb->s_inode_list_lock);
	}
	spin_unlock(&sb->s_inode_list_lock);
	iput(done);
	return err;
}

/*
 * Errors after which an I/O is retried on the lower NFS file: all of them
 * (service unreachable, busy, a protocol error, a stale file), so that a
 * VM gets exactly the answer the plain NFS mount gives, error or data.
 * A fatal signal is not retried: the task is going away.
 */
bool scfs_fallback_err(int err)
{
	return err != -EINTR && err != -ERESTARTSYS;
}
