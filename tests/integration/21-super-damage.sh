# Damaged superblocks: fallback to backups, clear errors, fsck repair.
. "$(dirname "$0")/lib.sh"

expect_ok "$BFS" format -q --size 256M img

note "not bfs at all"
truncate -s 64M zero.img
expect_rc 1 "$BFS" show-super zero.img
contains err "is not a bfs filesystem"
expect_rc 1 "$BFS" show-super no-such.img
contains err "cannot open"

note "corrupted primary: the backup is used and tools say so"
cp img bad.img
printf 'garbage!' | dd of=bad.img bs=1 seek=$((4096 + 64)) conv=notrunc status=none
expect_ok "$BFS" show-super bad.img
contains err "primary superblock is invalid (bad checksum"
contains err "showing backup copy"
contains out "(backup copy 1: primary invalid)"
expect_ok "$BFS" show-super --json bad.img
json_ok out
[ "$(json_get out primary_valid)" = "false" ] || fail "json primary_valid"
[ "$(json_get out copy_offset)" = 524288 ] || fail "json copy_offset"

note "fsck -n reports and changes nothing; -y repairs; then clean"
sum=$(md5sum < bad.img)
expect_rc 4 "$BFS" fsck -n bad.img
contains out "primary superblock is invalid"
[ "$(md5sum < bad.img)" = "$sum" ] || fail "fsck -n wrote to the image"
expect_rc 1 "$BFS" fsck -y bad.img
expect_ok "$BFS" fsck -n bad.img
contains out "clean"
expect_ok "$BFS" show-super bad.img
lacks err "warning"

note "preen fixes a damaged backup"
cp img pre.img
dd if=/dev/zero of=pre.img bs=4096 seek=128 count=1 conv=notrunc status=none
expect_rc 1 "$BFS" fsck -p pre.img
contains out "pre.img: backup superblock is invalid"
expect_ok "$BFS" fsck -p pre.img

note "zeroed primary and middle copy: the copy at the end still works"
cp img end.img
dd if=/dev/zero of=end.img bs=4096 seek=1 count=1 conv=notrunc status=none
dd if=/dev/zero of=end.img bs=4096 seek=128 count=1 conv=notrunc status=none
expect_ok "$BFS" show-super end.img
contains err "showing backup copy 2"

note "every copy damaged"
cp end.img dead.img
dd if=/dev/zero of=dead.img bs=65536 seek=$((256 * 16 - 1)) count=1 conv=notrunc status=none
expect_rc 1 "$BFS" show-super dead.img
contains err "bad magic"
expect_rc 8 "$BFS" fsck -n dead.img
contains out "dead.img: cannot find a valid superblock"
expect_rc 8 "$BFS" fsck -n zero.img
contains out "zero.img: cannot find a valid superblock"

note "truncated image"
cp img trunc.img
truncate -s 128M trunc.img
expect_rc 1 "$BFS" show-super trunc.img
contains err "truncated image"
expect_rc 4 "$BFS" fsck -n trunc.img
contains out "truncated image"

note "every copy corrupt (bfs magic, bad checksums): damage left unfixed"
cp img csum.img
for off in 4096 524288 $((256 * 1048576 - 65536)); do
	printf X | dd of=csum.img bs=1 seek=$((off + 48)) conv=notrunc status=none
done
expect_rc 4 "$BFS" fsck -n csum.img
contains out "csum.img: cannot find a valid superblock: bad checksum"

note "interactive fsck without a terminal checks only, as -n"
cp img tty.img
printf 'garbage!' | dd of=tty.img bs=1 seek=$((4096 + 64)) conv=notrunc status=none
sum=$(md5sum < tty.img)
expect_rc 4 "$BFS" fsck tty.img </dev/null
contains out "checking only, as with -n"
[ "$(md5sum < tty.img)" = "$sum" ] || fail "fsck without a terminal wrote to the image"
echo ok
