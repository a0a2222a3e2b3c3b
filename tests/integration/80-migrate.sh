#!/bin/sh
# SPDX-License-Identifier: MIT
#
# bfs migrate: ext2, ext3 and ext4 images made with mkfs.ext4 -d from a
# generated tree (every file type, hard links, xattrs, ACLs, sparse and huge
# files, deep and large directories) are converted; through a bfs mount
# every file and attribute equals what fuse2fs shows of the source; bfs fsck
# is clean; rollback gives back a filesystem e2fsck passes whose used blocks
# (metadata and data, e2image -ra) are byte-identical.  Then the refusals, a nearly full
# source, writes failing at every Nth write and the device states of a
# crash replayed from the I/O log: the source is intact in each, or bfs is.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount-lib.sh"

mount_prereqs
for t in mkfs.ext4 e2fsck debugfs e2image fuse2fs setfacl; do
	command -v $t >/dev/null || skip "$t not installed (e2fsprogs, fuse2fs, acl)"
done
APPLY=$TOOLS/bfs-iolog-apply
[ -x "$APPLY" ] || fail "bfs-iolog-apply not built"
TREE="python3 $REPO/tests/integration/migrate/tree.py"
export E2FSPROGS_FAKE_TIME= MKE2FS_DEVICE_SECTSIZE=

$TREE make src || fail "cannot make the source tree"
setfacl -m u:4242:rx,g:77:r src/tiny || fail "setfacl"
setfacl -d -m u:4242:rwx src/dir || fail "setfacl -d"

# the metadata and data of every used block: equal means "same filesystem"
used_digest() { e2image -ra "$1" - 2>/dev/null | md5sum | cut -d' ' -f1; }

# what mkfs -d does not make: nanoseconds, a creation time, unwritten extents
# (with inline_data, debugfs makes the new file inline: no prealloc there)
ext4_extras() {
	debugfs -w -R "sif /dir/block mtime_extra 0x1d6f3454" "$1" >/dev/null 2>&1 &&
	debugfs -w -R "sif /small crtime_extra 0x00000a04" "$1" >/dev/null 2>&1 ||
		fail "debugfs sif"
	case $1 in *inline*) return ;; esac
	debugfs -w -R "write /dev/null prealloc" "$1" >/dev/null 2>&1 &&
	debugfs -w -R "fallocate /prealloc 0 63" "$1" >/dev/null 2>&1 &&
	debugfs -w -R "sif /prealloc size 200000" "$1" >/dev/null 2>&1 ||
		fail "debugfs sif"
}

ext_manifest() {
	fuse2fs -o ro "$1" mnt2 >/dev/null 2>&1 || fail "fuse2fs $1"
	$TREE manifest mnt2 >"$2" || { umount mnt2; fail "manifest of $1"; }
	umount mnt2 || fail "umount mnt2"
}

bfs_manifest() {
	expect_ok "$BFS" mount -o ro "$1" mnt
	wait_mounted mnt
	$TREE manifest mnt >"$2" || { umount mnt; fail "manifest of bfs $1"; }
	unmount_wait umount mnt
}

# NAME MKFS-OPTIONS...: make, convert, compare, fsck, roll back, compare
variant() {
	name=$1
	shift
	note "$name: mkfs.ext4 $*"
	rm -f "$name.img"
	mkfs.ext4 -q -F -d src "$@" "$name.img" 96M >mkfs.out 2>&1 || { cat mkfs.out; fail "mkfs $name"; }
	# fuse2fs, the reference, shows ext3's nanoseconds as 0 (the kernel does not)
	case $name in ext4*) ext4_extras "$name.img" ;; esac
	expect_ok e2fsck -fn "$name.img"
	ext_manifest "$name.img" "$name.ext"
	digest=$(used_digest "$name.img")
	expect_ok "$BFS" migrate --dry-run "$name.img"
	contains out "Saved image:               /ext2_saved/image"
	expect_ok "$BFS" migrate --dry-run --json "$name.img"
	json_ok out
	[ "$(json_get out source.inodes)" -gt 1500 ] || fail "$name: plan counts $(json_get out source.inodes) inodes"
	[ "$(used_digest "$name.img")" = "$digest" ] || fail "$name: --dry-run changed the image"
	"$BFS" migrate -C 3 "$name.img" >out 2>err 3>progress || { cat err; fail "migrate $name"; }
	contains out "converted '$name.img' to bfs"
	# e2fsck -C style lines ("PASS DONE TOTAL DEVICE", cmd/progress.c), never
	# past the total, the last one complete
	awk '$1 != 1 || $2 > $3 { exit 1 }' progress || { tail -3 progress; fail "$name: bad progress line"; }
	tail -1 progress | grep -Eq "^1 ([0-9]+) \\1 $name.img\$" || { tail -3 progress; fail "$name: no progress"; }
	expect_ok "$BFS" fsck -n "$name.img"
	bfs_manifest "$name.img" "$name.bfs"
	diff "$name.ext" "$name.bfs" >diff.out || { head -40 diff.out; fail "$name: bfs differs from ext"; }
	"$BFS" debug -R "xattrs /tiny" "$name.img" >xattr.out 2>&1
	contains xattr.out "system.posix_acl_access (52 bytes) = 0x0200000001000600ffffffff020005009210000004000400ffffffff080004004d000000"
	"$BFS" debug -R "stat /small" "$name.img" >stat.out 2>&1
	case $name in ext4*)
		contains stat.out "+000000641 ns"
		"$BFS" debug -R "stat /dir/block" "$name.img" >stat.out 2>&1
		contains stat.out "mtime:       2000-01-01 00:00:00 UTC +123456789 ns"
		if [ "$name" != ext4-inline ]; then
			"$BFS" debug -R "extents /prealloc" "$name.img" >ext.out 2>&1
			contains ext.out "unwritten"
		fi ;;
	esac
	e2fsck -fn "$name.img" >/dev/null 2>&1 && fail "$name: still an ext filesystem after migrate"
	"$BFS" migrate --rollback -C 3 "$name.img" >out 2>err 3>progress || { cat err; fail "rollback $name"; }
	contains out "restored the ext filesystem on '$name.img'"
	tail -1 progress | grep -Eq "^2 ([0-9]+) \\1 $name.img\$" || { tail -3 progress; fail "$name: no rollback progress"; }
	expect_ok e2fsck -fn "$name.img"
	# every used block (metadata and data) as before: the same files, byte for byte
	[ "$(used_digest "$name.img")" = "$digest" ] || fail "$name: rollback did not restore every used block"
	rm -f "$name.img"
}

variant ext2-1k -t ext2 -b 1024 -I 128
variant ext3-4k -t ext3 -b 4096
variant ext4-1k-64bit -t ext4 -b 1024 -O 64bit,metadata_csum,huge_file
variant ext4-inline -t ext4 -b 4096 -O inline_data,^has_journal

note "refusals"
mkfs.ext4 -q -F -d src -b 4096 base.img 96M || fail mkfs
ext4_extras base.img
cp --sparse=always base.img r.img
fuse2fs -o ro "$PWD/r.img" mnt2 >/dev/null 2>&1 || fail fuse2fs
expect_rc 1 "$BFS" migrate r.img
contains err "unmount it first"
umount mnt2
debugfs -w -R "feature needs_recovery" r.img >/dev/null 2>&1
expect_rc 1 "$BFS" migrate r.img
contains err "journal needs recovery"
cp --sparse=always base.img r.img
debugfs -w -R "sif /tiny links_count 7" r.img >/dev/null 2>&1
expect_rc 1 "$BFS" migrate r.img
contains err "e2fsck -fn r.img' found problems"
cp --sparse=always base.img r.img
debugfs -w -R "sif /tiny flags 0x8" r.img >/dev/null 2>&1
expect_rc 1 "$BFS" migrate r.img
contains err "flags 0x8 that bfs cannot keep"
cp --sparse=always base.img r.img
debugfs -w -R "ea_set /tiny system.richacl x" r.img >/dev/null 2>&1
expect_rc 1 "$BFS" migrate r.img
contains err "the xattr 'system.richacl', which bfs cannot store"
mkfs.ext4 -q -F -O quota r.img 64M
expect_rc 1 "$BFS" migrate r.img
contains err "'quota'"
mkfs.ext4 -q -F -b 4096 -O bigalloc r.img 96M 2>/dev/null
expect_rc 1 "$BFS" migrate r.img
contains err "'bigalloc'"
rm -f r.img
"$BFS" format -q --size 64M r.img >/dev/null 2>&1 || fail "bfs format"
expect_rc 1 "$BFS" migrate r.img
contains err "holds no ext2, ext3 or ext4 filesystem"
expect_rc 1 "$BFS" migrate --rollback base.img
contains err "holds no bfs filesystem"

note "a nearly full source is refused, unchanged"
mkfs.ext4 -q -F -b 4096 -m 0 full.img 32M || fail mkfs
debugfs -w -R "write /dev/null x" full.img >/dev/null 2>&1
dd if=/dev/urandom of=fill bs=1M count=26 status=none
debugfs -w -R "write fill fill" full.img >/dev/null 2>&1
d=$(used_digest full.img)
expect_rc 1 "$BFS" migrate full.img
contains err "ext uses the last 64 KiB of the device"
# on a larger device the end is free, but the rest is not enough
truncate -s 40M full.img
expect_rc 1 "$BFS" migrate full.img
# refused by the plan, or out of space half way: either way before the commit
grep -q -e "not enough free space" -e "No space left on device" err || { cat err; fail "no ENOSPC"; }
contains err "the ext filesystem is unchanged"
[ "$(used_digest full.img)" = "$d" ] || fail "refused migrate changed the image"
expect_ok e2fsck -fn full.img

note "rollback after using bfs: new, deleted and rewritten files"
cp --sparse=always base.img c.img
d=$(used_digest c.img)
expect_ok "$BFS" migrate c.img
expect_ok "$BFS" mount c.img mnt
wait_mounted mnt
dd if=/dev/urandom of=mnt/new bs=1M count=4 status=none || fail "write on bfs"
rm -f mnt/dir/sub/big mnt/tiny || fail "rm on bfs"
echo changed >mnt/small || fail "overwrite on bfs"
unmount_wait umount mnt
expect_ok "$BFS" fsck -n c.img
expect_ok "$BFS" migrate --rollback c.img
expect_ok e2fsck -fn c.img
[ "$(used_digest c.img)" = "$d" ] || fail "rollback after use did not restore the source"

note "rollback refuses a changed saved image"
cp --sparse=always base.img c.img
expect_ok "$BFS" migrate c.img
"$BFS" debug -w -R "rm /ext2_saved/image" c.img >/dev/null 2>&1 || fail "debug rm"
expect_rc 1 "$BFS" migrate --rollback c.img
contains err "there is no /ext2_saved/image"
expect_ok "$BFS" fsck -n c.img

# a small source for the crash tests: fewer transactions, each state checked
mkdir small small/d
cp -a src/dir/block src/small src/fast-link src/fifo small/
ln small/small small/d/link
dd if=/dev/urandom of=small/d/data bs=1k count=700 status=none
mkfs.ext4 -q -F -d small -b 1024 crash.img 16M || fail "mkfs crash.img"
mv crash.img base.img

note "writes failing at every Nth write leave the source intact"
base_digest=$(used_digest base.img)
cp --sparse=always base.img f.img
BFS_MIGRATE_IOLOG=$PWD/full.log expect_ok "$BFS" migrate f.img
nr=$("$APPLY" full.log | head -1)
[ "$nr" -gt 10 ] || fail "only $nr log entries"
n=1 nfail=0 wstep=$(( nr / 24 + 1 ))
while [ $n -lt "$nr" ]; do
	nfail=$((nfail + 1))
	cp --sparse=always base.img f.img
	BFS_MIGRATE_FAIL_WRITES=$n "$BFS" migrate f.img >out 2>err
	rc=$?
	e2fsck -fn f.img >/dev/null 2>&1
	ext=$?
	if [ $ext -eq 0 ]; then
		[ "$(used_digest f.img)" = "$base_digest" ] || fail "write $n failed: ext content changed"
		[ $rc -ne 0 ] || fail "write $n failed but migrate said it converted"
	else
		# only a failure after the commit point may leave bfs, and then a sound one
		"$BFS" show-super f.img >/dev/null 2>&1 || fail "write $n failed: neither ext nor bfs"
	fi
	n=$((n + wstep))
done
echo "$nfail failing-write runs"


note "every flush point of the I/O log: ext intact, or bfs"
flushes=$("$APPLY" full.log | tail -n +2)
nf=$(echo "$flushes" | wc -l)
last=$(echo "$flushes" | tail -1)
# at most about 30 states: a sample of the conversion, every one of the commit
step=$(( nf / 24 + 1 ))
flushes=$(echo "$flushes" | awk -v s=$step -v n=$nf 'NR % s == 0 || NR > n - 6')
n_ext=0 n_bfs=0
for k in $flushes; do
	cp --sparse=always base.img s.img
	"$APPLY" full.log s.img "$k" || fail "replay $k"
	if e2fsck -fn s.img >/dev/null 2>&1; then
		[ "$(used_digest s.img)" = "$base_digest" ] || fail "state $k: ext content changed"
		n_ext=$((n_ext + 1))
	else
		expect_ok "$BFS" fsck -n s.img
		n_bfs=$((n_bfs + 1))
	fi
done
echo "$nr log entries, $nf flushes: $n_ext states checked as the source, $n_bfs as bfs"
[ $n_ext -gt 5 ] && [ $n_bfs -ge 1 ] || fail "the replay did not cover both sides"

"$BFS" fsck -n s.img >/dev/null 2>&1 || fail "the final state ($last) is not clean bfs"
# a torn write at each of the last entries (the superblock writes)
k=$((nr - 6))
while [ $k -lt "$nr" ]; do
	cp --sparse=always base.img s.img
	"$APPLY" full.log s.img "$k" 2048 || fail "torn replay $k"
	if e2fsck -fn s.img >/dev/null 2>&1; then
		[ "$(used_digest s.img)" = "$base_digest" ] || fail "torn $k: ext content changed"
	else
		"$BFS" show-super s.img >/dev/null 2>&1 || fail "torn $k: neither ext nor bfs"
	fi
	k=$((k + 1))
done
echo "ok"
