// SPDX-License-Identifier: BSD-2-Clause
/*
 * The boxes' event loop: one thread, poll(2), non-blocking sockets.
 *
 * Host box: listens where the NFS clients connect (one listener per
 * --forward LISTEN=TARGET) and keeps one link to the server box.  Every
 * accepted client connection is a channel on that link (OPEN names its
 * target); the server box opens a connection of its own to the target, if
 * that target is one of its --target list.  A server box serves any
 * number of host boxes, one link each.
 *
 * Each link has an encoder per direction (what this box sends) and a
 * decoder (what it receives), with one index for all of the link's
 * channels, so a block one VM read is a reference when another VM of the
 * same host reads it.  A link starts cold on both ends: the handshake is
 * the first thing each box sends on a new connection, and nothing of an
 * earlier link is kept.  When a link breaks (a box restarts, a malformed
 * frame), its channels are closed; the host box connects again.
 *
 * Flow control: a box reads a client or server connection only while the
 * other box has granted credit for the channel (CHAN_WINDOW bytes at
 * first, more in CREDIT frames once written out), so a slow connection
 * holds no other channel up and buffers stay bounded.
 *
 * The two ways of a channel end apart: a connection that cannot be written
 * to any more (its client or server reset it, typically by closing with
 * our bytes unread) is still read to its end, since what it sent before
 * the reset waits in its socket, and every byte read goes to the other box
 * (what the chunker holds included) before the CLOSE.
 */
#include "box.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "codec.h"

#define CHAN_WINDOW (1u << 20)
#define LINK_OUT_HIGH ((size_t)4 << 20)
#define READ_MAX ((size_t)64 << 10)
#define RECONNECT_MS 200
/* a chunker holding bytes this long with no more input sends them */
#define FLUSH_MS 10
#define HS_LEN 32
#define HS_MAGIC "SCDBOX1"
#define HS_VERSION 1u
#define HS_RW 1u

struct link;

struct chan {
	uint32_t id;
	int fd;
	bool connecting;	/* server box: connect to the target under way */
	bool rx_eof;		/* fd gave end of stream or an error; CLOSE sent */
	bool peer_closed;	/* CLOSE received: shut fd's writing once out is written */
	bool shut_wr;
	bool tx_failed;		/* writing fd failed: the other box's bytes are dropped */
	struct dbx_buf out;	/* decoded bytes for fd */
	uint32_t credit;	/* bytes of fd we may still send */
	uint32_t owed;		/* bytes written to fd, not yet credited */
	uint64_t rx, tx;	/* bytes read from fd, written to fd */
	int64_t input_ms;	/* when fd last gave bytes */
	struct link *link;
	struct chan *next;
	struct dbx_chunker ck;
};

struct link {
	int fd;
	bool connecting;	/* host box: connect under way */
	bool up;		/* both handshakes done */
	uint8_t hs[HS_LEN];
	size_t hs_got;
	char name[1100];
	struct dbx_buf in, out;
	struct dbx_encoder enc;
	struct dbx_decoder dec;
	bool enc_ready, dec_ready;
	struct chan *chans;
	unsigned int nchans;
	char err[200];		/* why a decoder callback refused */
	struct link *next;
};

/* Counts summed over every link this box had. */
struct box_totals {
	uint64_t links, channels;
	uint64_t link_rx;		/* link bytes received */
	struct dbx_dir_stats tx;	/* what this box encoded */
	uint64_t chan_rx, chan_tx;	/* client/server connection bytes */
};

struct box {
	const struct box_config *cfg;
	int lfd[BOX_FWD_MAX];	/* host: a listener per forward */
	int link_lfd;		/* server: the link listener */
	struct link *links;
	uint64_t instance;
	uint32_t next_chan;
	struct timespec retry_at;	/* host: next link attempt */
	bool link_logged_down;
	struct box_totals tot;
};

static volatile sig_atomic_t sig_stop, sig_stats;

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		sig_stats = 1;
	else
		sig_stop = 1;
}

static const char *side_name(const struct box *b)
{
	return b->cfg->side == SIDE_HOST ? "host" : "server";
}

static void logm(const struct box *b, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "seacache-dedupbox[%s]: %s\n", side_name(b), msg);
}

static void chan_log(const struct box *b, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (b->cfg->quiet)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	logm(b, "%s", msg);
}

int box_split_addr(const char *addr, char *host, size_t hostlen, char *port,
		   size_t portlen)
{
	const char *colon = strrchr(addr, ':');
	const char *h = addr;
	size_t hl;

	if (!colon) {
		snprintf(host, hostlen, "127.0.0.1");
		hl = 0;
		colon = addr - 1;
	} else {
		hl = (size_t)(colon - addr);
		if (hl >= 2 && addr[0] == '[' && addr[hl - 1] == ']') {
			h++;
			hl -= 2;
		}
		if (hl == 0 || hl >= hostlen)
			return -1;
		memcpy(host, h, hl);
		host[hl] = '\0';
	}
	if (!colon[1] || strlen(colon + 1) >= portlen ||
	    strspn(colon + 1, "0123456789") != strlen(colon + 1))
		return -1;
	snprintf(port, portlen, "%s", colon + 1);
	return 0;
}

static struct addrinfo *resolve(const char *addr, bool passive)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL;
	char host[256], port[16];

	if (passive)
		hints.ai_flags = AI_PASSIVE;
	if (box_split_addr(addr, host, sizeof(host), port, sizeof(port)) ||
	    getaddrinfo(host, port, &hints, &ai))
		return NULL;
	return ai;
}

static void set_nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static int listen_on(const struct box *b, const char *addr)
{
	struct addrinfo *ai = resolve(addr, true);
	int fd, one = 1;

	if (!ai) {
		logm(b, "cannot resolve listen address %s", addr);
		return -1;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 128)) {
		logm(b, "cannot listen on %s: %s", addr, strerror(errno));
		if (fd >= 0)
			close(fd);
		freeaddrinfo(ai);
		return -1;
	}
	freeaddrinfo(ai);
	return fd;
}

/* A non-blocking connect; *pending when it has not completed yet. */
static int connect_to(const char *addr, bool *pending)
{
	struct addrinfo *ai = resolve(addr, false);
	int fd;

	if (!ai) {
		errno = EINVAL;
		return -1;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) &&
	    errno != EINPROGRESS) {
		int e = errno;

		close(fd);
		fd = -1;
		errno = e;
	}
	*pending = fd >= 0;
	freeaddrinfo(ai);
	if (fd >= 0)
		set_nodelay(fd);
	return fd;
}

static int connect_result(int fd)
{
	int err = 0;
	socklen_t len = sizeof(err);

	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len))
		return errno;
	return err;
}

/* ---- statistics --------------------------------------------------------- */

static void add_dir(struct dbx_dir_stats *to, const struct dbx_dir_stats *s)
{
	to->raw_bytes += s->raw_bytes;
	to->link_bytes += s->link_bytes;
	to->lit_bytes += s->lit_bytes;
	to->new_blocks += s->new_blocks;
	to->new_bytes += s->new_bytes;
	to->ref_blocks += s->ref_blocks;
	to->ref_bytes += s->ref_bytes;
	to->evictions += s->evictions;
	to->partial_blocks += s->partial_blocks;
}

static void print_stats(const struct box *b)
{
	struct box_totals t = b->tot;
	uint64_t open = 0;

	for (const struct link *l = b->links; l; l = l->next) {
		add_dir(&t.tx, &l->enc.st);
		t.link_rx += l->dec.link_bytes;
		for (const struct chan *c = l->chans; c; c = c->next) {
			t.chan_rx += c->rx;
			t.chan_tx += c->tx;
			open++;
		}
	}
	if (b->cfg->json) {
		printf("{\"side\":\"%s\",\"dedup_writes\":%s,\"links\":%" PRIu64
		       ",\"channels\":%" PRIu64 ",\"channels_open\":%" PRIu64
		       ",\"link_tx_bytes\":%" PRIu64 ",\"link_rx_bytes\":%" PRIu64
		       ",\"conn_rx_bytes\":%" PRIu64 ",\"conn_tx_bytes\":%" PRIu64
		       ",\"literal_bytes\":%" PRIu64 ",\"new_blocks\":%" PRIu64
		       ",\"new_bytes\":%" PRIu64 ",\"ref_blocks\":%" PRIu64
		       ",\"ref_bytes\":%" PRIu64 ",\"evictions\":%" PRIu64
		       ",\"partial_blocks\":%" PRIu64 "}\n",
		       side_name(b), b->cfg->rw ? "true" : "false", t.links,
		       t.channels, open, t.tx.link_bytes, t.link_rx, t.chan_rx,
		       t.chan_tx, t.tx.lit_bytes, t.tx.new_blocks, t.tx.new_bytes,
		       t.tx.ref_blocks, t.tx.ref_bytes, t.tx.evictions,
		       t.tx.partial_blocks);
	} else {
		printf("%s box: links %" PRIu64 ", connections %" PRIu64
		       " (%" PRIu64 " open)\n"
		       "  link out %" PRIu64 " bytes for %" PRIu64
		       " bytes read from connections (literal %" PRIu64
		       ", new blocks %" PRIu64 " = %" PRIu64 " bytes, references %"
		       PRIu64 " = %" PRIu64 " bytes, evictions %" PRIu64 ")\n"
		       "  link in  %" PRIu64 " bytes for %" PRIu64
		       " bytes written to connections\n",
		       side_name(b), t.links, t.channels, open, t.tx.link_bytes,
		       t.chan_rx, t.tx.lit_bytes, t.tx.new_blocks, t.tx.new_bytes,
		       t.tx.ref_blocks, t.tx.ref_bytes, t.tx.evictions, t.link_rx,
		       t.chan_tx);
	}
	fflush(stdout);
}

/* ---- channels ----------------------------------------------------------- */

static struct chan *chan_find(struct link *l, uint32_t id)
{
	for (struct chan *c = l->chans; c; c = c->next)
		if (c->id == id)
			return c;
	return NULL;
}

static struct chan *chan_new(struct box *b, struct link *l, uint32_t id, int fd)
{
	struct chan *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->id = id;
	c->fd = fd;
	c->credit = CHAN_WINDOW;
	c->link = l;
	dbx_chunker_init(&c->ck);
	c->next = l->chans;
	l->chans = c;
	l->nchans++;
	b->tot.channels++;
	return c;
}

static void chan_free(struct box *b, struct chan *c)
{
	struct link *l = c->link;

	for (struct chan **pp = &l->chans; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	l->nchans--;
	b->tot.chan_rx += c->rx;
	b->tot.chan_tx += c->tx;
	if (c->fd >= 0)
		close(c->fd);
	dbx_buf_free(&c->out);
	free(c);
}

/* Channel c is done (both ways at their end, or its link is down): forget it. */
static void chan_close(struct box *b, struct chan *c, const char *why)
{
	chan_log(b, "connection %u closed (%s): %" PRIu64 " bytes in, %" PRIu64
		 " bytes out", c->id, why, c->rx, c->tx);
	chan_free(b, c);
}

/*
 * n of the other box's bytes for c are out of the way (written to fd, or
 * dropped as fd cannot take them): credit them back once they make half a
 * window, so the other box never waits while we drain.  -1: out of memory.
 */
static int chan_credit(struct chan *c, uint32_t n)
{
	c->owed += n;
	if (c->owed < CHAN_WINDOW / 2 || c->peer_closed)
		return 0;
	if (dbx_put_credit(&c->link->enc, &c->link->out, c->id, c->owed))
		return -1;
	c->owed = 0;
	return 0;
}

/*
 * A CLOSE is an end of stream one way: once the other box's bytes are
 * written out, fd's writing is shut; the channel ends when both ways have.
 * True when c was freed.
 */
static bool chan_finish(struct box *b, struct chan *c)
{
	if (!c->peer_closed || c->connecting || dbx_buf_pending(&c->out))
		return false;
	if (!c->shut_wr) {
		shutdown(c->fd, SHUT_WR);
		c->shut_wr = true;
	}
	if (!c->rx_eof)
		return false;
	chan_close(b, c, "end of stream both ways");
	return true;
}

/* ---- links -------------------------------------------------------------- */

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static int send_handshake(struct box *b, struct link *l)
{
	uint8_t hs[HS_LEN] = { 0 };

	memcpy(hs, HS_MAGIC, sizeof(HS_MAGIC));
	dbx_put32(hs + 8, HS_VERSION);
	dbx_put32(hs + 12, b->cfg->store_slots);
	dbx_put32(hs + 16, b->cfg->side == SIDE_HOST && b->cfg->rw ? HS_RW : 0);
	put64(hs + 24, b->instance);
	return dbx_buf_put(&l->out, hs, sizeof(hs));
}

static struct link *link_new(struct box *b, int fd, const char *name)
{
	struct link *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->fd = fd;
	snprintf(l->name, sizeof(l->name), "%s", name);
	if (send_handshake(b, l)) {
		free(l);
		return NULL;
	}
	l->next = b->links;
	b->links = l;
	return l;
}

static void link_free(struct box *b, struct link *l, const char *why)
{
	while (l->chans)
		chan_close(b, l->chans, "link down");
	if (why)
		logm(b, "link %s: %s; link closed, its connections closed, both "
		     "indexes dropped", l->name, why);
	add_dir(&b->tot.tx, &l->enc.st);
	b->tot.link_rx += l->dec.link_bytes;
	for (struct link **pp = &b->links; *pp; pp = &(*pp)->next)
		if (*pp == l) {
			*pp = l->next;
			break;
		}
	if (l->fd >= 0)
		close(l->fd);
	if (l->enc_ready)
		dbx_encoder_destroy(&l->enc);
	if (l->dec_ready)
		dbx_decoder_destroy(&l->dec);
	dbx_buf_free(&l->in);
	dbx_buf_free(&l->out);
	free(l);
	if (b->cfg->side == SIDE_HOST) {
		clock_gettime(CLOCK_MONOTONIC, &b->retry_at);
		b->retry_at.tv_nsec += RECONNECT_MS * 1000000L;
		if (b->retry_at.tv_nsec >= 1000000000L) {
			b->retry_at.tv_sec++;
			b->retry_at.tv_nsec -= 1000000000L;
		}
	}
}

/* decoder callbacks: ctx is the link's box+link pair */
struct dec_ctx {
	struct box *b;
	struct link *l;
};

static int bad(struct link *l, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(l->err, sizeof(l->err), fmt, ap);
	va_end(ap);
	return -1;
}

static bool target_allowed(const struct box *b, const char *target)
{
	for (unsigned int i = 0; i < b->cfg->nfwd; i++)
		if (!strcmp(b->cfg->fwd_target[i], target))
			return true;
	return false;
}

static int on_open(void *ctx, uint32_t ch, const char *target)
{
	struct dec_ctx *x = ctx;
	struct link *l = x->l;
	struct chan *c;
	bool pending;
	int fd;

	if (x->b->cfg->side != SIDE_SERVER)
		return bad(l, "OPEN sent to a host box");
	if (chan_find(l, ch))
		return bad(l, "OPEN of connection %u, which is open", ch);
	if (!target_allowed(x->b, target)) {
		logm(x->b, "link %s: connection %u to %s refused: not a --target",
		     l->name, ch, target);
		return dbx_put_close(&l->enc, &l->out, ch);
	}
	fd = connect_to(target, &pending);
	if (fd < 0) {
		logm(x->b, "link %s: connection %u: connect to %s: %s", l->name,
		     ch, target, strerror(errno));
		return dbx_put_close(&l->enc, &l->out, ch);
	}
	c = chan_new(x->b, l, ch, fd);
	if (!c) {
		close(fd);
		return bad(l, "out of memory");
	}
	c->connecting = pending;
	chan_log(x->b, "link %s: connection %u to %s", l->name, ch, target);
	return 0;
}

static int on_close(void *ctx, uint32_t ch)
{
	struct dec_ctx *x = ctx;
	struct chan *c = chan_find(x->l, ch);

	if (!c)
		return 0;	/* we closed it first */
	c->peer_closed = true;
	chan_finish(x->b, c);
	return 0;
}

static int on_data(void *ctx, uint32_t ch, const void *data, size_t len)
{
	struct dec_ctx *x = ctx;
	struct chan *c = chan_find(x->l, ch);

	if (!c)
		return 0;	/* closed here; the block is kept all the same */
	if (c->peer_closed)
		return bad(x->l, "connection %u: data after its end", ch);
	if (dbx_buf_pending(&c->out) + c->owed + len > CHAN_WINDOW)
		return bad(x->l, "connection %u: more data than its credit", ch);
	if (c->tx_failed)
		return chan_credit(c, (uint32_t)len) ? bad(x->l, "out of memory") : 0;
	return dbx_buf_put(&c->out, data, len) ? bad(x->l, "out of memory") : 0;
}

static int on_credit(void *ctx, uint32_t ch, uint32_t n)
{
	struct dec_ctx *x = ctx;
	struct chan *c = chan_find(x->l, ch);

	if (!c)
		return 0;
	if ((uint64_t)c->credit + n > CHAN_WINDOW)
		return bad(x->l, "connection %u: credit beyond the window", ch);
	c->credit += n;
	return 0;
}

static const struct dbx_decoder_ops dec_ops = {
	.open = on_open, .close = on_close, .data = on_data, .credit = on_credit,
};

/* The peer's handshake is in l->hs: check it, make the codec. */
static const char *handshake_done(struct box *b, struct link *l)
{
	uint32_t version = dbx_get32(l->hs + 8), slots = dbx_get32(l->hs + 12);
	uint32_t flags = dbx_get32(l->hs + 16);
	bool dedup_tx;

	if (memcmp(l->hs, HS_MAGIC, sizeof(HS_MAGIC)))
		return "not a dedup box (bad handshake)";
	if (version != HS_VERSION)
		return "handshake of another version";
	if (slots == 0 || slots > DBX_SLOTS_MAX)
		return "handshake announces a store out of range";
	if (b->cfg->side == SIDE_HOST && flags)
		return "handshake with host flags from a server box";
	dedup_tx = b->cfg->side == SIDE_SERVER || b->cfg->rw;
	if (dbx_encoder_init(&l->enc, dedup_tx, slots))
		return "out of memory for the index";
	l->enc_ready = true;
	if (dbx_decoder_init(&l->dec, b->cfg->store_slots, &dec_ops, NULL))
		return "out of memory for the store";
	l->dec_ready = true;
	l->up = true;
	b->tot.links++;
	logm(b, "link %s up: peer instance %016" PRIx64 ", a cold session "
	     "(both indexes empty), %u blocks the peer keeps, reads deduplicated, "
	     "writes %s", l->name, get64(l->hs + 24), slots,
	     (b->cfg->side == SIDE_HOST ? b->cfg->rw : (flags & HS_RW)) ?
	     "deduplicated" : "sent whole");
	return NULL;
}

/* Data arrived on a link; false when the link was closed. */
static bool link_readable(struct box *b, struct link *l)
{
	struct dec_ctx x = { b, l };
	ssize_t n;
	long used;

	if (dbx_buf_reserve(&l->in, DBX_FRAME_MAX + READ_MAX)) {
		link_free(b, l, "out of memory");
		return false;
	}
	n = read(l->fd, l->in.p + l->in.len, l->in.cap - l->in.len);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return true;
	if (n <= 0) {
		char why[120];

		if (n < 0)
			snprintf(why, sizeof(why), "read: %s", strerror(errno));
		else if (!l->up && l->hs_got < HS_LEN)
			snprintf(why, sizeof(why), "closed by the peer during the handshake");
		else if (dbx_buf_pending(&l->in))
			snprintf(why, sizeof(why), "closed by the peer in the middle "
				 "of a frame (truncated stream, %zu bytes left)",
				 dbx_buf_pending(&l->in));
		else
			snprintf(why, sizeof(why), "closed by the peer");
		link_free(b, l, why);
		return false;
	}
	l->in.len += (size_t)n;
	if (!l->up) {
		size_t take = HS_LEN - l->hs_got;
		const char *err;

		if (take > dbx_buf_pending(&l->in))
			take = dbx_buf_pending(&l->in);
		memcpy(l->hs + l->hs_got, l->in.p + l->in.off, take);
		l->hs_got += take;
		dbx_buf_consume(&l->in, take);
		if (l->hs_got < HS_LEN)
			return true;
		err = handshake_done(b, l);
		if (err) {
			link_free(b, l, err);
			return false;
		}
	}
	l->dec.ctx = &x;
	l->err[0] = '\0';
	used = dbx_decode(&l->dec, l->in.p + l->in.off, dbx_buf_pending(&l->in));
	l->dec.ctx = NULL;
	if (used < 0) {
		char why[400];

		snprintf(why, sizeof(why), "bad stream from the peer: %s",
			 used == -1 ? l->dec.err : l->err);
		link_free(b, l, why);
		return false;
	}
	dbx_buf_consume(&l->in, (size_t)used);
	return true;
}

static bool link_writable(struct box *b, struct link *l)
{
	ssize_t n;

	if (l->connecting) {
		int err = connect_result(l->fd);

		if (err) {
			if (!b->link_logged_down)
				logm(b, "link %s: connect: %s (retrying every %d ms)",
				     l->name, strerror(err), RECONNECT_MS);
			b->link_logged_down = true;
			link_free(b, l, NULL);
			return false;
		}
		l->connecting = false;
		b->link_logged_down = false;
	}
	if (!dbx_buf_pending(&l->out))
		return true;
	n = write(l->fd, l->out.p + l->out.off, dbx_buf_pending(&l->out));
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return true;
	if (n < 0) {
		char why[120];

		snprintf(why, sizeof(why), "write: %s", strerror(errno));
		link_free(b, l, why);
		return false;
	}
	dbx_buf_consume(&l->out, (size_t)n);
	return true;
}

static void host_try_link(struct box *b)
{
	struct timespec now;
	struct link *l;
	bool pending;
	int fd;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (now.tv_sec < b->retry_at.tv_sec ||
	    (now.tv_sec == b->retry_at.tv_sec && now.tv_nsec < b->retry_at.tv_nsec))
		return;
	fd = connect_to(b->cfg->link, &pending);
	if (fd < 0) {
		logm(b, "link %s: %s", b->cfg->link, strerror(errno));
		b->retry_at = now;
		b->retry_at.tv_sec += 1;
		return;
	}
	l = link_new(b, fd, b->cfg->link);
	if (!l) {
		close(fd);
		return;
	}
	l->connecting = pending;
}

/* ---- connections -------------------------------------------------------- */

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Send what chunkers have held FLUSH_MS without more input (a stream that
 * paused mid-record); the poll timeout until the next one is due, or -1.
 */
static int flush_idle(struct box *b)
{
	int64_t now = now_ms();
	int timeout = -1;

	for (struct link *l = b->links; l; l = l->next) {
		if (!l->up)
			continue;
		for (struct chan *c = l->chans; c; c = c->next) {
			int64_t due = c->input_ms + FLUSH_MS;

			if (!dbx_chunker_holds(&c->ck))
				continue;
			if (due > now) {
				if (timeout < 0 || due - now < timeout)
					timeout = (int)(due - now);
			} else if (dbx_flush(&l->enc, &c->ck, c->id, &l->out)) {
				link_free(b, l, "out of memory");
				return 0;
			}
		}
	}
	return timeout;
}

/*
 * fd gave its last byte (end of stream, or an error: a reset): what the
 * chunker holds goes to the other box, then the CLOSE, so every byte read
 * from fd is delivered.  False when the link was closed (out of memory).
 */
static bool chan_end_input(struct box *b, struct chan *c)
{
	struct link *l = c->link;

	c->rx_eof = true;
	if (dbx_flush(&l->enc, &c->ck, c->id, &l->out) ||
	    dbx_put_close(&l->enc, &l->out, c->id)) {
		link_free(b, l, "out of memory");
		return false;
	}
	return true;
}

static void chan_readable(struct box *b, struct chan *c)
{
	uint8_t buf[READ_MAX];
	size_t want = c->credit < sizeof(buf) ? c->credit : sizeof(buf);
	ssize_t n;

	if (!want || c->rx_eof)	/* a hang-up seen while we may not read */
		return;
	n = read(c->fd, buf, want);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		if (n < 0)
			chan_log(b, "connection %u: read: %s", c->id, strerror(errno));
		if (chan_end_input(b, c))
			chan_finish(b, c);
		return;
	}
	c->input_ms = now_ms();
	c->rx += (uint64_t)n;
	c->credit -= (uint32_t)n;
	if (dbx_encode(&c->link->enc, &c->ck, c->id, buf, (size_t)n, &c->link->out))
		link_free(b, c->link, "out of memory or hashing failed");
}

static void chan_writable(struct box *b, struct chan *c)
{
	struct link *l = c->link;
	ssize_t n;

	if (c->connecting) {
		int err = connect_result(c->fd);

		if (err) {
			if (chan_end_input(b, c))
				chan_close(b, c, strerror(err));
			return;
		}
		c->connecting = false;
	}
	if (dbx_buf_pending(&c->out)) {
		n = write(c->fd, c->out.p + c->out.off, dbx_buf_pending(&c->out));
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n < 0) {
			chan_log(b, "connection %u: write: %s; what it sent is still "
				 "read, what comes for it is dropped", c->id,
				 strerror(errno));
			c->tx_failed = true;
			n = (ssize_t)dbx_buf_pending(&c->out);
		} else {
			c->tx += (uint64_t)n;
		}
		dbx_buf_consume(&c->out, (size_t)n);
		if (chan_credit(c, (uint32_t)n)) {
			link_free(b, l, "out of memory");
			return;
		}
	}
	chan_finish(b, c);
}

static void host_accept(struct box *b, unsigned int i)
{
	struct link *l = b->links;
	struct chan *c;
	int fd = accept4(b->lfd[i], NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (fd < 0)
		return;
	set_nodelay(fd);
	c = chan_new(b, l, b->next_chan++, fd);
	if (!c || dbx_put_open(&l->enc, &l->out, c->id, b->cfg->fwd_target[i])) {
		logm(b, "out of memory: connection on %s refused", b->cfg->fwd_listen[i]);
		if (c)
			chan_free(b, c);
		else
			close(fd);
		return;
	}
	chan_log(b, "connection %u on %s for %s", c->id, b->cfg->fwd_listen[i],
		 b->cfg->fwd_target[i]);
}

static void server_accept(struct box *b)
{
	struct sockaddr_storage sa;
	socklen_t salen = sizeof(sa);
	char host[NI_MAXHOST], port[NI_MAXSERV], name[NI_MAXHOST + NI_MAXSERV + 2];
	int fd = accept4(b->link_lfd, (struct sockaddr *)&sa, &salen,
			 SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (fd < 0)
		return;
	set_nodelay(fd);
	if (getnameinfo((struct sockaddr *)&sa, salen, host, sizeof(host), port,
			sizeof(port), NI_NUMERICHOST | NI_NUMERICSERV))
		snprintf(name, sizeof(name), "fd %d", fd);
	else
		snprintf(name, sizeof(name), "%s:%s", host, port);
	if (!link_new(b, fd, name)) {
		logm(b, "out of memory: link from %s refused", name);
		close(fd);
	}
}

/* ---- the loop ----------------------------------------------------------- */

enum poll_kind { PK_LISTEN, PK_LINK_LISTEN, PK_LINK, PK_CHAN };

struct poll_ref {
	enum poll_kind kind;
	unsigned int fwd;
	struct link *link;
	struct chan *chan;
};

struct poll_set {
	struct pollfd *fds;
	struct poll_ref *refs;
	size_t n, cap;
};

static int poll_add(struct poll_set *s, int fd, short events, struct poll_ref ref)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		struct pollfd *f = realloc(s->fds, cap * sizeof(*f));
		struct poll_ref *r;

		if (!f)
			return -1;
		s->fds = f;
		r = realloc(s->refs, cap * sizeof(*r));
		if (!r)
			return -1;
		s->refs = r;
		s->cap = cap;
	}
	s->fds[s->n] = (struct pollfd){ .fd = fd, .events = events };
	s->refs[s->n++] = ref;
	return 0;
}

static int build_poll(struct box *b, struct poll_set *s)
{
	struct link *host_link = b->links;

	s->n = 0;
	if (b->cfg->side == SIDE_SERVER &&
	    poll_add(s, b->link_lfd, POLLIN, (struct poll_ref){ .kind = PK_LINK_LISTEN }))
		return -1;
	/* a host box takes clients while its link is up; they wait in the backlog */
	if (b->cfg->side == SIDE_HOST && host_link && host_link->up)
		for (unsigned int i = 0; i < b->cfg->nfwd; i++)
			if (poll_add(s, b->lfd[i], POLLIN,
				     (struct poll_ref){ .kind = PK_LISTEN, .fwd = i }))
				return -1;
	for (struct link *l = b->links; l; l = l->next) {
		short ev = POLLIN;
		bool link_full = dbx_buf_pending(&l->out) >= LINK_OUT_HIGH;

		if (l->connecting || dbx_buf_pending(&l->out))
			ev = l->connecting ? POLLOUT : POLLIN | POLLOUT;
		if (poll_add(s, l->fd, ev, (struct poll_ref){ .kind = PK_LINK, .link = l }))
			return -1;
		for (struct chan *c = l->chans; c; c = c->next) {
			ev = 0;
			if (c->connecting || dbx_buf_pending(&c->out))
				ev |= POLLOUT;
			if (!c->connecting && !c->rx_eof && c->credit &&
			    !link_full)
				ev |= POLLIN;
			/*
			 * Nothing to do on fd: not polled, or an error or
			 * hang-up there (a reset connection) would wake every
			 * round until there is.
			 */
			if (poll_add(s, ev ? c->fd : -1, ev,
				     (struct poll_ref){ .kind = PK_CHAN, .link = l, .chan = c }))
				return -1;
		}
	}
	return 0;
}

/* Is ref still alive?  Earlier events of this round may have freed it. */
static bool ref_alive(struct box *b, const struct poll_ref *r)
{
	for (struct link *l = b->links; l; l = l->next) {
		if (l != r->link)
			continue;
		if (r->kind == PK_LINK)
			return true;
		for (struct chan *c = l->chans; c; c = c->next)
			if (c == r->chan)
				return true;
	}
	return false;
}

static void handle(struct box *b, const struct pollfd *p, const struct poll_ref *r)
{
	short ev = p->revents;

	switch (r->kind) {
	case PK_LISTEN:
		if (b->links && b->links->up)
			host_accept(b, r->fwd);
		return;
	case PK_LINK_LISTEN:
		server_accept(b);
		return;
	case PK_LINK:
		if (!ref_alive(b, r))
			return;
		if ((ev & (POLLOUT | POLLERR | POLLHUP)) && (r->link->connecting ||
							     dbx_buf_pending(&r->link->out)))
			if (!link_writable(b, r->link))
				return;
		if (ev & (POLLIN | POLLERR | POLLHUP))
			link_readable(b, r->link);
		return;
	case PK_CHAN:
		if (!ref_alive(b, r))
			return;
		if (ev & (POLLOUT | POLLERR | POLLHUP) &&
		    (r->chan->connecting || dbx_buf_pending(&r->chan->out))) {
			chan_writable(b, r->chan);
			if (!ref_alive(b, r))
				return;
		}
		if (ev & (POLLIN | POLLERR | POLLHUP) && !r->chan->connecting)
			chan_readable(b, r->chan);
		return;
	}
}

static uint64_t make_instance(void)
{
	uint64_t v;

	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		v = (uint64_t)time(NULL) << 20 ^ (uint64_t)getpid();
	return v;
}

static int open_listeners(struct box *b)
{
	if (b->cfg->side == SIDE_SERVER) {
		b->link_lfd = listen_on(b, b->cfg->link);
		return b->link_lfd < 0 ? -1 : 0;
	}
	for (unsigned int i = 0; i < b->cfg->nfwd; i++) {
		b->lfd[i] = listen_on(b, b->cfg->fwd_listen[i]);
		if (b->lfd[i] < 0)
			return -1;
	}
	return 0;
}

int box_run(const struct box_config *cfg)
{
	struct box b = { .cfg = cfg, .link_lfd = -1 };
	struct sigaction sa = { .sa_handler = on_signal };
	struct poll_set ps = { 0 };
	sigset_t block, none;
	int rc = 0;

	for (unsigned int i = 0; i < BOX_FWD_MAX; i++)
		b.lfd[i] = -1;
	b.instance = make_instance();
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigprocmask(SIG_BLOCK, &block, &none);
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	if (open_listeners(&b)) {
		rc = 1;
		goto out;
	}
	logm(&b, "instance %016" PRIx64 ": %s %s, keeping %u blocks for the peer%s",
	     b.instance, cfg->side == SIDE_HOST ? "linking to" : "link on",
	     cfg->link, cfg->store_slots,
	     cfg->side == SIDE_HOST && cfg->rw ? ", deduplicating writes" : "");
	while (!sig_stop) {
		int timeout = flush_idle(&b);

		if (cfg->side == SIDE_HOST && !b.links) {
			host_try_link(&b);
			if (!b.links)
				timeout = RECONNECT_MS;
		}
		if (build_poll(&b, &ps)) {
			logm(&b, "out of memory");
			rc = 1;
			break;
		}
		if (ppoll(ps.fds, ps.n, timeout < 0 ? NULL :
			  &(struct timespec){ 0, timeout * 1000000L }, &none) < 0) {
			if (errno != EINTR) {
				logm(&b, "poll: %s", strerror(errno));
				rc = 1;
				break;
			}
		} else {
			for (size_t i = 0; i < ps.n; i++)
				if (ps.fds[i].revents)
					handle(&b, &ps.fds[i], &ps.refs[i]);
		}
		if (sig_stats) {
			sig_stats = 0;
			print_stats(&b);
		}
	}
out:
	while (b.links)
		link_free(&b, b.links, NULL);
	print_stats(&b);
	for (unsigned int i = 0; i < BOX_FWD_MAX; i++)
		if (b.lfd[i] >= 0)
			close(b.lfd[i]);
	if (b.link_lfd >= 0)
		close(b.link_lfd);
	free(ps.fds);
	free(ps.refs);
	return rc;
}
