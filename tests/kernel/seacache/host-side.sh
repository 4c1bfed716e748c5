#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The host side of the seacache.ko tests, run inside scripts/ganesha-run
# (FSAL_DEDUP with its CSI service on $CSI_PORT): writes the images the
# guest reads over NFS (a seeded golden image and $CLONES clones of it,
# default 8 of 64 MiB, each with 2% of its blocks rewritten), then boots
# the guest with the module on QEMU's user network and runs GUEST-SCRIPT
# there.  Afterwards it checks the server's CSI counters against what the
# guest reported.
#
# usage: host-side.sh SEACACHE.KO SCFS-CHECK GUEST-SCRIPT [run-guest options...]
#
# Environment: CLONES (8), CLONE_MIB (64); GUEST_LOG, the console log;
# SEACACHE_HOST, the seacache-host binary (for nfs-write);
# SCFS_PROXY, the scfs-fault-proxy binary: if set, three relays to the CSI
# service listen on the next ports, given to the guest as CSI_PROXY_PORT
# (plain, stopped and started on request), CSI_MANGLE_PORT (every reply
# after HELLO malformed) and CSI_GARBAGE_PORT (every reply malformed).
#
# The guest asks for host-side actions with a console line
#   SCFS-HOST-DO: N ACTION [ARGS] :END
# (N counting from 1; a line without its end mark is still being written) and waits until the export has a file scfs-ack-N:
#   csi-restart               the CSI service restarted (a new epoch; ganesha
#                             restarts as a whole, NFS clients recover)
#   csi-stop / csi-start      the plain relay killed / started again
#   csi-silent / csi-speak    the plain relay holds every reply, the
#                             connections up / lets them go on
#   csi-slow MS               the plain relay started again holding each
#                             reply MS milliseconds (csi-start: not)
#   nfs-write NAME SEED SIZE  the image scfs-check makes from SEED, of SIZE
#                             bytes, written to NAME by this NFS client
#   peer-serve PATTERN        a seacache-host here reads the file PATTERN
#                             names (printf of 0, written by nfs-write) and
#                             stays a peer serving on 127.0.0.1; the ack file
#                             holds its peer port
#   peer-kill                 that seacache-host killed (SIGKILL)
#   host-read PATTERN         another seacache-host reads the file once
# What an action prints on stdout is the ack file's content.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)
ko=$1 check=$2 script=$3
shift 3
: "${CSI_PORT:?the CSI service's port}"
: "${SEACACHECTL:?the seacachectl binary}"
work=$(mktemp -d)
guest="" proxies="" peer=""
cleanup() {
	[ -z "$guest" ] || kill "$guest" 2>/dev/null || true
	for p in $proxies $peer; do
		kill "$p" 2>/dev/null || true
	done
	rm -rf "$work"
}
trap cleanup EXIT

size=$((${CLONE_MIB:-64} << 20))
clones=${CLONES:-8}
url() { echo "$NFS_URL_BASE/$1?$NFS_URL_OPTS"; }
"$check" image 1 $size "$work/golden"
shas=""
i=1
while [ $i -le "$clones" ]; do
	"$check" image 1 $size "$work/clone" $((100 + i)) 20
	nfs-cp "$work/clone" "$(url clone$i)" >/dev/null
	shas="$shas --env CLONE${i}_SHA=$(sha256sum <"$work/clone" | cut -c1-64)"
	i=$((i + 1))
done

# A relay on port $1 to the service, mangling from reply $2 (0: none);
# its pid in $relay.
start_relay() {
	"$SCFS_PROXY" "$1" "$CSI_PORT" "$2" >"$work/relay-$1" &
	relay=$!
	proxies="$proxies $relay"
	until grep -q ready "$work/relay-$1"; do
		kill -0 "$relay" || { echo "host-side: relay on $1 died" >&2; exit 1; }
		sleep 0.05
	done
}
relay_ports=""
plain=""
if [ -n "${SCFS_PROXY:-}" ]; then
	start_relay $((CSI_PORT + 1)) 0
	plain=$relay
	start_relay $((CSI_PORT + 2)) 2
	start_relay $((CSI_PORT + 3)) 1
	relay_ports="--env CSI_PROXY_PORT=$((CSI_PORT + 1))
		--env CSI_MANGLE_PORT=$((CSI_PORT + 2))
		--env CSI_GARBAGE_PORT=$((CSI_PORT + 3))"
fi

# A workload for seacache-host: the file $1 read once, 64 blocks a request
# (fingerprints only numbered: its reads are checked by the guest's own).
workload() {
	n=$(($(stat -c %s "$1") / 4096)) lbn=0
	echo "# seacache-workload v1 block_size=4096"
	while [ $lbn -lt $n ]; do
		k=$((n - lbn < 64 ? n - lbn : 64))
		printf "0 0 R 0 %d %d" $lbn $k
		seq $((lbn + 1)) $((lbn + k)) | xargs printf " %016x"
		echo
		lbn=$((lbn + k))
	done
}
# seacache-host reading the file of pattern $1 (more options after it);
# it replaces the shell: started with &, $! is its pid.
side_host() {
	pattern=$1
	shift
	workload "$work/write/$(printf "$pattern" 0)" >"$work/wl"
	exec "$SEACACHE_HOST" --workload "$work/wl" --server 127.0.0.1 \
		--csi-port "$CSI_PORT" --dir "" --pattern "$pattern" --vms 1 \
		--cache-mib 16 --no-verify --kv --quiet "$@"
}

# One action the guest asked for.
host_do() {
	case "$1" in
	csi-restart) "$GANESHA_CTL" restart >&2 ;;
	csi-stop)
		kill "$plain"
		wait "$plain" 2>/dev/null || true
		;;
	csi-start | csi-slow)
		kill "$plain" 2>/dev/null || true	# gone after csi-stop
		wait "$plain" 2>/dev/null || true
		start_relay $((CSI_PORT + 1)) "${2:+slow=}${2:-0}"
		plain=$relay
		;;
	csi-silent) kill -USR1 "$plain" ;;
	csi-speak) kill -USR2 "$plain" ;;
	nfs-write)	# nfs-cp creates only: seacache-host overwrites
		mkdir -p "$work/write"
		"$check" image "$3" "$4" "$work/write/$2"
		"$SEACACHE_HOST" --load "$work/write/$2" --dir "" \
			--nfs-url "$NFS_URL_BASE?$NFS_URL_OPTS" >/dev/null
		;;
	peer-serve)
		rm -f "$work/linger" "$work/peer.kv"
		side_host "$2" --name "side-$done_n" --peer-bind 127.0.0.1 \
			--linger-until "$work/linger" >"$work/peer.kv" &
		peer=$!
		until grep -q . "$work/peer.kv" 2>/dev/null; do
			kill -0 "$peer" || return 1
			sleep 0.2
		done
		sed 's/^/host-side: peer /' "$work/peer.kv" >&2
		ss -ltnpH | grep "pid=$peer," | awk '{ print $4 }' | sed 's/.*://'
		;;
	peer-kill)
		kill -9 "$peer"
		wait "$peer" 2>/dev/null || true
		peer=""
		;;
	host-read)
		(side_host "$2" --name "reader-$done_n") >"$work/read.kv" ||
			return 1
		sed 's/^/host-side: reader /' "$work/read.kv" >&2
		grep -a "peer" "$work/read.kv" >&2 || true
		;;
	*) echo "host-side: unknown action '$*'" >&2; return 1 ;;
	esac
}

log=${GUEST_LOG:-$work/console.log}
: >"$log"
echo "host-side: images written, booting the guest" >&2
# shellcheck disable=SC2086 # $shas and $relay_ports are option lists
"$top/tests/kernel/run-guest" --net --script "$script" \
	--module "$ko" --kmod nfsv4 --kmod nfsv3 \
	--file "$check:/test/files/scfs-check" \
	--file "$here/guest-lib.sh:/test/files/guest-lib.sh" \
	--env CSI_PORT="$CSI_PORT" --env NFS_PORT="$NFS_PORT" \
	--env NFS_EXPORT="$NFS_EXPORT" $shas $relay_ports \
	--env CLONE_SIZE=$size \
	--log "$log" "$@" &
guest=$!
done_n=0
while kill -0 "$guest" 2>/dev/null; do
	line=$(grep -a -o "SCFS-HOST-DO: $((done_n + 1)) .* :END" "$log" |
		head -n 1 | tr -d '\r' || true)
	if [ -z "$line" ]; then
		sleep 0.2
		continue
	fi
	line=${line% :END}
	# shellcheck disable=SC2086 # the action's words
	set -- ${line#SCFS-HOST-DO: * }
	echo "host-side: $*" >&2
	host_do "$@" >"$work/reply" || { kill "$guest"; break; }
	done_n=$((done_n + 1))
	nfs-cp "$work/reply" "$(url scfs-ack-$done_n)" >/dev/null
done
status=0
wait "$guest" || status=$?
guest=""
if [ $status -ne 0 ]; then
	grep -a "SCFS-" "$log" >&2
	exit $status
fi
grep -a "SCFS-" "$log"

# The server's view of the same run: the guest's host sent what its own
# counters say (seacachectl reads the service's STATS).
"$SEACACHECTL" stats --server 127.0.0.1:"$CSI_PORT" >"$work/stats"
cat "$work/stats"
