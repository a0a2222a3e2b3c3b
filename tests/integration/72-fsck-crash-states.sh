# Crash states are not damage, damage is never a crash state (issue 9 items 4
# and 8), on the fixture images: an interrupted superblock update makes
# `fsck -n` say so and exit 0, writing nothing, and the next read-write open
# completes it; a damaged journal makes `fsck -n` report it (exit 4) without
# writing, and `fsck -y` leaves a journal that a plain open accepts.
. "$(dirname "$0")/lib.sh"
command -v zstd >/dev/null || skip "zstd not installed"
MKKEYS=$TOOLS/bfs-mkkeys

unpack() { zstd -q -d -f "$REPO/fixtures/$1/image.zst" -o test.img || fail "$1: cannot decompress"; }

for f in f_sb_update_interrupted f_sb_primary_torn f_sb_backup_torn; do
	unpack $f
	cp test.img before.img
	expect_ok "$BFS" fsck -n test.img
	contains out "an update interrupted by a power cut"
	contains out "the next read-write mount completes it"
	contains out "clean, 0 problems found"
	cmp -s test.img before.img || fail "$f: fsck -n wrote to the image"
	# any read-write open rewrites every copy (mkkeys opens the core and closes it)
	expect_ok "$MKKEYS" test.img 0
	expect_ok "$BFS" fsck -n test.img
	lacks out "power cut"
	note "$f: fsck -n exits 0, a read-write open completes the update"
done

for f in f_journal_entry_csum f_journal_seq_gap f_journal_range_start_corrupt \
	 f_journal_forged f_journal_invalid \
	 f_journal_tail_corrupt f_journal_stale; do
	unpack $f
	cp test.img before.img
	expect_rc 4 "$BFS" fsck -n test.img
	contains out "journal"
	cmp -s test.img before.img || fail "$f: fsck -n wrote to the image"
	expect_rc 1 "$BFS" fsck -y test.img
	# the repaired journal opens without salvage, with nothing to complain about
	expect_ok "$MKKEYS" test.img 10
	expect_ok "$BFS" fsck -n test.img
	contains out "clean, 0 problems found"
	lacks err "journal"
	note "$f: reported by -n, repaired by -y, opens afterwards"
done

# A superblock that says clean while the journal goes on after it (a stale
# flag, as from an old backup copy): fsck replays the journal, like e2fsck
# with a clear needs_recovery flag, and no update in it is lost.
stale_clean_image fs.img 3 60
cp fs.img before.img
expect_rc 4 "$BFS" fsck -n fs.img
contains out "the journal continues after it"
cmp -s fs.img before.img || fail "fsck -n wrote to the image"
expect_rc 1 "$BFS" fsck -y fs.img
contains out "Replay it? yes"
expect_ok "$BFS" fsck -fn fs.img
contains out "clean, 0 problems found"
expect_ok "$TOOLS/bfs-fsimage" manifest fs.img
cmp -s out want.manifest || { diff want.manifest out | head; fail "files differ after the replay"; }
note "a stale clean flag: fsck replays the journal that continues after it, nothing lost"

# A crash state with a sound journal: fsck -n/-y/-p open the filesystem
# once (one "replaying" line with -v: pass 1's open, made with the space
# hooks, which pass 2 goes on with, made writable for -y/-p); -y/-p replay
# it onto the device, and a plain open afterwards has nothing left to
# replay; -n writes nothing (doc/fsck.md "One open"; 52-mount-crash-churn).
expect_ok "$BFS" format -q --size 64M u.img
expect_ok "$TOOLS/bfs-mktree" u.img 300
expect_ok "$TOOLS/bfs-mkkeys" u.img 50 --unclean
expect_ok "$TOOLS/bfs-fsimage" manifest u.img
cp out want.manifest
for mode in -fn -fy -fp; do
	cp u.img v.img
	expect_ok "$BFS" fsck $mode -v v.img
	[ "$(grep -c 'replaying [0-9]* journal entries' out)" -eq 1 ] ||
		{ cat out; fail "fsck $mode did not open the filesystem once"; }
	[ "$mode" != -fn ] || cmp -s v.img u.img || fail "fsck -fn wrote to the image"
done
expect_ok "$BFS" fsck -fn -v v.img
lacks out "replaying"
expect_ok "$TOOLS/bfs-fsimage" manifest v.img
cmp -s out want.manifest || { diff want.manifest out | head; fail "files differ after fsck -p"; }
note "a crash state: one open (one replay) for -n, -y and -p; -p's replay is on the device"
