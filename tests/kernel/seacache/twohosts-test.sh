#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# In the guest: two SeaCache hosts, this guest's seacache.ko and a
# seacache-host on the host side (host-side.sh's peer-serve, host-read),
# delegate reads to each other:
#   - the guest reads content only the host side's host holds: delegated,
#     bytes from the peer, right;
#   - that peer killed in the middle of a file: the rest right, from the
#     server, the failed peer fetches counted;
#   - the host side reads content only the guest holds: the guest's peer
#     server sends the blocks;
#   - the same with every token forged on the way: refused, nothing sent.
# The CSI service takes a peer address only if it is the HELLO's source
# address, 127.0.0.1 for both (QEMU's user network connects from there):
# so the module serves on the guest's 127.0.0.1:$GUEST_PEER_PORT, which a
# relay joins to 10.0.2.15 (run-guest --hostfwd), and a relay on the
# guest's 127.0.0.1 joins the host side's peer port to 10.0.2.2.
set -eu
. /test/files/guest-lib.sh
relay=/test/files/scfs-fault-proxy
gport=$GUEST_PEER_PORT
size=2097152

# start_relay NAME LISTEN TARGET [forge]: a relay, its pid in $relay_pid.
start_relay() {
	name=$1
	shift
	$relay "$@" >/tmp/relay-$name &
	relay_pid=$!
	until grep -q ready /tmp/relay-$name; do
		kill -0 $relay_pid || fail "relay $name: $*"
		sleep 0.1
	done
}
# ack: what host-side.sh answered to the last host_do.
ack() { cat $lower/scfs-ack-$host_done; }

mount_lower
start_relay in 10.0.2.15:$gport 127.0.0.1:$gport
rin=$relay_pid
scfs_mount $upper "$CSI_PORT" "peer=127.0.0.1:$gport"
st() { scfs_stat $upper "$1"; }
[ "$(st connected)" = 1 ] || fail "not connected to the CSI service"
for f in pa:31 pb:32 pc:33 pd:34; do
	host_do nfs-write "${f%:*}-0.img" "${f#*:}" $size
	$check image "${f#*:}" $size "/tmp/${f%:*}"
done

step "the guest reads what only the host side's host holds"
host_do peer-serve "pa-%u.img"
start_relay out 127.0.0.1:"$(ack)" 10.0.2.2:"$(ack)"
rout=$relay_pid
d=$(st delegations) b=$(st bytes_from_peers)
cmp $upper/pa-0.img /tmp/pa || fail "pa: bytes"
echo "SCFS-STAT pa_delegations $(($(st delegations) - d))"
echo "SCFS-STAT pa_bytes_from_peers $(($(st bytes_from_peers) - b))"
[ "$(st delegations)" -gt "$d" ] || fail "pa: no read delegated"
[ "$(st bytes_from_peers)" -gt "$b" ] || fail "pa: no bytes from the peer"

step "the peer dies in the middle of a file"
host_do peer-kill
kill $rout
host_do peer-serve "pb-%u.img"
start_relay out 127.0.0.1:"$(ack)" 10.0.2.2:"$(ack)"
rout=$relay_pid
b=$(st bytes_from_peers)
dd if=$upper/pb-0.img of=/tmp/pb-half bs=65536 count=16 2>/dev/null
[ "$(st bytes_from_peers)" -gt "$b" ] || fail "pb: no bytes from the peer"
host_do peer-kill
pf=$(st peer_failures) b=$(st bytes_from_peers)
cmp $upper/pb-0.img /tmp/pb || fail "pb: bytes"
echo "SCFS-STAT pb_peer_failures $(($(st peer_failures) - pf))"
echo "SCFS-STAT pb_bytes_from_peers_after_kill $(($(st bytes_from_peers) - b))"
[ "$(st peer_failures)" -gt "$pf" ] || fail "pb: no failed peer fetch"
kill $rout

step "the host side's host reads what only the guest holds"
cmp $upper/pc-0.img /tmp/pc || fail "pc: bytes"
t=$(st blocks_to_peers)
host_do host-read "pc-%u.img"
echo "SCFS-STAT pc_blocks_to_peers $(($(st blocks_to_peers) - t))"
[ "$(st blocks_to_peers)" -gt "$t" ] || fail "pc: no block served to the peer"

step "forged tokens are refused"
kill $rin
start_relay in 10.0.2.15:$gport 127.0.0.1:$gport forge
cmp $upper/pd-0.img /tmp/pd || fail "pd: bytes"
t=$(st blocks_to_peers) r=$(st peer_refused)
host_do host-read "pd-%u.img"
echo "SCFS-STAT pd_peer_refused $(($(st peer_refused) - r))"
[ "$(st peer_refused)" -gt "$r" ] || fail "pd: no token refused"
[ "$(st blocks_to_peers)" = "$t" ] || fail "pd: blocks sent for forged tokens"

for f in delegations bytes_from_peers blocks_to_peers peer_failures \
	peer_refused peer_served_bytes; do
	echo "SCFS-STAT $f $(st $f)"
done
umount $upper || fail "umount"
rmmod seacache || fail "rmmod"
umount $lower
step "all passed"
