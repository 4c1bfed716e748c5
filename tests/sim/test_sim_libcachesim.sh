#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# seacache-sim's LRU and ARC against libCacheSim's (its Python package, in
# the venv of scripts/libcachesim-venv): on a generated Zipf trace of
# single-block reads, unit-size objects, the miss counts must be equal at
# 1, 5, 10 and 25% of the trace's distinct blocks.
# usage: test_sim_libcachesim.sh BUILD_DIR SOURCE_DIR
set -eu
build=$1
src=$2
sim=$build/tools/sim/seacache-sim
gen=$build/tools/sim/seacache-tracegen
py=$("$src/scripts/libcachesim-venv") || { echo "FAIL: no libcachesim (pip)"; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

"$gen" --zipf 0.9 --objects 50000 --requests 200000 --seed 3 -o "$dir/z.csv" 2>/dev/null
sizes=""
for pct in 1 5 10 25; do
	row=$("$sim" --mode cache --policy lru --host-cache "$pct%" --quiet --no-header "$dir/z.csv")
	sizes="$sizes${sizes:+,}$(echo "$row" | cut -d, -f8)"
done
echo "cache sizes (blocks): $sizes"
"$py" "$src/tools/sim/libcachesim-replay" "$dir/z.csv" lru,arc "$sizes" \
	>"$dir/lcs" 2>"$dir/lcs.err" || { cat "$dir/lcs.err"; echo "FAIL: libcachesim"; exit 1; }
fail=0
while read -r pol size n misses secs; do
	got=$("$sim" --mode cache --policy "$pol" --host-cache "$size" --quiet --no-header "$dir/z.csv" |
		cut -d, -f11,19)
	echo "$pol $size blocks: libCacheSim $n requests $misses misses; seacache-sim ${got%,*} requests ${got#*,} misses"
	[ "$got" = "$n,$misses" ] || { echo "FAIL: $pol at $size blocks differs"; fail=1; }
done <"$dir/lcs"
[ "$(wc -l <"$dir/lcs")" -eq 8 ] || { echo "FAIL: libCacheSim gave $(wc -l <"$dir/lcs") runs, not 8"; exit 1; }
exit $fail
