// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * ONC RPC v2 call and reply headers (RFC 5531 section 9).
 */
#include "seacache/rpc_msg.h"

static void sc_rpc_xdr_auth(struct sc_xdr *x, struct sc_rpc_auth *a)
{
	sc_xdr_u32(x, &a->flavor);
	sc_xdr_var(x, &a->body, &a->len, SC_RPC_MAX_AUTH_BYTES);
}

/* The message type, which must be the one expected. */
static void sc_rpc_xdr_msg_type(struct sc_xdr *x, uint32_t type)
{
	uint32_t t = type;

	sc_xdr_enum_range(x, &t, type, type);
}

void sc_rpc_xdr_call_hdr(struct sc_xdr *x, struct sc_rpc_call_hdr *h)
{
	sc_xdr_u32(x, &h->xid);
	sc_rpc_xdr_msg_type(x, SC_RPC_CALL);
	sc_xdr_u32(x, &h->rpcvers);
	sc_xdr_u32(x, &h->prog);
	sc_xdr_u32(x, &h->vers);
	sc_xdr_u32(x, &h->proc);
	sc_rpc_xdr_auth(x, &h->cred);
	sc_rpc_xdr_auth(x, &h->verf);
}

void sc_rpc_xdr_reply_hdr(struct sc_xdr *x, struct sc_rpc_reply_hdr *h)
{
	sc_xdr_u32(x, &h->xid);
	sc_rpc_xdr_msg_type(x, SC_RPC_REPLY);
	sc_xdr_enum(x, &h->reply_stat, SC_RPC_MSG_DENIED);
	if (x->err)
		return;
	if (h->reply_stat == SC_RPC_MSG_ACCEPTED) {
		sc_rpc_xdr_auth(x, &h->verf);
		sc_xdr_enum(x, &h->accept_stat, SC_RPC_SYSTEM_ERR);
		if (!x->err && h->accept_stat == SC_RPC_PROG_MISMATCH) {
			sc_xdr_u32(x, &h->low);
			sc_xdr_u32(x, &h->high);
		}
		return;
	}
	sc_xdr_enum(x, &h->reject_stat, SC_RPC_AUTH_ERROR);
	if (x->err)
		return;
	if (h->reject_stat == SC_RPC_MISMATCH) {
		sc_xdr_u32(x, &h->low);
		sc_xdr_u32(x, &h->high);
	} else {
		sc_xdr_enum(x, &h->auth_stat, SC_RPC_AUTH_STAT_MAX);
	}
}

int sc_rpc_reply_open(const uint8_t *rec, size_t len, size_t *body)
{
	struct sc_rpc_reply_hdr h;
	struct sc_xdr x;

	sc_memset(&h, 0, sizeof(h));
	sc_xdr_init_decode(&x, rec, len, NULL, 0);
	sc_rpc_xdr_reply_hdr(&x, &h);
	if (x.err)
		return -SC_EBADMSG;
	if (h.reply_stat == SC_RPC_MSG_DENIED)
		return h.reject_stat == SC_RPC_AUTH_ERROR ? -SC_EACCES :
							    -SC_EPROTONOSUPPORT;
	switch (h.accept_stat) {
	case SC_RPC_SUCCESS:
		*body = x.pos;
		return 0;
	case SC_RPC_GARBAGE_ARGS:
		return -SC_EINVAL;
	case SC_RPC_SYSTEM_ERR:
		return -SC_EREMOTEIO;
	default:
		return -SC_EPROTONOSUPPORT;
	}
}

bool sc_rpc_auth_sys_valid(const struct sc_rpc_auth *a)
{
	const uint8_t *name;
	const void *gids;
	uint32_t stamp = 0, name_len = 0, uid = 0, gid = 0, ngids = 0;
	struct sc_xdr x;

	/* authsys_parms (RFC 5531 appendix A), and nothing after it */
	sc_xdr_init_decode(&x, a->body, a->len, NULL, 0);
	sc_xdr_u32(&x, &stamp);
	sc_xdr_string(&x, &name, &name_len, SC_RPC_AUTH_SYS_MAX_NAME);
	sc_xdr_u32(&x, &uid);
	sc_xdr_u32(&x, &gid);
	sc_xdr_fixed_array(&x, &gids, &ngids, SC_RPC_AUTH_SYS_MAX_GIDS, 4);
	return !x.err && x.pos == a->len;
}
