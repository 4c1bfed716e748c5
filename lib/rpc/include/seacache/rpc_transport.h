/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * ONC RPC over TCP with record marking (RFC 5531), in user space, for the
 * CSI programs: a client with pipelined calls matched by xid, per-call
 * timeouts and reconnection, and a poll-based server loop with a wake-up
 * fd for clean shutdown, bounded per-connection buffers and an optional
 * bounded pool of worker threads for the handlers.
 *
 * Messages are the CSI codec's (seacache/csi_codec.h): a call names its
 * procedure, arguments and results go in and out as the codec's structs.
 * Errors are negative errno values.
 */
#ifndef SEACACHE_RPC_TRANSPORT_H
#define SEACACHE_RPC_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "seacache/csi_codec.h"
#include "seacache/defaults.h"
#include "seacache/rpc_msg.h"

/* ---- client ---- */

struct sc_rpc_client_opts {
	const char *host;		/* numeric IPv4 or IPv6 address */
	uint16_t port;
	uint32_t prog;			/* CSI_PROG or CSI_PEER_PROG */
	int timeout_ms;			/* per call; 0: SC_CSI_CALL_TIMEOUT_MS */
	unsigned int max_inflight;	/* calls started, not finished; 0: 64 */
	size_t max_record;		/* 0: SC_RPC_MAX_RECORD_DEFAULT */
	/*
	 * The AUTH_SYS credential of every call; NULL: the process's own
	 * (sc_rpc_auth_sys_self), as an NFS client sends its caller's.
	 */
	const struct sc_rpc_auth_sys *cred;
	/* Send AUTH_NONE instead (cred unused): an export's SecType = none. */
	bool auth_none;
	/*
	 * Connect from a port below 1024 (root only), as NFS clients do for
	 * an export with PrivilegedPort ("secure").
	 */
	bool reserved_port;
};

struct sc_rpc_client;

/* The calling process's effective uid, gid and first 16 groups. */
int sc_rpc_auth_sys_self(struct sc_rpc_auth_sys *out);

/*
 * The memory a decoded result points into; free it when done with the
 * result.
 */
struct sc_rpc_reply;

/* Connects; 0 or a negative errno (the address, or the connect error). */
int sc_rpc_client_open(const struct sc_rpc_client_opts *o,
		       struct sc_rpc_client **out);
void sc_rpc_client_close(struct sc_rpc_client *c);

/*
 * Send a call and return its xid at once.  Several calls may be in flight
 * and may be finished in any order, from any thread.  Blocks while
 * max_inflight calls are open.  If the connection was lost, reconnects
 * first.
 */
int sc_rpc_start(struct sc_rpc_client *c, uint32_t proc, const void *args,
		 uint32_t *xid);

/*
 * Wait for the reply of a started call and decode it into res (the
 * procedure's result struct).  On success *reply owns the memory res
 * points into.  Errors: -ETIMEDOUT (the call is abandoned; a late reply is
 * dropped), -ECONNRESET (the connection broke: the call may or may not
 * have been executed; the next call reconnects), -EPROTONOSUPPORT (the
 * server does not serve this program, version or procedure), -EINVAL (the
 * server could not decode the arguments), -EREMOTEIO (the server failed),
 * -EACCES (the server refused the credentials), -EBADMSG (malformed
 * reply).
 */
int sc_rpc_finish(struct sc_rpc_client *c, uint32_t xid, void *res,
		  struct sc_rpc_reply **reply);

/* start + finish. */
int sc_rpc_call(struct sc_rpc_client *c, uint32_t proc, const void *args,
		void *res, struct sc_rpc_reply **reply);

void sc_rpc_reply_free(struct sc_rpc_reply *r);

/* ---- server ---- */

/* One call, as a service's handler sees it. */
struct sc_rpc_request {
	const struct sc_rpc_call_hdr *call;
	const struct sockaddr *peer;	/* the caller (registrations bind to it) */
	/* its AUTH_SYS credential, decoded; NULL: it sent AUTH_NONE */
	const struct sc_rpc_auth_sys *auth_sys;
	const struct csi_proc_info *proc;
	const void *args;		/* decoded arguments */
	void *res;			/* zeroed result struct to fill */
	struct sc_rpc_req_mem *mem;	/* see sc_rpc_req_alloc */
	struct sc_rpc_req_pool *pool;	/* the server's; NULL: plain malloc */
};

/*
 * Memory for a result (e.g. its arrays, its block data) that lives until
 * the reply has been sent; NULL when exhausted.  The server sends long
 * byte strings of a result from where they are, so each must be here, in
 * the arguments, or in memory that outlives the server.  Not zeroed: the handler sets every
 * byte it lets the reply carry; a large one (a READ's block data) may
 * be the memory of an earlier request, kept by the server.  It belongs to rq alone, also when
 * several workers run handlers at once.
 */
void *sc_rpc_req_alloc(struct sc_rpc_request *rq, size_t n);

/*
 * Frees rq's sc_rpc_req_alloc memory, as the server does once the reply
 * has left: for a caller that runs a service's handler itself (tests).
 */
void sc_rpc_req_release(struct sc_rpc_request *rq);

struct sc_rpc_service {
	uint32_t prog;			/* version is always CSI_VERS */
	/*
	 * Fill rq->res.  With workers == 0 it runs on the server loop's
	 * thread, one call at a time.  With workers > 0 it runs on the
	 * worker threads, for several calls at once (also calls of one
	 * connection): the service must then be thread-safe.  Each call has
	 * its own rq, arguments, result and sc_rpc_req_alloc memory.  A
	 * negative return makes the reply SYSTEM_ERR.  NULL procedures are
	 * answered without it.
	 */
	int (*handle)(void *ctx, struct sc_rpc_request *rq);
	void *ctx;
};

struct sc_rpc_server_opts {
	const char *bind_addr;		/* numeric; NULL: 127.0.0.1 */
	uint16_t port;			/* 0: any free port */
	unsigned int max_conns;		/* 0: 256 */
	/* of them from one address (port aside); 0: no limit of its own */
	unsigned int max_conns_per_addr;
	size_t max_record;		/* 0: SC_RPC_MAX_RECORD_DEFAULT */
	/*
	 * Threads that run the handlers, so that a slow one never stalls
	 * the loop, which goes on accepting, reading and sending.  0: the
	 * loop runs them itself, and reads a connection's next request only
	 * when the previous reply has left (the two fields below are then
	 * unused).  With workers, a connection's replies may leave in
	 * another order than its calls came; callers match them by xid.
	 */
	unsigned int workers;
	/*
	 * A connection's calls that are queued, being handled, or whose
	 * reply has not fully left; 0: 16.  At the limit the loop stops
	 * reading from that connection (no error, nothing dropped) until
	 * one finishes, so a host that does not read its replies holds at
	 * most this many in the server.
	 */
	unsigned int max_inflight_per_conn;
	/*
	 * Calls waiting for a worker, all connections together; 0: workers
	 * * max_inflight_per_conn.  At the limit the loop reads from no
	 * connection until a worker takes a call.  Workers take calls from
	 * the connections in turn (round robin), so a connection with many
	 * calls queued does not delay another's.
	 */
	unsigned int max_queued;
	/*
	 * A connection with no call open that sent nothing for idle_ms, or
	 * that began a record and did not send all of it within record_ms
	 * (counted while the server reads it), is closed; 0:
	 * SC_RPC_IDLE_TIMEOUT_MS and SC_RPC_RECORD_TIMEOUT_MS.
	 */
	unsigned int idle_ms, record_ms;
	/*
	 * TCP keep-alives after keepalive_s idle seconds, keepalive_s
	 * apart, SC_KEEPALIVE_PROBES unanswered close the connection; 0:
	 * SC_RPC_KEEPALIVE_S.
	 */
	unsigned int keepalive_s;
};

struct sc_rpc_server_stats {
	uint64_t conns_accepted;
	uint64_t conns_refused;		/* over max_conns or max_conns_per_addr */
	uint64_t conns_dropped;		/* malformed stream or oversize record */
	uint64_t conns_timed_out;	/* idle_ms or record_ms passed */
	uint64_t calls;
	uint64_t garbage_args;
	uint64_t bytes_in;
	uint64_t bytes_out;
	/* Times a connection reached max_inflight_per_conn (workers only). */
	uint64_t conns_throttled;
	/* Calls read but never answered: their connection closed first. */
	uint64_t calls_discarded;
	uint64_t calls_queued_max;	/* the most ever waiting for a worker */
	/* sc_rpc_req_alloc served from memory kept from earlier requests. */
	uint64_t req_mem_reused;
	/* The state now. */
	uint64_t conns_open;
	uint64_t calls_queued;		/* waiting for a worker */
	uint64_t replies_unsent;	/* encoded, not yet fully sent */
};

struct sc_rpc_server;

int sc_rpc_server_new(const struct sc_rpc_server_opts *o,
		      const struct sc_rpc_service *svcs, unsigned int nsvcs,
		      struct sc_rpc_server **out);
/* The port it listens on (useful with port 0). */
uint16_t sc_rpc_server_port(const struct sc_rpc_server *s);
/*
 * Start the workers and serve until sc_rpc_server_stop; 0, or a negative
 * errno if poll fails or a worker cannot start.  Before returning it lets
 * the handlers that run finish and joins the workers; calls still queued
 * stay so (a next run serves them, sc_rpc_server_free drops them).
 */
int sc_rpc_server_run(struct sc_rpc_server *s);
/* From any thread or a signal handler: make run return soon. */
void sc_rpc_server_stop(struct sc_rpc_server *s);
/* Counters; from any thread (a handler too), also after run returned. */
void sc_rpc_server_get_stats(struct sc_rpc_server *s,
			     struct sc_rpc_server_stats *st);
/*
 * After run has returned: close every connection and free, with the
 * calls still queued and the replies not sent.
 */
void sc_rpc_server_free(struct sc_rpc_server *s);

#endif /* SEACACHE_RPC_TRANSPORT_H */
