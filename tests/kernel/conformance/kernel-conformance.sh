#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# FSAL_DEDUP against FSAL_VFS through the Linux kernel's NFS client: the
# guest's scenarios (kconform, over NFSv3 with NLM and NFSv4.2) run once
# against each back end, each under its own scripts/ganesha-run --nlm, and
# the transcripts are compared line by line by compare.sh: a line that
# differs must be listed in known-differences (with its reason), and a
# listed line must still differ, otherwise the test fails.
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

{
	for v in v3 v4.2; do
		"$kconform" list | sed "s/^/$v /"
	done
	"$kconform" list cross | sed "s/^/v3+v4.2 /"
} >"$work/expected-keys"
"$here/compare.sh" "$work/dedup.txt" "$work/vfs.txt" "$work/expected-keys" \
	"$here/known-differences"
