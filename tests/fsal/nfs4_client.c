// SPDX-License-Identifier: BSD-2-Clause
/*
 * A minimal NFSv4.1/4.2 client: see nfs4_client.h.  XDR and the RPC
 * headers are the core's (seacache/xdr.h, seacache/rpc_msg.h); the NFSv4
 * operations are those of RFC 8881 and RFC 7862, encoded here for just
 * the arguments the tests use.
 */
#include "nfs4_client.h"
#include "nfs_harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <seacache/rpc_msg.h>

#define NFS_PROGRAM 100003u
#define NFS_V4 4u
#define NFSPROC4_COMPOUND 1u

enum {
	OP_CLOSE = 4,
	OP_GETATTR = 9,
	OP_GETFH = 10,
	OP_LOCK = 12,
	OP_LOCKT = 13,
	OP_LOCKU = 14,
	OP_LOOKUP = 15,
	OP_OPEN = 18,
	OP_OPEN_DOWNGRADE = 21,
	OP_PUTFH = 22,
	OP_PUTROOTFH = 24,
	OP_READ = 25,
	OP_WRITE = 38,
	OP_EXCHANGE_ID = 42,
	OP_CREATE_SESSION = 43,
	OP_DESTROY_SESSION = 44,
	OP_SEQUENCE = 53,
	OP_DESTROY_CLIENTID = 57,
	OP_RECLAIM_COMPLETE = 58,
	OP_ALLOCATE = 59,
	OP_DEALLOCATE = 62,
	OP_SEEK = 69,
};

#define FATTR4_SIZE 4
#define FATTR4_MODE 33
#define EXCHGID4_FLAG_USE_NON_PNFS 0x00010000u
#define CALL_MAX (160u * 1024)
#define REPLY_MAX (1024u * 1024)

struct n4_client {
	int fd;
	uint32_t minor;
	uint32_t xid;
	uint64_t clientid;
	uint8_t sessionid[16];
	uint32_t slot_seq;
	bool session;
	uint8_t *call;			/* record mark + call */
	uint8_t *reply;
};

/* One COMPOUND: encoded into c->call, then its reply decoded. */
struct compound {
	struct n4_client *c;
	struct sc_xdr x;
	uint32_t nops;
	size_t nops_pos;
	uint32_t on_op;			/* begin_on()'s operation */
};

static void put32(struct compound *k, uint32_t v)
{
	sc_xdr_u32(&k->x, &v);
}

static void put64(struct compound *k, uint64_t v)
{
	sc_xdr_u64(&k->x, &v);
}

static void put_opaque(struct compound *k, const void *p, uint32_t len)
{
	const uint8_t *b = p;

	sc_xdr_var(&k->x, &b, &len, UINT32_MAX);
}

static void put_string(struct compound *k, const char *s)
{
	put_opaque(k, s, (uint32_t)strlen(s));
}

static void put_stateid(struct compound *k, const struct n4_stateid *sid)
{
	put32(k, sid->seqid);
	sc_xdr_fixed(&k->x, (void *)sid->other, sizeof(sid->other));
}

static uint32_t get32(struct compound *k)
{
	uint32_t v = 0;

	sc_xdr_u32(&k->x, &v);
	return v;
}

static uint64_t get64(struct compound *k)
{
	uint64_t v = 0;

	sc_xdr_u64(&k->x, &v);
	return v;
}

static const uint8_t *get_opaque(struct compound *k, uint32_t *len)
{
	const uint8_t *p = NULL;

	sc_xdr_var(&k->x, &p, len, UINT32_MAX);
	return p;
}

static void skip(struct compound *k, size_t n)
{
	(void)sc_xdr_take(&k->x, (n + 3) & ~(size_t)3);
}

static void get_stateid(struct compound *k, struct n4_stateid *sid)
{
	sid->seqid = get32(k);
	sc_xdr_fixed(&k->x, sid->other, sizeof(sid->other));
}

static void op(struct compound *k, uint32_t opcode)
{
	put32(k, opcode);
	k->nops++;
}

static void begin(struct n4_client *c, struct compound *k)
{
	uint8_t cred[64];
	struct sc_xdr a;
	struct sc_rpc_call_hdr h = {
		.xid = ++c->xid,
		.rpcvers = SC_RPC_VERSION,
		.prog = NFS_PROGRAM,
		.vers = NFS_V4,
		.proc = NFSPROC4_COMPOUND,
		.cred = { .flavor = SC_RPC_AUTH_SYS, .body = cred },
		.verf = { .flavor = SC_RPC_AUTH_NONE },
	};
	const uint8_t *name = (const uint8_t *)"sc-test";
	uint32_t zero = 0, namelen = 7;

	/* authsys_parms: stamp, machine name, uid 0, gid 0, no more gids */
	sc_xdr_init_encode(&a, cred, sizeof(cred));
	sc_xdr_u32(&a, &zero);
	sc_xdr_var(&a, &name, &namelen, SC_RPC_AUTH_SYS_MAX_NAME);
	sc_xdr_u32(&a, &zero);
	sc_xdr_u32(&a, &zero);
	sc_xdr_u32(&a, &zero);
	h.cred.len = (uint32_t)a.pos;

	memset(k, 0, sizeof(*k));
	k->c = c;
	sc_xdr_init_encode(&k->x, c->call + 4, CALL_MAX - 4);
	sc_rpc_xdr_call_hdr(&k->x, &h);
	put_opaque(k, NULL, 0);		/* tag */
	put32(k, c->minor);
	k->nops_pos = k->x.pos;
	put32(k, 0);			/* the count, set by call() */
	if (c->session) {
		op(k, OP_SEQUENCE);
		sc_xdr_fixed(&k->x, c->sessionid, sizeof(c->sessionid));
		put32(k, c->slot_seq);
		put32(k, 0);		/* slot */
		put32(k, 0);		/* highest slot */
		put32(k, 0);		/* cachethis */
	}
}

static int read_full(int fd, void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len > 0) {
		ssize_t n = read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n == 0 ? -ECONNRESET : -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int write_full(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len > 0) {
		/* a server that went away is an error, not SIGPIPE */
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * Sends the compound and reads its reply, leaving k->x at the first
 * operation's result after SEQUENCE's.  0, the compound's status when
 * SEQUENCE itself failed, or a negative errno.
 */
static int call(struct compound *k)
{
	struct n4_client *c = k->c;
	size_t len = 0, body;
	uint32_t mark, frag, xid;
	int rc;

	if (k->x.err) {
		fprintf(stderr, "nfs4-client: encoding failed (%d)\n", k->x.err);
		return -EMSGSIZE;
	}
	sc_put_be32(c->call + 4 + k->nops_pos, k->nops);
	sc_put_be32(c->call, SC_RPC_RM_LAST | (uint32_t)k->x.pos);
	rc = write_full(c->fd, c->call, 4 + k->x.pos);
	do {
		if (rc == 0)
			rc = read_full(c->fd, &mark, 4);
		if (rc == 0) {
			mark = ntohl(mark);
			frag = mark & SC_RPC_RM_LEN_MASK;
			if (frag > REPLY_MAX - len)
				rc = -EMSGSIZE;
		}
		if (rc == 0)
			rc = read_full(c->fd, c->reply + len, frag);
		if (rc == 0)
			len += frag;
	} while (rc == 0 && !(mark & SC_RPC_RM_LAST));
	if (rc < 0) {
		fprintf(stderr, "nfs4-client: call: %s\n", strerror(-rc));
		return rc;
	}
	xid = len >= 4 ? sc_get_be32(c->reply) : 0;
	rc = xid == c->xid ? sc_rpc_reply_open(c->reply, len, &body) : -EBADMSG;
	if (rc < 0) {
		fprintf(stderr, "nfs4-client: reply refused or malformed (%d)\n", rc);
		return -EPROTO;
	}
	sc_xdr_init_decode(&k->x, c->reply + body, len - body, NULL, 0);
	(void)get32(k);			/* the compound's status */
	(void)get_opaque(k, &mark);	/* tag */
	(void)get32(k);			/* results */
	if (!c->session)
		return k->x.err ? -EBADMSG : 0;
	if (get32(k) != OP_SEQUENCE)
		return -EBADMSG;
	rc = (int)get32(k);
	if (rc == 0) {
		c->slot_seq++;
		skip(k, 16 + 5 * 4);
	}
	return k->x.err ? -EBADMSG : rc;
}

/* The status of the next result, which must be of operation OPCODE. */
static int res(struct compound *k, uint32_t opcode)
{
	uint32_t got = get32(k), status = get32(k);

	if (k->x.err || got != opcode) {
		fprintf(stderr, "nfs4-client: result of op %u, want op %u\n", got,
			opcode);
		return -EBADMSG;
	}
	return (int)status;
}

/* The end of a reply: the status of a malformed one. */
static int done(struct compound *k)
{
	return k->x.err ? -EBADMSG : 0;
}

/* Sends K, then takes the results of the operations in OPS (0-ended). */
static int run(struct compound *k, const uint32_t *ops)
{
	int rc = call(k);

	for (; rc == 0 && *ops; ops++)
		rc = res(k, *ops);
	return rc;
}

static void op_putfh(struct compound *k, const struct n4_fh *fh)
{
	op(k, OP_PUTFH);
	put_opaque(k, fh->val, fh->len);
}

/* A compound of PUTFH FH, then OPCODE, whose arguments the caller adds. */
static void begin_on(struct n4_client *c, struct compound *k,
		     const struct n4_fh *fh, uint32_t opcode)
{
	begin(c, k);
	op_putfh(k, fh);
	op(k, opcode);
	k->on_op = opcode;
}

/* Sends a begin_on() compound: 0 with the results of its OPCODE next. */
static int run_on(struct compound *k)
{
	const uint32_t ops[] = { OP_PUTFH, k->on_op, 0 };

	return run(k, ops);
}

/* run_on() for an operation whose result is a stateid: into *sid. */
static int run_on_stateid(struct compound *k, struct n4_stateid *sid)
{
	int rc = run_on(k);

	if (rc != 0)
		return rc;
	get_stateid(k, sid);
	return done(k);
}

static int get_fh(struct compound *k, struct n4_fh *fh)
{
	const uint8_t *p;
	uint32_t len;

	p = get_opaque(k, &len);
	if (k->x.err || len > sizeof(fh->val))
		return -EBADMSG;
	fh->len = len;
	memcpy(fh->val, p, len);
	return 0;
}

static int setup_client(struct n4_client *c, const char *name)
{
	static const uint32_t ex_ops[] = { OP_EXCHANGE_ID, 0 };
	static const uint32_t cs_ops[] = { OP_CREATE_SESSION, 0 };
	static const uint32_t rc_ops[] = { OP_RECLAIM_COMPLETE, 0 };
	uint8_t verifier[8] = { 's', 'c' };
	struct compound k;
	uint32_t seq;
	int i, rc;

	begin(c, &k);
	op(&k, OP_EXCHANGE_ID);
	sc_xdr_fixed(&k.x, verifier, sizeof(verifier));
	put_string(&k, name);
	put32(&k, EXCHGID4_FLAG_USE_NON_PNFS);
	put32(&k, 0);			/* SP4_NONE */
	put32(&k, 0);			/* no implementation id */
	rc = run(&k, ex_ops);
	if (rc != 0)
		return rc;
	c->clientid = get64(&k);
	seq = get32(&k);
	if ((rc = done(&k)) != 0)
		return rc;

	begin(c, &k);
	op(&k, OP_CREATE_SESSION);
	put64(&k, c->clientid);
	put32(&k, seq);
	put32(&k, 0);			/* flags: no back channel */
	for (i = 0; i < 2; i++) {	/* fore and back channel attributes */
		put32(&k, 0);		/* header padding */
		put32(&k, CALL_MAX);
		put32(&k, REPLY_MAX / 2);
		put32(&k, 4096);	/* cached replies */
		put32(&k, 16);		/* operations */
		put32(&k, 1);		/* slots */
		put32(&k, 0);		/* no RDMA */
	}
	put32(&k, 0x40000000);		/* callback program */
	put32(&k, 1);			/* callback security: AUTH_NONE */
	put32(&k, 0);
	rc = run(&k, cs_ops);
	if (rc != 0)
		return rc;
	sc_xdr_fixed(&k.x, c->sessionid, sizeof(c->sessionid));
	if ((rc = done(&k)) != 0)
		return rc;
	c->session = true;
	c->slot_seq = 1;

	begin(c, &k);
	op(&k, OP_RECLAIM_COMPLETE);
	put32(&k, 0);			/* not for one file system */
	return run(&k, rc_ops);
}

struct n4_client *n4_connect(uint32_t minor, const char *name)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct n4_client *c = calloc(1, sizeof(*c));
	int rc;

	if (!c)
		return NULL;
	c->minor = minor;
	c->call = malloc(CALL_MAX);
	c->reply = malloc(REPLY_MAX);
	c->fd = socket(AF_INET, SOCK_STREAM, 0);
	sa.sin_port = htons((uint16_t)atoi(nh_env("NFS_PORT")));
	if (!c->call || !c->reply || c->fd < 0 ||
	    inet_pton(AF_INET, nh_env("NFS_SERVER"), &sa.sin_addr) != 1 ||
	    connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		fprintf(stderr, "nfs4-client: cannot connect: %s\n", strerror(errno));
		n4_disconnect(c);
		return NULL;
	}
	rc = setup_client(c, name);
	if (rc != 0) {
		fprintf(stderr, "nfs4-client: setting up client %s (v4.%u): %s (%d)\n",
			name, minor, n4_status_name(rc), rc);
		n4_disconnect(c);
		return NULL;
	}
	return c;
}

void n4_disconnect(struct n4_client *c)
{
	struct compound k;

	if (!c)
		return;
	if (c->session) {
		/* Each alone in its compound, without SEQUENCE. */
		c->session = false;
		begin(c, &k);
		op(&k, OP_DESTROY_SESSION);
		sc_xdr_fixed(&k.x, c->sessionid, sizeof(c->sessionid));
		(void)call(&k);
		begin(c, &k);
		op(&k, OP_DESTROY_CLIENTID);
		put64(&k, c->clientid);
		(void)call(&k);
	}
	if (c->fd >= 0)
		close(c->fd);
	free(c->call);
	free(c->reply);
	free(c);
}

int n4_lookup(struct n4_client *c, const char *path, struct n4_fh *fh)
{
	char comp[256];
	struct compound k;
	uint32_t n = 0;
	const char *p;
	int rc;

	begin(c, &k);
	op(&k, OP_PUTROOTFH);
	for (p = path; *p; p += strcspn(p, "/")) {
		size_t len;

		p += strspn(p, "/");
		len = strcspn(p, "/");
		if (len == 0 || len >= sizeof(comp))
			break;
		memcpy(comp, p, len);
		comp[len] = '\0';
		op(&k, OP_LOOKUP);
		put_string(&k, comp);
		n++;
	}
	op(&k, OP_GETFH);
	rc = call(&k);
	if (rc == 0)
		rc = res(&k, OP_PUTROOTFH);
	while (rc == 0 && n-- > 0)
		rc = res(&k, OP_LOOKUP);
	if (rc == 0)
		rc = res(&k, OP_GETFH);
	return rc ? rc : get_fh(&k, fh);
}

/* open_delegation4 of an OPEN's result: only "none" is expected. */
static int skip_delegation(struct compound *k)
{
	uint32_t type = get32(k), why;

	switch (type) {
	case 0:				/* OPEN_DELEGATE_NONE */
		return done(k);
	case 3:				/* OPEN_DELEGATE_NONE_EXT */
		why = get32(k);
		if (why == 1 || why == 2)	/* CONTENTION, RESOURCE */
			(void)get32(k);
		return done(k);
	default:
		fprintf(stderr, "nfs4-client: OPEN granted delegation type %u\n",
			type);
		return -EBADMSG;
	}
}

int n4_open(struct n4_client *c, const struct n4_fh *dir, const char *name,
	    const char *owner, uint32_t access, uint32_t deny, bool create,
	    struct n4_stateid *sid, struct n4_fh *fh)
{
	return n4_open_how(c, dir, name, owner, access, deny,
			   create ? N4_UNCHECKED : N4_NOCREATE, NULL, sid, fh);
}

/* fattr4 of the mode 0644 only. */
static void put_mode_attr(struct compound *k)
{
	uint8_t mode[4];

	put32(k, 2);			/* bitmap: two words, mode in the second */
	put32(k, 0);
	put32(k, 1u << (FATTR4_MODE - 32));
	sc_put_be32(mode, 0644);
	put_opaque(k, mode, sizeof(mode));
}

int n4_open_how(struct n4_client *c, const struct n4_fh *dir, const char *name,
		const char *owner, uint32_t access, uint32_t deny,
		enum n4_create how, const uint8_t *verifier,
		struct n4_stateid *sid, struct n4_fh *fh)
{
	struct compound k;
	uint32_t n;
	int rc;

	begin_on(c, &k, dir, OP_OPEN);
	put32(&k, 0);			/* seqid: unused in v4.1 */
	put32(&k, access);
	put32(&k, deny);
	put64(&k, c->clientid);
	put_string(&k, owner);
	put32(&k, how != N4_NOCREATE);	/* OPEN4_CREATE / OPEN4_NOCREATE */
	switch (how) {
	case N4_NOCREATE:
		break;
	case N4_UNCHECKED:
	case N4_GUARDED:
		put32(&k, how == N4_UNCHECKED ? 0 : 1);
		put_mode_attr(&k);
		break;
	case N4_EXCLUSIVE41:
		put32(&k, 3);		/* EXCLUSIVE4_1: verifier, attributes */
		sc_xdr_fixed(&k.x, (void *)verifier, 8);
		put_mode_attr(&k);
		break;
	}
	put32(&k, 0);			/* CLAIM_NULL */
	put_string(&k, name);
	op(&k, OP_GETFH);
	rc = run_on(&k);
	if (rc != 0)
		return rc;
	get_stateid(&k, sid);
	skip(&k, 4 + 8 + 8 + 4);	/* change_info4, rflags */
	n = get32(&k);			/* attrset */
	skip(&k, (size_t)n * 4);
	rc = skip_delegation(&k);
	if (rc == 0)
		rc = res(&k, OP_GETFH);
	return rc ? rc : get_fh(&k, fh);
}

int n4_close(struct n4_client *c, const struct n4_fh *fh,
	     struct n4_stateid *sid)
{
	struct compound k;

	begin_on(c, &k, fh, OP_CLOSE);
	put32(&k, 0);
	put_stateid(&k, sid);
	return run_on_stateid(&k, sid);
}

int n4_open_downgrade(struct n4_client *c, const struct n4_fh *fh,
		      struct n4_stateid *sid, uint32_t access, uint32_t deny)
{
	struct compound k;

	begin_on(c, &k, fh, OP_OPEN_DOWNGRADE);
	put_stateid(&k, sid);
	put32(&k, 0);
	put32(&k, access);
	put32(&k, deny);
	return run_on_stateid(&k, sid);
}

int n4_write(struct n4_client *c, const struct n4_fh *fh,
	     const struct n4_stateid *sid, uint64_t off, const void *buf,
	     uint32_t len, bool stable)
{
	struct compound k;
	uint32_t count;
	int rc;

	begin_on(c, &k, fh, OP_WRITE);
	put_stateid(&k, sid);
	put64(&k, off);
	put32(&k, stable ? 2 : 0);	/* FILE_SYNC4, UNSTABLE4 */
	put_opaque(&k, buf, len);
	rc = run_on(&k);
	if (rc != 0)
		return rc;
	count = get32(&k);
	if (done(&k) == 0 && count != len) {
		fprintf(stderr, "nfs4-client: WRITE wrote %u of %u bytes\n", count, len);
		return -EIO;
	}
	return done(&k);
}

int n4_read(struct n4_client *c, const struct n4_fh *fh,
	    const struct n4_stateid *sid, uint64_t off, void *buf,
	    uint32_t len, uint32_t *got)
{
	struct compound k;
	const uint8_t *p;
	uint32_t n;
	int rc;

	begin_on(c, &k, fh, OP_READ);
	put_stateid(&k, sid);
	put64(&k, off);
	put32(&k, len);
	rc = run_on(&k);
	if (rc != 0)
		return rc;
	(void)get32(&k);		/* eof */
	p = get_opaque(&k, &n);
	if (done(&k) != 0 || n > len)
		return -EBADMSG;
	if (n)
		memcpy(buf, p, n);
	*got = n;
	return 0;
}

/* nfs_lock_type4: READ_LT, WRITE_LT */
static uint32_t lock_type(bool write)
{
	return write ? 2 : 1;
}

int n4_lock(struct n4_client *c, const struct n4_fh *fh,
	    const struct n4_stateid *open_sid, const char *owner, bool new_owner,
	    bool write, uint64_t off, uint64_t len, struct n4_stateid *lock_sid)
{
	struct compound k;

	begin_on(c, &k, fh, OP_LOCK);
	put32(&k, lock_type(write));
	put32(&k, 0);			/* not a reclaim */
	put64(&k, off);
	put64(&k, len);
	put32(&k, new_owner);
	if (new_owner) {
		put32(&k, 0);		/* open seqid: unused in v4.1 */
		put_stateid(&k, open_sid);
		put32(&k, 0);		/* lock seqid */
		put64(&k, c->clientid);
		put_string(&k, owner);
	} else {
		put_stateid(&k, lock_sid);
		put32(&k, 0);
	}
	return run_on_stateid(&k, lock_sid);
}

int n4_lockt(struct n4_client *c, const struct n4_fh *fh, const char *owner,
	     bool write, uint64_t off, uint64_t len)
{
	struct compound k;
	int rc;

	begin_on(c, &k, fh, OP_LOCKT);
	put32(&k, lock_type(write));
	put64(&k, off);
	put64(&k, len);
	put64(&k, c->clientid);
	put_string(&k, owner);
	rc = run_on(&k);
	return rc ? rc : done(&k);
}

int n4_locku(struct n4_client *c, const struct n4_fh *fh,
	     struct n4_stateid *lock_sid, uint64_t off, uint64_t len)
{
	struct compound k;

	begin_on(c, &k, fh, OP_LOCKU);
	put32(&k, lock_type(true));
	put32(&k, 0);
	put_stateid(&k, lock_sid);
	put64(&k, off);
	put64(&k, len);
	return run_on_stateid(&k, lock_sid);
}

static int alloc_op(struct n4_client *c, uint32_t opcode,
		    const struct n4_fh *fh, const struct n4_stateid *sid,
		    uint64_t off, uint64_t len)
{
	struct compound k;
	int rc;

	begin_on(c, &k, fh, opcode);
	put_stateid(&k, sid);
	put64(&k, off);
	put64(&k, len);
	rc = run_on(&k);
	return rc ? rc : done(&k);
}

int n4_allocate(struct n4_client *c, const struct n4_fh *fh,
		const struct n4_stateid *sid, uint64_t off, uint64_t len)
{
	return alloc_op(c, OP_ALLOCATE, fh, sid, off, len);
}

int n4_deallocate(struct n4_client *c, const struct n4_fh *fh,
		  const struct n4_stateid *sid, uint64_t off, uint64_t len)
{
	return alloc_op(c, OP_DEALLOCATE, fh, sid, off, len);
}

int n4_seek(struct n4_client *c, const struct n4_fh *fh,
	    const struct n4_stateid *sid, uint64_t off, uint32_t what,
	    bool *eof, uint64_t *found)
{
	struct compound k;
	int rc;

	begin_on(c, &k, fh, OP_SEEK);
	put_stateid(&k, sid);
	put64(&k, off);
	put32(&k, what);
	rc = run_on(&k);
	if (rc != 0)
		return rc;
	*eof = get32(&k) != 0;
	*found = get64(&k);
	return done(&k);
}

int n4_size(struct n4_client *c, const struct n4_fh *fh, uint64_t *size)
{
	struct compound k;
	uint32_t n, len;
	int rc;

	begin_on(c, &k, fh, OP_GETATTR);
	put32(&k, 1);
	put32(&k, 1u << FATTR4_SIZE);
	rc = run_on(&k);
	if (rc != 0)
		return rc;
	n = get32(&k);			/* bitmap words: only SIZE is set */
	skip(&k, (size_t)n * 4);
	(void)get_opaque(&k, &len);
	if (done(&k) != 0 || len != 8)
		return -EBADMSG;
	*size = sc_get_be64(k.x.in + k.x.pos - 8);
	return 0;
}

const char *n4_status_name(int status)
{
	static const struct {
		int status;
		const char *name;
	} names[] = {
		{ N4_OK, "NFS4_OK" },
		{ N4ERR_NOENT, "NFS4ERR_NOENT" },
		{ N4ERR_IO, "NFS4ERR_IO" },
		{ N4ERR_NXIO, "NFS4ERR_NXIO" },
		{ N4ERR_ACCESS, "NFS4ERR_ACCESS" },
		{ N4ERR_EXIST, "NFS4ERR_EXIST" },
		{ N4ERR_ISDIR, "NFS4ERR_ISDIR" },
		{ N4ERR_INVAL, "NFS4ERR_INVAL" },
		{ N4ERR_FBIG, "NFS4ERR_FBIG" },
		{ N4ERR_NAMETOOLONG, "NFS4ERR_NAMETOOLONG" },
		{ N4ERR_NOTSUPP, "NFS4ERR_NOTSUPP" },
		{ N4ERR_SERVERFAULT, "NFS4ERR_SERVERFAULT" },
		{ N4ERR_DENIED, "NFS4ERR_DENIED" },
		{ N4ERR_LOCKED, "NFS4ERR_LOCKED" },
		{ N4ERR_SHARE_DENIED, "NFS4ERR_SHARE_DENIED" },
		{ N4ERR_OPENMODE, "NFS4ERR_OPENMODE" },
		{ N4ERR_BAD_STATEID, "NFS4ERR_BAD_STATEID" },
		{ N4ERR_SYMLINK, "NFS4ERR_SYMLINK" },
		{ N4ERR_LOCKS_HELD, "NFS4ERR_LOCKS_HELD" },
		{ N4ERR_BADSESSION, "NFS4ERR_BADSESSION" },
	};
	static char other[32];
	size_t i;

	if (status < 0)
		return "(client error)";
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].status == status)
			return names[i].name;
	snprintf(other, sizeof(other), "NFS4ERR_%d", status);
	return other;
}
