# The fsck fixture corpus (fixtures/f_*): each image, fsck -n (which must not
# change a byte), then fsck -y twice; output and exit status compared with
# expect.n, expect.1 and expect.2 (e2fsprogs' f_ tests).
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
		# shellcheck disable=SC2046 # args: extra fsck options, one word each
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
	n=$((n + 1))
done
[ $n -gt 0 ] || fail "no fixtures found"
echo "$n fixtures ok"
