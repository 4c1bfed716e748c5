#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# `dkms add` and `dkms build` of seacache.ko from the tree scripts/dkms-tree
# makes, for the kernel of Debian's headers (scripts/kernel-version), as a
# VDI host's `dkms install` starts.  dkms keeps its source and build trees
# in WORK (--sourcetree, --dkmstree): nothing is installed (dkms makes
# its module-signing key /var/lib/dkms/mok.key once, as on any host).
# Passes when the module is built for that kernel: modinfo shows its name,
# its vermagic and the file system alias mount(8) loads it by.
#
# usage: dkms-build.sh WORK
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
work=$1
kver=$("$top/scripts/kernel-version")
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' "$top/client-module/dkms.conf")
rm -rf "$work"
mkdir -p "$work/src" "$work/dkms"
"$top/scripts/dkms-tree" "$work/src/seacache-$ver"
trees="--sourcetree $work/src --dkmstree $work/dkms"
# shellcheck disable=SC2086 # the options, one word each
dkms add -m seacache -v "$ver" $trees
# shellcheck disable=SC2086
dkms build -m seacache -v "$ver" -k "$kver" $trees ||
	{ cat "$work/dkms/seacache/$ver/build/make.log" >&2; exit 1; }
# shellcheck disable=SC2086
dkms status -m seacache -v "$ver" -k "$kver" $trees | grep -q ": built$" ||
	{ echo "FAIL: dkms status does not say built" >&2; exit 1; }
ko=$(find "$work/dkms/seacache/$ver/$kver" -name 'seacache.ko*')
[ -n "$ko" ] || { echo "FAIL: no seacache.ko under $work/dkms" >&2; exit 1; }
[ "$(modinfo -F name "$ko")" = seacache ] || { echo "FAIL: $ko: name" >&2; exit 1; }
modinfo -F vermagic "$ko" | grep -q "^$kver " ||
	{ echo "FAIL: $ko: vermagic $(modinfo -F vermagic "$ko"), not $kver" >&2; exit 1; }
modinfo -F alias "$ko" | grep -qx fs-seacache ||
	{ echo "FAIL: $ko: no fs-seacache alias" >&2; exit 1; }
echo "ok: $ko built by dkms for $kver"
