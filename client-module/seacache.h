/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * seacache.ko: the SeaCache host in the kernel.  A file system stacked on
 * a mounted NFS export: the namespace passes through to the lower NFS
 * file system, regular-file data goes through the shared core's host
 * library (lib/host/), which serves every VM of the host from one content
 * cache and speaks the CSI protocol to the server and to peer hosts.
 *
 * One header, one symbol prefix (scfs_), a file per concern:
 *   super.c      mount options, super block, statfs, remount, module init
 *   inode.c      inode operations (pass-through) and inode life
 *   dir.c        directory file operations (pass-through)
 *   file.c       regular files: read/write through the host, mmap
 *   util.c       lower paths, attribute copies, credentials
 *   transport.c  the CSI transport: ONC RPC over kernel TCP sockets
 *   peer.c       the peer server: PEER_READ answered from the cache
 *   sysfs.c      /sys/fs/seacache/<mount>/ statistics
 *   shrinker.c   the content cache's memory given back under pressure
 */
#ifndef SCFS_SEACACHE_H
#define SCFS_SEACACHE_H

#include <linux/fs.h>
#include <linux/kobject.h>
#include <linux/nfs_fs.h>
#include <linux/path.h>
#include <linux/shrinker.h>
#include <linux/socket.h>
#include <linux/srcu.h>
#include <linux/types.h>
#include <linux/workqueue.h>

#include "seacache/csi_codec.h"
#include "seacache/defaults.h"
#include "seacache/host.h"

#define SCFS_MAGIC 0x53434653		/* "SCFS", statfs f_type */
#define SCFS_NAME "seacache"

/* ---- super.c: mount options and the per-mount state ---------------------- */
struct scfs_options {
	char *lower;			/* lower= the NFS mount's directory */
	char *server;			/* server= numeric address, as given */
	struct sockaddr_storage server_addr;	/* with csi_port= */
	u16 csi_port;
	u32 csi_timeo;			/* csi_timeo= deciseconds per call */
	u64 cache_bytes;		/* cache= content cache size */
	char *policy;			/* policy= eviction policy spec */
	enum sc_variant variant;	/* variant= */
	char *peer;			/* peer= ADDR:PORT, as given; or NULL */
	struct sockaddr_storage peer_addr;
};

/* The module's own I/O counters (sysfs). */
struct scfs_io_stats {
	atomic64_t reads, read_bytes;	/* served by the lower NFS file */
	atomic64_t writes, write_bytes;
	atomic64_t mapped_io;		/* I/O of mmapped files (lower) */
	/* unstable CSI writes written through the lower file (scfs_settle) */
	atomic64_t drained_blocks;
	/*
	 * Bytes CSI reads returned, and bytes copied into the readers'
	 * memory for them: equal but for blocks asked again within a read
	 * and splice's bounce buffer.
	 */
	atomic64_t csi_read_bytes, read_copied_bytes;
};

struct scfs_sb_info {
	struct super_block *sb;
	struct path lower;		/* the lower root */
	struct scfs_options opts;
	struct scfs_transport *tr;
	u8 uuid[16];			/* the host's registration (super.c) */
	int uuid_slot;			/* its slot + 1; 0: none taken */
	/*
	 * The host, under host_srcu; NULL while the CSI service has not
	 * answered HELLO (connect_work retries) and while a remount changes
	 * the cache: then every I/O goes to the lower NFS file.
	 */
	struct sc_host __rcu *host;
	/* the mount's own: a host's stop waits for this mount's uses only */
	struct srcu_struct host_srcu;
	bool host_srcu_ready;
	struct mutex host_lock;		/* starts and stops of the host */
	struct delayed_work connect_work;	/* HELLO until it works */
	unsigned long connect_delay;		/* jiffies, doubling */
	struct delayed_work idle_work;		/* leases, eviction notices */
	struct shrinker shrinker;	/* the host's cache, under pressure */
	/* the cache's blocks: the mounter's memcg, the shrinker's list_lru */
	struct sc_block_mem block_mem;
	bool block_mem_ready;
	struct scfs_io_stats fb;
	struct kobject kobj;		/* /sys/fs/seacache/<major:minor> */
	struct completion kobj_released;
	bool kobj_added;
};

static inline struct scfs_sb_info *scfs_sb(const struct super_block *sb)
{
	return sb->s_fs_info;
}

/*
 * Every use of the host is inside scfs_host_enter/exit: the host if the
 * CSI service is reachable, else NULL (go to the lower file).  A remount
 * or unmount waits for the uses in progress before it frees the host.
 * A read touches user memory inside (it copies from the cache straight
 * into the reader's buffer), so a page fault may wait for mmap_lock, which
 * scfs_mmap holds when it enters too.  That is safe because SRCU readers
 * never wait for each other, and the one waiter for them, scfs_host_stop's
 * synchronize_srcu, runs under host_lock alone, never under mmap_lock;
 * the read holds no lock of the host's while it copies (pins only).
 */
static inline struct sc_host *scfs_host_enter(const struct super_block *sb,
					      int *idx)
{
	struct scfs_sb_info *sbi = scfs_sb(sb);

	*idx = srcu_read_lock(&sbi->host_srcu);
	return srcu_dereference(sbi->host, &sbi->host_srcu);
}

static inline void scfs_host_exit(const struct super_block *sb, int idx)
{
	srcu_read_unlock(&scfs_sb(sb)->host_srcu, idx);
}

/* ---- inode.c ------------------------------------------------------------- */
struct scfs_inode_info {
	struct inode *lower;
	/* SCFS_* bits below */
	unsigned long flags;
	/*
	 * Held shared by a write around its CSI call, exclusively by the
	 * first mmap, which so waits for the writes past their test of
	 * MAPPED: every write after it sees the bit and goes to the lower
	 * file, whose pages the mapping shares.  Not the inode lock: mmap
	 * runs under mmap_lock, which a write takes under the inode lock
	 * (a fault on its buffer); a write holds this one only while it
	 * touches no user memory.
	 */
	struct rw_semaphore csi_writes;
	struct inode vfs_inode;
};

#define SCFS_MAPPED 0
/* SCFS_LOWER_STALE: CSI wrote the file since NFS last saw its attributes */
#define SCFS_LOWER_STALE 1

static inline struct scfs_inode_info *scfs_i(struct inode *inode)
{
	return container_of(inode, struct scfs_inode_info, vfs_inode);
}

static inline struct inode *scfs_lower_inode(struct inode *inode)
{
	return scfs_i(inode)->lower;
}

extern const struct inode_operations scfs_dir_iops;
extern const struct inode_operations scfs_file_iops;
extern const struct inode_operations scfs_symlink_iops;
extern const struct xattr_handler *scfs_xattr_handlers[];

struct inode *scfs_get_inode(struct super_block *sb, struct inode *lower);
int scfs_inode_cache_init(void);
void scfs_inode_cache_destroy(void);
struct inode *scfs_alloc_inode(struct super_block *sb);
void scfs_free_inode(struct inode *inode);
void scfs_evict_inode(struct inode *inode);

/* ---- dir.c / file.c ------------------------------------------------------ */
extern const struct file_operations scfs_dir_fops;
extern const struct file_operations scfs_file_fops;
extern const struct address_space_operations scfs_aops;
extern const struct dentry_operations scfs_dops;

/* ---- util.c -------------------------------------------------------------- */
/* The lower dentry of an upper one (d_fsdata holds a reference). */
static inline struct dentry *scfs_lower_dentry(const struct dentry *dentry)
{
	return dentry->d_fsdata;
}

void scfs_lower_path(const struct dentry *dentry, struct path *out);
struct file *scfs_open_lower(const struct dentry *dentry, int flags);
void scfs_copy_attr(struct inode *inode);
/*
 * The CSI file id of a regular file: the lower NFS inode's fileid (i_ino
 * is a hash of it where ino_t is narrower).
 */
static inline u64 scfs_fileid(struct inode *inode)
{
	return NFS_FILEID(scfs_lower_inode(inode));
}

/*
 * The inode lock of a writer that may then wait for the CSI service (up to
 * csi_timeo= per call): killable, as NFS waits for its server, so that a
 * stuck server leaves killable tasks behind, not D-state ones.
 */
static inline int scfs_inode_lock_killable(struct inode *inode)
{
	return down_write_killable(&inode->i_rwsem);
}

void scfs_lower_changed(struct inode *inode);
int scfs_settle(struct dentry *dentry);
/*
 * scfs_settle, through host, of every regular file of sb with an alias:
 * before the host goes (remount, unmount), what it acknowledged goes to
 * the server through CSI or, failing that, the lower file.  0 or the
 * first error (those files keep their unstable blocks).
 */
int scfs_settle_all(struct super_block *sb, struct sc_host *host);
int scfs_lower_getattr(struct inode *inode, const struct path *lower,
		       struct kstat *st, u32 mask, unsigned int flags);
bool scfs_fallback_err(int err);

/* ---- sysfs.c ------------------------------------------------------------- */
int scfs_sysfs_init(void);
void scfs_sysfs_exit(void);
int scfs_sysfs_add(struct super_block *sb);
void scfs_sysfs_del(struct super_block *sb);

/* ---- shrinker.c ---------------------------------------------------------- */
/* Once the super block's host may start; unregister before it stops. */
int scfs_shrinker_register(struct super_block *sb);
void scfs_shrinker_unregister(struct super_block *sb);
void scfs_block_mem_destroy(struct super_block *sb);

/* ---- transport.c: CSI over kernel TCP sockets -------------------------- */
struct scfs_transport;

/*
 * A transport to the CSI service at server (IPv4 or IPv6, port set), its
 * sockets in net (held until destroy: the mount's network namespace):
 * connects lazily, reconnects after a loss, matches pipelined replies to
 * calls by XID, times calls out after timeout_ms.  peer_listen (NULL or
 * port 0: none) is where this host serves PEER_READ; block_size is the
 * size of a peer-fetched block.
 */
int scfs_transport_create(struct net *net,
			  const struct sockaddr_storage *server,
			  const struct sockaddr_storage *peer_listen,
			  u32 block_size, u32 timeout_ms,
			  struct scfs_transport **out);
/* Fills tr (call, release, peer_fetch, identity, ctx) for sc_host_create. */
void scfs_transport_bind(struct scfs_transport *t,
			 struct sc_host_transport *tr);
/* The address to give in HELLO: the peer server's, or CSI_AF_NONE. */
void scfs_transport_peer_addr(struct scfs_transport *t,
			      struct csi_peer_addr *out);
/*
 * Tells the peer server which host answers peer reads (NULL: none, every
 * read answers NOENT); returns once no read of the previous host runs.
 */
void scfs_transport_set_host(struct scfs_transport *t, struct sc_host *host);
/* Counters for sysfs: calls, reconnects, timeouts, peer blocks served. */
struct scfs_transport_stats {
	u64 calls, reconnects, timeouts, errors;
	u64 peer_served_blocks, peer_served_bytes, peer_refused;
	u64 peer_conns_refused;		/* over a connection limit */
};

void scfs_transport_get_stats(struct scfs_transport *t,
			      struct scfs_transport_stats *st);
/*
 * Stops the peer server, fails the CSI calls waiting and waits for them
 * to return, closes connections.  No peer fetch may run (destroy the host
 * first).
 */
void scfs_transport_destroy(struct scfs_transport *t);

/*
 * ONC RPC records (RFC 5531 §11) on kernel TCP sockets, shared by the
 * client above and the peer server.  Every allocation is the caller's
 * business to scope (memalloc_nofs_save on the I/O path).
 */
struct scfs_rec_buf {		/* an outgoing record, kept for the next */
	u8 *p;
	size_t cap;
	size_t len;		/* of the record, mark included */
};

/* An RPC header (call or reply) plus a CSI message as one record in b. */
int scfs_rec_encode(bool is_call, void *hdr, enum csi_msg body_msg,
		    const void *body, size_t max_record, struct scfs_rec_buf *b);
void scfs_rec_buf_free(struct scfs_rec_buf *b);
/* All of buf, or a negative errno (-ETIMEDOUT after the socket's sndtimeo). */
int scfs_sock_send(struct socket *sock, const void *buf, size_t len);
/*
 * One whole record (its fragments joined) into a kvmalloc'd *rec, or
 * -ECONNRESET at the end of the stream, -E2BIG over max_record bytes,
 * -ETIMEDOUT when its first mark took longer than idle or the rest
 * longer than whole after it (jiffies; 0: no limit).
 */
int scfs_rec_recv(struct socket *sock, size_t max_record,
		  unsigned long idle, unsigned long whole, u8 **rec,
		  size_t *len);

/* ---- peer.c: the peer server ------------------------------------------- */
struct scfs_peer_server;

/*
 * Listens on addr (port set) in net and serves PEER_READ of block_size
 * blocks.
 */
int scfs_peer_server_start(struct net *net,
			   const struct sockaddr_storage *addr,
			   u32 block_size, struct scfs_peer_server **out);
/* After a HELLO: the identity whose tokens it accepts from now on. */
int scfs_peer_server_set_identity(struct scfs_peer_server *s, u64 host,
				  u64 epoch, const u8 secret[CSI_SECRET_SIZE]);
/* The host whose cache answers; returns once no read of the old one runs. */
void scfs_peer_server_set_host(struct scfs_peer_server *s,
			       struct sc_host *host);
/* Adds its counters (peer_served_*, peer_refused) to st. */
void scfs_peer_server_get_stats(struct scfs_peer_server *s,
				struct scfs_transport_stats *st);
/* Closes the listener and every connection; waits for the reads running. */
void scfs_peer_server_stop(struct scfs_peer_server *s);

#endif /* SCFS_SEACACHE_H */
