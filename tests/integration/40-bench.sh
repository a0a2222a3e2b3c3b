# bfs bench btree and bench/btree-vs-lmdb: they run, answer correctly and
# print every operation.  Speed is never asserted here.
. "$(dirname "$0")/lib.sh"

# until cmd/bfs.c lists the command, there is nothing to test
"$BFS" help bench >/dev/null 2>&1 || skip "bfs has no bench command"

# temporary images and environments go here, where leftovers can be seen
mkdir tmp
export TMPDIR="$PWD/tmp"
OPS="seq_insert rand_insert rand_lookup seq_scan rand_mixed rand_delete"

# every phase in JSON, with the counts the options asked for
has_ops() {
	python3 - "$1" "$2" $OPS <<'EOF' || fail "$1: results incomplete"
import json, sys
d = json.load(open(sys.argv[1]))
keys = int(sys.argv[2])
got = [r["op"] for r in d["results"]]
assert got == sys.argv[3:], got
for r in d["results"]:
    assert r["ops"] == keys, r
    assert r["total_ns"] > 0 and r["ops_per_sec"] > 0, r
EOF
}

note "usage errors"
expect_rc 2 "$BFS" bench
contains err "no benchmark given"
expect_rc 2 "$BFS" bench nope
contains err "unknown benchmark 'nope'"
expect_rc 2 "$BFS" bench btree --keys 0
expect_rc 2 "$BFS" bench btree --value-size 12
expect_rc 2 "$BFS" bench btree extra
expect_ok "$BFS" bench --help
contains out "usage: bfs bench"

note "bfs bench btree --json"
expect_ok "$BFS" bench btree --keys 20000 --json
json_ok out
[ "$(json_get out benchmark)" = btree ] || fail "benchmark is not btree"
[ "$(json_get out keys)" = 20000 ] || fail "keys is not 20000"
[ "$(json_get out journal)" = true ] || fail "journal is not on"
has_ops out 20000
[ -z "$(ls tmp)" ] || fail "temporary files left behind: $(ls tmp)"

note "text output, threads, batches, bigger values, --image"
expect_ok "$BFS" bench btree --keys 5k --threads 2 --batch 16 --value-size 64 --image b.img
for op in $OPS; do
	contains out "$op"
done
[ ! -e b.img ] || fail "--image file left behind"
touch exists.img
expect_rc 1 "$BFS" bench btree --keys 100 --image exists.img
contains err "exists"
[ -e exists.img ] || fail "an existing --image file was removed"

note "bench/btree-vs-lmdb"
[ -f /usr/include/lmdb.h ] || skip "liblmdb-dev not installed"
export B="$PWD/build"	# lmdb_bench is built here, not in the source tree
expect_ok sh "$REPO/bench/btree-vs-lmdb" --bfs "$BFS" --keys 5000 --json
json_ok out
python3 - out $OPS <<'EOF' || fail "btree-vs-lmdb: results incomplete"
import json, sys
d = json.load(open(sys.argv[1]))
assert [r["op"] for r in d["results"]] == sys.argv[2:], d
assert all(r["ratio"] > 0 for r in d["results"]), d
EOF
expect_ok sh "$REPO/bench/btree-vs-lmdb" --bfs "$BFS" --keys 2000 --threads 2
contains out "bfs/LMDB"
contains out "rand_mixed"
[ -z "$(ls tmp)" ] || fail "temporary files left behind: $(ls tmp)"
echo ok
