#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Inside scripts/ganesha-run: boots the guest running guest-test.sh against
# this ganesha and writes the transcript (the guest's KCONF lines) to OUT.
#
# usage: host-side.sh OUT KCONFORM CONSOLE-LOG [run-guest options...]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)
out=$1 kconform=$2 log=$3
shift 3
"$top/tests/kernel/run-guest" --net --script "$here/guest-test.sh" \
	--kmod nfsv3 --kmod nfsv4 --file "$kconform:/test/files/kconform" \
	--env NFS_PORT="$NFS_PORT" --env MNT_PORT="$MNT_PORT" \
	--env NFS_EXPORT="$NFS_EXPORT" --log "$log" "$@"
grep -a '^KCONF ' "$log" | tr -d '\r' >"$out"
