# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The core's sources, one variable per layer, paths relative to lib/.
# CMake reads this file for user space; a Kbuild file includes it and takes
# exactly the layers its module uses (lower layers never include upper ones):
#
#   base      hashing, the index table and LRU list every structure is built on
#   cache     content cache, its slot policies, CSI-Map cache, host cache
#   proto     XDR, the CSI codec, ONC RPC headers and record marks, peer tokens,
#             the protocol variants
#   host      the SeaCache host: the client half of the CSI protocol, peer serving
#             (its files call down only, in the order listed: host/README.md)
#   selftest  self-tests and golden-vector builders: test modules only
#   dcache    the papers' request-level cache organisations: user space only
#             (the simulator and the policy tests), never in a kernel module
#   env_*     the environment behind compat.h: exactly one of them per build
SC_BASE_SRCS := base/hash.c base/itab.c base/lru.c
SC_CACHE_SRCS := cache/ccache.c cache/policy.c cache/policy_lru.c \
	cache/policy_elru.c cache/policy_arc.c cache/csimap.c cache/hostcache.c
SC_PROTO_SRCS := proto/xdr.c proto/csi_codec.c proto/rpc_msg.c \
	proto/peer_token.c proto/variant.c
SC_HOST_SRCS := host/host.c host/host_write.c host/host_read.c \
	host/host_map.c host/host_pins.c host/host_call.c host/host_util.c \
	host/peer_serve.c
SC_SELFTEST_SRCS := selftest/selftest.c selftest/csi_vectors.c
SC_DCACHE_SRCS := dcache/dcache.c dcache/dcache_content.c \
	dcache/dcache_split.c dcache/dcache_dlru.c dcache/dcache_cdac.c \
	dcache/dcache_cbbc.c dcache/dcache_acq.c dcache/dcache_lruca.c
SC_ENV_USER_SRCS := env/user/hash_openssl.c env/user/alloc_fault.c
SC_ENV_KERNEL_SRCS := env/kernel/hash_kcrypto.c env/kernel/block_mem.c

# What a product module compiles in: everything a host runs.
SC_PRODUCT_SRCS := $(SC_BASE_SRCS) $(SC_CACHE_SRCS) $(SC_PROTO_SRCS) \
	$(SC_HOST_SRCS)
