#!/bin/sh
# Run every unit-test program given on the command line, BFS_TEST_JOBS at a
# time (default: the number of cores; 1 runs them one after another).  Each
# program's output is kept in a file and printed whole when it ends, under
# "== PROGRAM (Ns)", so programs running side by side never interleave; a
# failed program is named again in the closing summary.  Exits non-zero if
# any program failed.
#
# The programs can share a machine: their temporary files are unique per
# process (bfs_unit_tmpfile() in tests/unit/unit.c puts the pid in the name).

# one program: run it, then print its block under the output lock
if [ "$1" = --one ]; then
	out=$2 t=$3
	log="$out/$(basename "$t").log"
	start=$(date +%s)
	"$t" >"$log" 2>&1
	rc=$?
	secs=$(( $(date +%s) - start ))
	[ $rc -eq 0 ] || { echo "FAILED: $t (exit $rc)" >>"$log"; echo "$t" >>"$out/failed"; }
	echo "$secs $t" >>"$out/times"
	flock "$out/lock" sh -c 'echo "== $1 (${2}s)"; cat "$3"' sh "$t" "$secs" "$log"
	exit 0
fi

jobs=${BFS_TEST_JOBS:-$(nproc 2>/dev/null || echo 1)}
out=$(mktemp -d "${TMPDIR:-/tmp}/bfs-unit-run.XXXXXX") || exit 1
trap 'rm -rf "$out"' EXIT
: >"$out/failed"
: >"$out/times"
start=$(date +%s)
for t in "$@"; do printf '%s\n' "$t"; done |
	xargs -P "$jobs" -I{} sh "$0" --one "$out" {}
secs=$(( $(date +%s) - start ))
failed=$(wc -l <"$out/failed")
echo "unit: $# program(s) in ${secs}s, $jobs at a time; slowest:" \
	"$(sort -rn "$out/times" | head -n 3 | while read -r s t; do printf '%s %ss ' "$(basename "$t")" "$s"; done)"
if [ "$failed" -ne 0 ]; then
	sed 's/^/FAILED: /' "$out/failed"
	echo "$failed unit test program(s) failed"
	exit 1
fi
