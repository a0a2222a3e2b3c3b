# fsck of a mounted bfs, as e2fsck: -y and -p refuse with status 8 and say
# where it is mounted (also in --json); an image a mount holds is refused
# with -n too (its lock); fsck(8) -M skips a mounted entry, without -M the
# 8 comes through; after the unmount the check runs.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount-lib.sh"
mount_prereqs
export BFS_NO_PROGRESS=1

expect_ok "$BFS" format -q --size 64M img
expect_ok "$BFS" mount img mnt
wait_mounted mnt
for mode in -y -p; do
	expect_rc 8 "$BFS" fsck $mode img
	contains err "bfs fsck: img: in use (mounted on $PWD/mnt); not checking it"
done
expect_rc 8 "$BFS" fsck -n img
contains err "img: in use"
expect_rc 8 "$BFS" fsck -y --json img
[ "$(json_get out exit_code)" = 8 ] || fail "json: exit code of a mounted device"
json_get out error | grep -q "mounted on $PWD/mnt" || fail "json: error $(cat out)"

if command -v fsck >/dev/null && fsck --version 2>/dev/null | grep -q util-linux; then
	mkdir -p sbin
	ln -sf "$BFS" sbin/fsck.bcowfs
	printf '%s\t%s\tbcowfs\tdefaults\t0 2\n' "$PWD/img" "$PWD/mnt" >fstab
	FSTAB_FILE="$PWD/fstab" PATH="$PWD/sbin:$PATH" expect_ok fsck -A -M -a -T
	lacks err "in use"
	FSTAB_FILE="$PWD/fstab" PATH="$PWD/sbin:$PATH" expect_rc 8 fsck -A -a -T
	contains err "in use (mounted on $PWD/mnt)"
fi

unmount_wait umount mnt
expect_ok "$BFS" fsck -n img
contains out "img: clean, 0 problems found, 0 fixed"
echo ok
