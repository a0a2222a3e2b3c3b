# bfs resize: offline grow (to the device size or SIZE) and shrink, fsck clean after,
# the end backup superblock moves; refusals with the amount that does not fit.
. "$(dirname "$0")/lib.sh"

expect_ok "$BFS" format -q -L rs --size 64M img
head -c 2000000 /dev/urandom > data
expect_ok "$BFS" debug -w -R "write data /data" img

note "grow to SIZE: the image file grows, the end copy moves"
expect_ok "$BFS" resize img 256M
contains out "Resizing 'img' from 64 MiB"
contains out "to 256 MiB"
[ "$(stat -c %s img)" -eq $((256 * 1024 * 1024)) ] || fail "image not extended"
expect_ok "$BFS" show-super --json --all img
cp out j
[ "$(json_get j device_size)" -eq $((256 * 1024 * 1024)) ] || fail "device_size"
[ "$(json_get j copies.2.offset)" -eq $((256 * 1024 * 1024 - 65536)) ] || fail "end copy not moved"
for i in 0 1 2; do [ "$(json_get j copy_status.$i.valid)" = true ] || fail "copy $i invalid"; done
# the old end copy (64 MiB - 64 KiB) is cleared: it is bucket space now
[ "$(od -An -tx1 -j $((64 * 1024 * 1024 - 65536)) -N 8 img | tr -d ' ')" = 0000000000000000 ] ||
	fail "old end superblock copy left behind"
expect_ok "$BFS" fsck -n img
contains out "clean"
expect_ok "$BFS" debug -R "dump /data data.out" img
cmp -s data data.out || fail "data changed by the grow"

note "grow to the device size (the file was extended by someone else)"
truncate -s 300M img
expect_ok "$BFS" resize img
contains out "to 300 MiB"
expect_ok "$BFS" resize img
contains out "nothing to do"
expect_ok "$BFS" fsck -n img
contains out "clean"

note "new space is used: fill beyond the old end"
head -c 20000000 /dev/urandom > big
expect_ok "$BFS" debug -w -R "write big /big" img
expect_ok "$BFS" fsck -n img
contains out "clean"

note "shrink: refused, with the amounts, when the data beyond the new end does not fit"
expect_rc 1 "$BFS" resize --dry-run img 24M
contains err "cannot shrink 'img' to 24 MiB"
contains err "more is needed"
expect_rc 1 "$BFS" resize img 24M
contains err "cannot shrink 'img' to 24 MiB"
contains err "of file data and btree nodes lies beyond the new end and does not fit in the"
contains err "more is needed"
lacks out "Resizing"
[ "$(stat -c %s img)" -eq $((300 * 1024 * 1024)) ] || fail "a refused shrink cut the image"
expect_ok "$BFS" fsck -n img
contains out "clean"

note "shrink: the file data beyond the new end is moved below it, the image file is cut"
expect_ok "$BFS" resize --dry-run img 64M
contains out "Would move"
contains out "dry run"
[ "$(stat -c %s img)" -eq $((300 * 1024 * 1024)) ] || fail "--dry-run changed the size"
expect_ok "$BFS" resize img 64M
contains out "Moved "
contains out "to 64 MiB"
[ "$(stat -c %s img)" -eq $((64 * 1024 * 1024)) ] || fail "image not cut"
expect_ok "$BFS" show-super --all img
[ "$(grep -c 'Valid:  *yes' out)" -eq 3 ] || fail "not every copy valid after the shrink"
expect_ok "$BFS" fsck -n img
contains out "clean"
lacks err "outside the device"
expect_ok "$BFS" debug -R "dump /big big.out" img
cmp -s big big.out || fail "data changed by the shrink"
expect_ok "$BFS" debug -R "dump /data data.out" img
cmp -s data data.out || fail "data changed by the shrink"

note "shrink with free buckets only beyond the end (alloc keys of deleted data dropped)"
expect_ok "$BFS" debug -w -R "rm /big" img
expect_ok "$BFS" resize img 300M
head -c 3000000 /dev/urandom > top
expect_ok "$BFS" debug -w -R "write top /top" img
expect_ok "$BFS" debug -w -R "rm /top" img
expect_ok "$BFS" resize img 64M
lacks out "Moved"
expect_ok "$BFS" fsck -n img
contains out "clean"
lacks err "outside the device"
expect_ok "$BFS" show-super --json img
nb=$(json_get out nbuckets)
expect_ok "$BFS" dump-btree --json -b alloc img
python3 -c '
import json, sys
keys = [i for i in json.load(open("out"))["btrees"][0]["items"] if i["type"] == "key"]
assert keys, "no alloc keys at all"
beyond = [k["pos"]["inode"] for k in keys if k["pos"]["inode"] >= int(sys.argv[1])]
assert not beyond, beyond
' "$nb" || fail "alloc keys beyond the end left"

note "refusals"
expect_rc 2 "$BFS" resize
expect_rc 2 "$BFS" resize img 10Q
contains err "invalid size"
expect_rc 1 "$BFS" resize img 4M
contains err "minimum size"
# the journal ring stays where it is: a cut that leaves too little after it names the smallest size
expect_ok "$BFS" format -q --size 64M --bucket-size 1M big-buckets.img
expect_rc 1 "$BFS" resize big-buckets.img 12M
contains err "the journal ring does not move): the smallest size is"
least=$(sed -n 's/.*the smallest size is \([0-9]*\) MiB.*/\1/p' err)
expect_rc 1 "$BFS" resize --dry-run big-buckets.img "$((least - 1))M"
expect_ok "$BFS" resize big-buckets.img "${least}M"
expect_ok "$BFS" fsck -n big-buckets.img
contains out "clean"
truncate -s 16M zero.img
expect_rc 1 "$BFS" resize zero.img
contains err "not a bfs filesystem"
cp img dirty.img
expect_ok "$BFS" debug -w -R "set-super flags 0" dirty.img
expect_rc 1 "$BFS" resize dirty.img 128M
contains err "not closed cleanly"
[ "$(stat -c %s dirty.img)" -eq $((64 * 1024 * 1024)) ] || fail "a refused grow extended the image"
flock img sleep 2 &
holder=$!
sleep 0.5
expect_rc 1 "$BFS" resize img 128M
contains err "in use"
wait $holder

# a block device grows under the filesystem (a partition or volume made larger)
if [ "$(id -u)" = 0 ] && command -v losetup >/dev/null && [ -e /dev/loop-control ] &&
	"$BFS" format -q -f --size 32M blk.img && loop=$(losetup -f --show blk.img 2>/dev/null); then
	note "block device: grow to the device size after it grew, and refuse a size beyond it"
	truncate -s 96M blk.img
	losetup -c "$loop"
	"$BFS" resize "$loop" 200M >out 2>err
	rc1=$?
	"$BFS" resize "$loop" >>out 2>>err
	rc2=$?
	"$BFS" show-super --json "$loop" >j 2>>err
	"$BFS" fsck -n "$loop" >>out 2>>err
	rc3=$?
	losetup -d "$loop"
	[ $rc1 -eq 1 ] || { cat out err; fail "resize beyond the device exited $rc1"; }
	contains err "holds only 96 MiB"
	[ $rc2 -eq 0 ] || { cat out err; fail "resize of the grown device exited $rc2"; }
	contains out "to 96 MiB"
	[ "$(json_get j device_size)" -eq $((96 * 1024 * 1024)) ] || fail "block device not grown"
	[ $rc3 -eq 0 ] || { cat out err; fail "fsck after growing the block device: $rc3"; }
	[ "$(stat -c %s blk.img)" -eq $((96 * 1024 * 1024)) ] || fail "backing file changed"
else
	echo "no loop devices: block device resize not tested"
fi
echo ok
