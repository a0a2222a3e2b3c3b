# umount, then mount again at once: umount(8) of an image file returns
# before the old mount process has released the image, and the new mount
# waits for that instead of failing with "in use" (xfstests' cycle mount
# found this), blocked in flock(2) until the holder lets go (no polling).
# A lock held by something else past 20 s still ends in "in use", and
# a device that is mounted again meanwhile is refused at once.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount-lib.sh"

mount_prereqs

expect_ok "$BFS" format -q --size 256M img

note "umount; mount, ten rounds, no waiting in between"
i=0
while [ $i -lt 10 ]; do
	expect_ok "$BFS" mount img mnt
	[ $i -eq 0 ] || [ "$(cat mnt/round)" = "$((i - 1))" ] || fail "round $i: content lost"
	echo "$i" > mnt/round
	# enough dirty data that closing takes a moment
	dd if=/dev/urandom of=mnt/data bs=1M count=8 2>/dev/null || fail "write"
	umount mnt || fail "umount, round $i"
	i=$((i + 1))
done
expect_ok "$BFS" mount -o ro img mnt
[ "$(cat mnt/round)" = 9 ] || fail "last round's content"
unmount_wait umount mnt

note "a lock released a second later (a closing mount): the mount waits"
flock -x img sleep 1.5 &
locker=$!
sleep 0.3
start=$(date +%s%N)
expect_ok "$BFS" mount img mnt
took=$(( ($(date +%s%N) - start) / 1000000 ))
[ $took -ge 500 ] || fail "mount did not wait for the lock (${took} ms)"
wait $locker
is_mounted mnt || fail "not mounted after waiting"

note "a read-only mount waits for an exclusive holder too (a shared lock)"
unmount_wait umount mnt
flock -x img sleep 1 &
locker=$!
sleep 0.3
expect_ok "$BFS" mount -o ro img mnt
wait $locker
is_mounted mnt || fail "not mounted read-only after waiting"
[ "$(cat mnt/round)" = 9 ] || fail "read-only mount after waiting: content"
unmount_wait umount mnt
expect_ok "$BFS" mount img mnt

note "mounted: a second mount is refused at once"
start=$(date +%s%N)
expect_fail "$BFS" mount img mnt2
took=$(( ($(date +%s%N) - start) / 1000000 ))
contains err "already in use"
[ $took -lt 5000 ] || fail "refusing a mounted device took ${took} ms"
unmount_wait umount mnt
expect_ok "$BFS" fsck -fn img
