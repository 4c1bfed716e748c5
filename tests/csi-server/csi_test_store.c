// SPDX-License-Identifier: BSD-2-Clause
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

#include <cmocka.h>

#include "csi_test_store.h"

struct dstore *csi_test_store_open(char *dir, uint32_t bs,
				   uint32_t reclaim_ms)
{
	struct dstore_params p;
	struct dstore *ds;
	char err[256];

	if (!mkdtemp(dir)) {
		perror(dir);
		return NULL;
	}
	dstore_params_default(&p);
	p.block_size = bs;
	p.map_size = 256ull << 20;
	p.container_size = 64ull << 20;
	p.reclaim_interval_ms = reclaim_ms;
	if (dstore_open(dir, &p, &ds, err, sizeof(err))) {
		fprintf(stderr, "dstore_open %s: %s\n", dir, err);
		return NULL;
	}
	return ds;
}

int csi_test_store_remove(struct dstore *ds, const char *dir)
{
	char cmd[256];

	dstore_close(ds);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

uint64_t csi_test_make_file(struct dstore *ds, const char *name,
			    const void *buf, size_t len, uint64_t off)
{
	struct dstore_new n = { .type = DSTORE_REG, .mode = 0644 };
	struct dstore_attr a;

	assert_int_equal(dstore_create(ds, DSTORE_ROOT_INO, name, &n, &a), 0);
	if (len)
		assert_int_equal(dstore_write(ds, a.ino, off, buf, len, true,
					      NULL), (ssize_t)len);
	return a.ino;
}
