# kill -9 of the mount process in the middle of a workload: the next mount
# replays the journal, every file that was fsync'd (with its directory)
# before the kill is intact, and fsck finds nothing to repair.  Twice, so
# the second crash lands on a filesystem that was itself replayed.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount-lib.sh"

mount_prereqs

# workload MOUNT RECORD SEED: write files until the mount goes away; a line
# "NAME SHA256" goes to RECORD only once the file and its directory are
# fsync'd.  Names are never reused, so a recorded file can only be intact.
workload() {
	python3 - "$@" <<'EOF'
import hashlib, os, random, sys
mnt, rec, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
rnd = random.Random(seed)
out = open(rec, "a")
d = os.path.join(mnt, "w%d" % seed)
def fsync_path(p):
    fd = os.open(p, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)
def write(p, data, sync):
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for off in range(0, len(data), 131072):
        os.write(fd, data[off:off + 131072])
    if sync == "fsync":
        os.fsync(fd)
    elif sync == "fdatasync":
        os.fdatasync(fd)
    os.close(fd)
try:
    os.mkdir(d)
    fsync_path(mnt)
    i = 0
    while True:
        i += 1
        name = "f%06d" % i
        p = os.path.join(d, name)
        data = os.urandom(rnd.choice([0, 1, 700, 4096, 65536, 300001, 2 * 1048576 + 3]))
        kind = i % 4
        if kind == 0:
            write(p, data, None)		# never synced: may or may not survive
            continue
        if kind == 3:				# write a temporary, then rename it
            write(p + ".tmp", data, "fsync")
            os.rename(p + ".tmp", p)
        else:
            write(p, data, "fsync" if kind == 1 else "fdatasync")
        fsync_path(d)
        out.write("%s/%s %s\n" % (os.path.basename(d), name, hashlib.sha256(data).hexdigest()))
        out.flush()
except OSError:
    pass	# the mount went away under us: expected
EOF
}

verify() {
	python3 - "$@" <<'EOF'
import hashlib, os, sys
mnt, rec = sys.argv[1], sys.argv[2]
n = bad = 0
for line in open(rec):
    name, want = line.split()
    n += 1
    try:
        got = hashlib.sha256(open(os.path.join(mnt, name), "rb").read()).hexdigest()
    except OSError as e:
        print("%s: %s" % (name, e))
        bad += 1
        continue
    if got != want:
        print("%s: contents differ from what was fsync'd" % name)
        bad += 1
print("%d fsync'd files checked, %d bad" % (n, bad))
sys.exit(1 if bad or n < 5 else 0)
EOF
}

crash_round() {
	seed=$1
	"$BFS" mount -f img mnt 2>"mount.$seed.err" &
	pid=$!
	wait_mounted mnt
	workload "$PWD/mnt" record "$seed" &
	wl=$!
	sleep 4
	kill -9 "$pid"
	wait "$pid" 2>/dev/null
	wait "$wl"
	fusermount3 -u -z mnt 2>/dev/null || umount -l mnt || fail "cannot remove the dead mount"
	! is_mounted || fail "dead mount still listed"
	expect_ok "$BFS" show-super img
	contains out "not clean"
	note "round $seed: $(wc -l < record) fsync'd files recorded; read-only mount"
	sum=$(md5sum < img)
	expect_ok "$BFS" mount -o ro img mnt
	verify "$PWD/mnt" record || fail "a ro mount after kill -9 misses fsync'd data (round $seed)"
	unmount_wait umount mnt
	[ "$(md5sum < img)" = "$sum" ] || fail "the ro mount of a crashed image wrote to it"
	note "remount read-write (journal replay)"
	expect_ok "$BFS" mount img mnt
	verify "$PWD/mnt" record || fail "fsync'd data lost after kill -9 (round $seed)"
	unmount_wait umount mnt
	expect_ok "$BFS" fsck -n img
	expect_ok "$BFS" show-super img
	contains out "State:                     clean"
}

expect_ok "$BFS" format -q --size 2G img
crash_round 1
crash_round 2
echo "crash tests passed"
