#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# In the guest: the CSI service restarts (a new epoch; ganesha restarts as
# a whole, the NFS client recovers) while a seeded random workload runs
# through the stack: every byte read is what was written (the unstable
# CSI writes the restart lost are written again, PROTOCOL.md §6.2 item 5,
# §11.6), what the stack wrote NFS reads too, and the host registered
# again.
set -eu
. /test/files/guest-lib.sh

mount_lower
scfs_mount $upper "$CSI_PORT"
st() { scfs_stat $upper "$1"; }
[ "$(st connected)" = 1 ] || fail "not connected to the CSI service"

step "the CSI service restarts while a workload runs"
mkdir $upper/a
reg=$(st registrations) w=$(st writes)
# Seeded workloads until the restart is done, then one more: however
# slow the machine, one runs across the restart and one after it.
done_flag=/tmp/restart-done
(
	seed=21
	while :; do
		last=0
		[ -e $done_flag ] && last=1
		$check random $upper/a $seed "${OPS:-60}" 2 1M || exit 1
		[ $last = 1 ] && exit 0
		seed=$((seed + 1))
	done
) &
wl=$!
wait_moved writes "$w"
host_do csi-restart
touch $done_flag
stats() {
	for f in registrations fallback_reads fallback_writes \
		 transport_reconnects unstable_blocks transport_timeouts; do
		echo "SCFS-STAT $f $(st $f)"
	done
}
wait $wl || { stats; fail "workload across the restart"; }
workload_check a
[ "$(st registrations)" -gt "$reg" ] ||
	fail "no new registration after the restart ($reg)"
stats
umount $upper || fail "umount"
rmmod seacache || fail "rmmod"
umount $lower
step "all passed"
