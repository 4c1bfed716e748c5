#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# In the guest: seacache.ko when the CSI service fails (host-side.sh with
# SCFS_PROXY: the stack reaches the service through host-side relays).
#   (a) the service gone (its relay killed) while a workload runs: reads
#       and writes fall back to NFS, byte-exact, the fallback counters
#       move; back again, I/O goes through CSI with no fallback;
#   (b) another NFS client writes a file behind the cache (the host side,
#       and this guest's plain NFS mount): seen through the stack on reopen;
#   (c) a silent service (connections up, every reply held) and one
#       that answers after the deadline: the service is marked down, the
#       VM's I/O returns from NFS within a bound, byte-exact, and CSI
#       comes back once the replies flow;
#   (d) a remount whose COMMIT cannot reach the server: the unstable
#       blocks are written and flushed through NFS, not dropped;
#   (e) malformed replies (every one after HELLO, or every one) never
#       crash the kernel: reads and writes are right, from NFS.
set -eu
. /test/files/guest-lib.sh

mount_lower
scfs_mount $upper "$CSI_PROXY_PORT"
st() { scfs_stat $upper "$1"; }
# wait_up WHAT: until the probe (every second) finds the service again.
wait_up() {
	i=0
	while [ "$(st csi_down)" = 1 ]; do
		i=$((i + 1))
		[ $i -le 120 ] || fail "$1: the service not back within 60 s"
		sleep 0.5
	done
}
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
wait_up "gone"
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

now() { cut -d" " -f1 /proc/uptime; }
# The VM's I/O with the service not answering: well within a minute (the
# deadline is 5 s; without the breaker every call took 4 x 30 s).
BOUND_S=60
# silent_io NAME: a file written and read back, and clone 1 read, through
# the stack while the service does not answer; its seconds printed.
silent_io() {
	dt=$(st down_trips) dc=$(st down_calls) t0=$(now)
	cp /tmp/s $upper/"$1" || fail "$1: write"
	cmp $upper/"$1" /tmp/s || fail "$1: read back"
	[ "$(sha $upper/clone1)" = "$CLONE1_SHA" ] || fail "$1: clone 1 read"
	secs=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')
	echo "SCFS-STAT ${1}_io_seconds $secs"
	awk -v s="$secs" -v b=$BOUND_S 'BEGIN { exit !(s < b) }' ||
		fail "$1: the I/O took ${secs}s (bound ${BOUND_S}s)"
	cmp $lower/"$1" /tmp/s || fail "$1: NFS reads another file"
	[ "$(st csi_down)" = 1 ] || fail "$1: the service is not marked down"
	[ "$(st down_trips)" -gt "$dt" ] || fail "$1: down_trips did not move"
	[ "$(st down_calls)" -gt "$dc" ] || fail "$1: no call went around it"
}
# back_up NAME: once the probe finds the service, I/O goes through CSI.
back_up() {
	wait_up "$1"
	fr=$(st fallback_reads) fw=$(st fallback_writes) w=$(st writes)
	cp /tmp/s $upper/"$1"-back || fail "$1: write once back"
	cmp $lower/"$1"-back /tmp/s || fail "$1: NFS reads another file"
	cmp $upper/"$1"-back /tmp/s || fail "$1: read once back"
	[ "$(st fallback_reads)" = "$fr" ] &&
		[ "$(st fallback_writes)" = "$fw" ] ||
		fail "$1: I/O fell back with the service back"
	[ "$(st writes)" -gt "$w" ] || fail "$1: no write through CSI"
}

step "(c) a silent CSI service: connections up, no replies"
$check image 12 1048576 /tmp/s
host_do csi-silent
silent_io silent
host_do csi-speak
back_up silent

step "(c) a CSI service that answers after the deadline"
host_do csi-slow 8000
silent_io slow
host_do csi-start
back_up slow

step "(d) a remount whose COMMIT cannot reach the server"
$check image 13 262144 /tmp/u
$check hold 13 262144 $upper/unstable /tmp/release >/tmp/held &
holder=$!
until grep -q written /tmp/held; do
	kill -0 $holder || fail "remount: the writer failed"
	sleep 0.2
done
pinned=$(st unstable_blocks) drained=$(st drained_blocks)
[ "$pinned" -gt 0 ] || fail "remount: no unstable blocks"
host_do csi-silent
mount -o remount,cache=32M $upper || fail "remount"
host_do csi-speak
# not left to a server that may lose them: written and flushed through NFS
[ $(($(st drained_blocks) - drained)) -ge "$pinned" ] ||
	fail "remount: $pinned unstable blocks, $(($(st drained_blocks) - drained)) written through NFS"
touch /tmp/release
wait $holder || fail "remount: the writer's close"
cmp $lower/unstable /tmp/u ||
	fail "remount: unstable writes lost with the failed COMMIT"
cmp $upper/unstable /tmp/u || fail "remount: read through the stack"

step "(e) malformed replies after HELLO"
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

step "(e) malformed replies from the first (HELLO) on"
g=/srv/garbage
scfs_mount $g "$CSI_GARBAGE_PORT"
[ "$(scfs_stat $g connected)" = 0 ] || fail "garbage: a HELLO accepted"
cmp $g/behind /tmp/c || fail "garbage: read"
[ "$(scfs_stat $g fallback_reads)" -gt 0 ] || fail "garbage: no fallback read"
umount $g || fail "umount $g"

for f in reads fallback_reads fallback_writes registrations \
	transport_reconnects transport_timeouts down_trips down_calls \
	drained_blocks; do
	echo "SCFS-STAT $f $(st $f)"
done
umount $upper || fail "umount"
rmmod seacache || fail "rmmod"
umount $lower
step "all passed"
