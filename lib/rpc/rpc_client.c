// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The CSI RPC client: pipelined calls over one TCP connection.
 *
 * Any thread may start calls and finish them, in any order.  Replies are
 * matched to calls by xid.  There is no reader thread: a thread waiting
 * in sc_rpc_finish becomes the reader while no other thread is, reads
 * whatever replies arrive and hands each to its call, waking only that
 * call's thread, and on leaving wakes one other waiting thread to read
 * next.  (Waking them all at each reply cost every caller a futile
 * wake-up per reply: on 2 cores shared by 4 VM threads, the lab's scan
 * spent a tenth of the host's time in such hand-offs.)  Sending takes
 * its own lock, so a slow send never stops replies from being read.  A broken connection fails the calls in flight with
 * -ECONNRESET and is reopened by the next sc_rpc_start: calls are not
 * retransmitted, because only the caller knows whether repeating one is
 * harmless.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "record.h"
#include "seacache/rpc_transport.h"

enum call_state { CALL_FREE, CALL_WAITING, CALL_DONE };

struct call_slot {
	enum call_state state;
	uint32_t xid;
	uint32_t proc;
	uint8_t *rec;			/* the reply record, when DONE */
	size_t rec_len;
	int err;
	bool waiter;			/* its thread sleeps on done */
	pthread_cond_t done;		/* it became DONE, or may read next */
};

struct sc_rpc_reply {
	uint8_t *rec;
	max_align_t arena[];		/* the decoded result's arrays */
};

/*
 * One TCP connection.  Counted: the client holds one reference while the
 * connection is current, a sender or the reader one each while they use
 * it outside the lock, so a connection declared broken is closed only
 * once nobody touches its fd.
 */
struct conn {
	int fd;
	unsigned int refs;
	struct sc_rec_reader rr;
};

struct sc_rpc_client {
	struct sc_rpc_client_opts o;
	struct sockaddr_storage addr;
	socklen_t addrlen;
	struct sc_rpc_auth cred;	/* every call's */
	uint8_t cred_body[SC_RPC_AUTH_SYS_MAX_BODY];

	pthread_mutex_t lock;		/* everything below */
	pthread_cond_t cond;		/* a slot freed, or the connection broke */
	pthread_mutex_t send_lock;	/* one record on the wire at a time */
	struct sc_rec_buf send_buf;	/* under send_lock */
	struct conn *conn;		/* NULL while disconnected */
	bool reading;			/* some thread is the reader */
	uint32_t next_xid;
	unsigned int inflight;
	struct call_slot *slots;
};

/*
 * A port below 1024 for fd, as NFS clients take one for an export that
 * asks for it (PrivilegedPort): from the top of the range down, the way
 * the kernel's SUNRPC does.  -EADDRINUSE when every one is taken.
 */
static int bind_reserved(int fd, int family)
{
	struct sockaddr_storage ss;
	unsigned int port;

	for (port = SC_RPC_RESVPORT_MAX; port >= SC_RPC_RESVPORT_MIN; port--) {
		memset(&ss, 0, sizeof(ss));
		ss.ss_family = (sa_family_t)family;
		if (family == AF_INET6)
			((struct sockaddr_in6 *)&ss)->sin6_port =
				htons((uint16_t)port);
		else
			((struct sockaddr_in *)&ss)->sin_port =
				htons((uint16_t)port);
		if (bind(fd, (struct sockaddr *)&ss, sizeof(ss)) == 0)
			return 0;
		if (errno != EADDRINUSE)
			return -errno;
	}
	return -EADDRINUSE;
}

/* Connect with the call timeout; the socket is left non-blocking. */
static int connect_timed(const struct sockaddr_storage *ss, socklen_t len,
			 int timeout_ms, bool reserved_port)
{
	int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
			0);
	struct pollfd p = { .events = POLLOUT };
	int one = 1, soerr = 0, err;
	socklen_t sl = sizeof(soerr);

	if (fd < 0)
		return -errno;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (reserved_port) {
		err = bind_reserved(fd, ss->ss_family);
		if (err) {
			close(fd);
			return err;
		}
	}
	if (connect(fd, (const struct sockaddr *)ss, len) == 0)
		return fd;
	err = -errno;
	if (err == -EINPROGRESS) {
		p.fd = fd;
		err = poll(&p, 1, timeout_ms);
		if (err == 0)
			err = -ETIMEDOUT;
		else if (err < 0)
			err = -errno;
		else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
			err = -errno;
		else
			err = soerr ? -soerr : 0;
	}
	if (!err)
		return fd;
	close(fd);
	return err;
}

/* With c->lock held. */
static void conn_put(struct conn *cn)
{
	if (--cn->refs)
		return;
	close(cn->fd);
	sc_rec_reader_free(&cn->rr);
	free(cn);
}

/* With c->lock held: fail every call in flight and drop the connection. */
static void conn_broken(struct sc_rpc_client *c, struct conn *cn, int err)
{
	unsigned int i;

	if (!cn || c->conn != cn)
		return;
	for (i = 0; i < c->o.max_inflight; i++) {
		if (c->slots[i].state == CALL_WAITING) {
			c->slots[i].state = CALL_DONE;
			c->slots[i].err = err;
			pthread_cond_signal(&c->slots[i].done);
		}
	}
	/* Wakes a reader in poll and fails a sender's next write. */
	shutdown(cn->fd, SHUT_RDWR);
	c->conn = NULL;
	conn_put(cn);
	pthread_cond_broadcast(&c->cond);
}

/* With c->lock held. */
static int conn_ensure(struct sc_rpc_client *c)
{
	struct conn *cn;
	int fd;

	if (c->conn)
		return 0;
	cn = calloc(1, sizeof(*cn));
	if (!cn)
		return -ENOMEM;
	fd = connect_timed(&c->addr, c->addrlen, c->o.timeout_ms,
			   c->o.reserved_port);
	if (fd < 0) {
		free(cn);
		return fd;
	}
	cn->fd = fd;
	cn->refs = 1;
	sc_rec_reader_init(&cn->rr, c->o.max_record);
	c->conn = cn;
	return 0;
}

int sc_rpc_auth_sys_self(struct sc_rpc_auth_sys *out)
{
	gid_t groups[SC_RPC_AUTH_SYS_MAX_GIDS];
	int n = getgroups(SC_RPC_AUTH_SYS_MAX_GIDS, groups), i;

	memset(out, 0, sizeof(*out));
	if (n < 0 && errno == EINVAL) {
		/* more than AUTH_SYS carries: the first 16, as NFS sends */
		gid_t *all;
		int total = getgroups(0, NULL);

		all = total > 0 ? calloc((size_t)total, sizeof(*all)) : NULL;
		if (!all)
			return -ENOMEM;
		n = getgroups(total, all);
		if (n > (int)SC_RPC_AUTH_SYS_MAX_GIDS)
			n = SC_RPC_AUTH_SYS_MAX_GIDS;
		if (n > 0)
			memcpy(groups, all, (size_t)n * sizeof(*groups));
		free(all);
	}
	if (n < 0)
		return -errno;
	out->stamp = (uint32_t)time(NULL);
	out->uid = (uint32_t)geteuid();
	out->gid = (uint32_t)getegid();
	for (i = 0; i < n; i++)
		out->gids[i] = (uint32_t)groups[i];
	out->ngids = (uint32_t)n;
	return 0;
}

int sc_rpc_client_open(const struct sc_rpc_client_opts *o,
		       struct sc_rpc_client **out)
{
	struct sc_rpc_client *c = calloc(1, sizeof(*c));
	struct sc_rpc_auth_sys self;
	int err = -ENOMEM;
	unsigned int i;

	if (!c)
		return err;
	c->o = *o;
	if (!c->o.timeout_ms)
		c->o.timeout_ms = SC_CSI_CALL_TIMEOUT_MS;
	if (!c->o.max_inflight)
		c->o.max_inflight = 64;
	if (!c->o.max_record)
		c->o.max_record = SC_RPC_MAX_RECORD_DEFAULT;
	c->next_xid = (uint32_t)time(NULL) ^ ((uint32_t)getpid() << 16);
	if (o->auth_none) {
		c->cred.flavor = SC_RPC_AUTH_NONE;
	} else if (o->cred) {
		sc_rpc_auth_sys_encode(o->cred, c->cred_body, &c->cred);
	} else {
		err = sc_rpc_auth_sys_self(&self);
		if (err)
			goto fail;
		sc_rpc_auth_sys_encode(&self, c->cred_body, &c->cred);
	}
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->send_lock, NULL);
	pthread_cond_init(&c->cond, NULL);
	c->slots = calloc(c->o.max_inflight, sizeof(*c->slots));
	if (!c->slots)
		goto fail;
	for (i = 0; i < c->o.max_inflight; i++)
		pthread_cond_init(&c->slots[i].done, NULL);
	err = sc_sockaddr_parse(o->host, o->port, &c->addr, &c->addrlen);
	if (err)
		goto fail;
	err = conn_ensure(c);
	if (err)
		goto fail;
	*out = c;
	return 0;
fail:
	sc_rpc_client_close(c);
	return err;
}

void sc_rpc_client_close(struct sc_rpc_client *c)
{
	unsigned int i;

	if (!c)
		return;
	if (c->conn)
		conn_put(c->conn);
	for (i = 0; c->slots && i < c->o.max_inflight; i++) {
		free(c->slots[i].rec);
		pthread_cond_destroy(&c->slots[i].done);
	}
	free(c->slots);
	sc_rec_buf_trim(&c->send_buf, 0);
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->send_lock);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

static struct call_slot *slot_of(struct sc_rpc_client *c, uint32_t xid)
{
	unsigned int i;

	for (i = 0; i < c->o.max_inflight; i++)
		if (c->slots[i].state != CALL_FREE && c->slots[i].xid == xid)
			return &c->slots[i];
	return NULL;
}

static void slot_release(struct sc_rpc_client *c, struct call_slot *s)
{
	free(s->rec);
	s->rec = NULL;
	s->rec_len = 0;
	s->err = 0;
	s->xid = 0;
	s->proc = 0;
	s->state = CALL_FREE;
	c->inflight--;
	pthread_cond_signal(&c->cond);
}

/*
 * With c->lock held and no reader: one thread still waiting for its reply
 * wakes to read next.  A thread leaving sc_rpc_finish while nobody reads
 * calls it (the reader reads on while its own call waits), so a waiter
 * is never left without one.
 */
static void wake_next_reader(struct sc_rpc_client *c)
{
	unsigned int i;

	for (i = 0; i < c->o.max_inflight; i++) {
		if (c->slots[i].state == CALL_WAITING && c->slots[i].waiter) {
			pthread_cond_signal(&c->slots[i].done);
			return;
		}
	}
}

/* Wait on cv with c->lock until the absolute monotonic deadline. */
static int cond_wait_until(struct sc_rpc_client *c, pthread_cond_t *cv,
			   int64_t deadline_ms)
{
	struct timespec ts;
	int64_t left = deadline_ms - sc_now_ms();

	if (left <= 0)
		return -ETIMEDOUT;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += left / 1000;
	ts.tv_nsec += (left % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_cond_timedwait(cv, &c->lock, &ts);
	return 0;
}

int sc_rpc_start(struct sc_rpc_client *c, uint32_t proc, const void *args,
		 uint32_t *xid)
{
	const struct csi_proc_info *pi = csi_proc_find(c->o.prog, proc);
	int64_t deadline = sc_now_ms() + c->o.timeout_ms;
	struct sc_rpc_call_hdr h = { .rpcvers = SC_RPC_VERSION, .prog = c->o.prog,
				  .vers = CSI_VERS, .proc = proc,
				  .cred = c->cred };
	struct call_slot *s = NULL;
	struct conn *cn;
	unsigned int i;
	int err;

	if (!pi)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	while (c->inflight == c->o.max_inflight) {
		err = cond_wait_until(c, &c->cond, deadline);
		if (err)
			goto unlock;
	}
	err = conn_ensure(c);
	if (err)
		goto unlock;
	for (i = 0; i < c->o.max_inflight && !s; i++)
		if (c->slots[i].state == CALL_FREE)
			s = &c->slots[i];
	h.xid = c->next_xid++;
	s->state = CALL_WAITING;
	s->xid = h.xid;
	s->proc = proc;
	c->inflight++;
	cn = c->conn;
	cn->refs++;
	pthread_mutex_unlock(&c->lock);

	pthread_mutex_lock(&c->send_lock);
	err = sc_rec_encode(true, &h, pi->args, args, c->o.max_record,
			    &c->send_buf);
	if (!err)
		err = sc_write_all(cn->fd, c->send_buf.p, c->send_buf.len,
				   deadline);
	sc_rec_buf_trim(&c->send_buf, SC_REC_BUF_KEEP);
	pthread_mutex_unlock(&c->send_lock);
	pthread_mutex_lock(&c->lock);
	if (err) {
		/* A half-sent record leaves the stream unusable. */
		if (err != -EINVAL && err != -E2BIG)
			conn_broken(c, cn, -ECONNRESET);
		slot_release(c, s);
	} else {
		*xid = h.xid;
	}
	conn_put(cn);
unlock:
	pthread_mutex_unlock(&c->lock);
	return err;
}

/* Hand one reply record to its call; unknown xids (abandoned calls) drop. */
static void dispatch_reply(struct sc_rpc_client *c, struct conn *cn,
			   uint8_t *rec, size_t len)
{
	struct call_slot *s;
	uint32_t xid;

	if (len < 4) {
		free(rec);
		conn_broken(c, cn, -EBADMSG);
		return;
	}
	xid = sc_get_be32(rec);
	s = slot_of(c, xid);
	if (!s || s->state != CALL_WAITING) {
		free(rec);
		return;
	}
	s->rec = rec;
	s->rec_len = len;
	s->state = CALL_DONE;
	if (s->waiter)
		pthread_cond_signal(&s->done);
}

/* With c->lock held, as the reader: read until the deadline or a reply. */
static void read_replies(struct sc_rpc_client *c, int64_t deadline_ms)
{
	struct conn *cn = c->conn;
	struct pollfd p = { .fd = cn->fd, .events = POLLIN };
	int64_t left = deadline_ms - sc_now_ms();
	uint8_t *rec;
	size_t len;
	int n;

	c->reading = true;
	cn->refs++;
	pthread_mutex_unlock(&c->lock);
	n = sc_rec_pending(&cn->rr) ? 1 :
	    poll(&p, 1, (int)(left > 0 ? left : 0));
	if (n < 0)
		n = errno == EINTR ? 0 : -errno;
	else if (n > 0)
		n = sc_rec_read(&cn->rr, cn->fd);
	pthread_mutex_lock(&c->lock);
	while (n == 1 && c->conn == cn) {
		rec = sc_rec_take(&cn->rr, &len);
		dispatch_reply(c, cn, rec, len);
		pthread_mutex_unlock(&c->lock);
		n = sc_rec_read(&cn->rr, cn->fd);
		pthread_mutex_lock(&c->lock);
	}
	if (n < 0)
		conn_broken(c, cn, n == -E2BIG ? -EBADMSG : -ECONNRESET);
	c->reading = false;
	conn_put(cn);
}

/* Decode a reply record into res; on success *reply owns the memory. */
static int decode_reply(struct sc_rpc_client *c, struct call_slot *s,
			void *res, struct sc_rpc_reply **reply)
{
	const struct csi_proc_info *pi = csi_proc_find(c->o.prog, s->proc);
	struct sc_rpc_reply *r;
	size_t body, alen;
	int err;

	err = sc_rpc_reply_open(s->rec, s->rec_len, &body);
	if (err)
		return err;
	alen = csi_decode_arena_size(pi->res, s->rec_len - body);
	r = malloc(sizeof(*r) + alen);
	if (!r)
		return -ENOMEM;
	if (csi_decode(pi->res, s->rec + body, s->rec_len - body, res,
		       r->arena, alen)) {
		free(r);
		return -EBADMSG;
	}
	r->rec = s->rec;
	s->rec = NULL;
	*reply = r;
	return 0;
}

int sc_rpc_finish(struct sc_rpc_client *c, uint32_t xid, void *res,
		  struct sc_rpc_reply **reply)
{
	int64_t deadline = sc_now_ms() + c->o.timeout_ms;
	struct call_slot *s;
	int err = 0;

	*reply = NULL;
	pthread_mutex_lock(&c->lock);
	s = slot_of(c, xid);
	if (!s) {
		pthread_mutex_unlock(&c->lock);
		return -EINVAL;
	}
	while (s->state == CALL_WAITING && !err) {
		if (sc_now_ms() >= deadline) {
			err = -ETIMEDOUT;
		} else if (!c->reading && c->conn) {
			read_replies(c, deadline);
		} else {
			s->waiter = true;
			err = cond_wait_until(c, &s->done, deadline);
			s->waiter = false;
		}
	}
	if (s->state == CALL_DONE)
		err = s->err ? s->err : decode_reply(c, s, res, reply);
	slot_release(c, s);
	if (!c->reading)
		wake_next_reader(c);
	pthread_mutex_unlock(&c->lock);
	return err;
}

int sc_rpc_call(struct sc_rpc_client *c, uint32_t proc, const void *args,
		void *res, struct sc_rpc_reply **reply)
{
	uint32_t xid;
	int err = sc_rpc_start(c, proc, args, &xid);

	return err ? err : sc_rpc_finish(c, xid, res, reply);
}

void sc_rpc_reply_free(struct sc_rpc_reply *r)
{
	if (!r)
		return;
	free(r->rec);
	free(r);
}
