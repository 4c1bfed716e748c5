// SPDX-License-Identifier: BSD-2-Clause
/*
 * The SeaCache host: every VM of this process reads through one sc_host
 * (lib/host/), the shared core's client of the CSI protocol, over the
 * user-space transport (lib/rpc/host_transport.c).  Images are found by
 * CSI LOOKUP in the export, so this host needs no NFS mount.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <seacache/hash.h>
#include <seacache/host.h>
#include <seacache/host_transport.h>

#include "backends.h"
#include <seacache/host_uuid.h>

struct csi_backend {
	struct host_paths paths;
	struct sc_host_transport_state *ts;
	struct sc_host *host;
	uint32_t block_size;
	pthread_mutex_t lock;		/* files */
	uint64_t *file;			/* per image: file id, 0 unknown */
	uint32_t nfile;
};

void *csi_backend_new(const struct host_paths *p,
		      const struct csi_backend_opts *o, char *err,
		      size_t errlen)
{
	struct csi_backend *b = calloc(1, sizeof(*b));
	struct sc_host_transport_opts to = {
		.server = o->server, .port = o->port,
		.peer_bind = o->peer_bind,
	};
	struct sc_host_config hc = {
		.name = o->name, .cache_blocks = o->cache_blocks,
		.policy = o->policy,
	};
	int rc;

	if (!b) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	b->paths = *p;
	pthread_mutex_init(&b->lock, NULL);
	if (sc_variant_parse(o->variant, &hc.variant)) {
		snprintf(err, errlen, "unknown variant %s", o->variant);
		goto fail;
	}
	if (host_uuid(o->uuid_file, hc.uuid, err, errlen))
		goto fail;
	rc = sc_host_transport_open(&to, &hc.tr, &b->ts);
	if (rc) {
		snprintf(err, errlen, "cannot reach the CSI service at %s port %u: %s",
			 o->server, o->port, strerror(-rc));
		goto fail;
	}
	sc_host_transport_peer_addr(b->ts, &hc.peer);
	rc = sc_host_create(&hc, &b->host);
	if (rc) {
		snprintf(err, errlen, "cannot register with the CSI service at %s port %u: %s",
			 o->server, o->port, strerror(-rc));
		goto fail;
	}
	sc_host_transport_set_host(b->ts, b->host);
	b->block_size = sc_host_block_size(b->host);
	return b;
fail:
	csi_backend_free(b);
	return NULL;
}

void csi_backend_free(void *be)
{
	struct csi_backend *b = be;

	if (!b)
		return;
	if (b->ts)
		sc_host_transport_set_host(b->ts, NULL);
	sc_host_destroy(b->host);
	if (b->ts)
		sc_host_transport_close(b->ts);
	pthread_mutex_destroy(&b->lock);
	free(b->file);
	free(b);
}

void csi_backend_totals(void *be, struct host_totals *t)
{
	struct csi_backend *b = be;
	struct sc_host_stats st;

	sc_host_get_stats(b->host, &st);
	memset(t, 0, sizeof(*t));
	t->server_bytes = st.server_data_bytes;
	t->written_bytes = st.write_data_bytes;
	t->peer_bytes = st.peer_bytes;
	t->peer_served_bytes = st.peer_served * b->block_size;
	t->server_calls = st.server_calls;
	t->cache_blocks_hit = st.addr_hits + st.content_hits;
	t->blocks_read = st.read_blocks;
	t->delegations = st.delegations;
	t->peer_failures = st.peer_failures;
	t->force_data_blocks = st.force_data_blocks;
	t->waited_blocks = st.waited_blocks;
	t->hash_only_blocks = st.hash_only_blocks;
	t->pushes_received = st.pushes_received;
	t->pushed_hits = st.pushed_hits;
	t->map_calls = st.map_calls;
	t->map_entries = st.map_entries;
	t->mapped_hits = st.mapped_hits;
	t->readahead_blocks = st.readahead_blocks;
}

void csi_backend_print_times(void *be)
{
	static const char *const kind[SC_HT_KINDS] = {
		[SC_HT_FETCH] = "fetch", [SC_HT_CALL] = "call",
		[SC_HT_PEER] = "peer", [SC_HT_HASH_WAIT] = "hash_wait",
		[SC_HT_FLIGHT_WAIT] = "flight_wait",
		[SC_HT_SERVE_WAIT] = "serve_wait", [SC_HT_WRITE] = "write",
		[SC_HT_WRITE_REQ] = "write_req", [SC_HT_COMMIT] = "commit",
		[SC_HT_MAP] = "map",
	};
	struct csi_backend *b = be;
	struct sc_host_time times[SC_HT_KINDS];

	sc_host_get_times(b->host, times);
	for (int k = 0; k < SC_HT_KINDS; k++) {
		const struct sc_host_time *t = &times[k];

		printf("time %s n=%llu us=%llu hist_log2_us=", kind[k],
		       (unsigned long long)t->n, (unsigned long long)t->us);
		for (int i = 0; i < SC_HOST_TIME_BUCKETS; i++)
			printf("%s%llu", i ? "," : "",
			       (unsigned long long)t->hist[i]);
		printf("\n");
	}
}

static void *csi_vm_open(void *be, unsigned int vm, char *err, size_t errlen)
{
	(void)vm;
	(void)err;
	(void)errlen;
	return be;		/* the VMs share the host; nothing per VM */
}

static void csi_vm_close(void *be, void *vmctx)
{
	(void)be;
	(void)vmctx;
}

/* The file id of image, by LOOKUP the first time. */
static int image_file(struct csi_backend *b, uint32_t image, uint64_t *file)
{
	struct csi_fileattr at;
	char path[512];
	int rc;

	pthread_mutex_lock(&b->lock);
	if (image < b->nfile && b->file[image]) {
		*file = b->file[image];
		pthread_mutex_unlock(&b->lock);
		return 0;
	}
	pthread_mutex_unlock(&b->lock);
	host_image_path(&b->paths, image, path, sizeof(path));
	rc = sc_host_lookup(b->host, b->paths.export, path + 1, &at);
	if (rc)
		return rc;
	pthread_mutex_lock(&b->lock);
	if (image >= b->nfile) {
		uint64_t *n = realloc(b->file, (image + 1) * sizeof(*n));

		if (!n) {
			pthread_mutex_unlock(&b->lock);
			return -ENOMEM;
		}
		memset(n + b->nfile, 0, (image + 1 - b->nfile) * sizeof(*n));
		b->file = n;
		b->nfile = image + 1;
	}
	b->file[image] = at.file;
	pthread_mutex_unlock(&b->lock);
	*file = at.file;
	return 0;
}

static int csi_read(void *be, void *vmctx, uint32_t image, uint64_t off,
		    void *buf, size_t len)
{
	struct csi_backend *b = be;
	uint64_t file;
	ssize_t got;
	int rc;

	(void)vmctx;
	rc = image_file(b, image, &file);
	if (rc)
		return rc;
	got = sc_host_read(b->host, file, off, buf, len);
	if (got < 0)
		return (int)got;
	if ((size_t)got < len)	/* past the end of the image: zeros */
		memset((uint8_t *)buf + got, 0, len - (size_t)got);
	return 0;
}

/* UNSTABLE writes, as an NFS client sends them; flush commits them. */
static int csi_write(void *be, void *vmctx, uint32_t image, uint64_t off,
		     const void *buf, size_t len)
{
	struct csi_backend *b = be;
	uint64_t file;
	ssize_t put;
	int rc;

	(void)vmctx;
	rc = image_file(b, image, &file);
	if (rc)
		return rc;
	put = sc_host_write(b->host, file, off, buf, len, false);
	if (put < 0)
		return (int)put;
	return (size_t)put == len ? 0 : -EIO;
}

static int csi_flush(void *be, void *vmctx, uint32_t image)
{
	struct csi_backend *b = be;
	uint64_t file;
	int rc;

	(void)vmctx;
	rc = image_file(b, image, &file);
	return rc ? rc : sc_host_commit(b->host, file);
}

/* Queued eviction notices out, and the lease renewed, while VMs run. */
static void csi_tick(void *be)
{
	struct csi_backend *b = be;

	sc_host_idle(b->host);
}

const struct backend_ops csi_backend_ops = {
	.vm_open = csi_vm_open,
	.vm_close = csi_vm_close,
	.read = csi_read,
	.write = csi_write,
	.flush = csi_flush,
	.tick = csi_tick,
};
