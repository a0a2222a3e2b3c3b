# fsck against seeded damage (tests/tools/damage.c, tests/damage/converge.py).
# First the damage generator itself: deterministic for a seed, every mode
# changes the image, and the targeted modes recompute checksums so that fsck
# sees the damaged field, not a checksum error.  Then a sample of the
# convergence harness: no crash, hang or sanitizer report, fsck -n never
# writes; convergence is measured and fails the test only below
# BFS_DAMAGE_MIN_CONVERGE percent (default 0, raised as repair lands).
# `make check` runs it with the sanitizer build (BFS_DAMAGE_BFS); `make soak`
# runs thousands of cases.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || skip "python3 not installed"
DAMAGE=$TOOLS/bfs-damage
FSIMAGE=$TOOLS/bfs-fsimage
[ -x "$DAMAGE" ] && [ -x "$FSIMAGE" ] || fail "bfs-damage / bfs-fsimage not built"
CHECKED=${BFS_DAMAGE_BFS:-$BFS}

note "the generator"
expect_ok "$BFS" format -q --size 16M --btree-node-size 4K base.img
expect_ok "$FSIMAGE" populate --seed 1 --files 60 base.img
expect_ok "$DAMAGE" --inventory base.img
for kind in node older-node journal-entry data; do
	grep -q "^$kind " out || { cat out; fail "inventory lists no $kind"; }
done
modes=$("$DAMAGE" --list)
[ "$(echo "$modes" | wc -l)" -ge 11 ] || fail "too few modes: $modes"
for m in $modes; do
	: > seen
	for s in 1 2 3 4; do
		cp base.img a.img && cp base.img b.img
		expect_ok "$DAMAGE" --seed $s "$m" a.img
		mv out out.a
		expect_ok "$DAMAGE" --seed $s "$m" b.img
		cmp -s out out.a || fail "$m seed $s: two runs say different things"
		cmp -s a.img b.img || fail "$m seed $s: two runs damage differently"
		! cmp -s a.img base.img || fail "$m seed $s: image unchanged: $(cat out)"
		[ "$(grep -c '^damage: ' out)" -eq 1 ] || fail "$m seed $s: not one line: $(cat out)"
		cat out >> seen
	done
	[ "$(sort -u seen | wc -l)" -ge 2 ] || fail "$m: seeds 1 to 4 all do the same: $(cat out)"
done
cp base.img a.img
expect_ok "$DAMAGE" --seed 9 --count 5 random a.img
[ "$(grep -c '^damage: random ' out)" -eq 5 ] || fail "--count 5 made: $(cat out)"
expect_rc 2 "$DAMAGE" nonsense a.img
expect_rc 1 "$DAMAGE" key /nonexistent.img

# with checksums recomputed fsck must see the field, not a checksum mismatch
for m in node bset key ptr extent; do
	for s in 1 2 3 4 5; do
		cp base.img a.img
		"$DAMAGE" --seed $s "$m" a.img >dmg || fail "$m seed $s: bfs-damage failed"
		"$BFS" fsck -n a.img >out 2>&1
		rc=$?
		if grep -qi 'bad checksum\|checksum mismatch' out; then
			cat dmg out
			fail "$m seed $s: checksum not recomputed"
		fi
		[ $rc -lt 8 ] || { cat dmg out; fail "$m seed $s: fsck -n exit $rc"; }
	done
done
# the random mode does not fix checksums: most damage is caught by them
n=0
for s in 1 2 3 4 5 6 7 8; do
	cp base.img a.img
	"$DAMAGE" --seed $s random a.img >/dev/null
	"$BFS" fsck -n a.img >/dev/null 2>&1 || n=$((n + 1))
done
[ $n -gt 0 ] || fail "no random damage was detected at all"

note "convergence sample with $CHECKED"
python3 "$REPO/tests/damage/converge.py" --bfs "$CHECKED" --tools "$TOOLS" \
	--seeds "${BFS_DAMAGE_SEEDS:-1-5}" --jobs 2 --timeout 300 --keep kept \
	--min-converge "${BFS_DAMAGE_MIN_CONVERGE:-0}" >report 2>&1
rc=$?
cat report
[ $rc -eq 0 ] || fail "convergence harness failed (exit $rc)"
grep -q '^| all | ' report || fail "no rate table"
