# bfs debug: golden transcripts (-f), one requests (-R), write commands that
# change exactly what they were asked to, damaged images.
#
# Golden files: tests/integration/debug/NAME.cmd is run with
# `bfs debug -f NAME.cmd IMAGE` (stdout and stderr together), filtered by
# filter() below (times, UUIDs, random node seqs and name hashes), and
# compared with NAME.expect.  After an intended output change, regenerate
# them with: BFS_UPDATE_GOLDEN=1 make integration-check TESTS=60-debug
. "$(dirname "$0")/lib.sh"
MKKEYS="$TOOLS/bfs-mkkeys"
GOLDEN="$REPO/tests/integration/debug"
[ -x "$MKKEYS" ] || fail "missing $MKKEYS (make integration-check builds it)"
command -v python3 >/dev/null || skip "python3 is needed for the JSON checks"

# what varies from run to run: times, UUIDs, random node seqs, checksums of
# the superblock (it holds the times), per-filesystem name hashes
filter() {
	sed -e 's/seq [0-9a-f]\{16\}/seq SEQ/g' \
	    -e 's/^seq:\( *\)[0-9a-f]\{16\}$/seq:\1SEQ/' \
	    -e 's/mtime [0-9]*\.[0-9]*/mtime TIME/g' \
	    -e 's/^\(uuid\|time_created\|time_written\|checksum\|hash_seed\):\( *\).*/\1:\2X/' \
	    -e 's/^\(atime\|mtime\|ctime\|btime\):\( *\).*/\1:\2TIME/' \
	    -e 's/type dirent pos \([0-9]*\):[0-9]*:/type dirent pos \1:HASH:/'
}

# golden NAME IMAGE [EXIT]: run NAME.cmd on IMAGE and compare with NAME.expect
golden() {
	"$BFS" debug -f "$GOLDEN/$1.cmd" "$2" >"$1.raw" 2>&1
	rc=$?
	filter <"$1.raw" >"$1.out"
	if [ -n "${BFS_UPDATE_GOLDEN:-}" ]; then
		cp "$1.out" "$GOLDEN/$1.expect"
		note "updated $GOLDEN/$1.expect"
	fi
	[ "$rc" -eq "${3:-0}" ] || { cat "$1.out"; fail "bfs debug -f $1.cmd exited $rc, expected ${3:-0}"; }
	diff -u "$GOLDEN/$1.expect" "$1.out" || fail "transcript of $1.cmd differs from $1.expect"
}

note "images"
expect_ok "$BFS" format -q --size 64M keys.img
expect_ok "$MKKEYS" keys.img 100
printf 'hello world\n' >hello.txt
seq 1 20000 >numbers.txt
expect_ok "$BFS" format -q --size 64M fs.img
expect_ok "$BFS" debug -w -R "mkdir /a" fs.img
expect_ok "$BFS" debug -w -f - fs.img <<EOF
mkdir /a/b
write hello.txt /a/hello.txt
write numbers.txt /a/b/numbers.txt
EOF
contains out "bfs: write numbers.txt /a/b/numbers.txt"
contains out "wrote 108894 bytes to /a/b/numbers.txt"
expect_ok "$BFS" format -q --size 64M unclean.img
expect_ok "$MKKEYS" unclean.img 100
expect_ok "$MKKEYS" unclean.img 50 --unclean

note "golden transcripts"
golden btree keys.img
golden fs fs.img
golden journal unclean.img
golden errors fs.img 1

note "-R runs one request; the exit status says whether it failed"
expect_ok "$BFS" debug -R "cat /a/hello.txt" fs.img
[ "$(cat out)" = "hello world" ] || fail "cat: '$(cat out)'"
expect_rc 1 "$BFS" debug -R "cat /nope" fs.img
contains err "cat: /nope: No such file or directory"
expect_rc 2 "$BFS" debug -R help -f x fs.img
expect_rc 1 "$BFS" debug -R help nonexistent.img
echo "help" | "$BFS" debug fs.img >out 2>err || fail "commands on stdin"
contains out "bfs: help"
contains out "set-super FIELD VALUE"

note "dump and rdump copy files out exactly"
expect_ok "$BFS" debug -R "dump /a/b/numbers.txt copy.txt" fs.img
cmp copy.txt numbers.txt || fail "dump differs"
expect_ok "$BFS" debug -R "rdump /a tree" fs.img
cmp tree/hello.txt hello.txt || fail "rdump hello.txt"
cmp tree/b/numbers.txt numbers.txt || fail "rdump numbers.txt"

note "read-only unless -w: write commands refuse, the image is untouched"
sum=$(md5sum <fs.img)
for c in "mkdir /x" "rm /a/hello.txt" "set-super label x" "corrupt 4096 0" \
	 "del-key inodes 1:0" "set-inode 1 uid 5" "put-key inodes cookie 9:9"; do
	expect_rc 1 "$BFS" debug -R "$c" fs.img
	contains err "read-only"
done
expect_ok "$BFS" debug -f "$GOLDEN/fs.cmd" fs.img
[ "$(md5sum <fs.img)" = "$sum" ] || fail "a read-only session wrote to the image"

note "set-super changes exactly the field asked for"
cp fs.img sb.img
expect_ok "$BFS" show-super --json sb.img
mv out before.json
expect_ok "$BFS" debug -w -R "set-super label newlabel" sb.img
contains out 'label: "" -> "newlabel"'
expect_ok "$BFS" show-super --json sb.img
python3 - before.json out <<'EOF' || fail "set-super changed more than the label"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
assert b["label"] == "newlabel", b["label"]
# every superblock write bumps these
for k in ("label", "seq", "time_written", "checksum"):
    a.pop(k); b.pop(k)
assert a == b, [k for k in a if a[k] != b.get(k)]
EOF
expect_ok "$BFS" debug -w -R "set-super flags 0" sb.img
expect_ok "$BFS" show-super sb.img
contains out "not clean"
expect_rc 1 "$BFS" debug -w -R "set-super checksum 5" sb.img
contains err "recomputed"
expect_rc 1 "$BFS" debug -w -R "set-super nosuchfield 5" sb.img
expect_rc 1 "$BFS" debug -w -R "set-super block_size 0x100000000" sb.img
contains err "does not fit"

note "del-key removes exactly one key; its neighbours stay"
cp keys.img del.img
expect_ok "$BFS" dump-btree del.img
mv out before.txt
expect_ok "$BFS" debug -w -R "del-key inodes 1000000:10" del.img
contains out "deleted: u64s 6 type cookie pos 1000000:10:0"
expect_ok "$BFS" dump-btree del.img
diff before.txt out >delta
[ "$(grep -c '^[<>]' delta)" -eq 1 ] || { cat delta; fail "del-key changed more than one key"; }
grep -q '^< u64s 6 type cookie pos 1000000:10:0' delta || { cat delta; fail "wrong key deleted"; }
expect_rc 1 "$BFS" debug -w -R "del-key inodes 1000000:10" del.img
contains err "no key at 1000000:10"
expect_ok "$BFS" debug -w -R "del-key extents 1000100:13" del.img
contains out "deleted: u64s 5 type cookie pos 1000100:18:0 size 8"

note "put-key inserts exactly one key"
cp keys.img put.img
expect_ok "$BFS" debug -w -R "put-key inodes cookie 7:7 hex=0102030405060708aa" put.img
contains out "inserted: u64s 6 type cookie pos 7:7:0: 0102030405060708aa00000000000000"
expect_ok "$BFS" dump-btree put.img
diff before.txt out >delta
[ "$(grep -c '^[<>]' delta)" -eq 1 ] || { cat delta; fail "put-key changed more than one key"; }
expect_rc 1 "$BFS" debug -w -R "put-key extents cookie 7:7" put.img
contains err "invalid key: extent key with size 0"
expect_rc 1 "$BFS" debug -w -R "put-key inodes cookie 7:7 hex=abc" put.img

note "corrupt flips exactly the bytes asked for; dump-btree then reports that node"
expect_ok "$BFS" format -q --size 64M big.img
expect_ok "$MKKEYS" big.img 20000
expect_ok "$BFS" debug -R "find 1000000:7003 inodes" big.img
contains out "level 1 node at"
leaf=$(sed -n 's/.*level 0 node at \([0-9]*\) .*/\1/p' out)
[ -n "$leaf" ] || fail "no leaf in: $(cat out)"
cp big.img bad.img
expect_ok "$BFS" debug -w -R "corrupt $leaf 40 4" bad.img
contains out "byte $((leaf + 40)) ($leaf+40), 4 bytes"
cmp -l big.img bad.img >delta
[ "$(wc -l <delta)" -le 4 ] || fail "corrupt changed more than 4 bytes"
awk -v lo=$((leaf + 41)) -v hi=$((leaf + 44)) '$1 < lo || $1 > hi { exit 1 }' delta ||
	fail "corrupt changed bytes outside its range: $(cat delta)"
expect_rc 1 "$BFS" dump-btree -b inodes bad.img
contains out "DAMAGED node inodes level 0 at offset $leaf"
expect_rc 1 "$BFS" debug -R "node $leaf" bad.img
contains out "check:        btree inodes level 0 node at $leaf: bad header checksum"
expect_rc 1 "$BFS" debug -R "find 1000000:7003 inodes" bad.img
contains err "lookup failed: Structure needs cleaning"
contains out "DAMAGED: btree inodes level 0 node at $leaf: bad header checksum"

note "set-inode, mkdir, write, rm through the filesystem"
cp fs.img w.img
expect_ok "$BFS" debug -R "stat /a/hello.txt" w.img
filter <out | grep -v '^ctime' >before.txt
expect_ok "$BFS" debug -w -R "set-inode /a/hello.txt mode 600" w.img
expect_ok "$BFS" debug -R "stat /a/hello.txt" w.img
filter <out | grep -v '^ctime' >after.txt
diff before.txt after.txt >delta
[ "$(grep -c '^[<>]' delta)" -eq 2 ] || { cat delta; fail "set-inode changed more than the mode"; }
grep -q '^> mode: *-rw------- (0600)' delta || { cat delta; fail "mode not set"; }
expect_ok "$BFS" debug -w -f - w.img <<EOF
mkdir /new
write numbers.txt /new/n.txt
rm /a/hello.txt
EOF
expect_ok "$BFS" debug -R "ls /" w.img
[ "$(cat out | tr '\n' ' ')" = "a lost+found new " ] || fail "ls /: $(cat out)"
expect_ok "$BFS" debug -R "ls /a" w.img
[ "$(cat out)" = "b" ] || fail "rm left: $(cat out)"
expect_ok "$BFS" debug -R "dump /new/n.txt n.txt" w.img
cmp n.txt numbers.txt || fail "written file reads back differently"
expect_rc 1 "$BFS" debug -w -R "write numbers.txt /new/n.txt" w.img
contains err "File exists"
expect_rc 1 "$BFS" debug -w -R "rm /a" w.img
contains err "Directory not empty"
expect_ok "$BFS" fsck -n w.img

note "damaged images open as far as they can"
cp fs.img sbbad.img
expect_ok "$BFS" debug -w -R "corrupt 4096 0 8" sbbad.img
expect_ok "$BFS" debug -R "super" sbbad.img
contains err "primary superblock is invalid"
contains err "using backup copy 1"
contains out "read from:             backup copy 1"
expect_ok "$BFS" debug -R "ls /a" sbbad.img
contains out "hello.txt"

# an entry inside the replay range (not the newest: that would read as a torn tail)
cp keys.img jbad.img
expect_ok "$MKKEYS" jbad.img 3000 --unclean
expect_ok "$BFS" debug -R "journal" jbad.img
from=$(sed -n 's/.*needed from seq \([0-9]*\)$/\1/p' out)
joff=$(sed -n "s/^entry seq $from last_seq [0-9]* at \([0-9]*\):.*/\1/p" out)
[ -n "$joff" ] || fail "no journal entry $from in: $(cat out)"
expect_ok "$BFS" debug -w -R "corrupt $joff 100 8" jbad.img
expect_ok "$BFS" debug -R "keys inodes 1000000:0 1000000:3" jbad.img
contains err "without journal replay"
contains out "type cookie pos 1000000:3:0"
echo ok
