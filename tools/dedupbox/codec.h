/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The box link's codec, without sockets: what one box sends for the bytes
 * its side's connections give it, and what the other box makes of it.
 *
 * The link carries frames; every frame names a channel (one client
 * connection).  The encoder cuts each channel's byte stream into literal
 * runs and payload blocks (chunker below) and sends a block either whole
 * (NEW: the bytes, the slot the decoder keeps them in, their SHA-256) or,
 * when the decoder already holds it, as a reference (REF: slot and
 * SHA-256).  The encoder alone decides which slot a block goes to and what
 * is evicted (LRU over the decoder's slots), so the decoder follows orders
 * and cannot drift: both indexes are a function of the one ordered frame
 * stream of the link.  The decoder checks a REF's SHA-256 against what its
 * slot holds and refuses a mismatch (a bug or a forged stream), so it
 * never hands out another block's bytes.
 *
 * Fingerprints: a block is named by its full 32-byte SHA-256 (the core's
 * sc_hasher, OpenSSL), never by a prefix; the encoder does not keep the
 * bytes it sent, so two different blocks with one SHA-256 would be sent as
 * a reference — the trust the whole project puts in SHA-256 for data it
 * does not hold (docs/design.md, "Hash collisions: the policy").
 */
#ifndef DEDUPBOX_CODEC_H
#define DEDUPBOX_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <seacache/hash.h>
#include <seacache/itab.h>
#include <seacache/lru.h>

#define DBX_BLOCK 4096u
/* The most bytes one LIT frame carries. */
#define DBX_LIT_MAX 65536u
/* The largest frame: a full LIT. */
#define DBX_FRAME_MAX (1u + 4u + 4u + DBX_LIT_MAX)
/* Slots a box may announce: 64 GiB of blocks. */
#define DBX_SLOTS_MAX (1u << 24)

enum dbx_frame_type {
	DBX_OPEN = 1,	/* host -> server: channel opened to target (a string) */
	DBX_CLOSE = 2,	/* either way: the channel's connection is closed */
	DBX_LIT = 3,	/* literal bytes */
	DBX_NEW = 4,	/* a block, kept in a slot */
	DBX_REF = 5,	/* a block the decoder holds in a slot */
	DBX_CREDIT = 6,	/* the receiver took N more bytes of the channel */
};

/* Big-endian numbers, as every frame and the handshake carry them. */
static inline void dbx_put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline uint32_t dbx_get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

/* A growable byte buffer: bytes [off, len) are pending. */
struct dbx_buf {
	uint8_t *p;
	size_t off, len, cap;
};

void dbx_buf_free(struct dbx_buf *b);
static inline size_t dbx_buf_pending(const struct dbx_buf *b)
{
	return b->len - b->off;
}
/* Room for n more bytes at p + len; 0 or -1 (out of memory). */
int dbx_buf_reserve(struct dbx_buf *b, size_t n);
int dbx_buf_put(struct dbx_buf *b, const void *data, size_t n);
void dbx_buf_consume(struct dbx_buf *b, size_t n);

/* Byte counts of one direction of a link, as its encoder sees them. */
struct dbx_dir_stats {
	uint64_t raw_bytes;	/* channel bytes in (before encoding) */
	uint64_t link_bytes;	/* frame bytes out, data and control */
	uint64_t lit_bytes;	/* raw bytes sent as literals */
	uint64_t new_blocks, new_bytes;
	uint64_t ref_blocks, ref_bytes;	/* raw bytes a REF stood for */
	uint64_t evictions;
	/*
	 * payload blocks an idle flush sent in part, as literals: never
	 * indexed, so the same block sent again later goes whole once more
	 */
	uint64_t partial_blocks;
};

/*
 * The encoder's view of the decoder's slots: SHA-256 -> slot, LRU order.
 * capacity is the slot count the decoder announced.
 */
struct dbx_index {
	uint32_t capacity, used;
	struct sc_hash *hash;
	uint64_t *key;
	struct sc_itab tab;
	struct sc_lru lru;
};

/*
 * Per channel and direction: where the chunker is in the stream.
 *
 * NFS-aware: the stream is read as ONC RPC record marking.  Of each
 * fragment the first bytes (up to DBX_SCAN) are looked at for an XDR
 * opaque that runs to the fragment's end (a READ reply's or a WRITE
 * call's data, NFSv3 or an NFSv4 COMPOUND whose last op carries it);
 * that payload is cut in 4 KiB blocks from its first byte, so the blocks
 * of a file read at 4 KiB-aligned offsets are the file's blocks.
 * Everything else is literal.  The choice only decides what may be
 * deduplicated: any stream, RPC or not, is carried exactly.
 */
#define DBX_SCAN 512u
#define DBX_PAYLOAD_MIN 1024u
struct dbx_chunker {
	enum { CK_MARK, CK_SCAN, CK_PAYLOAD, CK_LIT } state;
	uint32_t mark_len;	/* bytes of the record mark seen */
	uint8_t mark[4];
	uint32_t frag_left;	/* body bytes of the fragment not yet consumed */
	uint32_t scan_len, scan_want;
	uint32_t payload_left;	/* payload bytes not yet consumed */
	uint32_t skip;		/* payload bytes sent as literals (a flush) */
	uint32_t block_len;
	uint8_t scan[DBX_SCAN];
	uint8_t block[DBX_BLOCK];
};

/* One direction's encoder; index NULL: every byte goes as a literal. */
struct dbx_encoder {
	struct dbx_index *index;
	struct sc_hasher *hasher;
	struct dbx_dir_stats st;
};

int dbx_encoder_init(struct dbx_encoder *e, bool dedup, uint32_t slots);
void dbx_encoder_destroy(struct dbx_encoder *e);
void dbx_chunker_init(struct dbx_chunker *c);
/*
 * Encode data[0..len) of channel ch into frames appended to out.  The
 * chunker keeps what a later call needs.  0 or -1 (out of memory or
 * hashing failed).
 */
int dbx_encode(struct dbx_encoder *e, struct dbx_chunker *c, uint32_t ch,
	       const void *data, size_t len, struct dbx_buf *out);

/*
 * Send what the chunker holds (the start of a fragment it has not looked
 * at yet, part of a block) as literals: the channel ended, or its stream
 * paused there (a protocol that waits for an answer mid-record).  The
 * rest of that fragment or block goes as literals too, so the blocks after
 * it stay aligned.
 */
int dbx_flush(struct dbx_encoder *e, struct dbx_chunker *c, uint32_t ch,
	      struct dbx_buf *out);
/* True when the chunker holds bytes a dbx_flush would send. */
static inline bool dbx_chunker_holds(const struct dbx_chunker *c)
{
	return (c->state == CK_SCAN && c->scan_len) ||
	       (c->state == CK_PAYLOAD && c->block_len);
}

/* Control frames; each counts in e->st.link_bytes. */
int dbx_put_open(struct dbx_encoder *e, struct dbx_buf *out, uint32_t ch,
		 const char *target);
int dbx_put_close(struct dbx_encoder *e, struct dbx_buf *out, uint32_t ch);
int dbx_put_credit(struct dbx_encoder *e, struct dbx_buf *out, uint32_t ch,
		   uint32_t n);

/* What a decoder hands on; data is valid during the call only. */
struct dbx_decoder_ops {
	int (*open)(void *ctx, uint32_t ch, const char *target);
	int (*close)(void *ctx, uint32_t ch);
	int (*data)(void *ctx, uint32_t ch, const void *data, size_t len);
	int (*credit)(void *ctx, uint32_t ch, uint32_t n);
};

struct dbx_decoder {
	uint32_t capacity;
	uint8_t *store;		/* capacity blocks, allocated lazily */
	uint16_t *len;		/* 0: empty slot */
	struct sc_hash *hash;
	const struct dbx_decoder_ops *ops;
	void *ctx;
	uint64_t link_bytes;	/* frame bytes decoded */
	char err[160];
};

int dbx_decoder_init(struct dbx_decoder *d, uint32_t slots,
		     const struct dbx_decoder_ops *ops, void *ctx);
void dbx_decoder_destroy(struct dbx_decoder *d);
/*
 * Decode the complete frames at the start of in[0..len).  Returns the
 * bytes consumed (a partial frame is left), or -1 with d->err set for a
 * malformed frame, or -2 when a callback failed.
 */
long dbx_decode(struct dbx_decoder *d, const uint8_t *in, size_t len);

#endif /* DEDUPBOX_CODEC_H */
