# bfs format and show-super on images of several sizes, and their refusals.
. "$(dirname "$0")/lib.sh"

for size in 8M 16M 100M 1G 1T; do
	note "size $size"
	rm -f img
	expect_ok "$BFS" format -L "img-$size" --size "$size" img
	contains out "Creating bfs filesystem on img"
	expect_ok "$BFS" show-super img
	contains out "Label:                     img-$size"
	contains out "[match]"
	contains out "(primary)"
	contains out "State:                     clean"
	expect_ok "$BFS" show-super --json img
	json_ok out
	[ "$(json_get out label)" = "img-$size" ] || fail "json label"
	[ "$(json_get out primary_valid)" = "true" ] || fail "json primary_valid"
	[ "$(json_get out checksum_valid)" = "true" ] || fail "json checksum_valid"
	[ "$(json_get out device_size)" = "$(stat -c %s img)" ] || fail "json device_size"
	expect_ok "$BFS" show-super --all img
	[ "$(grep -c 'Valid:  *yes' out)" -eq 3 ] || fail "not every copy valid"
	expect_ok "$BFS" fsck -n img
	contains out "clean"
done

note "format writes metadata only: a 1 TiB image stays sparse"
[ "$(allocated img)" -lt $((8 * 1024 * 1024)) ] || fail "1T image not sparse: $(allocated img) bytes"

note "options"
rm -f img
expect_ok "$BFS" format --size 2G --block-size 8K --bucket-size 1M --btree-node-size 512K \
	--compression zstd:5 --checksum none --uuid 0b5c3f2a-5d1e-4c8a-9f3b-7e6d5c4b3a21 \
	--journal-buckets 20 -L data img
expect_ok "$BFS" show-super --json img
[ "$(json_get out block_size)" = 8192 ] || fail "block size"
[ "$(json_get out bucket_size)" = 1048576 ] || fail "bucket size"
[ "$(json_get out btree_node_size)" = 524288 ] || fail "node size"
[ "$(json_get out compression)" = zstd ] || fail "compression"
[ "$(json_get out compression_level)" = 5 ] || fail "compression level"
[ "$(json_get out checksum_type)" = none ] || fail "checksum type"
[ "$(json_get out uuid)" = 0b5c3f2a-5d1e-4c8a-9f3b-7e6d5c4b3a21 ] || fail "uuid"
[ "$(json_get out journal.nbuckets)" = 20 ] || fail "journal buckets"
[ "$(json_get out features.incompat)" = 0x0000000000000001 ] || fail "zstd feature"

note "existing bfs is refused without --force"
expect_rc 1 "$BFS" format img
contains err "contains a bfs filesystem"
expect_ok "$BFS" format -q --force img
[ ! -s out ] || fail "-q printed something"

note "dry run writes nothing"
expect_ok "$BFS" format -q --size 64M small.img
sum=$(md5sum < small.img)
expect_ok "$BFS" format --force --dry-run -L other small.img
contains out "Would create"
contains out "nothing was written"
[ "$(md5sum < small.img)" = "$sum" ] || fail "--dry-run changed the image"
expect_ok "$BFS" format --dry-run --size 1G not-there.img
[ ! -e not-there.img ] || fail "--dry-run created a file"

note "impossible combinations and bad values"
expect_rc 1 "$BFS" format --force --bucket-size 64K --btree-node-size 256K img
contains err "larger than the bucket size"
expect_rc 1 "$BFS" format --force --block-size 3000 img
contains err "power of two"
expect_rc 2 "$BFS" format --force --block-size 4Q img
contains err "invalid block size"
expect_rc 2 "$BFS" format --force --compression lz4 img
contains err "unknown compression"
expect_rc 2 "$BFS" format --force --compression zstd:99 img
contains err "invalid zstd level"
expect_rc 2 "$BFS" format --force --checksum crc32 img
expect_rc 2 "$BFS" format --force --uuid nope img
contains err "invalid uuid"
expect_rc 2 "$BFS" format --force -L 01234567890123456789012345678901234567890123456789012345678901234 img
contains err "longer than 64"
expect_rc 1 "$BFS" format --size 4M tiny.img
contains err "'tiny.img' is too small: 4 MiB, bfs needs at least 8 MiB"
[ ! -e tiny.img ] || fail "a refused --size left tiny.img behind"
expect_rc 1 "$BFS" format --size 64M --bucket-size 3K odd.img
[ ! -e odd.img ] || fail "a refused --size left odd.img behind"
truncate -s 4M small.img
expect_rc 1 "$BFS" format small.img
contains err "'small.img' is too small: 4 MiB"
expect_rc 1 "$BFS" format missing.img
contains err "does not exist"
mkdir adir
expect_rc 1 "$BFS" format adir
contains err "'adir' is a directory"
expect_rc 1 "$BFS" format --force --size 16M img
contains err "larger than --size"
expect_rc 2 "$BFS" format --force --journal-buckets 1K img
contains err "invalid journal bucket count"
# a dry run writes nothing: it prints the layout and notes what a real run refuses
expect_ok "$BFS" format --dry-run --size 1T img
contains err "a real run would refuse: 'img' contains a bfs filesystem"
contains out "Would create"
expect_ok "$BFS" format --force --dry-run --size 1T img
contains out "(1 TiB)"
expect_ok "$BFS" format --dry-run --size 64G new.img
contains out "(64 GiB)"
[ ! -e new.img ] || fail "dry run created new.img"

note "an ext4 image is refused, then overwritten with --force"
if command -v mkfs.ext4 >/dev/null; then
	rm -f ext.img
	truncate -s 64M ext.img
	mkfs.ext4 -q -F -L oldfs ext.img || fail "mkfs.ext4"
	expect_rc 1 "$BFS" format ext.img
	contains err "contains an ext4 filesystem labelled 'oldfs'"
	expect_rc 1 "$BFS" format --size 128M ext.img
	[ "$(stat -c %s ext.img)" -eq $((64 << 20)) ] || fail "a refused format grew the image"
	expect_ok "$BFS" format -N ext.img
	contains err "a real run would refuse"
	blkid -p ext.img 2>/dev/null | grep -q ext4 || fail "a dry run touched the ext4 image"
	expect_ok "$BFS" format --force ext.img
	expect_ok "$BFS" show-super ext.img
	if command -v blkid >/dev/null; then
		! blkid -p ext.img 2>/dev/null | grep -q ext4 || fail "ext4 signature survived"
	fi
else
	echo "mkfs.ext4 missing: ext4 refusal not tested"
fi

note "a partition table is refused"
if command -v sfdisk >/dev/null; then
	rm -f part.img
	truncate -s 64M part.img
	echo 'label: gpt' | sfdisk -q part.img >/dev/null 2>&1 || fail "sfdisk"
	expect_rc 1 "$BFS" format part.img
	contains err "partition table"
fi

note "a mounted device is refused even with --force"
truncate -s 64M m.img
mkdir mnt
if [ "$(id -u)" = 0 ] && command -v mkfs.ext4 >/dev/null && mkfs.ext4 -q m.img &&
   mount -o loop m.img mnt 2>/dev/null; then
	loop=$(findmnt -n -o SOURCE mnt)
	expect_rc 1 "$BFS" format --force m.img
	contains err "is attached to $loop"
	expect_rc 1 "$BFS" format --force "$loop"
	contains err "is mounted on"
	umount mnt
	blkid -p m.img | grep -q ext4 || fail "the mounted ext4 was damaged"
else
	echo "cannot loop-mount here: mounted-device refusal not tested"
fi

note "an image held by another bfs process (flock) is refused even with --force"
if command -v flock >/dev/null; then
	flock img sleep 3 &
	sleep 0.5
	expect_rc 1 "$BFS" format --force img
	contains err "in use"
	wait
fi

note "a read-only device (losetup -r) is refused before anything is written"
if [ "$(id -u)" = 0 ] && command -v losetup >/dev/null && [ -e /dev/loop-control ] &&
	truncate -s 64M ro.img && loop=$(losetup -r -f --show ro.img 2>/dev/null); then
	"$BFS" format --force "$loop" >out 2>err
	rc=$?
	"$BFS" set-option "$loop" label=x >>out 2>>err
	rc2=$?
	losetup -d "$loop"
	[ $rc -eq 1 ] || { cat err; fail "format of a read-only device exited $rc"; }
	[ $rc2 -eq 1 ] || { cat err; fail "set-option on a read-only device exited $rc2"; }
	contains err "read-only"
	lacks err "write error"
	lacks out "Creating"
else
	echo "no loop devices: read-only device not tested"
fi
echo ok
