# fsck against seeded damage (tests/tools/damage.c, tests/damage/converge.py).
# First the damage generator itself: deterministic for a seed, every mode
# changes the image, and the targeted modes recompute checksums so that fsck
# sees the damaged field, not a checksum error.  Then a sample of the
# convergence harness: no crash, hang or sanitizer report, fsck -n never
# writes; convergence is measured and fails the test only below
# BFS_DAMAGE_MIN_CONVERGE percent (make check passes 75; see the Makefile).
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

note "the harness catches what it is there to catch"
# a bfs whose fsck -n writes, one whose fsck -y crashes, one whose fsck -y
# "repairs" by deleting a file it never names: each must be caught
cat > writes-on-n <<EOF
#!/bin/sh
if [ "\$1 \$3" = "fsck -n" ]; then
	for img; do :; done
	date +%N | dd of="\$img" bs=1 seek=100 conv=notrunc status=none
fi
exec "$BFS" "\$@"
EOF
cat > crashes-on-y <<EOF
#!/bin/sh
[ "\$1 \$3" = "fsck -y" ] && kill -SEGV \$\$
exec "$BFS" "\$@"
EOF
cat > loses-silently <<EOF
#!/bin/sh
if [ "\$1 \$3" = "fsck -y" ]; then
	"$BFS" "\$@"
	for img; do :; done
	"$BFS" debug -w -R "rm /file001" "\$img" >/dev/null
	exit 0
fi
exec "$BFS" "\$@"
EOF
chmod +x writes-on-n crashes-on-y loses-silently
for fake in writes-on-n:n-wrote crashes-on-y:crash loses-silently:unreported-loss; do
	python3 "$REPO/tests/damage/converge.py" --bfs "./${fake%%:*}" --tools "$TOOLS" \
		--case csum:journal:1 >out 2>&1
	rc=$?
	grep -q "^result: ${fake#*:} " out || { cat out; fail "${fake%%:*}: not classed ${fake#*:}"; }
	case ${fake#*:} in
	unreported-loss) [ $rc -eq 0 ] || { cat out; fail "${fake%%:*}: harness exit $rc"; } ;;
	*) [ $rc -eq 1 ] || { cat out; fail "${fake%%:*}: harness exit $rc, not 1"; } ;;
	esac
done

note "convergence sample with $CHECKED"
python3 "$REPO/tests/damage/converge.py" --bfs "$CHECKED" --tools "$TOOLS" \
	--seeds "${BFS_DAMAGE_SEEDS:-1-5}" --jobs 2 --timeout 300 --keep kept --keep-hard-only \
	--min-converge "${BFS_DAMAGE_MIN_CONVERGE:-0}" >report 2>&1
rc=$?
cat report
[ $rc -eq 0 ] || fail "convergence harness failed (exit $rc)"
grep -q '^| all | ' report || fail "no rate table"
