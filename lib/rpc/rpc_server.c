// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The CSI RPC server: one loop thread with poll() and non-blocking
 * sockets, and optionally a pool of worker threads that run the handlers.
 *
 * The loop accepts connections, reads request records and sends replies.
 * A call (decode, dispatch, encode the reply) is served on the loop itself
 * when there are no workers, or else by a worker, so that a slow handler
 * never stalls the loop.  A connection has a limited number of calls open:
 * read, and not yet answered to the last byte.  At the limit the loop
 * stops reading from it until one finishes, so a host that pipelines too
 * much or does not read its replies stalls itself and nobody else.
 * Without workers the limit is one: the next request is read only when
 * the previous reply has left.  Workers take calls connection by
 * connection in turn, so one connection's pipeline cannot starve the
 * others; the calls waiting for a worker are bounded as well, and while
 * that bound is reached no connection is read.
 *
 * A stream that breaks record marking or exceeds max_record is dropped; a
 * request whose arguments do not decode gets GARBAGE_ARGS and the
 * connection goes on.  A connection that closes discards its calls: those
 * waiting for a worker and unsent replies at once, those in a worker when
 * it hands them back; the calls lent out hold references on it.
 * One eventfd wakes the loop for a clean stop, another when workers hand
 * calls back or make room in the queue.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "record.h"
#include "seacache/rpc_transport.h"

/* iovecs per sendmsg: a 64-block READ reply is 129 */
#define SRV_SEND_IOV 256

/*
 * One call, from its request record to its reply's last byte.  The reply
 * refers to the block data it carries (out's segments) where the handler
 * put it, in the call's request memory, sent from there: the call keeps
 * that memory, and its request, until the reply has left.
 */
struct srv_call {
	struct srv_call *next;		/* on the one list it is on */
	struct srv_conn *c;
	uint8_t *rec;			/* the request */
	size_t len;
	struct sc_rpc_req_mem *mem;	/* the handler's sc_rpc_req_alloc */
	struct sc_rec_buf out;		/* the encoded reply */
	struct sc_xdr_seg segs[CSI_MAX_BLOCKS];
	int err;			/* unanswerable: drop the connection */
	bool counted;			/* its call header decoded */
	bool garbage;			/* its arguments did not */
};

struct call_list {
	struct srv_call *head;
	struct srv_call *tail;
};

struct srv_conn {
	/* The loop's alone. */
	int fd;
	unsigned int slot;		/* in conns[] */
	unsigned int refs;		/* the slot, and each call lent out */
	unsigned int open_calls;	/* read, not yet answered */
	bool closed;
	bool kick;			/* replies came back: send them */
	struct sockaddr_storage peer;	/* the caller's address */
	int64_t last_in_ms;		/* accepted, or bytes last came */
	int64_t rec_since_ms;		/* the record in progress: 0 none */
	struct sc_rec_reader rr;
	struct call_list replies;	/* to send, the first one partly */
	size_t out_pos;			/* sent of the first reply */
	struct srv_call *spare;		/* kept with its buffer for the next */
	/* Under the server's lock. */
	struct call_list queue;		/* waiting for a worker */
	struct srv_conn *next_ready;
	bool ready;			/* on the server's ready list */
};

/* What serving a call needs besides the call, reused by the next. */
struct srv_scratch {
	void *args;			/* decoded arguments */
	void *res;
	uint8_t *arena;			/* the arguments' arrays */
	size_t arena_cap;
};

struct srv_worker {
	struct sc_rpc_server *s;
	pthread_t thread;
	struct srv_scratch sc;
};

struct sc_rpc_server {
	struct sc_rpc_server_opts o;
	const struct sc_rpc_service *svcs;
	unsigned int nsvcs;
	unsigned int conn_limit;	/* open calls per connection */
	int listen_fd;
	int wake_fd;			/* stop */
	int done_fd;			/* calls handed back, or queue room */
	uint16_t port;
	struct srv_conn **conns;	/* max_conns slots */
	struct pollfd *pfds;		/* listen, wake, done, then per slot */
	unsigned int first_slot;	/* where the next pass starts */
	int64_t next_sweep_ms;		/* the timeouts' next check */
	bool queue_full;		/* as the loop last saw it */
	size_t msg_size;		/* of the largest message struct */
	/* o.workers, or one whose scratch the loop uses when that is 0. */
	struct srv_worker *workers;
	unsigned int nworkers;

	pthread_mutex_t lock;		/* everything below, conns' queues */
	pthread_cond_t work;		/* a call queued, or stopping */
	/* Connections with queued calls, each served in turn. */
	struct srv_conn *ready_head;
	struct srv_conn *ready_tail;
	unsigned int queued;
	bool stopping;
	struct call_list done;		/* served by workers, for the loop */
	struct sc_rpc_server_stats st;
	struct sc_rpc_req_pool *pool;
};

/* Per-request allocations, freed once the reply is sent. */
struct sc_rpc_req_mem {
	struct sc_rpc_req_mem *next;
	struct sc_rpc_req_pool *pool;	/* kept there when freed */
	size_t cap;
	max_align_t data[];
};

/*
 * Request memory of REQ_POOL_MIN bytes or more (a READ's block data) is
 * kept for later requests, up to REQ_POOL_BYTES in all.  A fresh 256 KiB
 * buffer per READ is a fresh mmap, and reading the store into it faulted
 * every page in: a third of ganesha.nfsd's CPU time in a scan storm
 * through the CSI baseline variant.  Sizes are powers of two, so a kept
 * buffer fits the next READ of as many blocks or fewer.
 */
#define REQ_POOL_MIN ((size_t)64 << 10)
#define REQ_POOL_BYTES ((size_t)32 << 20)

struct sc_rpc_req_pool {
	pthread_mutex_t lock;
	struct sc_rpc_req_mem *kept;
	size_t bytes;
	uint64_t reused;
};

static size_t req_pool_size(size_t n)
{
	size_t cap = REQ_POOL_MIN;

	while (cap < n && cap <= SIZE_MAX / 2)
		cap *= 2;
	return cap;
}

static struct sc_rpc_req_mem *req_pool_take(struct sc_rpc_req_pool *p,
					    size_t n)
{
	struct sc_rpc_req_mem *m, **mp;

	pthread_mutex_lock(&p->lock);
	for (mp = &p->kept; (m = *mp) && m->cap < n; mp = &m->next)
		;
	if (m) {
		*mp = m->next;
		p->bytes -= m->cap;
		p->reused++;
	}
	pthread_mutex_unlock(&p->lock);
	return m;
}

void *sc_rpc_req_alloc(struct sc_rpc_request *rq, size_t n)
{
	struct sc_rpc_req_mem *m = NULL;
	size_t cap = n;

	if (rq->pool && n >= REQ_POOL_MIN) {
		cap = req_pool_size(n);
		if (cap < n)
			return NULL;
		m = req_pool_take(rq->pool, n);
	}
	/* not zeroed: a READ's data buffer would cost a memset per call */
	if (!m) {
		if (cap > SIZE_MAX - sizeof(*m))
			return NULL;
		m = malloc(sizeof(*m) + cap);
		if (!m)
			return NULL;
		m->cap = cap;
		m->pool = cap >= REQ_POOL_MIN ? rq->pool : NULL;
	}
	m->next = rq->mem;
	rq->mem = m;
	return m->data;
}

static void req_mem_free(struct sc_rpc_req_mem *m)
{
	struct sc_rpc_req_pool *p;
	struct sc_rpc_req_mem *next;

	for (; m; m = next) {
		next = m->next;
		p = m->pool;
		if (p) {
			pthread_mutex_lock(&p->lock);
			if (p->bytes + m->cap <= REQ_POOL_BYTES) {
				m->next = p->kept;
				p->kept = m;
				p->bytes += m->cap;
				m = NULL;
			}
			pthread_mutex_unlock(&p->lock);
		}
		free(m);
	}
}

void sc_rpc_req_release(struct sc_rpc_request *rq)
{
	req_mem_free(rq->mem);
	rq->mem = NULL;
}

static struct sc_rpc_req_pool *req_pool_new(void)
{
	struct sc_rpc_req_pool *p = calloc(1, sizeof(*p));

	if (p)
		pthread_mutex_init(&p->lock, NULL);
	return p;
}

static void req_pool_free(struct sc_rpc_req_pool *p)
{
	struct sc_rpc_req_mem *m;

	if (!p)
		return;
	while ((m = p->kept)) {
		p->kept = m->next;
		free(m);
	}
	pthread_mutex_destroy(&p->lock);
	free(p);
}

static void list_add(struct call_list *l, struct srv_call *call)
{
	call->next = NULL;
	if (l->tail)
		l->tail->next = call;
	else
		l->head = call;
	l->tail = call;
}

static struct srv_call *list_take(struct call_list *l)
{
	struct srv_call *call = l->head;

	if (call) {
		l->head = call->next;
		if (!l->head)
			l->tail = NULL;
	}
	return call;
}

static unsigned int list_len(const struct call_list *l)
{
	const struct srv_call *call;
	unsigned int n = 0;

	for (call = l->head; call; call = call->next)
		n++;
	return n;
}

/* write(2) is async-signal-safe; a full counter still wakes poll. */
static void wake(int fd)
{
	uint64_t one = 1;

	if (write(fd, &one, sizeof(one)) < 0)
		return;
}

static void wake_clear(int fd)
{
	uint64_t v;

	if (read(fd, &v, sizeof(v)) < 0)
		return;
}

static int listen_on(const struct sc_rpc_server_opts *o, uint16_t *port)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
	const char *host = o->bind_addr ? o->bind_addr : "127.0.0.1";
	socklen_t len;
	int fd, one = 1, err;

	err = sc_sockaddr_parse(host, o->port, &ss, &len);
	if (err)
		return err;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, len) || listen(fd, 128) ||
	    getsockname(fd, (struct sockaddr *)&ss, &len)) {
		err = -errno;
		close(fd);
		return err;
	}
	*port = ntohs(ss.ss_family == AF_INET ? in4->sin_port : in6->sin6_port);
	return fd;
}

int sc_rpc_server_new(const struct sc_rpc_server_opts *o,
		      const struct sc_rpc_service *svcs, unsigned int nsvcs,
		      struct sc_rpc_server **out)
{
	struct sc_rpc_server *s = calloc(1, sizeof(*s));
	int err = -ENOMEM;
	unsigned int i;

	if (!s)
		return err;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->work, NULL);
	for (i = 0; i < CSI_MSG_COUNT; i++)
		if (csi_msgs[i].size > s->msg_size)
			s->msg_size = csi_msgs[i].size;
	s->o = *o;
	if (!s->o.max_conns)
		s->o.max_conns = 256;
	if (!s->o.max_record)
		s->o.max_record = SC_RPC_MAX_RECORD_DEFAULT;
	if (!s->o.idle_ms)
		s->o.idle_ms = SC_RPC_IDLE_TIMEOUT_MS;
	if (!s->o.record_ms)
		s->o.record_ms = SC_RPC_RECORD_TIMEOUT_MS;
	if (!s->o.keepalive_s)
		s->o.keepalive_s = SC_RPC_KEEPALIVE_S;
	s->conn_limit = 1;
	if (s->o.workers) {
		if (!s->o.max_inflight_per_conn)
			s->o.max_inflight_per_conn =
				SC_CSI_MAX_CALLS_PER_CONN_DEFAULT;
		s->conn_limit = s->o.max_inflight_per_conn;
		if (!s->o.max_queued)
			s->o.max_queued = s->o.workers * s->conn_limit;
	}
	s->svcs = svcs;
	s->nsvcs = nsvcs;
	s->listen_fd = -1;
	s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	s->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	s->conns = calloc(s->o.max_conns, sizeof(*s->conns));
	s->pfds = calloc(s->o.max_conns + 3, sizeof(*s->pfds));
	s->nworkers = s->o.workers ? s->o.workers : 1;
	s->workers = calloc(s->nworkers, sizeof(*s->workers));
	s->pool = req_pool_new();
	if (s->wake_fd < 0 || s->done_fd < 0 || !s->conns || !s->pfds ||
	    !s->workers || !s->pool)
		goto fail;
	for (i = 0; i < s->nworkers; i++) {
		s->workers[i].s = s;
		s->workers[i].sc.args = malloc(s->msg_size);
		s->workers[i].sc.res = malloc(s->msg_size);
		if (!s->workers[i].sc.args || !s->workers[i].sc.res)
			goto fail;
	}
	err = listen_on(&s->o, &s->port);
	if (err < 0)
		goto fail;
	s->listen_fd = err;
	*out = s;
	return 0;
fail:
	sc_rpc_server_free(s);
	return err;
}

uint16_t sc_rpc_server_port(const struct sc_rpc_server *s)
{
	return s->port;
}

void sc_rpc_server_stop(struct sc_rpc_server *s)
{
	wake(s->wake_fd);
}

void sc_rpc_server_get_stats(struct sc_rpc_server *s,
			     struct sc_rpc_server_stats *st)
{
	pthread_mutex_lock(&s->lock);
	*st = s->st;
	st->calls_queued = s->queued;
	pthread_mutex_unlock(&s->lock);
	pthread_mutex_lock(&s->pool->lock);
	st->req_mem_reused = s->pool->reused;
	pthread_mutex_unlock(&s->pool->lock);
}

/* A call for c, in c's spare when it has one: its buffer is kept. */
static struct srv_call *call_new(struct srv_conn *c)
{
	struct srv_call *call = c->spare;

	if (call) {
		c->spare = NULL;
		call->next = NULL;
		call->err = 0;
		call->counted = false;
		call->garbage = false;
	} else {
		call = calloc(1, sizeof(*call));
		if (!call)
			return NULL;
		call->out.segs = call->segs;
		call->out.max_segs = CSI_MAX_BLOCKS;
	}
	call->c = c;
	return call;
}

/* A finished call becomes c's spare, unless c has one or is closed. */
static void call_free(struct srv_conn *c, struct srv_call *call)
{
	free(call->rec);
	call->rec = NULL;
	req_mem_free(call->mem);
	call->mem = NULL;
	if (!c->spare && !c->closed) {
		sc_rec_buf_trim(&call->out, SC_REC_BUF_KEEP);
		c->spare = call;
		return;
	}
	sc_rec_buf_trim(&call->out, 0);
	free(call);
}

static void conn_put(struct srv_conn *c)
{
	if (--c->refs)
		return;
	if (c->spare) {
		sc_rec_buf_trim(&c->spare->out, 0);
		free(c->spare);
	}
	free(c);
}

/* Under the lock: whether the loop must stop reading for now. */
static void queue_check(struct sc_rpc_server *s)
{
	s->queue_full = s->o.workers && s->queued >= s->o.max_queued;
}

/* Under the lock. */
static void ready_add(struct sc_rpc_server *s, struct srv_conn *c)
{
	c->next_ready = NULL;
	if (s->ready_tail)
		s->ready_tail->next_ready = c;
	else
		s->ready_head = c;
	s->ready_tail = c;
	c->ready = true;
}

/* Under the lock. */
static void ready_remove(struct sc_rpc_server *s, struct srv_conn *c)
{
	struct srv_conn **p, *prev = NULL;

	for (p = &s->ready_head; *p != c; p = &(*p)->next_ready)
		prev = *p;
	*p = c->next_ready;
	if (s->ready_tail == c)
		s->ready_tail = prev;
	c->ready = false;
}

/*
 * Under the lock: the first waiting call of the connection whose turn it
 * is; the connection goes to the back of the line if it has more.
 */
static struct srv_call *ready_take(struct sc_rpc_server *s)
{
	struct srv_conn *c = s->ready_head;
	struct srv_call *call = list_take(&c->queue);

	ready_remove(s, c);
	if (c->queue.head)
		ready_add(s, c);
	/* The loop stopped reading at the bound: there is room again. */
	if (s->queued-- == s->o.max_queued)
		wake(s->done_fd);
	return call;
}

/*
 * Close c: its waiting calls and unsent replies go now, the calls in
 * workers when they come back.  err is why (0: the server is freed).
 */
static void conn_close(struct sc_rpc_server *s, struct srv_conn *c, int err)
{
	struct call_list queue;
	struct srv_call *call;
	unsigned int nqueued, unsent = list_len(&c->replies);

	pthread_mutex_lock(&s->lock);
	if (c->ready)
		ready_remove(s, c);
	queue = c->queue;
	c->queue = (struct call_list){ 0 };
	nqueued = list_len(&queue);
	s->queued -= nqueued;
	queue_check(s);
	s->st.calls_discarded += nqueued + unsent;
	s->st.replies_unsent -= unsent;
	s->st.conns_open--;
	/* End of stream is a host hanging up. */
	if (err && err != -ECONNRESET)
		s->st.conns_dropped++;
	pthread_mutex_unlock(&s->lock);
	c->closed = true;
	s->conns[c->slot] = NULL;
	close(c->fd);
	sc_rec_reader_free(&c->rr);
	while ((call = list_take(&queue))) {
		call_free(c, call);
		conn_put(c);
	}
	while ((call = list_take(&c->replies)))
		call_free(c, call);
	conn_put(c);
}

static void scratch_free(struct srv_scratch *w)
{
	free(w->args);
	free(w->res);
	free(w->arena);
}

void sc_rpc_server_free(struct sc_rpc_server *s)
{
	struct srv_call *call;
	struct srv_conn *c;
	unsigned int i;

	if (!s)
		return;
	/* Calls the workers served after the loop's last pass. */
	while ((call = list_take(&s->done))) {
		c = call->c;
		call_free(c, call);
		conn_put(c);
	}
	for (i = 0; s->conns && i < s->o.max_conns; i++)
		if (s->conns[i])
			conn_close(s, s->conns[i], 0);
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	if (s->wake_fd >= 0)
		close(s->wake_fd);
	if (s->done_fd >= 0)
		close(s->done_fd);
	for (i = 0; s->workers && i < s->nworkers; i++)
		scratch_free(&s->workers[i].sc);
	free(s->workers);
	free(s->conns);
	free(s->pfds);
	req_pool_free(s->pool);
	pthread_cond_destroy(&s->work);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

/* The same host: address family and address, whatever the port. */
static bool same_addr(const struct sockaddr_storage *a,
		      const struct sockaddr_storage *b)
{
	const struct sockaddr_in *a4 = (const void *)a, *b4 = (const void *)b;
	const struct sockaddr_in6 *a6 = (const void *)a, *b6 = (const void *)b;

	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return a4->sin_addr.s_addr == b4->sin_addr.s_addr;
	if (a->ss_family == AF_INET6)
		return !memcmp(&a6->sin6_addr, &b6->sin6_addr,
			       sizeof(a6->sin6_addr));
	return true;
}

/*
 * A free slot for a connection from peer: max_conns in all and, with a
 * limit, max_conns_per_addr from one address, so that one host or
 * stranger cannot take every slot; max_conns if none.
 */
static unsigned int conn_slot(const struct sc_rpc_server *s,
			      const struct sockaddr_storage *peer)
{
	unsigned int i, free_slot = s->o.max_conns, same = 0;

	for (i = 0; i < s->o.max_conns; i++) {
		if (!s->conns[i])
			free_slot = free_slot < i ? free_slot : i;
		else if (same_addr(&s->conns[i]->peer, peer))
			same++;
	}
	if (s->o.max_conns_per_addr && same >= s->o.max_conns_per_addr)
		return s->o.max_conns;
	return free_slot;
}

/* Keep-alive probes on fd: a dead peer's connection is closed. */
static void keepalive_set(int fd, unsigned int keepalive_s)
{
	int one = 1, secs = (int)keepalive_s, probes = SC_KEEPALIVE_PROBES;

	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &secs, sizeof(secs));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &secs, sizeof(secs));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof(probes));
}

static void accept_conns(struct sc_rpc_server *s)
{
	struct srv_conn *c;
	unsigned int i;
	struct sockaddr_storage peer;
	socklen_t plen;
	int fd, one = 1;

	for (;;) {
		plen = sizeof(peer);
		fd = accept4(s->listen_fd, (struct sockaddr *)&peer, &plen,
			     SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0)
			return;
		i = conn_slot(s, &peer);
		c = i < s->o.max_conns ? calloc(1, sizeof(*c)) : NULL;
		pthread_mutex_lock(&s->lock);
		if (c) {
			s->st.conns_accepted++;
			s->st.conns_open++;
		} else {
			s->st.conns_refused++;
		}
		pthread_mutex_unlock(&s->lock);
		if (!c) {
			close(fd);
			continue;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		keepalive_set(fd, s->o.keepalive_s);
		c->fd = fd;
		c->slot = i;
		c->refs = 1;
		c->peer = peer;
		c->last_in_ms = sc_now_ms();
		sc_rec_reader_init(&c->rr, s->o.max_record);
		s->conns[i] = c;
	}
}

static const struct sc_rpc_service *
find_service(const struct sc_rpc_server *s, uint32_t prog)
{
	unsigned int i;

	for (i = 0; i < s->nsvcs; i++)
		if (s->svcs[i].prog == prog)
			return &s->svcs[i];
	return NULL;
}

/* Room for n bytes of decoded arrays, kept for the next request. */
static bool arena_reserve(struct srv_scratch *w, size_t n)
{
	uint8_t *p;

	if (n <= w->arena_cap)
		return true;
	p = realloc(w->arena, n);
	if (!p)
		return false;
	w->arena = p;
	w->arena_cap = n;
	return true;
}

static int encode_reply(struct srv_call *call, struct sc_rpc_reply_hdr *h,
			enum csi_msg res_msg, const void *res)
{
	return sc_rec_encode(false, h, res_msg, res, (size_t)-1, &call->out);
}

/*
 * Decode, dispatch and answer one request record into call->out; on the
 * loop or on a worker, so it touches neither the counters nor the
 * connection beyond its immutable peer address.
 */
static void serve_call(const struct sc_rpc_server *s, struct srv_scratch *w,
		       struct srv_call *call)
{
	struct sc_rpc_reply_hdr rh = { .reply_stat = SC_RPC_MSG_ACCEPTED,
				    .accept_stat = SC_RPC_SUCCESS };
	struct sc_rpc_call_hdr ch = { 0 };
	struct sc_rpc_auth_sys sys;
	struct sc_rpc_request rq = {
		.call = &ch, .peer = (const struct sockaddr *)&call->c->peer,
		.pool = s->pool };
	const struct sc_rpc_service *svc;
	enum csi_msg res_msg = CSI_MSG_VOID;
	const uint8_t *rec = call->rec;
	size_t len = call->len, alen;
	struct sc_xdr x;

	sc_xdr_init_decode(&x, rec, len, NULL, 0);
	sc_rpc_xdr_call_hdr(&x, &ch);
	if (x.err) {
		call->err = -EBADMSG;	/* not even a call: drop the stream */
		return;
	}
	rh.xid = ch.xid;
	call->counted = true;
	svc = find_service(s, ch.prog);
	rq.proc = csi_proc_find(ch.prog, ch.proc);
	if (ch.rpcvers != SC_RPC_VERSION) {
		rh.reply_stat = SC_RPC_MSG_DENIED;
		rh.reject_stat = SC_RPC_MISMATCH;
		rh.low = rh.high = SC_RPC_VERSION;
	} else if (ch.cred.flavor > SC_RPC_AUTH_SYS) {
		rh.reply_stat = SC_RPC_MSG_DENIED;
		rh.reject_stat = SC_RPC_AUTH_ERROR;
		rh.auth_stat = SC_RPC_AUTH_TOOWEAK;
	} else if (ch.cred.flavor == SC_RPC_AUTH_SYS &&
		   sc_rpc_auth_sys_decode(&ch.cred, &sys)) {
		rh.reply_stat = SC_RPC_MSG_DENIED;
		rh.reject_stat = SC_RPC_AUTH_ERROR;
		rh.auth_stat = SC_RPC_AUTH_BADCRED;
	} else if (!svc) {
		rh.accept_stat = SC_RPC_PROG_UNAVAIL;
	} else if (ch.vers != CSI_VERS) {
		rh.accept_stat = SC_RPC_PROG_MISMATCH;
		rh.low = rh.high = CSI_VERS;
	} else if (!rq.proc) {
		rh.accept_stat = SC_RPC_PROC_UNAVAIL;
	} else {
		alen = csi_decode_arena_size(rq.proc->args, len - x.pos);
		if (!arena_reserve(w, alen)) {
			rh.accept_stat = SC_RPC_SYSTEM_ERR;
		} else if (csi_decode(rq.proc->args, rec + x.pos, len - x.pos,
				      w->args, w->arena, alen)) {
			rh.accept_stat = SC_RPC_GARBAGE_ARGS;
			call->garbage = true;
		} else if (rq.proc->proc != CSI_PROC_NULL) {
			memset(w->res, 0, csi_msgs[rq.proc->res].size);
			rq.args = w->args;
			rq.res = w->res;
			if (ch.cred.flavor == SC_RPC_AUTH_SYS)
				rq.auth_sys = &sys;
			if (svc->handle(svc->ctx, &rq) < 0)
				rh.accept_stat = SC_RPC_SYSTEM_ERR;
			else
				res_msg = rq.proc->res;
		}
	}
	call->err = encode_reply(call, &rh, res_msg, w->res);
	if (call->err == -EINVAL && res_msg != CSI_MSG_VOID) {
		/* The handler built a result that breaks the protocol. */
		rh.accept_stat = SC_RPC_SYSTEM_ERR;
		call->err = encode_reply(call, &rh, CSI_MSG_VOID, NULL);
	}
	call->mem = rq.mem;
}

/*
 * A served call back on the loop: its reply joins its connection's, or
 * goes if the connection is closed.  A negative errno when the connection
 * must be dropped.
 */
static int call_finish(struct sc_rpc_server *s, struct srv_call *call)
{
	struct srv_conn *c = call->c;
	int err = c->closed ? 0 : call->err;

	pthread_mutex_lock(&s->lock);
	s->st.calls += call->counted;
	s->st.garbage_args += call->garbage;
	if (c->closed)
		s->st.calls_discarded++;
	else if (!err)
		s->st.replies_unsent++;
	pthread_mutex_unlock(&s->lock);
	if (c->closed || err) {
		c->open_calls--;
		call_free(c, call);
	} else {
		list_add(&c->replies, call);
	}
	return err;
}

/* A call read: serve it here, or queue it for the workers. */
static int call_start(struct sc_rpc_server *s, struct srv_call *call)
{
	struct srv_conn *c = call->c;

	c->open_calls++;
	if (!s->o.workers) {
		serve_call(s, &s->workers[0].sc, call);
		return call_finish(s, call);
	}
	c->refs++;
	pthread_mutex_lock(&s->lock);
	list_add(&c->queue, call);
	if (!c->ready)
		ready_add(s, c);
	s->queued++;
	queue_check(s);
	if (s->queued > s->st.calls_queued_max)
		s->st.calls_queued_max = s->queued;
	if (c->open_calls == s->conn_limit)
		s->st.conns_throttled++;
	pthread_cond_signal(&s->work);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

/* Take back the calls the workers served. */
static void take_done(struct sc_rpc_server *s)
{
	struct call_list done;
	struct srv_call *call;
	struct srv_conn *c;
	int err;

	/* Clear first: a call handed back after this wakes the loop again. */
	wake_clear(s->done_fd);
	pthread_mutex_lock(&s->lock);
	done = s->done;
	s->done = (struct call_list){ 0 };
	queue_check(s);
	pthread_mutex_unlock(&s->lock);
	while ((call = list_take(&done))) {
		c = call->c;
		err = call_finish(s, call);
		if (err)
			conn_close(s, c, err);
		else if (!c->closed)
			c->kick = true;
		conn_put(c);
	}
}

static void *worker_main(void *arg)
{
	struct srv_worker *w = arg;
	struct sc_rpc_server *s = w->s;
	struct srv_call *call;

	pthread_mutex_lock(&s->lock);
	for (;;) {
		while (!s->stopping && !s->ready_head)
			pthread_cond_wait(&s->work, &s->lock);
		if (s->stopping)
			break;
		call = ready_take(s);
		pthread_mutex_unlock(&s->lock);
		serve_call(s, &w->sc, call);
		pthread_mutex_lock(&s->lock);
		/* The loop takes the whole list at each wake-up. */
		if (!s->done.head)
			wake(s->done_fd);
		list_add(&s->done, call);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* Let the first n workers finish their current call, and join them. */
static void workers_stop(struct sc_rpc_server *s, unsigned int n)
{
	unsigned int i;

	pthread_mutex_lock(&s->lock);
	s->stopping = true;
	pthread_cond_broadcast(&s->work);
	pthread_mutex_unlock(&s->lock);
	for (i = 0; i < n; i++)
		pthread_join(s->workers[i].thread, NULL);
}

static int workers_start(struct sc_rpc_server *s)
{
	unsigned int i;
	int err;

	s->stopping = false;
	for (i = 0; i < s->o.workers; i++) {
		err = pthread_create(&s->workers[i].thread, NULL, worker_main,
				     &s->workers[i]);
		if (err) {
			workers_stop(s, i);
			return -err;
		}
	}
	return 0;
}

static bool conn_may_read(const struct sc_rpc_server *s,
			  const struct srv_conn *c)
{
	return c->open_calls < s->conn_limit && !s->queue_full;
}

/* Send the replies in order; 0 when all have left, 1 if more remains. */
static int conn_flush(struct sc_rpc_server *s, struct srv_conn *c)
{
	struct iovec iov[SRV_SEND_IOV];
	struct msghdr mh = { .msg_iov = iov };
	struct srv_call *call;
	uint64_t sent = 0, done = 0;
	ssize_t n;
	int ret = 0;

	while ((call = c->replies.head)) {
		if (c->out_pos == call->out.len) {
			list_take(&c->replies);
			c->out_pos = 0;
			c->open_calls--;
			call_free(c, call);
			done++;
			continue;
		}
		mh.msg_iovlen = (size_t)sc_rec_buf_iov(&call->out, c->out_pos,
						       iov, SRV_SEND_IOV);
		/* A host gone away is an error here, not a SIGPIPE. */
		n = sendmsg(c->fd, &mh, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = errno == EAGAIN || errno == EWOULDBLOCK ? 1 :
									-errno;
			break;
		}
		c->out_pos += (size_t)n;
		sent += (uint64_t)n;
	}
	if (sent || done) {
		pthread_mutex_lock(&s->lock);
		s->st.bytes_out += sent;
		s->st.replies_unsent -= done;
		pthread_mutex_unlock(&s->lock);
	}
	return ret;
}

/* Send what can leave, then read and start calls while the limits allow. */
static int conn_serve(struct sc_rpc_server *s, struct srv_conn *c)
{
	uint64_t before = c->rr.bytes_in;
	struct srv_call *call;
	int n;

	c->kick = false;
	for (;;) {
		n = conn_flush(s, c);
		if (n < 0 || !conn_may_read(s, c))
			break;
		n = sc_rec_read(&c->rr, c->fd);
		if (n != 1)
			break;
		call = call_new(c);
		if (!call) {
			n = -ENOMEM;
			break;
		}
		call->rec = sc_rec_take(&c->rr, &call->len);
		c->rec_since_ms = 0;
		n = call_start(s, call);
		if (n < 0)
			break;
	}
	if (c->rr.bytes_in != before) {
		c->last_in_ms = sc_now_ms();
		if (sc_rec_started(&c->rr) && !c->rec_since_ms)
			c->rec_since_ms = c->last_in_ms;
		pthread_mutex_lock(&s->lock);
		s->st.bytes_in += c->rr.bytes_in - before;
		pthread_mutex_unlock(&s->lock);
	}
	return n < 0 ? n : 0;
}

/* Whether c has work that poll does not report. */
static bool conn_due(const struct sc_rpc_server *s, const struct srv_conn *c)
{
	return c->kick || (sc_rec_pending(&c->rr) && conn_may_read(s, c));
}

/*
 * The timeouts (idle_ms, record_ms): a connection that holds a slot
 * sending nothing, or began a record and has not sent all of it in
 * record_ms (a slow-loris sender), is closed.  A record's clock runs only
 * while the server reads: a connection at its call limit is not read.
 */
static void sweep_timeouts(struct sc_rpc_server *s, int64_t now)
{
	struct srv_conn *c;
	unsigned int i;
	bool idle, stalled;

	for (i = 0; i < s->o.max_conns; i++) {
		c = s->conns[i];
		if (!c)
			continue;
		if (c->rec_since_ms && !conn_may_read(s, c))
			c->rec_since_ms = now;
		idle = !c->open_calls && !c->replies.head &&
		       !sc_rec_started(&c->rr) &&
		       now - c->last_in_ms >= s->o.idle_ms;
		stalled = c->rec_since_ms &&
			  now - c->rec_since_ms >= s->o.record_ms;
		if (!idle && !stalled)
			continue;
		pthread_mutex_lock(&s->lock);
		s->st.conns_timed_out++;
		pthread_mutex_unlock(&s->lock);
		conn_close(s, c, -ECONNRESET);
	}
}

/* How long poll may wait: to the next timeouts' check (-1: no conns). */
static int sweep_wait(struct sc_rpc_server *s, int64_t now)
{
	unsigned int tick = s->o.record_ms < s->o.idle_ms ? s->o.record_ms :
							     s->o.idle_ms;
	int64_t left;

	tick = tick / 4 > 1000 ? 1000 : tick / 4 + 1;
	if (now >= s->next_sweep_ms) {
		sweep_timeouts(s, now);
		s->next_sweep_ms = now + tick;
	}
	left = s->next_sweep_ms - now;
	return left > 0 ? (int)left : 0;
}

static int serve(struct sc_rpc_server *s)
{
	unsigned int i, k, n = s->o.max_conns;
	struct pollfd *p;
	struct srv_conn *c;
	int err;

	for (;;) {
		/* before the fds are taken: it may close connections */
		int wait = sweep_wait(s, sc_now_ms());

		s->pfds[0] = (struct pollfd){ .fd = s->listen_fd, .events = POLLIN };
		s->pfds[1] = (struct pollfd){ .fd = s->wake_fd, .events = POLLIN };
		s->pfds[2] = (struct pollfd){ .fd = s->done_fd, .events = POLLIN };
		for (i = 0; i < n; i++) {
			c = s->conns[i];
			p = &s->pfds[i + 3];
			*p = (struct pollfd){ .fd = -1 };
			if (c && c->replies.head)
				p->events |= POLLOUT;
			if (c && conn_may_read(s, c))
				p->events |= POLLIN;
			/* Not polled at all, it cannot spin on a hang-up. */
			if (p->events)
				p->fd = c->fd;
		}
		if (poll(s->pfds, n + 3, wait) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (s->pfds[1].revents) {
			wake_clear(s->wake_fd);
			return 0;
		}
		if (s->pfds[2].revents)
			take_done(s);
		/* Each pass starts one slot further: no connection first. */
		for (k = 0; k < n; k++) {
			i = (s->first_slot + k) % n;
			c = s->conns[i];
			if (!c || !(s->pfds[i + 3].revents || conn_due(s, c)))
				continue;
			err = conn_serve(s, c);
			if (err < 0)
				conn_close(s, c, err);
		}
		s->first_slot = (s->first_slot + 1) % n;
		if (s->pfds[0].revents)
			accept_conns(s);
	}
}

int sc_rpc_server_run(struct sc_rpc_server *s)
{
	int err = workers_start(s);

	if (err)
		return err;
	err = serve(s);
	workers_stop(s, s->o.workers);
	return err;
}
