#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# In the guest (seacache.ko loaded by run-guest): the NFS export mounted
# as the lower file system, the seacache stack on it, then
#   - mount options, a bad option refused with a kernel log line;
#   - the namespace through the stack equals the plain NFS view;
#   - a seeded random workload (4 threads, buffered and O_DIRECT, truncate,
#     append) byte-exact against a model, on the stack and, as the
#     reference, on the plain NFS mount;
#   - mmap coherent with read and write;
#   - clones: clone 1 then clone 2 read through the stack, clone 2 at
#     least 90% served with no data from the server;
#   - remount with another cache size; unmount and rmmod.
set -eu
check=/test/files/scfs-check
lower=/srv/.vdi-nfs
upper=/srv/vdi
fail() { echo "SCFS-TEST: FAILED: $*"; exit 1; }
step() { echo "SCFS-TEST: [$(cut -d" " -f1 /proc/uptime)s] $*"; }

mkdir -p $lower $upper /mnt/bad
mount -t nfs4 -o vers=4.2,port="$NFS_PORT",proto=tcp \
	10.0.2.2:"$NFS_EXPORT" $lower || fail "NFS mount"
opts=lower=$lower,server=10.0.2.2,csi_port=$CSI_PORT,cache=192M

step "a bad option is refused, with a reason in the kernel log"
if mount -t seacache -o "$opts,cache=12" none /mnt/bad 2>/dev/null; then
	fail "cache=12 was accepted"
fi
dmesg | grep -q "cache=12: a size of at least 64K" ||
	fail "no kernel log line for cache=12"
if mount -t seacache -o "server=10.0.2.2,csi_port=$CSI_PORT" none /mnt/bad \
	2>/dev/null; then
	fail "a mount without lower= was accepted"
fi
dmesg | grep -q "lower= is missing" || fail "no kernel log line for lower="

mount -t seacache -o "$opts" none $upper || fail "seacache mount"
grep " $upper seacache " /proc/mounts | grep -q "cache=196608k" ||
	fail "options not in /proc/mounts: $(grep seacache /proc/mounts)"
dev=$(awk -v m=$upper '$5 == m { print $3 }' /proc/self/mountinfo)
stats=/sys/fs/seacache/$dev
[ "$(cat $stats/connected)" = 1 ] || fail "not connected to the CSI service"
stat() { cat "$stats/$1"; }

step "namespace: the stack shows what NFS shows"
mkdir $upper/d
echo hello >$upper/d/f
ln -s f $upper/d/l
ln $upper/d/f $upper/d/h
mv $upper/d/h $upper/d/h2
mkdir $upper/d/sub
rmdir $upper/d/sub
[ "$(cat $upper/d/l)" = hello ] || fail "symlink"
[ "$(readlink $upper/d/l)" = f ] || fail "readlink"
[ "$(ls $upper/d | tr '\n' ' ')" = "$(ls $lower/d | tr '\n' ' ')" ] ||
	fail "readdir differs: $(ls $upper/d) vs $(ls $lower/d)"
[ "$(ls -ln $upper/d/f | awk '{print $1, $2, $5}')" = \
  "$(ls -ln $lower/d/f | awk '{print $1, $2, $5}')" ] || fail "attributes"
chmod 600 $upper/d/f
[ "$(ls -ln $lower/d/f | cut -c1-10)" = "-rw-------" ] || fail "chmod"
rm $upper/d/f $upper/d/h2 $upper/d/l
rmdir $upper/d
[ ! -e $lower/d ] || fail "rmdir not seen on NFS"
df $upper >/dev/null || fail "statfs"

step "random workload through the stack, against a model"
$check random $upper "${SEED:-1}" "${OPS:-300}" 4 8M || fail "random workload"
step "the same workload on the plain NFS mount (reference)"
mkdir $lower/ref
$check random $lower/ref "${SEED:-1}" "${OPS:-300}" 4 8M ||
	fail "reference workload on plain NFS"
step "what the stack wrote, NFS reads"
for i in 0 1 2 3; do
	cmp $upper/random-$i $lower/random-$i || fail "random-$i differs"
done

step "mmap"
$check mmap $upper/mm || fail "mmap coherence"
cmp $upper/mm $lower/mm || fail "mmapped file differs on NFS"

step "clones: clone 1, then clone 2"
b0=$(stat bytes_from_server)
[ "$(sha256sum <$upper/clone1 | cut -c1-64)" = "$CLONE1_SHA" ] ||
	fail "clone1 bytes"
b1=$(stat bytes_from_server)
step "clone 1 read"
[ "$(sha256sum <$upper/clone2 | cut -c1-64)" = "$CLONE2_SHA" ] ||
	fail "clone2 bytes"
b2=$(stat bytes_from_server)
c1=$((b1 - b0)) c2=$((b2 - b1))
echo "SCFS-STAT clone1_bytes_from_server $c1"
echo "SCFS-STAT clone2_bytes_from_server $c2"
echo "SCFS-STAT clone2_served_locally_permille $(((CLONE_SIZE - c2) * 1000 / CLONE_SIZE))"
[ $((c2 * 10)) -le "$CLONE_SIZE" ] ||
	fail "clone 2: $c2 of $CLONE_SIZE bytes came from the server (> 10%)"
for f in reads address_hits content_hits misses bytes_from_server \
	pushes_received pushes_used delegations fallback_reads \
	fallback_writes cache_blocks memory_bytes; do
	echo "SCFS-STAT $f $(stat $f)"
done
[ "$(stat fallback_reads)" = 0 ] || fail "reads fell back to NFS"

step "clone 1 again: each byte copied once, from the cache to the reader"
r0=$(stat csi_read_bytes) k0=$(stat read_copied_bytes)
[ "$(sha256sum <$upper/clone1 | cut -c1-64)" = "$CLONE1_SHA" ] ||
	fail "clone1 bytes, read again"
r=$(($(stat csi_read_bytes) - r0)) k=$(($(stat read_copied_bytes) - k0))
echo "SCFS-STAT reread_csi_bytes $r copied_bytes $k"
[ "$r" = "$CLONE_SIZE" ] || fail "$r bytes read through CSI of $CLONE_SIZE"
# a block asked again in a read is copied again: a few, not a bounce
[ "$k" -ge "$r" ] && [ $((k * 100)) -le $((r * 101)) ] ||
	fail "$k bytes copied for $r read"

step "remount with another cache size"
mount -o remount,cache=64M $upper || fail "remount"
grep " $upper seacache " /proc/mounts | grep -q "cache=65536k" ||
	fail "new cache size not shown"
[ "$(sha256sum <$upper/clone1 | cut -c1-64)" = "$CLONE1_SHA" ] ||
	fail "clone1 after remount"

umount $upper || fail "umount"
[ ! -e "$stats" ] || fail "sysfs directory left after umount"
rmmod seacache || fail "rmmod"
umount $lower
step "all passed"
