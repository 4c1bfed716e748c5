// SPDX-License-Identifier: BSD-2-Clause
/*
 * Reading a golden vector's file: for csi-vectors, the rpcgen cross-check
 * and the fuzzers' seeds alike.
 */
#include <stdio.h>
#include <stdlib.h>

#include "vector_file.h"

uint8_t *csi_vector_file_read(const char *dir, const char *name,
			      size_t *len)
{
	char path[4096];
	uint8_t *buf = NULL;
	FILE *f;
	long n;

	snprintf(path, sizeof(path), "%s/%s.bin", dir, name);
	f = fopen(path, "rb");
	if (f && !fseek(f, 0, SEEK_END) && (n = ftell(f)) >= 0 &&
	    !fseek(f, 0, SEEK_SET)) {
		buf = malloc(n ? (size_t)n : 1);
		if (buf && fread(buf, 1, (size_t)n, f) == (size_t)n) {
			*len = (size_t)n;
		} else {
			free(buf);
			buf = NULL;
		}
	}
	if (f)
		fclose(f);
	if (!buf)
		fprintf(stderr, "cannot read golden vector %s\n", path);
	return buf;
}
