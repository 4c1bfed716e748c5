# SPDX-License-Identifier: BSD-2-Clause
"""The variants' names: the CSI variants' from the build (seacache-sim
--help prints lib/proto/variant.c's table: each variant's paper name and
seacache-host's name), the lab's own (the Baseline over plain NFS, the
dedup boxes) and the labels the lab's tables show."""
import os
import re
import subprocess

# The lab's variants that are no CSI variant: label, seacache-sim's variant.
LAB_ONLY = {
    "nfs": ("Baseline", "baseline"),
    "dedupbox": ("Dedup-Read", "dedup-read"),
    "dedupbox-rw": ("Dedup-RW", "dedup-rw"),
}

# The SeaCache paper's row names (PROTOCOL.md §8), by the variant table's
# paper name; the dedup boxes take the paper's Dedup-Read and Dedup-RW, so
# CSI's hash-first reads are Read#.
PAPER_LABELS = {
    "baseline": "Baseline (CSI)",
    "dedup-read": "Read#",
    "w-tracker": "W/Tracker",
    "ss-push": "SS-Push",
    "coop-cache": "Coop-Cache",
    "dedup-rw": "Read#+Dedup-W",
    "seacache": "SeaCache",
}

_HELP_LINE = re.compile(r"^ {20,}([a-z0-9-]+)(?: \(([a-z0-9-]+)\))?$")


def table(build):
    """{name: paper name} of every CSI variant, both names as keys, from
    seacache-sim --help in the build."""
    sim = os.path.join(build, "tools", "sim", "seacache-sim")
    out = subprocess.run([sim, "--help"], capture_output=True, text=True,
                         check=False).stdout
    names = {}
    listing = False
    for line in out.splitlines():
        if "--variants" in line:
            listing = True
            continue
        if listing:
            m = _HELP_LINE.match(line)
            if m:
                names[m.group(1)] = m.group(1)
                if m.group(2):
                    names[m.group(2)] = m.group(1)
            elif line.lstrip().startswith("--"):
                break
    if not names:
        raise RuntimeError("%s --help lists no variants" % sim)
    return names


def label(variant, names):
    """The table's name of a lab variant (V.ko: V in a kernel host)."""
    if variant.endswith(".ko"):
        return label(variant[:-3], names) + " (kernel)"
    if variant in LAB_ONLY:
        return LAB_ONLY[variant][0]
    paper = names.get(variant)
    return PAPER_LABELS.get(paper, variant) if paper else variant


def sim_variant(variant, names):
    """seacache-sim's name (the paper's) for a lab variant."""
    if variant in LAB_ONLY:
        return LAB_ONLY[variant][1]
    return names.get(variant, variant)
