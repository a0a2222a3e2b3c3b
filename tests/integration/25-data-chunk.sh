# The data chunk size: bfs format --data-chunk, bfs set-option data_chunk=,
# show-super shows it, new data is cut into chunks of it (the extents say so),
# old data keeps its chunks, and fsck -c finds the mixed image clean.
. "$(dirname "$0")/lib.sh"

# chunk sizes (bytes) of the extents of inode $2 in `debug keys extents` output $1
chunk_sizes() {
	awk -v ino="$2" '$4 == "extent" && index($6, ino ":") == 1 {
		for (i = 1; i <= NF; i++) if ($i == "chunk") { split($(i + 1), a, "/"); print a[2] * 512 }
	}' "$1" | sort -u | tr '\n' ' '
}

note "format --data-chunk=16K"
expect_ok "$BFS" format -f --data-chunk=16K --size 64M img
contains out "data chunk:      16 KiB"
expect_ok "$BFS" show-super --json img
cp out j
[ "$(json_get j data_chunk)" = 16384 ] || fail "data chunk not 16K"
case " $(json_get j features.compat_names) " in
*" data_chunk "*) ;;
*) fail "no data_chunk compat feature" ;;
esac
expect_ok "$BFS" show-super img
contains out "Data chunk size:"

note "a sequential write is cut into 16K chunks"
head -c 294912 /dev/urandom > a
expect_ok "$BFS" debug -w -R "write a /a" img
ino_a=$(sed -n 's/.*(inode \([0-9]*\)).*/\1/p' out)
expect_ok "$BFS" debug -R "keys extents" img
[ "$(chunk_sizes out "$ino_a")" = "16384 " ] || fail "chunks of /a: $(chunk_sizes out "$ino_a")"

note "set-option data_chunk=4K: new data only"
expect_ok "$BFS" set-option img data_chunk=4K
contains out "data_chunk: 16 KiB -> 4 KiB"
head -c 200000 /dev/urandom > b
expect_ok "$BFS" debug -w -R "write b /b" img
ino_b=$(sed -n 's/.*(inode \([0-9]*\)).*/\1/p' out)
expect_ok "$BFS" debug -R "keys extents" img
[ "$(chunk_sizes out "$ino_a")" = "16384 " ] || fail "old chunks changed: $(chunk_sizes out "$ino_a")"
[ "$(chunk_sizes out "$ino_b")" = "4096 " ] || fail "chunks of /b: $(chunk_sizes out "$ino_b")"
expect_ok "$BFS" debug -R "cat /a" img
cmp -s out a || fail "/a reads back wrong"
expect_ok "$BFS" debug -R "cat /b" img
cmp -s out b || fail "/b reads back wrong"
expect_ok "$BFS" fsck -n -c img
contains out "clean"
expect_ok "$BFS" set-option img data_chunk=64K
contains out "data_chunk: 4 KiB -> 64 KiB"
expect_ok "$BFS" set-option img data_chunk=64K
contains out "(unchanged)"

note "bad sizes are refused and change nothing"
cp img before.img
for bad in 2K 3K 12K 128K 0 x; do
	expect_rc 2 "$BFS" set-option img data_chunk=$bad
done
contains err "data chunk size"
cmp -s img before.img || fail "a refused set-option wrote"
expect_rc 1 "$BFS" format -f --data-chunk=2K --size 64M other.img
contains err "4K to 64K"
expect_rc 1 "$BFS" format -f --block-size=16K --data-chunk=4K --size 64M other.img
contains err "smaller than the block size"
# through a real FUSE mount, where it can work: what an admin does
if [ "$(id -u)" -eq 0 ] && [ -c /dev/fuse ] && command -v fusermount3 >/dev/null; then
	note "mounted: sequential writes in 8K chunks, random overwrites and reads"
	. "$(dirname "$0")/mount-lib.sh"
	mkdir -p mnt
	trap mount_cleanup EXIT
	expect_ok "$BFS" format -q -f --data-chunk=8K --size 64M m.img
	expect_ok "$BFS" mount m.img mnt
	head -c 3000000 /dev/urandom > seq
	cp seq mnt/seq
	python3 - mnt/seq seq <<'EOP' || fail "random overwrites through the mount"
import os, random, sys
r = random.Random(25)
with open(sys.argv[1], "r+b") as f, open(sys.argv[2], "r+b") as m:
    for _ in range(300):
        off, n = r.randrange(3000000), r.choice([1, 100, 4096, 8192, 20000])
        data = os.urandom(n)
        for x in (f, m):
            x.seek(off)
            x.write(data)
    f.flush()
    os.fsync(f.fileno())
    for _ in range(300):
        off, n = r.randrange(3000000), r.choice([1, 4096, 30000])
        f.seek(off)
        m.seek(off)
        assert f.read(n) == m.read(n), off
EOP
	cmp -s mnt/seq seq || fail "the file reads back wrong through the mount"
	umount mnt
	wait_unlocked m.img
	expect_ok "$BFS" debug -R "keys extents" m.img
	ino=$("$BFS" debug -R "stat /seq" m.img | sed -n 's/^inode: *//p')
	case " $(chunk_sizes out "$ino")" in
	*" 8192 "*) ;;
	*) fail "no 8K chunks in /seq: $(chunk_sizes out "$ino")" ;;
	esac
	for c in $(chunk_sizes out "$ino"); do
		[ "$c" -le 8192 ] || fail "a chunk of $c bytes with data_chunk=8K"
	done
	expect_ok "$BFS" fsck -n -c m.img
	contains out "clean"
	expect_ok "$BFS" debug -R "cat /seq" m.img
	cmp -s out seq || fail "/seq reads back wrong after unmount"
else
	echo "no FUSE: the mounted case was not run"
fi
echo ok
