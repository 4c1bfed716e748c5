#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# seacachectl stats --mount DIR without seacache.ko: SEACACHE_MOUNTINFO and
# SEACACHE_SYSFS_ROOT point it at a fixture of /proc/self/mountinfo and
# /sys/fs/seacache.  The three formats are compared byte for byte; a
# directory that is no seacache mount, or one whose statistics are missing,
# is an error that says so.
#
# usage: stats-mount.sh SEACACHECTL
set -eu
ctl=$1
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
r=$(cd "$t" && pwd -P)
# A mount point with a space and double quotes: escaped by mountinfo as
# \040, by JSON and Prometheus as \".
vdi="$r/vm \"pool\" 1"
mkdir "$vdi" "$r/nfs" "$r/stacked" "$r/plain" "$r/nostats" "$r/sys"
export SEACACHE_MOUNTINFO="$r/mountinfo" SEACACHE_SYSFS_ROOT="$r/sys"
cat >"$SEACACHE_MOUNTINFO" <<EOM
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
40 22 0:50 / $r/nfs rw,relatime shared:20 - nfs4 10.0.2.2:/vdi rw,vers=4.2
41 22 0:55 / $r/vm\\040"pool"\\0401 rw,relatime shared:21 - seacache none rw,lower=$r/nfs,server=10.0.2.2,csi_port=12060
42 22 0:56 / $r/stacked rw,relatime - seacache none rw,lower=$r/nfs
43 42 0:51 / $r/stacked rw,relatime - nfs4 10.0.2.2:/vdi rw,vers=3
44 22 0:57 / $r/nostats rw,relatime - seacache none rw,lower=$r/nfs
EOM
s="$SEACACHE_SYSFS_ROOT/0:55"
mkdir "$s" "$SEACACHE_SYSFS_ROOT/0:56"
printf '42\n' >"$s/reads"
printf '7\n' >"$s/address_hits"
printf '117440512\n' >"$s/bytes_from_server"
printf '268435456\n' >"$s/cache_bytes"
printf '512\n' >"$s/memory_bytes"
printf '1\n' >"$s/connected"
printf 'elru:16\n' >"$s/policy"
printf 'seacache\n' >"$s/variant"
printf '10.0.2.2:12060\n' >"$s/server"

fail() { echo "FAIL: $*" >&2; exit 1; }
check() { # NAME EXPECTED-FILE ARGS...: the output and exit status 0
	name=$1 want=$2
	shift 2
	"$ctl" stats --mount "$@" >"$t/out" || fail "$name: exit status $?"
	diff -u "$want" "$t/out" || fail "$name: output differs"
	echo "ok: $name"
}

cat >"$t/human" <<EOM
seacache mount $vdi (device 0:55, $s)
  address_hits                     7
  bytes_from_server                117440512 (112.0 MiB)
  cache_bytes                      268435456 (256.0 MiB)
  connected                        1
  memory_bytes                     512
  reads                            42
  policy                           elru:16
  server                           10.0.2.2:12060
  variant                          seacache
EOM
check human "$t/human" "$vdi"
# the same mount through a path that is not canonical
check "human, path with /./ and a trailing /" "$t/human" "$r/./vm \"pool\" 1/"

q="$r/vm \\\"pool\\\" 1"
cat >"$t/json" <<EOM
{"mount":"$q","device":"0:55","counters":{"address_hits":7,"bytes_from_server":117440512,"cache_bytes":268435456,"connected":1,"memory_bytes":512,"reads":42},"settings":{"policy":"elru:16","server":"10.0.2.2:12060","variant":"seacache"}}
EOM
check json "$t/json" "$vdi" --json

cat >"$t/prom" <<EOM
seacache_address_hits{mount="$q"} 7
seacache_bytes_from_server{mount="$q"} 117440512
seacache_cache_bytes{mount="$q"} 268435456
seacache_connected{mount="$q"} 1
seacache_memory_bytes{mount="$q"} 512
seacache_reads{mount="$q"} 42
seacache_mount_info{mount="$q",policy="elru:16",server="10.0.2.2:12060",variant="seacache"} 1
EOM
check prometheus "$t/prom" "$vdi" --prometheus

refused() { # NAME MESSAGE-REGEX DIR: exit status 8, the message on stderr
	rc=0
	"$ctl" stats --mount "$3" >"$t/out" 2>"$t/err" || rc=$?
	[ $rc -eq 8 ] || fail "$1: exit status $rc, not 8"
	[ ! -s "$t/out" ] || fail "$1: printed $(cat "$t/out")"
	grep -q "$2" "$t/err" || fail "$1: stderr '$(cat "$t/err")' lacks '$2'"
	echo "ok: $1: $(cat "$t/err")"
}
refused "NFS mount" "^seacachectl: $r/nfs is not a seacache mount (nfs4 is mounted there)$" "$r/nfs"
refused "NFS on top of seacache" "^seacachectl: $r/stacked is not a seacache mount (nfs4 is mounted there)$" "$r/stacked"
refused "no mount point" "^seacachectl: $r/plain is not a mount point (give the directory a seacache file system is mounted on)$" "$r/plain"
mkdir "$vdi/sub"
refused "a directory inside the mount" "^seacachectl: $vdi/sub is not a mount point" "$vdi/sub"
refused "no such directory" "^seacachectl: $r/gone: No such file or directory$" "$r/gone"
refused "statistics missing" "^seacachectl: $r/sys/0:57: No such file or directory (where the mount keeps its statistics)$" "$r/nostats"
SEACACHE_MOUNTINFO=$r/none refused "no mountinfo" "^seacachectl: $r/none: No such file or directory$" "$vdi"
