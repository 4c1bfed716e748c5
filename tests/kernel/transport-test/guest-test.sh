#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# In the guest: the module runs its checks at load time (see
# transport_test_main.c) and leaves its verdict in its "result" parameter;
# the host side passes what the checks need by --env.  Then a process
# blocked in a call that never gets an answer is killed: it must go, with
# the call ended by the kill (-EINTR), and the module must unload.
set -e
insmod /test/files/seacache_transport_test.ko csi_port="$CSI_PORT" \
	data_sha256="$DATA_SHA256" restart="${RESTART:-0}" \
	threads="${THREADS:-4}"
p=/sys/module/seacache_transport_test/parameters
[ "$(cat $p/result)" = passed ]

echo 1 > $p/hang &
hung=$!
# the second such call: the first was the load-time timeout case
until [ "$(dmesg | grep -c 'fake server: a call, not answered')" -ge 2 ]; do
	sleep 0.1
done
kill -9 $hung
wait $hung || true	# a process that does not die hangs the guest here
[ "$(cat $p/hang_result)" = -4 ]
rmmod seacache_transport_test
