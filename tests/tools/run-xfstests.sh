#!/bin/sh
# Run xfstests' own harness (./check) against bfs mounts, the way an admin
# or reviewer would: FSTYP=fuse, so the harness mounts with
# "mount -t fuse.SUBTYPE IMAGE DIR" through a mount helper, bfs's
# mount-helper command (what /sbin/mount.fuse.bcowfs runs).  Not run by make check: xfstests comes from the
# network.  See doc/testing.md, "xfstests".
#
#   sh tests/tools/run-xfstests.sh BFS XFSTESTS WORK [CHECK-ARGS...]
#
# BFS       the bfs binary (build/bfs)
# XFSTESTS  a built xfstests tree (github.com/kdave/xfstests; make in it)
# WORK      scratch directory (images, mount points, results)
# CHECK-ARGS  passed to ./check; default "-g quick"
#
# Environment: OPTS="allow_other,default_permissions,dev,suid" (mount
# options; mount(8) drops dev and suid, its defaults, so the mounts are
# nodev,nosuid all the same: see doc/testing.md),
# SIZE=2G (each image), EXCLUDE=FILE (an extra ./check -E file; the
# script's own list, tests/tools/xfstests-exclude, is always used;
# EXCLUDE=tests/tools/xfstests-exclude-slow leaves out the tests of
# -g auto that take over 5 minutes each on a small machine).
# Needs root, FUSE, and /sbin writable (for a mount helper of its own).  After
# the run both images are checked with "bfs fsck -fn": xfstests has no
# fsck for FSTYP=fuse.
set -u
[ $# -ge 3 ] || { sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
BFS=$(realpath "$1")
XFS=$(realpath "$2")
WORK=$3
shift 3
[ $# -gt 0 ] || set -- -g quick
OPTS=${OPTS:-allow_other,default_permissions,dev,suid}
SIZE=${SIZE:-2G}
HERE=$(dirname "$(realpath "$0")")
[ "$(id -u)" -eq 0 ] || { echo "needs root"; exit 77; }
[ -x "$XFS/check" ] && [ -x "$XFS/ltp/fsx" ] || { echo "$XFS: not a built xfstests tree"; exit 2; }
mkdir -p "$WORK" && WORK=$(realpath "$WORK")
chmod 0755 "$WORK"
# The harness mounts with "mount -t fuse$FUSE_SUBTYP", which runs
# /sbin/mount.fuse$FUSE_SUBTYP.  A subtype of its own (a two-line helper
# that runs "bfs mount-helper", the code behind mount.fuse.bcowfs) keeps
# the run from using, or losing in the middle, an installed
# /sbin/mount.fuse.bcowfs that tests or other runs add and remove.
SUBTYPE=bcowfs-xfstests-$$
HELPER=/sbin/mount.fuse.$SUBTYPE

cleanup() {
	for m in "$WORK/test" "$WORK/scratch"; do
		grep -q " $m " /proc/mounts && umount "$m"
	done
	rm -f "$HELPER"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

printf '#!/bin/sh\nexec "%s" mount-helper "$@"\n' "$BFS" > "$HELPER" || exit 1
chmod 755 "$HELPER"

# the harness's users (README: fsgqa, 123456-fsgqa, fsgqa2)
id fsgqa >/dev/null 2>&1 || useradd -m fsgqa
id fsgqa2 >/dev/null 2>&1 || useradd -m fsgqa2
id 123456-fsgqa >/dev/null 2>&1 || useradd -m 123456-fsgqa 2>/dev/null

mkdir -p "$WORK/test" "$WORK/scratch" "$WORK/results"
for i in test scratch; do
	rm -f "$WORK/$i.img"
	truncate -s "$SIZE" "$WORK/$i.img"
	"$BFS" format -q "$WORK/$i.img" >/dev/null || { echo "format $i.img failed"; exit 1; }
done

cat > "$XFS/local.config" <<CFG
export FSTYP=fuse
export FUSE_SUBTYP=.$SUBTYPE
export TEST_DEV=$WORK/test.img
export TEST_DIR=$WORK/test
export SCRATCH_DEV=$WORK/scratch.img
export SCRATCH_MNT=$WORK/scratch
export RESULT_BASE=$WORK/results
export MOUNT_OPTIONS="-o $OPTS"
export TEST_FS_MOUNT_OPTS="-o $OPTS"
CFG

# The harness takes a FUSE filesystem's type to be "fuse" (the helper in
# its README.fuse sets no subtype), and refuses a TEST_DEV whose df -T type
# is anything else; bfs mounts show as "fuse.bcowfs" in /proc/mounts and df,
# as mount(8) and fstab(5) want.  A df first in PATH (check finds df with
# type -P) shows the type the harness expects; nothing else is changed.
mkdir -p "$WORK/bin"
cat > "$WORK/bin/df" <<'DF'
#!/bin/sh
exec /usr/bin/env -u PATH PATH=/usr/bin:/bin df "$@" | sed 's/ fuse\.bcowfs / fuse /'
DF
chmod 755 "$WORK/bin/df"
PATH=$WORK/bin:$PATH
export PATH

ex="-E $HERE/xfstests-exclude"
[ -z "${EXCLUDE:-}" ] || ex="$ex -E $(realpath "$EXCLUDE")"
# check's own status, not tee's
{ (cd "$XFS" && ./check $ex "$@"); echo $? > "$WORK/check.rc"; } 2>&1 | tee "$WORK/check.log"
rc=$(cat "$WORK/check.rc")
cleanup
# For FSTYP=fuse the harness "mkfs"es the scratch filesystem with
# rm -rf SCRATCH_MNT/*, which takes lost+found too; fsck rightly reports
# that (as e2fsck does), and it is the one problem not counted here.
for i in test scratch; do
	echo "== bfs fsck -fn $i.img"
	"$BFS" fsck -fn "$WORK/$i.img" > "$WORK/fsck-$i.log" 2>&1
	f=$?
	cat "$WORK/fsck-$i.log"
	[ $f -eq 0 ] && continue
	grep -v ': /lost+found is missing: \|: Create it? no$\|problems\{0,1\} found' "$WORK/fsck-$i.log" |
		grep -q . && rc=1
	grep -q ': 1 problem found' "$WORK/fsck-$i.log" || rc=1
done
exit $rc
