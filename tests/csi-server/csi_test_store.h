/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The dedup store that the in-process CSI tests serve: a fresh one in a
 * temporary directory, files made in its root, removed at the end.
 */
#ifndef CSI_TEST_STORE_H
#define CSI_TEST_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "dstore.h"

/*
 * A new store with block size bs in a new directory made from dir (a
 * mkdtemp template, changed in place); housekeeping every reclaim_ms
 * (0: off).  NULL, with the reason on stderr, on failure.
 */
struct dstore *csi_test_store_open(char *dir, uint32_t bs,
				   uint32_t reclaim_ms);
/* Closes the store and removes its directory; 0 or -1. */
int csi_test_store_remove(struct dstore *ds, const char *dir);
/* A file name in the root holding len bytes of buf at off (cmocka checks). */
uint64_t csi_test_make_file(struct dstore *ds, const char *name,
			    const void *buf, size_t len, uint64_t off);

#endif /* CSI_TEST_STORE_H */
