# Damaged fixture images (fixtures/f_*) that every opener must read the way
# fsck repairs them, not only fsck: each is mounted as it is (read-only,
# then read-write) and its tree compared with the same image after
# `bfs fsck -y`.  A fix made in fsck alone shows up here as missing files.
#   f_sb_primary_forged     the backups outvote a forged primary (libcore/super/vote.c)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount-lib.sh"

mount_prereqs
command -v zstd >/dev/null || skip "zstd not installed"

# mount_matches_fsck FIXTURE: the image mounted as it is holds what fsck -y makes of it
mount_matches_fsck() {
	zstd -q -d -f "$REPO/fixtures/$1/image.zst" -o as-is.img || fail "$1: cannot decompress"
	cp as-is.img repaired.img
	expect_rc 1 "$BFS" fsck -y repaired.img
	expect_ok "$BFS" mount -o ro repaired.img mnt2
	wait_mounted mnt2
	[ -s mnt2/a/readme ] || fail "$1: the repaired image has no /a/readme"
	expect_ok "$BFS" mount -o ro as-is.img mnt
	wait_mounted mnt
	compare_trees mnt mnt2
	unmount_wait umount mnt
	# read-write: the open completes the repair; then fsck finds nothing
	expect_ok "$BFS" mount as-is.img mnt
	wait_mounted mnt
	compare_trees mnt mnt2
	echo new > mnt/a/new || fail "$1: cannot write"
	unmount_wait umount mnt
	unmount_wait umount mnt2
	expect_ok "$BFS" fsck -n as-is.img
}

note "forged primary superblock: mount uses the agreeing backups"
zstd -q -d -f "$REPO/fixtures/f_sb_primary_forged/image.zst" -o forged.img
expect_ok "$BFS" mount -o ro forged.img mnt
contains err "primary superblock is invalid (the primary (sequence 6) differs from every backup"
contains err "using backup copy 1"
wait_mounted mnt
unmount_wait umount mnt
mount_matches_fsck f_sb_primary_forged

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
echo ok
