/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef SEACACHE_CSI_BENCH_H
#define SEACACHE_CSI_BENCH_H

/* Each measures for about `seconds` and prints one or two lines. */
void bench_csi_codec(double seconds);
void bench_csi_rpc(double seconds);

#endif
