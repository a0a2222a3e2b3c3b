# kill -9 of the mount process while files come and go on a small, filling
# filesystem, then fsck -n on the crashed image BEFORE any mount (it
# replays the journal in memory), then a mount (replay for real) and fsck -n
# again.  Both must be clean.  Found with fsstress: fsck -n checked the
# filesystem on the core of its btree pass, whose replay had placed split
# nodes in buckets of file data (it did not know them), and reported the
# buckets as shared and offered to drop the extents in them.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount-lib.sh"

mount_prereqs

# churn DIR SEED: create, write at random offsets, truncate, unlink, mkdir,
# rename, until the mount goes away; ENOSPC is expected and ignored
churn() {
	python3 - "$@" <<'EOF'
import errno, os, random, sys
root, seed = sys.argv[1], int(sys.argv[2])
rnd = random.Random(seed)
buf = bytes(rnd.getrandbits(8) for _ in range(1 << 16)) * 2
names = []
ok = (errno.ENOSPC, errno.ENOENT, errno.ENOTEMPTY, errno.EISDIR, errno.ENOTDIR)
def rmtree(p):
    for dp, dn, fn in os.walk(p, topdown=False):
        for x in fn: os.unlink(os.path.join(dp, x))
        for x in dn: os.rmdir(os.path.join(dp, x))
    os.rmdir(p)
try:
    os.makedirs(root, exist_ok=True)
    while True:
        op = rnd.random()
        try:
            if op < 0.35 or not names:
                dirs = [n for n in names[-50:] if os.path.isdir(n)]
                p = os.path.join(rnd.choice([root] + dirs), "f%d" % rnd.randrange(1 << 30))
                if rnd.random() < 0.1:
                    os.mkdir(p)
                else:
                    with open(p, "wb") as f:
                        f.write(buf[:rnd.randrange(1, len(buf))])
                names.append(p)
            elif op < 0.6:
                p = rnd.choice(names)
                if os.path.isfile(p):
                    fd = os.open(p, os.O_WRONLY)
                    try:
                        os.pwrite(fd, buf[:rnd.randrange(1, 1 << 17)], rnd.randrange(4 << 20))
                    finally:
                        os.close(fd)
            elif op < 0.8:
                p = names.pop(rnd.randrange(len(names)))
                if os.path.isdir(p):
                    rmtree(p)
                    names = [n for n in names if not n.startswith(p + "/")]
                else:
                    os.unlink(p)
            elif op < 0.9:
                p = rnd.choice(names)
                if os.path.isfile(p):
                    os.truncate(p, rnd.randrange(2 << 20))
            else:
                p = rnd.choice(names)
                q = os.path.join(os.path.dirname(p), "r%d" % rnd.randrange(1 << 30))
                os.rename(p, q)
                names = [q + n[len(p):] if n == p or n.startswith(p + "/") else n for n in names]
        except OSError as e:
            if e.errno not in ok:
                raise
except OSError:
    pass	# the mount went away under us: expected
EOF
}

expect_ok "$BFS" format -q --size 128M img
for round in 1 2 3 4; do
	"$BFS" mount -f img mnt 2>"mount.$round.err" &
	pid=$!
	wait_mounted mnt
	pids=
	for j in 1 2 3 4; do
		churn "$PWD/mnt/w$round-$j" $((round * 10 + j)) &
		pids="$pids $!"
	done
	sleep 10
	kill -9 "$pid"
	wait "$pid" 2>/dev/null
	for p in $pids; do wait "$p"; done
	fusermount3 -u -z mnt 2>/dev/null || umount -l mnt || fail "cannot remove the dead mount"
	expect_ok "$BFS" show-super img
	contains out "not clean"
	note "round $round: fsck -n of the crashed image"
	"$BFS" fsck -fn img >out 2>&1 || { cat out; fail "fsck -n after kill -9 (round $round) is not clean"; }
	contains out "clean"
	note "round $round: mount (replay), fsck -n"
	expect_ok "$BFS" mount img mnt
	df -k mnt | tail -n 1
	unmount_wait umount mnt
	expect_ok "$BFS" fsck -fn img
	contains out "clean"
done
echo "crash churn passed"
