/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * ONC RPC version 2 message headers (RFC 5531 section 9) and TCP record
 * marking (section 11), for the CSI programs.  The body of a call or an
 * accepted reply follows its header in the same record.
 */
#ifndef SEACACHE_RPC_MSG_H
#define SEACACHE_RPC_MSG_H

#include "xdr.h"

#define SC_RPC_VERSION 2u
#define SC_RPC_MAX_AUTH_BYTES 400u
#define SC_RPC_RM_LAST 0x80000000u		/* record mark: last fragment */
#define SC_RPC_RM_LEN_MASK 0x7fffffffu

enum sc_rpc_msg_type { SC_RPC_CALL = 0, SC_RPC_REPLY = 1 };
enum sc_rpc_reply_stat { SC_RPC_MSG_ACCEPTED = 0, SC_RPC_MSG_DENIED = 1 };
enum sc_rpc_accept_stat {
	SC_RPC_SUCCESS = 0,
	SC_RPC_PROG_UNAVAIL = 1,
	SC_RPC_PROG_MISMATCH = 2,
	SC_RPC_PROC_UNAVAIL = 3,
	SC_RPC_GARBAGE_ARGS = 4,
	SC_RPC_SYSTEM_ERR = 5,
};
enum sc_rpc_reject_stat { SC_RPC_MISMATCH = 0, SC_RPC_AUTH_ERROR = 1 };
enum sc_rpc_auth_flavor { SC_RPC_AUTH_NONE = 0, SC_RPC_AUTH_SYS = 1 };
#define SC_RPC_AUTH_STAT_MAX 7u		/* AUTH_OK .. AUTH_FAILED */
#define SC_RPC_AUTH_BADCRED 1u
#define SC_RPC_AUTH_TOOWEAK 5u
#define SC_RPC_AUTH_SYS_MAX_NAME 255u
#define SC_RPC_AUTH_SYS_MAX_GIDS 16u
/* The ports a client binds for a PrivilegedPort export: SUNRPC's range. */
#define SC_RPC_RESVPORT_MIN 665u
#define SC_RPC_RESVPORT_MAX 1023u

struct sc_rpc_auth {
	uint32_t flavor;
	const uint8_t *body;		/* opaque<400>, points into the input */
	uint32_t len;
};

/*
 * An AUTH_SYS credential (authsys_parms, RFC 5531 appendix A) as the CSI
 * programs use it: who the caller says it is, which the server checks
 * against the export's rules as NFS does.  The machine name is neither
 * sent (an empty string) nor kept: nothing trusts it.
 */
struct sc_rpc_auth_sys {
	uint32_t stamp;
	uint32_t uid;
	uint32_t gid;
	uint32_t ngids;
	uint32_t gids[SC_RPC_AUTH_SYS_MAX_GIDS];
};

/* The body sc_rpc_auth_sys_encode writes: at most this many bytes. */
#define SC_RPC_AUTH_SYS_MAX_BODY (4u * (5u + SC_RPC_AUTH_SYS_MAX_GIDS))

struct sc_rpc_call_hdr {
	uint32_t xid;
	/* SC_RPC_VERSION; a server answers others with SC_RPC_MISMATCH */
	uint32_t rpcvers;
	uint32_t prog;
	uint32_t vers;
	uint32_t proc;
	struct sc_rpc_auth cred;
	struct sc_rpc_auth verf;
};

struct sc_rpc_reply_hdr {
	uint32_t xid;
	uint32_t reply_stat;		/* enum sc_rpc_reply_stat */
	/* SC_RPC_MSG_ACCEPTED */
	struct sc_rpc_auth verf;
	uint32_t accept_stat;		/* enum sc_rpc_accept_stat */
	/* PROG_MISMATCH or SC_RPC_MISMATCH: the versions supported */
	uint32_t low;
	uint32_t high;
	/* SC_RPC_MSG_DENIED */
	uint32_t reject_stat;		/* enum sc_rpc_reject_stat */
	uint32_t auth_stat;		/* SC_RPC_AUTH_ERROR */
};

/*
 * Either direction of a header, message type included.  Decoding fails
 * with -SC_EBADMSG when the message is not of the expected type or a
 * field is malformed.  The body then starts at x->pos.
 */
void sc_rpc_xdr_call_hdr(struct sc_xdr *x, struct sc_rpc_call_hdr *h);
void sc_rpc_xdr_reply_hdr(struct sc_xdr *x, struct sc_rpc_reply_hdr *h);
/*
 * A reply record's header, for every client of the CSI programs: 0 with
 * *body the offset of the results when the call was accepted and ran;
 * else -SC_EBADMSG (malformed), -SC_EACCES (auth refused), -SC_EINVAL
 * (GARBAGE_ARGS), -SC_EREMOTEIO (SYSTEM_ERR), -SC_EPROTONOSUPPORT (the
 * rest).
 */
int sc_rpc_reply_open(const uint8_t *rec, size_t len, size_t *body);
/*
 * An AUTH_SYS credential's body, which must decode exactly as
 * authsys_parms (machine name of at most 255 bytes, at most 16 groups,
 * nothing after them), into out: 0 or -SC_EBADMSG.
 */
int sc_rpc_auth_sys_decode(const struct sc_rpc_auth *a,
			   struct sc_rpc_auth_sys *out);
/*
 * s as an AUTH_SYS credential: its body written to buf (room for
 * SC_RPC_AUTH_SYS_MAX_BODY bytes, which a then points to), groups past
 * the 16 AUTH_SYS carries left out.
 */
void sc_rpc_auth_sys_encode(const struct sc_rpc_auth_sys *s, uint8_t *buf,
			    struct sc_rpc_auth *a);

#endif /* SEACACHE_RPC_MSG_H */
