# FUSE over io_uring (cmd/fuse_uring.c, doc/fuse-transport.md).  Always:
# -o nouring says /dev/fuse; with the kernel parameter off, -o uring is a
# clear error that leaves nothing mounted and the default falls back to
# /dev/fuse.  With the parameter on (root: echo Y >
# /sys/module/fuse/parameters/enable_uring; this test does not turn it on,
# it is the machine's): the mount says io_uring, the daemon reads no
# request from /dev/fuse during a mixed workload (strace, if installed),
# and that workload (files, O_DIRECT data, renames, links, xattrs, a
# FORGET storm from dropped caches, an INTERRUPT from a signalled writer,
# an inode invalidation from chattr) reads back and leaves fsck clean;
# SIGTERM unmounts cleanly, kill -9 loses nothing fsync'd.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount-lib.sh"

mount_prereqs
PARAM=/sys/module/fuse/parameters/enable_uring

expect_ok "$BFS" format -q --size 1G img

# the transport line of a foreground mount's log $1
transport() { grep -o 'FUSE transport: [^ ]*' "$1" | head -1 | cut -d' ' -f3; }

start() {
	"$BFS" mount -f "$@" img mnt 2>mount.err &
	pid=$!
	wait_mounted mnt
	i=0
	until grep -q 'FUSE transport' mount.err; do
		sleep 0.1
		i=$((i + 1))
		[ $i -lt 100 ] || fail "no transport line: $(cat mount.err)"
	done
}

stop() {
	umount mnt || fail "umount"
	wait_gone $pid
	wait_unlocked img
}

note "nouring: /dev/fuse"
start -o nouring
[ "$(transport mount.err)" = /dev/fuse ] || fail "nouring: $(cat mount.err)"
echo data > mnt/f || fail "write with nouring"
stop

if [ ! -e $PARAM ] || [ "$(cat $PARAM)" != Y ]; then
	note "the kernel parameter is not Y: -o uring refused, the default is /dev/fuse"
	expect_rc 1 "$BFS" mount -o uring img mnt
	contains err "mount option 'uring'"
	is_mounted mnt && fail "a refused -o uring left a mount"
	start
	[ "$(transport mount.err)" = /dev/fuse ] || fail "default without the parameter: $(cat mount.err)"
	stop
	skip "FUSE over io_uring: $PARAM is $(cat $PARAM 2>/dev/null || echo absent) (root can write Y to it)"
fi

note "uring: the transport line, a mixed workload"
start -o uring
contains mount.err "FUSE transport: io_uring"
if command -v strace >/dev/null; then
	timeout 60 strace -f -qq -e trace=read,readv -o strace.out -p $pid &
	tracer=$!
	sleep 1
fi
head -c 3000000 /dev/urandom > data.bin
python3 - "$PWD/mnt" "$PWD/data.bin" <<'EOF' || fail "mixed workload"
import os, sys
m, src = sys.argv[1], open(sys.argv[2], "rb").read()
os.makedirs(os.path.join(m, "d/e"))
for i in range(300):
    p = os.path.join(m, "d", "f%03d" % i)
    with open(p, "wb") as f:
        f.write(b"%d\n" % i * (i + 1))
    if i % 3 == 0:
        os.rename(p, os.path.join(m, "d/e", "g%03d" % i))
    elif i % 5 == 0:
        os.link(p, os.path.join(m, "d", "h%03d" % i))
    elif i % 7 == 0:
        os.unlink(p)
os.symlink("d/e", os.path.join(m, "ln"))
os.setxattr(os.path.join(m, "d"), "user.k", b"v" * 300)
assert os.getxattr(os.path.join(m, "d"), "user.k") == b"v" * 300
# page-aligned direct writes and reads, 1 MiB at a time
fd = os.open(os.path.join(m, "direct"), os.O_RDWR | os.O_CREAT | os.O_DIRECT, 0o644)
import mmap
buf = mmap.mmap(-1, 1 << 20)
for off in range(0, 3 << 20, 1 << 20):
    buf[:] = (src + bytes(1 << 20))[off:off + (1 << 20)]
    os.pwrite(fd, buf, off)
os.fsync(fd)
got = bytearray()
for off in range(0, 3 << 20, 1 << 20):
    n = os.preadv(fd, [buf], off)
    got += buf[:n]
os.close(fd)
if bytes(got[:len(src)]) != src:
    sys.exit("direct data differs")
with open(os.path.join(m, "buffered"), "wb") as f:
    f.write(src)
for i in range(300):
    for name in ("d/f%03d" % i, "d/e/g%03d" % i):
        p = os.path.join(m, name)
        if os.path.exists(p):
            with open(p, "rb") as f:
                if f.read() != b"%d\n" % i * (i + 1):
                    sys.exit("%s reads back wrong" % name)
EOF
cmp -s data.bin mnt/buffered || fail "buffered data differs"
if [ -n "${tracer:-}" ]; then
	kill $tracer 2>/dev/null
	wait $tracer 2>/dev/null
	# the /dev/fuse loop reads only INIT (before the trace), FORGETs (48
	# bytes: the unlinks and renames) and INTERRUPTs (none here)
	n=$(grep 'readv\?.*= [0-9]*$' strace.out | grep -vc '= 48$' || true)
	[ "$n" -lt 5 ] || fail "$n /dev/fuse requests other than FORGET during the ring workload"
	note "/dev/fuse requests other than FORGET during the workload: $n"
fi


note "a FORGET storm: 3000 inodes looked up, the caches dropped, looked up again"
mkdir mnt/many
(cd mnt/many && seq 3000 | xargs touch) || fail "creating 3000 files"
sync
echo 2 > /proc/sys/vm/drop_caches
[ "$(ls mnt/many | wc -l)" -eq 3000 ] || fail "3000 files after dropping caches"
stat mnt/many/1500 >/dev/null || fail "stat after the FORGET storm"

note "an INTERRUPT: a writer stopped by a signal mid-write"
# fsync after each MiB: the signal finds it waiting in a request; at most 200 MiB
python3 - "$PWD/mnt/interrupted" <<'EOF' &
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
for i in range(200):
    os.write(fd, bytes(1 << 20))
    os.fsync(fd)
EOF
writer=$!
sleep 0.5
kill -INT $writer
wait $writer 2>/dev/null
echo after > mnt/after-interrupt || fail "the mount after an interrupted writer"
[ "$(cat mnt/after-interrupt)" = after ] || fail "read after an interrupted writer"
rm -f mnt/interrupted

note "an invalidation from inside a request: chattr changes ctime"
echo x > mnt/attr
if command -v chattr >/dev/null && chattr +a mnt/attr 2>/dev/null; then
	lsattr mnt/attr | cut -c1-20 | grep -q a || fail "chattr +a not seen"
	chattr -a mnt/attr || fail "chattr -a"
fi

note "SIGTERM while busy: a clean close"
(cd mnt/many && seq 3001 4000 | xargs touch) &
sleep 0.2
kill -TERM $pid
wait $pid || fail "mount status after SIGTERM"
wait
mount_cleanup
wait_unlocked img
expect_ok "$BFS" fsck -n img
contains out "clean"

note "kill -9 after an fsync: the remount has it, fsck is clean"
start -o uring
head -c 1000000 /dev/urandom > synced.bin
python3 - "$PWD/mnt/synced" "$PWD/synced.bin" <<'EOF' || fail "fsync'd write"
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
os.write(fd, open(sys.argv[2], "rb").read())
os.fsync(fd)
os.close(fd)
EOF
kill -9 $pid
wait $pid 2>/dev/null
mount_cleanup
wait_unlocked img
start -o uring
cmp -s synced.bin mnt/synced || fail "fsync'd data lost by kill -9"
cmp -s data.bin mnt/buffered || fail "data from before the SIGTERM lost"
stop
expect_ok "$BFS" fsck -n img
contains out "clean"
