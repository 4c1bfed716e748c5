// SPDX-License-Identifier: BSD-2-Clause
/*
 * A client's reply path under libFuzzer: one record's bytes are an ONC
 * RPC reply header and, for a successful call, its procedure's results.
 * The client knows the procedure from the xid of its pending call; here
 * the xid picks it: procedure xid mod the number of CSI procedures.
 *
 * Properties, each input:
 *  - the header decodes or fails with -EBADMSG or -E2BIG; a decoded
 *    header re-encodes to exactly the bytes it came from;
 *  - after an accepted SUCCESS, the rest decodes as the results with the
 *    properties of fuzz_csi_decode.c, and an accepted record (header and
 *    results) re-encodes to exactly itself.
 */
#include <stdlib.h>
#include <string.h>

#include "seacache/rpc_msg.h"
#include "fuzz_common.h"

static const struct csi_proc_info *procs[FUZZ_MAX_PROCS];
static unsigned int nprocs;

static void encode_hdr(struct sc_rpc_reply_hdr *h, uint8_t *out, size_t cap)
{
	struct sc_xdr x;

	sc_xdr_init_encode(&x, out, cap);
	sc_rpc_xdr_reply_hdr(&x, h);
	FUZZ_CHECK(!x.err && x.pos == cap,
		   "reply header: encode returned %d, %zu of %zu bytes", x.err,
		   x.pos, cap);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	const struct csi_proc_info *p;
	struct sc_rpc_reply_hdr h;
	void *msg, *arena;
	struct sc_xdr x;
	size_t hlen, pos;
	uint8_t *out;

	if (!nprocs)
		nprocs = fuzz_procs(procs);
	FUZZ_CHECK(nprocs, "no CSI procedures");
	memset(&h, 0, sizeof(h));
	sc_xdr_init_decode(&x, data, len, NULL, 0);
	sc_rpc_xdr_reply_hdr(&x, &h);
	FUZZ_CHECK(!x.err || x.err == -SC_EBADMSG || x.err == -SC_E2BIG,
		   "reply header: decode returned %d", x.err);
	if (x.err)
		return 0;
	hlen = x.pos;
	out = fuzz_alloc(hlen);
	encode_hdr(&h, out, hlen);
	fuzz_same(out, data, hlen, "reply header");
	free(out);

	if (h.reply_stat != SC_RPC_MSG_ACCEPTED ||
	    h.accept_stat != SC_RPC_SUCCESS)
		return 0;
	p = procs[h.xid % nprocs];
	if (fuzz_decode(p->res, data + hlen, len - hlen, &msg, &arena))
		return 0;
	out = fuzz_alloc(len);
	encode_hdr(&h, out, hlen);
	pos = hlen;
	fuzz_encode(p->res, msg, out, len, &pos, len - hlen);
	fuzz_same(out, data, len, p->name);
	free(out);
	free(arena);
	free(msg);
	return 0;
}

static int write_reply(const char *out, const char *name,
		       struct sc_rpc_reply_hdr *h, const uint8_t *body,
		       size_t len)
{
	struct sc_xdr x;
	size_t hlen;
	uint8_t *rec;
	int err;

	sc_xdr_init_encode(&x, NULL, 0);
	sc_rpc_xdr_reply_hdr(&x, h);
	hlen = x.pos;
	rec = fuzz_alloc(hlen + len);
	sc_xdr_init_encode(&x, rec, hlen);
	sc_rpc_xdr_reply_hdr(&x, h);
	if (len)
		memcpy(rec + hlen, body, len);
	err = x.err ? -1 : fuzz_write_seed(out, name, rec, hlen + len);
	free(rec);
	return err;
}

struct seed_ctx {
	const char *out;
	const struct csi_proc_info *proc;
	uint32_t xid;
};

static int seed(void *vctx, const char *name, const uint8_t *b, size_t len)
{
	struct seed_ctx *c = vctx;
	struct sc_rpc_reply_hdr h = {
		.xid = c->xid, .reply_stat = SC_RPC_MSG_ACCEPTED,
		.verf = { SC_RPC_AUTH_NONE, NULL, 0 },
		.accept_stat = SC_RPC_SUCCESS,
	};
	char fname[256];

	snprintf(fname, sizeof(fname), "%s-%s", c->proc->name, name);
	return write_reply(c->out, fname, &h, b, len);
}

/*
 * Each procedure's successful reply with each golden vector of its
 * results (the xid picks the procedure), and each kind of failed reply.
 */
int fuzz_write_seeds(const char *vectors, const char *out)
{
	static const struct {
		const char *name;
		struct sc_rpc_reply_hdr h;
	} fails[] = {
		{ "prog_unavail", { .accept_stat = SC_RPC_PROG_UNAVAIL } },
		{ "prog_mismatch", { .accept_stat = SC_RPC_PROG_MISMATCH,
				     .low = 1, .high = 1 } },
		{ "proc_unavail", { .accept_stat = SC_RPC_PROC_UNAVAIL } },
		{ "garbage_args", { .accept_stat = SC_RPC_GARBAGE_ARGS } },
		{ "system_err", { .accept_stat = SC_RPC_SYSTEM_ERR } },
		{ "rpc_mismatch", { .reply_stat = SC_RPC_MSG_DENIED,
				    .reject_stat = SC_RPC_MISMATCH,
				    .low = 2, .high = 2 } },
		{ "auth_tooweak", { .reply_stat = SC_RPC_MSG_DENIED,
				    .reject_stat = SC_RPC_AUTH_ERROR,
				    .auth_stat = SC_RPC_AUTH_TOOWEAK } },
	};
	struct seed_ctx c = { .out = out };
	struct sc_rpc_reply_hdr h;
	unsigned int i;

	nprocs = fuzz_procs(procs);
	for (i = 0; i < nprocs; i++) {
		c.proc = procs[i];
		c.xid = i;
		if (fuzz_each_vector(vectors, procs[i]->res, seed, &c))
			return -1;
	}
	for (i = 0; i < SC_ARRAY_SIZE(fails); i++) {
		h = fails[i].h;
		h.xid = 0x2000u + i;
		if (write_reply(out, fails[i].name, &h, NULL, 0))
			return -1;
	}
	return 0;
}
