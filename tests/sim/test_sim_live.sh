#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# seacache-sim against the live lab: scripts/lab runs the boot and scan
# storms on small synthetic images (2 hosts x 4 VMs) under the Baseline
# and every CSI variant, then seacache-sim replays the same workload files
# with the lab's parameters.  Per storm and variant, the server->hosts
# data and the peer->host data of the two must agree within 5% of the
# live run's total.  The server delegates whatever a peer holds
# (--delegate-cached): its memory holds the small images, and by default
# it would delegate next to nothing.
# usage: test_sim_live.sh BUILD_DIR WORKDIR
set -euo pipefail
build=${1:?usage: test_sim_live.sh BUILD_DIR WORKDIR}
work=${2:?usage: test_sim_live.sh BUILD_DIR WORKDIR}
here=$(cd "$(dirname "$0")" && pwd)
lab=$here/../../scripts/lab
sim=$build/tools/sim/seacache-sim
hosts=2 vms=4 cache_mib=64
variants="nfs readhash tracker push coop dedup-rw seacache"
storms="boot scan"

fail() {
	echo "test_sim_live: $*" >&2
	exit 1
}

rm -rf "$work"
"$lab" --build "$build" --synthetic --size-mib 32 --hosts $hosts --vms $vms \
	--cache-mib $cache_mib --variants "$variants" --storms "$storms" --no-sim \
	--delegate-cached \
	--keep "$work" >"$work.log" 2>&1 || { tail -n 30 "$work.log"; fail "the lab failed"; }
live=$work/report/results.csv
[ -s "$live" ] || fail "no $live"
# The workload files the lab ran: kept with the run, else in its cache.
wl=$(find "$work" "${SEACACHE_CACHE:-/var/cache/seacache}/lab" -name boot.wl \
	-path '*synthetic*size_mib_32*' 2>/dev/null | head -n 1)
[ -n "$wl" ] || wl=$(find "$work" -name boot.wl | head -n 1)
[ -n "$wl" ] || fail "cannot find the lab's boot.wl"
wldir=$(dirname "$wl")

for storm in $storms; do
	"$sim" --variants baseline,dedup-read,w-tracker,ss-push,coop-cache,dedup-rw,seacache \
		--vms $((hosts * vms)) --vms-per-host $vms --host-cache "${cache_mib}M" \
		--block-size 4k --delegate-cached --quiet --no-header "$wldir/$storm.wl" |
		awk -F, -v storm="$storm" '{ print storm, $2, $25, $27 }'
done >"$work/sim.rows"

echo "| storm | variant | live server->hosts | sim | live peer->host | sim | diff, % of live |"
echo "|---|---|---:|---:|---:|---:|---:|"
awk -F, -v rows="$work/sim.rows" '
BEGIN {
	split("nfs baseline readhash dedup-read tracker w-tracker push ss-push coop coop-cache dedup-rw dedup-rw seacache seacache", m, " ")
	for (i = 1; i < 28; i += 2) simname[m[i]] = m[i + 1]
	while ((getline line < rows) > 0) {
		split(line, f, " ")
		data[f[1] " " f[2]] = f[3]
		peer[f[1] " " f[2]] = f[4]
	}
}
NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
{
	storm = $c["storm"]; v = $c["variant"]; key = storm " " simname[v]
	if (!(key in data)) { print "no simulated row for " key > "/dev/stderr"; bad = 1; next }
	ls = $c["server_bytes"]; lp = $c["peer_bytes"]; ss = data[key]; sp = peer[key]
	tot = ls + lp
	d = tot ? 100 * ((ss - ls > 0 ? ss - ls : ls - ss) + (sp - lp > 0 ? sp - lp : lp - sp)) / tot : 0
	printf "| %s | %s | %.2f MiB | %.2f MiB | %.2f MiB | %.2f MiB | %.2f |\n",
		storm, v, ls / 1048576, ss / 1048576, lp / 1048576, sp / 1048576, d
	if (d > 5) { print "FAIL: " storm " " v ": live and simulated differ by " d "%" > "/dev/stderr"; bad = 1 }
	n++
}
END { if (n != 14) { print "FAIL: " n " rows, not 14" > "/dev/stderr"; bad = 1 } exit bad }' "$live"
