# A mounted filesystem filled to ENOSPC, emptied and filled again, three
# times: ENOSPC is a clean error, space comes back, nothing written before
# is damaged, and fsck stays clean.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount-lib.sh"
mount_prereqs

expect_ok "$BFS" format -q --size 96M img
expect_ok "$BFS" mount img "$PWD/mnt"
wait_mounted mnt
head -c 3000000 /dev/urandom > keep
cp keep mnt/keep || fail "cp keep"
sync mnt/keep
first=""
for round in 1 2 3; do
	note "round $round: fill"
	i=0
	while dd if=/dev/zero of="mnt/fill$i" bs=1M count=8 status=none 2>dd.err; do
		i=$((i + 1))
		[ $i -lt 100 ] || fail "a 96 MiB filesystem took more than 800 MiB"
	done
	grep -q "No space left on device" dd.err || { cat dd.err; fail "dd failed, but not with ENOSPC"; }
	used=$(du -sk mnt | cut -f1)
	echo "filled ${used} KiB before ENOSPC"
	[ -z "$first" ] && first=$used
	# refills reach (nearly) the same level: space really came back
	[ "$used" -ge $((first * 9 / 10)) ] || fail "round $round filled only ${used}K, round 1 ${first}K"
	cmp keep mnt/keep || fail "round $round: a file written before ENOSPC changed"
	note "round $round: empty"
	rm -f mnt/fill*
	df -k mnt | tail -n 1
done
unmount_wait umount "$PWD/mnt"
expect_ok "$BFS" fsck -n img
contains out "clean"
echo ok
