# SPDX-License-Identifier: BSD-2-Clause
"""PNG charts with gnuplot (Debian's gnuplot-nox): the data as
tab-separated tables in a temporary directory, one script per figure."""
import os
import shutil
import subprocess
import tempfile

from .numbers import num, text

# The lab's and the simulator's figures share it.
STYLE = """set terminal pngcairo size 900,560 font ",11"
set key outside right top
set grid ytics
set datafile missing "NaN\""""
LAB_STYLE = STYLE + "\nset style fill solid 0.8 border -1"


class Gnuplot:
    """A temporary directory for the tables, gnuplot run on scripts."""

    def __init__(self, who):
        if not shutil.which("gnuplot"):
            raise RuntimeError("gnuplot is missing (scripts/install-deps lab or sim)")
        self.who = who
        self.dir = tempfile.mkdtemp()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        shutil.rmtree(self.dir, ignore_errors=True)

    def table(self, name, lines):
        """A data file of lines; its path."""
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.writelines(l + "\n" for l in lines)
        return path

    def draw(self, script, what):
        """Runs a gnuplot script; what names the figure in an error."""
        path = self.table("fig.gp", [script])
        if subprocess.run(["gnuplot", path]).returncode != 0:
            raise RuntimeError("%s: gnuplot failed on %s" % (self.who, what))


def lab(rows, p, rep):
    """The lab's PNGs in rep from results.csv's rows: completion, bytes and
    latency per variant per storm (the paper's Fig. 5/6), host cache hit
    ratio against cache size, server load against VM count (--scale)."""
    first = p["storms"].split()[0]
    hosts, vms = num(p["hosts"]), num(p["vms"])
    round1 = [r for r in rows if num(r["round"]) == 1]
    main = [r for r in round1 if num(r["hosts"]) == hosts
            and num(r["vms_per_host"]) == vms and num(r["cache_mib"]) == num(p["cache_mib"])]
    storms, labels, fig = [], [], {}
    for r in main:
        storms += [r["storm"]] if r["storm"] not in storms else []
        labels += [r["label"]] if r["label"] not in labels else []
        fig[r["storm"], r["label"]] = (
            text((num(r["server_bytes"]) + num(r["written_bytes"])) / 1048576),
            text(num(r["lat_mean_us"]) / 1000),
            r["completion_s"] or "NaN")
    with Gnuplot("lab") as g:
        dat = {}
        for i, name in enumerate(("bytes", "latency", "completion")):
            lines = ["storm" + "".join('\t"%s"' % l for l in labels)]
            for s in storms:
                lines.append(s + "".join("\t" + (fig[s, l][i] if (s, l) in fig else "NaN")
                                         for l in labels))
            dat[name] = g.table(name + ".dat", lines)
        g.draw("""%s
set datafile separator "\\t"
set style data histograms; set style histogram cluster gap 1
set boxwidth 0.9; set yrange [0:*]
set output "%s/completion.png"
set title "Completion time per variant (%s hosts x %s VMs, links %s, disk %s)"
set ylabel "first request to last reply (s)"
plot for [i=2:*] "%s" using i:xtic(1) title columnheader(i)
set output "%s/bytes.png"
set title "Bytes on the server link per variant (%s hosts x %s VMs, host cache %s MiB)"
set ylabel "server <-> hosts (MiB, both ways)"
plot for [i=2:*] "%s" using i:xtic(1) title columnheader(i)
set output "%s/latency.png"
set title "Mean latency per request per variant (%s hosts x %s VMs)"
set ylabel "mean latency (ms)"
plot for [i=2:*] "%s" using i:xtic(1) title columnheader(i)""" % (
            LAB_STYLE, rep, p["hosts"], p["vms"], p["link"], p["disk"], dat["completion"],
            rep, p["hosts"], p["vms"], p["cache_mib"], dat["bytes"],
            rep, p["hosts"], p["vms"], dat["latency"]), "the lab's bar charts")

        # hit ratio against cache size: the first storm at the main hosts x vms
        hit = {}
        for r in round1:
            if r["storm"] == first and num(r["hosts"]) == hosts and num(r["vms_per_host"]) == vms:
                hit.setdefault(r["label"], []).append((r["cache_mib"], r["cache_hit_pct"]))
        sizes = [num(c) for pts in hit.values() for c, _ in pts]
        plots = []
        for j, (l, pts) in enumerate(hit.items(), 1):
            pts.sort(key=lambda cp: (num(cp[0]), cp))
            path = g.table("hit-%d.dat" % j, ['# "%s"' % l] + ["%s\t%s" % cp for cp in pts])
            plots.append('"%s" using 1:2 with linespoints lw 2 pt 7 title "%s"' % (path, l))
        # one size only (no --cache-sweep): a range around it
        g.draw("""%s
set output "%s/hit-ratio.png"
set title "Host cache hit ratio against cache size (%s storm, %s hosts x %s VMs)"
set xlabel "host cache per host (MiB)"; set ylabel "host cache hits (%% of blocks read)"
set yrange [0:100]; set logscale x 2
set xrange [%g:%g]
plot %s""" % (LAB_STYLE, rep, first, p["hosts"], p["vms"], min(sizes or [0]) / 2,
                 max(sizes + [0]) * 2, ", ".join(plots)), "the hit ratio chart")

        if p["scale"]:
            scale_chart(g, rows, first, rep)


def scale_chart(g, rows, storm, rep):
    """Completion, server bytes, calls and CPU against the VM count, a line
    per variant and host count."""
    lines = {}
    for r in rows:
        if r["storm"] == storm:
            lines.setdefault("%s (%s hosts)" % (r["label"], r["hosts"]), []).append("\t".join((
                r["vms"], text(num(r["server_bytes"]) + num(r["written_bytes"])),
                r["server_calls"], r["server_cpu_ms"], r["completion_s"] or "NaN")))
    files = [(g.table("scale-%d.dat" % j, pts), k)
             for j, (k, pts) in enumerate(lines.items(), 1)]
    script = [LAB_STYLE,
              'set terminal pngcairo size 2000,560 font ",11"',
              'set output "%s/scale.png"' % rep,
              'set multiplot layout 1,4 title "Server load against VM count (%s storm)"' % storm,
              'set key inside top left font ",9"; set xlabel "VMs"; set xtics (8, 16, 32, 40); set yrange [0:*]']
    for col, ylabel in (("5", "completion (s)"), ("($2/1048576)", "server MiB"),
                        ("3", "server calls"), ("4", "server CPU (ms)")):
        script.append('set ylabel "%s"' % ylabel)
        script.append("plot " + ", ".join('"%s" using 1:%s with linespoints lw 2 title "%s"'
                                          % (f, col, k) for f, k in files))
    script.append("unset multiplot")
    g.draw("\n".join(script), "the scale chart")
