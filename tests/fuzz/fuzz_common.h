/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the CSI fuzz targets share: property checks that crash (so that
 * libFuzzer keeps the input), exact-size allocations (so that ASan sees
 * any overrun) and the --write-seeds mode that turns the golden vectors
 * of protocol/vectors/ into a target's seed corpus.
 */
#ifndef SEACACHE_FUZZ_COMMON_H
#define SEACACHE_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "seacache/csi_codec.h"

/* libFuzzer's entry points: each target's, and fuzz_common.c's. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* A property every input must keep: on violation, say which and crash. */
#define FUZZ_CHECK(cond, ...)						\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "%s:%d: property violated: %s: ", \
				__FILE__, __LINE__, #cond);		\
			fprintf(stderr, __VA_ARGS__);			\
			fputc('\n', stderr);				\
			fflush(stderr);					\
			__builtin_trap();				\
		}							\
	} while (0)

/* malloc(n) of exactly n bytes, never NULL (aborts). */
void *fuzz_alloc(size_t n);

/*
 * Decode in[0..len) as message m the way a server does (arena of exactly
 * csi_decode_arena_size bytes, fresh allocations) and check the codec's
 * properties; 0 with *msg (free it) and *arena (free it) set, or the
 * decoder's error.
 */
int fuzz_decode(enum csi_msg m, const uint8_t *in, size_t len, void **msg,
		void **arena);

/*
 * Append message m (decoded) to out[0..*pos) of capacity cap, by encoding;
 * checks it takes exactly want bytes.
 */
void fuzz_encode(enum csi_msg m, const void *msg, uint8_t *out, size_t cap,
		 size_t *pos, size_t want);

/* a[0..len) must equal the input b[0..len); else report where they differ. */
void fuzz_same(const uint8_t *a, const uint8_t *b, size_t len,
	       const char *what);

/* The CSI procedures (csi_proc_find over both programs), in table order. */
#define FUZZ_MAX_PROCS 64
unsigned int fuzz_procs(const struct csi_proc_info **procs);

/*
 * Call fn for each golden vector of message m, with its bytes read from
 * vectors/<name>.bin; for CSI_MSG_VOID once, with the empty body "void".
 * 0, or -1 (reported) when a file cannot be read or fn fails.
 */
int fuzz_each_vector(const char *vectors, enum csi_msg m,
		     int (*fn)(void *ctx, const char *name, const uint8_t *b,
			       size_t len),
		     void *ctx);

/* Write dir/name.bin; 0 or -1 (reported). */
int fuzz_write_seed(const char *dir, const char *name, const void *b,
		    size_t len);

/*
 * The target's seeds, for `TARGET --write-seeds VECTORS_DIR OUT_DIR`:
 * write them to OUT_DIR from the vectors in VECTORS_DIR; 0 or -1.
 */
int fuzz_write_seeds(const char *vectors, const char *out);

#endif /* SEACACHE_FUZZ_COMMON_H */
