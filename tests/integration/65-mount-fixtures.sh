# Damaged fixture images (fixtures/f_*) that every opener must read the way
# fsck repairs them, not only fsck: each is mounted as it is (read-only,
# then read-write) and its tree compared with the same image after
# `bfs fsck -y`.  A fix made in fsck alone shows up here as missing files.
#   f_sb_primary_forged     the backups outvote a forged primary (libcore/super/vote.c)
#   f_journal_after_clean   a journal that continues after a clean shutdown is
#                           replayed, not erased (libcore/journal/read.c)
#   f_fs_data_read_error    a file whose data reads fail (BFS_FAULT_READ, its
#                           env file): EIO for it, the rest is served; the
#                           same for a btree leaf a directory's entries are in
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount-lib.sh"

mount_prereqs
command -v zstd >/dev/null || skip "zstd not installed"

unpack() { zstd -q -d -f "$REPO/fixtures/$1/image.zst" -o "$2" || fail "$1: cannot decompress"; }

# mount_matches_fsck NAME FILE: the image as-is.img mounted as it is holds
# what fsck -y makes of it, FILE among it
mount_matches_fsck() {
	cp as-is.img repaired.img
	expect_rc 1 "$BFS" fsck -y repaired.img
	expect_ok "$BFS" mount -o ro repaired.img mnt2
	wait_mounted mnt2
	[ -s "mnt2/$2" ] || fail "$1: the repaired image has no $2"
	expect_ok "$BFS" mount -o ro as-is.img mnt
	wait_mounted mnt
	compare_trees mnt mnt2
	unmount_wait umount mnt
	# read-write: the open completes the repair; then fsck finds nothing
	expect_ok "$BFS" mount as-is.img mnt
	wait_mounted mnt
	compare_trees mnt mnt2
	echo new > mnt/new-file || fail "$1: cannot write"
	unmount_wait umount mnt
	unmount_wait umount mnt2
	expect_ok "$BFS" fsck -n as-is.img
}

note "forged primary superblock: mount uses the agreeing backups"
unpack f_sb_primary_forged forged.img
expect_ok "$BFS" mount -o ro forged.img mnt
contains err "primary superblock is invalid (the primary (sequence 6) differs from every backup"
contains err "using backup copy 1"
wait_mounted mnt
unmount_wait umount mnt
cp forged.img as-is.img
mount_matches_fsck f_sb_primary_forged a/readme

note "show-super, dump-btree and debug make the same choice"
expect_ok "$BFS" show-super forged.img
contains out "(backup copy 1: primary outvoted by the backups)"
contains err "showing backup copy 1"
expect_ok "$BFS" show-super --copy 0 forged.img
contains out "Name hash seed:            0x0000000000003039"
expect_ok "$BFS" dump-btree -b dirents forged.img
contains out "dirent 'readme'"
expect_ok "$BFS" debug -R "ls /a" forged.img
contains out "readme"
note "a journal that continues after a clean shutdown: the mount replays it"
unpack f_journal_after_clean jac.img
expect_ok "$BFS" mount -o ro jac.img mnt
contains err "continues the log after it"
wait_mounted mnt
unmount_wait umount mnt
expect_ok "$BFS" mount jac.img mnt
wait_mounted mnt
unmount_wait umount mnt
expect_ok "$BFS" fsck -n jac.img
contains out "clean, 0 problems found"

note "a clean flag forged after writes: no file is lost"
rm -f as-is.img
stale_clean_image as-is.img 5 40
# (file000 is the first file the seed-5 workload makes: the check needs one)
mount_matches_fsck "forged clean flag" d1/d2/file000
expect_ok "$TOOLS/bfs-fsimage" manifest as-is.img
grep -v ' /new-file$' out > got.manifest
cmp -s got.manifest want.manifest || { diff want.manifest got.manifest | head; fail "files differ"; }
note "unreadable file data: EIO for that file, the rest is served"
unpack f_fs_data_read_error dre.img
expect_ok "$BFS" mount -o ro dre.img mnt
wait_mounted mnt
cp mnt/a/readme readme.want || fail "cannot read /a/readme without the fault"
cat mnt/a/b/script > /dev/null || fail "cannot read /a/b/script without the fault"
unmount_wait umount mnt
# shellcheck disable=SC2046 # VAR=value words
expect_ok env $(cat "$REPO/fixtures/f_fs_data_read_error/env") "$BFS" mount -o ro dre.img mnt
wait_mounted mnt
cat mnt/a/b/script > got 2> cat.err && fail "the unreadable file was read"
contains cat.err "Input/output error"
cmp -s mnt/a/readme readme.want || fail "/a/readme differs"
[ "$(ls mnt/a/b)" = script ] || fail "the directory of the unreadable file lists wrong"
[ "$(stat -c %s mnt/a/b/script)" -gt 0 ] || fail "no size for the unreadable file"
cat mnt/a/b/script > /dev/null 2>&1 && fail "the unreadable file read the second time"
cmp -s mnt/a/readme readme.want || fail "/a/readme differs after the error"
unmount_wait umount mnt

note "an unreadable btree leaf: EIO for what it holds, the rest is served"
expect_ok "$BFS" format -q --size 64M leaf.img
expect_ok "$BFS" mount leaf.img mnt
wait_mounted mnt
mkdir mnt/d
i=0
while [ $i -lt 1500 ]; do echo $i > mnt/d/file_with_a_long_name_$i; i=$((i + 1)); done
echo kept > mnt/kept
unmount_wait umount mnt
expect_ok "$BFS" dump-btree --nodes -b dirents leaf.img
# the last leaf: it holds entries of /d, not the root's
leaf=$(awk '/node level 0/ { o = $0 } END { sub(/.* offset /, "", o); sub(/ .*/, "", o); print o }' out)
[ -n "$leaf" ] && [ "$leaf" -gt 0 ] || fail "no dirents leaf found"
expect_ok env BFS_FAULT_READ=$((leaf + 512)) "$BFS" mount -o ro leaf.img mnt
wait_mounted mnt
[ "$(cat mnt/kept)" = kept ] || fail "/kept unreadable beside the bad leaf"
ls mnt/d > /dev/null 2> ls.err && fail "listing /d read the unreadable leaf"
contains ls.err "Input/output error"
[ "$(cat mnt/kept)" = kept ] || fail "/kept unreadable after the error"
unmount_wait umount mnt
expect_rc 4 env BFS_FAULT_READ=$((leaf + 512)) "$BFS" fsck -n leaf.img
contains out "btree node cannot be read (I/O error)"
echo ok
