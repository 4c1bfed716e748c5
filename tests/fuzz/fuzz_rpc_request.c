// SPDX-License-Identifier: BSD-2-Clause
/*
 * A server's request path under libFuzzer: one record's bytes are an ONC
 * RPC call header, then the arguments of the procedure it names.
 *
 * Properties, each input:
 *  - the header decodes or fails with -EBADMSG or -E2BIG; a decoded
 *    header re-encodes to exactly the bytes it came from;
 *  - for a known procedure (csi_proc_find), the rest decodes as its
 *    arguments with the properties of fuzz_csi_decode.c, and an accepted
 *    record (header and arguments) re-encodes to exactly itself.
 *  - an AUTH_SYS credential's body decodes or fails with -EBADMSG; a
 *    decoded one has at most 16 groups and survives encode and decode
 *    unchanged (the machine name, which nothing trusts, is dropped).
 * Which versions a server answers is its business, not the decoder's:
 * every rpcvers and vers goes on to the arguments.
 */
#include <stdlib.h>
#include <string.h>

#include "seacache/rpc_msg.h"
#include "fuzz_common.h"

/* Encode h into out[0..cap), which it must fill exactly. */
static void encode_hdr(struct sc_rpc_call_hdr *h, uint8_t *out, size_t cap)
{
	struct sc_xdr x;

	sc_xdr_init_encode(&x, out, cap);
	sc_rpc_xdr_call_hdr(&x, h);
	FUZZ_CHECK(!x.err && x.pos == cap,
		   "call header: encode returned %d, %zu of %zu bytes", x.err,
		   x.pos, cap);
}

/* The credential's properties (above), for an AUTH_SYS one. */
static void check_auth_sys(const struct sc_rpc_auth *cred)
{
	struct sc_rpc_auth_sys s, again;
	uint8_t body[SC_RPC_AUTH_SYS_MAX_BODY];
	struct sc_rpc_auth a;
	int err;

	if (cred->flavor != SC_RPC_AUTH_SYS)
		return;
	memset(&s, 0, sizeof(s));
	err = sc_rpc_auth_sys_decode(cred, &s);
	FUZZ_CHECK(!err || err == -SC_EBADMSG, "AUTH_SYS: decode returned %d",
		   err);
	if (err)
		return;
	FUZZ_CHECK(s.ngids <= SC_RPC_AUTH_SYS_MAX_GIDS, "AUTH_SYS: %u groups",
		   s.ngids);
	sc_rpc_auth_sys_encode(&s, body, &a);
	memset(&again, 0, sizeof(again));
	FUZZ_CHECK(!sc_rpc_auth_sys_decode(&a, &again) &&
		   !memcmp(&again, &s, sizeof(s)),
		   "AUTH_SYS: uid %u gid %u, %u groups do not survive encoding",
		   s.uid, s.gid, s.ngids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	const struct csi_proc_info *p;
	struct sc_rpc_call_hdr h;
	void *msg, *arena;
	struct sc_xdr x;
	size_t hlen, pos;
	uint8_t *out;

	memset(&h, 0, sizeof(h));
	sc_xdr_init_decode(&x, data, len, NULL, 0);
	sc_rpc_xdr_call_hdr(&x, &h);
	FUZZ_CHECK(!x.err || x.err == -SC_EBADMSG || x.err == -SC_E2BIG,
		   "call header: decode returned %d", x.err);
	if (x.err)
		return 0;
	hlen = x.pos;
	out = fuzz_alloc(hlen);
	encode_hdr(&h, out, hlen);
	fuzz_same(out, data, hlen, "call header");
	free(out);
	check_auth_sys(&h.cred);

	p = csi_proc_find(h.prog, h.proc);
	if (!p || fuzz_decode(p->args, data + hlen, len - hlen, &msg, &arena))
		return 0;
	out = fuzz_alloc(len);
	encode_hdr(&h, out, hlen);
	pos = hlen;
	fuzz_encode(p->args, msg, out, len, &pos, len - hlen);
	fuzz_same(out, data, len, p->name);
	free(out);
	free(arena);
	free(msg);
	return 0;
}

struct seed_ctx {
	const char *out;
	const struct csi_proc_info *proc;
	uint32_t xid;
	bool sys;			/* AUTH_SYS credentials, else none */
};

/* An AUTH_SYS body (RFC 5531 appendix A): stamp, machine, uid, gid, gids. */
static const uint8_t auth_sys[] = {
	0, 0, 0, 1, 0, 0, 0, 11, 'v', 'd', 'i', '-', 'h', 'o', 's', 't',
	'-', '0', '1', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0,
};

static int seed(void *vctx, const char *name, const uint8_t *b, size_t len)
{
	struct seed_ctx *c = vctx;
	struct sc_rpc_call_hdr h = {
		.xid = c->xid++, .rpcvers = SC_RPC_VERSION,
		.prog = c->proc->prog, .vers = CSI_VERS, .proc = c->proc->proc,
		.cred = { SC_RPC_AUTH_NONE, NULL, 0 },
		.verf = { SC_RPC_AUTH_NONE, NULL, 0 },
	};
	char fname[256];
	struct sc_xdr x;
	size_t hlen;
	uint8_t *rec;
	int err;

	if (c->sys) {
		h.cred.flavor = SC_RPC_AUTH_SYS;
		h.cred.body = auth_sys;
		h.cred.len = sizeof(auth_sys);
	}
	sc_xdr_init_encode(&x, NULL, 0);
	sc_rpc_xdr_call_hdr(&x, &h);
	hlen = x.pos;
	rec = fuzz_alloc(hlen + len);
	sc_xdr_init_encode(&x, rec, hlen);
	sc_rpc_xdr_call_hdr(&x, &h);
	if (len)
		memcpy(rec + hlen, b, len);
	snprintf(fname, sizeof(fname), "%s-%s-%s", c->proc->name, name,
		 h.cred.flavor == SC_RPC_AUTH_SYS ? "sys" : "none");
	err = x.err ? -1 : fuzz_write_seed(c->out, fname, rec, hlen + len);
	free(rec);
	return err;
}

/* Each procedure's call with each golden vector of its arguments. */
int fuzz_write_seeds(const char *vectors, const char *out)
{
	const struct csi_proc_info *procs[FUZZ_MAX_PROCS];
	unsigned int i, n = fuzz_procs(procs);
	struct seed_ctx c = { .out = out };

	for (i = 0; i < n; i++) {
		c.proc = procs[i];
		c.xid = 0x1000u * (i + 1);
		c.sys = false;
		if (fuzz_each_vector(vectors, procs[i]->args, seed, &c))
			return -1;
		c.sys = true;
		if (fuzz_each_vector(vectors, procs[i]->args, seed, &c))
			return -1;
	}
	return 0;
}
