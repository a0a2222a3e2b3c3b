# bfs set-option: each option, show-super shows it, fsck stays clean, refusals.
. "$(dirname "$0")/lib.sh"

expect_ok "$BFS" format -q -L old --size 64M img
printf 'before the change\n' > f1
expect_ok "$BFS" debug -w -R "write f1 /f1" img

note "label, uuid, compression, checksum in one write"
seq_before=$("$BFS" show-super --json img > j && json_get j seq)
expect_ok "$BFS" set-option img label="new label" uuid=5d9f2c1e-8a4b-4c3d-9e2f-1a2b3c4d5e6f \
	compression=zstd:7 checksum=none
contains out "label: old -> new label"
contains out "uuid: "
contains out "-> 5d9f2c1e-8a4b-4c3d-9e2f-1a2b3c4d5e6f"
contains out "compression: none -> zstd:7"
contains out "checksum: xxhash -> none"
expect_ok "$BFS" show-super --json img
cp out j
[ "$(json_get j label)" = "new label" ] || fail "label not set"
[ "$(json_get j uuid)" = "5d9f2c1e-8a4b-4c3d-9e2f-1a2b3c4d5e6f" ] || fail "uuid not set"
[ "$(json_get j compression)" = "zstd" ] || fail "compression not set"
[ "$(json_get j compression_level)" = 7 ] || fail "compression level not set"
[ "$(json_get j checksum_type)" = "xxhash" ] || fail "metadata checksum changed"
[ "$(json_get j data_checksum_type)" = "none" ] || fail "data checksum not set"
[ "$(json_get j features.incompat_names)" = "zstd" ] || fail "zstd feature not set"
[ "$(json_get j seq)" -eq $((seq_before + 1)) ] || fail "not one superblock write"
expect_ok "$BFS" show-super --all img
[ "$(grep -c 'Valid:  *yes' out)" -eq 3 ] || fail "not every copy valid after set-option"
expect_ok "$BFS" fsck -n img
contains out "clean"

note "new data follows the new settings, old data is still read and checked"
head -c 300000 /dev/zero > zeros
expect_ok "$BFS" debug -w -R "write zeros /zeros" img
expect_ok "$BFS" debug -R "keys extents" img
grep -q 'zstd' out || fail "new data not compressed"
expect_ok "$BFS" debug -R "cat /f1" img
contains out "before the change"
expect_ok "$BFS" fsck -n img
contains out "clean"
expect_ok "$BFS" show-super --export img
contains out "ID_FS_UUID=5d9f2c1e-8a4b-4c3d-9e2f-1a2b3c4d5e6f"
contains out "ID_FS_LABEL=new_label"

note "commit interval"
expect_ok "$BFS" set-option img commit=7
contains out "commit: none -> 7 s"
expect_ok "$BFS" show-super --json img
[ "$(json_get out commit_interval)" = 7 ] || fail "commit interval not set"
expect_rc 2 "$BFS" set-option img commit=100000
contains err "longer than a day"
expect_rc 2 "$BFS" set-option img commit=-1
expect_ok "$BFS" set-option img commit=0
contains out "commit: 7 s -> none"

note "unchanged values, clearing the label, back to none, --dry-run"
expect_ok "$BFS" set-option img label="new label"
contains out "(unchanged)"
contains out "nothing to change"
expect_ok "$BFS" set-option img label= compression=none checksum=xxhash uuid=random
contains out "label: new label -> (none)"
expect_ok "$BFS" show-super --json img
[ "$(json_get out compression)" = "none" ] || fail "compression not reset"
[ "$(json_get out features.incompat_names)" = "zstd" ] || fail "zstd feature cleared"
[ "$(json_get out data_checksum_type)" = "xxhash" ] || fail "data checksum not reset"
[ "$(json_get out uuid)" != "5d9f2c1e-8a4b-4c3d-9e2f-1a2b3c4d5e6f" ] || fail "uuid=random"
cp img before.img
expect_ok "$BFS" set-option --dry-run img label=dry
contains out "dry run: nothing written"
cmp -s img before.img || fail "--dry-run wrote"
expect_ok "$BFS" fsck -n img

note "usage errors"
expect_rc 2 "$BFS" set-option img
contains err "no OPTION=VALUE given"
expect_rc 2 "$BFS" set-option img bogus=1
contains err "unknown option 'bogus=1'"
contains err "compression"
expect_rc 2 "$BFS" set-option img label
contains err "needs a value"
expect_rc 2 "$BFS" set-option img label=a label=b
contains err "given twice"
expect_rc 2 "$BFS" set-option img compression=zstd:20
expect_rc 2 "$BFS" set-option img compression=lz4
expect_rc 2 "$BFS" set-option img checksum=crc32c
expect_rc 2 "$BFS" set-option img uuid=not-a-uuid
expect_rc 2 "$BFS" set-option img label=$(printf '%065d' 0)
contains err "longer than 64 bytes"
cmp -s img before.img || fail "a refused set-option wrote"

note "refusals: not bfs, in use, damaged primary, journal needing replay"
truncate -s 16M zero.img
expect_rc 1 "$BFS" set-option zero.img label=x
contains err "not a bfs filesystem"
expect_rc 1 "$BFS" set-option missing.img label=x
contains err "does not exist"
# another bfs process holding the image (as a mount does)
flock img sleep 2 &
holder=$!
sleep 0.5
expect_rc 1 "$BFS" set-option img label=x
contains err "in use"
wait $holder
cmp -s img before.img || fail "set-option wrote to an image in use"
cp img dirty.img
expect_ok "$BFS" debug -w -R "set-super flags 0" dirty.img
expect_rc 1 "$BFS" set-option dirty.img uuid=random
contains err "not closed cleanly"
expect_ok "$BFS" set-option dirty.img label=fine
cp img bad.img
expect_ok "$BFS" debug -w -R "corrupt 4096 200 4" bad.img
expect_rc 1 "$BFS" set-option bad.img label=x
contains err "primary superblock"
contains err "bfs fsck"

# a real FUSE mount, where it can work
if [ "$(id -u)" -eq 0 ] && [ -c /dev/fuse ] && command -v fusermount3 >/dev/null; then
	note "a mounted filesystem refuses what needs unmounting (the live changes: 63-online-set-option)"
	. "$(dirname "$0")/mount-lib.sh"
	mkdir -p mnt
	trap mount_cleanup EXIT
	expect_ok "$BFS" mount img mnt
	expect_rc 1 "$BFS" set-option img uuid=random
	contains err "img' is mounted"
	contains err "unmount it first"
	expect_ok "$BFS" set-option --dry-run img label=mounted
	contains out "dry run"
	umount mnt
	wait_unlocked img
	expect_ok "$BFS" show-super img
	lacks out "mounted"
	note "a mounted filesystem commits every commit= seconds without fsync"
	expect_ok "$BFS" set-option img commit=1
	expect_ok "$BFS" mount img mnt
	echo "no fsync" > mnt/unsynced
	sleep 3
	cp img crashed.img	# what a power failure would leave now
	umount mnt
	wait_unlocked img
	expect_ok "$BFS" fsck -n crashed.img
	expect_ok "$BFS" debug -R "cat /unsynced" crashed.img
	contains out "no fsync"
else
	echo "no FUSE: the mounted case was not run"
fi
echo ok
