/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef SEACACHE_HOST_UUID_H
#define SEACACHE_HOST_UUID_H

#include <stddef.h>
#include <stdint.h>

#include <seacache/csi_proto.h>

/*
 * The host's identity (PROTOCOL.md §4 item 5): random, never derived from
 * anything another machine can know.  With file, it is the one kept there
 * (32 hex digits and a newline), made on first use, readable by its owner
 * only, so that a restarted host takes its registration back; with file
 * NULL it is new for this run, as seacache.ko's is per mount.  0, or a
 * negative errno with err saying what to do.
 */
int host_uuid(const char *file, uint8_t uuid[CSI_HOST_UUID_SIZE], char *err,
	      size_t errlen);

#endif /* SEACACHE_HOST_UUID_H */
