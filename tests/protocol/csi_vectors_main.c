// SPDX-License-Identifier: BSD-2-Clause
/*
 * csi-vectors: check or (deliberately) rewrite the CSI protocol's golden
 * vectors in protocol/vectors/ from the table in lib/selftest/csi_vectors.c.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "seacache/csi_vectors.h"
#include "vector_file.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: csi-vectors --check DIR   every vector's bytes match the table,\n"
		"                                 decode, and re-encode to themselves\n"
		"       csi-vectors --write DIR   write DIR/<name>.bin and DIR/README.md\n"
		"       csi-vectors --list        name, message and size of each vector\n");
}

static const struct csi_vector *find_vector(const char *name)
{
	unsigned int i;

	for (i = 0; i < csi_nvectors; i++)
		if (!strcmp(csi_vectors[i].name, name))
			return &csi_vectors[i];
	return NULL;
}

static int check(const char *dir)
{
	unsigned int i, failed = 0;
	struct dirent *de;
	DIR *d;

	for (i = 0; i < csi_nvectors; i++) {
		const struct csi_vector *v = &csi_vectors[i];
		size_t len;
		uint8_t *b;

		b = csi_vector_file_read(dir, v->name, &len);
		if (!b) {
			failed++;
			continue;
		}
		if (csi_vector_check(v, b, len))
			failed++;
		free(b);
	}
	/* A file without a table entry is a vector nobody checks. */
	d = opendir(dir);
	while (d && (de = readdir(d))) {
		size_t n = strlen(de->d_name);

		if (n > 4 && !strcmp(de->d_name + n - 4, ".bin")) {
			de->d_name[n - 4] = 0;
			if (!find_vector(de->d_name)) {
				fprintf(stderr, "csi-vectors: %s/%s.bin is not in the table\n",
					dir, de->d_name);
				failed++;
			}
		}
	}
	if (d)
		closedir(d);
	printf("csi-vectors: %u of %u vectors good\n", csi_nvectors - failed,
	       csi_nvectors);
	return failed ? 1 : 0;
}

static void hexdump(FILE *f, const uint8_t *b, size_t len, size_t max)
{
	size_t i;

	for (i = 0; i < len && i < max; i++)
		fprintf(f, "%s%02x", i % 16 ? (i % 4 ? "" : " ") : (i ? "\n    " : "    "),
			b[i]);
	fprintf(f, "%s\n", len > max ? "\n    ..." : "");
}

static int write_all(const char *dir)
{
	char path[4096];
	unsigned int i;
	FILE *md;

	snprintf(path, sizeof(path), "%s/README.md", dir);
	md = fopen(path, "w");
	if (!md) {
		perror(path);
		return 1;
	}
	fprintf(md,
		"# CSI protocol golden vectors\n\n"
		"Each `<name>.bin` is the XDR encoding of one message of `../seacache.x`.\n"
		"The message values are in `lib/selftest/csi_vectors.c` (one builder per vector);\n"
		"the user-space tests (`csi-vectors --check`), the rpcgen cross-check\n"
		"and the in-kernel self-test require every codec to encode those values to\n"
		"exactly these bytes and to decode these bytes back.  Hashes are patterns,\n"
		"not digests: the vectors test encoding, not semantics.  Words below are\n"
		"big-endian 32-bit XDR units; long payloads are cut after 128 bytes.\n"
		"Written by `csi-vectors --write protocol/vectors` (only for a deliberate\n"
		"change of the test set).\n");
	for (i = 0; i < csi_nvectors; i++) {
		const struct csi_vector *v = &csi_vectors[i];
		size_t len;
		uint8_t *b = csi_vector_encode(v, &len);
		FILE *f;

		snprintf(path, sizeof(path), "%s/%s.bin", dir, v->name);
		f = b ? fopen(path, "wb") : NULL;
		if (!f || fwrite(b, 1, len, f) != len || fclose(f)) {
			fprintf(stderr, "csi-vectors: cannot write %s\n", path);
			free(b);
			fclose(md);
			return 1;
		}
		fprintf(md, "\n## %s\n\nmessage `%s`, built by `v_%s`, %zu bytes\n\n```\n",
			v->name, csi_msgs[v->msg].name, v->name, len);
		hexdump(md, b, len, 128);
		fprintf(md, "```\n");
		free(b);
	}
	return fclose(md) ? 1 : 0;
}

int main(int argc, char **argv)
{
	unsigned int i;

	if (argc == 3 && !strcmp(argv[1], "--check"))
		return check(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "--write"))
		return write_all(argv[2]);
	if (argc == 2 && !strcmp(argv[1], "--list")) {
		for (i = 0; i < csi_nvectors; i++) {
			size_t len;
			uint8_t *b = csi_vector_encode(&csi_vectors[i], &len);

			printf("%-26s %-16s %6zu bytes\n", csi_vectors[i].name,
			       csi_msgs[csi_vectors[i].msg].name, b ? len : 0);
			free(b);
		}
		return 0;
	}
	usage(argc == 2 && !strcmp(argv[1], "--help") ? stdout : stderr);
	return argc == 2 && !strcmp(argv[1], "--help") ? 0 : 2;
}
