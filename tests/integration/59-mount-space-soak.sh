# Block accounting under space pressure: 4 processes of random writes,
# truncates, hole punches, renames and links (two to a directory, so that
# two of them change the same files at once), and one that keeps a small
# filesystem at 100% (so copy-GC runs all the time); then every bucket's live count the mount
# kept must match its extents (the next open recounts them and warns) and
# fsck must find nothing wrong (every inode's allocated-sector count
# matches its extents).  Short here; `make soak` runs it for 10 minutes on
# 4 GiB (BFS_SPACE_SOAK_SECS, BFS_SPACE_SOAK_SIZE); BFS_SPACE_SOAK_OPTS adds
# mount options (make soak runs it a second time with -o writeback).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount-lib.sh"

mount_prereqs
SECS=${BFS_SPACE_SOAK_SECS:-30}
SIZE=${BFS_SPACE_SOAK_SIZE:-128M}
OPTS=${BFS_SPACE_SOAK_OPTS:-rw}

expect_ok "$BFS" format -q --size "$SIZE" img
expect_ok "$BFS" mount -o "$OPTS" img mnt
note "$SECS s of 4 processes of random operations on a full $SIZE filesystem"
python3 - "$PWD/mnt" "$SECS" <<'EOF' || fail "the workload failed"
import ctypes, errno, os, random, sys, time
mnt, secs = sys.argv[1], float(sys.argv[2])
# files up to SPAN bytes: 4 x 24 of them hold several times the filesystem
SPAN = max(12 << 20, os.statvfs(mnt).f_blocks * os.statvfs(mnt).f_frsize // 24)
libc = ctypes.CDLL(None, use_errno=True)
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
PUNCH = 0x02 | 0x01	# FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE
OK = (errno.ENOSPC, errno.ENOENT, errno.EEXIST, errno.ENOTEMPTY)
def worker(n):
    rnd = random.Random(n * 7919 + int(time.time()))
    d = os.path.join(mnt, "w%d" % (n // 2))
    os.makedirs(d, exist_ok=True)
    names = ["f%d" % i for i in range(24)]
    end = time.monotonic() + secs
    ops = enospc = 0
    while time.monotonic() < end:
        p = os.path.join(d, rnd.choice(names))
        op = rnd.random()
        ops += 1
        try:
            if op < 0.60:
                fd = os.open(p, os.O_WRONLY | os.O_CREAT, 0o644)
                try:
                    off = rnd.randrange(0, SPAN) & ~511 if rnd.random() < 0.7 else rnd.randrange(0, SPAN)
                    os.pwrite(fd, os.urandom(rnd.choice([1, 4096, 65536, 300000, 1 << 20])), off)
                finally:
                    os.close(fd)
            elif op < 0.70:
                # mostly small cuts, so that the filesystem stays full
                size = os.stat(p).st_size
                os.truncate(p, max(0, size - rnd.randrange(0, 1 << 20)) if rnd.random() < 0.8 else rnd.randrange(0, SPAN))
            elif op < 0.82:
                fd = os.open(p, os.O_WRONLY)
                try:
                    if libc.fallocate(fd, PUNCH, rnd.randrange(0, SPAN), rnd.randrange(1, 2 << 20)):
                        e = ctypes.get_errno()
                        raise OSError(e, os.strerror(e))
                finally:
                    os.close(fd)
            elif op < 0.90:
                os.rename(p, os.path.join(d, rnd.choice(names)))
            elif op < 0.95:
                os.link(p, os.path.join(d, rnd.choice(names)))
            else:
                os.unlink(p)
        except OSError as e:
            if e.errno == errno.ENOSPC:
                enospc += 1
            elif e.errno not in OK:
                print("worker %d: %s" % (n, e), file=sys.stderr)
                os._exit(1)
    print("worker %d: %d operations, %d ENOSPC" % (n, ops, enospc))
    os._exit(0)
def filler():
    # keeps the filesystem at 100%: appends until ENOSPC, then punches a
    # hole (freeing parts of buckets, which only copy-GC can reclaim)
    rnd = random.Random(4242)
    p = os.path.join(mnt, "filler")
    fd = os.open(p, os.O_WRONLY | os.O_CREAT, 0o644)
    end = time.monotonic() + secs
    chunk = os.urandom(262144)
    size = 0
    while time.monotonic() < end:
        try:
            os.pwrite(fd, chunk, size)
            size += len(chunk)
        except OSError as e:
            if e.errno != errno.ENOSPC:
                print("filler: %s" % e, file=sys.stderr)
                os._exit(1)
            if size > (4 << 20):
                off = rnd.randrange(0, size - (1 << 20)) & ~4095
                libc.fallocate(fd, PUNCH, off, rnd.choice([65536, 1 << 20]))
            time.sleep(0.01)
    try:
        os.close(fd)
    except OSError as e:
        # with -o writeback, close() writes the cached pages back: it may be out of space too
        if e.errno != errno.ENOSPC:
            raise
    os._exit(0)
pids = []
pid = os.fork()
if pid == 0:
    filler()
pids.append(pid)
for n in range(4):
    pid = os.fork()
    if pid == 0:
        worker(n)
    pids.append(pid)
bad = 0
for pid in pids:
    _, st = os.waitpid(pid, 0)
    bad += st != 0
sys.exit(1 if bad else 0)
EOF
df -k mnt | tail -1
unmount_wait umount mnt
note "the space accounting the mount kept matches the extents (recounted at open)"
"$BFS" mount -f -o ro img mnt 2>remount.err &
pid=$!
wait_mounted mnt
unmount_wait umount mnt
wait "$pid"
if grep -q "live sectors, alloc key says" remount.err; then
	head -5 remount.err
	fail "bucket live counts drifted from the extents under space pressure"
fi
note "fsck after the workload"
"$BFS" fsck -n img > fsck.out 2>&1
rc=$?
[ $rc -eq 0 ] || { head -40 fsck.out; fail "fsck -n found problems (exit $rc) after space pressure"; }
echo "space pressure soak passed"
