#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# FSAL_DEDUP against FSAL_VFS through the Linux kernel's NFS client: the
# guest's scenarios (kconform, over NFSv3 with NLM and NFSv4.2) run once
# against each back end, each under its own scripts/ganesha-run --nlm, and
# the transcripts are compared line by line.  A line that differs must be
# listed in known-differences (with its reason), and a listed line must
# still differ: otherwise the test fails.
#
# usage: kernel-conformance.sh WORK PLUGINS KCONFORM [run-guest options...]
#   WORK      directory for the transcripts, console and ganesha logs
#   PLUGINS   the directory holding libfsaldedup.so
#   KCONFORM  the static kconform binary
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)
work=$1 plugins=$2 kconform=$3
shift 3
known=$here/known-differences
mkdir -p "$work"
rm -f "$work"/*.txt "$work"/*.log

for fsal in vfs dedup; do
	store=""
	[ $fsal = vfs ] ||
		store="--plugins $plugins --store $work/dedup-store --fresh-store"
	echo "kernel-conformance: FSAL_$fsal" | tr '[:lower:]' '[:upper:]' >&2
	# shellcheck disable=SC2086 # $store is a list of options
	"$top/scripts/ganesha-run" --fsal $fsal --nlm $store \
		--log-copy "$work/$fsal.ganesha.log" -- "$here/host-side.sh" \
		"$work/$fsal.txt" "$kconform" "$work/$fsal.console.log" "$@" || {
		echo "kernel-conformance: the run on FSAL_$fsal failed" >&2
		exit 1
	}
done

# Every scenario answered on both versions, by both back ends.
{
	for v in v3 v4.2; do
		"$kconform" list | sed "s/^/$v /"
	done
	"$kconform" list cross | sed "s/^/v3+v4.2 /"
} | sort >"$work/expected-keys"
status=0
for fsal in vfs dedup; do
	sed 's/^KCONF \([^:]*\):.*/\1/' "$work/$fsal.txt" | sort >"$work/$fsal.keys"
	if ! cmp -s "$work/expected-keys" "$work/$fsal.keys"; then
		echo "kernel-conformance: FSAL_$fsal's transcript lacks lines:" >&2
		diff "$work/expected-keys" "$work/$fsal.keys" >&2 || true
		status=1
	fi
done

# The lines that differ, against the list.
# The reason given for a listed line (empty: not listed).
reason() { awk -F ' [|] ' -v key="$1" '!/^#/ && $1 == key { print $2 }' "$known"; }
while read -r key; do
	d=$(grep -F "KCONF $key: " "$work/dedup.txt" || true)
	r=$(grep -F "KCONF $key: " "$work/vfs.txt" || true)
	if [ "$d" = "$r" ]; then
		if [ -n "$(reason "$key")" ]; then
			echo "kernel-conformance: $key: listed as a difference, but both answer alike:" >&2
			echo "  $d" >&2
			status=1
		fi
		continue
	fi
	if [ -n "$(reason "$key")" ]; then
		echo "kernel-conformance: $key differs, as listed: $(reason "$key")" >&2
		continue
	fi
	echo "kernel-conformance: $key differs:" >&2
	echo "  DEDUP: ${d#KCONF "$key": }" >&2
	echo "  VFS:   ${r#KCONF "$key": }" >&2
	status=1
done <"$work/expected-keys"
[ $status -eq 0 ] && echo "kernel-conformance: FSAL_DEDUP answers as FSAL_VFS but for the listed differences" >&2
exit $status
