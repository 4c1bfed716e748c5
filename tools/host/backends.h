/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * seacache-host's ways to the server: "nfs" (the lab's Baseline: NFSv3
 * and an address-indexed host cache), "csi" (the SeaCache host library,
 * any protocol variant) and "file" (images under a mounted directory: a
 * seacache.ko mount makes this a host in the kernel).
 */
#ifndef SEACACHE_HOST_BACKENDS_H
#define SEACACHE_HOST_BACKENDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "replay.h"

/* Where the images are: image k is dir/<pattern % k> in the export. */
struct host_paths {
	const char *nfs_url;		/* nfs: nfs://server/export[?opts] */
	const char *export;		/* csi: the export's pseudo path */
	const char *dir;		/* below the export, "" for its root */
	const char *pattern;		/* printf of the image number */
};

/* A pattern with exactly one conversion, %u (or %0Nu)? */
bool host_pattern_ok(const char *pattern);
/* The image's path below the export ("/dir/vm-003.img"). */
void host_image_path(const struct host_paths *p, uint32_t image, char *out,
		     size_t len);

/*
 * Copies the local file image to <dir>/<its name> in the export over NFS,
 * with a progress line if asked.  0, or -1 with the reason on stderr.
 */
int nfs_load_image(const struct host_paths *p, const char *image,
		   bool progress);

void *nfs_backend_new(const struct host_paths *p, uint32_t block_size,
		      uint32_t cache_blocks, char *err, size_t errlen);
void nfs_backend_totals(void *be, struct host_totals *t);
void nfs_backend_free(void *be);
extern const struct backend_ops nfs_backend_ops;

struct csi_backend_opts {
	const char *server;		/* numeric address of the CSI service */
	uint16_t port;
	const char *variant;		/* a name sc_variant_parse() knows */
	uint32_t cache_blocks;
	const char *policy;		/* NULL: the library's default */
	const char *peer_bind;		/* serve peer reads here; NULL: none */
	const char *name;		/* host name, shown in STATS */
	const char *uuid_file;		/* keeps the host's uuid; NULL: a new
					 * one for this run */
};

void *csi_backend_new(const struct host_paths *p,
		      const struct csi_backend_opts *o, char *err,
		      size_t errlen);
void csi_backend_totals(void *be, struct host_totals *t);
/*
 * Where the host's requests spent their time (sc_host_get_times), a
 * "time KIND n=N us=US hist_log2_us=..." line each.
 */
void csi_backend_print_times(void *be);
void csi_backend_free(void *be);
extern const struct backend_ops csi_backend_ops;

/*
 * Images under mount (their paths as in the export); the totals are the
 * counters of the seacache.ko mount there, zeros on another file system.
 */
void *file_backend_new(const struct host_paths *p, const char *mount,
		       uint32_t block_size, char *err, size_t errlen);
void file_backend_totals(void *be, struct host_totals *t);
void file_backend_free(void *be);
extern const struct backend_ops file_backend_ops;

#endif /* SEACACHE_HOST_BACKENDS_H */
