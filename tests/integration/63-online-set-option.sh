# bfs set-option on a mounted filesystem: label, compression, checksum,
# commit interval and error behaviour change through the mount's control
# channel, take effect in the running mount and are on disk at once
# (show-super reads them while mounted); uuid is refused while mounted; bad
# values, a dry run and a caller other than root change nothing.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount-lib.sh"

mount_prereqs
used_kib() { df -k --output=used "$1" | tail -1 | tr -d ' '; }
super() { expect_ok "$BFS" show-super img; grep -F "$1" out; }

expect_ok "$BFS" format -q --size 128M img
expect_ok "$BFS" mount img mnt
wait_mounted mnt

note "label, by mount point and by device"
expect_ok "$BFS" set-option mnt label=live
contains out "label: (none) -> live"
super "Label:" | grep -q "live" || fail "show-super does not show the new label"
expect_ok "$BFS" set-option img label=again
contains out "label: live -> again"

note "compression: new data is compressed at once"
u0=$(used_kib mnt)
dd if=/dev/zero of=mnt/zeros0 bs=1M count=20 status=none && sync mnt/zeros0
u1=$(used_kib mnt)
[ $((u1 - u0)) -gt 15000 ] || fail "uncompressed zeros took only $((u1 - u0)) KiB"
# with format's 16K chunks a chunk of zeros shrinks to a quarter at best:
# larger chunks go with compression (bfs-set-option(8))
expect_ok "$BFS" set-option mnt compression=zstd:3 data_chunk=64K
contains out "compression: none -> zstd:3"
contains out "data_chunk: 16 KiB -> 64 KiB"
dd if=/dev/zero of=mnt/zeros1 bs=1M count=20 status=none && sync mnt/zeros1
u2=$(used_kib mnt)
[ $((u2 - u1)) -lt 5000 ] || fail "zeros written after compression=zstd took $((u2 - u1)) KiB"
super "Compression:" | grep -q zstd || fail "show-super: compression"

note "checksum of new data"
expect_ok "$BFS" set-option img checksum=none
contains out "checksum: xxhash -> none"
super "Data checksum type:" | grep -q none || fail "show-super: data checksum"
head -c 1000000 /dev/urandom > sum.dat
cp sum.dat mnt/nosum && sync mnt/nosum

note "errors="
expect_ok "$BFS" set-option mnt errors=remount-ro
contains out "errors: continue -> remount-ro"
super "Error behaviour:" | grep -q remount-ro || fail "show-super: errors"

note "commit interval: the running mount uses the new one"
expect_ok "$BFS" set-option mnt commit=3600
echo "not yet" > mnt/slow
sleep 2
cp img early.img
expect_ok "$BFS" set-option mnt commit=1
contains out "commit: 3600 s -> 1 s"
echo "committed" > mnt/quick
sleep 3
cp img late.img
expect_ok "$BFS" fsck -n late.img
expect_ok "$BFS" debug -R "cat /quick" late.img
contains out "committed"
"$BFS" debug -R "cat /slow" early.img >out 2>err	# absent, or without its data
lacks out "not yet"

note "refused or without effect: uuid, bad values, dry run, not root"
expect_ok "$BFS" show-super img
grep -F "UUID" out > uuid.before
expect_rc 1 "$BFS" set-option mnt uuid=random
contains err "uuid can only change on an unmounted filesystem"
expect_rc 2 "$BFS" set-option mnt compression=lz4
contains err "invalid compression"
expect_rc 2 "$BFS" set-option img errors=sometimes
contains err "invalid error behaviour"
expect_rc 2 "$BFS" set-option mnt bogus=1
expect_ok "$BFS" set-option --dry-run mnt label=dry
contains out "label: again -> dry"
contains out "dry run: nothing written"
expect_ok "$BFS" set-option mnt label=again
contains out "nothing to change"
if command -v setpriv >/dev/null; then
	expect_rc 1 setpriv --reuid=65534 --regid=65534 --clear-groups "$BFS" set-option mnt label=x
	contains err "needs root"
fi
expect_ok "$BFS" show-super img
contains out "again"
grep -F "UUID" out | cmp -s - uuid.before || fail "the uuid changed"

note "after unmount: every value is there, fsck is clean, the data reads back"
umount mnt
wait_unlocked img
expect_ok "$BFS" fsck -n -c img
contains out "clean"
expect_ok "$BFS" show-super --json img
cp out j
[ "$(json_get j label)" = again ] || fail "label"
[ "$(json_get j compression)" = zstd ] || fail "compression"
[ "$(json_get j data_checksum_type)" = none ] || fail "data checksum"
[ "$(json_get j commit_interval)" = 1 ] || fail "commit interval"
[ "$(json_get j errors)" = remount-ro ] || fail "errors"
expect_ok "$BFS" debug -R "dump /nosum nosum.out" img
cmp -s sum.dat nosum.out || fail "data written without checksum differs"
echo ok
