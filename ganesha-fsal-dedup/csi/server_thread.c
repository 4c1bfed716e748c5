// SPDX-License-Identifier: LGPL-3.0-or-later
/*
 * The CSI service's threads: one RPC server loop (lib/rpc) for the
 * sockets, with a bounded pool of workers running the (thread-safe)
 * service's calls, so a slow store read delays neither other hosts nor
 * the loop.  Stopped through the loop's wake-up and joined before the
 * store may close.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <seacache/rpc_transport.h>

#include "server_thread.h"

struct csi_server_thread {
	struct csi_service *svc;
	struct sc_rpc_service rpc;
	struct sc_rpc_server *srv;
	pthread_t thread;
};

static void *loop_main(void *arg)
{
	struct csi_server_thread *t = arg;

	sc_rpc_server_run(t->srv);
	return NULL;
}

struct csi_server_thread *csi_server_thread_start(struct dstore *ds,
		const struct csi_server_opts *so,
		const struct csi_service_config *svc_cfg,
		char *err, size_t errlen)
{
	struct sc_rpc_server_opts o = {
		.bind_addr = so->bind_addr,
		.port = so->port,
		.workers = so->workers,
		.max_inflight_per_conn = so->max_calls_per_conn,
		.max_conns_per_addr = SC_CSI_MAX_CONNS_PER_ADDR,
	};
	struct csi_server_thread *t = calloc(1, sizeof(*t));
	int rc;

	if (!t) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	t->svc = csi_service_new(ds, svc_cfg);
	if (!t->svc) {
		snprintf(err, errlen,
			 "cannot create the CSI service (memory for CSI_Tracker_Entries, or no randomness)");
		free(t);
		return NULL;
	}
	t->rpc = csi_service_rpc(t->svc);
	rc = sc_rpc_server_new(&o, &t->rpc, 1, &t->srv);
	if (rc) {
		snprintf(err, errlen,
			 "cannot listen on %s port %u: %s (set CSI_Port to a free port, or CSI_Bind_Addr)",
			 so->bind_addr ? so->bind_addr : "127.0.0.1", so->port,
			 strerror(-rc));
		csi_service_free(t->svc);
		free(t);
		return NULL;
	}
	rc = pthread_create(&t->thread, NULL, loop_main, t);
	if (rc) {
		snprintf(err, errlen, "cannot start the CSI thread: %s",
			 strerror(rc));
		sc_rpc_server_free(t->srv);
		csi_service_free(t->svc);
		free(t);
		return NULL;
	}
	return t;
}

void csi_server_thread_stop(struct csi_server_thread *t)
{
	if (!t)
		return;
	sc_rpc_server_stop(t->srv);
	pthread_join(t->thread, NULL);
	sc_rpc_server_free(t->srv);
	csi_service_free(t->svc);
	free(t);
}

uint16_t csi_server_thread_port(const struct csi_server_thread *t)
{
	return sc_rpc_server_port(t->srv);
}

uint64_t csi_server_thread_epoch(const struct csi_server_thread *t)
{
	return csi_service_epoch(t->svc);
}
