# errors= (format --errors, set-option errors=, mount -o errors=): what a
# mount does when it meets damaged metadata.  A leaf of the directory
# btree is damaged on disk under a running mount (with a small node cache,
# so the leaf is read from disk); listing the directory then fails with
# EUCLEAN ("Structure needs cleaning"), and:
#   continue    writes still work;
#   remount-ro  writes fail with EROFS from then on, reads still work;
#   panic       the mount process stops and the mount goes away.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount-lib.sh"

mount_prereqs

note "a filesystem whose directory /d spans several btree leaves"
expect_ok "$BFS" format -q --size 64M --errors=panic base.img
expect_ok "$BFS" show-super base.img
contains out "Error behaviour:           panic"
expect_ok "$BFS" mount base.img mnt
mkdir mnt/d
i=0
while [ $i -lt 1500 ]; do echo $i > mnt/d/file_with_a_long_name_$i; i=$((i + 1)); done
echo kept > mnt/kept
umount mnt
wait_unlocked base.img
expect_ok "$BFS" dump-btree --nodes -b dirents base.img
# the last leaf: it holds entries of /d
leaf=$(awk '/node level 0/ { o = $0 } END { sub(/.* offset /, "", o); sub(/ .*/, "", o); print o }' out)
[ -n "$leaf" ] && [ "$leaf" -gt 0 ] || fail "no dirents leaf found"

damage() {
	head -c 256 /dev/zero | tr '\0' '\377' |
		dd of=img bs=1 seek=$((leaf + 1024)) conv=notrunc status=none
}
# mount a fresh copy with OPTS (and a small node cache)
mount_copy() {
	cp base.img img
	expect_ok "$BFS" mount -o "cache_size=1M$1" img mnt
	wait_mounted mnt
}
# damage the leaf, list /d: EUCLEAN
damage_and_list() {
	damage
	ls mnt/d >/dev/null 2>ls.err && fail "listing a damaged directory worked"
	grep -q "Structure needs cleaning" ls.err || fail "ls: $(cat ls.err)"
}
wait_stopped() {
	i=0
	while is_mounted mnt; do
		sleep 0.1
		i=$((i + 1))
		[ $i -lt 100 ] || fail "errors=panic: still mounted 10 s after the error"
	done
	wait_unlocked img
}
finish() {
	umount mnt
	wait_unlocked img
}

note "continue (mount -o errors=continue overrides the filesystem's panic)"
mount_copy ",errors=continue"
damage_and_list
echo more > mnt/after || fail "errors=continue: a write after the error failed"
cat mnt/kept >/dev/null || fail "errors=continue: a read failed"
finish

note "continue, set by a remount (mount -o remount,errors=continue), for that mount only"
mount_copy ""
expect_ok "$BFS" mount -o remount,errors=continue mnt
damage_and_list
echo more > mnt/after || fail "remount,errors=continue: a write after the error failed"
finish
expect_ok "$BFS" show-super img
contains out "Error behaviour:           panic"

note "remount-ro (set-option errors=remount-ro)"
cp base.img img
expect_ok "$BFS" set-option img errors=remount-ro
contains out "errors: panic -> remount-ro"
cp img base.img
mount_copy ""
damage_and_list
echo more 2>w.err > mnt/after && fail "errors=remount-ro: a write after the error worked"
grep -q "Read-only file system" w.err || fail "write: $(cat w.err)"
mkdir mnt/newdir 2>w.err && fail "errors=remount-ro: mkdir after the error worked"
grep -q "Read-only file system" w.err || fail "mkdir: $(cat w.err)"
[ "$(cat mnt/kept)" = kept ] || fail "errors=remount-ro: a read failed"
expect_rc 1 "$BFS" set-option mnt label=x
contains err "read-only"
finish

note "panic (mount -o errors=panic overrides the filesystem's remount-ro)"
mount_copy ",errors=panic"
damage_and_list
wait_stopped

note "nothing was written after the error: what fsck finds is the damage done"
expect_rc 4 "$BFS" fsck -n img
expect_ok "$BFS" show-super img
contains out "Error behaviour:           remount-ro"
echo ok
