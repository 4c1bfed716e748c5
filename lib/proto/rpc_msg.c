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

static void sc_rpc_xdr_auth_sys(struct sc_xdr *x, struct sc_rpc_auth_sys *s)
{
	const uint8_t *name = (const uint8_t *)"";
	uint32_t name_len = 0, i;
	const void *gids = s->gids;

	sc_xdr_u32(x, &s->stamp);
	sc_xdr_string(x, &name, &name_len, SC_RPC_AUTH_SYS_MAX_NAME);
	sc_xdr_u32(x, &s->uid);
	sc_xdr_u32(x, &s->gid);
	if (x->op == SC_XDR_ENCODE) {
		/* opaque of big-endian words, so the array is written here */
		sc_xdr_u32(x, &s->ngids);
		for (i = 0; i < s->ngids; i++)
			sc_xdr_u32(x, &s->gids[i]);
		return;
	}
	sc_xdr_fixed_array(x, &gids, &s->ngids, SC_RPC_AUTH_SYS_MAX_GIDS, 4);
	for (i = 0; !x->err && i < s->ngids; i++)
		s->gids[i] = sc_get_be32((const uint8_t *)gids + 4 * i);
}

int sc_rpc_auth_sys_decode(const struct sc_rpc_auth *a,
			   struct sc_rpc_auth_sys *out)
{
	struct sc_xdr x;

	sc_memset(out, 0, sizeof(*out));
	sc_xdr_init_decode(&x, a->body, a->len, NULL, 0);
	sc_rpc_xdr_auth_sys(&x, out);
	return !x.err && x.pos == a->len ? 0 : -SC_EBADMSG;
}

void sc_rpc_auth_sys_encode(const struct sc_rpc_auth_sys *s, uint8_t *buf,
			    struct sc_rpc_auth *a)
{
	struct sc_rpc_auth_sys c = *s;
	struct sc_xdr x;

	if (c.ngids > SC_RPC_AUTH_SYS_MAX_GIDS)
		c.ngids = SC_RPC_AUTH_SYS_MAX_GIDS;
	sc_xdr_init_encode(&x, buf, SC_RPC_AUTH_SYS_MAX_BODY);
	sc_rpc_xdr_auth_sys(&x, &c);
	a->flavor = SC_RPC_AUTH_SYS;
	a->body = buf;
	a->len = (uint32_t)x.pos;
}
