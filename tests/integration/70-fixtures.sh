# The fsck fixture corpus (fixtures/f_*): each image, fsck -n (which must not
# change a byte), then fsck -y twice; output and exit status compared with
# expect.n, expect.1 and expect.2 (e2fsprogs' f_ tests).  A fixture's env
# file (VAR=value lines) is fsck's environment: BFS_FAULT_READ makes reads
# fail with EIO (doc/testing.md).
. "$(dirname "$0")/lib.sh"
command -v zstd >/dev/null || skip "zstd not installed"
n=0
for dir in "$REPO"/fixtures/f_*/; do
	f=$(basename "$dir")
	zstd -q -d -f "$dir/image.zst" -o test.img || fail "$f: cannot decompress"
	cp test.img before.img
	for pass in n 1 2; do
		mode=-y
		[ $pass = n ] && mode=-n
		set +e
		# shellcheck disable=SC2046 # args: extra fsck options, one word each; env: VAR=value
		env $(cat "$dir/env" 2>/dev/null) \
			"$BFS" fsck $mode $(cat "$dir/args" 2>/dev/null) test.img > raw 2>&1
		rc=$?
		set -e
		{ cat raw; echo "Exit status is $rc"; } > got.$pass
		if ! cmp -s got.$pass "$dir/expect.$pass"; then
			echo "$f ($(cat "$dir/name")), pass $pass:"
			diff -u "$dir/expect.$pass" got.$pass
			fail "$f: fsck output differs from expect.$pass"
		fi
		if [ $pass = n ]; then
			cmp -s before.img test.img || fail "$f: fsck -n changed the image"
		fi
	done
	# every problem code a check or a repair of this image reports (coverage below)
	for mode in -n -y; do
		cp before.img json.img
		# shellcheck disable=SC2046
		env $(cat "$dir/env" 2>/dev/null) \
			"$BFS" fsck $mode --json $(cat "$dir/args" 2>/dev/null) json.img 2>/dev/null |
			sed -n 's/^ *"code": "\([A-Z0-9_]*\)",*$/\1/p' >> codes.seen || true
	done
	n=$((n + 1))
done
[ $n -gt 0 ] || fail "no fixtures found"
echo "$n fixtures ok"

# Every problem code is triggered by a fixture or by a unit test naming it
# (PR_CODE in tests/unit), or is listed here with the reason neither can.
untestable="
BTREE_DAMAGED		a rebuild that leaves damage behind is a bug; nothing makes one on purpose
BTREE_UNREADABLE	a walk error other than damage (ENOMEM) cannot be forced from an image
BTREE_PTR_SHARED	the walk first finds the stale seq or range such a pointer must have (f_btree_ptr_shared)
BTREE_REPLAY_BLOCKED	the walk reports the damaged node replay ran into by its own code first
BTREE_ROOT_BAD		a root pointer lives in the checksummed clean section or journal: only a bug or forgery makes a bad one
JOURNAL_UNREPLAYABLE	the fallback after a declined journal salvage that still fails: no image known makes it
"
"$BFS" fsck --list-problems | cut -f1 | sort -u > codes.all
sort -u codes.seen > codes.fixtures
missing=
for code in $(comm -23 codes.all codes.fixtures); do
	grep -qw "PR_$code" "$REPO"/tests/unit/*.c && continue
	printf '%s\n' "$untestable" | grep -q "^$code[[:space:]]" && continue
	missing="$missing $code"
done
[ -z "$missing" ] || fail "problem codes no fixture or unit test triggers:$missing"
echo "problem codes: $(wc -l < codes.fixtures) from fixtures, the rest from unit tests or listed"
