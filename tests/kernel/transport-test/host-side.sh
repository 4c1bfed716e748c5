#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The host side of the kernel transport test, run inside scripts/ganesha-run
# (FSAL_DEDUP with its CSI service on $CSI_PORT): writes the files the
# guest reads over NFS, boots the guest with the test module on QEMU's user
# network (the guest's 10.0.2.2 is this namespace's 127.0.0.1), restarts
# the CSI service when the module asks for it, and checks over NFS the
# range the module wrote through the transport.
#
# usage: host-side.sh MODULE.ko [--restart] [run-guest options...]
# The guest's console log goes to $GUEST_LOG if set (else it is temporary).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)
ko=$1
shift
restart=0
if [ "${1:-}" = --restart ]; then
	restart=1
	shift
fi
: "${CSI_PORT:?the CSI service's port}"
work=$(mktemp -d)
guest=""
trap '[ -z "$guest" ] || kill "$guest" 2>/dev/null; rm -rf "$work"' EXIT

bs=4096
# 3 MiB and a partial block of random bytes, blocks 10-19 copies of 0-9
# (content the server dedups), and the file the module writes into
head -c $((768 * bs + 1000)) /dev/urandom >"$work/data"
dd if="$work/data" of="$work/data" bs=$bs count=10 seek=10 conv=notrunc \
	status=none
head -c $((16 * bs)) /dev/urandom >"$work/write"
url() { echo "$NFS_URL_BASE/$1?$NFS_URL_OPTS"; }
nfs-cp "$work/data" "$(url transport-data)" >/dev/null
nfs-cp "$work/write" "$(url transport-write)" >/dev/null
sha=$(sha256sum <"$work/data" | cut -c1-64)

log=${GUEST_LOG:-$work/console.log}
: >"$log"
"$top/tests/kernel/run-guest" --net --script "$here/guest-test.sh" \
	--file "$ko" --env CSI_PORT="$CSI_PORT" --env DATA_SHA256="$sha" \
	--env RESTART="$restart" --log "$log" "$@" &
guest=$!
if [ $restart -eq 1 ]; then
	while kill -0 "$guest" 2>/dev/null &&
		! grep -q 'SEACACHE-TRANSPORT: restart-now' "$log"; do
		sleep 0.2
	done
	if kill -0 "$guest" 2>/dev/null; then
		echo "host-side: restarting the CSI service" >&2
		"$GANESHA_CTL" restart
	fi
fi
status=0
wait "$guest" || status=$?
guest=""
[ $status -eq 0 ] || exit $status

# What the module wrote (the data file's first bytes at write_off), seen
# by an NFS client: the module's defaults, transport_test_main.c.
cp "$work/write" "$work/expect"
dd if="$work/data" of="$work/expect" bs=1 seek=$((bs + 50)) \
	count=$((2 * bs + 100)) conv=notrunc status=none
nfs-cat "$(url transport-write)" >"$work/got"
if ! cmp "$work/expect" "$work/got"; then
	echo "host-side: the range written through the transport is not what NFS reads" >&2
	exit 1
fi
echo "host-side: the write is seen over NFS" >&2
