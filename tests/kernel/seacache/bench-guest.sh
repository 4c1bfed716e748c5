#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# In the guest: seacache.ko against the plain NFS mount it stacks on, the
# three targets of its issue, as ratios from one run (QEMU/TCG makes the
# absolute numbers far below a real host's; the ratios are what counts):
#   cached 4 KiB random reads through the stack / page-cache-warm reads of
#     the plain NFS mount;
#   cold sequential read of unique content, stack / plain NFS;
#   second clone's sequential read, stack / plain NFS cold, and the share
#     of its bytes that came from the server.
# Prints "SCFS-BENCH name value" lines; run by scripts/bench-kernel.
set -eu
set -o pipefail
check=/test/files/scfs-check
lower=/srv/.vdi-nfs
upper=/srv/vdi
fail() { echo "SCFS-BENCH: FAILED: $*"; exit 1; }
mbs() { sed -n 's/.* \([0-9.]*\) MB\/s$/\1/p'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
# page cache only (1): 2 and 3 would run the shrinkers, ours too
drop() { sync; echo 1 >/proc/sys/vm/drop_caches; }

mkdir -p $lower $upper
mount -t nfs4 -o vers=4.2,port="$NFS_PORT",proto=tcp \
	10.0.2.2:"$NFS_EXPORT" $lower || fail "NFS mount"
mount -t seacache -o \
	lower=$lower,server=10.0.2.2,csi_port=$CSI_PORT,cache=256M none $upper ||
	fail "seacache mount"
dev=$(awk -v m=$upper '$5 == m { print $3 }' /proc/self/mountinfo)
server_bytes() { cat /sys/fs/seacache/"$dev"/bytes_from_server; }
# copied_per_byte sets cpb: bytes copied into the reader's memory per
# byte the stack's CSI reads returned, since the last call (1.00: no
# bounce)
copied0=0 read0=0
copied_per_byte() {
	c=$(cat /sys/fs/seacache/"$dev"/read_copied_bytes)
	r=$(cat /sys/fs/seacache/"$dev"/csi_read_bytes)
	cpb=$(ratio $((c - copied0)) $((r - read0)))
	copied0=$c read0=$r
}
ops=${BENCH_OPS:-20000}

# Cold sequential, unique content: clone 1 through the stack (empty
# cache), clone 3 through plain NFS after dropping the page cache.
s_cold=$($check seq $upper/clone1 65536 | mbs)
drop
n_cold=$($check seq $lower/clone3 65536 | mbs)
copied_per_byte
echo "SCFS-BENCH cold_seq_MBps stack=$s_cold nfs=$n_cold ratio=$(ratio "$s_cold" "$n_cold") copied_per_byte=$cpb"

# Second clone after the first, through the stack; plain NFS reads a clone
# it has not read (clone 4), cold.
b0=$(server_bytes)
s_clone=$($check seq $upper/clone2 65536 | mbs)
b1=$(server_bytes)
drop
n_clone=$($check seq $lower/clone4 65536 | mbs)
copied_per_byte
echo "SCFS-BENCH second_clone_MBps stack=$s_clone nfs=$n_clone ratio=$(ratio "$s_clone" "$n_clone") server_share=$(ratio $((b1 - b0)) "$CLONE_SIZE") copied_per_byte=$cpb"

# Cached random 4 KiB reads: clone 1 is in the stack's cache; clone 3 in
# NFS's page cache (read once more to warm it).
$check seq $lower/clone3 65536 >/dev/null
copied_per_byte
s_rand=$($check bench $upper/clone1 4096 "$ops" | mbs)
n_rand=$($check bench $lower/clone3 4096 "$ops" | mbs)
copied_per_byte
echo "SCFS-BENCH cached_rand4k_MBps stack=$s_rand nfs_warm=$n_rand ratio=$(ratio "$s_rand" "$n_rand") copied_per_byte=$cpb"

umount $upper
umount $lower
