/* SPDX-License-Identifier: BSD-2-Clause */
/* seacache-workload: VM image sets and storm workloads (README.md). */
#ifndef WL_WORKLOAD_H
#define WL_WORKLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"
#include "workload_fp.h"

#define WL_BLOCK_SIZE 4096u
#define WL_MANIFEST "manifest"

int wl_cmd_images(int argc, char **argv);
int wl_cmd_storm(int argc, char **argv);

/* The options both commands take, parsed and checked alike: 0, or -1
 * after the message. */
int wl_opt_vms(const char *arg, uint32_t *vms);
int wl_opt_seed(const char *arg, uint64_t *seed);

/* The boot list (or any list of absolute paths, one a line, '#'
 * comments): a NULL-terminated array of strings; NULL on error. */
char **wl_read_paths(const char *file, size_t *n);
void wl_free_paths(char **paths);
/* The boot list shipped with the program (boot-files.txt). */
const char *wl_default_boot_files(void);

/* A seeded tree of about `bytes` of file data at root (synth.c). */
int wl_synth_tree(const char *root, uint64_t seed, uint64_t bytes,
		  char **boot, size_t nboot);

struct sc_prng;
/* A file size from the synthetic tree's mix (synth.c). */
uint64_t wl_file_size(struct sc_prng *p);
/* size bytes of the seeded stream content_seed into a new file. */
int wl_write_content(const char *path, uint64_t content_seed, uint64_t size);

/* An image set's manifest (DIR/manifest). */
struct wl_manifest {
	char *dir;
	char *golden;		/* file name in dir */
	char **images;		/* image i's file name in dir; VM i uses image i */
	size_t nimages;
	uint64_t seed;
};
int wl_manifest_read(const char *dir, struct wl_manifest *m);
void wl_manifest_free(struct wl_manifest *m);

#endif /* WL_WORKLOAD_H */
