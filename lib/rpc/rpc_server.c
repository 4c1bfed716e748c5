// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The CSI RPC server loop: one thread, poll(), non-blocking sockets.
 *
 * Per connection it holds at most one request record being assembled
 * (bounded by max_record) and one encoded reply being sent: it reads the
 * next request only when the previous reply has left, so a host that
 * does not read its replies stalls itself and nobody else.  A stream that
 * breaks record marking or exceeds max_record is dropped; a request whose
 * arguments do not decode gets GARBAGE_ARGS and the connection goes on.
 * An eventfd wakes the loop for a clean stop.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "record.h"
#include "seacache/rpc_transport.h"

struct srv_conn {
	int fd;
	struct sockaddr_storage peer;	/* the caller's address */
	struct sc_rec_reader rr;
	struct sc_rec_buf out;		/* the reply being sent */
	size_t out_pos;			/* sent so far; pending while < out.len */
};

struct sc_rpc_server {
	struct sc_rpc_server_opts o;
	const struct sc_rpc_service *svcs;
	unsigned int nsvcs;
	int listen_fd;
	int wake_fd;
	uint16_t port;
	struct srv_conn **conns;	/* max_conns slots */
	struct pollfd *pfds;		/* listen, wake, then one per slot */
	struct sc_rpc_server_stats st;
	/*
	 * One request is served at a time: its decoded arguments, its
	 * result and the arguments' arrays live here, reused by the next.
	 */
	void *args;
	void *res;
	size_t msg_size;		/* of the largest message struct */
	uint8_t *arena;
	size_t arena_cap;
};

/* Per-request allocations, freed after the reply is encoded. */
struct sc_rpc_req_mem {
	struct sc_rpc_req_mem *next;
	max_align_t data[];
};

void *sc_rpc_req_alloc(struct sc_rpc_request *rq, size_t n)
{
	struct sc_rpc_req_mem *m = calloc(1, sizeof(*m) + n);

	if (!m)
		return NULL;
	m->next = rq->mem;
	rq->mem = m;
	return m->data;
}

static void req_mem_free(struct sc_rpc_req_mem *m)
{
	struct sc_rpc_req_mem *next;

	for (; m; m = next) {
		next = m->next;
		free(m);
	}
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
	unsigned int m;

	if (!s)
		return err;
	for (m = 0; m < CSI_MSG_COUNT; m++)
		if (csi_msgs[m].size > s->msg_size)
			s->msg_size = csi_msgs[m].size;
	s->args = malloc(s->msg_size);
	s->res = malloc(s->msg_size);
	s->o = *o;
	if (!s->o.max_conns)
		s->o.max_conns = 256;
	if (!s->o.max_record)
		s->o.max_record = SC_RPC_MAX_RECORD_DEFAULT;
	s->svcs = svcs;
	s->nsvcs = nsvcs;
	s->listen_fd = -1;
	s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	s->conns = calloc(s->o.max_conns, sizeof(*s->conns));
	s->pfds = calloc(s->o.max_conns + 2, sizeof(*s->pfds));
	if (s->wake_fd < 0 || !s->conns || !s->pfds || !s->args || !s->res)
		goto fail;
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
	uint64_t one = 1;

	/* write(2) is async-signal-safe; a full counter still wakes poll. */
	if (write(s->wake_fd, &one, sizeof(one)) < 0)
		return;
}

void sc_rpc_server_get_stats(const struct sc_rpc_server *s,
			     struct sc_rpc_server_stats *st)
{
	*st = s->st;
}

static void conn_close(struct sc_rpc_server *s, unsigned int i)
{
	struct srv_conn *c = s->conns[i];

	close(c->fd);
	sc_rec_reader_free(&c->rr);
	sc_rec_buf_trim(&c->out, 0);
	free(c);
	s->conns[i] = NULL;
}

void sc_rpc_server_free(struct sc_rpc_server *s)
{
	unsigned int i;

	if (!s)
		return;
	for (i = 0; s->conns && i < s->o.max_conns; i++)
		if (s->conns[i])
			conn_close(s, i);
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	if (s->wake_fd >= 0)
		close(s->wake_fd);
	free(s->conns);
	free(s->pfds);
	free(s->args);
	free(s->res);
	free(s->arena);
	free(s);
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
		for (i = 0; i < s->o.max_conns && s->conns[i]; i++)
			;
		c = i < s->o.max_conns ? calloc(1, sizeof(*c)) : NULL;
		if (!c) {
			s->st.conns_refused++;
			close(fd);
			continue;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c->fd = fd;
		c->peer = peer;
		sc_rec_reader_init(&c->rr, s->o.max_record);
		s->conns[i] = c;
		s->st.conns_accepted++;
	}
}

static const struct sc_rpc_service *find_service(struct sc_rpc_server *s,
						 uint32_t prog)
{
	unsigned int i;

	for (i = 0; i < s->nsvcs; i++)
		if (s->svcs[i].prog == prog)
			return &s->svcs[i];
	return NULL;
}

/* Queue a reply record: header plus, when accepted, the result body. */
static int queue_reply(struct srv_conn *c, struct sc_rpc_reply_hdr *h,
		       enum csi_msg res_msg, const void *res)
{
	c->out_pos = 0;
	return sc_rec_encode(false, h, res_msg, res, (size_t)-1, &c->out);
}

/* Room for n bytes of decoded arrays, kept for the next request. */
static bool arena_reserve(struct sc_rpc_server *s, size_t n)
{
	uint8_t *p;

	if (n <= s->arena_cap)
		return true;
	p = realloc(s->arena, n);
	if (!p)
		return false;
	s->arena = p;
	s->arena_cap = n;
	return true;
}

/* Decode, dispatch and answer one request record. */
static int serve_record(struct sc_rpc_server *s, struct srv_conn *c,
			const uint8_t *rec, size_t len)
{
	struct sc_rpc_reply_hdr rh = { .reply_stat = SC_RPC_MSG_ACCEPTED,
				    .accept_stat = SC_RPC_SUCCESS };
	struct sc_rpc_call_hdr ch = { 0 };
	struct sc_rpc_request rq = { .call = &ch,
				     .peer = (const struct sockaddr *)&c->peer };
	const struct sc_rpc_service *svc;
	enum csi_msg res_msg = CSI_MSG_VOID;
	struct sc_xdr x;
	size_t alen;
	int err;

	sc_xdr_init_decode(&x, rec, len, NULL, 0);
	sc_rpc_xdr_call_hdr(&x, &ch);
	if (x.err)
		return -EBADMSG;	/* not even a call: drop the stream */
	rh.xid = ch.xid;
	s->st.calls++;
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
	} else if (!svc) {
		rh.accept_stat = SC_RPC_PROG_UNAVAIL;
	} else if (ch.vers != CSI_VERS) {
		rh.accept_stat = SC_RPC_PROG_MISMATCH;
		rh.low = rh.high = CSI_VERS;
	} else if (!rq.proc) {
		rh.accept_stat = SC_RPC_PROC_UNAVAIL;
	} else {
		alen = csi_decode_arena_size(rq.proc->args, len - x.pos);
		if (!arena_reserve(s, alen)) {
			rh.accept_stat = SC_RPC_SYSTEM_ERR;
		} else if (csi_decode(rq.proc->args, rec + x.pos, len - x.pos,
				      s->args, s->arena, alen)) {
			rh.accept_stat = SC_RPC_GARBAGE_ARGS;
			s->st.garbage_args++;
		} else if (rq.proc->proc != CSI_PROC_NULL) {
			memset(s->res, 0, csi_msgs[rq.proc->res].size);
			rq.args = s->args;
			rq.res = s->res;
			if (svc->handle(svc->ctx, &rq) < 0)
				rh.accept_stat = SC_RPC_SYSTEM_ERR;
			else
				res_msg = rq.proc->res;
		}
	}
	err = queue_reply(c, &rh, res_msg, s->res);
	if (err == -EINVAL && res_msg != CSI_MSG_VOID) {
		/* The handler built a result that breaks the protocol. */
		rh.accept_stat = SC_RPC_SYSTEM_ERR;
		err = queue_reply(c, &rh, CSI_MSG_VOID, NULL);
	}
	req_mem_free(rq.mem);
	return err;
}

/* Send what is queued; 0 when all of it left, 1 if more remains. */
static int conn_flush(struct sc_rpc_server *s, struct srv_conn *c)
{
	ssize_t n;

	while (c->out_pos < c->out.len) {
		n = write(c->fd, c->out.p + c->out_pos, c->out.len - c->out_pos);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? 1 :
									 -errno;
		c->out_pos += (size_t)n;
		s->st.bytes_out += (uint64_t)n;
	}
	c->out.len = c->out_pos = 0;
	sc_rec_buf_trim(&c->out, SC_REC_BUF_KEEP);
	return 0;
}

/* Serve requests until the socket would block or a reply is pending. */
static int conn_serve(struct sc_rpc_server *s, struct srv_conn *c)
{
	uint64_t before = c->rr.bytes_in;
	uint8_t *rec;
	size_t len;
	int n;

	for (;;) {
		n = conn_flush(s, c);
		if (n)
			break;
		n = sc_rec_read(&c->rr, c->fd);
		if (n != 1)
			break;
		rec = sc_rec_take(&c->rr, &len);
		n = serve_record(s, c, rec, len);
		free(rec);
		if (n < 0)
			break;
	}
	s->st.bytes_in += c->rr.bytes_in - before;
	return n < 0 ? n : 0;
}

int sc_rpc_server_run(struct sc_rpc_server *s)
{
	unsigned int i, n;
	uint64_t v;
	int err;

	for (;;) {
		s->pfds[0] = (struct pollfd){ .fd = s->listen_fd, .events = POLLIN };
		s->pfds[1] = (struct pollfd){ .fd = s->wake_fd, .events = POLLIN };
		for (i = 0; i < s->o.max_conns; i++) {
			struct srv_conn *c = s->conns[i];

			s->pfds[i + 2] = (struct pollfd){
				.fd = c ? c->fd : -1,
				.events = c && c->out.len ? POLLOUT : POLLIN };
		}
		n = s->o.max_conns + 2;
		if (poll(s->pfds, n, -1) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (s->pfds[1].revents) {
			if (read(s->wake_fd, &v, sizeof(v)) < 0)
				v = 0;
			return 0;
		}
		for (i = 0; i < s->o.max_conns; i++) {
			if (!s->conns[i] || !s->pfds[i + 2].revents)
				continue;
			err = conn_serve(s, s->conns[i]);
			if (err < 0) {
				/* End of stream is a host hanging up. */
				if (err != -ECONNRESET)
					s->st.conns_dropped++;
				conn_close(s, i);
			}
		}
		if (s->pfds[0].revents)
			accept_conns(s);
	}
}
