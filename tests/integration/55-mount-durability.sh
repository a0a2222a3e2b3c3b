# Durability without fsync: the periodic commit (commit=N, default 5 s)
# makes written data durable on its own, so a kill -9 of the mount process
# loses at most the last interval.  Nothing here calls fsync(2).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount-lib.sh"

mount_prereqs

# kill_round OPTS WAIT: write without fsync, wait WAIT seconds, kill -9,
# remount: the data is there
kill_round() {
	opts=$1 wait=$2 tag=$3
	"$BFS" mount -f -o "$opts" img mnt 2>"mount.$tag.err" &
	pid=$!
	wait_mounted mnt
	mkdir "mnt/$tag" || fail "mkdir on the mount"
	head -c 3000001 /dev/urandom > "src.$tag"
	cp "src.$tag" "mnt/$tag/data" || fail "write to the mount"
	echo "small $tag" > "mnt/$tag/small"
	mv "mnt/$tag/small" "mnt/$tag/renamed" || fail "rename on the mount"
	sleep "$wait"
	kill -9 "$pid"
	wait "$pid" 2>/dev/null
	fusermount3 -u -z mnt 2>/dev/null || umount -l mnt || fail "cannot remove the dead mount"
	expect_ok "$BFS" mount -o ro img mnt
	cmp "src.$tag" "mnt/$tag/data" ||
		fail "data written $wait s before kill -9 is lost (-o $opts)"
	[ "$(cat "mnt/$tag/renamed" 2>/dev/null)" = "small $tag" ] ||
		fail "a rename done $wait s before kill -9 is lost (-o $opts)"
	unmount_wait umount mnt
}

expect_ok "$BFS" format -q --size 1G img

note "default interval (5 s): the data survives a kill -9 7 s later"
kill_round rw 7 default
note "commit=1: 2.5 s is enough"
kill_round commit=1 2.5 one
note "commit=0 is the default"
kill_round commit=0 7 zero
note "with the kernel write-back cache, close(2) sends the data and the commit follows"
kill_round writeback,commit=1 2.5 wb

note "a long interval really defers the commit (the test above can fail)"
"$BFS" mount -f -o commit=3600 img mnt 2>mount.long.err &
pid=$!
wait_mounted mnt
echo "never committed" > mnt/late || fail "write to the mount"
sleep 2
kill -9 "$pid"
wait "$pid" 2>/dev/null
fusermount3 -u -z mnt 2>/dev/null || umount -l mnt || fail "cannot remove the dead mount"
expect_ok "$BFS" mount -o ro img mnt
[ ! -e mnt/late ] || fail "commit=3600 committed within 2 s: the interval is not honoured"
unmount_wait umount mnt

note "bad values are refused"
expect_rc 2 "$BFS" mount -o commit=-1 img mnt
contains err "invalid value in mount option 'commit=-1'"
expect_rc 2 "$BFS" mount -o commit=abc img mnt

note "a clean unmount after all that"
expect_ok "$BFS" fsck -n img
echo "durability tests passed"
