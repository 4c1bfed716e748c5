#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# In the guest (tests/kernel/run-guest --net): the export mounted by the
# kernel's NFS client over NFSv3 (with NLM locks) and NFSv4.2, and the
# scenarios of kconform run on each, then those of two clients (one
# directory seen through both mounts); every line goes to the console as
# "KCONF VERSION SCENARIO: RESULT" for the host side to compare.
set -eu
k=/test/files/kconform
srv=10.0.2.2
fail() { echo "KCONF-FAILED: $*"; exit 1; }
# Only warnings and worse on the console: a kernel notice must not land in
# the middle of a transcript line (a warning panics: panic_on_warn).
dmesg -n 5
hostname kconform-guest	# the NLM caller name
$k rpc-stubs || fail "rpc stubs"
mkdir -p /mnt/v3 /mnt/v4.2
$k mount "$srv:$NFS_EXPORT" /mnt/v3 \
	"vers=3,proto=tcp,port=$NFS_PORT,mountport=$MNT_PORT,mountproto=tcp,addr=$srv,mountaddr=$srv" ||
	fail "NFSv3 mount"
$k mount "$srv:$NFS_EXPORT" /mnt/v4.2 \
	"vers=4.2,proto=tcp,port=$NFS_PORT,addr=$srv,clientaddr=10.0.2.15" ||
	fail "NFSv4.2 mount"
cd /tmp
for v in v3 v4.2; do
	mkdir /mnt/$v/$v || fail "mkdir on $v"
	$k run /mnt/$v/$v >/tmp/$v.txt || fail "kconform run on $v"
	sed "s/^KCONF /KCONF $v /" /tmp/$v.txt
done
# two clients at once: one directory through both mounts
mkdir /mnt/v3/cross || fail "mkdir cross"
$k cross /mnt/v3/cross /mnt/v4.2/cross >/tmp/cross.txt || fail "kconform cross"
sed "s/^KCONF /KCONF v3+v4.2 /" /tmp/cross.txt
umount /mnt/v3 || fail "umount v3"
umount /mnt/v4.2 || fail "umount v4.2"
