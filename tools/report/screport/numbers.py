# SPDX-License-Identifier: BSD-2-Clause
"""Numbers as the reports print them.

The reports were written in awk, and their text stays as it was: fields
are read as awk reads a number (the longest numeric prefix, else 0), and a
computed number printed as text takes awk's form (an integer as such,
otherwise %.6g).
"""
import re

_NUM = re.compile(r"\s*[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_WHOLE = re.compile(r"\s*[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?\s*$")


def num(s):
    """The number at the start of s (a CSV field, a key=value value), 0 if
    none; numbers pass through."""
    if s is None:
        return 0.0
    if isinstance(s, (int, float)):
        return float(s)
    m = _NUM.match(s)
    return float(m.group(0)) if m else 0.0


def is_num(s):
    """Whether a field is a number as a whole (awk compares it as one)."""
    return isinstance(s, (int, float)) or bool(_WHOLE.match(s or ""))


def truth(s):
    """A field as awk's condition: a number unless 0, text unless empty."""
    return num(s) != 0 if is_num(s) else s != ""


def text(x):
    """A computed number as text: integers whole, others to 6 digits."""
    if x == int(x) and abs(x) < 2 ** 53:
        return "%d" % x
    return "%.6g" % x


def summ(values):
    """(median, min, max) of numbers, each to 6 significant digits as the
    reports have always rounded them; None for none."""
    v = sorted(num(x) for x in values)
    if not v:
        return None
    n = len(v)
    m = v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2
    return tuple(float("%.6g" % x) for x in (m, v[0], v[-1]))


def spread(fmt, values):
    """'median (min-max)' of the values in printf format fmt, '-' for none."""
    s = summ(values)
    if s is None:
        return "-"
    return (fmt + " (" + fmt + "-" + fmt + ")") % s
