// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * A host's write requests (PROTOCOL.md §7.4, §11.4): write-through in
 * whole blocks, a partial block read through the cache first
 * (sc_host_read, host_read.c).  The WRITE calls, and the unstable blocks
 * they keep until a COMMIT, are in host_pins.c.
 */
#include "host_priv.h"

static ssize_t host_write(struct sc_host *h, uint64_t file, uint64_t off,
			  const void *buf, size_t len, bool stable)
{
	const uint8_t *in = buf;
	uint8_t *bounce[2] = { NULL, NULL };
	uint64_t first, last, lbn, wl, bo, end = off + len;
	uint32_t nb, i, npins;
	uint64_t since;
	struct wr w;
	ssize_t got;
	int err;

	if (!len)
		return 0;
	since = sc_clock_us();
	err = host_pins_resend(h, file);
	if (err)
		return err;
	err = host_wr_init(&w, h, file, stable ? CSI_FILE_SYNC : CSI_UNSTABLE);
	first = off >> w.bshift;
	last = (end - 1) >> w.bshift;
	for (wl = first; !err && wl <= last; wl += nb) {
		nb = last - wl + 1 > w.max_blocks ? w.max_blocks :
						    (uint32_t)(last - wl + 1);
		for (i = 0; !err && i < nb; i++) {
			struct wr_blk *b = &w.b[i];
			uint8_t **bb;

			lbn = wl + i;
			bo = lbn << w.bshift;
			b->need = false;
			if (bo >= off && bo + w.bs <= end) {
				b->data = in + (bo - off);
			} else {
				/* read-modify-write (§7.4) */
				bb = &bounce[lbn != first];
				if (!*bb)
					*bb = sc_zalloc(w.bs);
				if (!*bb) {
					err = -SC_ENOMEM;
					break;
				}
				got = sc_host_read(h, file, bo, *bb, w.bs);
				if (got < 0) {
					err = (int)got;
					break;
				}
				sc_memset(*bb + got, 0, w.bs - got);
				if (bo < off)
					sc_memcpy(*bb + (off - bo), in,
						  (end < bo + w.bs ? end :
						   bo + w.bs) - off);
				else
					sc_memcpy(*bb, in + (bo - off),
						  end - bo);
				b->data = *bb;
			}
			err = host_wr_hash(&w, b);
			b->kind = (w.features & CSI_FEAT_DEDUP_WRITE) &&
				  sc_hostcache_block_share(h->hc, &b->h) !=
				  SC_NIL ? CSI_WK_HASH : CSI_WK_DATA;
		}
		if (!err)
			err = host_wr_blocks(&w, wl, w.b, nb,
					     wl + nb - 1 == last ? end :
					     (wl + nb) << w.bshift);
	}
	sc_mutex_lock(&h->lock);
	h->st.writes++;
	h->st.write_blocks += last - first + 1;
	npins = h->npins;
	sc_mutex_unlock(&h->lock);
	host_wr_fini(&w);
	sc_free(bounce[0]);
	sc_free(bounce[1]);
	host_time_add(h, SC_HT_WRITE_REQ, since);
	if (err)
		return err;
	if (npins > h->max_pins) {
		err = sc_host_commit(h, file);
		if (err)
			return err;
	}
	return (ssize_t)len;
}

/* In a NOFS scope, as every I/O entry point (host.h). */
ssize_t sc_host_write(struct sc_host *h, uint64_t file, uint64_t off,
		      const void *buf, size_t len, bool stable)
{
	unsigned int nofs = sc_nofs_save();
	ssize_t done = host_write(h, file, off, buf, len, stable);

	sc_nofs_restore(nofs);
	return done;
}
