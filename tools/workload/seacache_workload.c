/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * seacache-workload: VDI image sets (a golden ext4 image and its clones)
 * and the storms replayed over them (boot, virus scan, patch), in the
 * SeaCache workload format.  README.md beside this file has the details.
 */
#include "workload.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#ifndef WL_BOOT_FILES
#error "WL_BOOT_FILES: the build passes the boot list's path"
#endif

const char *wl_default_boot_files(void)
{
	return WL_BOOT_FILES;
}

int wl_opt_vms(const char *arg, uint32_t *vms)
{
	uint64_t v;

	if (!wl_parse_u64(arg, 999, &v) || !v)
		return wl_err("--vms: a number from 1 to 999");
	*vms = (uint32_t)v;
	return 0;
}

int wl_opt_seed(const char *arg, uint64_t *seed)
{
	if (!wl_parse_u64(arg, UINT64_MAX, seed))
		return wl_err("--seed: a non-negative integer");
	return 0;
}

char **wl_read_paths(const char *file, size_t *n)
{
	char *text = wl_read_file(file, NULL), *line, *save = NULL;
	char **v = NULL;
	size_t k = 0;

	if (!text)
		return NULL;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *end = line + strlen(line);

		while (*line == ' ' || *line == '\t')
			line++;
		while (end > line && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
			*--end = '\0';
		if (!*line || *line == '#')
			continue;
		if (*line != '/') {
			wl_err("%s: '%s' is not an absolute path", file, line);
			wl_free_paths(v);
			free(text);
			return NULL;
		}
		v = wl_realloc(v, (k + 2) * sizeof(*v));
		v[k++] = wl_strdup(line);
		v[k] = NULL;
	}
	free(text);
	if (!v)
		v = wl_calloc(1, sizeof(*v));
	*n = k;
	return v;
}

void wl_free_paths(char **paths)
{
	size_t i;

	for (i = 0; paths && paths[i]; i++)
		free(paths[i]);
	free(paths);
}

int wl_manifest_read(const char *dir, struct wl_manifest *m)
{
	char *path = wl_printf("%s/" WL_MANIFEST, dir);
	char *text = wl_read_file(path, NULL), *line, *save = NULL;
	int rc = 0;

	memset(m, 0, sizeof(*m));
	m->dir = wl_strdup(dir);
	if (!text) {
		wl_err("%s: not an image set (make one with `seacache-workload images`)", dir);
		free(path);
		return -1;
	}
	for (line = strtok_r(text, "\n", &save); line && !rc;
	     line = strtok_r(NULL, "\n", &save)) {
		char name[256];
		unsigned long long id;

		if (sscanf(line, "image %llu %255s", &id, name) == 2) {
			if (id != m->nimages)
				rc = wl_err("%s: image %llu out of order", path, id);
			m->images = wl_realloc(m->images, (m->nimages + 1) * sizeof(char *));
			m->images[m->nimages++] = wl_strdup(name);
		} else if (sscanf(line, "golden %255s", name) == 1) {
			m->golden = wl_strdup(name);
		} else if (sscanf(line, "seed %llu", &id) == 1) {
			m->seed = id;
		}
	}
	if (!rc && (!m->golden || !m->nimages))
		rc = wl_err("%s: no golden or no images", path);
	free(text);
	free(path);
	if (rc)
		wl_manifest_free(m);
	return rc;
}

void wl_manifest_free(struct wl_manifest *m)
{
	size_t i;

	for (i = 0; i < m->nimages; i++)
		free(m->images[i]);
	free(m->images);
	free(m->golden);
	free(m->dir);
	memset(m, 0, sizeof(*m));
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: seacache-workload images --out DIR [--vms N] [--divergence F]\n"
		"                                [--unique-mib M] [--synthetic] [--seed S]\n"
		"                                [--size-mib M]\n"
		"       seacache-workload storm boot|scan|patch --images DIR --out FILE\n"
		"                                [--vms N] [--seed S]\n"
		"\n"
		"VDI image sets and storms for SeaCache's lab: `images` makes a golden ext4\n"
		"image (Debian minbase by debootstrap, or --synthetic) and one clone per VM;\n"
		"`storm` writes a boot, virus-scan or patch storm over them in the workload\n"
		"format of tools/sim/WORKLOAD-FORMAT.md.  `seacache-workload COMMAND --help`\n"
		"lists every option.\n");
}

int main(int argc, char **argv)
{
	const char *path = getenv("PATH");
	char *full;

	/* mkfs.ext4, debugfs and debootstrap live in /usr/sbin, which is not
	 * on a user's PATH. */
	full = wl_printf("%s%s/usr/sbin:/sbin", path ? path : "", path && *path ? ":" : "");
	setenv("PATH", full, 1);
	free(full);
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "images"))
		return wl_cmd_images(argc - 1, argv + 1);
	if (!strcmp(argv[1], "storm"))
		return wl_cmd_storm(argc - 1, argv + 1);
	wl_err("unknown command '%s' (images, storm; see --help)", argv[1]);
	return 2;
}
