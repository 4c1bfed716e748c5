/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Record marking on a non-blocking TCP socket (RFC 5531 section 11):
 * reassembles fragments into whole records, bounded in size; the encoding
 * of one RPC message into a single-fragment record; and the socket helpers
 * client and server share.
 */
#ifndef SC_RPC_RECORD_H
#define SC_RPC_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "seacache/csi_codec.h"
#include "seacache/rpc_msg.h"

struct sc_rec_reader {
	size_t max_record;
	uint8_t mark[4];
	unsigned int mark_have;
	uint32_t frag_left;
	bool last;
	bool complete;
	uint8_t *rec;			/* the record being assembled */
	size_t rec_len;
	size_t rec_cap;
	uint8_t stage[16384];		/* small reads land here first */
	size_t stage_pos;
	size_t stage_len;
	uint64_t bytes_in;
};

void sc_rec_reader_init(struct sc_rec_reader *r, size_t max_record);
void sc_rec_reader_free(struct sc_rec_reader *r);

/*
 * Read what fd has.  1: a whole record is ready (take it); 0: fd would
 * block; -ECONNRESET at end of stream; -E2BIG for a record over the
 * limit; another negative errno from read.
 */
int sc_rec_read(struct sc_rec_reader *r, int fd);
/* The ready record, now the caller's (free it); the reader starts anew. */
uint8_t *sc_rec_take(struct sc_rec_reader *r, size_t *len);
/* Whether bytes already read wait to be parsed (no need to poll first). */
bool sc_rec_pending(const struct sc_rec_reader *r);
/* Whether a record has begun (a mark's byte came) and is not complete. */
bool sc_rec_started(const struct sc_rec_reader *r);

/*
 * An outgoing record; the buffer is kept from one record to the next.
 * With segs set, long opaques stay where the message points (see struct
 * sc_xdr): the record is p with each segment inserted at its place,
 * their memory must outlive the sending.
 */
struct sc_rec_buf {
	uint8_t *p;
	size_t cap;
	size_t len;			/* of the record, mark included */
	struct sc_xdr_seg *segs;	/* NULL: the whole record is in p */
	unsigned int max_segs;
	unsigned int nsegs;
	size_t gathered;		/* bytes of len in segs */
};

/*
 * Encode an RPC header (call or reply, by is_call) plus a CSI message
 * into b as one record with its mark, straight behind the mark: no copy of
 * the body.  b grows only when the record does not fit, so a steady
 * stream of records is neither measured first nor allocated.
 */
int sc_rec_encode(bool is_call, void *hdr, enum csi_msg body_msg,
		  const void *body, size_t max_record, struct sc_rec_buf *b);
/*
 * b's record from byte `from` on as at most max iovecs (the rest for a
 * next call); their count.
 */
int sc_rec_buf_iov(const struct sc_rec_buf *b, size_t from, struct iovec *iov,
		   int max);
/*
 * Free b's buffer unless it is at most keep bytes: a buffer kept per
 * connection costs memory while idle, so only ordinary records' sizes
 * (a 256 KiB READ reply) stay.
 */
#define SC_REC_BUF_KEEP (1u << 20)
void sc_rec_buf_trim(struct sc_rec_buf *b, size_t keep);

/* Write all of buf to socket fd; poll()s for room up to deadline_ms
 * (monotonic). */
int sc_write_all(int fd, const uint8_t *buf, size_t len, int64_t deadline_ms);
int64_t sc_now_ms(void);

/* A numeric IPv4 or IPv6 address and a port; -EINVAL if not numeric. */
int sc_sockaddr_parse(const char *host, uint16_t port,
		      struct sockaddr_storage *ss, socklen_t *len);

#endif /* SC_RPC_RECORD_H */
