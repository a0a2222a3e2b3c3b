# Small appends through the mount, which bfs buffers at the file's end
# (libcore/fs/tail_buf.c): two descriptors of one process and two
# processes with O_APPEND append records that read back whole and in
# order; stat, reads, truncate and rename see what is buffered; after an
# fsync and a kill -9 of the mount process, the remount holds everything
# fsync'd and the file is a prefix of what was written.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount-lib.sh"

mount_prereqs

expect_ok "$BFS" format -q --size 512M img
# a long interval: only fsync (or unmount) makes anything durable here
"$BFS" mount -f -o commit=3600 img mnt 2>mount.err &
pid=$!
wait_mounted mnt

note "two descriptors appending in turn, stat and reads while buffered"
python3 - "$PWD/mnt" <<'EOF' || fail "appends from two descriptors"
import os, sys
p = os.path.join(sys.argv[1], "two-fds")
a = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
b = os.open(p, os.O_WRONLY | os.O_APPEND)
r = os.open(p, os.O_RDONLY)
want = bytearray()
for i in range(6000):
    rec = b"%c%04d\n" % (b"ab"[i % 2], i % 10000)
    os.write(a if i % 2 == 0 else b, rec)
    want += rec
    if i % 1000 == 999:
        if os.fstat(r).st_size != len(want):
            sys.exit("fstat: %d bytes, %d written" % (os.fstat(r).st_size, len(want)))
        if os.pread(r, 64, len(want) - 64) != bytes(want[-64:]):
            sys.exit("a read of the last 64 bytes after %d appends differs" % (i + 1))
for fd in (a, b, r):
    os.close(fd)
if os.stat(p).st_size != len(want):
    sys.exit("stat: %d bytes, %d written" % (os.stat(p).st_size, len(want)))
with open(p, "rb") as f:
    if f.read() != bytes(want):
        sys.exit("the file does not read back as appended")
EOF

note "two processes appending with O_APPEND at once"
python3 - "$PWD/mnt" <<'EOF' || fail "O_APPEND from two processes"
import os, sys
p = os.path.join(sys.argv[1], "two-procs")
N = 4000
pids = []
for who in (b"P", b"Q"):
    pid = os.fork()
    if pid == 0:
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        for i in range(N):
            os.write(fd, b"%s%06d\n" % (who, i))
        os.close(fd)
        os._exit(0)
    pids.append(pid)
for pid in pids:
    _, st = os.waitpid(pid, 0)
    if st:
        sys.exit("a writer failed")
data = open(p, "rb").read()
if len(data) != 2 * N * 8:
    sys.exit("%d bytes, %d appended" % (len(data), 2 * N * 8))
seen = {b"P": 0, b"Q": 0}
for k in range(0, len(data), 8):
    rec = data[k:k + 8]
    who, n = rec[:1], rec[1:7]
    if who not in seen or rec[7:] != b"\n" or int(n) != seen[who]:
        sys.exit("record %d is %r: torn, lost or out of order" % (k // 8, rec))
    seen[who] += 1
EOF

note "truncate, rename and append again while buffered"
python3 - "$PWD/mnt" <<'EOF' || fail "truncate and rename of a buffered file"
import os, sys
d = sys.argv[1]
p = os.path.join(d, "trunc")
fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
for i in range(3000):
    os.write(fd, b"x%03d" % (i % 1000))
os.ftruncate(fd, 5001)
os.write(fd, b"TAIL")
os.rename(p, p + ".renamed")
os.write(fd, b"MORE")
os.close(fd)
want = b"".join(b"x%03d" % (i % 1000) for i in range(3000))[:5001] + b"TAILMORE"
got = open(p + ".renamed", "rb").read()
if got != want:
    sys.exit("after truncate+append+rename: %d bytes, %d expected" % (len(got), len(want)))
EOF

note "fsync, more appends, kill -9: the fsync'd part survives, the file is a prefix"
python3 - "$PWD/mnt" <<'EOF' >synced || fail "appends before the kill"
import os, sys
p = os.path.join(sys.argv[1], "killed")
fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
total = 0
for i in range(20000):
    total += os.write(fd, b"%07d\n" % i)
    if i == 12345:
        os.fsync(fd)
        synced = total
for i in range(20000, 21000):
    os.write(fd, b"%07d\n" % i)
os.close(fd)	# close is not a durability point (commit=3600)
print(synced)
EOF
kill -9 "$pid"
wait "$pid" 2>/dev/null
fusermount3 -u -z mnt 2>/dev/null || umount -l mnt || fail "cannot remove the dead mount"
expect_ok "$BFS" mount -o ro img mnt
python3 - "$PWD/mnt/killed" "$(cat synced)" <<'EOF' || fail "after kill -9"
import sys
data = open(sys.argv[1], "rb").read()
synced = int(sys.argv[2])
full = b"".join(b"%07d\n" % i for i in range(21000))
if len(data) < synced:
    sys.exit("%d bytes after the crash, %d were fsync'd" % (len(data), synced))
if data != full[:len(data)]:
    sys.exit("the file after the crash is not a prefix of what was appended")
EOF
unmount_wait umount mnt
expect_ok "$BFS" fsck -n img

note "a clean unmount keeps every append"
expect_ok "$BFS" mount img mnt
python3 -c "
import os
fd = os.open('$PWD/mnt/clean', os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
for i in range(5000):
    os.write(fd, b'%05d' % i)
os.close(fd)" || fail "appends before unmount"
unmount_wait umount mnt
expect_ok "$BFS" mount -o ro img mnt
python3 -c "
import sys
if open('$PWD/mnt/clean', 'rb').read() != b''.join(b'%05d' % i for i in range(5000)):
    sys.exit('appends lost by a clean unmount')" || fail "clean unmount"
unmount_wait umount mnt
expect_ok "$BFS" fsck -n img
echo "append tests passed"
