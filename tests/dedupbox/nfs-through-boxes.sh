#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# NFS through the dedup box pair, run by scripts/ganesha-run (its private
# network namespace: fixed loopback ports are ours).  A server box reaches
# ganesha's NFS and MOUNT ports, a host box offers them again on 13049 and
# 13048; then:
#   1. the FSAL io suite (IO_TEST) with its client pointed at the host box;
#   2. a seeded 16 MiB file written with nfs-cp through the boxes, read
#      back twice and compared byte for byte; the second read's bytes on
#      the link (server box -> host box) must be about the fingerprints
#      only (under 3% of the file), and with --rw a second copy of the same
#      content written through the boxes costs the same on the other way.
# usage: nfs-through-boxes.sh SEACACHE-DEDUPBOX IO_TEST [--rw]
set -eu
box=$1
io_test=$2
rw=${3:-}
work=$(mktemp -d)
spid= hpid=
cleanup() {
	for p in $hpid $spid; do
		kill "$p" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
fail() {
	echo "nfs-through-boxes: $*" >&2
	echo "--- server box log" >&2; tail -20 "$work/server.err" >&2 || true
	echo "--- host box log" >&2; tail -20 "$work/host.err" >&2 || true
	exit 1
}

"$box" --side server --link 127.0.0.1:13050 --json --quiet \
	--target "127.0.0.1:$NFS_PORT" --target "127.0.0.1:$MNT_PORT" \
	>"$work/server.out" 2>"$work/server.err" &
spid=$!
"$box" --side host --link 127.0.0.1:13050 --json --quiet $rw \
	--forward "127.0.0.1:13049=127.0.0.1:$NFS_PORT" \
	--forward "127.0.0.1:13048=127.0.0.1:$MNT_PORT" \
	>"$work/host.out" 2>"$work/host.err" &
hpid=$!
opts="nfsport=13049&mountport=13048"
url="nfs://127.0.0.1$NFS_EXPORT"
n=0
until nfs-ls "$url/?$opts" >/dev/null 2>&1; do
	n=$((n + 1))
	[ $n -lt 200 ] || fail "no NFS through the boxes after 20 s"
	kill -0 $spid 2>/dev/null || fail "the server box exited"
	kill -0 $hpid 2>/dev/null || fail "the host box exited"
	sleep 0.1
done

# 1. the io suite through the boxes
NFS_URL_OPTS=$opts "$io_test" || fail "the io suite failed through the boxes"

# A box's counter from its latest statistics line (SIGUSR1 asks for one).
stat_of() { # server|host KEY
	before=$(wc -l <"$work/$1.out")
	if [ "$1" = server ]; then kill -USR1 $spid; else kill -USR1 $hpid; fi
	n=0
	while [ "$(wc -l <"$work/$1.out")" -le "$before" ]; do
		n=$((n + 1))
		[ $n -lt 100 ] || fail "no statistics from the $1 box"
		sleep 0.05
	done
	tail -1 "$work/$1.out" | sed -n "s/.*\"$2\":\([0-9]*\).*/\1/p"
}

# 2. a seeded file: written, read twice
size=$((16 * 1024 * 1024))
openssl enc -aes-128-ctr -nosalt -pass pass:dedupbox -pbkdf2 </dev/zero 2>/dev/null |
	head -c $size >"$work/src"
[ "$(stat -c %s "$work/src")" -eq $size ] || fail "could not make the seeded file"
nfs-cp "$work/src" "$url/boxes-a?$opts" >/dev/null || fail "nfs-cp of the file to the server failed"
h0=$(stat_of host link_tx_bytes)
nfs-cp "$work/src" "$url/boxes-b?$opts" >/dev/null || fail "nfs-cp of the copy to the server failed"
h1=$(stat_of host link_tx_bytes)
for pass in 1 2; do
	s0=$(stat_of server link_tx_bytes)
	nfs-cp "$url/boxes-a?$opts" "$work/read$pass" >/dev/null || fail "read $pass failed"
	s1=$(stat_of server link_tx_bytes)
	cmp "$work/src" "$work/read$pass" || fail "read $pass differs from what was written"
	echo "read $pass of $size bytes: $((s1 - s0)) bytes server box -> host box"
done
second=$((s1 - s0))
[ $((second * 100)) -lt $((size * 3)) ] ||
	fail "the second read took $second bytes on the link (want under 3% of $size)"
echo "second copy written: $((h1 - h0)) bytes host box -> server box"
if [ -n "$rw" ]; then
	[ $(((h1 - h0) * 100)) -lt $((size * 3)) ] ||
		fail "Dedup-RW: the copy took $((h1 - h0)) bytes on the link (want under 3% of $size)"
else
	[ $((h1 - h0)) -ge $size ] || fail "Dedup-Read: writes must go whole ($((h1 - h0)) < $size)"
fi
nfs-cp "$url/boxes-b?$opts" "$work/readb" >/dev/null && cmp "$work/src" "$work/readb" ||
	fail "the copy reads back wrong"
echo "nfs-through-boxes: all passed"
