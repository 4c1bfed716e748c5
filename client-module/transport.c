// SPDX-License-Identifier: GPL-2.0-only
/*
 * The CSI transport: ONC RPC over kernel TCP sockets, the kernel's
 * counterpart of lib/rpc/ (same codec, same semantics).
 *
 * One struct scfs_rpc is one server address and program (CSI_PROG to the
 * CSI service, CSI_PEER_PROG to a peer host).  It keeps one connection;
 * any number of threads send calls on it at once (a mutex keeps records
 * whole on the wire) and sleep, killably and with a deadline, on their
 * own completion.  A receiver kthread per connection reads the replies
 * and completes the call whose xid matches; a reply nobody waits for any
 * more (killed) is dropped.  A broken connection fails the calls in
 * flight with -ECONNRESET and the next call connects again: calls are
 * never resent here, the host library decides (PROTOCOL.md §6.1).  A
 * call unanswered by its deadline breaks the connection too, failing the
 * others on it with -ETIMEDOUT: a server that stopped answering one call
 * answers none, and a new connection is the way to find out that it is
 * back.  TCP_USER_TIMEOUT at the same deadline ends a connection whose
 * bytes the server's stack stopped taking, which keep-alives never probe
 * while data is unacknowledged.
 *
 * Memory: the callers are VM threads in the middle of file I/O and the
 * receiver serves them, so every allocation here runs in NOFS scope and
 * the sockets allocate with GFP_NOFS; reclaim must not re-enter the file
 * system this transport serves.  Reply records are allocated at their
 * exact size (a full READ reply is some 16 MiB: kvmalloc).
 */
#include <linux/completion.h>
#include <linux/cred.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/kthread.h>
#include <linux/net.h>
#include <linux/random.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/signal.h>
#include <linux/slab.h>
#include <linux/tcp.h>
#include <linux/wait.h>
#include <net/net_namespace.h>
#include <net/sock.h>
#include <asm/unaligned.h>

#include "seacache.h"
#include "seacache/peer_serve.h"
#include "seacache/rpc_msg.h"

/* A kept send buffer costs memory while idle: keep only ordinary ones. */
#define SCFS_REC_BUF_KEEP (1u << 20)
/* Hashers kept for peer-fetch verification. */
#define SCFS_PEER_HASHERS 8
/* Dead-peer detection on an idle connection (seconds). */
#define SCFS_KEEPIDLE 10
#define SCFS_KEEPINTVL 5
#define SCFS_KEEPCNT 3

/* ---- records ------------------------------------------------------------ */

static int rec_encode_body(bool is_call, void *hdr, enum csi_msg body_msg,
			   const void *body, u8 *out, size_t cap, size_t *n)
{
	struct sc_xdr x;

	sc_xdr_init_encode(&x, out, cap);
	if (is_call)
		sc_rpc_xdr_call_hdr(&x, hdr);
	else
		sc_rpc_xdr_reply_hdr(&x, hdr);
	/* encoding only reads the body */
	csi_xdr_msg(&x, body_msg, (void *)body);
	*n = x.pos;
	return x.err;
}

int scfs_rec_encode(bool is_call, void *hdr, enum csi_msg body_msg,
		    const void *body, size_t max_record, struct scfs_rec_buf *b)
{
	size_t n;
	int err = -EMSGSIZE;

	b->len = 0;
	if (b->p)
		err = rec_encode_body(is_call, hdr, body_msg, body, b->p + 4,
				      b->cap - 4, &n);
	if (err == -EMSGSIZE) {
		/* measure, make room, encode again */
		err = rec_encode_body(is_call, hdr, body_msg, body, NULL,
				      SIZE_MAX, &n);
		if (err)
			return err;
		if (n > max_record || n > SC_RPC_RM_LEN_MASK)
			return -E2BIG;
		scfs_rec_buf_free(b);
		b->p = kvmalloc(4 + n, GFP_KERNEL);
		if (!b->p)
			return -ENOMEM;
		b->cap = 4 + n;
		err = rec_encode_body(is_call, hdr, body_msg, body, b->p + 4,
				      b->cap - 4, &n);
	}
	if (err)
		return err;
	if (n > max_record)
		return -E2BIG;
	put_unaligned_be32((u32)n | SC_RPC_RM_LAST, b->p);
	b->len = 4 + n;
	return 0;
}

void scfs_rec_buf_free(struct scfs_rec_buf *b)
{
	kvfree(b->p);
	b->p = NULL;
	b->cap = 0;
	b->len = 0;
}

int scfs_sock_send(struct socket *sock, const void *buf, size_t len)
{
	struct msghdr msg = { .msg_flags = MSG_NOSIGNAL };
	struct kvec v;
	int n;

	while (len) {
		v.iov_base = (void *)buf;
		v.iov_len = len;
		n = kernel_sendmsg(sock, &msg, &v, 1, len);
		if (n == -EAGAIN)
			return -ETIMEDOUT;
		if (n < 0)
			return n;
		if (!n)
			return -ECONNRESET;
		buf += n;
		len -= n;
	}
	return 0;
}

/*
 * len bytes into buf, by deadline (jiffies; 0: none): the socket's
 * rcvtimeo is what is left of it at each receive, so a sender trickling
 * bytes cannot stretch one wait after another.
 */
static int sock_recv_all(struct socket *sock, void *buf, size_t len,
			 unsigned long deadline)
{
	struct msghdr msg = {};
	struct kvec v;
	long left;
	int n;

	while (len) {
		if (deadline) {
			left = (long)(deadline - jiffies);
			if (left <= 0)
				return -ETIMEDOUT;
			WRITE_ONCE(sock->sk->sk_rcvtimeo, left);
		}
		v.iov_base = buf;
		v.iov_len = len;
		n = kernel_recvmsg(sock, &msg, &v, 1, len, MSG_WAITALL);
		if (n == -EAGAIN && deadline)
			return -ETIMEDOUT;
		if (n < 0)
			return n;
		if (!n)
			return -ECONNRESET;
		buf += n;
		len -= n;
	}
	return 0;
}

int scfs_rec_recv(struct socket *sock, size_t max_record,
		  unsigned long idle, unsigned long whole, u8 **rec,
		  size_t *len)
{
	unsigned long deadline = idle ? jiffies + idle : 0;
	bool started = false;
	size_t have = 0, first;
	u8 *p = NULL, *q;
	__be32 mark;
	u32 v, frag;
	int err;

	do {
		/* with whole, the record's first byte starts its deadline */
		first = whole && !started ? 1 : sizeof(mark);
		err = sock_recv_all(sock, &mark, first, deadline);
		if (!err && first < sizeof(mark)) {
			deadline = jiffies + whole;
			err = sock_recv_all(sock, (u8 *)&mark + first,
					    sizeof(mark) - first, deadline);
		}
		started = true;
		if (err)
			goto fail;
		v = be32_to_cpu(mark);
		frag = v & SC_RPC_RM_LEN_MASK;
		err = -E2BIG;
		if (frag > max_record - have)
			goto fail;
		err = -ENOMEM;
		/* one fragment is the rule: its exact size at once */
		q = p ? kvrealloc(p, have, have + frag, GFP_KERNEL) :
			kvmalloc(frag ? frag : 1, GFP_KERNEL);
		if (!q)
			goto fail;
		p = q;
		err = sock_recv_all(sock, p + have, frag, deadline);
		if (err)
			goto fail;
		have += frag;
	} while (!(v & SC_RPC_RM_LAST));
	*rec = p;
	*len = have;
	return 0;
fail:
	kvfree(p);
	return err;
}

/* ---- the client --------------------------------------------------------- */

/* One call waiting for its reply; lives on the caller's stack. */
struct scfs_call {
	struct list_head node;	/* on conn->calls while waiting */
	u32 xid;
	struct completion done;
	u8 *rec;		/* the reply record, when done without err */
	size_t len;
	int err;
};

/*
 * One TCP connection.  Counted: the client holds a reference while it is
 * current, each call one while it sends on it; the receiver holds none
 * (it is stopped by the last put, never puts itself).
 */
struct scfs_conn {
	struct scfs_rpc *rpc;
	struct socket *sock;
	struct task_struct *rx;
	refcount_t refs;
	struct mutex send_lock;		/* one record on the wire at a time */
	struct scfs_rec_buf sbuf;	/* under send_lock */
	/* under rpc->lock */
	bool dead;
	struct list_head calls;
};

struct scfs_rpc {
	struct net *net;		/* the transport's reference */
	struct sockaddr_storage addr;
	u32 prog;
	size_t max_record;
	unsigned long timeout;		/* per call, jiffies */
	atomic_t xid;
	struct mutex connect_lock;	/* one thread connects at a time */
	spinlock_t lock;		/* conn and every conn's calls */
	struct scfs_conn *conn;		/* NULL: not connected yet */
	bool connected_once;
	bool closing;			/* under lock: destroy has begun */
	unsigned int active;		/* under lock: calls running */
	wait_queue_head_t idle;		/* active reached 0 while closing */
	atomic64_t calls, reconnects, timeouts, errors;
};

static void conn_fail(struct scfs_conn *cn, int err)
{
	struct scfs_rpc *rpc = cn->rpc;
	struct scfs_call *c, *tmp;

	spin_lock(&rpc->lock);
	cn->dead = true;
	list_for_each_entry_safe(c, tmp, &cn->calls, node) {
		list_del_init(&c->node);
		c->err = err;
		complete(&c->done);
	}
	spin_unlock(&rpc->lock);
	/* wakes the receiver; a half-sent record leaves nothing usable */
	kernel_sock_shutdown(cn->sock, SHUT_RDWR);
}

static void conn_put(struct scfs_conn *cn)
{
	if (!cn || !refcount_dec_and_test(&cn->refs))
		return;
	kernel_sock_shutdown(cn->sock, SHUT_RDWR);
	kthread_stop(cn->rx);
	put_task_struct(cn->rx);
	sock_release(cn->sock);
	scfs_rec_buf_free(&cn->sbuf);
	kfree(cn);
}

/* Hand a reply to its call; the caller frees what it returns (dropped). */
static u8 *conn_dispatch(struct scfs_conn *cn, u8 *rec, size_t len)
{
	u32 xid = get_unaligned_be32(rec);
	struct scfs_call *c;

	spin_lock(&cn->rpc->lock);
	list_for_each_entry(c, &cn->calls, node) {
		if (c->xid != xid)
			continue;
		list_del_init(&c->node);
		c->rec = rec;
		c->len = len;
		c->err = 0;
		complete(&c->done);
		rec = NULL;
		break;
	}
	spin_unlock(&cn->rpc->lock);
	return rec;
}

static int conn_receive(void *arg)
{
	struct scfs_conn *cn = arg;
	unsigned int nofs = memalloc_nofs_save();
	size_t len;
	u8 *rec;
	int err;

	for (;;) {
		err = scfs_rec_recv(cn->sock, cn->rpc->max_record, 0, 0, &rec,
				    &len);
		if (err)
			break;
		if (len < 4) {
			kvfree(rec);
			err = -EBADMSG;
			break;
		}
		kvfree(conn_dispatch(cn, rec, len));
	}
	memalloc_nofs_restore(nofs);
	conn_fail(cn, err == -E2BIG || err == -EBADMSG ? -EBADMSG :
							 -ECONNRESET);
	/* the last conn_put stops us */
	for (;;) {
		set_current_state(TASK_INTERRUPTIBLE);
		if (kthread_should_stop())
			break;
		schedule();
	}
	__set_current_state(TASK_RUNNING);
	return 0;
}

/*
 * A port below 1024, as SUNRPC binds one for NFS (xs_bind with resvport),
 * so that an export with PrivilegedPort admits the host's CSI calls too.
 */
static int scfs_rpc_bind_resv(struct socket *sock, int family)
{
	struct sockaddr_storage ss;
	unsigned int port;
	int err = -EADDRINUSE;

	for (port = SC_RPC_RESVPORT_MAX; port >= SC_RPC_RESVPORT_MIN; port--) {
		memset(&ss, 0, sizeof(ss));
		ss.ss_family = family;
		if (family == AF_INET6)
			((struct sockaddr_in6 *)&ss)->sin6_port = htons(port);
		else
			((struct sockaddr_in *)&ss)->sin_port = htons(port);
		err = kernel_bind(sock, (struct sockaddr *)&ss,
				  family == AF_INET6 ?
				  sizeof(struct sockaddr_in6) :
				  sizeof(struct sockaddr_in));
		if (err != -EADDRINUSE)
			break;
	}
	return err;
}

static int conn_open(struct scfs_rpc *rpc, unsigned long deadline,
		     struct scfs_conn **out)
{
	long left = (long)(deadline - jiffies);
	struct scfs_conn *cn;
	struct sock *sk;
	int err;

	if (left <= 0)
		return -ETIMEDOUT;
	cn = kzalloc(sizeof(*cn), GFP_KERNEL);
	if (!cn)
		return -ENOMEM;
	cn->rpc = rpc;
	refcount_set(&cn->refs, 1);
	mutex_init(&cn->send_lock);
	INIT_LIST_HEAD(&cn->calls);
	err = sock_create_kern(rpc->net, rpc->addr.ss_family, SOCK_STREAM,
			       IPPROTO_TCP, &cn->sock);
	if (err)
		goto free;
	sk = cn->sock->sk;
	sk->sk_allocation = GFP_NOFS;
	tcp_sock_set_nodelay(sk);
	sock_set_keepalive(sk);
	tcp_sock_set_keepidle(sk, SCFS_KEEPIDLE);
	tcp_sock_set_keepintvl(sk, SCFS_KEEPINTVL);
	tcp_sock_set_keepcnt(sk, SCFS_KEEPCNT);
	tcp_sock_set_user_timeout(sk, jiffies_to_msecs(rpc->timeout));
	if (rpc->prog == CSI_PROG) {
		err = scfs_rpc_bind_resv(cn->sock, rpc->addr.ss_family);
		if (err)
			goto release;
	}
	/* a blocking connect waits up to sndtimeo; sends use the call's */
	sk->sk_sndtimeo = left;
	err = kernel_connect(cn->sock, (struct sockaddr *)&rpc->addr,
			     rpc->addr.ss_family == AF_INET6 ?
			     sizeof(struct sockaddr_in6) :
			     sizeof(struct sockaddr_in), 0);
	if (err == -EINPROGRESS || err == -EAGAIN)
		err = -ETIMEDOUT;
	else if (err == -ERESTARTSYS)
		err = -EINTR;
	if (err)
		goto release;
	sk->sk_sndtimeo = rpc->timeout;
	cn->rx = kthread_create(conn_receive, cn, "scfs_rx/%x", rpc->prog);
	if (IS_ERR(cn->rx)) {
		err = PTR_ERR(cn->rx);
		goto release;
	}
	get_task_struct(cn->rx);
	wake_up_process(cn->rx);
	*out = cn;
	return 0;
release:
	sock_release(cn->sock);
free:
	kfree(cn);
	return err;
}

/* The current connection with a reference, connected if need be. */
static int scfs_rpc_get_conn(struct scfs_rpc *rpc, unsigned long deadline,
			struct scfs_conn **out)
{
	struct scfs_conn *cn, *old = NULL;
	int err = 0;

	spin_lock(&rpc->lock);
	cn = rpc->conn;
	if (cn && !cn->dead)
		refcount_inc(&cn->refs);
	else
		cn = NULL;
	spin_unlock(&rpc->lock);
	if (cn)
		goto out;

	if (mutex_lock_killable(&rpc->connect_lock))
		return -EINTR;
	spin_lock(&rpc->lock);
	cn = rpc->conn;
	if (cn && !cn->dead) {
		refcount_inc(&cn->refs);
		spin_unlock(&rpc->lock);
		goto unlock;
	}
	spin_unlock(&rpc->lock);
	err = conn_open(rpc, deadline, &cn);
	if (!err) {
		refcount_inc(&cn->refs);
		spin_lock(&rpc->lock);
		old = rpc->conn;
		rpc->conn = cn;
		spin_unlock(&rpc->lock);
		if (rpc->connected_once)
			atomic64_inc(&rpc->reconnects);
		rpc->connected_once = true;
	}
unlock:
	mutex_unlock(&rpc->connect_lock);
	conn_put(old);
out:
	*out = cn;
	return err;
}

static struct scfs_rpc *scfs_rpc_create(struct net *net,
					const struct sockaddr_storage *addr,
					u32 prog, size_t max_record,
					unsigned int timeout_ms)
{
	struct scfs_rpc *rpc = kzalloc(sizeof(*rpc), GFP_KERNEL);

	if (!rpc)
		return NULL;
	rpc->net = net;
	rpc->addr = *addr;
	rpc->prog = prog;
	rpc->max_record = max_record;
	rpc->timeout = msecs_to_jiffies(timeout_ms);
	atomic_set(&rpc->xid, get_random_u32());
	mutex_init(&rpc->connect_lock);
	spin_lock_init(&rpc->lock);
	init_waitqueue_head(&rpc->idle);
	return rpc;
}

/* Under the lock: a caller holds it until its last access. */
static bool scfs_rpc_idle(struct scfs_rpc *rpc)
{
	bool idle;

	spin_lock(&rpc->lock);
	idle = !rpc->active;
	spin_unlock(&rpc->lock);
	return idle;
}

/* Fails the calls waiting, waits for every call to return, frees. */
static void scfs_rpc_destroy(struct scfs_rpc *rpc)
{
	struct scfs_conn *cn;

	if (!rpc)
		return;
	spin_lock(&rpc->lock);
	rpc->closing = true;
	cn = rpc->conn;
	spin_unlock(&rpc->lock);
	if (cn)
		conn_fail(cn, -ESHUTDOWN);
	/* a call still connecting returns by its deadline */
	wait_event(rpc->idle, scfs_rpc_idle(rpc));
	conn_put(rpc->conn);
	mutex_destroy(&rpc->connect_lock);
	kfree(rpc);
}

/* Encode and send the call. */
static int scfs_rpc_send(struct scfs_conn *cn, struct sc_rpc_call_hdr *h,
		    const struct csi_proc_info *pi, const void *args)
{
	int err = mutex_lock_killable(&cn->send_lock);

	if (err)
		return err;
	err = scfs_rec_encode(true, h, pi->args, args, cn->rpc->max_record,
			      &cn->sbuf);
	if (!err) {
		err = scfs_sock_send(cn->sock, cn->sbuf.p, cn->sbuf.len);
		if (err)
			conn_fail(cn, -ECONNRESET);
	}
	if (cn->sbuf.cap > SCFS_REC_BUF_KEEP)
		scfs_rec_buf_free(&cn->sbuf);
	mutex_unlock(&cn->send_lock);
	return err;
}

/* The memory a decoded result points into: the record and the arena. */
struct scfs_reply {
	u8 *rec;
	u8 arena[];
};

static int scfs_rpc_decode(const struct csi_proc_info *pi, struct scfs_call *c,
		      void *res, struct scfs_reply **out)
{
	struct scfs_reply *r;
	size_t body, alen;
	int err;

	err = sc_rpc_reply_open(c->rec, c->len, &body);
	if (err)
		return err;
	alen = csi_decode_arena_size(pi->res, c->len - body);
	r = kvmalloc(sizeof(*r) + alen, GFP_KERNEL);
	if (!r)
		return -ENOMEM;
	if (csi_decode(pi->res, c->rec + body, c->len - body, res, r->arena,
		       alen)) {
		kvfree(r);
		return -EBADMSG;
	}
	r->rec = c->rec;
	c->rec = NULL;
	*out = r;
	return 0;
}

static void scfs_rpc_reply_free(struct scfs_reply *r)
{
	if (!r)
		return;
	kvfree(r->rec);
	kvfree(r);
}

/*
 * The AUTH_SYS credential of a call: the VFS caller's fsuid, fsgid and
 * first 16 groups, as NFS's auth_unix sends them; the mount's own work
 * (its idle probe, unmount) calls as the kernel, root.
 */
static void scfs_rpc_caller(struct sc_rpc_auth_sys *out)
{
	const struct cred *cred = current_cred();
	const struct group_info *gi = cred->group_info;
	unsigned int i;

	memset(out, 0, sizeof(*out));
	out->uid = from_kuid_munged(&init_user_ns, cred->fsuid);
	out->gid = from_kgid_munged(&init_user_ns, cred->fsgid);
	out->ngids = min_t(unsigned int, gi->ngroups, SC_RPC_AUTH_SYS_MAX_GIDS);
	for (i = 0; i < out->ngids; i++)
		out->gids[i] = from_kgid_munged(&init_user_ns, gi->gid[i]);
}

/*
 * One call: 0 with res decoded (its memory in *reply), or a negative
 * errno: -ETIMEDOUT, -EINTR (fatal signal), -ECONNRESET (the call may or
 * may not have run), -EBADMSG, or the RPC-level refusals of sc_rpc_reply_open.
 */
static int scfs_rpc_call(struct scfs_rpc *rpc, u32 proc, const void *args,
		    void *res, struct scfs_reply **reply)
{
	const struct csi_proc_info *pi = csi_proc_find(rpc->prog, proc);
	unsigned long deadline = jiffies + rpc->timeout;
	struct sc_rpc_call_hdr h = { .rpcvers = SC_RPC_VERSION,
				     .prog = rpc->prog, .vers = CSI_VERS,
				     .proc = proc };
	struct scfs_call c = { .err = -ECONNRESET };
	u8 cred_body[SC_RPC_AUTH_SYS_MAX_BODY];
	struct sc_rpc_auth_sys caller;
	sigset_t blocked, oldmask;
	unsigned int nofs;
	struct scfs_conn *cn;
	long left;
	int err;

	*reply = NULL;
	if (!pi)
		return -EINVAL;
	scfs_rpc_caller(&caller);
	sc_rpc_auth_sys_encode(&caller, cred_body, &h.cred);
	spin_lock(&rpc->lock);
	err = rpc->closing ? -ESHUTDOWN : 0;
	if (!err)
		rpc->active++;
	spin_unlock(&rpc->lock);
	if (err)
		return err;
	atomic64_inc(&rpc->calls);
	INIT_LIST_HEAD(&c.node);
	init_completion(&c.done);
	nofs = memalloc_nofs_save();
	/*
	 * Signals but SIGKILL are held off while connecting and sending:
	 * one would cut a record in half and break the connection for every
	 * caller, or fail a call the VM did not ask to interrupt.
	 */
	siginitsetinv(&blocked, sigmask(SIGKILL));
	sigprocmask(SIG_BLOCK, &blocked, &oldmask);
	err = scfs_rpc_get_conn(rpc, deadline, &cn);
	if (err) {
		sigprocmask(SIG_SETMASK, &oldmask, NULL);
		goto out;
	}
	h.xid = (u32)atomic_inc_return(&rpc->xid);
	c.xid = h.xid;
	spin_lock(&rpc->lock);
	if (cn->dead)
		err = -ECONNRESET;
	else if (rpc->closing)	/* connected after destroy failed the rest */
		err = -ESHUTDOWN;
	else
		list_add_tail(&c.node, &cn->calls);
	spin_unlock(&rpc->lock);
	if (!err)
		err = scfs_rpc_send(cn, &h, pi, args);
	sigprocmask(SIG_SETMASK, &oldmask, NULL);
	if (err) {
		/* unsent, or failed with the connection: not waited for */
		spin_lock(&rpc->lock);
		list_del_init(&c.node);
		spin_unlock(&rpc->lock);
		goto put;
	}
	left = (long)(deadline - jiffies);
	left = left > 0 ?
	       wait_for_completion_killable_timeout(&c.done, left) : 0;
	if (left <= 0) {
		bool waiting;

		spin_lock(&rpc->lock);
		waiting = !list_empty(&c.node);
		if (waiting) {		/* no reply yet: abandon */
			list_del_init(&c.node);
			c.err = left ? -EINTR : -ETIMEDOUT;
		}
		spin_unlock(&rpc->lock);
		if (waiting && !left)
			conn_fail(cn, -ETIMEDOUT);
	}
	err = c.err;
	if (!err)
		err = scfs_rpc_decode(pi, &c, res, reply);
	kvfree(c.rec);
put:
	conn_put(cn);
out:
	memalloc_nofs_restore(nofs);
	if (err == -ETIMEDOUT)
		atomic64_inc(&rpc->timeouts);
	else if (err)
		atomic64_inc(&rpc->errors);
	spin_lock(&rpc->lock);
	/* the last access: scfs_rpc_destroy may free it once active is 0 */
	if (!--rpc->active && rpc->closing)
		wake_up(&rpc->idle);
	spin_unlock(&rpc->lock);
	return err;
}

/* ---- peer fetches ------------------------------------------------------- */

struct scfs_peer_slot {
	struct csi_peer_addr addr;
	struct scfs_rpc *rpc;		/* NULL: free */
	unsigned int users;
};

struct scfs_peer_pool {
	struct net *net;		/* the transport's reference */
	struct mutex lock;
	u32 block_size;
	struct scfs_peer_slot slot[SC_PEER_POOL_SIZE];
	struct sc_hasher *hashers[SCFS_PEER_HASHERS];
	unsigned int nhashers;
};

/* A peer's address as a socket address (PROTOCOL.md §3.3.3). */
static int peer_sockaddr(const struct csi_peer_addr *a,
			 struct sockaddr_storage *ss)
{
	static const u8 zero[CSI_ADDR_SIZE - 4];
	struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (a->port < 1 || a->port > 65535)
		return -EINVAL;
	if (a->family == CSI_AF_INET &&
	    !memcmp(a->addr + 4, zero, sizeof(zero))) {
		in4->sin_family = AF_INET;
		in4->sin_port = htons(a->port);
		memcpy(&in4->sin_addr, a->addr, 4);
		return 0;
	}
	if (a->family == CSI_AF_INET6) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(a->port);
		memcpy(&in6->sin6_addr, a->addr, 16);
		return 0;
	}
	return -EINVAL;
}

static bool same_peer(const struct csi_peer_addr *a,
		      const struct csi_peer_addr *b)
{
	return a->family == b->family && a->port == b->port &&
	       !memcmp(a->addr, b->addr, CSI_ADDR_SIZE);
}

static struct scfs_rpc *peer_rpc_create(struct scfs_peer_pool *p,
					const struct csi_peer_addr *where)
{
	struct sockaddr_storage ss;

	if (peer_sockaddr(where, &ss))
		return NULL;
	return scfs_rpc_create(p->net, &ss, CSI_PEER_PROG,
			  p->block_size + SC_PEER_REPLY_SLACK,
			  SC_PEER_FETCH_TIMEOUT_MS);
}

/*
 * The kept client of where, created if a slot is free or idle, with a
 * user counted; NULL when every slot is busy with other peers.
 */
static struct scfs_peer_slot *pool_get(struct scfs_peer_pool *p,
				       const struct csi_peer_addr *where)
{
	struct scfs_peer_slot *k = NULL, *free_slot = NULL, *idle = NULL;
	struct scfs_rpc *gone = NULL;
	unsigned int i;

	mutex_lock(&p->lock);
	for (i = 0; i < SC_PEER_POOL_SIZE && !k; i++) {
		struct scfs_peer_slot *s = &p->slot[i];

		if (s->rpc && same_peer(&s->addr, where))
			k = s;
		else if (!s->rpc && !free_slot)
			free_slot = s;
		else if (s->rpc && !s->users && !idle)
			idle = s;
	}
	if (!k && !free_slot && idle) {
		/* another peer's, unused: it may go */
		gone = idle->rpc;
		idle->rpc = NULL;
		free_slot = idle;
	}
	if (!k && free_slot) {
		free_slot->rpc = peer_rpc_create(p, where);
		if (free_slot->rpc) {
			free_slot->addr = *where;
			k = free_slot;
		}
	}
	if (k)
		k->users++;
	mutex_unlock(&p->lock);
	scfs_rpc_destroy(gone);
	return k;
}

static struct sc_hasher *pool_hasher(struct scfs_peer_pool *p)
{
	struct sc_hasher *hs = NULL;

	mutex_lock(&p->lock);
	if (p->nhashers)
		hs = p->hashers[--p->nhashers];
	mutex_unlock(&p->lock);
	return hs ? hs : sc_hasher_new();
}

static void pool_put(struct scfs_peer_pool *p, struct scfs_peer_slot *k,
		     struct sc_hasher *hs)
{
	mutex_lock(&p->lock);
	if (k)
		k->users--;
	if (hs && p->nhashers < SCFS_PEER_HASHERS) {
		p->hashers[p->nhashers++] = hs;
		hs = NULL;
	}
	mutex_unlock(&p->lock);
	sc_hasher_free(hs);
}

static void pool_free(struct scfs_peer_pool *p)
{
	unsigned int i;

	for (i = 0; i < SC_PEER_POOL_SIZE; i++)
		scfs_rpc_destroy(p->slot[i].rpc);
	while (p->nhashers)
		sc_hasher_free(p->hashers[--p->nhashers]);
	mutex_destroy(&p->lock);
}

static int pool_fetch(struct scfs_peer_pool *p,
		      const struct csi_peer_addr *where, u64 requester,
		      u64 epoch, const struct sc_hash *h,
		      const struct csi_token *tok, void *out)
{
	struct csi_peer_read_args a = { .requester = requester,
					.epoch = epoch, .hash = *h,
					.token = *tok };
	struct scfs_peer_slot *k = pool_get(p, where);
	struct scfs_rpc *rpc = k ? k->rpc : peer_rpc_create(p, where);
	struct csi_peer_read_res res;
	struct scfs_reply *rep = NULL;
	struct sc_hasher *hs = NULL;
	int err = -ENOMEM;

	if (!rpc)
		goto out;
	hs = pool_hasher(p);
	if (!hs)
		goto out;
	err = scfs_rpc_call(rpc, CSI_PEER_PROC_READ, &a, &res, &rep);
	if (!err)
		err = sc_peer_read_take(hs, p->block_size, h, &res, out);
	scfs_rpc_reply_free(rep);
out:
	if (!k)
		scfs_rpc_destroy(rpc);
	pool_put(p, k, hs);
	return err;
}

/* ---- the transport ------------------------------------------------------ */

struct scfs_transport {
	struct net *net;		/* where its sockets are, held */
	struct scfs_rpc *csi;
	struct scfs_peer_pool pool;
	struct scfs_peer_server *peer;	/* NULL: no peer reads served */
	struct csi_peer_addr peer_addr;
};

static int tr_call(void *ctx, u32 proc, const void *args, void *res,
		   void **reply)
{
	struct scfs_transport *t = ctx;

	return scfs_rpc_call(t->csi, proc, args, res, (struct scfs_reply **)reply);
}

static void tr_release(void *ctx, void *reply)
{
	scfs_rpc_reply_free(reply);
}

static int tr_peer_fetch(void *ctx, const struct csi_peer_addr *where,
			 u64 requester, u64 epoch, const struct sc_hash *h,
			 const struct csi_token *tok, void *out)
{
	struct scfs_transport *t = ctx;
	unsigned int nofs = memalloc_nofs_save();
	int err = pool_fetch(&t->pool, where, requester, epoch, h, tok, out);

	memalloc_nofs_restore(nofs);
	return err;
}

static void tr_identity(void *ctx, u64 host, u64 epoch,
			const u8 secret[CSI_SECRET_SIZE])
{
	struct scfs_transport *t = ctx;
	unsigned int nofs;

	if (!t->peer)
		return;
	nofs = memalloc_nofs_save();
	if (scfs_peer_server_set_identity(t->peer, host, epoch, secret))
		pr_err_ratelimited("peer server: no memory for the new identity: tokens fail until the next HELLO\n");
	memalloc_nofs_restore(nofs);
}

static int peer_addr_of(const struct sockaddr_storage *ss,
			struct csi_peer_addr *a)
{
	const struct sockaddr_in *in4 = (const struct sockaddr_in *)ss;
	const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;

	memset(a, 0, sizeof(*a));
	if (ss->ss_family == AF_INET && in4->sin_port) {
		a->family = CSI_AF_INET;
		a->port = ntohs(in4->sin_port);
		memcpy(a->addr, &in4->sin_addr, 4);
	} else if (ss->ss_family == AF_INET6 && in6->sin6_port) {
		a->family = CSI_AF_INET6;
		a->port = ntohs(in6->sin6_port);
		memcpy(a->addr, &in6->sin6_addr, 16);
	} else {
		a->family = CSI_AF_NONE;
	}
	return a->family == CSI_AF_NONE ? -EINVAL : 0;
}

int scfs_transport_create(struct net *net,
			  const struct sockaddr_storage *server,
			  const struct sockaddr_storage *peer_listen,
			  u32 block_size, u32 timeout_ms,
			  struct scfs_transport **out)
{
	struct csi_peer_addr srv;
	struct scfs_transport *t;
	int err;

	if (!sc_block_size_valid(block_size) || !timeout_ms ||
	    peer_addr_of(server, &srv))
		return -EINVAL;
	t = kzalloc(sizeof(*t), GFP_KERNEL);
	if (!t)
		return -ENOMEM;
	t->net = get_net(net);
	t->pool.net = net;
	mutex_init(&t->pool.lock);
	t->pool.block_size = block_size;
	t->csi = scfs_rpc_create(net, server, CSI_PROG, SC_RPC_MAX_RECORD_DEFAULT,
			    timeout_ms);
	err = t->csi ? 0 : -ENOMEM;
	if (!err && peer_listen && !peer_addr_of(peer_listen, &t->peer_addr))
		err = scfs_peer_server_start(net, peer_listen, block_size,
					     &t->peer);
	if (err) {
		t->peer_addr.family = CSI_AF_NONE;
		scfs_transport_destroy(t);
		return err;
	}
	*out = t;
	return 0;
}

void scfs_transport_bind(struct scfs_transport *t,
			 struct sc_host_transport *tr)
{
	memset(tr, 0, sizeof(*tr));
	tr->call = tr_call;
	tr->release = tr_release;
	tr->peer_fetch = tr_peer_fetch;
	tr->identity = tr_identity;
	tr->ctx = t;
}

void scfs_transport_peer_addr(struct scfs_transport *t,
			      struct csi_peer_addr *out)
{
	*out = t->peer_addr;
}

void scfs_transport_set_host(struct scfs_transport *t, struct sc_host *host)
{
	if (t->peer)
		scfs_peer_server_set_host(t->peer, host);
}

void scfs_transport_get_stats(struct scfs_transport *t,
			      struct scfs_transport_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->calls = atomic64_read(&t->csi->calls);
	st->reconnects = atomic64_read(&t->csi->reconnects);
	st->timeouts = atomic64_read(&t->csi->timeouts);
	st->errors = atomic64_read(&t->csi->errors);
	if (t->peer)
		scfs_peer_server_get_stats(t->peer, st);
}

void scfs_transport_destroy(struct scfs_transport *t)
{
	if (!t)
		return;
	if (t->peer)
		scfs_peer_server_stop(t->peer);
	pool_free(&t->pool);
	scfs_rpc_destroy(t->csi);
	put_net(t->net);
	kfree(t);
}
