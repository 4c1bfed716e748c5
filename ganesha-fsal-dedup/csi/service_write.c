// SPDX-License-Identifier: LGPL-3.0-or-later
/*
 * The CSI service's writes: WRITE (§7.4), with hash-only blocks under
 * proof of possession (DEDUP_WRITE), and COMMIT.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "service_int.h"

/* ---- WRITE ---- */

/*
 * §7.4 step 1 beyond the header: block count, end bounds, data lengths,
 * the grant for hash-only blocks.
 */
uint32_t svc_write_check(struct csi_service *svc,
			 const struct sc_rpc_request *rq,
			 const struct host_ref *hr)
{
	const struct csi_write_args *a = rq->args;
	uint64_t bs = svc->block_size;
	uint32_t i;

	if (a->nblocks == 0)
		return CSI_ERR_INVAL;
	if (a->nblocks > svc->cfg.max_blocks)
		return CSI_ERR_TOO_BIG;
	if (!svc_range_ok(svc, a->lbn, a->nblocks) ||
	    a->stable > CSI_FILE_SYNC ||
	    a->end <= (a->lbn + a->nblocks - 1) * bs ||
	    a->end > (a->lbn + a->nblocks) * bs)
		return CSI_ERR_INVAL;
	for (i = 0; i < a->nblocks; i++) {
		if (a->blocks[i].kind == CSI_WK_HASH &&
		    !(hr->h->features & CSI_FEAT_DEDUP_WRITE))
			return CSI_ERR_NOTSUPP;
		if (a->blocks[i].kind == CSI_WK_DATA &&
		    a->blocks[i].data.len > bs)
			return CSI_ERR_INVAL;
	}
	return CSI_OK;
}

/*
 * The bytes of block i of the write, and its hash in hv[i]: DATA blocks
 * verified against their hash (§7.4 step 2); HASH blocks with proof of
 * possession (step 3) read from the store, the others marked need[i].
 * held[i] says the tracker shows this host holds block i's content.
 */
static uint32_t write_gather(struct csi_service *svc,
			     const struct csi_write_args *a,
			     const uint8_t *held, uint8_t *buf,
			     struct sc_hash *hv, uint8_t *need)
{
	struct sc_hasher *hs = sc_hasher_new();
	uint32_t bs = svc->block_size, i, st = CSI_OK;
	int rc;

	if (!hs)
		return CSI_ERR_IO;
	for (i = 0; i < a->nblocks && st == CSI_OK; i++) {
		const struct csi_write_block *b = &a->blocks[i];
		uint8_t *blk = buf + (size_t)i * bs;

		hv[i] = b->hash;
		if (b->kind == CSI_WK_DATA) {
			rc = sc_block_verify(hs, bs, &b->hash, b->data.p,
					     b->data.len, blk);
			if (rc)
				st = rc == -SC_EBADMSG ? CSI_ERR_HASH_MISMATCH :
							 CSI_ERR_IO;
			continue;
		}
		if (!held[i]) {
			need[i] = 1;
			continue;
		}
		rc = dstore_read_content(svc->ds, &b->hash, blk);
		if (rc == -ENOENT)
			need[i] = 1;	/* the store no longer has it */
		else if (rc)
			st = CSI_ERR_IO;
	}
	sc_hasher_free(hs);
	return st;
}

/* §7.4: bytes of a block past the file's new EOF must be zeros. */
static bool tail_is_zero(const struct csi_service *svc,
			 const struct csi_write_args *a, const uint8_t *buf,
			 const uint8_t *need, uint64_t new_eof)
{
	uint32_t bs = svc->block_size, i;

	for (i = 0; i < a->nblocks; i++) {
		uint64_t start = (a->lbn + i) * bs;
		uint64_t from = new_eof > start ? new_eof - start : 0;

		if (need[i] || from >= bs)
			continue;
		if (!svc_all_zero(buf + (size_t)i * bs + from, bs - from))
			return false;
	}
	return true;
}

/* After svc_write_check and the write access check. */
int svc_write(struct csi_service *svc, struct sc_rpc_request *rq,
	      const struct host_ref *hr)
{
	const struct csi_write_args *a = rq->args;
	struct csi_write_res *r = rq->res;
	uint32_t bs = svc->block_size, n = a->nblocks, i, st;
	uint8_t *buf = NULL, *need = NULL, *held = NULL;
	struct dstore_wblocks w = { .lbn = a->lbn, .n = n, .end = a->end,
				    .stable = a->stable != CSI_UNSTABLE };
	struct sc_hash *hv = NULL;
	struct dstore_attr pre, post;
	int rc = 0;

	st = svc_file_attr(svc, a->file, &pre);
	if (st != CSI_OK) {
		r->status = st;
		return 0;
	}
	buf = malloc((size_t)n * bs);
	hv = malloc(n * sizeof(*hv));
	need = calloc(n, 1);
	held = calloc(n, 1);
	r->blocks = sc_rpc_req_alloc(rq, n * sizeof(*r->blocks));
	if (!buf || !hv || !need || !held || !r->blocks) {
		rc = -ENOMEM;
		goto out;
	}
	if (!svc_lock_if_host_valid(svc, hr)) {
		r->status = CSI_ERR_UNKNOWN_HOST;
		goto out;
	}
	for (i = 0; i < n; i++)
		held[i] = a->blocks[i].kind == CSI_WK_HASH &&
			  hr->h->tracked &&
			  sc_tracker_holds(svc->tracker, hr->slot,
					   &a->blocks[i].hash);
	pthread_mutex_unlock(&svc->lock);
	st = write_gather(svc, a, held, buf, hv, need);
	/* a concurrent extension only makes fewer bytes "past EOF" */
	if (st == CSI_OK &&
	    !tail_is_zero(svc, a, buf, need,
			  pre.size > a->end ? pre.size : a->end))
		st = CSI_ERR_INVAL;
	/* the hashes are verified or the store's own: not computed again */
	w.buf = buf;
	w.skip = need;
	w.hash = hv;
	if (st == CSI_OK)
		st = svc_file_status(dstore_write_blocks(svc->ds, a->file, &w,
						     &pre, &post), &post);
	r->status = st;
	if (st == CSI_OK) {
		r->pre_change = pre.change;
		svc_to_fileattr(&post, &r->attr);
		r->committed = a->stable == CSI_UNSTABLE ? CSI_UNSTABLE :
							   CSI_FILE_SYNC;
		r->nblocks = n;
		for (i = 0; i < n; i++)
			r->blocks[i] = need[i] ? CSI_W_NEED_DATA : CSI_W_OK;
		if (post.change != pre.change && svc->hooks.file_changed)
			svc->hooks.file_changed(svc->hooks.ctx, a->file);
	}
	if (!svc_lock_if_host_valid(svc, hr))
		goto out;
	if (st == CSI_ERR_HASH_MISMATCH)
		svc->gctr[G_HASH_MISMATCH]++;
	if (st == CSI_OK) {
		svc_used_mark(svc, hr->h, a->file);
		for (i = 0; i < n; i++) {
			const struct csi_write_block *b = &a->blocks[i];

			if (need[i]) {
				count(svc, hr->h, C_WRITE_NEED_DATA, 1);
			} else if (b->kind == CSI_WK_HASH) {
				count(svc, hr->h, C_WRITE_HASH_BLOCKS, 1);
			} else {
				count(svc, hr->h, C_WRITE_DATA_BLOCKS, 1);
				count(svc, hr->h, C_WRITE_DATA_BYTES,
				      b->data.len);
				svc_note_held(svc, hr, &b->hash);
			}
		}
	}
	pthread_mutex_unlock(&svc->lock);
out:
	free(buf);
	free(hv);
	free(need);
	free(held);
	return rc;
}

/* ---- COMMIT ---- */

/* After the write access check. */
int svc_commit(struct csi_service *svc, struct sc_rpc_request *rq,
	       const struct host_ref *hr)
{
	const struct csi_commit_args *a = rq->args;
	struct csi_commit_res *r = rq->res;
	struct dstore_attr at;
	uint32_t st = svc_file_attr(svc, a->file, &at);

	if (st == CSI_OK && dstore_sync(svc->ds))
		st = CSI_ERR_IO;
	if (st == CSI_OK)
		st = svc_file_attr(svc, a->file, &at);
	r->status = st;
	if (st == CSI_OK)
		svc_to_fileattr(&at, &r->attr);
	if (st == CSI_OK && svc_lock_if_host_valid(svc, hr)) {
		svc_used_mark(svc, hr->h, a->file);
		pthread_mutex_unlock(&svc->lock);
	}
	return 0;
}
