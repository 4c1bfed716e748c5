# SPDX-License-Identifier: BSD-2-Clause
# Sourced by the seacache.ko guest scripts (faults, lifecycle, two hosts):
# the NFS export mounted at $lower, seacache mounts on it, their counters,
# and actions asked of host-side.sh.
check=/test/files/scfs-check
lower=/srv/.vdi-nfs
upper=/srv/vdi
fail() { echo "SCFS-TEST: FAILED: $*"; exit 1; }
step() { echo "SCFS-TEST: [$(cut -d" " -f1 /proc/uptime)s] $*"; }

mount_lower() {
	mkdir -p $lower
	mount -t nfs4 -o vers=4.2,port="$NFS_PORT",proto=tcp \
		10.0.2.2:"$NFS_EXPORT" $lower || fail "NFS mount"
}

# scfs_mount DIR CSI_PORT [MORE_OPTIONS]: a seacache mount on $lower.
scfs_mount() {
	mkdir -p "$1"
	mount -t seacache -o \
		"lower=$lower,server=10.0.2.2,csi_port=$2,cache=16M${3:+,$3}" \
		none "$1" || fail "seacache mount on $1 (port $2)"
}

# The sysfs directory of the seacache mount on DIR.
scfs_stats() {
	echo "/sys/fs/seacache/$(awk -v m="$1" '$5 == m { print $3 }' \
		/proc/self/mountinfo)"
}

# scfs_stat DIR NAME: one counter of the mount on DIR.
scfs_stat() { cat "$(scfs_stats "$1")/$2"; }

# host_do ACTION [ARGS]: host-side.sh does it; back when it is done.
host_done=0
host_do() {
	host_done=$((host_done + 1))
	# the end mark: host-side.sh may read the console mid-line
	echo "SCFS-HOST-DO: $host_done $* :END"
	# a directory opened is revalidated (close-to-open): ls sees new names
	until ls $lower | grep -qx "scfs-ack-$host_done"; do
		sleep 0.5
	done
}

# workload_check DIR: what the workload in DIR wrote, NFS reads too.
workload_check() {
	for f in "$upper/$1"/random-*; do
		cmp "$f" "$lower/$1/${f##*/}" || fail "$f differs on NFS"
	done
}
# wait_moved NAME FROM: until the counter NAME of $upper is past FROM.
wait_moved() {
	while [ "$(scfs_stat $upper "$1")" -le "$2" ]; do
		sleep 0.2
	done
}

# sha FILE: its SHA-256.
sha() { sha256sum <"$1" | cut -c1-64; }
