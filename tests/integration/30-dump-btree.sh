# bfs dump-btree: keys in order, ranges, nodes, JSON, damaged and unclean images.
. "$(dirname "$0")/lib.sh"
MKKEYS="$TOOLS/bfs-mkkeys"
[ -x "$MKKEYS" ] || fail "missing $MKKEYS (make integration-check builds it)"

expect_ok "$BFS" format -q --size 256M img
expect_ok "$BFS" dump-btree img
contains out "btree inodes:"
[ "$(grep -c 'type cookie' out)" -eq 0 ] || fail "fresh filesystem has test keys"
[ "$(grep -c '^u64s' out)" -gt 0 ] || fail "fresh filesystem has no root directory"
expect_ok "$MKKEYS" img 20000

note "every key, in order"
expect_ok "$BFS" dump-btree --btree inodes --start 1000000:0 --end 1000000:max img
[ "$(grep -c '^u64s' out)" -eq 20000 ] || fail "expected 20000 keys, got $(grep -c '^u64s' out)"
sed -n 2p out | grep -q 'type cookie pos 1000000:3:0' || fail "first key: $(sed -n 2p out)"
grep '^u64s' out | sed 's/.* pos 1000000:\([0-9]*\):.*/\1/' > offs
sort -n -c offs || fail "keys out of order"

note "ranges are inclusive"
expect_ok "$BFS" dump-btree -b inodes --start 1000000:10 --end 1000000:703 img
[ "$(grep -c '^u64s' out)" -eq 100 ] || fail "range: $(grep -c '^u64s' out) keys"
expect_ok "$BFS" dump-btree -b extents --start 1000100:0 --end 1000100:100 img
[ "$(grep -c '^u64s' out)" -eq 10 ] || fail "extent range"
contains out "size 8"

note "JSON and nodes"
expect_ok "$BFS" dump-btree --json img
json_ok out
[ "$(json_get out keys)" -ge 22000 ] || fail "json key count $(json_get out keys)"
[ "$(json_get out damaged_nodes)" -eq 0 ] || fail "damaged nodes on a good image"
expect_ok "$BFS" dump-btree --nodes img
contains out "[csum ok]"
contains out "node level 1"
expect_ok "$BFS" dump-btree --nodes --json -b inodes img
json_ok out
leaf=$(python3 -c '
import json,sys
d = json.load(open("out"))
print([i for i in d["btrees"][0]["items"] if i["type"] == "node" and i["level"] == 0][1]["offset"])')
[ -n "$leaf" ] || fail "no leaf offset in the node dump"

note "read-only: an unclean image is replayed in memory, never written"
cp img unclean.img
expect_ok "$MKKEYS" unclean.img 1000 --unclean
expect_ok "$BFS" show-super unclean.img
contains out "not clean"
sum=$(md5sum < unclean.img)
expect_ok "$BFS" dump-btree -b inodes unclean.img
[ "$(grep -c 'type cookie' out)" -eq 20000 ] || fail "replayed keys missing: $(grep -c '^u64s' out)"
[ "$(md5sum < unclean.img)" = "$sum" ] || fail "dump-btree wrote to the image"
expect_ok "$BFS" fsck -n unclean.img
[ "$(md5sum < unclean.img)" = "$sum" ] || fail "fsck -n wrote to the image"
expect_ok "$BFS" fsck -y unclean.img
expect_ok "$BFS" show-super unclean.img
contains out "State:                     clean"

note "a damaged leaf is reported by offset, the rest is still printed"
cp img bad.img
printf 'XXXXXXXXXXXXXXXX' | dd of=bad.img bs=1 seek=$((leaf + 200)) conv=notrunc status=none
expect_rc 1 "$BFS" dump-btree -b inodes bad.img
contains out "DAMAGED node inodes level 0 at offset $leaf"
contains err "damaged node"
n=$(grep -c 'type cookie' out)
[ "$n" -gt 10000 ] && [ "$n" -lt 20000 ] || fail "expected the undamaged keys, got $n"
expect_rc 1 "$BFS" dump-btree --nodes bad.img
contains out "DAMAGED"
expect_rc 4 "$BFS" fsck -n bad.img
contains out "key set in a btree node has a bad checksum: btree inodes"
contains out "node at $leaf: bad checksum"
expect_ok "$BFS" fsck -n img

note "bad input"
expect_rc 2 "$BFS" dump-btree --btree nope img
contains err "unknown btree 'nope'"
expect_rc 2 "$BFS" dump-btree --start 1 img
contains err "bad position"
truncate -s 64M zero.img
expect_rc 1 "$BFS" dump-btree zero.img
contains err "cannot open the filesystem"

note "--json: keys as structured objects, max positions as max, negative times"
expect_ok "$BFS" format -q --size 64M fs.img
printf 'hello\n' > hello
expect_ok "$BFS" debug -w -f - fs.img <<'EOC'
mkdir /d
write hello /d/hello
set-inode /d mtime -315619199876543211
EOC
expect_ok "$BFS" dump-btree --json fs.img
json_ok out
python3 - out <<'EOP' || fail "structured JSON keys"
import json, sys
d = json.load(open(sys.argv[1]))
items = {t["btree"]: [i for i in t["items"] if i["type"] == "key"] for t in d["btrees"]}
assert all("text" not in k for ks in items.values() for k in ks), "a key still has text"
ino = [k for k in items["inodes"] if k["key_type"] == "inode"]
d_ino = [k for k in ino if k["value"]["mtime_ns"] == -315619199876543211]
assert d_ino, "negative mtime not found"
assert d_ino[0]["value"]["mode_octal"] == "040755", d_ino[0]
names = {k["value"]["name"]: k for k in items["dirents"] if k["key_type"] == "dirent"}
assert "hello" in names and names["hello"]["value"]["dtype_name"] == "reg", names.keys()
assert set(names["hello"]["pos"]) == {"inode", "offset", "snapshot"}
ext = [k for k in items["extents"] if k["key_type"] == "extent"]
assert ext and ext[0]["value"]["csum_type"] == "xxhash" and ext[0]["size"] == 8, ext
assert ext[0]["value"]["stored_bytes"] == 4096, ext[0]
alloc = [k for k in items["alloc"] if k["key_type"] == "alloc"]
assert alloc and alloc[0]["value"]["data_type"] == "user", alloc
EOP
expect_ok "$BFS" dump-btree --json --nodes -b extents fs.img
python3 -c '
import json, sys
n = [i for i in json.load(open("out"))["btrees"][0]["items"] if i["type"] == "node"]
assert n[-1]["max_key"] == "max" and n[-1]["max_pos"]["inode"] == "max", n[-1]
' || fail "the maximum position does not print as max"
expect_ok "$BFS" dump-btree --nodes -b extents fs.img
contains out ".. max"
lacks out "18446744073709551615"
expect_ok "$BFS" dump-btree -b inodes fs.img
contains out "mtime -315619199.876543211"
expect_ok "$BFS" debug -R "stat /d" fs.img
contains out "1960-01-01 00:00:00 UTC +123456789 ns"
echo ok
