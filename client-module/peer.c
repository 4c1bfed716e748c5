// SPDX-License-Identifier: GPL-2.0-only
/*
 * The peer server: PEER_READ (PROTOCOL.md §7.8) answered from this host's
 * content cache, for the hosts the server delegates reads to.
 *
 * A kthread accepts connections on a kernel TCP socket; each connection
 * is one work item on the server's workqueue that reads calls, answers
 * them through the core's sc_peer_serve_read (token check, then the
 * cache) and sends the replies.  Reads are served one at a time under
 * the server's lock, which also guards the identity (its MAC context is
 * one thread's at a time) and the host: that bounds the load peers put
 * on this host (§9.6) and lets set_host wait out the reads running.
 */
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/kthread.h>
#include <linux/net.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/tcp.h>
#include <linux/timekeeping.h>
#include <linux/workqueue.h>
#include <net/net_namespace.h>
#include <net/sock.h>

#include "seacache.h"
#include "seacache/peer_serve.h"
#include "seacache/rpc_msg.h"

#define PEER_BACKLOG 16

struct scfs_peer_server {
	struct socket *lsock;
	struct task_struct *acceptor;
	struct workqueue_struct *wq;
	u32 block_size;

	struct mutex lock;		/* one read at a time; all below */
	struct sc_peer_identity id;	/* mac NULL: no HELLO yet */
	struct sc_host *host;
	u64 served_blocks, served_bytes, refused;

	struct mutex conns_lock;	/* conns, nconns, stopping, refused */
	struct list_head conns;
	unsigned int nconns;
	u64 refused_conns;		/* over a connection limit */
	bool stopping;
};

struct peer_conn {
	struct list_head node;
	struct scfs_peer_server *s;
	struct socket *sock;
	struct sockaddr_storage from;	/* its address, port zeroed */
	struct work_struct work;
	struct scfs_rec_buf out;
	void *block;			/* the block being sent */
	struct csi_peer_read_args args;
	struct csi_peer_read_res res;
};

/* sc_peer_get_fn, under s->lock: the cache of the host set, if any. */
static int peer_get(void *ctx, const struct sc_hash *h, void *buf, u32 *len)
{
	struct scfs_peer_server *s = ctx;

	if (!s->host)
		return -ENOENT;
	/* buf holds the block size the server was started with */
	if (sc_host_block_size(s->host) > s->block_size)
		return -EIO;
	return sc_host_peer_get(s->host, h, buf, len);
}

/* Answer a PEER_READ into pc->res; false when it cannot be answered. */
static bool peer_read(struct scfs_peer_server *s, struct peer_conn *pc)
{
	int err;

	mutex_lock(&s->lock);
	err = sc_peer_serve_read(s->id.mac ? &s->id : NULL,
				 ktime_get_real_seconds(), &pc->args, peer_get,
				 s, pc->block, s->block_size, &pc->res);
	if (!err && pc->res.status == CSI_OK) {
		s->served_blocks++;
		s->served_bytes += pc->res.data.len;
	} else if (!err && pc->res.status == CSI_ERR_BAD_TOKEN) {
		s->refused++;
	}
	mutex_unlock(&s->lock);
	return !err;
}

/*
 * One call record into a reply record in pc->out, checked as the CSI
 * service's RPC server checks (lib/rpc/rpc_server.c); -EBADMSG when the
 * record is not even a call (the connection is then dropped).
 */
static int peer_serve_call(struct peer_conn *pc, const u8 *rec, size_t len)
{
	struct sc_rpc_reply_hdr rh = { .reply_stat = SC_RPC_MSG_ACCEPTED,
				       .accept_stat = SC_RPC_SUCCESS };
	const struct csi_proc_info *pi;
	struct sc_rpc_call_hdr ch = {};
	struct sc_rpc_auth_sys sys;	/* checked, not used: tokens decide */
	enum csi_msg res_msg = CSI_MSG_VOID;
	struct sc_xdr x;

	sc_xdr_init_decode(&x, rec, len, NULL, 0);
	sc_rpc_xdr_call_hdr(&x, &ch);
	if (x.err)
		return -EBADMSG;
	rh.xid = ch.xid;
	pi = csi_proc_find(ch.prog, ch.proc);
	if (ch.rpcvers != SC_RPC_VERSION) {
		rh.reply_stat = SC_RPC_MSG_DENIED;
		rh.reject_stat = SC_RPC_MISMATCH;
		rh.low = SC_RPC_VERSION;
		rh.high = SC_RPC_VERSION;
	} else if (ch.cred.flavor > SC_RPC_AUTH_SYS ||
		   (ch.cred.flavor == SC_RPC_AUTH_SYS &&
		    sc_rpc_auth_sys_decode(&ch.cred, &sys))) {
		rh.reply_stat = SC_RPC_MSG_DENIED;
		rh.reject_stat = SC_RPC_AUTH_ERROR;
		rh.auth_stat = ch.cred.flavor > SC_RPC_AUTH_SYS ?
			       SC_RPC_AUTH_TOOWEAK : SC_RPC_AUTH_BADCRED;
	} else if (ch.prog != CSI_PEER_PROG) {
		rh.accept_stat = SC_RPC_PROG_UNAVAIL;
	} else if (ch.vers != CSI_VERS) {
		rh.accept_stat = SC_RPC_PROG_MISMATCH;
		rh.low = CSI_VERS;
		rh.high = CSI_VERS;
	} else if (!pi) {
		rh.accept_stat = SC_RPC_PROC_UNAVAIL;
	} else if (pi->proc == CSI_PEER_PROC_READ) {
		/* PEER_READ's arguments have no arrays: no arena */
		if (csi_decode(pi->args, rec + x.pos, len - x.pos, &pc->args,
			       NULL, 0))
			rh.accept_stat = SC_RPC_GARBAGE_ARGS;
		else if (!peer_read(pc->s, pc))
			rh.accept_stat = SC_RPC_SYSTEM_ERR;
		else
			res_msg = pi->res;
	} else if (len != x.pos) {	/* NULL takes no arguments */
		rh.accept_stat = SC_RPC_GARBAGE_ARGS;
	}
	return scfs_rec_encode(false, &rh, res_msg, &pc->res, SIZE_MAX,
			       &pc->out);
}

static void peer_conn_work(struct work_struct *work)
{
	struct peer_conn *pc = container_of(work, struct peer_conn, work);
	struct scfs_peer_server *s = pc->s;
	/* the cache lookups may allocate; this host's I/O may wait on us */
	unsigned int nofs = memalloc_nofs_save();
	size_t len;
	u8 *rec;
	int err;

	pc->block = kvmalloc(s->block_size, GFP_KERNEL);
	err = pc->block ? 0 : -ENOMEM;
	while (!err) {
		err = scfs_rec_recv(pc->sock, SC_PEER_MAX_REQUEST,
				    msecs_to_jiffies(SC_PEER_IDLE_TIMEOUT_MS),
				    msecs_to_jiffies(SC_PEER_RECORD_TIMEOUT_MS),
				    &rec, &len);
		if (err)
			break;
		err = peer_serve_call(pc, rec, len);
		kvfree(rec);
		if (!err)
			err = scfs_sock_send(pc->sock, pc->out.p, pc->out.len);
	}
	memalloc_nofs_restore(nofs);
	mutex_lock(&s->conns_lock);
	list_del(&pc->node);
	s->nconns--;
	mutex_unlock(&s->conns_lock);
	sock_release(pc->sock);
	scfs_rec_buf_free(&pc->out);
	kvfree(pc->block);
	kfree(pc);
}

/* The address of sock's other end, its port zeroed, for comparing. */
static int peer_from(struct socket *sock, struct sockaddr_storage *ss)
{
	int len;

	memset(ss, 0, sizeof(*ss));
	len = kernel_getpeername(sock, (struct sockaddr *)ss);
	if (len < 0)
		return len;
	if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_port = 0;
	else
		((struct sockaddr_in *)ss)->sin_port = 0;
	return 0;
}

/* Connections from the address of from, under conns_lock. */
static unsigned int peer_conns_from(struct scfs_peer_server *s,
				    const struct sockaddr_storage *from)
{
	struct peer_conn *pc;
	unsigned int n = 0;

	list_for_each_entry(pc, &s->conns, node)
		n += !memcmp(&pc->from, from, sizeof(*from));
	return n;
}

/*
 * A connection's bounds (§9.6): the receive deadlines are the record
 * reader's; sends give up after the record timeout; TCP keep-alives find
 * a requester that went away without closing.
 */
static void peer_conn_bound(struct socket *sock)
{
	struct sock *sk = sock->sk;

	sk->sk_allocation = GFP_NOFS;
	sk->sk_sndtimeo = msecs_to_jiffies(SC_PEER_RECORD_TIMEOUT_MS);
	tcp_sock_set_nodelay(sk);
	sock_set_keepalive(sk);
	tcp_sock_set_keepidle(sk, SC_PEER_KEEPALIVE_S);
	tcp_sock_set_keepintvl(sk, SC_PEER_KEEPALIVE_S);
	tcp_sock_set_keepcnt(sk, SC_KEEPALIVE_PROBES);
}

static int peer_accept(void *arg)
{
	struct scfs_peer_server *s = arg;
	struct socket *sock;
	struct peer_conn *pc;
	int err;

	while (!kthread_should_stop()) {
		err = kernel_accept(s->lsock, &sock, 0);
		if (err) {
			/* stopping, or a transient failure: do not spin */
			if (!kthread_should_stop())
				schedule_timeout_interruptible(HZ / 10);
			continue;
		}
		pc = kzalloc(sizeof(*pc), GFP_KERNEL);
		if (pc && peer_from(sock, &pc->from)) {
			kfree(pc);
			pc = NULL;
		}
		mutex_lock(&s->conns_lock);
		if (!pc || s->stopping || s->nconns >= SC_PEER_MAX_CONNS ||
		    peer_conns_from(s, &pc->from) >=
		    SC_PEER_MAX_CONNS_PER_ADDR) {
			s->refused_conns += !!pc;
			mutex_unlock(&s->conns_lock);
			kfree(pc);
			sock_release(sock);
			continue;
		}
		pc->s = s;
		pc->sock = sock;
		peer_conn_bound(sock);
		INIT_WORK(&pc->work, peer_conn_work);
		list_add(&pc->node, &s->conns);
		s->nconns++;
		queue_work(s->wq, &pc->work);
		mutex_unlock(&s->conns_lock);
	}
	return 0;
}

int scfs_peer_server_start(struct net *net,
			   const struct sockaddr_storage *addr,
			   u32 block_size, struct scfs_peer_server **out)
{
	struct scfs_peer_server *s = kzalloc(sizeof(*s), GFP_KERNEL);
	int len = addr->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
						sizeof(struct sockaddr_in);
	int err;

	if (!s)
		return -ENOMEM;
	s->block_size = block_size;
	mutex_init(&s->lock);
	mutex_init(&s->conns_lock);
	INIT_LIST_HEAD(&s->conns);
	s->wq = alloc_workqueue("scfs_peer", WQ_UNBOUND, SC_PEER_MAX_CONNS);
	err = s->wq ? 0 : -ENOMEM;
	if (!err)
		err = sock_create_kern(net, addr->ss_family, SOCK_STREAM,
				       IPPROTO_TCP, &s->lsock);
	if (err)
		goto fail;
	sock_set_reuseaddr(s->lsock->sk);
	err = kernel_bind(s->lsock, (struct sockaddr *)addr, len);
	if (!err)
		err = kernel_listen(s->lsock, PEER_BACKLOG);
	if (err)
		goto fail;
	s->acceptor = kthread_run(peer_accept, s, "scfs_peer_accept");
	if (IS_ERR(s->acceptor)) {
		err = PTR_ERR(s->acceptor);
		goto fail;
	}
	*out = s;
	return 0;
fail:
	pr_err("peer server: cannot listen on %pISpc (%d)\n", addr,
	       err);
	if (s->lsock)
		sock_release(s->lsock);
	if (s->wq)
		destroy_workqueue(s->wq);
	kfree(s);
	return err;
}

int scfs_peer_server_set_identity(struct scfs_peer_server *s, u64 host,
				  u64 epoch, const u8 secret[CSI_SECRET_SIZE])
{
	struct sc_mac *m = sc_mac_new(secret, CSI_SECRET_SIZE);

	if (!m)
		return -ENOMEM;
	mutex_lock(&s->lock);
	swap(s->id.mac, m);
	s->id.host = host;
	s->id.epoch = epoch;
	mutex_unlock(&s->lock);
	sc_mac_free(m);
	return 0;
}

void scfs_peer_server_set_host(struct scfs_peer_server *s,
			       struct sc_host *host)
{
	mutex_lock(&s->lock);
	s->host = host;
	mutex_unlock(&s->lock);
}

void scfs_peer_server_get_stats(struct scfs_peer_server *s,
				struct scfs_transport_stats *st)
{
	mutex_lock(&s->lock);
	st->peer_served_blocks = s->served_blocks;
	st->peer_served_bytes = s->served_bytes;
	st->peer_refused = s->refused;
	mutex_unlock(&s->lock);
	mutex_lock(&s->conns_lock);
	st->peer_conns_refused = s->refused_conns;
	mutex_unlock(&s->conns_lock);
}

void scfs_peer_server_stop(struct scfs_peer_server *s)
{
	struct peer_conn *pc;

	mutex_lock(&s->conns_lock);
	s->stopping = true;
	mutex_unlock(&s->conns_lock);
	/* wakes the acceptor, which sees it should stop */
	kernel_sock_shutdown(s->lsock, SHUT_RDWR);
	kthread_stop(s->acceptor);
	mutex_lock(&s->conns_lock);
	list_for_each_entry(pc, &s->conns, node)
		kernel_sock_shutdown(pc->sock, SHUT_RDWR);
	mutex_unlock(&s->conns_lock);
	/* every connection's work ends on its shut-down socket */
	destroy_workqueue(s->wq);
	sock_release(s->lsock);
	sc_mac_free(s->id.mac);
	mutex_destroy(&s->conns_lock);
	mutex_destroy(&s->lock);
	kfree(s);
}
