#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# vagrant/Vagrantfile is valid for Vagrant and its libvirt provider (every
# machine's configuration, the provider's settings, the provisioners' files:
# the packages make-deb makes and the scripts), with 2 hosts and with 40
# hosts and the dedup box pair, without network (a private network
# namespace) and without a box downloaded (VAGRANT_HOME is empty).  And it
# refuses what it cannot provision: no packages, a host count out of range.
#
# usage: validate.sh BUILD WORK
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
build=$1 work=$2
rm -rf "$work"
mkdir -p "$work/home"
"$top/scripts/make-deb" --build "$build" --out "$work/deb" >/dev/null

validate() { # expected-status VAR=VALUE...
	want=$1
	shift
	rc=0
	(cd "$top/vagrant" && env VAGRANT_HOME="$work/home" VAGRANT_DOTFILE_PATH="$work/dotfile" \
		VAGRANT_CHECKPOINT_DISABLE=1 SEACACHE_DEB_DIR="$work/deb" "$@" \
		unshare --net vagrant validate) >"$work/out" 2>&1 || rc=$?
	if [ "$want" = ok ] && [ $rc -ne 0 ]; then
		cat "$work/out" >&2
		echo "FAIL: vagrant validate with $*: exit status $rc" >&2
		exit 1
	fi
	if [ "$want" != ok ] && { [ $rc -eq 0 ] || ! grep -q "$want" "$work/out"; }; then
		cat "$work/out" >&2
		echo "FAIL: vagrant validate with $* (exit status $rc) does not say: $want" >&2
		exit 1
	fi
	echo "ok: vagrant validate $*: ${want}"
}
validate ok SEACACHE_HOSTS=2
validate ok SEACACHE_HOSTS=40 SEACACHE_DEDUPBOX=rw
validate 'no seacachectl_\*\.deb in .*: run make deb' SEACACHE_DEB_DIR="$work/none"
validate 'SEACACHE_HOSTS is 0, not 1 .. 40' SEACACHE_HOSTS=0
if find "$work/home" -path '*/boxes/*' | grep -q .; then
	echo "FAIL: a box was downloaded" >&2
	exit 1
fi
