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
 */
#ifndef SCFS_SEACACHE_H
#define SCFS_SEACACHE_H

#include <linux/fs.h>
#include <linux/socket.h>
#include <linux/types.h>

#include "seacache/csi_codec.h"
#include "seacache/host.h"

/* ---- transport.c: CSI over kernel TCP sockets -------------------------- */
struct scfs_transport;

/*
 * A transport to the CSI service at server (IPv4 or IPv6, port set):
 * connects lazily, reconnects after a loss, matches pipelined replies to
 * calls by XID, times calls out after timeout_ms.  peer_listen (NULL or
 * port 0: none) is where this host serves PEER_READ; block_size is the
 * size of a peer-fetched block.
 */
int scfs_transport_create(const struct sockaddr_storage *server,
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
};

void scfs_transport_get_stats(struct scfs_transport *t,
			      struct scfs_transport_stats *st);
/* Stops the peer server, closes connections, fails calls in flight. */
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
 * -ECONNRESET at the end of the stream, -E2BIG over max_record bytes.
 */
int scfs_rec_recv(struct socket *sock, size_t max_record, u8 **rec,
		  size_t *len);

/* ---- peer.c: the peer server ------------------------------------------- */
struct scfs_peer_server;

/* Listens on addr (port set) and serves PEER_READ of block_size blocks. */
int scfs_peer_server_start(const struct sockaddr_storage *addr,
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
