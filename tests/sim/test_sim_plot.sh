#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Smoke test of tools/sim/plot: every figure drawn from a made-up CSV with
# seacache-sim's columns (tools/sim/README.md), as non-empty PNGs; a CSV
# without them refused with a message.  Exit 77 (skipped) without gnuplot.
set -eu
plot=$1
command -v gnuplot >/dev/null || { echo "gnuplot missing: skipped"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

hdr=mode,variant,policy,block_size,vms,hosts,vm_cache_blocks,host_cache_blocks,server_cache_blocks,cache_pct,requests,reads,writes,read_blocks,write_blocks,vm_hits,host_hits,content_hits,read_misses,read_hit_ratio,overall_hit_ratio,loads,load_rate,server_bytes,data_bytes,csi_bytes,peer_bytes,disk_reads,disk_writes,avg_latency_ms,avg_read_latency_ms,evictions,silent_writes,events,tracked_blocks,sim_meta_bytes,meta_bytes_per_block,seconds,blocks_per_s,trace
{
	echo "$hdr"
	awk 'BEGIN {
		split("baseline dedup-read w-tracker ss-push coop-cache dedup-rw seacache", v, " ")
		for (n = 10; n <= 40; n += 10)
			for (i = 1; i <= 7; i++)
				printf "system,%s,lru,4096,%d,%d,0,1000,500,25,1,1,0,1,0,0,0,0,0,0.5,,10,0.1,%d,1,1,0,0,0,%.2f,1,0,0,,1,1,1,1,1,t\n",
					v[i], n, n / 10, n * 1e6 * (8 - i), 12.5 - i
		split("1 25 50 100", e, " ")
		for (n = 10; n <= 20; n += 10)
			for (i = 1; i <= 4; i++)
				printf "system,seacache,elru:%d,4096,%d,1,0,1000,500,25,1,1,0,1,0,0,0,0,0,0.5,,10,0.1,%d,1,1,0,0,0,%.2f,1,0,0,,1,1,1,1,1,t\n",
					e[i], n, n * 1e6 / i, 3 + i / 10
		split("lru cdac-lru d-lru acq cbbc", p, " ")
		for (bs = 4096; bs <= 16384; bs *= 4)
			for (i = 1; i <= 5; i++)
				for (s = 5; s <= 40; s += 5)
					printf "cache,,%s,%d,8,1,0,%d,0,%d,1,1,0,1,0,0,0,0,0,%.3f,0.5,5,%.3f,0,0,0,0,0,0,0,0,0,0,\"a=1;b=2\",1,1,1,1,1,t\n",
						p[i], bs, s * 100, s, 0.3 + s / 100 + i / 50, 0.9 - s / 100 - i / 20
	}'
} >"$dir/run.csv"

"$plot" -o "$dir/png" "$dir/run.csv"
for f in variants-bytes variants-latency elru hit-ratio-4k hit-ratio-16k acq-load-rate; do
	png=$dir/png/$f.png
	[ -s "$png" ] || { echo "FAIL: $f.png not drawn"; exit 1; }
	[ "$(head -c 4 "$png" | od -An -c | tr -d ' ')" = "211PNG" ] ||
		{ echo "FAIL: $f.png is not a PNG"; exit 1; }
done

echo "a,b,c" >"$dir/bad.csv"
if "$plot" -o "$dir/png2" "$dir/bad.csv" 2>"$dir/err"; then
	echo "FAIL: a CSV without seacache-sim's columns was accepted"; exit 1
fi
grep -q "nothing to draw" "$dir/err" || { echo "FAIL: no message:"; cat "$dir/err"; exit 1; }
echo "plot smoke test: all figures drawn"
