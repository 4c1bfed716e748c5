// SPDX-License-Identifier: BSD-2-Clause
/*
 * What the CSI fuzz targets share (see fuzz_common.h).
 */
#include <stdlib.h>
#include <string.h>

#include "seacache/csi_vectors.h"
#include "fuzz_common.h"
#include "vector_file.h"

void *fuzz_alloc(size_t n)
{
	void *p = malloc(n);

	if (!p && !n)
		p = malloc(1);
	if (!p) {
		fprintf(stderr, "fuzz: out of memory (%zu bytes)\n", n);
		abort();
	}
	return p;
}

int fuzz_decode(enum csi_msg m, const uint8_t *in, size_t len, void **msg,
		void **arena)
{
	const char *name = csi_msgs[m].name;
	size_t alen = csi_decode_arena_size(m, len);
	void *mp = fuzz_alloc(csi_msgs[m].size);
	void *ap = fuzz_alloc(alen);
	int err;

	err = csi_decode(m, in, len, mp, ap, alen);
	FUZZ_CHECK(err != -SC_ENOMEM,
		   "%s: %zu input bytes need more than the %zu arena bytes csi_decode_arena_size() promised",
		   name, len, alen);
	FUZZ_CHECK(!err || err == -SC_EBADMSG || err == -SC_E2BIG,
		   "%s: decoding %zu bytes returned %d, not 0, -EBADMSG or -E2BIG",
		   name, len, err);
	if (err) {
		free(mp);
		free(ap);
		return err;
	}
	*msg = mp;
	*arena = ap;
	return 0;
}

void fuzz_encode(enum csi_msg m, const void *msg, uint8_t *out, size_t cap,
		 size_t *pos, size_t want)
{
	const char *name = csi_msgs[m].name;
	size_t n = 0, n2 = 0;
	int err;

	err = csi_encode(m, msg, NULL, 0, &n);
	FUZZ_CHECK(!err, "%s: a decoded message does not encode: %d", name,
		   err);
	FUZZ_CHECK(n == want, "%s: decoded from %zu bytes, measures %zu",
		   name, want, n);
	FUZZ_CHECK(*pos <= cap && cap - *pos >= n, "%s: no room", name);
	/* Room up to the end of out, exactly: ASan sees any overrun. */
	err = csi_encode(m, msg, out + *pos, cap - *pos, &n2);
	FUZZ_CHECK(!err && n2 == n,
		   "%s: encode returned %d, %zu bytes, measured %zu", name, err,
		   n2, n);
	*pos += n;
}

void fuzz_same(const uint8_t *a, const uint8_t *b, size_t len,
	       const char *what)
{
	size_t i;

	for (i = 0; i < len && a[i] == b[i]; i++)
		;
	FUZZ_CHECK(i == len,
		   "%s: re-encoding differs from the accepted input at byte %zu of %zu (0x%02x, input 0x%02x)",
		   what, i, len, i < len ? a[i] : 0, i < len ? b[i] : 0);
}

unsigned int fuzz_procs(const struct csi_proc_info **procs)
{
	static const uint32_t progs[] = { CSI_PROG, CSI_PEER_PROG };
	const struct csi_proc_info *p;
	unsigned int i, n = 0;
	uint32_t proc;

	for (i = 0; i < SC_ARRAY_SIZE(progs); i++) {
		for (proc = 0; proc < 256; proc++) {
			p = csi_proc_find(progs[i], proc);
			if (p && n < FUZZ_MAX_PROCS)
				procs[n++] = p;
		}
	}
	return n;
}

int fuzz_each_vector(const char *vectors, enum csi_msg m,
		     int (*fn)(void *ctx, const char *name, const uint8_t *b,
			       size_t len),
		     void *ctx)
{
	unsigned int i;
	uint8_t *b;
	size_t len;
	int err = 0;

	if (m == CSI_MSG_VOID)
		return fn(ctx, "void", NULL, 0);
	for (i = 0; i < csi_nvectors && !err; i++) {
		if (csi_vectors[i].msg != m)
			continue;
		b = csi_vector_file_read(vectors, csi_vectors[i].name, &len);
		if (!b)
			return -1;
		err = fn(ctx, csi_vectors[i].name, b, len);
		free(b);
	}
	return err;
}

int fuzz_write_seed(const char *dir, const char *name, const void *b,
		    size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.bin", dir, name);
	f = fopen(path, "wb");
	if (!f || (len && fwrite(b, 1, len, f) != len) || fclose(f)) {
		fprintf(stderr, "fuzz: cannot write %s\n", path);
		return -1;
	}
	return 0;
}

/*
 * Before libFuzzer reads its flags: `TARGET --write-seeds VECTORS OUT`
 * writes the seeds and exits.
 */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char **v = *argv;

	if (*argc < 2 || strcmp(v[1], "--write-seeds"))
		return 0;
	if (*argc != 4) {
		fprintf(stderr, "usage: %s --write-seeds VECTORS_DIR OUT_DIR\n",
			v[0]);
		exit(2);
	}
	exit(fuzz_write_seeds(v[2], v[3]) ? 1 : 0);
}
