/* SPDX-License-Identifier: LGPL-3.0-or-later */
/*
 * The CSI service on a port of its own, in a thread of ganesha.nfsd
 * (FSAL_DEDUP starts it with the store it serves and stops it before the
 * store closes).  No Ganesha headers here.
 */
#ifndef CSI_SERVER_THREAD_H
#define CSI_SERVER_THREAD_H

#include <stddef.h>
#include <stdint.h>

#include "service.h"

struct csi_server_thread;

/* Where and how the RPC server runs. */
struct csi_server_opts {
	const char *bind_addr;		/* numeric */
	uint16_t port;
	unsigned int workers;		/* handler threads; 0: the loop's own */
	unsigned int max_calls_per_conn; /* 0: the transport's default (16) */
};

/*
 * Listens on o->bind_addr:o->port and serves svc_cfg's service over ds:
 * one loop thread for the sockets and o->workers threads for the calls.
 * NULL on failure, with the reason (and what to do) in err.
 */
struct csi_server_thread *csi_server_thread_start(struct dstore *ds,
		const struct csi_server_opts *o,
		const struct csi_service_config *svc_cfg,
		char *err, size_t errlen);
/* Stops serving, joins the thread and frees everything; NULL is fine. */
void csi_server_thread_stop(struct csi_server_thread *t);
uint16_t csi_server_thread_port(const struct csi_server_thread *t);
uint64_t csi_server_thread_epoch(const struct csi_server_thread *t);

#endif /* CSI_SERVER_THREAD_H */
