// SPDX-License-Identifier: GPL-2.0-only
/*
 * seacache.ko: regular files.  Data goes through the host library: a read
 * of a block whose content the host holds costs no network at all, a miss
 * is one batched CSI READ, a write goes through to the server (by hash
 * where it may).  File data is cached once, in the host's content cache:
 * the upper inode has no page cache, and the lower NFS file is used only
 * as the fallback and for mmap.
 *
 * mmap: a mapped file's pages must be shared by every mapping and agree
 * with read and write.  They are the lower NFS file's pages: mmap maps
 * the lower file, and from the first mmap on (until the inode leaves
 * memory) read and write of that file go to the lower file too, so all
 * three see one page cache.  Its CSI-Map entries are dropped then.
 */
#include <linux/file.h>
#include <linux/fs_stack.h>
#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/slab.h>
#include <linux/uio.h>

#include "seacache.h"

/* The most one host call reads or writes (a bounce buffer's size). */
#define SCFS_IO_CHUNK (256u << 10)

/*
 * The size of a regular file as NFS knows it now: a GETATTR if the lower
 * inode's attributes are not current (after a CSI write, scfs_lower_changed).
 */
static void scfs_refresh_attr(struct file *file)
{
	struct file *lower = file->private_data;
	struct kstat st;

	if (!scfs_lower_getattr(file_inode(file), &lower->f_path, &st,
				STATX_SIZE, AT_STATX_SYNC_AS_STAT))
		scfs_copy_attr(file_inode(file));
}

static int scfs_open(struct inode *inode, struct file *file)
{
	struct csi_fileattr attr;
	struct sc_host *host;
	struct file *lower;
	int idx;

	/*
	 * The upper file does appends and direct I/O itself: the lower file,
	 * used for fallbacks and mmap, gets plain positioned buffered I/O.
	 */
	lower = scfs_open_lower(file->f_path.dentry,
				file->f_flags & ~(O_APPEND | O_DIRECT));
	if (IS_ERR(lower))
		return PTR_ERR(lower);
	file->private_data = lower;
	scfs_refresh_attr(file);
	/*
	 * Close-to-open, as NFS: the server's change id of the file now;
	 * if it moved, the host drops the file's CSI-Map entries.  On any
	 * failure the reads that follow find out again.
	 */
	host = scfs_host_enter(inode->i_sb, &idx);
	if (host && !test_bit(SCFS_MAPPED, &scfs_i(inode)->flags))
		sc_host_getattr(host, scfs_fileid(inode), &attr);
	scfs_host_exit(inode->i_sb, idx);
	return 0;
}

static int scfs_release(struct inode *inode, struct file *file)
{
	fput(file->private_data);
	return 0;
}

/*
 * Commit the unstable CSI writes of a file on close, as NFS flushes and
 * commits on close: an application that closed without fsync loses no
 * more on a server crash than over plain NFS.  Through NFS if CSI fails,
 * as every I/O (scfs_settle).
 */
static int scfs_flush(struct file *file, fl_owner_t id)
{
	struct file *lower = file->private_data;
	int err = 0;

	if (file->f_mode & FMODE_WRITE)
		err = scfs_settle(file->f_path.dentry);
	if (!err && lower->f_op->flush)
		err = lower->f_op->flush(lower, id);
	return err;
}

static bool scfs_mapped(struct file *file)
{
	return test_bit(SCFS_MAPPED, &scfs_i(file_inode(file))->flags);
}

static ssize_t scfs_lower_read_iter(struct kiocb *iocb, struct iov_iter *to)
{
	struct scfs_sb_info *sbi = scfs_sb(file_inode(iocb->ki_filp)->i_sb);
	ssize_t n;

	n = vfs_iter_read(iocb->ki_filp->private_data, to, &iocb->ki_pos, 0);
	atomic64_inc(&sbi->fb.mapped_io);
	return n;
}

/* Where a read's bytes go: the iter at the request's start, as it was. */
struct scfs_read_sink {
	const struct iov_iter *start;
	atomic64_t *copied;
};

/*
 * Straight from the cache's block (or the block a miss was read into)
 * to the reader's memory: the host hands bytes over in any order, so
 * each copy goes through a copy of the iter moved to its offset.
 */
static size_t scfs_sink_copy(void *ctx, u64 off, const void *src, size_t n)
{
	struct scfs_read_sink *k = ctx;
	struct iov_iter it = *k->start;
	size_t got;

	iov_iter_advance(&it, off);
	got = copy_to_iter(src, n, &it);
	atomic64_add(got, k->copied);
	return got;
}

/*
 * One chunk of len bytes at pos into to, which it advances by what it
 * read: through the host; without the CSI service, or if the CSI path
 * fails, from the lower file, which answers what the plain NFS mount
 * answers.  to must take its bytes in any order (not a pipe).
 */
static ssize_t scfs_read_chunk(struct file *file, struct iov_iter *to,
			       size_t len, loff_t pos)
{
	struct inode *inode = file_inode(file);
	struct scfs_sb_info *sbi = scfs_sb(inode->i_sb);
	struct scfs_read_sink k = { .start = to,
				    .copied = &sbi->fb.read_copied_bytes };
	struct sc_read_sink sink = { .copy = scfs_sink_copy, .ctx = &k };
	struct iov_iter chunk;
	struct sc_host *host;
	ssize_t n = -ENOTCONN;
	int idx;

	host = scfs_host_enter(inode->i_sb, &idx);
	if (host)
		n = sc_host_read_sink(host, scfs_fileid(inode), pos, &sink,
				      len);
	scfs_host_exit(inode->i_sb, idx);
	if (n > 0) {
		iov_iter_advance(to, n);
		atomic64_add(n, &sbi->fb.csi_read_bytes);
	}
	if (n >= 0 || !scfs_fallback_err(n))
		return n;
	n = scfs_settle(file->f_path.dentry);
	if (n)
		return n;
	scfs_refresh_attr(file);	/* NFS must know what CSI wrote */
	chunk = *to;
	iov_iter_truncate(&chunk, len);
	n = vfs_iter_read(file->private_data, &chunk, &pos, 0);
	atomic64_inc(&sbi->fb.reads);
	if (n > 0) {
		iov_iter_advance(to, n);
		atomic64_add(n, &sbi->fb.read_bytes);
	}
	return n;
}

/*
 * A pipe (splice) takes its bytes only in order: a chunk is read into a
 * bounce buffer first, the one read that has one.
 */
static ssize_t scfs_read_bounced(struct file *file, void *bounce,
				 struct iov_iter *to, size_t len, loff_t pos)
{
	struct scfs_sb_info *sbi = scfs_sb(file_inode(file)->i_sb);
	struct kvec kv = { .iov_base = bounce, .iov_len = len };
	struct iov_iter kit;
	ssize_t got;
	size_t copied;

	iov_iter_kvec(&kit, ITER_DEST, &kv, 1, len);
	got = scfs_read_chunk(file, &kit, len, pos);
	if (got <= 0)
		return got;
	copied = copy_to_iter(bounce, got, to);
	atomic64_add(copied, &sbi->fb.read_copied_bytes);
	return copied ? copied : -EFAULT;
}

static ssize_t scfs_read_iter(struct kiocb *iocb, struct iov_iter *to)
{
	struct file *file = iocb->ki_filp;
	size_t left = iov_iter_count(to);
	size_t want = min_t(size_t, left, SCFS_IO_CHUNK);
	ssize_t done = 0, err = 0;
	void *bounce = NULL;

	if (!left)
		return 0;
	if (scfs_mapped(file))
		return scfs_lower_read_iter(iocb, to);
	if (iocb->ki_flags & IOCB_NOWAIT)
		return -EAGAIN;	/* a miss waits for the network */
	if (iov_iter_is_pipe(to)) {
		bounce = kvmalloc(want, GFP_KERNEL);
		if (!bounce)
			return -ENOMEM;
	}
	/*
	 * Only what was asked: the host reads ahead for a sequential reader
	 * itself, into its cache (map windows and content read-ahead), so a
	 * reader in small pieces costs few READs without copying more than
	 * it reads.
	 */
	while (left) {
		ssize_t got = bounce ?
			scfs_read_bounced(file, bounce, to, want,
					  iocb->ki_pos) :
			scfs_read_chunk(file, to, want, iocb->ki_pos);

		if (got <= 0) {
			err = got;
			break;
		}
		iocb->ki_pos += got;
		done += got;
		left -= got;
		if (got < want)
			break;	/* end of file, or the reader's memory */
		want = min_t(size_t, left, SCFS_IO_CHUNK);
	}
	kvfree(bounce);
	return done ? done : err;
}

/*
 * One chunk through the host; without the CSI service, or if the CSI path
 * fails, to the lower file.  *csi tells whether the host wrote it.
 */
static ssize_t scfs_write_chunk(struct file *file, const void *buf,
				size_t len, loff_t pos, bool stable,
				bool *csi)
{
	struct inode *inode = file_inode(file);
	struct scfs_inode_info *si = scfs_i(inode);
	struct scfs_sb_info *sbi = scfs_sb(inode->i_sb);
	struct sc_host *host;
	loff_t lpos = pos;
	ssize_t n = -ENOTCONN;
	int idx;

	if (down_read_killable(&si->csi_writes))
		return -EINTR;
	host = scfs_host_enter(inode->i_sb, &idx);
	/* mapped since the write began: the lower file's pages rule now */
	if (host && !test_bit(SCFS_MAPPED, &si->flags))
		n = sc_host_write(host, scfs_fileid(inode), pos, buf, len,
				  stable);
	/*
	 * Going to NFS: the host may hold entries of the blocks this write
	 * changes (an address hit never asks the server): they go first.
	 */
	if (host && n < 0 && scfs_fallback_err(n))
		sc_host_forget_file(host, scfs_fileid(inode));
	scfs_host_exit(inode->i_sb, idx);
	up_read(&si->csi_writes);
	*csi = n >= 0;
	if (n >= 0 || !scfs_fallback_err(n))
		return n;
	n = scfs_settle(file->f_path.dentry);
	if (n)
		return n;
	scfs_refresh_attr(file);
	n = kernel_write(file->private_data, buf, len, &lpos);
	/*
	 * Committed on the server before this returns, not in NFS's dirty
	 * pages nor only written UNSTABLE: the reads that follow may go
	 * through CSI, which sees only the server, and a server restart
	 * drops what was not committed, which NFS writes again only at its
	 * next COMMIT, too late for them.
	 */
	if (n > 0) {
		int err = vfs_fsync_range(file->private_data, pos, pos + n - 1,
					  1);

		if (err)
			n = err;
	}
	atomic64_inc(&sbi->fb.writes);
	if (n > 0)
		atomic64_add(n, &sbi->fb.write_bytes);
	return n;
}

static ssize_t scfs_write_iter(struct kiocb *iocb, struct iov_iter *from)
{
	struct file *file = iocb->ki_filp;
	struct inode *inode = file_inode(file);
	bool stable = iocb_is_dsync(iocb), csi = false;
	ssize_t done = 0, err;
	size_t left;
	void *buf = NULL;

	if (iocb->ki_flags & IOCB_NOWAIT)
		return -EAGAIN;
	if (scfs_inode_lock_killable(inode))
		return -EINTR;
	err = generic_write_checks(iocb, from);
	if (err <= 0)
		goto out;
	err = file_remove_privs(file);
	if (err)
		goto out;
	left = iov_iter_count(from);
	if (scfs_mapped(file)) {
		done = vfs_iter_write(file->private_data, from, &iocb->ki_pos,
				      stable ? RWF_DSYNC : 0);
		atomic64_inc(&scfs_sb(inode->i_sb)->fb.mapped_io);
		if (done > 0 && iocb->ki_pos > i_size_read(inode))
			i_size_write(inode, iocb->ki_pos);
		goto out;
	}
	buf = kvmalloc(min_t(size_t, left, SCFS_IO_CHUNK), GFP_KERNEL);
	err = -ENOMEM;
	if (!buf)
		goto out;
	err = 0;
	while (left) {
		size_t want = min_t(size_t, left, SCFS_IO_CHUNK);
		ssize_t put;
		bool by_csi;

		if (copy_from_iter(buf, want, from) != want) {
			err = -EFAULT;
			break;
		}
		put = scfs_write_chunk(file, buf, want, iocb->ki_pos, stable,
				       &by_csi);
		csi |= by_csi;
		if (put < 0) {
			err = put;
			break;
		}
		iocb->ki_pos += put;
		done += put;
		left -= put;
		if (iocb->ki_pos > i_size_read(inode))
			i_size_write(inode, iocb->ki_pos);
		if (put < want)
			break;
	}
	if (csi)
		scfs_lower_changed(inode);
out:
	inode_unlock(inode);
	kvfree(buf);
	return done ? done : err;
}

/*
 * COMMIT of the file's unstable CSI writes (through NFS if CSI fails,
 * scfs_settle), then the lower file's own (fallback writes, mmap) the
 * NFS way.
 */
static int scfs_fsync(struct file *file, loff_t start, loff_t end,
		      int datasync)
{
	int err = scfs_settle(file->f_path.dentry);

	if (!err)
		err = vfs_fsync_range(file->private_data, start, end,
				      datasync);
	return err;
}

static int scfs_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct inode *inode = file_inode(file);
	struct file *lower = file->private_data;
	struct sc_host *host;
	int idx;

	if (!lower->f_op->mmap)
		return -ENODEV;
	/*
	 * The writes under way through CSI finish (csi_writes), the unstable
	 * ones are settled, then no entry of the file is used.
	 */
	if (!test_and_set_bit(SCFS_MAPPED, &scfs_i(inode)->flags)) {
		int err;

		down_write(&scfs_i(inode)->csi_writes);
		up_write(&scfs_i(inode)->csi_writes);
		err = scfs_settle(file->f_path.dentry);

		if (err) {
			clear_bit(SCFS_MAPPED, &scfs_i(inode)->flags);
			return err;
		}
		host = scfs_host_enter(inode->i_sb, &idx);
		if (host)
			sc_host_forget_file(host, scfs_fileid(inode));
		scfs_host_exit(inode->i_sb, idx);
	}
	scfs_refresh_attr(file);
	vma_set_file(vma, lower);
	return call_mmap(lower, vma);
}

static loff_t scfs_llseek(struct file *file, loff_t offset, int whence)
{
	struct file *lower = file->private_data;
	loff_t pos;

	if (whence != SEEK_DATA && whence != SEEK_HOLE)
		return generic_file_llseek(file, offset, whence);
	/* holes are the server's: ask it through NFS (v4.2 SEEK) */
	pos = vfs_llseek(lower, offset, whence);
	return pos < 0 ? pos : vfs_setpos(file, pos, file_inode(file)->i_sb->s_maxbytes);
}

static long scfs_fallocate(struct file *file, int mode, loff_t off,
			   loff_t len)
{
	struct inode *inode = file_inode(file);
	struct sc_host *host;
	int idx;
	long err;

	if (scfs_inode_lock_killable(inode))
		return -EINTR;
	err = scfs_settle(file->f_path.dentry);
	if (!err)
		err = vfs_fallocate(file->private_data, mode, off, len);
	host = scfs_host_enter(inode->i_sb, &idx);
	if (!err && host)
		sc_host_forget_file(host, scfs_fileid(inode));
	scfs_host_exit(inode->i_sb, idx);
	inode_unlock(inode);
	scfs_refresh_attr(file);
	return err;
}

const struct file_operations scfs_file_fops = {
	.open = scfs_open,
	.release = scfs_release,
	.flush = scfs_flush,
	.read_iter = scfs_read_iter,
	.write_iter = scfs_write_iter,
	.splice_read = generic_file_splice_read,
	.splice_write = iter_file_splice_write,
	.fsync = scfs_fsync,
	.mmap = scfs_mmap,
	.llseek = scfs_llseek,
	.fallocate = scfs_fallocate,
};

/*
 * The upper inodes never have pages; direct_IO is here only so that
 * open(O_DIRECT) is allowed: read_iter and write_iter serve it.
 */
const struct address_space_operations scfs_aops = {
	.direct_IO = noop_direct_IO,
};
