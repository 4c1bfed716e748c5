/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef SC_VECTOR_FILE_H
#define SC_VECTOR_FILE_H

#include <stddef.h>
#include <stdint.h>

/*
 * The golden bytes of vector `name` from DIR/<name>.bin, in a buffer of
 * exactly their size (so a sanitizer sees any read past them); free it.
 * NULL, with a message on stderr, when the file cannot be read.
 */
uint8_t *csi_vector_file_read(const char *dir, const char *name,
			      size_t *len);

#endif
