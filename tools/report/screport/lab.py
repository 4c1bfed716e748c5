# SPDX-License-Identifier: BSD-2-Clause
"""scripts/lab's numbers: results.csv from the runs' key=value lines, the
simulator's columns, report.md.  Every column is read by its name."""
import glob
import os

from . import table
from .numbers import num, is_num, truth, text, spread

MIB = 1048576

# results.csv, one row per run
COLUMNS = (
    "storm,variant,label,hosts,vms_per_host,vms,cache_mib,requests,blocks,"
    "write_blocks,server_bytes,written_bytes,peer_bytes,server_calls,"
    "server_cpu_ms,box_cpu_ms,lat_mean_us,lat_p99_us,cache_hit_pct,verified,"
    "wrong,readback_wrong,seconds,sim_data_bytes,sim_server_bytes,"
    "sim_peer_bytes,sim_diff_pct,distinct_bytes,completion_s,disk_read_bytes,"
    "disk_write_bytes,disk_ios,link_bytes,link_max_bytes,link_peak_pct,"
    "link_over,link,disk,server_mem_mib,round,host_cpu_ms").split(",")


def run_name(storm, variant, hosts, vms, cache_mib, rnd):
    """The prefix of a run's files in the lab's out directory."""
    return "%s.%s.h%sv%sc%s.r%s" % (storm, variant, hosts, vms, cache_mib, rnd)


def _kv(words):
    d = {}
    for w in words:
        k, _, v = w.partition("=")
        d[k] = v.split("=")[0]
    return d


def _f(fmt, x):
    return fmt % num(x)


def _d(x):
    return "%d" % int(num(x))


def run_row(out, plan_line, label, tck, link, disk, server_mem):
    """A run's row from its hosts' 'host k=v ...' lines and its server's
    key=value lines; the simulator's columns empty."""
    storm, variant, h, v, c, r, distinct = plan_line
    name = os.path.join(out, run_name(storm, variant, h, v, c, r))
    srv = {}
    try:
        with open(name + ".server") as f:
            srv = _kv(f.read().split())
    except FileNotFoundError:
        pass    # a kernel host's run
    hosts = []
    for path in sorted(glob.glob(name + ".host[0-9]*")):
        with open(path, errors="replace") as f:
            hosts += [_kv(l.split()[1:]) for l in f if l.startswith("host ")]
    s = dict.fromkeys(("req", "blk", "wb", "sb", "wr", "pb", "calls", "lat",
                       "hit", "rd", "chk", "bad", "hcpu"), 0.0)
    p99 = secs = 0.0
    first = last = None
    hcpu_n = 0
    for x in hosts:
        for k, key in (("req", "requests"), ("blk", "blocks"),
                       ("wb", "write_blocks"), ("sb", "server_bytes"),
                       ("wr", "written_bytes"), ("pb", "peer_bytes"),
                       ("calls", "server_calls"), ("hit", "cache_blocks_hit"),
                       ("rd", "blocks_read"), ("chk", "verified")):
            s[k] += num(x.get(key))
        s["lat"] += num(x.get("lat_mean_us")) * num(x.get("requests"))
        s["bad"] += num(x.get("mismatches")) + num(x.get("errors"))
        p99 = max(p99, num(x.get("lat_p99_max_us")))
        secs = max(secs, num(x.get("seconds")))
        # completion: the first request of the first VM to the last reply
        # of the last (kernel hosts do not say)
        if x.get("start", "") != "" and (first is None or num(x["start"]) < first):
            first = num(x["start"])
        if last is None or num(x.get("end")) > last:
            last = num(x.get("end"))
        if x.get("cpu_s", "") != "":
            s["hcpu"] += num(x["cpu_s"]) * 1000
            hcpu_n += 1
    hitpct = 100 * s["hit"] / s["rd"] if s["rd"] else 0
    if srv.get("box_ref_bytes", "") != "":
        ref, new = num(srv["box_ref_bytes"]), num(srv.get("box_new_bytes"))
        hitpct = 100 * ref / (ref + new) if ref + new else 0
    box = srv.get("box_cpu_ticks", "")
    row = dict.fromkeys(COLUMNS, "")
    row.update({
        "storm": storm, "variant": variant, "label": label,
        "hosts": _d(h), "vms_per_host": _d(v), "vms": "%d" % (int(h) * int(v)),
        "cache_mib": _d(c), "requests": _d(s["req"]), "blocks": _d(s["blk"]),
        "write_blocks": _d(s["wb"]), "server_bytes": _d(s["sb"]),
        "written_bytes": _d(s["wr"]), "peer_bytes": _d(s["pb"]),
        "server_calls": _d(s["calls"]),
        "server_cpu_ms": "%.0f" % (num(srv.get("server_cpu_ticks")) * 1000 / tck),
        "box_cpu_ms": "" if box == "" else "%.0f" % (num(box) * 1000 / tck),
        "lat_mean_us": "%.1f" % (s["lat"] / s["req"] if s["req"] else 0),
        "lat_p99_us": "%.1f" % p99, "cache_hit_pct": "%.2f" % hitpct,
        "verified": _d(s["chk"]), "wrong": _d(s["bad"]),
        "readback_wrong": srv.get("readback_wrong", ""),
        "seconds": "%.3f" % secs, "distinct_bytes": _d(distinct),
        "completion_s": "" if first is None else "%.3f" % ((last or 0) - first),
        "link": link, "disk": disk, "server_mem_mib": server_mem,
        "round": _d(r), "host_cpu_ms": "%.0f" % s["hcpu"] if hcpu_n else "",
    })
    for k in ("disk_read_bytes", "disk_write_bytes", "disk_ios", "link_bytes",
              "link_max_bytes", "link_peak_pct", "link_over"):
        row[k] = srv.get(k, "")
    return row


def add_sim(rows, sims, simname, hosts, vms, cache_mib):
    """The simulator's columns of the main configuration's first-round rows
    from seacache-sim's CSVs ({storm: path}); simname maps a lab variant to
    seacache-sim's."""
    data = {}
    for storm, path in sims.items():
        _, srows = table.read(path, ("variant", "data_bytes", "server_bytes",
                                     "peer_bytes"))
        for s in srows:
            data[storm, s["variant"]] = s
    for r in rows:
        k = (r["storm"], simname.get(r["variant"]))
        if not (_main(r, hosts, vms, cache_mib) and num(r["round"]) == 1 and k in data):
            continue
        s = data[k]
        r["sim_data_bytes"] = s["data_bytes"]
        r["sim_server_bytes"] = s["server_bytes"]
        r["sim_peer_bytes"] = s["peer_bytes"]
        live = num(r["server_bytes"]) + num(r["written_bytes"])
        r["sim_diff_pct"] = ("%.1f" % (100 * (num(s["data_bytes"]) - live) / live)
                             if live > 0 else "")


def _main(r, hosts, vms, cache_mib):
    """A row of the main configuration (not of a cache sweep)."""
    return (num(r["hosts"]) == num(hosts) and num(r["vms_per_host"]) == num(vms)
            and num(r["cache_mib"]) == num(cache_mib))


def sim_note(variant, writes):
    """Why live and simulated bytes differ, for a variant (and whether the
    storm writes): the differences of the two models known when this was
    written, not tuning.  Anything else is said to be unexplained."""
    unexplained = ("not explained by the lab: compare the hosts' counters "
                   "(--keep DIR: DIR/out/*.host*) with the sim's CSV "
                   "(DIR/out/sim.*.csv)")
    if variant.startswith("dedupbox"):
        return ("live: every byte on the box link (RPC and NFS headers, "
                "fingerprint records, the box's chunking of the stream); the "
                "sim's Dedup-Read/RW: CSI hash-first reads with one content "
                "cache per host, data blocks only")
    if variant == "nfs":
        return unexplained
    if writes > 0:
        return ("a CSI WRITE carries a block without its trailing zero bytes "
                "(PROTOCOL.md §2: the patch files' zero-padded last blocks); "
                "the sim counts whole blocks")
    if variant in ("readhash", "dedup-rw"):
        return ("live, a host's single-flight comes from the server's tracker "
                "(a VM's read of a content another VM's READ is fetching is "
                "answered by hash and waits for that copy: lib/host/host_read.c); "
                "Read# has no tracker, so VMs of one host that miss the same "
                "content at once each fetch it; the sim's single-flight covers "
                "every variant (tools/sim/README.md)")
    return unexplained


# The columns report.md reads.
REPORT_COLUMNS = (
    "storm", "variant", "label", "hosts", "vms_per_host", "vms", "cache_mib",
    "write_blocks", "server_bytes", "written_bytes", "peer_bytes",
    "server_calls", "server_cpu_ms", "box_cpu_ms", "lat_mean_us", "lat_p99_us",
    "cache_hit_pct", "wrong", "readback_wrong", "sim_data_bytes",
    "sim_peer_bytes", "sim_diff_pct", "distinct_bytes", "completion_s",
    "disk_read_bytes", "disk_write_bytes", "disk_ios", "link_bytes",
    "link_max_bytes", "link_peak_pct", "link", "disk", "round", "host_cpu_ms")


def _bytes(r):
    return num(r["server_bytes"]) + num(r["written_bytes"])


def _share(ms, cpus, done):
    """ms of CPU time over done seconds on cpus CPUs, as a percentage."""
    if ms == "" or not cpus or not is_num(done) or num(done) <= 0:
        return "-"
    return "%.0f%%" % (100 * num(ms) / (1000 * num(done) * cpus))


def link_bound(r, p):
    """The least time the run's bytes take through the links, in seconds:
    the busiest host link's bytes at its rate, or the server's data both
    ways at its port's rate, whichever is longer; '' without shaped links
    (or parameters from an older lab)."""
    host_bps, server_bps = num(p.get("link_bps")), num(p.get("server_link_bps"))
    if r["link"] == "none" or r["link_max_bytes"] == "" or not host_bps:
        return ""
    bound = 8 * num(r["link_max_bytes"]) / host_bps
    if server_bps:
        bound = max(bound, 8 * _bytes(r) / server_bps)
    return bound


def _against(x, b, fmt):
    """x in fmt, with its ratio to the Baseline's b when both are known."""
    if x == "" or not is_num(x):
        return "-"
    cell = fmt % num(x)
    if is_num(b) and num(b) > 0:
        cell += " (%.2fx)" % (num(x) / num(b))
    return cell


def lead_table(rows, storms):
    """What the report leads with: per storm and variant (round 1, main
    configuration), completion, server calls, server CPU, disk read and
    block data both ways, each against the Baseline's of the same storm."""
    out = ["## Against the Baseline", "",
           "| storm | variant | completion s | server calls | server CPU s | disk MiB read | server<->hosts MiB |",
           "|---|---|---:|---:|---:|---:|---:|"]
    for storm in storms:
        of = [r for r in rows if r["storm"] == storm and num(r["round"]) == 1]
        base = next((r for r in of if r["variant"] == "nfs"), None)
        for r in of:
            b = base if base is not None and r is not base else {}
            disk = r["disk_read_bytes"] if r["disk"] != "none" else ""
            out.append("| %s | %s | %s | %s | %s | %s | %s |" % (
                storm, r["label"],
                _against(r["completion_s"], b.get("completion_s", ""), "%.2f"),
                _against(r["server_calls"], b.get("server_calls", ""), "%.0f"),
                _against(text(num(r["server_cpu_ms"]) / 1000),
                         text(num(b.get("server_cpu_ms", "")) / 1000), "%.2f"),
                _against(text(num(disk) / MIB) if disk != "" else "",
                         text(num(b.get("disk_read_bytes", "")) / MIB)
                         if disk != "" else "", "%.1f"),
                _against(text(_bytes(r) / MIB),
                         text(_bytes(b) / MIB) if b else "", "%.1f")))
    return out + ["", "(x: against the Baseline, plain NFS, of the same storm.)", ""]


def storm_table(rows, p):
    """A storm's table: its first round's runs in the main configuration;
    p: the run's parameters (CPU counts, link rates)."""
    base = None
    for r in rows:
        if r["variant"] == "nfs":
            base = _bytes(r)
    cpus, scpus = int(num(p.get("cpus"))), int(num(p.get("server_cpus")))
    # --server-cpus 0: every process on every CPU
    server_share, host_share = (scpus, cpus - scpus) if scpus else (cpus, cpus)
    out = ["| variant | lab name | completion s | link bound s | server CPU s | server CPU busy | host CPU s | host CPU busy | disk MiB read / written | disk IOPS | link MiB all (busiest) | peak link | server->hosts MiB | hosts->server MiB | % of Baseline | x distinct | peer->host MiB | server calls | mean lat us | p99 lat us | host cache hit | wrong |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        cpu = "%.2f" % (num(r["server_cpu_ms"]) / 1000)
        if r["box_cpu_ms"] != "":
            cpu += " + box %.2f" % (num(r["box_cpu_ms"]) / 1000)
        hcpu = "-" if r["host_cpu_ms"] == "" else "%.2f" % (num(r["host_cpu_ms"]) / 1000)
        rb = r["readback_wrong"]
        bad = num(r["wrong"]) + (0 if rb == "" else num(rb))
        done = r["completion_s"]
        disk = iops = link = peak = "-"
        if r["disk"] != "none" and r["disk_read_bytes"] != "":
            disk = "%.1f / %.1f" % (num(r["disk_read_bytes"]) / MIB,
                                    num(r["disk_write_bytes"]) / MIB)
            if is_num(done) and num(done) > 0:
                iops = "%.0f" % (num(r["disk_ios"]) / num(done))
        if r["link"] != "none" and r["link_bytes"] != "":
            link = "%.1f (%.1f)" % (num(r["link_bytes"]) / MIB,
                                    num(r["link_max_bytes"]) / MIB)
            peak = r["link_peak_pct"] + "%"
        dist = num(r["distinct_bytes"])
        bound = link_bound(r, p)
        out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %.1f | %.1f | %s | %.2f | %.1f | %d | %.0f | %.0f | %.1f%% | %d%s |" % (
            r["label"], r["variant"], "-" if done == "" else _f("%.2f", done),
            "-" if bound == "" else "%.2f" % bound, cpu,
            _share(r["server_cpu_ms"], server_share, done), hcpu,
            _share(r["host_cpu_ms"], host_share, done), disk, iops, link, peak,
            num(r["server_bytes"]) / MIB, num(r["written_bytes"]) / MIB,
            "%.1f%%" % (100 * _bytes(r) / base) if base else "",
            _bytes(r) / dist if dist else 0, num(r["peer_bytes"]) / MIB,
            num(r["server_calls"]), num(r["lat_mean_us"]), num(r["lat_p99_us"]),
            num(r["cache_hit_pct"]), bad,
            " (read back: " + rb + ")" if rb != "" else ""))
    return out


# The rounds table's figures: a row's value (as the CSV has it, or as
# computed) and the printf format of its cells.
_FIGURES = (
    (lambda r: r["completion_s"], "%.2f"),
    (lambda r: r["lat_mean_us"], "%.0f"),
    (lambda r: r["lat_p99_us"], "%.0f"),
    (lambda r: text(num(r["server_bytes"]) / MIB), "%.1f"),
    (lambda r: r["server_calls"], "%.0f"),
)


def rounds_table(rows):
    """The rounds of a storm in the main configuration, a row per variant:
    median (min-max) over the rounds of completion, mean and p99 latency,
    each also as a ratio to the Baseline (nfs) of the same round, so that
    the machine's drift between rounds cancels, and the rounds at or below
    the Baseline's."""
    runs = {}   # label: [(round, row)]
    base = None
    for r in rows:
        runs.setdefault(r["label"], []).append(r)
        if r["variant"] == "nfs":
            base = r["label"]

    def value(lab, m, rnd):
        got = [r for r in runs.get(lab, ()) if r["round"] == rnd]
        return _FIGURES[m][0](got[-1]) if got else ""

    out = ["| variant | rounds | completion s | / Baseline | mean lat us | / Baseline | p99 lat us | / Baseline | at or below Baseline (completion, mean, p99) | server->hosts MiB | server calls |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for lab, rs in runs.items():
        cells, ratios, below, paired = [], [], [], None
        for m in range(len(_FIGURES)):
            vals, rat, at = [], [], 0
            for r in rs:
                x = value(lab, m, r["round"])
                if x == "":
                    continue
                vals.append(x)
                b = "" if base is None or lab == base else value(base, m, r["round"])
                if b == "" or num(b) <= 0:
                    continue
                rat.append("%.9g" % (num(x) / num(b)))
                at += num(x) <= num(b)
            cells.append(spread(_FIGURES[m][1], vals))
            if m < 3:
                ratios.append(spread("%.2f", rat))
                below.append(str(at) if rat else "-")
                if rat:
                    paired = len(rat)
        at_or_below = ", ".join(below) + " of %d" % paired if paired else "-"
        out.append("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            lab, len(rs), cells[0], ratios[0], cells[1], ratios[1], cells[2],
            ratios[2], at_or_below, cells[3], cells[4]))
    out += ["",
            "median (min-max) over the rounds; / Baseline: the variant's value over the",
            "Baseline's of the same round (each round's runs follow each other, so the",
            "machine's drift between rounds cancels); at or below: the rounds where the",
            "variant's value was at most the Baseline's.",
            ""]
    return out


NOTES = """completion: the first request of the first VM to the last reply of the last
VM; link bound: the least time its bytes take through the shaped links (the
busiest host link's bytes at its rate, or the server's block data both ways
at its port's rate, whichever is longer); CPU busy: CPU time over the
completion time on the CPUs that side has (--server-cpus: ganesha on its
own, the hosts on the rest), so that it shows which side bounds a run; disk: the store's block device during the run (IOPS: its reads and writes
over the completion time; the throttle holds ganesha's own I/O, and the
kernel's background writeback on cgroup v1 only where ganesha syncs); link:
bytes both ways over every host's link, and over the busiest; peak link: the
busiest link direction's rate over any 0.2 s sample against the link's rate.
server->hosts: block data the server sent (for the dedup boxes: every byte
the host boxes received on the box link); hosts->server: block data written
(box link bytes sent); % of Baseline: both directions against the Baseline's;
x distinct: both directions against one copy of each distinct content the
storm's VMs read or write (the least a content cache can move); host cache
hit: blocks read served by the host cache (for the dedup boxes: the payload
bytes the server box sent as references to the host box's index);
server CPU: ganesha.nfsd's user + system time during the run (the dedup
server box's apart); host CPU: the hosts' seacache-host processes' (their
VMs' requests, the lab's check of every block read included; not the dedup
host boxes', nor a kernel host's); wrong: blocks read that did not match the workload's
hashes, failed requests, and for a write storm the written blocks read back
wrong from the server afterwards (plain NFS, cold cache).
""".splitlines()


def sim_table(rows, p):
    """Live bytes against seacache-sim's, per storm and variant."""
    out = ["## Live against seacache-sim", "",
           "The same workload files through `seacache-sim` (--vms %d --vms-per-host %s"
           % (int(p["hosts"]) * int(p["vms"]), p["vms"]),
           "--host-cache %sM, a server cache of --server-mem, its time model): data bytes"
           % p["cache_mib"],
           "server->hosts and hosts->server, live against simulated. Over 5% is flagged.",
           "",
           "| storm | variant | live MiB | sim MiB | difference | flag | peer->host MiB live / sim | why |",
           "|---|---|---:|---:|---:|---|---:|---|"]
    for r in rows:
        if r["sim_data_bytes"] == "":
            continue
        d = num(r["sim_diff_pct"])
        flag = "**over 5%**" if d > 5 or d < -5 else ""
        why = sim_note(r["variant"], int(num(r["write_blocks"]))) if flag else ""
        out.append("| %s | %s | %.1f | %.1f | %+.1f%% | %s | %.1f / %.1f | %s |" % (
            r["storm"], r["label"], _bytes(r) / MIB, num(r["sim_data_bytes"]) / MIB,
            d, flag, num(r["peer_bytes"]) / MIB, num(r["sim_peer_bytes"]) / MIB, why))
    return out + [""]


def scale_tables(rows, storm):
    """--scale: every VM count, then the growth from the fewest VMs to the
    most per variant and host count."""
    out = ["## Scale (%s storm)" % storm, "",
           "| variant | hosts | VMs | server->hosts MiB | hosts->server MiB | x distinct | peer->host MiB | server calls | server CPU ms | mean lat us | wrong |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    lo, hi = {}, {}
    for r in rows:
        dist = num(r["distinct_bytes"])
        out.append("| %s | %d | %d | %.1f | %.1f | %.2f | %.1f | %d | %s | %.0f | %d |" % (
            r["label"], num(r["hosts"]), num(r["vms"]),
            num(r["server_bytes"]) / MIB, num(r["written_bytes"]) / MIB,
            _bytes(r) / dist if dist else 0, num(r["peer_bytes"]) / MIB,
            num(r["server_calls"]), r["server_cpu_ms"], num(r["lat_mean_us"]),
            num(r["wrong"]) + num(r["readback_wrong"])))
        k = (r["label"], r["hosts"])
        if k not in lo or num(r["vms"]) < num(lo[k]["vms"]):
            lo[k] = r
        if k not in hi or num(r["vms"]) > num(hi[k]["vms"]):
            hi[k] = r
    out += ["", "Growth from the fewest to the most VMs (server bytes, calls, CPU):", "",
            "| variant | hosts | VMs | bytes | calls | CPU |",
            "|---|---:|---|---:|---:|---:|"]
    for k, a in lo.items():
        b = hi[k]
        ca, ua = a["server_calls"], a["server_cpu_ms"]
        out.append("| %s | %s | %d -> %d | %.2fx | %.2fx | %s |" % (
            k[0], k[1], num(a["vms"]), num(b["vms"]),
            _bytes(b) / _bytes(a) if _bytes(a) else 0,
            num(b["server_calls"]) / num(ca) if truth(ca) else 0,
            "%.2fx" % (num(b["server_cpu_ms"]) / num(ua)) if truth(ua) else "-"))
    return out + [""]


def cache_table(rows, storm):
    """--cache-sweep: by variant, as first listed, and cache size."""
    out = ["## Host cache size (%s storm)" % storm, "",
           "| variant | cache MiB | server->hosts MiB | host cache hit | mean lat us |",
           "|---|---:|---:|---:|---:|"]
    by = {}
    for r in rows:
        by.setdefault(r["label"], []).append(r)
    for rs in by.values():
        for r in sorted(rs, key=lambda r: num(r["cache_mib"])):
            out.append("| %s | %d | %.1f | %.1f%% | %.0f |" % (
                r["label"], num(r["cache_mib"]), num(r["server_bytes"]) / MIB,
                num(r["cache_hit_pct"]), num(r["lat_mean_us"])))
    return out + [""]


def report(rows, p, charts):
    """report.md's lines: the tables from results.csv's rows, the charts
    (PNG names) made; p: the run's parameters (see seacache-report)."""
    storms = p["storms"].split()
    first = storms[0] if storms else ""
    rounds = int(p["rounds"])
    main = [r for r in rows if _main(r, p["hosts"], p["vms"], p["cache_mib"])]
    note = " (patch: %s MiB of new files per VM)" % p["patch_mib"] if "patch" in storms else ""
    out = ["# SeaCache lab, " + p["date"], "", "`%s`" % p["command_line"], "",
           "%s hosts x %s VMs, host cache %s MiB per host (every variant);"
           % (p["hosts"], p["vms"], p["cache_mib"]),
           "images: %s. Storms: %s%s." % (p["images"], p["storms"], note), ""]
    if p["setup_note"]:
        out += ["- " + l for l in p["setup_note"].split("\n")] + [""]
    out += lead_table(main, storms)
    if rounds > 1:
        out += ["%d rounds, the variants interleaved: the tables of each storm and the" % rounds,
                "charts are round 1's, the rounds' medians and ranges follow them.", ""]
    for storm in storms:
        of = [r for r in main if r["storm"] == storm]
        out += ["## %s storm" % storm, ""]
        out += storm_table([r for r in of if num(r["round"]) == 1], p) + [""]
        if rounds != 1:
            out += rounds_table(of)
    out += NOTES + [""]
    if p["sim"] and not p["scale"]:
        out += sim_table(main, p)
    if p["scale"]:
        out += scale_tables([r for r in rows if r["storm"] == first], first)
    if p["cache_sweep"]:
        out += cache_table([r for r in rows if r["storm"] == first
                            and num(r["hosts"]) == num(p["hosts"])
                            and num(r["vms_per_host"]) == num(p["vms"])
                            and num(r["round"]) == 1], first)
    out += ["## Charts", ""]
    out += ["![%s](%s.png)" % (f, f) for f in charts]
    out += ["", "Every run's numbers: results.csv (one row per storm x variant x configuration)."]
    return "\n".join(out) + "\n"
