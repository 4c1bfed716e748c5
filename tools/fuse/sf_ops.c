// SPDX-License-Identifier: BSD-2-Clause
/*
 * The FUSE low-level operations.  As in seacache.ko (client-module/):
 * the namespace and attributes pass through to NFS, as the caller; file
 * data goes through the host library by the file's NFS fileid, which is
 * its CSI file id (PROTOCOL.md §2); and whatever CSI cannot do (the
 * service down or gone) goes to NFS, after the host's unstable writes of
 * the file are settled (sf_settle), so a VM gets what NFS would give it.
 *
 * The kernel checks permissions from the attributes (default_permissions)
 * and caches those of directories a second; a regular file's it asks for
 * at every open (attr_timeout).  A VM's image is opened once and read and
 * written in place, so that costs the data path nothing.  Opens with O_DIRECT (QEMU's cache=none) bypass the
 * kernel's page cache and are served from the content cache alone.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include <nfsc/libnfs.h>

#include <seacache/host.h>

#include "sf.h"

/*
 * How long the kernel may keep a name and its attributes: a second, but
 * for regular files none, so that every open looks the file up again
 * and reads see the size another host gave it (close-to-open, as NFS).
 */
#define SF_ATTR_TIMEOUT 1.0

static double attr_timeout(const struct stat *st)
{
	return S_ISREG(st->st_mode) ? 0.0 : SF_ATTR_TIMEOUT;
}

static struct sf_fs *req_fs(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static struct nfs_context *req_nfs(fuse_req_t req, struct sf_nfs **held)
{
	const struct fuse_ctx *c = fuse_req_ctx(req);

	return sf_nfs_get(&req_fs(req)->pool, c->uid, c->gid, held);
}

static void to_stat(const struct nfs_stat_64 *n, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = (ino_t)n->nfs_ino;
	st->st_mode = (mode_t)n->nfs_mode;
	st->st_nlink = (nlink_t)n->nfs_nlink;
	st->st_uid = (uid_t)n->nfs_uid;
	st->st_gid = (gid_t)n->nfs_gid;
	st->st_rdev = (dev_t)n->nfs_rdev;
	st->st_size = (off_t)n->nfs_size;
	st->st_blksize = 65536;
	st->st_blocks = (blkcnt_t)((n->nfs_used + 511) / 512);
	st->st_atim.tv_sec = (time_t)n->nfs_atime;
	st->st_atim.tv_nsec = (long)n->nfs_atime_nsec;
	st->st_mtim.tv_sec = (time_t)n->nfs_mtime;
	st->st_mtim.tv_nsec = (long)n->nfs_mtime_nsec;
	st->st_ctim.tv_sec = (time_t)n->nfs_ctime;
	st->st_ctim.tv_nsec = (long)n->nfs_ctime_nsec;
}

static int nfs_getattr(fuse_req_t req, const char *path, struct stat *st)
{
	struct nfs_stat_64 n;
	struct sf_nfs *held;
	int err = nfs_lstat64(req_nfs(req, &held), path, &n);

	sf_nfs_put(held);
	if (!err)
		to_stat(&n, st);
	return err;
}

/* parent's name's path, or the error replied */
static char *path_or_reply(fuse_req_t req, fuse_ino_t parent,
			   const char *name)
{
	struct sf_fs *fs = req_fs(req);
	char *path;
	int err = sf_path(&fs->itab, sf_inode_of(&fs->itab, parent), name,
			  &path);

	if (err) {
		fuse_reply_err(req, -err);
		return NULL;
	}
	return path;
}

/* The reply of a LOOKUP, or of what made (parent, name): path's inode. */
static void reply_entry(fuse_req_t req, fuse_ino_t parent, const char *name,
			const char *path, struct fuse_file_info *created)
{
	struct sf_fs *fs = req_fs(req);
	struct fuse_entry_param e = { 0 };
	struct sf_inode *i;
	int err = nfs_getattr(req, path, &e.attr);

	e.attr_timeout = e.entry_timeout = attr_timeout(&e.attr);

	if (!err)
		err = sf_inode_found(&fs->itab, sf_inode_of(&fs->itab, parent),
				     name, &e.attr, &i);
	if (err) {
		fuse_reply_err(req, -err);
		return;
	}
	e.ino = sf_ino_of(&fs->itab, i);
	/* not delivered (interrupted): the kernel holds no reference */
	if (created ? fuse_reply_create(req, &e, created) :
		      fuse_reply_entry(req, &e))
		sf_inode_forget(&fs->itab, i, 1);
}

static void sf_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	char *path = path_or_reply(req, parent, name);

	if (!path)
		return;
	reply_entry(req, parent, name, path, NULL);
	free(path);
}

static void sf_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct sf_fs *fs = req_fs(req);

	sf_inode_forget(&fs->itab, sf_inode_of(&fs->itab, ino), nlookup);
	fuse_reply_none(req);
}

static void sf_forget_multi(fuse_req_t req, size_t count,
			    struct fuse_forget_data *forgets)
{
	struct sf_fs *fs = req_fs(req);

	for (size_t k = 0; k < count; k++)
		sf_inode_forget(&fs->itab,
				sf_inode_of(&fs->itab, forgets[k].ino),
				forgets[k].nlookup);
	fuse_reply_none(req);
}

static void reply_attr(fuse_req_t req, const char *path)
{
	struct stat st;
	int err = nfs_getattr(req, path, &st);

	if (err)
		fuse_reply_err(req, -err);
	else
		fuse_reply_attr(req, &st, attr_timeout(&st));
}

static void sf_getattr(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	char *path = path_or_reply(req, ino, NULL);

	(void)fi;
	if (!path)
		return;
	reply_attr(req, path);
	free(path);
}

static void to_timeval(const struct timespec *ts, bool now,
		       struct timeval *tv)
{
	if (now) {
		gettimeofday(tv, NULL);
	} else {
		tv->tv_sec = ts->tv_sec;
		tv->tv_usec = ts->tv_nsec / 1000;
	}
}

/* A truncate: what CSI holds of the file first, then NFS, then forgotten. */
static int truncate_file(fuse_req_t req, fuse_ino_t ino, const char *path,
			 off_t size)
{
	struct sf_fs *fs = req_fs(req);
	struct sf_inode *i = sf_inode_of(&fs->itab, ino);
	struct sc_host *host = sf_host(fs);
	struct sf_nfs *held;
	int err = sf_settle(fs, i);

	if (err)
		return err;
	err = nfs_truncate(req_nfs(req, &held), path, (uint64_t)size);
	sf_nfs_put(held);
	if (host)
		sc_host_forget_file(host, i->fileid);
	return err;
}

static void sf_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		       int to_set, struct fuse_file_info *fi)
{
	char *path = path_or_reply(req, ino, NULL);
	struct nfs_context *nfs;
	struct sf_nfs *held;
	struct stat cur;
	int err = 0;

	(void)fi;
	if (!path)
		return;
	if (to_set & FUSE_SET_ATTR_SIZE)
		err = truncate_file(req, ino, path, attr->st_size);
	if (!err && (to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID |
			       FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME)))
		err = nfs_getattr(req, path, &cur);
	nfs = req_nfs(req, &held);
	if (!err && (to_set & FUSE_SET_ATTR_MODE))
		err = nfs_chmod(nfs, path, (int)(attr->st_mode & 07777));
	if (!err && (to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)))
		err = nfs_lchown(nfs, path,
				 (int)(to_set & FUSE_SET_ATTR_UID ?
				       attr->st_uid : cur.st_uid),
				 (int)(to_set & FUSE_SET_ATTR_GID ?
				       attr->st_gid : cur.st_gid));
	if (!err && (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME))) {
		struct timeval tv[2];

		to_timeval(to_set & FUSE_SET_ATTR_ATIME ? &attr->st_atim :
			   &cur.st_atim, to_set & FUSE_SET_ATTR_ATIME_NOW, &tv[0]);
		to_timeval(to_set & FUSE_SET_ATTR_MTIME ? &attr->st_mtim :
			   &cur.st_mtim, to_set & FUSE_SET_ATTR_MTIME_NOW, &tv[1]);
		err = nfs_lutimes(nfs, path, tv);
	}
	sf_nfs_put(held);
	if (err)
		fuse_reply_err(req, -err);
	else
		reply_attr(req, path);
	free(path);
}

static void sf_readlink(fuse_req_t req, fuse_ino_t ino)
{
	char *path = path_or_reply(req, ino, NULL), *target = NULL;
	struct sf_nfs *held;
	int err;

	if (!path)
		return;
	err = nfs_readlink2(req_nfs(req, &held), path, &target);
	sf_nfs_put(held);
	if (err)
		fuse_reply_err(req, -err);
	else
		fuse_reply_readlink(req, target);
	free(target);
	free(path);
}

/* mknod, mkdir, symlink, link: made by make, then replied as a LOOKUP */
enum make_kind { MAKE_NODE, MAKE_DIR, MAKE_SYMLINK, MAKE_LINK };

static void make_entry(fuse_req_t req, fuse_ino_t parent, const char *name,
		       enum make_kind kind, mode_t mode, dev_t rdev,
		       const char *other)
{
	char *path = path_or_reply(req, parent, name);
	struct nfs_context *nfs;
	struct sf_nfs *held;
	int err = 0;

	if (!path)
		return;
	nfs = req_nfs(req, &held);
	switch (kind) {
	case MAKE_NODE:
		err = nfs_mknod(nfs, path, (int)mode, (int)rdev);
		break;
	case MAKE_DIR:
		err = nfs_mkdir2(nfs, path, (int)mode);
		break;
	case MAKE_SYMLINK:
		err = nfs_symlink(nfs, other, path);
		break;
	case MAKE_LINK:
		err = nfs_link(nfs, other, path);
		break;
	}
	sf_nfs_put(held);
	if (err)
		fuse_reply_err(req, -err);
	else
		reply_entry(req, parent, name, path, NULL);
	free(path);
}

static void sf_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode, dev_t rdev)
{
	make_entry(req, parent, name, MAKE_NODE, mode, rdev, NULL);
}

static void sf_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode)
{
	make_entry(req, parent, name, MAKE_DIR, mode, 0, NULL);
}

static void sf_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		       const char *name)
{
	make_entry(req, parent, name, MAKE_SYMLINK, 0, 0, link);
}

static void sf_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		    const char *newname)
{
	char *old = path_or_reply(req, ino, NULL);

	if (!old)
		return;
	make_entry(req, newparent, newname, MAKE_LINK, 0, 0, old);
	free(old);
}

/* The fileid at path, 0 if none (for the inode table after a change). */
static uint64_t fileid_at(fuse_req_t req, const char *path)
{
	struct stat st;

	return nfs_getattr(req, path, &st) ? 0 : (uint64_t)st.st_ino;
}

static void remove_entry(fuse_req_t req, fuse_ino_t parent, const char *name,
			 bool dir)
{
	struct sf_fs *fs = req_fs(req);
	char *path = path_or_reply(req, parent, name);
	struct sf_nfs *held;
	uint64_t fileid;
	int err;

	if (!path)
		return;
	fileid = fileid_at(req, path);
	err = dir ? nfs_rmdir(req_nfs(req, &held), path) :
		    nfs_unlink(req_nfs(req, &held), path);
	sf_nfs_put(held);
	if (!err)
		sf_inode_moved(&fs->itab, fileid, sf_inode_of(&fs->itab, parent),
			       name, NULL, NULL);
	fuse_reply_err(req, -err);
	free(path);
}

static void sf_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_entry(req, parent, name, false);
}

static void sf_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_entry(req, parent, name, true);
}

static void sf_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname,
		      unsigned int flags)
{
	struct sf_fs *fs = req_fs(req);
	struct sf_inode *from = sf_inode_of(&fs->itab, parent);
	struct sf_inode *to = sf_inode_of(&fs->itab, newparent);
	char *path = NULL, *newpath = NULL;
	uint64_t fileid, replaced;
	struct sf_nfs *held;
	int err;

	if (flags) {		/* NFSv3 has neither NOREPLACE nor EXCHANGE */
		fuse_reply_err(req, EINVAL);
		return;
	}
	err = sf_path(&fs->itab, from, name, &path);
	if (!err)
		err = sf_path(&fs->itab, to, newname, &newpath);
	if (!err) {
		fileid = fileid_at(req, path);
		replaced = fileid_at(req, newpath);
		err = nfs_rename(req_nfs(req, &held), path, newpath);
		sf_nfs_put(held);
	}
	if (!err) {
		if (replaced && replaced != fileid)
			sf_inode_moved(&fs->itab, replaced, to, newname, NULL,
				       NULL);
		sf_inode_moved(&fs->itab, fileid, from, name, to, newname);
	}
	fuse_reply_err(req, -err);
	free(path);
	free(newpath);
}

/* ---- regular files ------------------------------------------------------ */

static void open_flags(struct sf_fs *fs, struct fuse_file_info *fi)
{
	fi->direct_io = fs->o.direct_io || (fi->flags & O_DIRECT);
	fi->keep_cache = 0;	/* close-to-open, as NFS */
}

/* Close-to-open: the server's change id, which drops stale mappings. */
static void open_validate(struct sf_fs *fs, fuse_ino_t ino)
{
	struct sc_host *host = sf_host(fs);
	struct csi_fileattr attr;

	if (host)
		sc_host_getattr(host, sf_inode_of(&fs->itab, ino)->fileid,
				&attr);
}

static void sf_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct sf_fs *fs = req_fs(req);

	open_validate(fs, ino);
	open_flags(fs, fi);
	fuse_reply_open(req, fi);
}

static void sf_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, struct fuse_file_info *fi)
{
	struct sf_fs *fs = req_fs(req);
	char *path = path_or_reply(req, parent, name);
	struct sf_nfs *held;
	struct nfsfh *fh;
	struct nfs_context *nfs;
	int err;

	if (!path)
		return;
	nfs = req_nfs(req, &held);
	err = nfs_create(nfs, path, O_RDWR | (fi->flags & O_EXCL),
			 (int)(mode & 07777), &fh);
	if (!err)
		nfs_close(nfs, fh);
	sf_nfs_put(held);
	if (err) {
		fuse_reply_err(req, -err);
	} else {
		open_flags(fs, fi);
		reply_entry(req, parent, name, path, fi);
	}
	free(path);
}

static void sf_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct sf_fs *fs = req_fs(req);
	struct sf_inode *i = sf_inode_of(&fs->itab, ino);
	const struct fuse_ctx *c = fuse_req_ctx(req);
	struct sc_host *host = sf_host(fs);
	ssize_t got = -EIO;
	char *buf = malloc(size ? size : 1), *path;

	(void)fi;
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (host) {
		got = sc_host_read(host, i->fileid, (uint64_t)off, buf, size);
		if (got >= 0)
			atomic_fetch_add(&fs->io.csi_read_bytes, (uint64_t)got);
	}
	if (got < 0 && sf_fallback_err((int)got)) {
		got = sf_settle(fs, i);
		if (!got)
			got = sf_path(&fs->itab, i, NULL, &path);
		if (!got) {
			got = sf_nfs_pread(fs, c->uid, c->gid, path,
					   (uint64_t)off, buf, size);
			free(path);
		}
	}
	if (got < 0)
		fuse_reply_err(req, (int)-got);
	else
		fuse_reply_buf(req, buf, (size_t)got);
	free(buf);
}

/*
 * Through CSI (FILE_SYNC for O_SYNC/O_DSYNC opens, else UNSTABLE until
 * flush or fsync commits); else through NFS, synced, after the file's
 * unstable CSI writes are settled and with its CSI-Map entries dropped,
 * so that the CSI reads after it see it.
 */
static void sf_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		     size_t size, off_t off, struct fuse_file_info *fi)
{
	struct sf_fs *fs = req_fs(req);
	struct sf_inode *i = sf_inode_of(&fs->itab, ino);
	const struct fuse_ctx *c = fuse_req_ctx(req);
	struct sc_host *host = sf_host(fs);
	bool stable = fi->flags & (O_SYNC | O_DSYNC);
	ssize_t put = -EIO;
	char *path;

	if (host)
		put = sc_host_write(host, i->fileid, (uint64_t)off, buf, size,
				    stable);
	if (put < 0 && sf_fallback_err((int)put)) {
		put = sf_settle(fs, i);
		if (!put && host)
			sc_host_forget_file(host, i->fileid);
		if (!put)
			put = sf_path(&fs->itab, i, NULL, &path);
		if (!put) {
			put = sf_nfs_pwrite(fs, c->uid, c->gid, path,
					    (uint64_t)off, buf, size, true);
			free(path);
		}
	}
	if (put < 0)
		fuse_reply_err(req, (int)-put);
	else
		fuse_reply_write(req, (size_t)put);
}

/* close and fsync: the file's unstable writes committed, as NFS does */
static void sf_flush(fuse_req_t req, fuse_ino_t ino,
		     struct fuse_file_info *fi)
{
	struct sf_fs *fs = req_fs(req);

	(void)fi;
	fuse_reply_err(req, -sf_settle(fs, sf_inode_of(&fs->itab, ino)));
}

static void sf_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		     struct fuse_file_info *fi)
{
	(void)datasync;
	sf_flush(req, ino, fi);
}

/* ---- directories -------------------------------------------------------- */

/* A directory's entries, read whole at opendir (libnfs reads it so). */
struct sf_dir {
	size_t n;
	struct sf_dirent {
		char *name;
		uint64_t fileid;
		mode_t type;
	} *e;
};

static void dir_free(struct sf_dir *d)
{
	for (size_t k = 0; k < d->n; k++)
		free(d->e[k].name);
	free(d->e);
	free(d);
}

static void sf_opendir(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	char *path = path_or_reply(req, ino, NULL);
	struct sf_dir *d = calloc(1, sizeof(*d));
	struct nfs_context *nfs;
	struct nfsdirent *ent;
	struct nfsdir *dir;
	struct sf_nfs *held;
	size_t cap = 0;
	bool opened;
	int err;

	if (!path) {
		free(d);
		return;
	}
	if (!d) {
		fuse_reply_err(req, ENOMEM);
		free(path);
		return;
	}
	nfs = req_nfs(req, &held);
	err = nfs_opendir(nfs, path, &dir);
	opened = !err;
	while (!err && (ent = nfs_readdir(nfs, dir))) {
		if (d->n == cap) {
			struct sf_dirent *m;

			cap = cap ? 2 * cap : 64;
			m = realloc(d->e, cap * sizeof(*m));
			if (!m) {
				err = -ENOMEM;
				break;
			}
			d->e = m;
		}
		d->e[d->n].name = strdup(ent->name);
		if (!d->e[d->n].name) {
			err = -ENOMEM;
			break;
		}
		d->e[d->n].fileid = ent->inode;
		d->e[d->n].type = ent->mode & S_IFMT;
		d->n++;
	}
	if (opened)
		nfs_closedir(nfs, dir);
	sf_nfs_put(held);
	free(path);
	if (err) {
		dir_free(d);
		fuse_reply_err(req, -err);
		return;
	}
	fi->fh = (uintptr_t)d;
	if (fuse_reply_open(req, fi))
		dir_free(d);
}

static void sf_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	struct sf_dir *d = (struct sf_dir *)(uintptr_t)fi->fh;
	char *buf = malloc(size);
	size_t used = 0;

	(void)ino;
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	for (size_t k = (size_t)off; k < d->n; k++) {
		struct stat st = {
			.st_ino = (ino_t)d->e[k].fileid,
			.st_mode = d->e[k].type,
		};
		size_t n = fuse_add_direntry(req, buf + used, size - used,
					     d->e[k].name, &st, (off_t)k + 1);

		if (n > size - used)
			break;
		used += n;
	}
	fuse_reply_buf(req, buf, used);
	free(buf);
}

static void sf_releasedir(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_file_info *fi)
{
	(void)ino;
	dir_free((struct sf_dir *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

static void sf_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct nfs_statvfs_64 v;
	struct sf_nfs *held;
	struct statvfs s = { 0 };
	int err = nfs_statvfs64(req_nfs(req, &held), "/", &v);

	(void)ino;
	sf_nfs_put(held);
	if (err) {
		fuse_reply_err(req, -err);
		return;
	}
	s.f_bsize = (unsigned long)v.f_bsize;
	s.f_frsize = (unsigned long)v.f_frsize;
	s.f_blocks = (fsblkcnt_t)v.f_blocks;
	s.f_bfree = (fsblkcnt_t)v.f_bfree;
	s.f_bavail = (fsblkcnt_t)v.f_bavail;
	s.f_files = (fsfilcnt_t)v.f_files;
	s.f_ffree = (fsfilcnt_t)v.f_ffree;
	s.f_favail = (fsfilcnt_t)v.f_favail;
	s.f_namemax = (unsigned long)v.f_namemax;
	fuse_reply_statfs(req, &s);
}

const struct fuse_lowlevel_ops sf_ops = {
	.lookup = sf_lookup,
	.forget = sf_forget,
	.forget_multi = sf_forget_multi,
	.getattr = sf_getattr,
	.setattr = sf_setattr,
	.readlink = sf_readlink,
	.mknod = sf_mknod,
	.mkdir = sf_mkdir,
	.symlink = sf_symlink,
	.link = sf_link,
	.unlink = sf_unlink,
	.rmdir = sf_rmdir,
	.rename = sf_rename,
	.open = sf_open,
	.create = sf_create,
	.read = sf_read,
	.write = sf_write,
	.flush = sf_flush,
	.fsync = sf_fsync,
	.opendir = sf_opendir,
	.readdir = sf_readdir,
	.releasedir = sf_releasedir,
	.statfs = sf_statfs,
};
