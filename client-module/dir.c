// SPDX-License-Identifier: GPL-2.0-only
/* seacache.ko: directories, read from the lower NFS directory. */
#include <linux/file.h>
#include <linux/fs_stack.h>

#include "seacache.h"

static int scfs_dir_open(struct inode *inode, struct file *file)
{
	struct file *lower = scfs_open_lower(file->f_path.dentry,
					     file->f_flags);

	if (IS_ERR(lower))
		return PTR_ERR(lower);
	file->private_data = lower;
	return 0;
}

static int scfs_dir_release(struct inode *inode, struct file *file)
{
	fput(file->private_data);
	return 0;
}

/*
 * The lower directory's entries, positions and all: the upper file's
 * position is handed down and read back, so seekdir/telldir work as on
 * the plain NFS mount.
 */
static int scfs_iterate(struct file *file, struct dir_context *ctx)
{
	struct file *lower = file->private_data;
	int err;

	lower->f_pos = ctx->pos;
	err = iterate_dir(lower, ctx);
	file->f_pos = lower->f_pos;
	fsstack_copy_attr_atime(file_inode(file), file_inode(lower));
	return err;
}

static loff_t scfs_dir_llseek(struct file *file, loff_t offset, int whence)
{
	struct file *lower = file->private_data;
	loff_t pos = vfs_llseek(lower, offset, whence);

	if (pos >= 0)
		file->f_pos = pos;
	return pos;
}

static int scfs_dir_fsync(struct file *file, loff_t start, loff_t end,
			  int datasync)
{
	return vfs_fsync_range(file->private_data, start, end, datasync);
}

const struct file_operations scfs_dir_fops = {
	.open = scfs_dir_open,
	.release = scfs_dir_release,
	.iterate_shared = scfs_iterate,
	.read = generic_read_dir,
	.llseek = scfs_dir_llseek,
	.fsync = scfs_dir_fsync,
};
