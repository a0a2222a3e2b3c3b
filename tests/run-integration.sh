#!/bin/sh
# Run every tests/integration/[0-9]*.sh with the bfs binary as argument, each
# in its own temporary directory.  Prints one line per script and the closing
# line "N passed, N failed"; exits non-zero if any script failed.
# TESTS="20-format" limits the run to scripts whose name contains a word.
#
# BFS_TEST_JOBS scripts run at a time (default: the number of cores; 1 runs
# them all one after another), then the SERIAL ones below one at a time with
# nothing else running.  A script's lines (and the tail of its log when it
# fails) are printed whole when it ends, so scripts never interleave.

# Scripts that must run alone, each with its reason:
#   22-udev-export     installs /etc/udev/rules.d/64-bcowfs.rules, udevadm trigger
#   50-mount           creates and removes /sbin/mount.bcowfs, /sbin/mount.fuse.bcowfs
#   57-mount-options   replaces and removes the same /sbin links
#   59-mount-uring     drops the whole page cache (/proc/sys/vm/drop_caches)
#   59-mount-cycle     asserts wall times (a lock wait, a refusal within 5 s)
#   53-mount-load      fio / stress-ng load generators: meant to load the machine
SERIAL="22-udev-export 50-mount 57-mount-options 59-mount-uring 59-mount-cycle 53-mount-load"
# the longest scripts start first so that the parallel phase ends together
# (only an order: a name missing here or gone from the tree changes nothing)
LONG_FIRST="80-image 52-mount-crash-churn 52-mount-crash 71-fsck-damage 59-mount-space-soak 41-bench-fs"

# one script: run it, then print its result under the output lock
if [ "$1" = --one ]; then
	out=$2 bfs=$3 t=$4
	name=$(basename "$t" .sh)
	dir=$(mktemp -d "${TMPDIR:-/tmp}/bfs-it-$name.XXXXXX")
	start=$(date +%s)
	(cd "$dir" && BFS_NO_PROGRESS=1 sh "$t" "$bfs") >"$dir/log" 2>&1
	rc=$?
	secs=$(( $(date +%s) - start ))
	if [ $rc -eq 0 ]; then
		echo "PASS  $name (${secs}s)" >"$out/$name"
		rm -rf "$dir"
	elif [ $rc -eq 77 ]; then
		echo "SKIP  $name: $(tail -n 1 "$dir/log")" >"$out/$name"
		rm -rf "$dir"
	else
		{ echo "FAIL  $name (${secs}s), log in $dir/log:"
		  tail -n 30 "$dir/log" | sed 's/^/    /'; } >"$out/$name"
	fi
	flock "$out/lock" cat "$out/$name"
	exit 0
fi

bfs=$(realpath "$1")
root=$(cd "$(dirname "$0")/.." && pwd)
jobs=${BFS_TEST_JOBS:-$(nproc 2>/dev/null || echo 1)}
out=$(mktemp -d "${TMPDIR:-/tmp}/bfs-it-run.XXXXXX") || exit 1
trap 'rm -rf "$out"' EXIT

# the scripts TESTS names (all without it), split into the two phases
in_list() {
	case " $2 " in *" $1 "*|*" ${1#??-} "*) return 0 ;; esac
	return 1
}
: >"$out/parallel"
: >"$out/serial"
for t in "$root"/tests/integration/[0-9]*.sh; do
	name=$(basename "$t" .sh)
	[ -z "$TESTS" ] || in_list "$name" "$TESTS" || continue
	if case " $SERIAL " in *" $name "*) true ;; *) false ;; esac; then
		echo "$t" >>"$out/serial"
	elif case " $LONG_FIRST " in *" $name "*) true ;; *) false ;; esac; then
		echo "$t" >>"$out/long"
	else
		echo "$t" >>"$out/short"
	fi
done
for n in $LONG_FIRST; do grep "/$n\.sh\$" "$out/long" 2>/dev/null; done >>"$out/parallel"
cat "$out/short" >>"$out/parallel" 2>/dev/null

xargs -P "$jobs" -I{} sh "$0" --one "$out" "$bfs" {} <"$out/parallel"
xargs -P 1 -I{} sh "$0" --one "$out" "$bfs" {} <"$out/serial"

passed=$(cat "$out"/[0-9]* 2>/dev/null | grep -c '^PASS  ')
failed=$(cat "$out"/[0-9]* 2>/dev/null | grep -c '^FAIL  ')
skipped=$(cat "$out"/[0-9]* 2>/dev/null | grep -c '^SKIP  ')
echo "integration: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
