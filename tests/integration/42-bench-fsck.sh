# bench/fsck-vs-e2fsck (issue 10 item 3) runs end to end on a small tree:
# one table row for -fn and one for -fy, every time, ratio and RSS a
# number, and no image left behind without --keep.  Speed is never asserted.
. "$(dirname "$0")/lib.sh"
command -v mkfs.ext4 >/dev/null && command -v e2fsck >/dev/null || skip "needs e2fsprogs"
[ -x /usr/bin/time ] || skip "needs GNU time (/usr/bin/time)"
# the build the harness was given, as the script names it (B=build, ...)
B=$(dirname "$BFS")
B=${B#"$REPO"/}
export B

note "usage error"
expect_rc 1 sh "$REPO/bench/fsck-vs-e2fsck" --nope
contains err "unknown option '--nope'"

note "--files 3000 --runs 1"
mkdir tmp
expect_ok sh "$REPO/bench/fsck-vs-e2fsck" --files 3000 --runs 1 --dir "$PWD/tmp"
python3 - out <<'PY' || fail "bad table: $(cat out)"
import re, sys
rows = [l for l in open(sys.argv[1]) if re.match(r"\| 3000 \|", l)]
assert [r.split("|")[2].strip() for r in rows] == ["-fn", "-fy"], rows
num = r"[0-9]+(\.[0-9]+)?"
for r in rows:
    f = [c.strip() for c in r.strip().strip("|").split("|")]
    assert re.fullmatch(num + r" \(" + num + r"\)", f[2]) and re.fullmatch(num + r" \(" + num + r"\)", f[3]), f
    assert all(re.fullmatch(num, x) for x in f[4:]) and float(f[5]) > 0 and float(f[6]) > 0, f
PY
contains out "load average before:"
contains out "load average after:"
[ -z "$(ls tmp)" ] || fail "left behind: $(ls tmp)"
echo ok
