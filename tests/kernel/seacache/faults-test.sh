#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# In the guest: seacache.ko when the CSI service fails (host-side.sh with
# SCFS_PROXY: the stack reaches the service through host-side relays).
#   (a) the service gone (its relay killed) while a workload runs: reads
#       and writes fall back to NFS, byte-exact, the fallback counters
#       move; back again, I/O goes through CSI with no fallback;
#   (b) another NFS client writes a file behind the cache (the host side,
#       and this guest's plain NFS mount): seen through the stack on reopen;
#   (c) malformed replies (every one after HELLO, or every one) never
#       crash the kernel: reads and writes are right, from NFS.
set -eu
. /test/files/guest-lib.sh

mount_lower
scfs_mount $upper "$CSI_PROXY_PORT"
st() { scfs_stat $upper "$1"; }
[ "$(st connected)" = 1 ] || fail "not connected to the CSI service"

step "(a) the CSI service goes away while a workload runs"
mkdir $upper/b
$check image 3 65536 /tmp/x
fr=$(st fallback_reads) fw=$(st fallback_writes) w=$(st writes)
$check random $upper/b 22 "${OPS:-60}" 2 1M &
wl=$!
wait_moved writes "$w"
host_do csi-stop
cp /tmp/x $upper/gone || fail "write while the service is gone"
cmp $upper/gone /tmp/x || fail "read back while the service is gone"
cmp $lower/gone /tmp/x || fail "NFS reads another file"
[ "$(st fallback_writes)" -gt "$fw" ] || fail "fallback_writes did not move"
[ "$(st fallback_reads)" -gt "$fr" ] || fail "fallback_reads did not move"
echo "SCFS-STAT gone_fallback_reads $(($(st fallback_reads) - fr))"
echo "SCFS-STAT gone_fallback_writes $(($(st fallback_writes) - fw))"
host_do csi-start
wait $wl || fail "workload across the outage"
workload_check b
fr=$(st fallback_reads) fw=$(st fallback_writes) r=$(st reads) w=$(st writes)
cmp $upper/gone /tmp/x || fail "read once the service is back"
cp /tmp/x $upper/back || fail "write once the service is back"
cmp $lower/back /tmp/x || fail "NFS reads another file"
[ "$(st fallback_reads)" = "$fr" ] && [ "$(st fallback_writes)" = "$fw" ] ||
	fail "I/O fell back with the service back"
[ "$(st reads)" -gt "$r" ] && [ "$(st writes)" -gt "$w" ] ||
	fail "I/O did not go through CSI with the service back"

step "(b) another NFS client writes behind the cache"
$check image 7 65536 /tmp/a
cp /tmp/a $upper/behind
cmp $upper/behind /tmp/a || fail "behind: first content"
host_do nfs-write behind 8 98304
$check image 8 98304 /tmp/b
cmp $upper/behind /tmp/b || fail "behind: the host side's write not seen"
$check image 9 49152 /tmp/c
cp /tmp/c $lower/behind
cmp $upper/behind /tmp/c || fail "behind: the plain NFS mount's write not seen"

step "(c) malformed replies after HELLO"
m=/srv/mangle
scfs_mount $m "$CSI_MANGLE_PORT"
cmp $m/behind /tmp/c || fail "mangled: read"
cp /tmp/x $m/mw || fail "mangled: write"
cmp $lower/mw /tmp/x || fail "mangled: NFS reads another file"
cmp $m/mw /tmp/x || fail "mangled: read back"
[ "$(scfs_stat $m fallback_reads)" -gt 0 ] || fail "mangled: no fallback read"
echo "SCFS-STAT mangled_fallback_reads $(scfs_stat $m fallback_reads)"
echo "SCFS-STAT mangled_fallback_writes $(scfs_stat $m fallback_writes)"
umount $m || fail "umount $m"

step "(c) malformed replies from the first (HELLO) on"
g=/srv/garbage
scfs_mount $g "$CSI_GARBAGE_PORT"
[ "$(scfs_stat $g connected)" = 0 ] || fail "garbage: a HELLO accepted"
cmp $g/behind /tmp/c || fail "garbage: read"
[ "$(scfs_stat $g fallback_reads)" -gt 0 ] || fail "garbage: no fallback read"
umount $g || fail "umount $g"

for f in reads fallback_reads fallback_writes registrations \
	transport_reconnects transport_timeouts; do
	echo "SCFS-STAT $f $(st $f)"
done
umount $upper || fail "umount"
rmmod seacache || fail "rmmod"
umount $lower
step "all passed"
