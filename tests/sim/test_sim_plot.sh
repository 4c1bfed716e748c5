#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# tools/sim/sim-plots end to end on a small workload: seacache-tracegen's
# trace, seacache-sim's sweeps, tools/sim/plot's figures.  Every figure must
# be drawn as a PNG from the simulator's own CSV (plot leaves out, with a
# note, a figure whose rows are missing, and stops on a missing column), so
# a column or row renamed on one side fails here.  A CSV without
# seacache-sim's columns is refused with a message.
# usage: test_sim_plot.sh BUILD_DIR SIM_PLOTS PLOT
set -eu
build=$1
sim_plots=$2
plot=$3
command -v gnuplot >/dev/null || { echo "FAIL: gnuplot missing (scripts/install-deps sim)"; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

VMS=4 BLOCKS=512 POLICIES=lru,cdac-lru,acq BLOCK_SIZES=4k,16k \
	"$sim_plots" "$build" "$dir/out" >"$dir/log" 2>&1 ||
	{ cat "$dir/log"; echo "FAIL: sim-plots"; exit 1; }
for f in variants-bytes variants-latency elru hit-ratio-4k hit-ratio-16k acq-load-rate; do
	png=$dir/out/$f.png
	[ -s "$png" ] || { cat "$dir/log"; echo "FAIL: $f.png not drawn"; exit 1; }
	[ "$(head -c 4 "$png" | od -An -c | tr -d ' ')" = "211PNG" ] ||
		{ echo "FAIL: $f.png is not a PNG"; exit 1; }
done

echo "a,b,c" >"$dir/bad.csv"
if "$plot" -o "$dir/png2" "$dir/bad.csv" 2>"$dir/err"; then
	echo "FAIL: a CSV without seacache-sim's columns was accepted"; exit 1
fi
grep -q "nothing to draw" "$dir/err" || { echo "FAIL: no message:"; cat "$dir/err"; exit 1; }
echo "plot test: every figure drawn from a seacache-sim run ($(grep -c -v "^mode," "$dir/out/sim.csv") rows)"
