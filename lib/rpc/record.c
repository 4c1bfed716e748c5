// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Record marking over TCP (see record.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "record.h"

int64_t sc_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void sc_rec_reader_init(struct sc_rec_reader *r, size_t max_record)
{
	memset(r, 0, sizeof(*r));
	r->max_record = max_record;
}

void sc_rec_reader_free(struct sc_rec_reader *r)
{
	free(r->rec);
	r->rec = NULL;
}

bool sc_rec_pending(const struct sc_rec_reader *r)
{
	return r->complete || r->stage_pos < r->stage_len;
}

bool sc_rec_started(const struct sc_rec_reader *r)
{
	return !r->complete && (r->mark_have || r->rec_len);
}

/* A fragment's mark is in: check its size against the limit. */
static int rec_start_fragment(struct sc_rec_reader *r)
{
	uint32_t v = sc_get_be32(r->mark);

	r->frag_left = v & SC_RPC_RM_LEN_MASK;
	r->last = v & SC_RPC_RM_LAST;
	return r->rec_len + r->frag_left > r->max_record ? -E2BIG : 0;
}

/* The least a record's buffer grows by (a READ call is smaller). */
#define REC_GROW_MIN 4096u

/*
 * Room for want more bytes of the fragment (want <= frag_left).  The
 * buffer doubles as the bytes arrive, never past what the fragment
 * declared: a peer that declares a 16 MiB record and sends a few bytes
 * holds a few KiB of ours, not 16 MiB, and a record that does arrive is
 * copied O(1) times a byte.
 */
static int rec_reserve(struct sc_rec_reader *r, size_t want)
{
	size_t need = r->rec_len + want, end = r->rec_len + r->frag_left;
	size_t cap = r->rec_cap * 2;
	uint8_t *p;

	if (need <= r->rec_cap)
		return 0;
	if (cap < REC_GROW_MIN)
		cap = REC_GROW_MIN;
	if (cap < need)
		cap = need;
	if (cap > end)
		cap = end;
	p = realloc(r->rec, cap);
	if (!p)
		return -ENOMEM;
	r->rec = p;
	r->rec_cap = cap;
	return 0;
}

static void rec_end_fragment(struct sc_rec_reader *r)
{
	r->mark_have = 0;
	if (r->last)
		r->complete = true;
}

/* Parse staged bytes until they run out or a record is complete. */
static int rec_parse_stage(struct sc_rec_reader *r)
{
	size_t n;
	int err;

	while (!r->complete && r->stage_pos < r->stage_len) {
		if (r->mark_have < 4) {
			r->mark[r->mark_have++] = r->stage[r->stage_pos++];
			if (r->mark_have < 4)
				continue;
			err = rec_start_fragment(r);
			if (err)
				return err;
			if (!r->frag_left)
				rec_end_fragment(r);
			continue;
		}
		n = r->stage_len - r->stage_pos;
		if (n > r->frag_left)
			n = r->frag_left;
		err = rec_reserve(r, n);
		if (err)
			return err;
		memcpy(r->rec + r->rec_len, r->stage + r->stage_pos, n);
		r->stage_pos += n;
		r->rec_len += n;
		r->frag_left -= (uint32_t)n;
		if (!r->frag_left)
			rec_end_fragment(r);
	}
	return 0;
}

int sc_rec_read(struct sc_rec_reader *r, int fd)
{
	ssize_t n;
	int err;

	for (;;) {
		err = rec_parse_stage(r);
		if (err)
			return err;
		if (r->complete) {
			/* an empty record is a buffer too, of one byte */
			if (!r->rec && !(r->rec = malloc(1)))
				return -ENOMEM;
			return 1;
		}
		if (r->mark_have == 4 && r->frag_left >= sizeof(r->stage)) {
			/* Large fragment: read straight into the record. */
			size_t room;

			err = rec_reserve(r, sizeof(r->stage));
			if (err)
				return err;
			room = r->rec_cap - r->rec_len;
			n = read(fd, r->rec + r->rec_len,
				 room < r->frag_left ? room : r->frag_left);
			if (n > 0) {
				r->rec_len += (size_t)n;
				r->frag_left -= (uint32_t)n;
				r->bytes_in += (uint64_t)n;
				if (!r->frag_left)
					rec_end_fragment(r);
				continue;
			}
		} else {
			n = read(fd, r->stage, sizeof(r->stage));
			if (n > 0) {
				r->stage_pos = 0;
				r->stage_len = (size_t)n;
				r->bytes_in += (uint64_t)n;
				continue;
			}
		}
		if (n == 0)
			return -ECONNRESET;
		if (errno == EINTR)
			continue;
		return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
	}
}

uint8_t *sc_rec_take(struct sc_rec_reader *r, size_t *len)
{
	uint8_t *rec = r->rec;

	*len = r->rec_len;
	r->rec = NULL;
	r->rec_len = 0;
	r->rec_cap = 0;
	r->complete = false;
	return rec;
}

static void rec_xdr(struct sc_xdr *x, bool is_call, void *hdr,
		    enum csi_msg body_msg, const void *body)
{
	if (is_call)
		sc_rpc_xdr_call_hdr(x, hdr);
	else
		sc_rpc_xdr_reply_hdr(x, hdr);
	/* Encoding only reads the body. */
	csi_xdr_msg(x, body_msg, (void *)body);
}

/*
 * Encode the record's body into b behind a 4-byte mark (long opaques into
 * b's segments if it has them); its length.
 */
static int rec_encode_body(bool is_call, void *hdr, enum csi_msg body_msg,
			   const void *body, struct sc_rec_buf *b, size_t *n)
{
	struct sc_xdr x;

	sc_xdr_init_encode(&x, b->p ? b->p + 4 : NULL, b->p ? b->cap - 4 : 0);
	x.segs = b->segs;
	x.max_segs = b->max_segs;
	rec_xdr(&x, is_call, hdr, body_msg, body);
	b->nsegs = x.nsegs;
	b->gathered = x.gathered;
	*n = x.pos + x.gathered;
	return x.err;
}

int sc_rec_encode(bool is_call, void *hdr, enum csi_msg body_msg,
		  const void *body, size_t max_record, struct sc_rec_buf *b)
{
	uint8_t *p;
	size_t n;
	int err = -SC_EMSGSIZE;

	b->len = 0;
	if (b->p)
		err = rec_encode_body(is_call, hdr, body_msg, body, b, &n);
	if (err == -SC_EMSGSIZE) {
		/* Measure, grow, encode again. */
		struct sc_rec_buf m = { .segs = b->segs,
					.max_segs = b->max_segs };

		err = rec_encode_body(is_call, hdr, body_msg, body, &m, &n);
		if (err)
			return err;
		if (n > max_record || n > SC_RPC_RM_LEN_MASK)
			return -E2BIG;
		p = realloc(b->p, 4 + n - m.gathered);
		if (!p)
			return -ENOMEM;
		b->p = p;
		b->cap = 4 + n - m.gathered;
		err = rec_encode_body(is_call, hdr, body_msg, body, b, &n);
	}
	if (err)
		return err;
	if (n > max_record)
		return -E2BIG;
	sc_put_be32(b->p, (uint32_t)n | SC_RPC_RM_LAST);
	b->len = 4 + n;
	return 0;
}

/* Add the part of [p, p + len) past `from` (wire offset *at) to iov. */
static int rec_iov_add(const uint8_t *p, size_t len, size_t from, size_t *at,
		       struct iovec *iov, int n)
{
	size_t skip = from > *at ? from - *at : 0;

	*at += len;
	if (skip >= len)
		return n;
	iov[n].iov_base = (void *)(p + skip);
	iov[n].iov_len = len - skip;
	return n + 1;
}

int sc_rec_buf_iov(const struct sc_rec_buf *b, size_t from, struct iovec *iov,
		   int max)
{
	size_t at = 0, flat = 0, end = b->len - b->gathered;
	unsigned int i;
	int n = 0;

	/* segment offsets count from the body, behind the mark */
	for (i = 0; i < b->nsegs && n < max; i++) {
		n = rec_iov_add(b->p + flat, 4 + b->segs[i].at - flat, from,
				&at, iov, n);
		flat = 4 + b->segs[i].at;
		if (n < max)
			n = rec_iov_add(b->segs[i].p, b->segs[i].len, from,
					&at, iov, n);
	}
	if (n < max)
		n = rec_iov_add(b->p + flat, end - flat, from, &at, iov, n);
	return n;
}

void sc_rec_buf_trim(struct sc_rec_buf *b, size_t keep)
{
	if (b->cap <= keep)
		return;
	free(b->p);
	b->p = NULL;
	b->cap = 0;
}

int sc_sockaddr_parse(const char *host, uint16_t port,
		      struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, host, &in4->sin_addr) == 1) {
		in4->sin_family = AF_INET;
		in4->sin_port = htons(port);
		*len = sizeof(*in4);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		*len = sizeof(*in6);
		return 0;
	}
	return -EINVAL;
}

int sc_write_all(int fd, const uint8_t *buf, size_t len, int64_t deadline_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	ssize_t n;
	int64_t left;

	while (len) {
		/* a peer that reset the connection is an error, not SIGPIPE */
		n = send(fd, buf, len, MSG_NOSIGNAL);
		if (n > 0) {
			buf += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		left = deadline_ms - sc_now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		if (poll(&p, 1, (int)(left > 1000 ? 1000 : left)) < 0 &&
		    errno != EINTR)
			return -errno;
	}
	return 0;
}
