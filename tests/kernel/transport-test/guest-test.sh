#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# In the guest: the module runs its checks at load time (see
# transport_test_main.c) and leaves its verdict in its "result" parameter;
# the host side passes what the checks need by --env.
set -e
insmod /test/files/seacache_transport_test.ko csi_port="$CSI_PORT" \
	data_sha256="$DATA_SHA256" restart="${RESTART:-0}" \
	threads="${THREADS:-4}"
[ "$(cat /sys/module/seacache_transport_test/parameters/result)" = passed ]
