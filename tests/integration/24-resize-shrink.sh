# bfs resize shrinking a used filesystem whose btree nodes are spread over the
# device: the nodes and the file data beyond the new end move below it, the
# amount a refusal names is what is really missing, the shrink goes to just
# above the used size, fsck -fn is clean, every file (content hash, size,
# links, symlinks) is as before, and the mounted filesystem reads back the same.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || skip "python3 not installed"
FSIMAGE=$TOOLS/bfs-fsimage
POP=$TOOLS/bfs-populate
[ -x "$FSIMAGE" ] && [ -x "$POP" ] || fail "bfs-fsimage / bfs-populate not built"

note "a used filesystem: nodes low and high, data at the top"
expect_ok "$BFS" format -q -L shrink --size 64M img
expect_ok "$FSIMAGE" populate --seed 1 --files 300 img
# fill the rest with data, so the metadata that comes after the grow can only go above it
head -c 4000000 /dev/urandom > fill
n=0
while "$BFS" debug -w -R "write fill /fill$n" img >/dev/null 2>&1; do n=$((n + 1)); done
[ $n -ge 5 ] || fail "only $n fill files fit"
expect_ok "$BFS" resize img 256M
expect_ok "$POP" img 20000
i=0
while [ $i -le $n ]; do
	"$BFS" debug -w -R "rm /fill$i" img >/dev/null 2>&1
	i=$((i + 1))
done
expect_ok "$BFS" fsck -fn img
contains out "clean"
expect_ok "$FSIMAGE" manifest img
cp out manifest.before
[ "$(wc -l < manifest.before)" -gt 20000 ] || fail "too few names in the manifest"
expect_ok "$BFS" debug -R "rdump / before" img

note "dry run: nodes and data beyond 96 MiB would move"
expect_ok "$BFS" resize --dry-run img 96M
contains out "Would move"
nodes=$(sed -n 's/^Would move \([0-9]*\) btree nodes.*/\1/p' out)
[ -n "$nodes" ] && [ "$nodes" -ge 100 ] || fail "expected 100+ btree nodes beyond 96 MiB: $(cat out)"
contains out "of file data"

note "too small: refused with what is missing, nothing changed (--dry-run says it first)"
expect_rc 1 "$BFS" resize --dry-run img 64M
contains err "more is needed"
cp err refusal.dry
expect_rc 1 "$BFS" resize img 64M
cmp -s refusal.dry err || fail "--dry-run and the shrink refuse differently: $(cat refusal.dry err)"

contains err "cannot shrink 'img' to 64 MiB"
contains err "of file data and btree nodes lies beyond the new end"
contains err "more is needed"
[ "$(stat -c %s img)" -eq $((256 * 1024 * 1024)) ] || fail "a refused shrink cut the image"
cp err refusal
expect_ok "$BFS" fsck -fn img
contains out "clean"
# the missing amount, rounded up to MiB, plus one MiB: enough
target=$(python3 -c '
import re, sys, math
m = re.search(r"; ([0-9.]+) (KiB|MiB|GiB) more is needed", open("refusal").read())
mib = float(m.group(1)) * {"KiB": 1 / 1024, "MiB": 1, "GiB": 1024}[m.group(2)]
print(64 + math.ceil(mib) + 1)')
[ "$target" -lt 96 ] || fail "the refusal asks for more than the used size: ${target} MiB"

note "a damaged node beyond the new end: refused, fsck named, the size kept"
leaf=$("$BFS" dump-btree --nodes -b dirents img |
	awk '/node level 0/ { for (i = 1; i < NF; i++) if ($i == "offset" && $(i + 1) > 104857600) { print $(i + 1); exit } }')
[ -n "$leaf" ] || fail "no dirents leaf beyond 100 MiB"
cp img bad.img
expect_ok "$BFS" debug -w -R "corrupt $leaf 200 4" bad.img
expect_rc 1 "$BFS" resize bad.img "${target}M"
contains err "run 'bfs fsck'"
contains err "keeps its size"
[ "$(stat -c %s bad.img)" -eq $((256 * 1024 * 1024)) ] || fail "the damaged image was cut"
rm bad.img

note "shrink to ${target} MiB, just above the used size"
expect_ok "$BFS" resize img "${target}M"
contains out "btree nodes"
contains out "Moved "
contains out "to $target MiB"
[ "$(stat -c %s img)" -eq $((target * 1024 * 1024)) ] || fail "image not cut"
expect_ok "$BFS" show-super --json --all img
cp out j
[ "$(json_get j copies.2.offset)" -eq $((target * 1024 * 1024 - 65536)) ] ||
	fail "the end backup is not at the new end"
for i in 0 1 2; do [ "$(json_get j copy_status.$i.valid)" = true ] || fail "copy $i invalid"; done
expect_ok "$BFS" fsck -fn img
contains out "clean"
lacks err "outside the device"
expect_ok "$BFS" resize --dry-run img "${target}M"
contains out "nothing to do"
expect_ok "$FSIMAGE" manifest img
cmp -s manifest.before out || { diff manifest.before out | head; fail "files changed by the shrink"; }

# a block device keeps its size: grow the filesystem to it, use the top, shrink back
if [ "$(id -u)" = 0 ] && command -v losetup >/dev/null && [ -e /dev/loop-control ] &&
	truncate -s 160M img && loop=$(losetup -f --show img 2>/dev/null); then
	note "block device: grow to 160 MiB, data written at the top and deleted, shrink back to ${target} MiB"
	trap 'losetup -d "$loop" 2>/dev/null' EXIT
	"$BFS" resize "$loop" > blk.out 2>&1 &&
		head -c 30000000 /dev/urandom > top &&
		"$BFS" debug -w -R "write top /top" "$loop" >> blk.out 2>&1 &&
		"$BFS" debug -w -R "rm /top" "$loop" >> blk.out 2>&1 &&
		"$BFS" resize "$loop" "${target}M" >> blk.out 2>&1 &&
		"$BFS" fsck -fn "$loop" >> blk.out 2>&1 &&
		"$FSIMAGE" manifest "$loop" > manifest.blk 2>>blk.out
	rc=$?
	losetup -d "$loop"
	trap - EXIT
	[ $rc -eq 0 ] || { cat blk.out; fail "grow and shrink of the block device failed"; }
	contains blk.out "to $target MiB"
	contains blk.out "clean"
	cmp -s manifest.before manifest.blk || fail "files changed by the block device resizes"
	[ "$(stat -c %s img)" -eq $((160 * 1024 * 1024)) ] || fail "the backing file changed size"
	truncate -s "${target}M" img
else
	echo "no loop devices: block device shrink not tested"
fi

# the tree read back, by the debug shell and (where FUSE works) through a mount
hashes() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum); }
hashes before > h.before
expect_ok "$BFS" debug -R "rdump / after" img
hashes after > h.after
cmp -s h.before h.after || fail "rdump after the shrink differs"
if [ "$(id -u)" = 0 ] && [ -c /dev/fuse ] && command -v fusermount3 >/dev/null; then
	note "mount the shrunk filesystem and read every file"
	mkdir mnt
	trap 'grep -q " $PWD/mnt " /proc/mounts && umount -l "$PWD/mnt"' EXIT
	expect_ok "$BFS" mount -o ro img mnt
	hashes mnt > h.mnt 2>mnt.err
	umount mnt || fusermount3 -u mnt
	cmp -s h.before h.mnt || { cat mnt.err; fail "files read through the mount differ"; }
else
	echo "no FUSE here: the mount is not tested"
fi
echo ok
