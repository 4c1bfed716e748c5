#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The packages of `make deb` install with apt from the files alone and purge
# without leftovers, on this Debian 12 with its packages as they are, while
# the machine itself is untouched: everything runs in a scratch root, an
# overlay of / (upper layer on a tmpfs) in private mount, PID and network
# namespaces, so apt sees this system's installed packages and cannot
# download anything.  What it proves:
#  - make-deb puts libfsaldedup.so where Debian's ganesha loads FSALs from
#    (the directory of its own libfsalvfs.so) and makes seacache-server
#    depend on the nfs-ganesha it was built with; lintian finds no error and
#    no warning but those of a missing mail address and manual pages;
#  - `apt-get install ./*.deb` of all five packages succeeds offline (every
#    dependency is a Debian 12 package that is present), their programs run
#    and find their libraries, mount(8) runs mount.seacache for -t seacache;
#  - Debian's ganesha.nfsd, started with the packaged example ganesha.conf
#    as it is, loads FSAL_DEDUP from its default directory, serves the export
#    (a file written and read back) and the CSI service on the configured
#    port (seacachectl stats --server), and the Vagrant lab's host script
#    (vagrant/lab-host, set up as provision.sh sets up a user-space host)
#    runs a small boot storm against it, Baseline and SeaCache, every block
#    read right;
#  - the DKMS package's postinst adds seacache/VERSION to DKMS; DKMS then
#    builds and installs seacache.ko for the kernel of Debian's headers
#    (scripts/kernel-version; the postinst builds it itself when that kernel
#    is the running one or the running one has no /lib/modules directory, as
#    here; otherwise the test runs the `dkms install` an operator would, and
#    says so), and modprobe finds it there by depmod's index;
#  - `dpkg -r` and then `dpkg --purge` leave no file behind and change none:
#    every entry of the overlay's upper layer after the purge is compared with
#    its state before the install; only apt's and dpkg's logs, caches and
#    databases and DKMS's machine key (made once per machine by dkms, not by
#    the package) may differ.
#
# usage: deb-install.sh BUILD WORK
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
me=$top/tests/deb/deb-install.sh

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

if [ "${1:-}" != --inner ]; then
	build=$1 work=$2
	rm -rf "$work"
	mkdir -p "$work"
	"$top/scripts/make-deb" --build "$build" --out "$work/deb" >"$work/debs"
	[ "$(wc -l <"$work/debs")" -eq 5 ] || fail "make-deb made $(wc -l <"$work/debs") packages, not 5"

	server=$(grep '/seacache-server_' "$work/debs")
	vfs_dir=$(dirname "$(dpkg -L nfs-ganesha-vfs | grep '/libfsalvfs\.so$')")
	dpkg-deb -c "$server" | grep " \.$vfs_dir/libfsaldedup\.so$" >/dev/null ||
		fail "seacache-server has no libfsaldedup.so in $vfs_dir (where libfsalvfs.so is)"
	ganesha=$(dpkg-query -W -f='${Version}' nfs-ganesha)
	dpkg-deb -f "$server" Depends | grep -q "nfs-ganesha (>= $ganesha)" ||
		fail "seacache-server does not depend on nfs-ganesha >= $ganesha: $(dpkg-deb -f "$server" Depends)"
	echo "ok: libfsaldedup.so in $vfs_dir, depends on nfs-ganesha (>= $ganesha)"
	# Debian's policy checks: no error or warning but these (the project has
	# no mail address: make-deb takes DEBEMAIL; the programs' manual is their
	# --help)
	# shellcheck disable=SC2046 # one word per package
	lintian --suppress-tags bogus-mail-host,bogus-mail-host-in-debian-changelog,no-manual-page \
		--fail-on error,warning $(cat "$work/debs") >"$work/lintian.log" 2>&1 ||
		{ cat "$work/lintian.log" >&2; fail "lintian"; }
	echo "ok: lintian"
	exec unshare --mount --pid --fork --net "$me" --inner "$build" "$work" "$vfs_dir"
fi

# --- inside the namespaces -----------------------------------------------------
build=$2 work=$3 vfs_dir=$4
kver=$("$top/scripts/kernel-version")
ver=$(dpkg-deb -f "$(grep '/seacache-dkms_' "$work/debs")" Version)
s=$work/scratch
mkdir -p "$s"
mount -t tmpfs -o size=4g,mode=0755 scratch "$s"
mkdir "$s/lower" "$s/upper" "$s/ovl-work" "$s/root"
mount --bind / "$s/lower"
mount -t overlay overlay -o "lowerdir=$s/lower,upperdir=$s/upper,workdir=$s/ovl-work" "$s/root"
root=$s/root
mount -t proc proc "$root/proc"
mount --rbind /dev "$root/dev"
mount -t tmpfs tmpfs "$root/tmp"
mount -t tmpfs tmpfs "$root/run"
mkdir "$root/tmp/deb"
mount --bind "$work/deb" "$root/tmp/deb"

# A command in the scratch root; in_root_exec in the background: $! is then
# the command's pid
in_root_exec() {
	exec chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
		HOME=/root LC_ALL=C "$@"
}
in_root() {
	(in_root_exec "$@")
}

# What differs from the machine's root: every entry of the upper layer, but
# a file copied up and holding what it held (a rewritten dpkg status, say),
# as type, path and, for files and links, what they hold.  (A whiteout, a
# character device 0/0, is a file deleted.)
upper_state() {
	(cd "$s/upper" && find . ! -type d -printf '%y %p\n' | sort -k2 |
		while read -r t p; do
			case $t in
			f) cmp -s "$p" "$s/lower/$p" || echo "$t $p $(md5sum <"$p" | cut -c1-32)" ;;
			l) echo "$t $p $(readlink "$p")" ;;
			*) echo "$t $p" ;;
			esac
		done)
}
# What apt, dpkg and dkms write for themselves on any install
allowed='^. \./(var/log/|var/cache/(apt|debconf|ldconfig)/|var/lib/apt/|var/lib/dpkg/(status-old|available|lock|lock-frontend|triggers/Lock|triggers/Unincorp)|etc/ld\.so\.cache|var/lib/dkms/mok\.(key|pub) )'

# The state before, as on a host with the kernel installed: depmod's index
# of that kernel exists (here only its headers are installed).
[ -e "$root/lib/modules/$kver/modules.dep" ] || in_root depmod "$kver" 2>/dev/null
upper_state >"$work/upper-before"

debs=$(sed 's|.*/|/tmp/deb/|' "$work/debs" | tr '\n' ' ')
# shellcheck disable=SC2086 # one word per package
in_root apt-get install -y -q --no-install-recommends $debs >"$work/apt.log" 2>&1 ||
	{ cat "$work/apt.log" >&2; fail "apt-get install of the packages failed (no network: a dependency missing here?)"; }
grep -E 'Building for|skipped|Building initial|Done' "$work/apt.log" | sed 's/^/postinst: /' || true
for p in seacache-server seacache-host seacache-dkms seacachectl seacache-dedupbox; do
	# shellcheck disable=SC2016 # dpkg-query's format
	in_root dpkg-query -W -f='${Status}' "$p" | grep -q 'install ok installed' || fail "$p is not installed"
done
echo "ok: apt-get install of the five packages, offline"

in_root ldd "$vfs_dir/libfsaldedup.so" | grep 'not found' && fail "libfsaldedup.so: a library is missing"
in_root seacachectl --help 2>&1 | grep -q '^usage: seacachectl' || fail "seacachectl does not run"
in_root seacache-host --help 2>&1 | grep -q '^usage: seacache-host' || fail "seacache-host does not run"
in_root seacache-fuse --help 2>&1 | grep -q '^usage: seacache-fuse' || fail "seacache-fuse does not run"
in_root seacache-dedupbox --help 2>&1 | grep -q 'side' || fail "seacache-dedupbox does not run"
in_root mount -f -v -t seacache 127.0.0.1:/seacache /mnt -o csi_port=20050 >"$work/mount.log" 2>&1 ||
	{ cat "$work/mount.log" >&2; fail "mount -f -t seacache: mount.seacache did not accept the mount"; }
echo "ok: seacachectl, seacache-host, seacache-fuse, seacache-dedupbox run; mount -t seacache runs mount.seacache"

# Debian's ganesha.nfsd with the packaged example configuration as it is:
# it loads libfsaldedup.so from its default FSAL directory and serves the
# export (a file written and read back over NFSv3) and the CSI service on
# the configuration's port.  What it writes goes to tmpfs mounts (its store,
# recovery directory, log), not into the root checked below.  The server's
# address (CSI_Bind_Addr) goes on this network namespace's loopback, so
# every call comes from it, inside the export's client list; 127.0.0.1,
# outside that list, is refused over NFS and CSI alike.
conf=/usr/share/doc/seacache-server/examples/ganesha.conf
mnt_port=$(sed -n 's/^[[:space:]]*MNT_Port = \([0-9]*\);.*/\1/p' "$root$conf")
csi_port=$(sed -n 's/^[[:space:]]*CSI_Port = \([0-9]*\);.*/\1/p' "$root$conf")
server=$(sed -n 's/^[[:space:]]*CSI_Bind_Addr = "\([0-9.]*\)";.*/\1/p' "$root$conf")
[ -n "$server" ] || fail "$conf names no CSI_Bind_Addr"
ip link set lo up
ip addr add "$server/24" dev lo
for d in /var/lib/seacache /var/lib/nfs/ganesha; do
	mkdir -p "$root$d"
	mount -t tmpfs tmpfs "$root$d"
done
in_root_exec rpcbind -f -w >"$work/rpcbind.log" 2>&1 &
rpcbind_pid=$!
in_root_exec ganesha.nfsd -F -L /run/ganesha.log -p /run/ganesha.pid -f "$conf" >"$work/ganesha.out" 2>&1 &
ganesha_pid=$!
url="nfs://$server/seacache/?mountport=$mnt_port"
n=0
until in_root nfs-ls "$url" >/dev/null 2>&1; do
	n=$((n + 1))
	if ! kill -0 $ganesha_pid 2>/dev/null || [ $n -gt 600 ]; then
		cat "$root/run/ganesha.log" "$work/ganesha.out" >&2
		fail "ganesha.nfsd with $conf does not serve $url"
	fi
	sleep 0.2
done
head -c 1048576 /dev/urandom >"$root/tmp/written"
in_root nfs-cp /tmp/written "nfs://$server/seacache/written?mountport=$mnt_port" >/dev/null
in_root nfs-cp "nfs://$server/seacache/written?mountport=$mnt_port" /tmp/read >/dev/null
cmp "$root/tmp/written" "$root/tmp/read" || fail "a file written over NFS reads back different"
in_root seacachectl stats --server "$server:$csi_port" >"$work/csi-stats" 2>&1 ||
	{ cat "$work/csi-stats" >&2; fail "seacachectl stats --server $server:$csi_port"; }
# from outside the client list: nothing over NFS, nothing over CSI
if in_root nfs-ls "nfs://127.0.0.1/seacache/?mountport=$mnt_port" >/dev/null 2>&1; then
	fail "the example configuration serves NFS to 127.0.0.1, outside its client list"
fi
if in_root seacachectl stats --server "127.0.0.1:$csi_port" >/dev/null 2>&1; then
	fail "the example configuration's CSI service answers on 127.0.0.1"
fi
echo "ok: ganesha.nfsd serves $url with FSAL_DEDUP from $vfs_dir and the example configuration; CSI service on port $csi_port"

# The Vagrant lab's host script, as provision.sh sets up a user-space host,
# against this server: a boot storm of 2 VMs on synthetic images, Baseline
# (nfs) and SeaCache (CSI), every block checked.
wl=$work/wl
rm -rf "$wl"
"$build/tools/workload/seacache-workload" images --out "$wl" --vms 2 --synthetic --size-mib 16 \
	>"$work/workload.log" 2>&1
"$build/tools/workload/seacache-workload" storm boot --images "$wl" --out "$wl/boot.wl" --vms 2 \
	>>"$work/workload.log" 2>&1
mkdir "$root/tmp/wl"
mount --bind "$wl" "$root/tmp/wl"
for img in vm-000.img vm-001.img; do
	in_root seacache-host --load "/tmp/wl/$img" --dir "" --nfs-url "$url" --quiet ||
		fail "seacache-host --load $img"
done
cp "$top/vagrant/lab-host" "$root/tmp/lab-host"
mkdir "$root/etc/seacache"
printf 'HOST_NAME=host1\nHOST_ADDR=%s\nSERVER=%s\nMNT_PORT=%s\nCSI_PORT=%s\nHOST_BOX=\nMODE=user\n' \
	"$server" "$server" "$mnt_port" "$csi_port" >"$root/etc/seacache/lab.env"
for variant in nfs seacache; do
	in_root sh /tmp/lab-host /tmp/wl/boot.wl 0 2 "$variant" 16 >"$work/lab-$variant" 2>&1 ||
		{ cat "$work/lab-$variant" >&2; fail "vagrant/lab-host, $variant variant"; }
	grep '^host ' "$work/lab-$variant" | grep ' mismatches=0 ' | grep ' errors=0 ' | grep -q ' verified=[1-9]' ||
		{ cat "$work/lab-$variant" >&2; fail "vagrant/lab-host, $variant variant: not every block read and right"; }
	echo "ok: vagrant/lab-host, $variant: $(grep '^host ' "$work/lab-$variant" | grep -o ' verified=[0-9]*\| server_bytes=[0-9]*' | tr -d '\n')"
done
rm -r "$root/etc/seacache"
umount "$root/tmp/wl"

kill -TERM $ganesha_pid $rpcbind_pid
wait $ganesha_pid $rpcbind_pid || true
for d in /var/lib/seacache /var/lib/nfs/ganesha; do umount "$root$d"; done

in_root dkms status -m seacache -v "$ver" | grep -q . || fail "the postinst did not add seacache/$ver to DKMS"
if ! in_root dkms status -m seacache -v "$ver" -k "$kver" | grep -q ': installed$'; then
	echo "note: the postinst built for the running kernel ($(uname -r)) only: dkms install for $kver"
	in_root dkms install -m seacache -v "$ver" -k "$kver" >"$work/dkms.log" 2>&1 ||
		{ cat "$work/dkms.log" >&2; fail "dkms install seacache/$ver -k $kver"; }
fi
ko=$(in_root modprobe -S "$kver" --show-depends seacache | sed -n 's/^insmod \([^ ]*\).*/\1/p')
case $ko in
/lib/modules/"$kver"/updates/dkms/seacache.ko*) ;;
*) fail "modprobe -S $kver does not find seacache in DKMS's directory: '$ko'" ;;
esac
in_root modinfo -F vermagic "$ko" | grep -q "^$kver " || fail "$ko: vermagic is not $kver"
echo "ok: DKMS installed $ko for $kver"

in_root dpkg -r seacache-server seacache-host seacache-dkms seacache-dedupbox seacachectl >"$work/remove.log" 2>&1 ||
	{ cat "$work/remove.log" >&2; fail "dpkg -r"; }
[ ! -e "$root$ko" ] || fail "dpkg -r left $ko"
in_root dpkg --purge seacache-server seacache-host seacache-dkms seacache-dedupbox seacachectl >>"$work/remove.log" 2>&1 ||
	{ cat "$work/remove.log" >&2; fail "dpkg --purge"; }
upper_state >"$work/upper-after"
diff "$work/upper-before" "$work/upper-after" | sed -n 's/^[<>] //p' | grep -Ev "$allowed" >"$work/traces" || true
if [ -s "$work/traces" ]; then
	echo "FAIL: after dpkg --purge these differ from before the install (type path content):" >&2
	cat "$work/traces" >&2
	cut -d' ' -f2 "$work/traces" | sort -u | while read -r p; do
		[ -f "$s/lower/$p" ] && [ -f "$s/upper/$p" ] && diff -u "$s/lower/$p" "$s/upper/$p" | head -20 >&2
	done
	exit 1
fi
echo "ok: dpkg -r and --purge leave no file behind and change none"
