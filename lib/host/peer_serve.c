// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * PEER_READ, the serving end: the token is checked before the cache is
 * looked at.  The requester's end, which trusts nothing it did not hash,
 * is sc_block_verify (lib/base/hash.c).
 */
#include "seacache/peer_serve.h"

int sc_peer_serve_read(const struct sc_peer_identity *id, uint64_t now,
		       const struct csi_peer_read_args *a, sc_peer_get_fn get,
		       void *ctx, void *buf, uint32_t block_size,
		       struct csi_peer_read_res *res)
{
	struct sc_peer_token_fields f = {
		.hash = a->hash,
		.requester = a->requester,
		.epoch = a->epoch,
		.expiry = a->token.expiry,
	};
	const uint8_t *p = buf;
	uint32_t len = 0;
	int err;

	res->data.p = NULL;
	res->data.len = 0;
	/* One status for every failure: the reply must not say which. */
	res->status = CSI_ERR_BAD_TOKEN;
	if (!id)
		return 0;
	f.serving = id->host;
	err = sc_peer_token_check(id->mac, &f, id->epoch, now, a->token.mac);
	if (err == -SC_EACCES)
		return 0;
	if (err)
		return err;

	err = get(ctx, &a->hash, buf, &len);
	if (err == -SC_ENOENT) {
		res->status = CSI_ERR_NOENT;
		return 0;
	}
	if (err == -SC_EBUSY) {
		res->status = CSI_ERR_BUSY;
		return 0;
	}
	if (err)
		return err;
	/* A cache that reports more than a block is broken: send nothing. */
	if (len > block_size)
		return -SC_EIO;
	/* The requester zero-fills, so trailing zeros need not cross. */
	while (len && !p[len - 1])
		len--;
	res->status = CSI_OK;
	res->data.p = p;
	res->data.len = len;
	return 0;
}

int sc_peer_read_take(struct sc_hasher *hs, uint32_t block_size,
		      const struct sc_hash *h,
		      const struct csi_peer_read_res *res, void *out)
{
	switch (res->status) {
	case CSI_OK:
		return sc_block_verify(hs, block_size, h, res->data.p,
				       res->data.len, out);
	case CSI_ERR_BAD_TOKEN:
		return -SC_EACCES;
	case CSI_ERR_NOENT:
		return -SC_ENOENT;
	case CSI_ERR_BUSY:
		return -SC_EBUSY;
	default:
		return -SC_EPROTO;
	}
}
