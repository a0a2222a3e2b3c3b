# Shared helpers for integration tests: source it, then call the checks.
# Every script gets the bfs binary as $1 and runs in a scratch directory.
set -u
BFS=${1:?usage: $0 /path/to/bfs}
REPO=$(cd "$(dirname "$0")/../.." && pwd)
# test helper programs built next to bfs (tests/tools/)
TOOLS=$(cd "$(dirname "$BFS")/tests" 2>/dev/null && pwd)

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "skipped: $*"; exit 77; }
note() { echo "--- $*"; }

# run CMD..., keep stdout/stderr in out/err, and check its exit status
expect_rc() {
	want=$1; shift
	"$@" >out 2>err
	got=$?
	if [ "$got" -ne "$want" ]; then
		echo "stdout:"; cat out; echo "stderr:"; cat err
		fail "'$*' exited $got, expected $want"
	fi
}
expect_ok() { expect_rc 0 "$@"; }

# check that FILE (out or err) contains TEXT
contains() {
	grep -qF -- "$2" "$1" || { echo "$1:"; cat "$1"; fail "$1 lacks '$2'"; }
}
lacks() {
	! grep -qF -- "$2" "$1" || { echo "$1:"; cat "$1"; fail "$1 contains '$2'"; }
}
json_ok() {
	python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$1" ||
		fail "$1 is not valid JSON"
}
# value of a top-level or dotted key in JSON file $1
json_get() {
	python3 -c '
import json, sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    v = v[int(k)] if isinstance(v, list) else v[k]
print(str(v).lower() if isinstance(v, bool) else v)' "$1" "$2"
}
# bytes actually allocated to a file
allocated() { echo $(( $(stat -c %b "$1") * $(stat -c %B "$1") )); }
# stale_clean_image IMG SEED FILES: a 64M image populated by bfs-fsimage
# and left as after a crash, then its superblock's clean flag forged (a
# stale flag, as from an old copy): the journal holds what a correct open
# must replay.  Its manifest is left in want.manifest.
stale_clean_image() {
	expect_ok "$BFS" format -q --size 64M "$1"
	expect_ok "$TOOLS/bfs-fsimage" populate --seed "$2" --files "$3" --unclean "$1"
	expect_ok "$TOOLS/bfs-fsimage" manifest "$1"
	cp out want.manifest
	flags_=$("$BFS" show-super --json "$1" |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["flags"])')
	[ $((flags_ & 1)) -eq 0 ] || fail "the populated image $1 is already clean"
	expect_ok "$BFS" debug -w -R "set-super flags $((flags_ | 1))" "$1"
}
