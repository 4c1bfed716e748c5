#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# seacache-workload on the real golden: Debian minbase by debootstrap (made
# once, about two minutes, then reused from $SEACACHE_CACHE/images): two
# clones pass `e2fsck -fn`, a second `images` run reuses the set (no file
# of it written again: same inodes and modification times),
# the boot storm finds the boot list's minbase files (dash, bash, login,
# libc, /etc) and the scan storm reads at least every regular file's data.
# usage: test_workload_lab.sh SEACACHE-WORKLOAD
# Needs root and debootstrap (scripts/install-deps lab): fails without them.
set -eu
wl=$1
PATH=$PATH:/usr/sbin:/sbin
[ "$(id -u)" -eq 0 ] || { echo "FAIL: debootstrap needs root: run make test as root"; exit 1; }
command -v debootstrap >/dev/null || { echo "FAIL: debootstrap missing (scripts/install-deps lab)"; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$wl" images --out "$dir/set" --vms 2 2>"$dir/images.log" || { cat "$dir/images.log"; fail images; }
for img in "$dir"/set/*.img; do
	e2fsck -fn "$img" >"$dir/fsck.log" 2>&1 || { cat "$dir/fsck.log"; fail "e2fsck $img"; }
done
stamps() { find "$dir/set" -type f -printf '%p %i %T@\n' | sort; }
stamps >"$dir/before"
"$wl" images --out "$dir/set" --vms 2 2>"$dir/again.log"
grep -q 'reused' "$dir/again.log" || fail "a second run did not reuse the set"
stamps | cmp -s - "$dir/before" || fail "a second run wrote the set again"

"$wl" storm boot --images "$dir/set" --out "$dir/boot.wl" 2>"$dir/boot.log"
found=$(sed -n 's/.*vm 0: .*, \([0-9]*\) of [0-9]* boot files found/\1/p' "$dir/boot.log")
[ "${found:-0}" -ge 40 ] || { cat "$dir/boot.log"; fail "boot: only ${found:-0} boot files found in minbase"; }
"$wl" storm scan --images "$dir/set" --out "$dir/scan.wl" 2>"$dir/scan.log"
fblocks=$(sed -n 's/.*file_data_blocks=\([0-9]*\).*/\1/p' "$dir/set/manifest")
read0=$(awk '!/^#/ && $2 == 0 {n += $6} END {print n + 0}' "$dir/scan.wl")
[ "$read0" -ge "$fblocks" ] || fail "scan: vm 0 reads $read0 blocks, the golden's files hold $fblocks"
echo "ok: debootstrap golden, 2 clones valid, set reused, boot finds $found files, scan reads $read0 blocks"
