#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# seacache-workload on a small synthetic image set, checked with tools that
# share no code with it (e2fsprogs' debugfs and e2fsck, cmp, xxhsum):
#   - the golden and every clone pass `e2fsck -fn`;
#   - each clone differs from the golden in exactly round(F * B) of the
#     golden's B regular-file data blocks (the divergence asked for);
#   - boot storm: per VM, the blocks of the listed files that exist (symlinks
#     followed), in list order, each once; every other block read is file
#     system metadata (superblock, descriptors, inode tables, directories,
#     journal, symlinks), never another file's data;
#   - scan storm: per VM, every regular file's data blocks, file by file in
#     directory order (find's), each block exactly once, plus metadata;
#   - every read's fingerprint is the XXH3-128 of the image's block (as
#     xxhsum -H2 prints it: fingerprint=xxh128 in the header); the patch storm writes the same content, in the same
#     order, to every VM, at blocks free in that VM's image, and FILE.blocks
#     holds the bytes of those fingerprints;
#   - requests are in time order and the VMs interleave;
#   - the same seed gives the same images and storms byte for byte, another
#     seed other ones.
# usage: test_workload_synthetic.sh SEACACHE-WORKLOAD BOOT-FILES
# Fails without e2fsprogs (scripts/install-deps lab).
set -eu
wl=$1
boot_files=$2
PATH=$PATH:/usr/sbin:/sbin
for t in debugfs dumpe2fs e2fsck xxhsum split; do
	command -v $t >/dev/null || { echo "FAIL: $t missing (scripts/install-deps lab)"; exit 1; }
done
# KEEP=DIR keeps the scratch files there, for a look after a failure.
dir=${KEEP:-$(mktemp -d)}
trap '[ -n "${KEEP:-}" ] || rm -rf "$dir"' EXIT
vms=3
div=0.1

fail() { echo "FAIL: $*" >&2; exit 1; }

"$wl" images --synthetic --out "$dir/set" --vms $vms --size-mib 16 --divergence $div \
	--unique-mib 1 --seed 7 2>"$dir/images.log" || { cat "$dir/images.log"; fail "images"; }
for s in boot scan; do
	"$wl" storm $s --images "$dir/set" --out "$dir/$s.wl" --seed 3 2>"$dir/$s.log" ||
		{ cat "$dir/$s.log"; fail "storm $s"; }
done
"$wl" storm patch --images "$dir/set" --out "$dir/patch.wl" --seed 3 --patch-mib 1 \
	2>"$dir/patch.log" || { cat "$dir/patch.log"; fail "storm patch"; }

# ---- valid ext4
for img in "$dir"/set/*.img; do
	e2fsck -fn "$img" >"$dir/fsck.log" 2>&1 || { cat "$dir/fsck.log"; fail "e2fsck $img"; }
done
echo "ok: golden and $vms clones pass e2fsck -fn"

# ---- debugfs views of an image (independent of the generator's ext4 reader)
# walk IMG: "ino type path" for every inode, depth first in directory order,
# a directory before its entries.
walk() {
	local img=$1 path=$2 line ino mode name
	debugfs -R "ls -p \"${path:-/}\"" "$img" 2>/dev/null | while IFS=/ read -r _ ino mode _ _ name _; do
		[ -n "$ino" ] || continue
		[ "$name" = . ] || [ "$name" = .. ] && continue
		case $mode in
		04*) echo "$ino d $path/$name"; walk "$img" "$path/$name" ;;
		10*) echo "$ino f $path/$name" ;;
		12*) echo "$ino l $path/$name" ;;
		*) echo "$ino o $path/$name" ;;
		esac
	done
}
# blocks IMG < "ino ..." lines: "ino blk blk ..." (data blocks in file order)
blocks() {
	awk '{print "blocks <" $1 ">"}' >"$dir/cmds"
	debugfs -f "$dir/cmds" "$1" 2>/dev/null |
		awk '/^debugfs: blocks </ {if (ino) print ino, b; ino = substr($3, 2, length($3) - 2); b = ""; next}
		     {b = b $0} END {if (ino) print ino, b}'
}
# Per-block XXH3-128 of an image: "blk fp".  The image is split
# into one file a block in memory when it can be (thousands of files on a
# busy disk take seconds).
split_dir=$dir
[ -d /dev/shm ] && [ -w /dev/shm ] && split_dir=$(mktemp -d /dev/shm/test_workload.XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$dir"; [ "$split_dir" = "$dir" ] || rm -rf "$split_dir"' EXIT
fingerprints() {
	rm -rf "$split_dir/split" && mkdir "$split_dir/split"
	split -b 4096 -a 6 -d "$1" "$split_dir/split/b"
	(cd "$split_dir/split" && xxhsum -H2 b*) | awk '{print substr($2, 2) + 0, $1}'
	rm -rf "$split_dir/split"
}
# The blocks VM v reads or writes in a storm, in order: "blk fp" lines.
vm_blocks() {
	awk -v vm="$2" '!/^#/ && $2 == vm {for (i = 0; i < $6; i++) print $5 + i, $(7 + i)}' "$1"
}

# ---- divergence
walk "$dir/set/golden.img" "" >"$dir/golden.walk"
awk '$2 == "f" {print $1}' "$dir/golden.walk" | blocks "$dir/set/golden.img" >"$dir/golden.fblocks"
awk '{for (i = 2; i <= NF; i++) print $i}' "$dir/golden.fblocks" | sort -n >"$dir/golden.fset"
nfile=$(wc -l <"$dir/golden.fset")
[ "$nfile" -gt 500 ] || fail "golden has only $nfile file data blocks"
want=$(awk -v f=$div -v n="$nfile" 'BEGIN {printf "%d", f * n + 0.5}')
for v in $(seq 0 $((vms - 1))); do
	img=$(printf '%s/set/vm-%03d.img' "$dir" $v)
	got=$( (cmp -l "$dir/set/golden.img" "$img" || true) | awk '{print int(($1 - 1) / 4096)}' | uniq |
		awk 'NR == FNR {f[$1] = 1; next} ($1 in f)' "$dir/golden.fset" - | wc -l)
	[ "$got" -eq "$want" ] || fail "vm $v: $got of $nfile file blocks rewritten, want $want ($div)"
done
echo "ok: every clone rewrote $want of $nfile golden file data blocks ($div)"

# ---- per VM: metadata blocks, file data blocks, fingerprints
for v in $(seq 0 $((vms - 1))); do
	img=$(printf '%s/set/vm-%03d.img' "$dir" $v)
	walk "$img" "" >"$dir/walk"
	awk '$2 == "f" {print $1}' "$dir/walk" | blocks "$img" >"$dir/fblocks"
	awk '{for (i = 2; i <= NF; i++) print $i}' "$dir/fblocks" | sort -n | uniq >"$dir/fset"
	# Metadata: blocks 0..(descriptors), inode tables, directories,
	# symlinks, the journal.
	{
		dumpe2fs "$img" 2>/dev/null | awk '
			/Primary superblock at/ {print $4 + 0; split($NF, r, "-"); for (b = r[1]; b <= r[2]; b++) print b}
			/Inode table at/ {split($4, r, "-"); for (b = r[1] + 0; b <= r[2] + 0; b++) print b}'
		awk '$2 == "d" || $2 == "l" {print $1} END {print 2; print 8}' "$dir/walk" | blocks "$img" |
			awk '{for (i = 2; i <= NF; i++) print $i}'
	} | sort -n | uniq >"$dir/mset"
	[ -s "$dir/mset" ] || fail "vm $v: no metadata blocks found with debugfs"

	# Fingerprints of every read are the image's bytes.
	fingerprints "$img" >"$dir/fps"
	for s in boot scan; do
		vm_blocks "$dir/$s.wl" $v >"$dir/seq"
		[ -s "$dir/seq" ] || fail "$s: vm $v reads nothing"
		awk 'NR == FNR {fp[$1] = $2; next} fp[$1] != $2 {bad++} END {exit bad > 0}' \
			"$dir/fps" "$dir/seq" ||
			fail "$s: vm $v: a fingerprint differs from the image's XXH3-128"
		[ "$(awk '{print $1}' "$dir/seq" | sort -n | uniq -d | wc -l)" -eq 0 ] ||
			fail "$s: vm $v reads a block twice"
		# Every block is a file's data or metadata, never free space.
		cat "$dir/fset" "$dir/mset" | awk 'NR == FNR {k[$1] = 1; next} !($1 in k) {bad++}
			END {exit bad > 0}' - "$dir/seq" ||
			fail "$s: vm $v reads blocks that are neither file data nor metadata"
	done

	# Boot: the listed files that exist, symlinks followed, in list order.
	grep '^/' "$boot_files" | while read -r p; do
		n=0
		while :; do
			st=$(debugfs -R "stat \"$p\"" "$img" 2>/dev/null) || break
			[ -n "$st" ] || break
			dest=$(printf '%s\n' "$st" | sed -n 's/^Fast link dest: "\(.*\)"$/\1/p')
			[ -z "$dest" ] && break
			case $dest in /*) p=$dest ;; *) p=$(dirname "$p")/$dest ;; esac
			n=$((n + 1))
			[ $n -lt 40 ] || { p=; break; }
		done
		printf '%s\n' "$st" | grep -q 'Type: regular' || continue
		debugfs -R "blocks \"$p\"" "$img" 2>/dev/null | tr ' ' '\n' | grep . || true
	done | awk '!seen[$1]++' >"$dir/boot.expect"
	[ "$(wc -l <"$dir/boot.expect")" -gt 100 ] || fail "boot: too few expected blocks"
	vm_blocks "$dir/boot.wl" $v | awk '{print $1}' >"$dir/seq"
	grep -Fxf "$dir/fset" "$dir/seq" >"$dir/boot.got" || true
	cmp -s "$dir/boot.expect" "$dir/boot.got" ||
		fail "boot: vm $v does not read the listed files' blocks in list order"

	# Scan: every file's blocks, file by file in directory order, once.
	awk '$2 == "f" {print $1}' "$dir/walk" | blocks "$img" |
		awk '{for (i = 2; i <= NF; i++) if (!seen[$i]++) print $i}' >"$dir/scan.expect"
	vm_blocks "$dir/scan.wl" $v | awk '{print $1}' >"$dir/seq"
	grep -Fxf "$dir/fset" "$dir/seq" >"$dir/scan.got" || true
	cmp -s "$dir/scan.expect" "$dir/scan.got" ||
		fail "scan: vm $v does not read every file's blocks once, file by file"

	# Patch: blocks free in this image, the patch's content in order.
	vm_blocks "$dir/patch.wl" $v >"$dir/seq"
	awk '{print $2}' "$dir/seq" >"$dir/patch.fps.$v"
	awk '{print "testb " $1}' "$dir/seq" >"$dir/cmds"
	debugfs -f "$dir/cmds" "$img" 2>/dev/null | grep -c 'not in use' >"$dir/nfree" || true
	[ "$(cat "$dir/nfree")" -eq "$(wc -l <"$dir/seq")" ] ||
		fail "patch: vm $v writes blocks that are in use"
done
echo "ok: boot reads the listed files' blocks in list order, scan every file's blocks once, file by file; fingerprints are XXH3-128 of the image bytes"

for v in $(seq 1 $((vms - 1))); do
	cmp -s "$dir/patch.fps.0" "$dir/patch.fps.$v" || fail "patch: vm $v writes other content than vm 0"
done
fingerprints "$dir/patch.wl.blocks" | sort -n | awk '{print $2}' >"$dir/patch.blockfps"
cmp -s "$dir/patch.fps.0" "$dir/patch.blockfps" || fail "patch: FILE.blocks does not hold the written bytes"
[ "$(wc -l <"$dir/patch.fps.0")" -ge 256 ] || fail "patch: 1 MiB should be at least 256 blocks"
echo "ok: the patch storm writes the same bytes to every VM, at free blocks"

# ---- time order and interleaving
for s in boot scan patch; do
	awk '!/^#/ {if ($1 < last) exit 1; last = $1}' "$dir/$s.wl" || fail "$s: not in time order"
	[ "$(awk '!/^#/ {print $2}' "$dir/$s.wl" | uniq | wc -l)" -gt $((vms * 4)) ] ||
		fail "$s: the VMs do not interleave"
	head -1 "$dir/$s.wl" | grep -q '^# seacache-workload v1 block_size=4096 ' || fail "$s: header"
done
echo "ok: requests in time order, VMs interleaved"

# ---- waves: the same requests per VM, VM v shifted by (v mod N) gaps
"$wl" storm scan --images "$dir/set" --out "$dir/scan.waves.wl" --seed 3 --waves 2 \
	--wave-gap-ms 700 2>/dev/null || fail "storm scan --waves"
awk '!/^#/ {if ($1 < last) exit 1; last = $1}' "$dir/scan.waves.wl" || fail "waves: not in time order"
for v in $(seq 0 $((vms - 1))); do
	shift_us=$(( (v % 2) * 700000 ))
	diff <(awk -v vm=$v -v d=$shift_us '!/^#/ && $2 == vm {$1 += d; print}' "$dir/scan.wl") \
		<(awk -v vm=$v '!/^#/ && $2 == vm {$1 += 0; print}' "$dir/scan.waves.wl") >/dev/null ||
		fail "waves: vm $v is not its one-wave stream shifted by $shift_us us"
done
grep -q '^# waves 2, 700 ms apart$' "$dir/scan.waves.wl" || fail "waves: no header line"
"$wl" storm scan --images "$dir/set" --out "$dir/bad.wl" --waves 0 2>/dev/null &&
	fail "waves: --waves 0 accepted"
echo "ok: --waves 2 starts odd VMs one wave gap after even ones, their requests unchanged"

# ---- reproducible
"$wl" images --synthetic --out "$dir/set2" --vms $vms --size-mib 16 --divergence $div \
	--unique-mib 1 --seed 7 2>/dev/null
for f in golden.img vm-000.img vm-002.img manifest; do
	cmp -s "$dir/set/$f" "$dir/set2/$f" || fail "images: $f differs with the same seed"
done
for s in boot scan; do
	"$wl" storm $s --images "$dir/set2" --out "$dir/$s.2.wl" --seed 3 2>/dev/null
	diff <(grep -v '^# images\|^# image ' "$dir/$s.wl") <(grep -v '^# images\|^# image ' "$dir/$s.2.wl") \
		>/dev/null || fail "storm $s differs with the same seed"
done
"$wl" images --synthetic --out "$dir/set3" --vms 1 --size-mib 16 --divergence $div \
	--unique-mib 1 --seed 8 2>/dev/null
! cmp -s "$dir/set/golden.img" "$dir/set3/golden.img" || fail "another seed, the same golden"
echo "ok: the same seed gives the same bytes, another seed other ones"
