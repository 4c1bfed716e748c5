/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The host library's tests run one set of scenarios (host_test.c) against
 * two servers: the CSI service in process over a dedup store and the RPC
 * server (backend_inproc.c, also under the sanitizers), and a real
 * ganesha.nfsd with FSAL_DEDUP (backend_ganesha.c, under scripts/ganesha-run,
 * files made and checked over NFS).  A backend gives the service's
 * address and does what the test needs done behind the hosts' backs.
 */
#ifndef HOST_TEST_H
#define HOST_TEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The backend's name, for messages; its limits. */
extern const char *hb_name;
extern uint32_t hb_max_evict;
/* 0, or -1 with the reason printed. */
int hb_setup(void);
void hb_teardown(void);
const char *hb_server(void);
uint16_t hb_port(void);
/* A file of len bytes (made again if it exists): its file id. */
uint64_t hb_create(const char *name, const void *buf, size_t len);
/* Writes through the server's other door (the store, NFS). */
void hb_write_behind(const char *name, uint64_t off, const void *buf,
		     size_t len);
/* Truncates or extends name through the server's other door. */
void hb_truncate(const char *name, uint64_t size);
/* The file's bytes as the server has them; its length. */
size_t hb_read_back(const char *name, void *buf, size_t max);
/* A new server instance (a new epoch) on the same port. */
void hb_restart(void);

#endif
