# fsck with a node cache far smaller than the tree (--cache-size at its
# minimum) finds, names and fixes exactly what it does with a cache that
# holds the whole tree: the cache budget changes what is kept, never what is
# checked.  4 KiB nodes make a 20 000-file tree about 50 times the cache and
# 3 to 4 levels deep.  Damage: a wrong link count, a count of 0 on a named
# file, an entry deleted under a file (which goes to /lost+found); the
# problems carry the files' paths, found by searching the entries (pass 2
# keeps no per-file directory).
. "$(dirname "$0")/lib.sh"
MKTREE=$TOOLS/bfs-mktree
[ -x "$MKTREE" ] || fail "bfs-mktree not built"
command -v python3 >/dev/null || skip "python3 not installed"

note "a tree 50 times the cache"
expect_ok "$BFS" format -q --size 256M --btree-node-size 4K img
expect_ok "$MKTREE" img 20000
expect_ok "$BFS" debug -R btrees img
nodes=$(awk 'NR > 1 { n += $4 } END { print n }' out)
[ "$nodes" -ge 3000 ] || { cat out; fail "only $nodes nodes of 4K: not far larger than 256K"; }
expect_ok "$BFS" fsck -fn --cache-size 256K img
contains out "clean, 0 problems found"

note "damage"
dir=$("$BFS" debug -R "stat /tree/g0002/d01" img | awk '/^inode:/ { print $2 }')
[ -n "$dir" ] || fail "no /tree/g0002/d01"
entry=$("$BFS" debug -R "keys dirents $dir:0 $dir:max" img | awk '/dirent .f04. ->/ { sub(/:$/, "", $6); print $6 }')
[ -n "$entry" ] || fail "no entry f04 in /tree/g0002/d01"
expect_ok "$BFS" debug -w -R "set-inode /tree/g0000/d00/f00 nlink 5" img
expect_ok "$BFS" debug -w -R "set-inode /tree/g0003/d01/f07 nlink 0" img
expect_ok "$BFS" debug -w -R "del-key dirents $entry" img
cp img big.img

note "the same findings with 256K as with 64M"
for cs in 256K 64M; do
	"$BFS" fsck -fn --json --cache-size $cs img >"n.$cs" 2>/dev/null
	[ $? -eq 4 ] || { cat "n.$cs"; fail "fsck -fn --cache-size $cs: not exit 4"; }
	json_ok "n.$cs"
done
cmp n.256K n.64M || { diff n.256K n.64M; fail "--cache-size 256K and 64M differ"; }
[ "$(json_get n.256K counts.problems)" = 3 ] || { cat n.256K; fail "not 3 problems"; }
contains n.256K '"path": "/tree/g0000/d00/f00"'
contains n.256K '"path": "/tree/g0003/d01/f07"'
contains n.256K '"code": "INODE_UNATTACHED"'

note "repaired the same, clean after"
for cs in 256K 64M; do
	[ $cs = 256K ] && i=img || i=big.img
	"$BFS" fsck -fy --cache-size $cs $i >"y.$cs" 2>&1
	[ $? -eq 1 ] || { cat "y.$cs"; fail "fsck -fy --cache-size $cs: not exit 1"; }
	sed "s/^[a-z.]*: //" "y.$cs" >"y.$cs.t"
	expect_ok "$BFS" fsck -fn --cache-size 256K $i
	contains out "clean, 0 problems found"
done
cmp y.256K.t y.64M.t || { diff y.256K.t y.64M.t; fail "repairs differ"; }
expect_ok "$BFS" debug -R "ls /lost+found" img
[ "$(wc -l <out)" -eq 1 ] || { cat out; fail "not one file in /lost+found"; }
expect_ok "$BFS" debug -R "ls /lost+found" big.img
[ "$(wc -l <out)" -eq 1 ] || { cat out; fail "64M: not one file in /lost+found"; }
