#!/bin/sh
# Build and run third-party filesystem test suites against a bfs mount (and,
# with PEER=1, the same runs on ext4 on a loop device, to tell what FUSE or
# the kernel imposes from what bfs does).  Not run by make check: the
# sources come from the network.  See doc/testing.md, "Third-party suites".
#
#   sh tests/tools/run-third-party.sh BFS SRC WORK
#
# BFS   the bfs binary (build/bfs)
# SRC   a directory with the suites' sources, unpacked as
#         SRC/pjdfstest  (github.com/pjd/pjdfstest)
#         SRC/xfstests   (github.com/kdave/xfstests: ltp/fsx.c, ltp/fsstress.c)
#       e.g. git --git-dir=MIRROR archive HEAD | tar -x -C SRC/pjdfstest
# WORK  scratch directory (images, mounts, logs); must not exist or be empty
#
# Environment: SUITES="pjd fsx fsstress crash" (the default: all),
# OPTS="allow_other" (mount options; add ,writeback for the write-back
# cache), PEER=1 (ext4 too), SIZE=3G.  Needs root, FUSE, gcc, perl's
# prove, and xfslibs-dev (fsstress includes <xfs/xfs.h>).
set -u
[ $# -eq 3 ] || { sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
BFS=$(realpath "$1")
SRC=$(realpath "$2")
WORK=$3
SUITES=${SUITES:-pjd fsx fsstress crash}
OPTS=${OPTS:-allow_other}
SIZE=${SIZE:-3G}
[ "$(id -u)" -eq 0 ] || { echo "needs root"; exit 77; }
mkdir -p "$WORK" && WORK=$(realpath "$WORK")
chmod 0755 "$WORK"
BIN=$WORK/bin
LOG=$WORK/logs
mkdir -p "$BIN" "$LOG" "$WORK/bfs" "$WORK/ext4"
failed=0
LOOP=

say() { echo "== $*"; }
bad() { echo "FAIL: $*"; failed=$((failed + 1)); }

cleanup() {
	for m in "$WORK/bfs" "$WORK/ext4"; do
		grep -q " $m " /proc/mounts && umount -l "$m"
	done
	[ -z "$LOOP" ] || losetup -d "$LOOP"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

# the image's lock is free: the mount process has closed it
wait_closed() {
	i=0
	until flock -n -x "$1" true 2>/dev/null; do
		sleep 0.1
		i=$((i + 1))
		[ $i -lt 600 ] || { bad "$1 still open 60 s after unmount"; return 1; }
	done
}

# the mount daemon: the process holding the image open
daemon_of() {
	for fd in /proc/[0-9]*/fd/*; do
		if [ "$(readlink "$fd" 2>/dev/null)" = "$1" ]; then
			p=${fd#/proc/}
			echo "${p%%/*}"
			return
		fi
	done
}

build() {
	say "building the suites in $BIN"
	# pjdfstest's configure is autotools; its config.h needs only these on Linux
	cat > "$BIN/config.h" <<'EOF'
#define HAVE_SYS_SYSMACROS_H 1
#define HAVE_FACCESSAT 1
#define HAVE_FCHMODAT 1
#define HAVE_FCHOWNAT 1
#define HAVE_FSTATAT 1
#define HAVE_LINKAT 1
#define HAVE_MKDIRAT 1
#define HAVE_MKFIFOAT 1
#define HAVE_MKNODAT 1
#define HAVE_OPENAT 1
#define HAVE_POSIX_FALLOCATE 1
#define HAVE_READLINKAT 1
#define HAVE_RENAMEAT 1
#define HAVE_SYMLINKAT 1
#define HAVE_UNLINKAT 1
#define HAVE_UTIMENSAT 1
#define HAVE_STRUCT_STAT_ST_ATIM 1
#define HAVE_STRUCT_STAT_ST_CTIM 1
#define HAVE_STRUCT_STAT_ST_MTIM 1
EOF
	# the tests find the binary as tests/../pjdfstest: a copy of the tree
	rm -rf "$BIN/pjdfstest"
	mkdir -p "$BIN/pjdfstest"
	cp -r "$SRC/pjdfstest/tests" "$BIN/pjdfstest/"
	gcc -O2 -D_GNU_SOURCE -I"$BIN" -o "$BIN/pjdfstest/pjdfstest" "$SRC/pjdfstest/pjdfstest.c" ||
		{ bad "pjdfstest does not build"; return 1; }
	# xfstests' config.h is autotools too; fsx and fsstress need these
	mkdir -p "$BIN/xfs"
	cat > "$BIN/xfs/config.h" <<'EOF'
#define HAVE_SYS_TYPES_H 1
#define HAVE_SYS_STAT_H 1
#define HAVE_SYS_STATVFS_H 1
#define HAVE_SYS_TIME_H 1
#define HAVE_SYS_IOCTL_H 1
#define HAVE_SYS_WAIT_H 1
#define HAVE_MALLOC_H 1
#define HAVE_DIRENT_H 1
#define HAVE_STDLIB_H 1
#define HAVE_UNISTD_H 1
#define HAVE_ERRNO_H 1
#define HAVE_STRING_H 1
#define HAVE_SYS_FCNTL_H 1
#define HAVE_TIME_H 1
#define HAVE_SYS_PARAM_H 1
#define HAVE_LIBGEN_H 1
#define HAVE_ASSERT_H 1
#define HAVE_STRINGS_H 1
#define HAVE_LINUX_FALLOC_H 1
#define HAVE_SYS_MMAN_H 1
#define HAVE_ERR_H 1
#define HAVE_COPY_FILE_RANGE 1
#define HAVE_SYS_PRCTL_H 1
#define HAVE_XFS_XFS_H 1
#define HAVE_SYS_XATTR_H 1
#define HAVE_RENAMEAT2 1
#include <getopt.h>
#include <time.h>
EOF
	X="-O2 -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 -I$BIN/xfs -I$SRC/xfstests/src -I$SRC/xfstests/include"
	gcc $X -o "$BIN/fsx" "$SRC/xfstests/ltp/fsx.c" || { bad "fsx does not build"; return 1; }
	gcc $X -o "$BIN/fsstress" "$SRC/xfstests/ltp/fsstress.c" -lm ||
		{ bad "fsstress does not build (xfslibs-dev installed?)"; return 1; }
}

mount_bfs() {
	"$BFS" format -q --size "$SIZE" "$WORK/bfs.img" || return 1
	"$BFS" mount -o "$OPTS" "$WORK/bfs.img" "$WORK/bfs"
}

umount_bfs_fsck() {
	umount "$WORK/bfs" && wait_closed "$WORK/bfs.img" || return 1
	"$BFS" fsck -fnc "$WORK/bfs.img" > "$LOG/fsck-$1.log" 2>&1 || bad "fsck -fnc after $1: $(tail -n 1 "$LOG/fsck-$1.log")"
}

mount_ext4() {
	[ "${PEER:-0}" = 1 ] || return 1
	truncate -s "$SIZE" "$WORK/ext4.img" && mkfs.ext4 -q -F "$WORK/ext4.img" &&
		LOOP=$(losetup -f --show "$WORK/ext4.img") && mount "$LOOP" "$WORK/ext4"
}

umount_ext4() {
	umount "$WORK/ext4" && losetup -d "$LOOP"
	LOOP=
}

run_pjd() {
	# as root in the mounted directory; prove's summary is the result
	for fs in bfs ext4; do
		[ "$fs" = bfs ] || mount_ext4 || continue
		say "pjdfstest on $fs"
		(cd "$WORK/$fs" && prove -r "$BIN/pjdfstest/tests") > "$LOG/pjd-$fs.log" 2>&1 ||
			bad "pjdfstest on $fs: $(grep -c 'Failed' "$LOG/pjd-$fs.log") failed files"
		grep -E "^(Files=|Result)" "$LOG/pjd-$fs.log"
		[ "$fs" = bfs ] || umount_ext4
	done
}

# fsx NAME ARGS...: one run on the bfs mount
fsx() {
	name=$1
	shift
	mkdir -p "$WORK/bfs/fsx"
	(cd "$WORK/bfs/fsx" && "$BIN/fsx" -q -P "$LOG" "$@" "$name") > "$LOG/fsx-$name.log" 2>&1 ||
		bad "fsx $name ($*): $(tail -n 3 "$LOG/fsx-$name.log" | tr '\n' ' ')"
	echo "fsx $name $*: $(tail -n 1 "$LOG/fsx-$name.log")"
}

run_fsx() {
	say "fsx"
	fsx buffered -N 100000 -l 8000000 -S 1
	fsx default -N 100000 -S 2
	fsx reopen -N 100000 -l 8000000 -S 3 -c 200 -f
	fsx direct -N 100000 -l 8000000 -S 4 -Z -R -W -r 4096 -w 4096 -t 4096
	fsx direct512 -N 100000 -S 5 -Z -R -W -r 512 -w 512 -t 512
	fsx bigops -N 5000 -o 1048576 -l 100000000 -S 6
}

run_fsstress() {
	say "fsstress -p 4 -n 10000"
	"$BIN/fsstress" -p 4 -n 10000 -s 1 -d "$WORK/bfs/fss" > "$LOG/fsstress.log" 2>&1 ||
		bad "fsstress: $(tail -n 3 "$LOG/fsstress.log")"
}

# kill -9 of the mount daemon in the middle of fsstress: fsck -n on the
# crashed image (in-memory replay), a mount (replay), fsck -n again
run_crash() {
	for round in 1 2 3; do
		say "crash round $round: kill -9 mid-fsstress"
		"$BFS" mount -o "$OPTS" "$WORK/bfs.img" "$WORK/bfs" || { bad "mount"; return; }
		pid=$(daemon_of "$WORK/bfs.img")
		# no sync(2): it waits for every filesystem on the machine, and the
		# wait after the kill would too
		"$BIN/fsstress" -p 4 -n 1000000 -s $((100 + round)) -f sync=0 \
			-d "$WORK/bfs/crash$round" > "$LOG/crash$round.log" 2>&1 &
		fss=$!
		sleep $((3 + round * 2))
		kill -9 "$pid"
		wait "$fss"
		umount -l "$WORK/bfs"
		wait_closed "$WORK/bfs.img" || return
		"$BFS" fsck -fn "$WORK/bfs.img" > "$LOG/crash$round-fsck.log" 2>&1 ||
			bad "fsck -fn of the crashed image (round $round): $(tail -n 1 "$LOG/crash$round-fsck.log")"
		"$BFS" mount -o "$OPTS" "$WORK/bfs.img" "$WORK/bfs" || { bad "remount (round $round)"; return; }
		umount_bfs_fsck "crash$round"
	done
}

build || exit 1
mount_bfs || { bad "cannot format or mount $WORK/bfs.img"; exit 1; }
for s in $SUITES; do
	case $s in
	pjd)      run_pjd ;;
	fsx)      run_fsx ;;
	fsstress) run_fsstress ;;
	crash)    ;;
	*)        bad "unknown suite $s" ;;
	esac
done
umount_bfs_fsck suites
case " $SUITES " in *" crash "*) run_crash ;; esac
echo "third-party: $failed failure(s); logs in $LOG"
[ $failed -eq 0 ]
