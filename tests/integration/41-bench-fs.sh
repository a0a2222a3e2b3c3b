# bfs bench fs and bench/fs-vs-peers: they run, print every workload and
# leave nothing behind.  Speed is never asserted here.
. "$(dirname "$0")/lib.sh"

# temporary images go here, where leftovers can be seen
mkdir tmp
export TMPDIR="$PWD/tmp"
# what bench/fs-vs-peers runs on every target; bfs bench fs also has seqread
WORKLOADS="append randwrite randread smallfiles objects"

# every workload in JSON, in order, each with work done and time taken
has_workloads() {
	python3 - "$1" $WORKLOADS seqread <<'EOF' || fail "$1: results incomplete"
import json, sys
d = json.load(open(sys.argv[1]))
got = [r["workload"] for r in d["results"]]
assert got == sys.argv[2:], got
for r in d["results"]:
    assert r["ops"] > 0 and r["bytes"] > 0 and r["total_ns"] > 0, r
    assert r["ops_per_sec"] > 0 and r["bytes_per_sec"] > 0, r
EOF
}

note "usage errors"
expect_rc 2 "$BFS" bench fs --size-scale 0
contains err "invalid size scale"
expect_rc 2 "$BFS" bench fs --workload append,nope
contains err "invalid workload list"
expect_rc 2 "$BFS" bench fs --jobs 0
expect_rc 2 "$BFS" bench fs extra
contains err "unexpected argument"

note "bfs bench fs --json, tiny sizes"
expect_ok "$BFS" bench fs --json --size-scale 512
json_ok out
[ "$(json_get out benchmark)" = fs ] || fail "benchmark is not fs"
[ "$(json_get out size_scale)" = 512 ] || fail "size_scale is not 512"
has_workloads out
[ -z "$(ls tmp)" ] || fail "temporary files left behind: $(ls tmp)"

note "text output, a subset of workloads, --image"
expect_ok "$BFS" bench fs --size-scale 512 --workload randread,objects --threads 3 \
	--jobs 2 --fsync-every 1 --image f.img
contains out "randread"
contains out "objects"
lacks out "smallfiles "
[ ! -e f.img ] || fail "--image file left behind"
note "--data-chunk formats the image with that chunk size"
expect_ok "$BFS" bench fs --json --size-scale 512 --workload randread,seqread --data-chunk 4K
[ "$(json_get out data_chunk)" = 4096 ] || fail "data_chunk is not 4096"
expect_rc 1 "$BFS" bench fs --size-scale 512 --workload seqread --data-chunk 3K
contains err "4K to 64K"
expect_rc 2 "$BFS" bench fs --data-chunk x
[ -z "$(ls tmp)" ] || fail "temporary files left behind: $(ls tmp)"
touch exists.img
expect_rc 1 "$BFS" bench fs --size-scale 512 --image exists.img
contains err "exists"
[ -e exists.img ] || fail "an existing --image file was removed"

note "bench/fs-vs-peers --quick"
[ "$(id -u)" -eq 0 ] || skip "fs-vs-peers needs root"
command -v fio >/dev/null || skip "fio not installed (Debian package fio)"
command -v losetup >/dev/null && [ -e /dev/loop-control ] || skip "no loop devices"
[ -c /dev/fuse ] && command -v fusermount3 >/dev/null || skip "no FUSE"
python3 "$REPO/bench/fs-vs-peers" --quick --json --bfs "$BFS" --dir "$PWD/peers" \
	>out 2>err || { cat err; fail "fs-vs-peers --quick failed"; }
json_ok out
# every target ran every workload, or was skipped for a missing tool
python3 - out $WORKLOADS <<'EOF' || { cat err; fail "fs-vs-peers: results incomplete"; }
import json, sys
d = json.load(open(sys.argv[1]))
for t in d["targets"]:
    if t in d["notes"]:
        assert d["notes"][t].startswith("skipped"), (t, d["notes"][t])
        continue
    res = d["results"][t]
    # bench fs has no seqwrite; fio on the bare device runs no file workloads
    ws = sys.argv[2:] + ([] if t == "bfs-lib" else ["seqwrite"])
    if t == "raw":
        ws = ["seqwrite", "randwrite", "randread"]
    for w in ws:
        assert w in res and "error" not in res[w], (t, w, res.get(w))
        assert res[w]["bytes_per_sec"] > 0 and res[w]["ops_per_sec"] > 0, (t, w, res[w])
assert "bfs" in d["results"] and "ext4" in d["results"] and "raw" in d["results"], d["notes"]
EOF
! grep -q "$PWD/peers" /proc/mounts || fail "fs-vs-peers left a mount behind"
[ -z "$(losetup -j "$PWD/peers/ext4.img" 2>/dev/null)" ] || fail "loop device left behind"
[ ! -e peers ] || fail "fs-vs-peers left files behind: $(ls peers)"

note "bench/meta-vs-null --quick: every phase on bfs, bfs -o writeback and the no-op FUSE baseline"
python3 "$REPO/bench/meta-vs-null" --quick --json --files 300 --tree-files 100 \
	--targets bfs,bfs-wb,fuse-null --bfs "$BFS" --dir "$PWD/meta" >out 2>err ||
	{ cat err; fail "meta-vs-null --quick failed"; }
python3 - out <<'EOF' || { cat err; fail "meta-vs-null: results incomplete"; }
import json, sys
d = json.load(open(sys.argv[1]))
assert not d["notes"], d["notes"]
for t in ("bfs", "bfs-wb", "fuse-null"):
    for p in ("create", "stat-cold", "stat-warm", "restat", "ls-l", "append4", "unlink", "tree"):
        r = d["results"][t][p]
        assert r["ops"] > 0 and r["total_ns"] > 0, (t, p, r)
EOF
! grep -q "$PWD/meta" /proc/mounts || fail "meta-vs-null left a mount behind"
[ ! -e meta ] || fail "meta-vs-null left files behind: $(ls meta)"
echo ok
