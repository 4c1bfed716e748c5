/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef SEACACHE_CSI_BENCH_H
#define SEACACHE_CSI_BENCH_H

#include <stdint.h>

/* Each measures for about `seconds` and prints one or two lines. */
void bench_csi_codec(double seconds);
void bench_csi_rpc(double seconds);
/* The host library: cached reads and memory per cached block. */
void bench_host(double seconds, uint32_t cache_blocks);

#endif
