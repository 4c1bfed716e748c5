#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Compares the kernel client's transcripts of FSAL_DEDUP and FSAL_VFS
# ("KCONF KEY: RESULT" lines): each must answer every key of KEYS (one a
# line), and a key's lines must be equal unless KNOWN lists the key
# ("KEY | reason" lines, # comments), and must differ if it does.
#
# usage: compare.sh DEDUP.txt VFS.txt KEYS KNOWN
set -eu
dedup=$1 vfs=$2 keys=$3 known=$4
status=0
sort "$keys" >"$keys.sorted"
for t in "$dedup" "$vfs"; do
	sed 's/^KCONF \([^:]*\):.*/\1/' "$t" | sort | cmp -s "$keys.sorted" - || {
		echo "compare: $t does not answer each scenario once:" >&2
		sed 's/^KCONF \([^:]*\):.*/\1/' "$t" | sort | diff "$keys.sorted" - >&2 || true
		status=1
	}
done
rm -f "$keys.sorted"

# The reason given for a listed key (empty: not listed).
reason() { awk -F ' [|] ' -v key="$1" '!/^#/ && $1 == key { print $2 }' "$known"; }
while read -r key; do
	d=$(grep -F "KCONF $key: " "$dedup" || true)
	r=$(grep -F "KCONF $key: " "$vfs" || true)
	why=$(reason "$key")
	if [ "$d" = "$r" ] && [ -n "$why" ]; then
		echo "compare: $key: listed as a difference, but both answer alike:" >&2
		echo "  ${d#KCONF "$key": }" >&2
		status=1
	elif [ "$d" != "$r" ] && [ -n "$why" ]; then
		echo "compare: $key differs, as listed: $why" >&2
	elif [ "$d" != "$r" ]; then
		echo "compare: $key differs:" >&2
		echo "  DEDUP: ${d#KCONF "$key": }" >&2
		echo "  VFS:   ${r#KCONF "$key": }" >&2
		status=1
	fi
done <"$keys"
# A listed key no scenario has (renamed or removed) is a stale entry.
awk -F ' [|] ' '!/^#/ && NF { print $1 }' "$known" | while read -r key; do
	grep -qxF "$key" "$keys" ||
		echo "compare: known-differences lists '$key', which no scenario answers"
done | grep . >&2 && status=1
[ $status -ne 0 ] ||
	echo "compare: FSAL_DEDUP answers as FSAL_VFS but for the listed differences" >&2
exit $status
