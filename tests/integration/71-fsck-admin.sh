# bfs fsck as admins and fsck(8) run it: the device on every line, preen,
# the interactive prompt (through a pseudo-terminal), no terminal = -n,
# -V, -C progress (a bar on a terminal, lines on a descriptor; the same bar
# in format --discard), --json, --cache-size, UUID=/LABEL= devices and
# fsck -A through an fstab.
. "$(dirname "$0")/lib.sh"
command -v zstd >/dev/null || skip "zstd not installed"
command -v python3 >/dev/null || skip "python3 is needed (pty, JSON)"
unset BFS_NO_PROGRESS
fixture() {	# fixture NAME IMG: a copy of the damaged image fixtures/NAME
	zstd -q -d -f "$REPO/fixtures/$1/image.zst" -o "$2" || fail "cannot decompress $1"
}

# the interactive prompt and the bar on a pseudo-terminal: see onpty.py
onpty() { python3 "$REPO/tests/integration/onpty.py" "$@"; }

note "fsck.bcowfs -V, --version"
ln -s "$BFS" fsck.bcowfs
expect_ok ./fsck.bcowfs -V
contains out "fsck.bcowfs (bfs $(cat "$REPO/VERSION"))"
expect_ok "$BFS" fsck --version

note "every line starts with the device"
fixture f_fs_dir_unattached d.img
expect_rc 4 "$BFS" fsck -n d.img
[ -s out ] || fail "no output"
! grep -v '^d.img: ' out || fail "a line without the device"

note "preen: preen-safe problems are fixed"
fixture f_fs_nlink_wrong p.img
expect_rc 1 "$BFS" fsck -p p.img
contains out "p.img: Fix it: fixed (preen)"
expect_ok "$BFS" fsck -p p.img

note "preen: a problem that is not preen-safe stops with exit 4, not repaired"
fixture f_fs_file_unattached u.img
expect_rc 4 ./fsck.bcowfs -a u.img
contains out "u.img: inode is in no directory"
contains out "u.img: UNEXPECTED INCONSISTENCY; RUN fsck MANUALLY (without -a or -p)"
expect_rc 4 "$BFS" fsck -n u.img
contains out "u.img: inode is in no directory"

note "interactive: asked again on anything but y/n/a; a is yes to all"
cp d.img i.img
onpty "maybe,a" "$BFS" fsck i.img
rc=$?
[ $rc -eq 1 ] || { cat pty.out; fail "interactive fsck exited $rc, expected 1"; }
grep -q "please answer y (yes), n (no) or a (yes to all)" pty.out || { cat pty.out; fail "not asked again"; }
[ "$(grep -c '\[y/n/a\]' pty.out)" -eq 2 ] || { cat pty.out; fail "expected 2 prompts"; }
[ "$(grep -c '? yes (to all)' pty.out)" -eq 3 ] || { cat pty.out; fail "yes to all"; }
grep -q "i.img: 4 problems found, 4 fixed" pty.out || { cat pty.out; fail "summary"; }
expect_ok "$BFS" fsck -n i.img

note "interactive: n, then end of input answers no"
cp d.img e.img
onpty "N" "$BFS" fsck e.img
[ $? -eq 4 ] || { cat pty.out; fail "exit status"; }
grep -q "end of input" pty.out || { cat pty.out; fail "end of input"; }
grep -q "e.img: 2 problems found, 2 left unfixed" pty.out || { cat pty.out; fail "summary"; }
expect_rc 4 "$BFS" fsck -n e.img
contains out "e.img: inode is in no directory"

note "no terminal: checks only, as -n"
cp d.img t.img
sum=$(md5sum < t.img)
expect_rc 4 "$BFS" fsck t.img </dev/null
contains out "no terminal to ask on: checking only, as with -n"
[ "$(md5sum < t.img)" = "$sum" ] || fail "fsck without a terminal changed the image"

note "-C 3: 'pass cur max device' lines, per pass, ending at max"
expect_ok "$BFS" format -q --size 64M clean.img
# checks -C 3 lines of DEVICE: each pass monotone, in order, ending at its max;
# the passes seen, and how many distinct positions strictly inside each
cat >progress.py <<'PY'
import sys
dev, want, inside_min = sys.argv[2], sys.argv[3], sys.argv[4:]
seen = {}
for line in open(sys.argv[1]):
    p, cur, mx, d = line.split()
    p, cur, mx = int(p), int(cur), int(mx)
    assert d == dev and 0 <= cur <= mx and mx > 0, line
    assert cur >= seen.get(p, [(0, 0)])[-1][0], "went backwards: " + line
    assert not seen or p >= max(seen), "pass order: " + line
    seen.setdefault(p, []).append((cur, mx))
assert ",".join(map(str, sorted(seen))) == want, seen
assert all(v[-1][0] == v[-1][1] for v in seen.values()), seen
for p, n in zip(map(int, want.split(",")), inside_min):
    inside = {c for c, m in seen[p] if 0 < c < m}
    assert len(inside) >= int(n), (p, len(inside))
PY
expect_ok "$BFS" fsck -n -C 3 clean.img 3>prog
python3 progress.py prog clean.img 1,3,4 || fail "bad -C 3 lines: $(cat prog)"
# inside the passes: for every node of the btree pass (about 180 here), in
# every sweep of the filesystem pass (nine sweeps of 20000 inodes, a line
# every 1024 keys)
expect_ok "$BFS" format -q --size 256M tree.img
expect_ok "$TOOLS/bfs-mktree" tree.img 20000
expect_ok "$BFS" fsck -fn -C 3 tree.img 3>prog
python3 progress.py prog tree.img 1,3,4 0 100 10 || fail "bad -C 3 lines inside the passes: $(cat prog)"
# a reader that goes away (fsck(8) killed) stops the lines, not the check
{ "$BFS" fsck -n -C 3 clean.img 3>&1 >/dev/null; echo $? >rc; } | true
[ "$(cat rc)" -eq 0 ] || fail "fsck -C 3 into a closed pipe exited $(cat rc)"
expect_rc 16 "$BFS" fsck -n -C 9 clean.img
contains err "not open"
expect_rc 16 "$BFS" fsck -n -C x clean.img

note "-C 0: a bar on a terminal only, and not with BFS_NO_PROGRESS"
expect_ok "$BFS" fsck -n -C 0 clean.img
lacks out "|"
onpty "" "$BFS" fsck -n -C 0 clean.img || fail "fsck -C 0 on a terminal failed"
grep -q 'clean.img: pass [1-3] (.*) |[= ]*| *[0-9.]*%' pty.out || { cat -A pty.out; fail "no bar"; }
grep -q 'clean.img: clean, 0 problems found' pty.out || fail "summary"
BFS_NO_PROGRESS=1 onpty "" "$BFS" fsck -n -C 0 clean.img || fail "fsck failed"
! grep -q '|' pty.out || { cat -A pty.out; fail "a bar with BFS_NO_PROGRESS"; }
onpty "" "$BFS" fsck -n clean.img || fail "fsck failed"
! grep -q '|' pty.out || { cat -A pty.out; fail "a bar without -C"; }

note "the same progress bar: format --discard, on a terminal only"
onpty "" "$BFS" format --discard --size 8G dz.img || { cat pty.out; fail "format --discard"; }
grep -q 'dz.img: discarding |=*| 100.0%' pty.out || { cat -A pty.out; fail "no discard bar"; }
expect_ok "$BFS" format --force --discard --size 8G dz.img
lacks out "discarding"
rm -f dz.img

note "the same bar: image dump and restore on a terminal; -C FD lines instead"
onpty "" "$BFS" image dump -o clean.dump clean.img || { cat pty.out; fail "image dump on a terminal"; }
grep -q 'clean.img: dumping |=*| 100.0%' pty.out || { cat -A pty.out; fail "no dump bar"; }
onpty "" "$BFS" image restore clean.dump back.img || { cat pty.out; fail "image restore on a terminal"; }
grep -q 'back.img: restoring |=*| 100.0%' pty.out || { cat -A pty.out; fail "no restore bar"; }
onpty "" "$BFS" image dump -f -o clean.dump -C 3 clean.img 3>lines || fail "image dump -C 3"
! grep -q '|' pty.out || { cat -A pty.out; fail "a bar with -C FD"; }
tail -n 1 lines | grep -Eq '^1 ([0-9]+) \1 clean.img$' || { tail -n 2 lines; fail "no dump lines"; }
rm -f clean.dump back.img lines

note "--json: problems with codes and decisions, counts, exit code"
expect_rc 4 "$BFS" fsck -n --json d.img
json_ok out
contains err "d.img: inode is in no directory"
python3 - out <<'PY' || fail "bad JSON: $(cat out)"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["device"] == "d.img" and d["mode"] == "check", d
assert d["exit_code"] == 4 and d["result"] == "uncorrected", d
codes = [p["code"] for p in d["problems"]]
assert sorted(codes) == ["INODE_NLINK", "INODE_UNATTACHED"], codes
assert not any(p["fixed"] for p in d["problems"])
assert all(p["pass"] == 4 and "location" in p for p in d["problems"])
assert d["counts"] == {"problems": 2, "fixed": 0, "unfixed": 2, "not_recorded": 0}, d["counts"]
assert [p["name"] for p in d["passes"]] == ["superblock", "journal", "btrees", "directories and inodes"]
assert all(p["ran"] for p in d["passes"]) and d["passes"][3]["problems"] == 2
assert [p["pass"] for p in d["passes"]] == [1, 2, 3, 4], d["passes"]
PY
cp d.img j.img
expect_rc 1 "$BFS" fsck -y --json j.img
[ "$(json_get out counts.fixed)" = 4 ] || fail "json: fixed count"
[ "$(json_get out problems.0.fixed)" = true ] || fail "json: fixed"
[ "$(json_get out result)" = corrected ] || fail "json: result"
expect_ok "$BFS" fsck -n --json j.img
[ "$(json_get out result)" = clean ] || fail "json: clean"
fixture f_sb_all_bad s.img
expect_rc 4 "$BFS" fsck -n --json s.img
[ "$(json_get out problems.0.code)" = SB_NONE_VALID ] || fail "json: SB_NONE_VALID"
[ "$(json_get out passes.1.ran)" = false ] || fail "json: pass 2 (journal) did not run"
expect_rc 8 "$BFS" fsck -n --json no-such.img
[ "$(json_get out exit_code)" = 8 ] || fail "json: exit code of a missing device"
contains err "bfs fsck: no-such.img: no such file or device"

note "--json: every problem of the damaged filesystems says where it is"
for d in "$REPO"/fixtures/f_fs_*/; do
	f=$(basename "$d")
	fixture "$f" l.img
	# shellcheck disable=SC2046 # args: extra fsck options, one word each
	BFS_NO_PROGRESS=1 "$BFS" fsck -n --json $(cat "$d/args" 2>/dev/null) l.img >"$f.json" 2>/dev/null
	python3 - "$f.json" <<'PY' || fail "$f: a problem without a location: $(cat "$f.json")"
import json, sys
d = json.load(open(sys.argv[1]))
for p in d["problems"]:
    l = p["location"]
    assert l.get("inode") or l.get("pos") or l.get("path"), p
PY
done

note "--cache-size"
expect_ok "$BFS" fsck -n --cache-size 8M clean.img
expect_rc 16 "$BFS" fsck -n --cache-size 1K clean.img
expect_rc 16 "$BFS" fsck -n --cache-size lots clean.img

note "UUID= and LABEL= name a device"
expect_rc 8 "$BFS" fsck -n UUID=6b1f6a3e-6f2a-4d7e-9b1c-000000000000
contains err "no bfs filesystem has UUID=6b1f6a3e-6f2a-4d7e-9b1c-000000000000"
expect_rc 8 "$BFS" fsck -n UUID=nonsense
contains err "not a valid UUID= or LABEL="
[ "$(id -u)" -eq 0 ] && command -v losetup >/dev/null && [ -e /dev/loop-control ] ||
	{ echo "not root or no loop devices: UUID= on a device and fsck -A skipped"; echo ok; exit 0; }
uuid=6b1f6a3e-6f2a-4d7e-9b1c-$(printf '%012x' $$)
expect_ok "$BFS" format -q --size 64M -L "fsck$$" --uuid "$uuid" loop.img
loop=$(losetup -f --show loop.img) || skip "losetup failed"
trap 'losetup -d "$loop"' EXIT
expect_ok "$BFS" fsck -n "UUID=$uuid"
contains out "$loop: clean, 0 problems found"
expect_ok "$BFS" fsck -n "LABEL=\"fsck$$\""
contains out "$loop: clean"
note "fsck -A through an fstab with UUID="
mkdir -p sbin mnt
ln -sf "$BFS" sbin/fsck.bcowfs
echo "UUID=$uuid $PWD/mnt bcowfs defaults 0 2" >fstab
PATH="$PWD/sbin:$PATH" LIBMOUNT_FSTAB="$PWD/fstab" expect_ok fsck -A -n -t bcowfs
contains out "$loop: clean, 0 problems found"
echo ok
