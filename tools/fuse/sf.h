/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * seacache-fuse: the SeaCache host as a FUSE file system, for hypervisors
 * that cannot load seacache.ko.  It mounts an export of the SeaCache
 * server the way `mount -t seacache` stacks on an NFS mount: the
 * namespace and attributes through NFSv3 (libnfs), file data through the
 * host library (lib/host/) over CSI, with every I/O going to NFS when the
 * CSI service cannot be reached.
 *
 * Files, from the bottom up (each calls only those above it here):
 *   sf_nfs.c    a pool of NFS connections, each call under its caller's ids
 *   sf_inode.c  FUSE's node ids: inodes by NFS fileid, their paths
 *   sf_host.c   the CSI host: started (and retried) beside the mount, the
 *               idle work, NFS fallback helpers, the statistics directory
 *   sf_ops.c    the FUSE low-level operations
 *   seacache_fuse.c  options, mount, the session loop
 */
#ifndef SEACACHE_FUSE_SF_H
#define SEACACHE_FUSE_SF_H

#define FUSE_USE_VERSION 34

#include <errno.h>
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include <uthash.h>

struct nfs_context;
struct sc_host;
struct sc_host_transport_state;

/* ---- options (seacache_fuse.c) ----------------------------------------- */

struct sf_opts {
	char *nfs_server;		/* SOURCE's host */
	char *export;			/* SOURCE's path */
	unsigned int nfsport, mountport;	/* 0: the portmapper's */
	char *server;			/* the CSI service, numeric */
	unsigned int csi_port;
	uint64_t cache_bytes;
	char *policy, *variant;
	char *peer;			/* ADDR:PORT to serve peer reads, or NULL */
	unsigned int csi_timeo;		/* tenths of a second */
	char *uuid_file;		/* the host's uuid is kept there, or NULL */
	char *stats_dir;		/* where the statistics directories go */
	unsigned int nfs_conns;
	bool direct_io;			/* every open, not only O_DIRECT ones */
};

/* ---- sf_nfs.c ----------------------------------------------------------- */

struct sf_nfs {
	pthread_mutex_t lock;
	struct nfs_context *nfs;
};

struct sf_nfs_pool {
	struct sf_nfs *conn;
	unsigned int n;
	atomic_uint next;
};

/* n connections to server:export; 0, or -1 with err saying why. */
int sf_nfs_pool_open(struct sf_nfs_pool *p, const struct sf_opts *o,
		     char *err, size_t errlen);
void sf_nfs_pool_close(struct sf_nfs_pool *p);
/*
 * A connection for one call (or a few), locked, sending uid and gid as
 * the kernel's NFS client would send the caller's.
 */
struct nfs_context *sf_nfs_get(struct sf_nfs_pool *p, uid_t uid, gid_t gid,
			       struct sf_nfs **held);
void sf_nfs_put(struct sf_nfs *held);

/* ---- sf_inode.c --------------------------------------------------------- */

/* One name of an inode: name in parent (which it holds a reference to). */
struct sf_name {
	struct sf_inode *parent;
	char *name;
	struct sf_name *next;
};

/*
 * A file the kernel knows by node id (the inode's address; the root is
 * FUSE_ROOT_ID).  Its NFS path is found from a name it was looked up or
 * made under (the latest first; a file with hard links has several), and
 * the parent's path; CSI knows it by its fileid.
 */
struct sf_inode {
	uint64_t fileid;
	mode_t type;			/* S_IFMT bits */
	uint64_t nlookup;		/* the kernel's references */
	uint32_t refs;			/* names in it (a directory's children) */
	struct sf_name *names;		/* none: the root, or all names gone */
	UT_hash_handle hh;		/* by fileid */
};

struct sf_itab {
	pthread_rwlock_t lock;
	struct sf_inode *by_fileid;
	struct sf_inode *root;
};

int sf_itab_init(struct sf_itab *t, uint64_t root_fileid);
void sf_itab_destroy(struct sf_itab *t);
struct sf_inode *sf_inode_of(struct sf_itab *t, fuse_ino_t ino);
fuse_ino_t sf_ino_of(struct sf_itab *t, const struct sf_inode *i);
/* "/" or "/a/b": the export-relative path of parent's name (NULL: itself). */
int sf_path(struct sf_itab *t, const struct sf_inode *parent,
	    const char *name, char **out);
/* The kernel looked up (parent, name) and found st: one lookup more. */
int sf_inode_found(struct sf_itab *t, struct sf_inode *parent,
		   const char *name, const struct stat *st,
		   struct sf_inode **out);
void sf_inode_forget(struct sf_itab *t, struct sf_inode *i, uint64_t n);
/* (parent, name) is now (newparent, newname), or gone (newparent NULL). */
void sf_inode_moved(struct sf_itab *t, uint64_t fileid,
		    struct sf_inode *parent, const char *name,
		    struct sf_inode *newparent, const char *newname);

/* ---- sf_host.c ---------------------------------------------------------- */

/* The mount's own counters, beside the host library's. */
struct sf_io_stats {
	atomic_uint_fast64_t fallback_reads, fallback_read_bytes;
	atomic_uint_fast64_t fallback_writes, fallback_write_bytes;
	atomic_uint_fast64_t drained_blocks, csi_read_bytes;
};

struct sf_fs {
	struct sf_opts o;
	struct sf_nfs_pool pool;
	struct sf_itab itab;
	struct fuse_session *se;
	const char *mountpoint;
	/* set once by the idle thread when HELLO is answered */
	_Atomic(struct sc_host *) host;
	struct sc_host_transport_state *ts;
	uint8_t uuid[16];
	struct sf_io_stats io;
	pthread_t idle;
	bool idle_started;
	pthread_mutex_t stop_lock;
	pthread_cond_t stop_cond;
	bool stopping;
	char stats_path[256];		/* "" until made */
};

/* Starts the idle thread, which starts the host (HELLO, retried). */
int sf_host_start(struct sf_fs *fs, char *err, size_t errlen);
/* Stops it: every file's unstable writes committed, else put via NFS. */
void sf_host_stop(struct sf_fs *fs);
static inline struct sc_host *sf_host(struct sf_fs *fs)
{
	return atomic_load_explicit(&fs->host, memory_order_acquire);
}
/* An error on which an I/O goes to NFS instead (all but an interrupt). */
static inline bool sf_fallback_err(int err)
{
	return err != -EINTR;
}
/*
 * Before NFS reads, writes or truncates file behind the host: its
 * unstable CSI writes are committed, or with the service gone written
 * through NFS and synced, so they are neither lost nor written again
 * later over newer data.
 */
int sf_settle(struct sf_fs *fs, const struct sf_inode *i);
/*
 * Fallback I/O: NFS pread/pwrite of path as uid:gid, counted; the bytes
 * read (short at the end of the file) or written, or a negative errno.
 * A write is synced before it returns if stable.
 */
ssize_t sf_nfs_pread(struct sf_fs *fs, uid_t uid, gid_t gid,
		     const char *path, uint64_t off, void *buf, size_t len);
ssize_t sf_nfs_pwrite(struct sf_fs *fs, uid_t uid, gid_t gid,
		      const char *path, uint64_t off, const void *buf,
		      size_t len, bool stable);

/* ---- sf_ops.c ----------------------------------------------------------- */

extern const struct fuse_lowlevel_ops sf_ops;

#endif /* SEACACHE_FUSE_SF_H */
