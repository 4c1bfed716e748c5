# SPDX-License-Identifier: BSD-2-Clause
"""CSV files read by column name.

A column the code needs and the file lacks stops the reader with its name,
so a renamed or dropped column fails loudly instead of shifting the others.
"""
import csv


class ColumnError(Exception):
    """A CSV lacks a column (or a row its header's width)."""


def read(path, required=()):
    """The header and the rows (dicts by column name) of a CSV file; every
    name in required must be in the header."""
    with open(path, newline="") as f:
        reader = csv.reader(f)
        try:
            header = next(reader)
        except StopIteration:
            raise ColumnError("%s: empty, no header" % path) from None
        missing = [c for c in required if c not in header]
        if missing:
            raise ColumnError("%s: no column %s (header: %s)" %
                              (path, ", ".join(missing), ",".join(header)))
        rows = []
        for n, fields in enumerate(reader, 2):
            if len(fields) != len(header):
                raise ColumnError("%s:%d: %d fields, the header has %d" %
                                  (path, n, len(fields), len(header)))
            rows.append(dict(zip(header, fields)))
    return header, rows


def write(f, header, rows):
    """rows (dicts) under header, as the lab writes its CSV: no quoting
    unless a field needs it, '\\n' line ends."""
    w = csv.writer(f, lineterminator="\n")
    w.writerow(header)
    for r in rows:
        w.writerow([r[c] for c in header])
