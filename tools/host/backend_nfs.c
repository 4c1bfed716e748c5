// SPDX-License-Identifier: BSD-2-Clause
/*
 * The lab's Baseline host: what a VDI host does today.  Plain NFSv3 reads
 * (libnfs, one connection per VM) and one host cache of whole blocks
 * indexed by address only, (image, lbn) -> block, of the same size and
 * code as the SeaCache host's content cache (the core's ccache, keyed by
 * the address instead of a content hash), so the comparison is of the
 * protocols, not of two caches.  Read storms only: nothing is ever
 * written, so an address's block never goes stale.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <nfsc/libnfs.h>

#include <seacache/ccache.h>
#include <seacache/compat.h>

#include "backends.h"

struct nfs_backend {
	struct host_paths paths;
	uint32_t block_size;
	pthread_mutex_t lock;		/* the cache */
	struct sc_ccache *cache;
	_Atomic uint64_t server_bytes, server_calls, blocks, hits;
	_Atomic uint64_t written_bytes;
};

struct nfs_vm {
	struct nfs_context *nfs;
	struct nfsfh **fh;		/* per image, opened on first use */
	uint32_t nfh;
	uint64_t readmax, writemax;
};

/* The cache key of an address: not a content hash, never confused with
 * one since this cache holds addresses only.  The cache's table takes a
 * key's first 8 bytes as its bucket, as a content hash's are uniform: they
 * hold the address mixed (with the address itself there, all blocks of an
 * image shared one bucket, a chain of the whole cache walked under the
 * lock at every lookup: most of the Baseline's time); the address follows
 * as it is. */
static struct sc_hash addr_key(uint32_t image, uint64_t lbn)
{
	struct sc_hash k;

	memset(&k, 0, sizeof(k));
	sc_put_be64(k.b, sc_mix64(((uint64_t)image << 48) ^ lbn));
	sc_put_be32(k.b + 8, image);
	sc_put_be64(k.b + 12, lbn);
	return k;
}

void *nfs_backend_new(const struct host_paths *p, uint32_t block_size,
		      uint32_t cache_blocks, char *err, size_t errlen)
{
	struct nfs_backend *b = calloc(1, sizeof(*b));
	struct sc_ccache_config cc = { .block_size = block_size,
				       .capacity_blocks = cache_blocks,
				       .policy = "lru" };

	if (!b) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	b->paths = *p;
	b->block_size = block_size;
	b->cache = sc_ccache_create(&cc);
	if (!b->cache) {
		snprintf(err, errlen, "cannot make a cache of %u blocks",
			 cache_blocks);
		free(b);
		return NULL;
	}
	pthread_mutex_init(&b->lock, NULL);
	return b;
}

void nfs_backend_free(void *be)
{
	struct nfs_backend *b = be;

	sc_ccache_destroy(b->cache);
	pthread_mutex_destroy(&b->lock);
	free(b);
}

void nfs_backend_totals(void *be, struct host_totals *t)
{
	struct nfs_backend *b = be;

	memset(t, 0, sizeof(*t));
	t->server_bytes = atomic_load(&b->server_bytes);
	t->written_bytes = atomic_load(&b->written_bytes);
	t->server_calls = atomic_load(&b->server_calls);
	t->blocks_read = atomic_load(&b->blocks);
	t->cache_blocks_hit = atomic_load(&b->hits);
}

/* An NFSv3 mount of url (its nfsport= and mountport= options apply). */
static struct nfs_context *mount_url(const char *url, char *err,
				     size_t errlen)
{
	struct nfs_context *nfs = nfs_init_context();
	struct nfs_url *u;

	if (!nfs) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	/* NFSv3, libnfs's default, unless the URL says version=4 */
	u = nfs_parse_url_dir(nfs, url);
	if (!u || nfs_mount(nfs, u->server, u->path)) {
		snprintf(err, errlen, "NFS mount of %s: %s", url,
			 nfs_get_error(nfs));
		nfs_destroy_url(u);
		nfs_destroy_context(nfs);
		return NULL;
	}
	nfs_destroy_url(u);
	return nfs;
}

int nfs_load_image(const struct host_paths *p, const char *image,
		   bool progress)
{
	const char *base = strrchr(image, '/') ? strrchr(image, '/') + 1 :
						 image;
	size_t piece, total = 0;
	struct nfsfh *fh = NULL;
	struct nfs_context *nfs;
	char path[512], err[512];
	uint8_t *buf = NULL;
	int fd, rc = -1;
	off_t size, off = 0;
	ssize_t n = 0;

	fd = open(image, O_RDONLY);
	if (fd < 0) {
		fprintf(stderr, "seacache-host: %s: %s\n", image,
			strerror(errno));
		return -1;
	}
	nfs = mount_url(p->nfs_url, err, sizeof(err));
	if (!nfs) {
		fprintf(stderr, "seacache-host: %s\n", err);
		close(fd);
		return -1;
	}
	piece = nfs_get_writemax(nfs);
	snprintf(path, sizeof(path), "%s%s/%s", p->dir[0] ? "/" : "", p->dir,
		 base);
	buf = malloc(piece);
	if (!buf || nfs_create(nfs, path, O_CREAT | O_TRUNC | O_WRONLY, 0644,
			       &fh)) {
		fprintf(stderr, "seacache-host: create %s: %s\n", path,
			buf ? nfs_get_error(nfs) : "out of memory");
		goto out;
	}
	/* the data regions only: an image's holes read as zeros anyway */
	size = lseek(fd, 0, SEEK_END);
	for (off = lseek(fd, 0, SEEK_DATA); off >= 0 && off < size;
	     off = lseek(fd, off, SEEK_DATA)) {
		n = pread(fd, buf, piece, off);
		if (n <= 0)
			break;
		if (nfs_pwrite(nfs, fh, (uint64_t)off, (uint64_t)n, buf) != n) {
			fprintf(stderr, "seacache-host: write %s: %s\n", path,
				nfs_get_error(nfs));
			goto out;
		}
		off += n;
		total += (size_t)n;
		if (progress && total % (64u << 20) < (size_t)n)
			fprintf(stderr, "\r  %s: %zu MiB of data", base,
				total >> 20);
	}
	if (size < 0 || (off < 0 && errno != ENXIO) || n < 0) {
		fprintf(stderr, "seacache-host: %s: %s\n", image,
			strerror(errno));
		goto out;
	}
	if (nfs_ftruncate(nfs, fh, (uint64_t)size) || nfs_fsync(nfs, fh)) {
		fprintf(stderr, "seacache-host: %s: %s\n", path,
			nfs_get_error(nfs));
		goto out;
	}
	if (progress)
		fprintf(stderr, "\r  %s: %zu MiB of data\n", base,
			total >> 20);
	rc = 0;
out:
	if (fh)
		nfs_close(nfs, fh);
	nfs_destroy_context(nfs);
	free(buf);
	close(fd);
	return rc;
}

static void *nfs_vm_open(void *be, unsigned int vm, char *err, size_t errlen)
{
	struct nfs_backend *b = be;
	struct nfs_vm *v = calloc(1, sizeof(*v));

	(void)vm;
	if (!v) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	v->nfs = mount_url(b->paths.nfs_url, err, errlen);
	if (!v->nfs) {
		free(v);
		return NULL;
	}
	v->readmax = nfs_get_readmax(v->nfs);
	v->writemax = nfs_get_writemax(v->nfs);
	return v;
}

static void nfs_vm_close(void *be, void *vmctx)
{
	struct nfs_vm *v = vmctx;

	(void)be;
	for (uint32_t i = 0; i < v->nfh; i++)
		if (v->fh[i])
			nfs_close(v->nfs, v->fh[i]);
	free(v->fh);
	nfs_destroy_context(v->nfs);
	free(v);
}

static struct nfsfh *image_fh(struct nfs_backend *b, struct nfs_vm *v,
			      uint32_t image)
{
	char path[512];

	if (image >= v->nfh) {
		struct nfsfh **n = realloc(v->fh, (image + 1) * sizeof(*n));

		if (!n)
			return NULL;
		memset(n + v->nfh, 0, (image + 1 - v->nfh) * sizeof(*n));
		v->fh = n;
		v->nfh = image + 1;
	}
	if (!v->fh[image]) {
		host_image_path(&b->paths, image, path, sizeof(path));
		if (nfs_open(v->nfs, path, O_RDWR, &v->fh[image]))
			return NULL;
	}
	return v->fh[image];
}

/* One run of missing blocks from the server, in READ3s of readmax. */
static int read_run(struct nfs_backend *b, struct nfs_vm *v,
		    struct nfsfh *fh, uint64_t off, uint8_t *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		size_t n = len - done < v->readmax ? len - done : v->readmax;
		int got = nfs_pread(v->nfs, fh, off + done, n, buf + done);

		atomic_fetch_add(&b->server_calls, 1);
		if (got < 0)
			return got;
		atomic_fetch_add(&b->server_bytes, (uint64_t)got);
		if (got == 0) {		/* past the end: zeros */
			memset(buf + done, 0, len - done);
			break;
		}
		done += (size_t)got;
	}
	return 0;
}

static int nfs_backend_read(void *be, void *vmctx, uint32_t image,
			    uint64_t off, void *buf, size_t len)
{
	struct nfs_backend *b = be;
	struct nfs_vm *v = vmctx;
	uint32_t bs = b->block_size, n = (uint32_t)(len / bs), i, j;
	struct nfsfh *fh = image_fh(b, v, image);
	uint8_t *out = buf, *hit = calloc(n ? n : 1, 1);
	uint64_t lbn = off / bs, hits = 0;
	int rc = 0;

	if (!fh || !hit) {
		free(hit);
		return fh ? -ENOMEM : -ENOENT;
	}
	pthread_mutex_lock(&b->lock);
	for (i = 0; i < n; i++) {
		struct sc_hash k = addr_key(image, lbn + i);
		const void *p = sc_ccache_lookup(b->cache, &k);

		if (p) {
			memcpy(out + (size_t)i * bs, p, bs);
			hit[i] = 1;
			hits++;
		}
	}
	pthread_mutex_unlock(&b->lock);
	for (i = 0; i < n && !rc; i = j) {
		for (j = i; j < n && !hit[j]; j++)
			;
		if (j == i) {
			j++;
			continue;
		}
		rc = read_run(b, v, fh, (lbn + i) * bs, out + (size_t)i * bs,
			      (size_t)(j - i) * bs);
		pthread_mutex_lock(&b->lock);
		for (uint32_t k = i; !rc && k < j; k++) {
			struct sc_hash key = addr_key(image, lbn + k);

			sc_ccache_insert(b->cache, &key, out + (size_t)k * bs,
					 1);
		}
		pthread_mutex_unlock(&b->lock);
	}
	atomic_fetch_add(&b->hits, hits);
	atomic_fetch_add(&b->blocks, n);
	free(hit);
	return rc;
}

/* Written through (WRITE3s of writemax), and kept in the address cache
 * as a page cache keeps what was written. */
static int nfs_backend_write(void *be, void *vmctx, uint32_t image,
			     uint64_t off, const void *buf, size_t len)
{
	struct nfs_backend *b = be;
	struct nfs_vm *v = vmctx;
	struct nfsfh *fh = image_fh(b, v, image);
	const uint8_t *in = buf;
	size_t done = 0;

	if (!fh)
		return -ENOENT;
	while (done < len) {
		size_t n = len - done < v->writemax ? len - done : v->writemax;
		int put = nfs_pwrite(v->nfs, fh, off + done, n, in + done);

		atomic_fetch_add(&b->server_calls, 1);
		if (put < 0)
			return put;
		if (put == 0)
			return -EIO;
		atomic_fetch_add(&b->written_bytes, (uint64_t)put);
		done += (size_t)put;
	}
	pthread_mutex_lock(&b->lock);
	for (size_t k = 0; k < len / b->block_size; k++) {
		struct sc_hash key = addr_key(image, off / b->block_size + k);

		sc_ccache_insert(b->cache, &key, in + k * b->block_size, 1);
	}
	pthread_mutex_unlock(&b->lock);
	return 0;
}

static int nfs_backend_flush(void *be, void *vmctx, uint32_t image)
{
	struct nfs_backend *b = be;
	struct nfs_vm *v = vmctx;
	struct nfsfh *fh = image_fh(b, v, image);

	if (!fh)
		return -ENOENT;
	atomic_fetch_add(&b->server_calls, 1);
	return nfs_fsync(v->nfs, fh);
}

const struct backend_ops nfs_backend_ops = {
	.vm_open = nfs_vm_open,
	.vm_close = nfs_vm_close,
	.read = nfs_backend_read,
	.write = nfs_backend_write,
	.flush = nfs_backend_flush,
};
