#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The lab's report from a recorded results.csv: scripts/lab --report-only
# renders fixture/results.csv with fixture/report-params.json (a --rounds
# 2 run with a dedup box, a cache sweep row and a kernel host's row, no
# charts of its own) into report.md, which must equal fixture/report.md
# byte for byte (the awk report the Python one replaced rendered it, and
# it was rendered again only where the report's columns changed since:
# the CPU busy and link bound columns, the lead table), and draws the
# charts.  A results.csv with a column renamed or
# dropped is refused with a message that names the column.
# usage: test_lab_report.sh SOURCE_DIR
set -eu
src=$1
fix=$src/tests/report/fixture
command -v gnuplot >/dev/null || { echo "FAIL: gnuplot missing (scripts/install-deps lab)"; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

render() { # DIR RESULTS.CSV: the report of results.csv in DIR, its errors in DIR.err
	mkdir -p "$1"
	cp "$2" "$1/results.csv"
	cp "$fix/report-params.json" "$1/"
	"$src/scripts/lab" --report-only "$1" 2>"$1.err"
}

render "$dir/ok" "$fix/results.csv" || { cat "$dir/ok.err"; echo "FAIL: the report of the fixture"; exit 1; }
cmp -s "$fix/report.md" "$dir/ok/report.md" ||
	{ diff "$fix/report.md" "$dir/ok/report.md"; echo "FAIL: report.md differs from the fixture's"; exit 1; }
for png in completion bytes latency hit-ratio; do
	[ "$(od -An -tx1 -N8 "$dir/ok/$png.png" 2>/dev/null | tr -d ' \n')" = 89504e470d0a1a0a ] ||
		{ echo "FAIL: $png.png is not a PNG file"; exit 1; }
done

sed '1s/,completion_s,/,completion,/' "$fix/results.csv" >"$dir/renamed.csv"
if render "$dir/renamed" "$dir/renamed.csv"; then
	echo "FAIL: a results.csv without completion_s was taken"; exit 1
fi
grep -q 'no column completion_s' "$dir/renamed.err" ||
	{ cat "$dir/renamed.err"; echo "FAIL: no message naming completion_s"; exit 1; }

n=$(head -n 1 "$fix/results.csv" | tr ',' '\n' | grep -nx lat_p99_us | cut -d: -f1)
cut -d, --complement -f"$n" "$fix/results.csv" >"$dir/dropped.csv"
if render "$dir/dropped" "$dir/dropped.csv"; then
	echo "FAIL: a results.csv without lat_p99_us was taken"; exit 1
fi
grep -q 'no column lat_p99_us' "$dir/dropped.err" ||
	{ cat "$dir/dropped.err"; echo "FAIL: no message naming lat_p99_us"; exit 1; }
echo "lab report test: report.md as recorded ($(($(wc -l <"$fix/results.csv") - 1)) runs); renamed and dropped columns named"
