#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# compare.sh on made-up transcripts: it passes on equal ones and on a listed
# difference, and fails, for the reason expected, on an unlisted difference,
# a listed line that no longer differs, a missing or doubled line and a
# stale entry of the list.
set -eu
compare=$(dirname "$0")/compare.sh
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
printf '%s\n' "v3 a" "v3 b" >"$t/keys"
printf '%s\n' "KCONF v3 a: ok" "KCONF v3 b: ok, EEXIST" >"$t/vfs"
echo "# nothing listed" >"$t/none"
echo "v3 b | b's reason" >"$t/b"
echo "v3 gone | no longer a scenario" >"$t/gone"
fails=0
# expect PASS|FAIL MESSAGE DEDUP-LINES KNOWN
expect() {
	want=$1 msg=$2 known=$4
	printf '%s\n' "$3" >"$t/dedup"
	if "$compare" "$t/dedup" "$t/vfs" "$t/keys" "$t/$known" 2>"$t/err"; then
		got=PASS
	else
		got=FAIL
	fi
	if [ $got != "$want" ] || ! grep -qF "$msg" "$t/err"; then
		echo "test-compare: expected $want with '$msg', got $got:" >&2
		cat "$t/err" >&2
		fails=$((fails + 1))
	fi
}
same="KCONF v3 a: ok
KCONF v3 b: ok, EEXIST"
differs="KCONF v3 a: ok
KCONF v3 b: ok, ENOENT"
expect PASS "answers as FSAL_VFS" "$same" none
expect FAIL "v3 b differs:" "$differs" none
expect PASS "v3 b differs, as listed: b's reason" "$differs" b
expect FAIL "v3 b: listed as a difference, but both answer alike" "$same" b
expect FAIL "does not answer each scenario once" "KCONF v3 a: ok" none
expect FAIL "does not answer each scenario once" "$same
KCONF v3 a: ok" none
expect FAIL "lists 'v3 gone', which no scenario answers" "$same" gone
[ $fails -eq 0 ] && echo "test-compare: 7 cases as expected"
exit $fails
