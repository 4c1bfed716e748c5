#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Provisions one machine of the Vagrant lab (Vagrantfile) from the packages
# uploaded to /var/tmp/seacache-deb: apt installs them with their Debian
# dependencies; nothing is built but seacache.ko, by DKMS.
#
#   provision.sh server
#   provision.sh dedupbox-server MY_ADDR SERVER MNT_PORT
#   provision.sh dedupbox-host MY_ADDR SERVER MNT_PORT SERVER_BOX read|rw
#   provision.sh host NAME MY_ADDR SERVER MNT_PORT CSI_PORT [HOST_BOX]
set -eu
debs=/var/tmp/seacache-deb
link_port=13050	# the box link: the server box listens, the host box connects
export DEBIAN_FRONTEND=noninteractive

install_debs() {
	# shellcheck disable=SC2046 # one word per package file
	apt-get install -y -q --no-install-recommends "$@" $(ls "$debs"/*.deb)
}

# A systemd service for a long-running lab process
service() { # NAME COMMAND...
	name=$1
	shift
	cat >"/etc/systemd/system/$name.service" <<EOF
[Unit]
Description=SeaCache lab: $name
After=network-online.target
Wants=network-online.target

[Service]
ExecStart=$*
Restart=on-failure
RestartSec=2

[Install]
WantedBy=multi-user.target
EOF
	systemctl daemon-reload
	systemctl enable "$name"
	systemctl restart "$name"
}

role=$1
shift
apt-get update -q
case "$role" in
server)
	install_debs
	conf=/usr/share/doc/seacache-server/examples/ganesha.conf
	[ -e /etc/ganesha/ganesha.conf.dist ] || cp /etc/ganesha/ganesha.conf /etc/ganesha/ganesha.conf.dist
	cp "$conf" /etc/ganesha/ganesha.conf
	systemctl enable rpcbind nfs-ganesha
	systemctl restart rpcbind nfs-ganesha
	n=0
	until ss -ltn | grep -q ':2049 '; do
		n=$((n + 1))
		[ "$n" -le 120 ] || { journalctl -u nfs-ganesha -n 50 >&2; exit 1; }
		sleep 1
	done
	echo "provision: ganesha.nfsd serves /seacache with FSAL_DEDUP ($conf)"
	;;
dedupbox-server)
	my_addr=$1 server=$2 mnt_port=$3
	install_debs
	service seacache-dedupbox /usr/bin/seacache-dedupbox --side server \
		--link "$my_addr:$link_port" --target "$server:2049" --target "$server:$mnt_port" \
		--json --quiet
	;;
dedupbox-host)
	my_addr=$1 server=$2 mnt_port=$3 server_box=$4 rw=""
	[ "$5" != rw ] || rw=--rw
	install_debs
	service seacache-dedupbox /usr/bin/seacache-dedupbox --side host $rw \
		--link "$server_box:$link_port" \
		--forward "$my_addr:2049=$server:2049" --forward "$my_addr:$mnt_port=$server:$mnt_port" \
		--cache-mib 256 --json --quiet
	;;
host)
	name=$1 my_addr=$2 server=$3 mnt_port=$4 csi_port=$5 host_box=${6:-}
	# DKMS builds seacache.ko for the running kernel if its headers are
	# still in the archive (an older box's may not be)
	headers=linux-headers-$(uname -r)
	apt-cache show "$headers" >/dev/null 2>&1 || headers=""
	# shellcheck disable=SC2086 # no package or one
	install_debs $headers
	mode=user
	if modprobe seacache 2>/dev/null; then
		mode=kernel
	else
		echo "provision: seacache.ko does not load in $(uname -r) (no headers for it?):" \
			"$name runs seacache-host's user-space cache" >&2
	fi
	mkdir -p /etc/seacache
	cat >/etc/seacache/lab.env <<EOF
HOST_NAME=$name
HOST_ADDR=$my_addr
SERVER=$server
MNT_PORT=$mnt_port
CSI_PORT=$csi_port
HOST_BOX=$host_box
MODE=$mode
EOF
	install -m 0755 /var/tmp/seacache-lab-host /usr/local/bin/seacache-lab-host
	echo "provision: $name is a $mode host of $server"
	;;
*)
	echo "provision.sh: unknown role $role" >&2
	exit 2
	;;
esac
