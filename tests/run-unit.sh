#!/bin/sh
# Run every unit-test program given on the command line; each prints check's
# own summary line.  Exits non-zero if any program failed.
failed=0
for t in "$@"; do
	echo "== $t"
	if ! "$t"; then
		echo "FAILED: $t"
		failed=$((failed + 1))
	fi
done
[ "$failed" -eq 0 ] || { echo "$failed unit test program(s) failed"; exit 1; }
