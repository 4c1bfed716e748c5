// SPDX-License-Identifier: BSD-2-Clause
/*
 * The CSI service in this process: a dedup store in a temporary
 * directory, the service over it and the project's RPC server on a
 * loopback port, on a thread.  A restart is a new service (a new epoch)
 * over the same store, on the same port.  Small limits (max_blocks 16,
 * max_evict 8) make the hosts split their calls and their notices.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <seacache/rpc_transport.h>

#include "dstore.h"
#include "host_test.h"
#include "service.h"

const char *hb_name = "in-process";
uint32_t hb_max_evict = 8;

static char store_dir[] = "/tmp/host-test-XXXXXX";
static struct dstore *ds;
static struct csi_service *svc;
static struct sc_rpc_service rpc;
static struct sc_rpc_server *srv;
static pthread_t thread;
static uint16_t port;

static void *server_main(void *arg)
{
	(void)arg;
	sc_rpc_server_run(srv);
	return NULL;
}

static int start(void)
{
	struct csi_service_config cfg = {
		.max_hosts = 64,
		/* every test host calls from 127.0.0.1 */
		.max_hosts_per_addr = 64,
		.tracker_entries = 1u << 16,
		.lease_seconds = 60,
		.features = CSI_FEAT_ALL,
		.max_blocks = 16,
		.max_evict = hb_max_evict,
		.max_push = 64,
		/* its store is in the page cache: delegate all the same */
		.delegate_cached = true,
		.peer_failures = 16,	/* host_test.c PEER_FAILURES */
	};
	struct sc_rpc_server_opts so = { .port = port, .workers = 2 };

	svc = csi_service_new(ds, &cfg);
	if (!svc)
		return -1;
	rpc = csi_service_rpc(svc);
	if (sc_rpc_server_new(&so, &rpc, 1, &srv))
		return -1;
	port = sc_rpc_server_port(srv);
	return pthread_create(&thread, NULL, server_main, NULL) ? -1 : 0;
}

static void stop(void)
{
	sc_rpc_server_stop(srv);
	pthread_join(thread, NULL);
	sc_rpc_server_free(srv);
	csi_service_free(svc);
}

int hb_setup(void)
{
	struct dstore_params p;
	char err[256];

	if (!mkdtemp(store_dir))
		return -1;
	dstore_params_default(&p);
	p.map_size = 256ull << 20;
	p.container_size = 64ull << 20;
	if (dstore_open(store_dir, &p, &ds, err, sizeof(err))) {
		fprintf(stderr, "dstore_open: %s\n", err);
		return -1;
	}
	return start();
}

void hb_teardown(void)
{
	char cmd[128];

	stop();
	dstore_close(ds);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", store_dir);
	if (system(cmd))
		fprintf(stderr, "%s failed\n", cmd);
}

const char *hb_server(void)
{
	return "127.0.0.1";
}

uint16_t hb_port(void)
{
	return port;
}

static void die(const char *what, int err)
{
	fprintf(stderr, "backend: %s: %s\n", what, strerror(-err));
	abort();
}

uint64_t hb_create(const char *name, const void *buf, size_t len)
{
	struct dstore_new n = { .type = DSTORE_REG, .mode = 0644 };
	struct dstore_attr a;
	int err;

	err = dstore_remove(ds, DSTORE_ROOT_INO, name);
	if (err && err != -ENOENT)
		die("remove", err);
	err = dstore_create(ds, DSTORE_ROOT_INO, name, &n, &a);
	if (err)
		die("create", err);
	if (len && dstore_write(ds, a.ino, 0, buf, len, true, NULL) !=
		   (ssize_t)len)
		die("write", -EIO);
	return a.ino;
}

static uint64_t ino_of(const char *name)
{
	struct dstore_attr a;
	int err = dstore_lookup(ds, DSTORE_ROOT_INO, name, &a);

	if (err)
		die("lookup", err);
	return a.ino;
}

void hb_write_behind(const char *name, uint64_t off, const void *buf,
		     size_t len)
{
	if (dstore_write(ds, ino_of(name), off, buf, len, true, NULL) !=
	    (ssize_t)len)
		die("write", -EIO);
}

void hb_truncate(const char *name, uint64_t size)
{
	struct dstore_attr a = { .size = size };
	int err = dstore_setattr(ds, ino_of(name), &a, DSTORE_SET_SIZE, NULL);

	if (err)
		die("truncate", err);
}

size_t hb_read_back(const char *name, void *buf, size_t max)
{
	bool eof;
	ssize_t n = dstore_read(ds, ino_of(name), 0, buf, max, &eof);

	if (n < 0)
		die("read", (int)n);
	return (size_t)n;
}

void hb_restart(void)
{
	stop();
	if (start())
		die("restart", -EIO);
}
