# SPDX-License-Identifier: BSD-2-Clause
"""scripts/fsal-bench's table from its rounds' JSON files (nfs-bench
--json, seacachectl stats --json): per cell and phase each FSAL's median
over the rounds, the median and range of the per-round DEDUP/VFS ratios
against the target; the DEDUP store's index size."""
import json
import os

from .numbers import summ

# phase, nfs-bench's key, unit, target of DEDUP/VFS (None: seq-write's,
# by cell)
PHASES = (
    ("seq-write", "seq_write_mb_s", "MB/s", None),
    ("rewrite", "rewrite_mb_s", "MB/s", "1.2"),
    ("seq-read", "seq_read_mb_s", "MB/s", "0.9"),
    ("rand-read", "rand_read_iops", "IOPS", "0.9"),
    ("seq-read-cold", "seq_read_mb_s", "MB/s", "0.9"),
    ("rand-read-cold", "rand_read_iops", "IOPS", "0.9"),
)


def jget(path, key):
    """The number KEY holds in a JSON file, as written there; None if the
    file or the key is missing."""
    try:
        with open(path) as f:
            d = json.load(f, parse_float=str, parse_int=str)
    except (OSError, ValueError):
        return None
    v = d.get(key)
    return v if isinstance(v, str) else None


def summary(out, rounds, cells, do_vfs, do_dedup, ctl, store_dir):
    """The table's lines after its header (fsal-bench prints that)."""
    lines = ["%-22s %13s %13s %9s %15s %8s" % ("cell", "VFS", "DEDUP", "DEDUP/VFS",
                                               "(min-max)", "target")]
    for cell in cells:
        io, depth = cell.split(":", 1)
        for phase, key, unit, target in PHASES:
            if target is None:
                target = "0.8" if cell == "128K:1" else "0.9"
            name = "%s-%s%s.json" % (io, depth, "-cold" if phase.endswith("-cold") else "")
            vl, dl, rl = [], [], []
            for r in range(1, rounds + 1):
                d = os.path.join(out, "round-%d" % r)
                v = jget(os.path.join(d, "vfs-" + name), key) if do_vfs else None
                x = jget(os.path.join(d, "dedup-" + name), key) if do_dedup else None
                vl += [v] if v else []
                dl += [x] if x else []
                if v and x and float(v) != 0:
                    rl.append("%.6f" % (float(x) / float(v)))
            V, D, R = summ(vl), summ(dl), summ(rl)
            f = "%.0f %s" if unit == "IOPS" else "%.1f %s"
            line = "%-22s %13s %13s %9s %15s %8s" % (
                "%s %s x%s" % (phase, io, depth),
                f % (V[0], unit) if V else "-", f % (D[0], unit) if D else "-",
                "%.3f" % R[0] if R else "-", "(%.3f-%.3f)" % R[1:] if R else "",
                ">= " + target)
            if R:
                line += " met" if R[0] >= float(target) else " MISSED"
            lines.append(line)
    if do_dedup:
        lines += store(out, rounds, ctl, store_dir)
    return lines


def store(out, rounds, ctl, store_dir):
    """The DEDUP store's sizes (last round) and index bytes per block; ctl:
    the seacachectl that read them from store_dir."""
    last = os.path.join(out, "round-%d" % rounds, "dedup-stats.json")
    pcl, pml = [], []
    for r in range(1, rounds + 1):
        s = os.path.join(out, "round-%d" % r, "dedup-stats.json")
        if os.path.exists(s) and os.path.getsize(s):
            pcl += [x for x in [jget(s, "index_bytes_per_chunk")] if x]
            pml += [x for x in [jget(s, "index_bytes_per_mapped_block")] if x]
    if not os.access(ctl, os.X_OK):
        return ["DEDUP store: seacachectl not built (%s)" % ctl]
    if not (os.path.exists(last) and os.path.getsize(last)):
        return ["DEDUP store: seacachectl stats --json %s failed (see above)" % store_dir]
    g = {k: jget(last, k) for k in ("logical_bytes", "physical_bytes", "dedup_ratio",
                                    "index_bytes", "chunks", "mapped_blocks")}
    lines = ["DEDUP store (last round): logical %.1f MiB, physical %.1f MiB, dedup ratio %s" % (
        float(g["logical_bytes"] or 0) / 1048576, float(g["physical_bytes"] or 0) / 1048576,
        g["dedup_ratio"] or "-")]
    if not g["index_bytes"]:
        return lines + ["DEDUP index: no index_bytes in seacachectl stats --json"]
    lines.append("DEDUP index (last round): %.1f MiB for %s chunks and %s mapped blocks" % (
        float(g["index_bytes"]) / 1048576, g["chunks"] or "", g["mapped_blocks"] or ""))
    for what, s, t in (("per unique block", summ(pcl), 100), ("per mapped block", summ(pml), 120)):
        if s is None:
            lines.append("%-40s %10s %15s %8s" % ("DEDUP index bytes " + what, "-", "", "<= %d" % t))
            continue
        lines.append("%-40s %10.1f %15s %8s %s" % (
            "DEDUP index bytes " + what, s[0], "(%.1f-%.1f)" % s[1:], "<= %d" % t,
            "met" if s[0] <= t else "MISSED"))
    return lines
