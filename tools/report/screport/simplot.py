# SPDX-License-Identifier: BSD-2-Clause
"""seacache-sim's CSV (columns: tools/sim/README.md) as PNGs in the style
of the papers' figures (see tools/sim/plot)."""
import csv
import os
import sys

from .charts import STYLE, Gnuplot
from .numbers import num, text

LINES = """set style line 1 lc rgb "#1b9e77" lw 2 pt 7
set style line 2 lc rgb "#d95f02" lw 2 pt 5
set style line 3 lc rgb "#7570b3" lw 2 pt 9
set style line 4 lc rgb "#e7298a" lw 2 pt 11
set style line 5 lc rgb "#66a61e" lw 2 pt 13
set style line 6 lc rgb "#e6ab02" lw 2 pt 3
set style line 7 lc rgb "#a6761d" lw 2 pt 1
set style line 8 lc rgb "#666666" lw 2 pt 2
set style increment user"""


class Missing(Exception):
    """The CSV lacks a column a figure needs."""


def _rows(paths):
    """The rows of the CSVs as dicts; a 'mode,...' line is a header (a sweep
    may append CSVs, each with its header), rows before any are skipped."""
    for path in paths:
        header = None
        with open(path, newline="") as f:
            for fields in csv.reader(f):
                if fields and fields[0] == "mode":
                    header = fields
                elif header:
                    yield _Row(header, fields)


class _Row:
    def __init__(self, header, fields):
        self.d = dict(zip(header, fields))

    def __getitem__(self, name):
        if name not in self.d:
            raise Missing("plot: CSV lacks column " + name)
        return self.d[name]


def _nsorted(keys):
    return sorted(keys, key=num)


def plot(out, paths):
    """The figures of the CSVs into directory out; the PNGs' paths."""
    sbytes, slat, svms, vlist = {}, {}, set(), []
    ebytes, elat, evms, en = {}, {}, set(), set()
    hit, load, cbs, cpol, cx = {}, {}, set(), set(), set()
    skey = ekey = None
    blocks_x = False
    for r in _rows(paths):
        if r["mode"] == "system":
            v, vms, pol = r["variant"], r["vms"], r["policy"]
            # the host cache as a share of the trace when known: absolute
            # sizes differ between VM counts at the same share
            key = r["block_size"] + " " + (r["cache_pct"] + "%" if r["cache_pct"] != ""
                                           else r["host_cache_blocks"])
            if pol in ("elru:1", "elru:25", "elru:50", "elru:100") and v == "seacache":
                ekey = ekey or key
                if key == ekey:
                    n = pol[5:]
                    ebytes[vms, n] = text(num(r["server_bytes"]) / 1e6)
                    elat[vms, n] = r["avg_latency_ms"]
                    evms.add(vms)
                    en.add(n)
            skey = skey or pol + " " + key
            if pol + " " + key == skey:
                sbytes[vms, v] = text(num(r["server_bytes"]) / 1e6)
                slat[vms, v] = r["avg_latency_ms"]
                svms.add(vms)
                # variants in the order of the CSV (seacache-sim writes the table order)
                vlist += [v] if v not in vlist else []
        elif r["mode"] == "cache":
            bs, pol = r["block_size"], r["policy"]
            x = r["cache_pct"] if r["cache_pct"] != "" else r["host_cache_blocks"]
            hit[bs, pol, x] = r["read_hit_ratio"]
            load[bs, pol, x] = r["load_rate"]
            cbs.add(bs)
            cpol.add(pol)
            cx.add(x)
            blocks_x = blocks_x or r["cache_pct"] == ""

    os.makedirs(out, exist_ok=True)
    made = []
    with Gnuplot("plot") as g:
        def draw(name, commands):
            g.draw("%s\n%s\nset output \"%s\"\n%s" % (STYLE, LINES, os.path.join(out, name),
                                                     commands), name)
            made.append(os.path.join(out, name))

        def matrix(name, first, xs, cols, values):
            lines = [" ".join([first] + cols)]
            for x in xs:
                lines.append(" ".join([x] + [values.get((x, c), "NaN") for c in cols]))
            return g.table(name, lines)

        if vlist:
            vmsl = _nsorted(svms)
            var = matrix("variants.dat", "vms", vmsl, vlist, sbytes)
            lat = matrix("latency.dat", "vms", vmsl, vlist, slat)
            kk = skey.split(" ")
            what = "policy %s, %d KiB blocks, host cache %s%s" % (
                kk[0], num(kk[1]) / 1024, kk[2],
                " of the blocks" if kk[2].endswith("%") else " blocks")
            n = len(vlist) + 1
            draw("variants-bytes.png", """
set title 'Bytes between hosts and server per variant (%s)'
set ylabel 'server I/O (MB)'; set xlabel 'VMs'
set style data histograms; set style histogram cluster gap 1
set style fill solid 0.8 border -1; set boxwidth 0.9; set yrange [0:*]
plot for [i=2:%d] '%s' using i:xtic(1) title columnheader(i)""" % (what, n, var))
            draw("variants-latency.png", """
set title 'Mean latency per block request per variant (%s)'
set ylabel 'latency (ms)'; set xlabel 'VMs'; set yrange [0:*]
plot for [i=2:%d] '%s' using 1:i with linespoints title columnheader(i)""" % (what, n, lat))
        else:
            print("plot: no system-mode rows: variant figures skipped", file=sys.stderr)

        if en:
            nl, evl = _nsorted(en), _nsorted(evms)
            lines = [" ".join(["n"] + ["bytes_" + v for v in evl] + ["lat_" + v for v in evl])]
            for n in nl:
                lines.append(" ".join([n] + [ebytes.get((v, n), "NaN") for v in evl]
                                      + [elat.get((v, n), "NaN") for v in evl]))
            path = g.table("elru.dat", lines)
            k = len(evl)
            draw("elru.png", """
set multiplot layout 1,2 title 'SeaCache with ELRU-n host caches'
set key inside top right
set xlabel 'n'; set logscale x; set xrange [0.7:150]; set xtics (1, 25, 50, 100)
set ylabel 'server I/O (MB)'; set yrange [0:*]
plot for [j=2:%d] '%s' using 1:j with linespoints title sprintf('%%s VMs', substr(columnhead(j), 7, 99))
set ylabel 'latency (ms)'
plot for [j=%d:%d] '%s' using 1:j with linespoints title sprintf('%%s VMs', substr(columnhead(j), 5, 99))
unset multiplot""" % (k + 1, path, k + 2, 2 * k + 1, path))
        else:
            print("plot: no seacache rows with policy elru:1/25/50/100: ELRU figure skipped",
                  file=sys.stderr)

        # policies in name order: stable colours
        pols, xs = sorted(cpol), _nsorted(cx)
        xlabel = "cache size (blocks)" if blocks_x else "cache size (% of distinct blocks)"
        loads = {}
        for bs in sorted(cbs):
            hits = matrix("hit-%s.dat" % bs, "size", xs, pols,
                          {(x, p): hit[b, p, x] for b, p, x in hit if b == bs})
            loads[bs] = matrix("load-%s.dat" % bs, "size", xs, pols,
                               {(x, p): load[b, p, x] for b, p, x in load if b == bs})
            kib = int(num(bs)) // 1024
            draw("hit-ratio-%dk.png" % kib, """
set title 'Read hit ratio vs cache size, %d KiB blocks'
set ylabel 'read hit ratio'; set xlabel '%s'; set yrange [0:1]
plot for [i=2:%d] '%s' using 1:i with linespoints title columnheader(i)""" % (
                kib, xlabel, len(pols) + 1, hits))
        if not cbs:
            print("plot: no cache-mode rows: hit ratio and load rate figures skipped",
                  file=sys.stderr)
        else:
            # ACQ's figure: at the smallest block size, every policy for
            # comparison (ACQ's point is loading fewer blocks for the same hits)
            bs = min(cbs, key=num)
            kib = int(num(bs)) // 1024
            draw("acq-load-rate.png", """
set title 'Load rate vs cache size, %d KiB blocks'
set ylabel 'blocks loaded / blocks accessed'; set xlabel '%s'; set yrange [0:*]
plot for [i=2:%d] '%s' using 1:i with linespoints title columnheader(i)""" % (
                kib, xlabel, len(pols) + 1, loads[bs]))
    return made
