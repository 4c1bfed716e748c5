#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The host side of the seacache.ko tests, run inside scripts/ganesha-run
# (FSAL_DEDUP with its CSI service on $CSI_PORT): writes the images the
# guest reads over NFS (a seeded 64 MiB golden image and clones of it,
# each with 2% of its blocks rewritten), then boots the guest with the
# module on QEMU's user network and runs guest-test.sh there.  Afterwards
# it checks the server's CSI counters against what the guest reported.
#
# usage: host-side.sh SEACACHE.KO SCFS-CHECK [run-guest options...]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)
ko=$1 check=$2
shift 2
: "${CSI_PORT:?the CSI service's port}"
: "${SEACACHECTL:?the seacachectl binary}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

size=$((64 << 20))
clones=${CLONES:-8}
url() { echo "$NFS_URL_BASE/$1?$NFS_URL_OPTS"; }
"$check" image 1 $size "$work/golden"
i=1
while [ $i -le "$clones" ]; do
	"$check" image 1 $size "$work/clone" $((100 + i)) 20
	nfs-cp "$work/clone" "$(url clone$i)" >/dev/null
	sha256sum <"$work/clone" | cut -c1-64 >"$work/clone$i.sha"
	i=$((i + 1))
done

log=${GUEST_LOG:-$work/console.log}
echo "host-side: images written, booting the guest" >&2
"$top/tests/kernel/run-guest" --net --script "$here/guest-test.sh" \
	--module "$ko" --kmod nfsv4 --kmod nfsv3 \
	--file "$check:/test/files/scfs-check" \
	--env CSI_PORT="$CSI_PORT" --env NFS_PORT="$NFS_PORT" \
	--env NFS_EXPORT="$NFS_EXPORT" \
	--env CLONE1_SHA="$(cat "$work/clone1.sha")" \
	--env CLONE2_SHA="$(cat "$work/clone2.sha")" \
	--env CLONE_SIZE=$size \
	--log "$log" "$@" || { grep -a "SCFS-" "$log" >&2; exit 1; }
grep -a "SCFS-" "$log"

# The server's view of the same run: the guest's host sent what its own
# counters say (seacachectl reads the service's STATS).
"$SEACACHECTL" stats --server 127.0.0.1:"$CSI_PORT" >"$work/stats"
cat "$work/stats"
