#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# seacachectl defaults prints what lib/defaults.cmake read from
# seacache/defaults.h: the same names in the same order with the values the
# compiler saw, so that the scripts (which ask seacachectl) and the tests'
# configs (which CMake makes) cannot disagree, and no integer of the header
# is missing from its SC_DEFAULTS list.  A NAME gives its value alone; an
# unknown one is an error.
#
# usage: defaults.sh SEACACHECTL EXPECTED-FILE CSI-PORT
set -eu
ctl=$1 expected=$2 port=$3
"$ctl" defaults | diff -u "$expected" -
# shell-sourceable as it is
eval "$("$ctl" defaults)"
[ "$SC_CSI_PORT" = "$port" ]
[ "$("$ctl" defaults SC_CSI_PORT SC_BLOCK_SIZE_MAX)" = "$port
65536" ]
"$ctl" defaults --json | grep -q "\"SC_CSI_PORT\": $port[,}]"
if err=$("$ctl" defaults SC_NO_SUCH 2>&1); then
	echo "defaults SC_NO_SUCH succeeded" >&2
	exit 1
fi
case $err in
*"no default named 'SC_NO_SUCH'"*) ;;
*) echo "defaults SC_NO_SUCH: $err" >&2; exit 1 ;;
esac
"$ctl" --help | grep -q "SC_CSI_PORT=$port"
echo "seacachectl defaults: ok"
