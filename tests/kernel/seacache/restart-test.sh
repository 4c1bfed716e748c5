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
$check random $upper/a 21 "${OPS:-60}" 2 1M &
wl=$!
wait_moved writes "$w"
host_do csi-restart
wait $wl || fail "workload across the restart"
workload_check a
cat $upper/a/random-0 >/dev/null	# a call after the restart
[ "$(st registrations)" -gt "$reg" ] ||
	fail "no new registration after the restart ($reg)"
for f in registrations fallback_reads fallback_writes transport_reconnects; do
	echo "SCFS-STAT $f $(st $f)"
done
umount $upper || fail "umount"
rmmod seacache || fail "rmmod"
umount $lower
step "all passed"
