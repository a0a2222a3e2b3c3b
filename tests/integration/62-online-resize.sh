# bfs resize on a mounted filesystem grows it online, through the mount's
# control channel (doc/control.md): by mount point or by device, to the
# device's new size or to SIZE (the mount extends an image file); df shows
# it at once, the new space takes data, fsck is clean after, the end backup
# superblock moved.  A shrink, a dry run and a caller other than root are
# refused while mounted.  A block device (fuseblk) grows the same way.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount-lib.sh"

mount_prereqs
df_bytes() { df -B1 --output=size "$1" | tail -1 | tr -d ' '; }

expect_ok "$BFS" format -q -L online --size 64M img
expect_ok "$BFS" mount img mnt
wait_mounted mnt
head -c 3000000 /dev/urandom > before.dat
cp before.dat mnt/before || fail "write before the grow"
size0=$(df_bytes mnt)

note "the file was extended by someone else: grow to it, by mount point"
truncate -s 160M img
expect_ok "$BFS" resize mnt
contains out "from 64 MiB to 160 MiB"
size1=$(df_bytes mnt)
[ "$size1" -gt $((size0 + 80 * 1024 * 1024)) ] || fail "df shows $size1 bytes after the grow (was $size0)"

note "grow to SIZE, by device, while a file is being written: the mount extends the image file"
head -c 30000000 /dev/urandom > during.dat
dd if=during.dat of=mnt/during bs=64k status=none conv=fsync &
writer=$!
expect_ok "$BFS" resize img 256M
wait $writer || fail "the write running during the grow failed"
cmp -s during.dat mnt/during || fail "the file written during the grow differs"
contains out "to 256 MiB"
[ "$(stat -c %s img)" -eq $((256 * 1024 * 1024)) ] || fail "image not extended"
expect_ok "$BFS" resize img 256M
contains out "nothing to do"

note "refused while mounted: shrink, dry run, not root"
expect_rc 1 "$BFS" resize img 128M
contains err "cannot shrink"
expect_rc 1 "$BFS" resize --dry-run mnt
contains err "unmounted filesystem only"
if command -v setpriv >/dev/null; then
	expect_rc 1 setpriv --reuid=65534 --regid=65534 --clear-groups "$BFS" resize mnt 300M
	contains err "needs root"
fi
[ "$(stat -c %s img)" -eq $((256 * 1024 * 1024)) ] || fail "a refused resize changed the image"

note "the new space takes data (more than the old size)"
head -c 70000000 /dev/urandom > big.dat
cp big.dat mnt/big || fail "writing 70 MB into the grown filesystem"
sync mnt/big
umount mnt
wait_unlocked img
expect_ok "$BFS" fsck -n img
contains out "clean"
expect_ok "$BFS" show-super --json --all img
cp out j
[ "$(json_get j device_size)" -eq $((256 * 1024 * 1024)) ] || fail "device_size"
[ "$(json_get j copies.2.offset)" -eq $((256 * 1024 * 1024 - 65536)) ] || fail "end copy not moved"
for i in 0 1 2; do [ "$(json_get j copy_status.$i.valid)" = true ] || fail "copy $i invalid"; done
expect_ok "$BFS" mount -o ro img mnt
wait_mounted mnt
cmp -s before.dat mnt/before || fail "data written before the grow differs"
cmp -s during.dat mnt/during || fail "data written during the grow differs"
cmp -s big.dat mnt/big || fail "data written into the new space differs"
umount mnt
wait_unlocked img

if command -v losetup >/dev/null && [ -e /dev/loop-control ]; then
	note "a block device: grown under the mount, then 'bfs resize DEVICE'"
	rm -f big.dat
	truncate -s 64M blk.img
	LOOP=$(losetup -f --show blk.img) || skip "cannot attach a loop device"
	trap 'mount_cleanup; losetup -d "$LOOP" 2>/dev/null' EXIT
	expect_ok "$BFS" format -q "$LOOP"
	expect_ok "$BFS" mount "$LOOP" mnt
	truncate -s 128M blk.img
	losetup -c "$LOOP" || fail "losetup -c"
	expect_ok "$BFS" resize "$LOOP"
	contains out "to 128 MiB"
	expect_rc 1 "$BFS" resize "$LOOP" 1G
	contains err "holds only"
	head -c 80000000 /dev/urandom > mnt/fill || fail "writing into the grown device"
	umount mnt
	expect_ok "$BFS" fsck -n "$LOOP"
	contains out "clean"
	losetup -d "$LOOP"
else
	echo "no loop devices: the block device case was not run"
fi
echo ok
