#!/bin/sh
# Run every tests/integration/[0-9]*.sh with the bfs binary as argument, each
# in its own temporary directory.  Prints one line per script and the closing
# line "N passed, N failed"; exits non-zero if any script failed.
# TESTS="20-format" limits the run to scripts whose name contains a word.
bfs=$(realpath "$1")
root=$(cd "$(dirname "$0")/.." && pwd)
passed=0 failed=0 skipped=0
for t in "$root"/tests/integration/[0-9]*.sh; do
	name=$(basename "$t" .sh)
	if [ -n "$TESTS" ]; then
		case " $TESTS " in *" $name "*|*" ${name#??-} "*) ;; *) continue ;; esac
	fi
	dir=$(mktemp -d "${TMPDIR:-/tmp}/bfs-it-$name.XXXXXX")
	start=$(date +%s)
	(cd "$dir" && BFS_NO_PROGRESS=1 sh "$t" "$bfs") >"$dir/log" 2>&1
	rc=$?
	secs=$(( $(date +%s) - start ))
	if [ $rc -eq 0 ]; then
		echo "PASS  $name (${secs}s)"
		passed=$((passed + 1))
		rm -rf "$dir"
	elif [ $rc -eq 77 ]; then
		echo "SKIP  $name: $(tail -n 1 "$dir/log")"
		skipped=$((skipped + 1))
		rm -rf "$dir"
	else
		echo "FAIL  $name (${secs}s), log in $dir/log:"
		tail -n 30 "$dir/log" | sed 's/^/    /'
		failed=$((failed + 1))
	fi
done
echo "integration: $passed passed, $failed failed, $skipped skipped"
[ $failed -eq 0 ]
