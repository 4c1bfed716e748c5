#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# mount.seacache and umount.seacache without a kernel: mount, umount and
# getent are stubs that log their arguments (and fail when told to), a
# fixture stands for /proc/self/mountinfo.  Checked: the two mount commands
# and their options, the lower directory made and removed, mount(8)'s own
# options left out, each refusal with its message and mount(8)'s status 32.
#
# usage: helper.sh TOOLS_DIR   (tools/mount-seacache)
set -eu
tools=$(cd "$1" && pwd)
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
r=$(cd "$t" && pwd -P)
mkdir "$r/bin" "$r/srv" "$r/srv/my vdi" "$r/srv/plain"
for c in mount umount; do
	cat >"$r/bin/$c" <<EOM
#!/bin/sh
printf '%s' $c >>"$r/log"
printf ' [%s]' "\$@" >>"$r/log"
echo >>"$r/log"
case " \$* " in *" \${FAIL:-no-such-word} "*) exit 32 ;; esac
EOM
done
cat >"$r/bin/getent" <<'EOM'
#!/bin/sh
[ "$1 $2" = "ahosts nas" ] || exit 2
printf '10.9.8.7        STREAM nas\n10.9.8.7        DGRAM\n'
EOM
chmod +x "$r/bin/"*
export PATH="$r/bin:$PATH" SEACACHE_RUN_DIR="$r/run" SEACACHE_MOUNTINFO="$r/mountinfo"
vdi="$r/srv/my vdi"
lower="$r/run$vdi"
printf '22 1 8:1 / / rw - ext4 /dev/sda1 rw\n' >"$SEACACHE_MOUNTINFO"

fail() { echo "FAIL: $*" >&2; exit 1; }
helper() { # NAME ARGS...: run mount.seacache or umount.seacache
	rm -f "$r/log"
	: >"$r/log"
	rc=0
	"$tools/$@" >"$r/out" 2>"$r/err" || rc=$?
}
expect_log() { # TEST, then the expected log on stdin
	cat >"$r/want"
	diff -u "$r/want" "$r/log" || fail "$1: other commands ran"
	[ $rc -eq 0 ] || fail "$1: exit status $rc: $(cat "$r/err")"
	echo "ok: $1"
}
refused() { # TEST MESSAGE: status 32, the message, no command run
	[ $rc -eq 32 ] || fail "$1: exit status $rc, not 32"
	grep -qF -- "$2" "$r/err" || fail "$1: stderr '$(cat "$r/err")' lacks '$2'"
	[ ! -s "$r/log" ] || fail "$1: ran $(cat "$r/log")"
	echo "ok: $1: $(cat "$r/err")"
}

helper mount.seacache --help
[ $rc -eq 0 ] && grep -q "csi_port=N" "$r/out" || fail "--help"
helper umount.seacache --help
[ $rc -eq 0 ] && grep -q "^umount.seacache MOUNTPOINT" "$r/out" || fail "umount --help"
echo "ok: --help"

# As mount(8) calls it, with its own options and an NFS port among them.
helper mount.seacache 10.0.0.5:/vdi "$vdi" -o \
	rw,_netdev,nofail,csi_port=2049,cache=1G,policy=elru:16,port=2050,x-systemd.automount
expect_log "mount, NFS 4.2" <<EOM
mount [-t] [nfs] [-o] [vers=4.2,rw,port=2050] [10.0.0.5:/vdi] [$lower]
mount [-i] [-t] [seacache] [-o] [lower=$lower,server=10.0.0.5,csi_port=2049,cache=1G,policy=elru:16,rw] [10.0.0.5:/vdi] [$vdi]
EOM
[ -d "$lower" ] || fail "no lower directory $lower"
rmdir "$lower"

helper mount.seacache "nas:/export/vdi" "$r/srv/../srv/my vdi/" -v -o \
	csi_port=7,nfsvers=3,variant=baseline,peer=10.0.0.9:7000,ro
expect_log "mount, NFS 3, a server name looked up" <<EOM
mount [-t] [nfs] [-o] [vers=3,ro] [nas:/export/vdi] [$lower]
mount [-i] [-t] [seacache] [-o] [lower=$lower,server=10.9.8.7,csi_port=7,variant=baseline,peer=10.0.0.9:7000,ro] [nas:/export/vdi] [$vdi]
EOM
grep -q "^mount.seacache: mount -t nfs" "$r/err" || fail "-v shows no command"
rmdir "$lower"

helper mount.seacache "[fd00::5]:/vdi" "$vdi" -o csi_port=9,server=10.0.0.6
expect_log "mount, IPv6 NFS server, CSI server given" <<EOM
mount [-t] [nfs] [-o] [vers=4.2] [[fd00::5]:/vdi] [$lower]
mount [-i] [-t] [seacache] [-o] [lower=$lower,server=10.0.0.6,csi_port=9] [[fd00::5]:/vdi] [$vdi]
EOM
rmdir "$lower"

# A remount: the stack only.
helper mount.seacache none "$vdi" -o remount,cache=512M
expect_log "remount" <<EOM
mount [-i] [-t] [seacache] [-o] [remount,cache=512M] [none] [$vdi]
EOM
# The two-line recipe's second line, the helper installed.
helper mount.seacache none "$vdi" -o lower=/srv/.nfs,server=10.0.0.5,csi_port=9
expect_log "the stack alone, lower= given" <<EOM
mount [-i] [-t] [seacache] [-o] [lower=/srv/.nfs,server=10.0.0.5,csi_port=9] [none] [$vdi]
EOM

helper mount.seacache 10.0.0.5:/vdi "$vdi" -f -o csi_port=9
expect_log "-f: nothing mounted" </dev/null

helper mount.seacache 10.0.0.5:/vdi "$vdi" -o cache=1G
expect_log "no csi_port: seacache.ko's default" <<EOM
mount [-t] [nfs] [-o] [vers=4.2] [10.0.0.5:/vdi] [$lower]
mount [-i] [-t] [seacache] [-o] [lower=$lower,server=10.0.0.5,cache=1G] [10.0.0.5:/vdi] [$vdi]
EOM
rmdir "$lower"
helper mount.seacache 10.0.0.5:/vdi "$vdi" -o csi_port=70000
refused "csi_port out of range" "csi_port=70000: a TCP port, 1-65535"
helper mount.seacache 10.0.0.5:/vdi "$vdi" -o csi_port=9,nfsvers=5
refused "bad NFS version" "nfsvers=5: 3, 4, 4.0, 4.1 or 4.2"
helper mount.seacache 10.0.0.5 "$vdi" -o csi_port=9
refused "no export" "10.0.0.5: not SERVER:/EXPORT"
helper mount.seacache 10.0.0.5:/vdi "$r/srv/none" -o csi_port=9
refused "no mount point" "$r/srv/none: not a directory"
helper mount.seacache unknown:/vdi "$vdi" -o csi_port=9
refused "a name that does not resolve" "unknown: cannot look up its address (give server=ADDR)"
helper mount.seacache 10.0.0.5:/vdi "$vdi" -o csi_port=9,server=csi.example
refused "a CSI server name" "server=csi.example: a numeric IPv4 or IPv6 address"
printf '40 22 0:50 / %s rw - nfs4 10.0.0.5:/vdi rw\n' \
	"$(printf '%s' "$lower" | sed 's/ /\\040/g')" >>"$SEACACHE_MOUNTINFO"
helper mount.seacache 10.0.0.5:/vdi "$vdi" -o csi_port=9
refused "mounted already" "$lower is mounted already"
printf '22 1 8:1 / / rw - ext4 /dev/sda1 rw\n' >"$SEACACHE_MOUNTINFO"

# A failed mount leaves nothing behind.
FAIL=nfs helper mount.seacache 10.0.0.5:/vdi "$vdi" -o csi_port=9
[ $rc -eq 32 ] && grep -q "the NFS mount of 10.0.0.5:/vdi failed" "$r/err" ||
	fail "NFS mount failure: status $rc, $(cat "$r/err")"
[ -z "$(ls -A "$r/run")" ] || fail "NFS mount failure: $(ls -R "$r/run") left behind"
FAIL=seacache helper mount.seacache 10.0.0.5:/vdi "$vdi" -o csi_port=9
[ $rc -eq 32 ] && grep -q "the seacache mount on $vdi failed" "$r/err" ||
	fail "seacache mount failure: status $rc, $(cat "$r/err")"
tail -n 1 "$r/log" | grep -qxF "umount [$lower]" || fail "NFS mount not undone: $(cat "$r/log")"
[ -z "$(ls -A "$r/run")" ] || fail "seacache mount failure: $(ls -R "$r/run") left behind"
echo "ok: failed mounts undone"

# umount.seacache: the stack, then the NFS mount the helper made under it
# (lower= as the kernel shows it: a space is \040).
mkdir -p "$lower"
esc() { printf '%s' "$1" | sed 's/ /\\040/g'; }
cat >>"$SEACACHE_MOUNTINFO" <<EOM
40 22 0:50 / $(esc "$lower") rw - nfs4 10.0.0.5:/vdi rw,vers=4.2
41 22 0:55 / $(esc "$vdi") rw - seacache 10.0.0.5:/vdi rw,lower=$(esc "$lower"),server=10.0.0.5,csi_port=9,cache=262144k,policy=elru:16,variant=seacache
42 22 0:56 / $r/srv/plain rw - seacache none rw,lower=/srv/.nfs,server=10.0.0.5,csi_port=9
EOM
helper umount.seacache "$vdi" -l
expect_log "umount: the stack and its NFS mount" <<EOM
umount [-i] [-l] [$vdi]
umount [-l] [$lower]
EOM
[ -z "$(ls -A "$r/run")" ] || fail "umount: $(ls -R "$r/run") left behind"
helper umount.seacache "$r/srv/plain"
expect_log "umount: a lower mount of someone else's stays" <<EOM
umount [-i] [$r/srv/plain]
EOM
helper umount.seacache /
refused "umount of another file system" "/ is not a seacache mount (ext4 is mounted there)"
helper umount.seacache "$r/srv"
refused "umount of no mount" "$r/srv: not mounted"
