# Old images still open: every released format version in fixtures/vN_*/
# (fixtures/make-version-fixtures.sh) is read by show-super, dump-btree,
# fsck -n, debug and a read-only mount exactly as when it was made, and
# today's tools can still write to it.  An unknown incompat feature bit is
# refused by every tool; an unknown ro_compat bit opens read-only and every
# write is refused with a clear message.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount-lib.sh"
command -v zstd >/dev/null || skip "zstd not installed"
export TZ=UTC
can_mount=1
( mount_prereqs ) >/dev/null 2>&1 || can_mount=0
[ $can_mount = 0 ] || mount_prereqs

same() {	# same WHAT EXPECTED GOT
	cmp -s "$2" "$3" || { diff -u "$2" "$3" | head -40; fail "$1 differs from $2"; }
}
# the mounted tree of image $1, as expect.tree holds it
mounted_tree() {
	expect_ok "$BFS" mount -o ro "$1" mnt
	{ tree_listing mnt; (cd mnt && find . -type f | sort | xargs sha256sum); } > "$2"
	umount mnt
	wait_unlocked "$1"
}
# every output of CMD... (exit status RC) names the unknown feature
refused() {
	rc=$1; what=$2; shift 2
	expect_rc "$rc" "$@"
	cat out err > both
	contains both "$what"
}

n=0
for dir in "$REPO"/fixtures/v[0-9]*_*/; do
	f=$(basename "$dir")
	note "$f: $(cat "$dir/name")"
	zstd -q -d -f "$dir/image.zst" -o test.img || fail "$f: cannot decompress"
	expect_ok "$BFS" show-super --json test.img
	json_ok out
	[ "$(json_get out state)" = clean ] || fail "$f: show-super says $(json_get out state)"
	expect_ok "$BFS" dump-btree test.img
	same "$f: dump-btree" "$dir/expect.dump-btree" out
	expect_ok "$BFS" fsck -n test.img
	expect_ok "$BFS" debug -f "$REPO/fixtures/version-debug.cmds" test.img
	same "$f: debug" "$dir/expect.debug" out
	if [ $can_mount = 1 ]; then
		mounted_tree test.img tree
		same "$f: the mounted tree" "$dir/expect.tree" tree
	fi
	expect_ok "$BFS" debug -w -R "mkdir /new-dir" test.img
	expect_ok "$BFS" fsck -n test.img
	n=$((n + 1))
done
[ $n -gt 0 ] || fail "no format version fixtures found"

dir=$REPO/fixtures/v1_default
note "an unknown incompat feature: every tool refuses the filesystem"
zstd -q -d -f "$dir/image.zst" -o test.img
expect_ok "$BFS" debug -w -R "set-super incompat 0x8000000000000000" test.img
bad="unsupported incompat features 0x8000000000000000"
refused 1 "$bad" "$BFS" show-super test.img
refused 1 "$bad" "$BFS" dump-btree test.img
refused 8 "$bad" "$BFS" fsck -n test.img
refused 8 "$bad" "$BFS" fsck -y test.img
refused 1 "$bad" "$BFS" debug -R "ls /" test.img
[ $can_mount = 0 ] || refused 1 "$bad" "$BFS" mount -o ro test.img mnt

note "an unknown ro_compat feature: reading works, writing is refused"
zstd -q -d -f "$dir/image.zst" -o test.img
expect_ok "$BFS" debug -w -R "set-super ro_compat 0x4000000000000000" test.img
ro="unsupported ro_compat features 0x4000000000000000: read-only access only"
expect_ok "$BFS" show-super test.img
expect_ok "$BFS" dump-btree test.img
same "dump-btree with an unknown ro_compat bit" "$dir/expect.dump-btree" out
expect_ok "$BFS" fsck -n test.img
expect_ok "$BFS" debug -R "cat /a/hello" test.img
contains out hello
cp test.img before.img
refused 8 "$ro" "$BFS" fsck -y test.img
refused 1 "$ro" "$BFS" debug -w -R "mkdir /x" test.img
if [ $can_mount = 1 ]; then
	refused 1 "$ro" "$BFS" mount test.img mnt
	mounted_tree test.img tree
	same "the read-only mounted tree" "$dir/expect.tree" tree
fi
cmp -s before.img test.img || fail "a refused write changed the image"
echo "$n format version fixtures ok"
