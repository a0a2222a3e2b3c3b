# A block device is mounted as fuseblk: umount(8) returns only once the
# filesystem is closed and the device released, so an fsck or a mount
# right after it works (with image files it is the flock of the image
# that says so; see bfs-mount(8)).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount-lib.sh"

mount_prereqs
command -v losetup >/dev/null && [ -e /dev/loop-control ] || skip "no loop devices"

LOOP=
blk_cleanup() {
	mount_cleanup
	[ -z "$LOOP" ] || losetup -d "$LOOP" 2>/dev/null
}
trap blk_cleanup EXIT

truncate -s 512M img
LOOP=$(losetup -f --show img) || skip "cannot attach a loop device"
expect_ok "$BFS" format -q "$LOOP"

blk_mounted() { grep -q "^$LOOP $PWD/mnt fuseblk.bcowfs " /proc/mounts; }

for round in 1 2 3; do
	note "round $round: mount, write, umount, then at once fsck and mount again"
	expect_ok "$BFS" mount "$LOOP" mnt
	blk_mounted || fail "not listed as $LOOP ... fuseblk.bcowfs: $(grep "$PWD/mnt" /proc/mounts)"
	expect_fail "$BFS" format -f "$LOOP"
	head -c 5000000 /dev/urandom > "src.$round"
	cp "src.$round" "mnt/f$round" || fail "write to the mount"
	umount mnt || fail "umount failed"
	expect_ok "$BFS" fsck -n "$LOOP"
	expect_ok "$BFS" mount "$LOOP" mnt
	cmp "src.$round" "mnt/f$round" || fail "round $round: data differs after remount"
	umount mnt || fail "umount failed"
done

note "SIGTERM: the process exits with the filesystem closed and the device free"
"$BFS" mount -f "$LOOP" mnt 2>mount.err &
pid=$!
i=0
until blk_mounted; do sleep 0.1; i=$((i + 1)); [ $i -lt 200 ] || fail "not mounted"; done
echo after-term > mnt/t
kill -TERM "$pid"
wait "$pid" || fail "the mount process exited non-zero after SIGTERM: $(cat mount.err)"
! blk_mounted || fail "still mounted after SIGTERM"
expect_ok "$BFS" fsck -n "$LOOP"
expect_ok "$BFS" show-super "$LOOP"
contains out "State:                     clean"

note "read-only: the kernel holds the device all the same"
expect_ok "$BFS" mount -o ro "$LOOP" mnt
[ "$(cat mnt/t)" = after-term ] || fail "ro mount lost data"
expect_fail "$BFS" format -f "$LOOP"
umount mnt || fail "umount failed"
expect_ok "$BFS" fsck -n "$LOOP"
echo "block device mount tests passed"
