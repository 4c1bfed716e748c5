# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The core's sources, for every build that compiles it in: CMake reads this
# list for user space, Kbuild files include it for kernel modules.
SC_CORE_SRCS := hash.c lru.c itab.c policy.c policy_lru.c policy_elru.c \
	policy_arc.c dcache.c dcache_content.c dcache_split.c dcache_dlru.c \
	dcache_cdac.c dcache_cbbc.c dcache_acq.c dcache_lruca.c \
	ccache.c csimap.c hostcache.c host.c host_read.c host_write.c \
	selftest.c xdr.c csi_codec.c rpc_msg.c csi_vectors.c peer_token.c \
	peer_serve.c
SC_CORE_USER_SRCS := env/user/hash_openssl.c
SC_CORE_KERNEL_SRCS := env/kernel/hash_kcrypto.c
