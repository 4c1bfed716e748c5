/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The CSI protocol codec: encode and decode every message of
 * protocol/seacache.x, over flat buffers, in user space and in the kernel.
 *
 * Messages are named by enum csi_msg; csi_msgs[] tells each one's C struct
 * and the most arena its decoding can need.  The ONC RPC procedure tables
 * (csi_proc_find) map a call to its argument and result messages.
 */
#ifndef SEACACHE_CSI_CODEC_H
#define SEACACHE_CSI_CODEC_H

#include "csi_proto.h"
#include "xdr.h"

enum csi_msg {
	CSI_MSG_VOID,
	CSI_MSG_HELLO_ARGS,
	CSI_MSG_HELLO_RES,
	CSI_MSG_LOOKUP_ARGS,
	CSI_MSG_LOOKUP_RES,
	CSI_MSG_GETHASHES_ARGS,
	CSI_MSG_GETHASHES_RES,
	CSI_MSG_READ_ARGS,
	CSI_MSG_READ_RES,
	CSI_MSG_WRITE_ARGS,
	CSI_MSG_WRITE_RES,
	CSI_MSG_COMMIT_ARGS,
	CSI_MSG_COMMIT_RES,
	CSI_MSG_EVICT_ARGS,
	CSI_MSG_EVICT_RES,
	CSI_MSG_STATS_ARGS,
	CSI_MSG_STATS_RES,
	CSI_MSG_GETMAP_ARGS,
	CSI_MSG_GETMAP_RES,
	CSI_MSG_PEER_REPORT_ARGS,
	CSI_MSG_PEER_READ_ARGS,
	CSI_MSG_PEER_READ_RES,
	CSI_MSG_COUNT
};

struct csi_msg_info {
	const char *name;		/* "read_res" */
	size_t size;			/* of its C struct */
	/* Arena for decoding: at most per_byte * input length, and at most max. */
	size_t arena_per_byte;
	size_t arena_max;
	void (*xdr)(struct sc_xdr *x, void *msg);
};

extern const struct csi_msg_info csi_msgs[CSI_MSG_COUNT];

/* Either direction of one message, for callers that hold a struct sc_xdr. */
void csi_xdr_msg(struct sc_xdr *x, enum csi_msg m, void *msg);

/*
 * Encode msg into out[0..cap) and set *len.  out NULL: only measure.
 * -SC_EINVAL when msg breaks a protocol limit or names an unknown kind,
 * -SC_EMSGSIZE when cap is too small.
 */
int csi_encode(enum csi_msg m, const void *msg, void *out, size_t cap,
	       size_t *len);

/* Arena that decoding len bytes of message m can need at most. */
size_t csi_decode_arena_size(enum csi_msg m, size_t len);

/*
 * Decode exactly in[0..len) into msg.  Arrays go to the arena; variable
 * opaques point into in.  -SC_EBADMSG for malformed or truncated input or
 * bytes left over, -SC_E2BIG for a count over a protocol limit,
 * -SC_ENOMEM when the arena is too small.
 */
int csi_decode(enum csi_msg m, const void *in, size_t len, void *msg,
	       void *arena, size_t arena_len);

struct csi_proc_info {
	uint32_t prog;
	uint32_t proc;
	const char *name;
	enum csi_msg args;
	enum csi_msg res;
};

/* The procedure of a call, or NULL if the program or procedure is unknown. */
const struct csi_proc_info *csi_proc_find(uint32_t prog, uint32_t proc);

/*
 * One file's entry of a GET_MAP reply against the rules of PROTOCOL.md
 * §7.11, which decoding cannot check because they depend on attr.size:
 * lbn and count are the call's, block_size is B.  An SC_OK entry must
 * have exactly ceil(n / 8) bytes of holes, with the bits past n zero, and
 * n minus the holes set hashes, where n is the window cut at end of file;
 * any other status must be one a file alone can have (STALE, ACCESS, IO).
 * 0 with *nblocks = n (0 for an error entry) when the entry keeps the
 * rules, -SC_EPROTO when it breaks them, -SC_EINVAL for a block_size of 0.
 * That attr.file is the file asked for is the caller's to check.
 */
int csi_map_file_check(const struct csi_map_file *f, uint64_t lbn,
		       uint32_t count, uint32_t block_size, uint32_t *nblocks);

/* Whether block lbn + i of a checked SC_OK entry's window is a hole. */
static inline bool csi_map_is_hole(const struct csi_map_file *f, uint32_t i)
{
	return f->holes[i / 8] >> (i % 8) & 1;
}

#endif /* SEACACHE_CSI_CODEC_H */
