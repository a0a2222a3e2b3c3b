# bfs fsck as fsck(8), systemd-fsck and an admin at the keyboard drive it:
# SIGINT/SIGTERM cancel with status 32 (-n writes nothing; otherwise no
# repair starts after the signal and the next run finishes the job), ^C at
# the prompt, every fixture's --json exit_code is the process's, operational
# errors name the device and exit 8, -p prints
# one line on a clean filesystem, and fsck -A / -AR / -N / -t through a
# scratch fstab (FSTAB_FILE) with image paths, UUID= and LABEL= on a loop
# device, exit codes ORed by fsck(8), and systemd-fsck on a loop device.
. "$(dirname "$0")/lib.sh"
command -v zstd >/dev/null || skip "zstd not installed"
command -v python3 >/dev/null || skip "python3 is needed (pty, signals, JSON)"
export BFS_NO_PROGRESS=1
fixture() {	# fixture NAME IMG: a copy of the damaged image fixtures/NAME
	zstd -q -d -f "$REPO/fixtures/$1/image.zst" -o "$2" || fail "cannot decompress $1"
}

# cancel.py PASS SIG CMD...: runs CMD, its word FD replaced by a pipe that
# gets the -C lines; at the first line inside the first quarter of pass
# PASS it stops CMD, sends SIG and lets it go on, so the signal lands in
# the middle of that pass however loaded the machine; exits as CMD
cat >cancel.py <<'PY'
import os, signal, subprocess, sys
want, sig, cmd = int(sys.argv[1]), getattr(signal, sys.argv[2]), sys.argv[3:]
r, w = os.pipe()
p = subprocess.Popen([str(w) if a == "FD" else a for a in cmd], pass_fds=(w,))
os.close(w)
sent = False
with os.fdopen(r) as lines:
    for line in lines:
        pas, cur, mx = map(int, line.split()[:3])
        if not sent and pas == want and 0 < cur < mx // 4:
            p.send_signal(signal.SIGSTOP)
            p.send_signal(sig)
            p.send_signal(signal.SIGCONT)
            sent = True
rc = p.wait()
if not sent:
    sys.exit("never saw pass %d under way" % want)
sys.exit(rc)
PY

# the interactive prompt and the bar on a pseudo-terminal: see onpty.py
onpty() { python3 "$REPO/tests/integration/onpty.py" "$@"; }

note "SIGINT and SIGTERM during -n: status 32, nothing written"
expect_ok "$BFS" format -q --size 256M tree.img
expect_ok "$TOOLS/bfs-mktree" tree.img 20000
sum=$(md5sum <tree.img)
expect_rc 32 python3 cancel.py 4 SIGINT "$BFS" fsck -fn -C FD tree.img
contains out "tree.img: check cancelled in pass 4 (directories and inodes); nothing was written"
lacks out "clean, 0 problems"
[ "$(md5sum <tree.img)" = "$sum" ] || fail "a cancelled fsck -n changed the image"
expect_rc 32 python3 cancel.py 3 SIGTERM "$BFS" fsck -fn --json -C FD tree.img
python3 - out <<'PY' || fail "JSON of a cancelled check: $(cat out)"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["exit_code"] == 32 and d["result"] == "canceled", d
assert [p["ran"] for p in d["passes"]] == [True, True, True, False], d["passes"]
PY

note "SIGINT during -y: the running pass ends, no later one starts, the filesystem stays sound"
expect_rc 32 python3 cancel.py 3 SIGINT "$BFS" fsck -fy -C FD tree.img
contains out "tree.img: check cancelled after pass 3 (btrees): 0 problems found, 0 fixed; run fsck again"
expect_ok "$BFS" fsck -fn tree.img

note "^C at the interactive prompt: status 32, the problem is left for the next run"
fixture f_fs_dir_unattached d.img
onpty "^C" "$BFS" fsck d.img
rc=$?
[ $rc -eq 32 ] || { cat pty.out; fail "^C at the prompt: exit $rc, expected 32"; }
grep -q "d.img: check cancelled after pass 4" pty.out || { cat pty.out; fail "no cancel summary"; }
[ "$(grep -c '\[y/n/a\]' pty.out)" -eq 1 ] || { cat pty.out; fail "asked again after ^C"; }
grep -q "d.img: Connect it to /lost+found? no (cancelled)" pty.out ||
	{ cat pty.out; fail "a later problem not answered no"; }
expect_rc 4 "$BFS" fsck -n d.img
contains out "d.img: 2 problems found, 2 left unfixed"
onpty "y,^C" "$BFS" fsck d.img
rc=$?
[ $rc -eq 32 ] || { cat pty.out; fail "y then ^C: exit $rc, expected 32"; }
grep -q "d.img: check cancelled after pass 4 (directories and inodes): 2 problems found, 1 fixed" \
	pty.out || { cat pty.out; fail "the repair before ^C"; }
expect_rc 1 "$BFS" fsck -y d.img
expect_ok "$BFS" fsck -n d.img

note "every fixture: the --json exit_code and result are the process's, each problem complete"
# -n on every fixture, -y on one of each kind; one python run checks them all
: >runs
for d in "$REPO"/fixtures/f_*/; do
	f=$(basename "$d")
	modes=-n
	case $f in
	f_sb_primary_csum|f_sb_all_bad|f_journal_stale|f_btree_leaf_csum|f_fs_nlink_wrong|\
	f_fs_file_unattached|f_fs_data_csum) modes="-n -y" ;;
	esac
	for mode in $modes; do
		fixture "$f" j.img
		# shellcheck disable=SC2046 # args: extra fsck options, one word each
		"$BFS" fsck "$mode" --json $(cat "$d/args" 2>/dev/null) j.img >"$f$mode.json" 2>/dev/null
		echo "$f$mode.json $?" >>runs
	done
done
[ "$(wc -l <runs)" -gt 70 ] || fail "only $(wc -l <runs) fixture runs"
python3 - runs <<'PY' || fail "a --json summary disagrees with its run"
import json, sys
names = {0: "clean", 1: "corrected", 4: "uncorrected", 8: "error", 32: "canceled"}
for line in open(sys.argv[1]):
    path, rc = line.split()
    d, rc = json.load(open(path)), int(rc)
    assert d["exit_code"] == rc and d["result"] == names[rc], (path, rc, d["exit_code"], d["result"])
    assert d["counts"]["problems"] == len(d["problems"]), (path, d["counts"])
    assert rc in (0, 8) or d["problems"], (path, "no problem listed")
    for p in d["problems"]:
        assert p["code"] and isinstance(p["fixed"], bool) and "location" in p, (path, p)
        assert not (p["fixed"] and d["mode"] == "check"), (path, p)
PY

note "operational errors: status 8, the device named; a truncated image: 4"
mkdir dir.d
mkfifo fifo 2>/dev/null || : >fifo
: >empty.img
for dev in dir.d fifo empty.img /dev/null no-such.img; do
	expect_rc 8 "$BFS" fsck -n --json "$dev"
	grep -qE "^(bfs fsck: )?$dev: " err || fail "$dev: $(cat err)"
	[ "$(json_get out exit_code)" = 8 ] || fail "$dev: json exit code"
done
contains err "no-such.img: no such file or device"
expect_rc 8 "$BFS" fsck -n PARTUUID=64268449-8e54-ee4d-86aa-ca17c8128a6a
contains err "bfs fsck: PARTUUID=64268449-8e54-ee4d-86aa-ca17c8128a6a: no such partition (fsck(8)"
expect_rc 8 "$BFS" fsck -n dir.d
contains err "dir.d: is a directory, not a device or an image file"
expect_ok "$BFS" format -q --size 64M trunc.img
truncate -s 32M trunc.img
expect_rc 4 "$BFS" fsck -y --json trunc.img
[ "$(json_get out problems.0.code)" = SB_NONE_VALID ] || fail "truncated: $(cat out)"
contains err "trunc.img: cannot find a valid superblock: dev_size 67108864 is larger than the device"

note "usage errors: 16 (fsck(8) keeps -T, -l, -M, -N, -R, -A for itself)"
ln -s "$BFS" fsck.bcowfs
for args in "-Z clean.img" "-T clean.img" "-M clean.img" "-p -y clean.img" "-a -n clean.img" \
	"-n clean.img clean.img" "-n"; do
	# shellcheck disable=SC2086 # one word each
	expect_rc 16 ./fsck.bcowfs $args
	contains err "usage:"
done
expect_ok ./fsck.bcowfs -V
contains out "fsck.bcowfs (bfs "

note "-p on a clean filesystem: one summary line, nothing else"
expect_ok "$BFS" format -q --size 64M clean.img
expect_ok "$BFS" fsck -p clean.img
[ "$(cat out)" = "clean.img: clean, 0 problems found, 0 fixed" ] || fail "preen said: $(cat out)"
[ ! -s err ] || fail "preen wrote to stderr: $(cat err)"

command -v fsck >/dev/null && fsck --version 2>/dev/null | grep -q util-linux ||
	{ echo "no util-linux fsck(8): fsck -A skipped"; echo ok; exit 0; }
note "fsck(8) -A through FSTAB_FILE: image paths, -N, -T, -t, exit codes ORed"
mkdir -p sbin m1 m2 m3
ln -sf "$BFS" sbin/fsck.bcowfs
PATH="$PWD/sbin:$PATH"
fixture f_fs_nlink_wrong nl.img		# preen fixes it: 1
fixture f_fs_file_unattached un.img	# preen may not: 4
cat >fstab <<EOF
# a scratch fstab: images by path, as a VM image store might list them
$PWD/clean.img	$PWD/m1	bcowfs	defaults	0 2
$PWD/nl.img	$PWD/m2	bcowfs	defaults	0 2
$PWD/un.img	$PWD/m3	bcowfs	defaults	0 2
$PWD/no-check.img	$PWD/m3	bcowfs	defaults	0 0
EOF
export FSTAB_FILE="$PWD/fstab"
sums=$(md5sum nl.img un.img)
expect_ok fsck -A -N
contains out "fsck.bcowfs $PWD/clean.img"
contains out "fsck.bcowfs $PWD/un.img"
lacks out "no-check.img"
[ "$(md5sum nl.img un.img)" = "$sums" ] || fail "fsck -A -N ran something"
expect_rc 4 fsck -A -n -T
lacks out "fsck from util-linux"
contains out "$PWD/clean.img: clean, 0 problems found, 0 fixed"
contains out "$PWD/nl.img: 1 problem found, 1 left unfixed"
contains out "$PWD/un.img: inode is in no directory"
# 1 from nl.img, 4 from un.img: fsck(8) ORs them
expect_rc 5 fsck -A -a -T -t bcowfs
contains out "$PWD/nl.img: Fix it: fixed (preen)"
contains out "$PWD/un.img: UNEXPECTED INCONSISTENCY; RUN fsck MANUALLY (without -a or -p)"
expect_rc 4 fsck -A -a -T
expect_rc 16 fsck -A -n -T -t bcowfs -- --no-such-option
contains err "unrecognized option"

note "fsck(8) -AR skips the root filesystem"
fixture f_fs_nlink_wrong root.img
printf '%s\t/\tbcowfs\tdefaults\t0 1\n%s\t%s\tbcowfs\tdefaults\t0 2\n' \
	"$PWD/root.img" "$PWD/clean.img" "$PWD/m1" >fstab
expect_ok fsck -AR -n -T
lacks out "root.img"
contains out "$PWD/clean.img: clean"
expect_rc 4 fsck -A -n -T
contains out "$PWD/root.img: 1 problem found"

[ "$(id -u)" -eq 0 ] && command -v losetup >/dev/null && [ -e /dev/loop-control ] ||
	{ echo "not root or no loop devices: UUID=/LABEL= and systemd-fsck skipped"; echo ok; exit 0; }
note "fsck(8) with UUID= and LABEL= of a loop device"
uuid=6b1f6a3e-6f2a-4d7e-9b1c-$(printf '%012x' $(($$ + 7)))
expect_ok "$BFS" format -q --size 64M -L "f8$$" --uuid "$uuid" loop.img
loop=$(losetup -f --show loop.img) || skip "losetup failed"
loop2=
trap 'losetup -d "$loop"; [ -z "$loop2" ] || losetup -d "$loop2"' EXIT
printf 'UUID=%s\t%s\tbcowfs\tdefaults\t0 2\nLABEL=f8%s\t%s\tbcowfs\tdefaults\t0 2\n' \
	"$uuid" "$PWD/m1" $$ "$PWD/m2" >fstab
expect_ok fsck -A -n -T
[ "$(grep -c "^$loop: clean, 0 problems found" out)" -eq 2 ] || { cat out; fail "UUID=/LABEL= entries"; }
# on fsck(8)'s own command line it is libblkid that resolves the tag, and
# it knows bcowfs only through the udev rule's /dev/disk/by-* links
if [ -e "/dev/disk/by-uuid/$uuid" ]; then
	expect_ok fsck -T -n "UUID=$uuid"
	contains out "$loop: clean"
fi

note "systemd-fsck: fsck -a -T -l -M through fsck(8), on a loop device"
sd=/lib/systemd/systemd-fsck
[ -x "$sd" ] || sd=/usr/lib/systemd/systemd-fsck
if [ -x "$sd" ]; then
	printf '%s\t%s\tbcowfs\tdefaults\t0 2\n' "$loop" "$PWD/m1" >fstab
	expect_ok "$sd" "$loop"
	contains out "$loop: clean, 0 problems found"
	loop2=$(losetup -f --show un.img) || fail "losetup failed"
	printf '%s\t%s\tbcowfs\tdefaults\t0 2\n' "$loop2" "$PWD/m1" >fstab
	expect_rc 1 "$sd" "$loop2"
	contains out "$loop2: UNEXPECTED INCONSISTENCY; RUN fsck MANUALLY"
	contains err "exit status 4"
else
	echo "no systemd-fsck: skipped"
fi
echo ok
