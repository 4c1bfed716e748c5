#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# seacache-sim's system model (tools/sim/README.md, "The model"):
#  - time: a storm whose VMs all start at 0 gives the same results whatever
#    the order of its lines (each VM's own lines kept in order), and a
#    binary trace (seacache-tracegen --convert) the same as its text;
#  - single-flight: VMs of one host reading the same contents at once
#    fetch each content once (Dedup-Read: data misses = distinct contents
#    read), the others wait for it;
#  - delegation: Coop-Cache delegates to a peer holding the content even
#    when the server's cache holds it too.
# usage: test_sim_model.sh BUILD_DIR
set -eu
build=$1
sim=$build/tools/sim/seacache-sim
gen=$build/tools/sim/seacache-tracegen
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$gen" -s 5 -v 8 -n 1024 --boot-blocks 256 -w 0.05 -m 4 -o "$dir/w.wl" 2>/dev/null
# The storm: every line at time 0, in three orders.
awk '/^#/ { print; next } { $1 = 0; print }' "$dir/w.wl" >"$dir/a.wl"
{ grep '^#' "$dir/a.wl"; grep -v '^#' "$dir/a.wl" | sort -s -k2,2n; } >"$dir/b.wl"
{ grep '^#' "$dir/a.wl"; grep -v '^#' "$dir/a.wl" | sort -s -k2,2nr; } >"$dir/c.wl"
"$gen" --convert "$dir/a.wl" -o "$dir/a.sctr"
run() { # trace -> the CSV without the columns of time, speed, memory and path
	"$sim" --vms-per-host 4 --host-cache 256 --server-cache 64 --net-ms 1 --disk-ms 2 \
		--quiet --no-header "$1" | cut -d, -f1-35,41-
}
run "$dir/a.wl" >"$dir/a.csv"
[ "$(wc -l <"$dir/a.csv")" -eq 7 ] || fail "not 7 variants"
for t in b.wl c.wl a.sctr; do
	run "$dir/$t" >"$dir/t.csv"
	cmp -s "$dir/a.csv" "$dir/t.csv" || { diff "$dir/a.csv" "$dir/t.csv"; fail "$t differs from a.wl"; }
done
echo "the storm in 3 line orders and in binary: the same results"

# Single-flight: 4 VMs on one host, the same 200 blocks at time 0.
awk 'BEGIN { print "# seacache-workload v1 block_size=4096"
	for (b = 0; b < 200; b++) for (v = 0; v < 4; v++)
		printf "0 %d R %d %d 1 %032x\n", v, v, b, b + 1 }' >"$dir/sf.wl"
row=$("$sim" --variants dedup-read --vms-per-host 4 --host-cache 1000 --quiet --no-header "$dir/sf.wl")
misses=$(echo "$row" | cut -d, -f19)
waits=$(echo "$row" | cut -d, -f41)
echo "single-flight: 800 reads of 200 contents: $misses fetched, $waits waited"
[ "$misses" -eq 200 ] || fail "each content fetched once: $misses, not 200"
[ "$waits" -eq 600 ] || fail "600 reads wait for a fetch in flight: $waits"

# Delegation: host 1 reads what host 0 read earlier.  A server cache that
# holds it all sends it itself, unless told to delegate cached content too;
# one of a single block delegates all but the content still in it.
awk 'BEGIN { print "# seacache-workload v1 block_size=4096"
	for (b = 0; b < 100; b++) printf "0 0 R 0 %d 1 %032x\n", b, b + 1
	for (b = 0; b < 100; b++) printf "1000000 1 R 1 %d 1 %032x\n", b, b + 1 }' >"$dir/dl.wl"
# server cache, option, peer blocks, server data blocks
for c in "1000 - 0 200" "1000 --delegate-cached 100 100" "1 - 99 101"; do
	# shellcheck disable=SC2086 # the case's words
	set -- $c
	opt=""
	[ "$2" = - ] || opt=$2
	row=$("$sim" --variants coop-cache --vms-per-host 1 --host-cache 1000 \
		--server-cache "$1" ${opt:+"$opt"} --quiet --no-header "$dir/dl.wl")
	peer=$(echo "$row" | cut -d, -f27)
	data=$(echo "$row" | cut -d, -f25)
	echo "delegation, server cache $1 $2: peer bytes $peer, server data bytes $data"
	[ "$peer" -eq $(($3 * 4096)) ] || fail "server cache $1 $2: $3 blocks from the peer"
	[ "$data" -eq $(($4 * 4096)) ] || fail "server cache $1 $2: $4 blocks from the server"
done
