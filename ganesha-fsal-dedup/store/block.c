// SPDX-License-Identifier: LGPL-3.0-or-later
/*
 * A block's content as the read, write and flush paths all need it: read
 * back from its slot and verified against its check, the current content
 * of a file's block, whether it is all zeros.
 */
#include <stdatomic.h>
#include <string.h>

#include "dstore_int.h"

bool block_is_zero(const uint8_t *p, size_t len)
{
	return p[0] == 0 && memcmp(p, p + 1, len - 1) == 0;
}

int block_verify(struct dstore *ds, const struct block_loc *loc,
		 const struct sc_hash *h, const void *buf)
{
	char hex[2 * SC_HASH_LEN + 1];

	if (!ds->verify_reads || chunk_checksum(buf, ds->bsize) == loc->check)
		return 0;
	atomic_fetch_add(&ds->verify_failures, 1);
	sc_hash_to_hex(h, hex);
	dstore_logf(ds, DSTORE_LOG_ERROR,
		    "chunk %s in slot %llu (container %llu) fails its check: the container is corrupt; reads of it fail with EIO; run seacachectl fsck",
		    hex, (unsigned long long)loc->slot,
		    (unsigned long long)(loc->slot / ds->slots_per_container));
	return -EIO;
}

int block_read_verified(struct dstore *ds, const struct block_loc *loc,
			const struct sc_hash *h, void *buf)
{
	int rc = slots_rw(ds, SLOT_READ, loc->slot, 1, &buf);

	return rc ? rc : block_verify(ds, loc, h, buf);
}

/* Current content of (ino, lbn) into buf; the reclaim lock held shared. */
int block_current(struct dstore *ds, MDB_txn *txn, uint64_t ino,
		  uint64_t lbn, uint8_t *buf)
{
	struct sc_hash h;
	struct block_loc loc;
	int rc = bmap_get(ds, txn, ino, lbn, &h, &loc);

	if (rc == -ENODATA) {
		memset(buf, 0, ds->bsize);
		return 0;
	}
	return rc ? rc : block_read_verified(ds, &loc, &h, buf);
}
