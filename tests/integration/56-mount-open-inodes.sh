# Inodes that lose their last name while still in use: an open directory
# after rmdir or a rename over it, and inodes the kernel still caches
# (syncfs(2) with -o writeback writes their times back after the last
# close).  Also: such inodes are freed at the end, and after a crash.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount-lib.sh"

mount_prereqs

expect_ok "$BFS" format -q --size 1G img
expect_ok "$BFS" mount img mnt

note "an open directory keeps its inode after rmdir and after a rename over it"
mkdir -p mnt/a/gone mnt/b/victim mnt/b/other
python3 - "$PWD/mnt" <<'EOF' || fail "an open, removed directory lost its inode"
import os, sys
mnt = sys.argv[1]
def check(fd, what):
    st = os.fstat(fd)
    if st.st_nlink != 0:
        sys.exit("%s: fstat says nlink %d, want 0" % (what, st.st_nlink))
    try:
        names = os.listdir(fd)
    except FileNotFoundError:
        names = []	# the VFS refuses to list a dead directory, as on ext4
    if names:
        sys.exit("%s: a removed directory lists %s" % (what, names))
    os.fchmod(fd, 0o700)	# setattr reaches the inode too
    if os.fstat(fd).st_mode & 0o777 != 0o700:
        sys.exit("%s: fchmod did not stick" % what)
fd = os.open(os.path.join(mnt, "a/gone"), os.O_RDONLY | os.O_DIRECTORY)
os.rmdir(os.path.join(mnt, "a/gone"))
check(fd, "rmdir")
os.close(fd)
fd = os.open(os.path.join(mnt, "b/victim"), os.O_RDONLY | os.O_DIRECTORY)
os.rename(os.path.join(mnt, "b/other"), os.path.join(mnt, "b/victim"))
check(fd, "rename over")
os.close(fd)
if sorted(os.listdir(os.path.join(mnt, "b"))) != ["victim"]:
    sys.exit("b lists %s" % os.listdir(os.path.join(mnt, "b")))
EOF
unmount_wait umount mnt
expect_ok "$BFS" fsck -n img

note "syncfs with -o writeback during a small-file workload"
expect_ok "$BFS" mount -o writeback img mnt
python3 - "$PWD/mnt" <<'EOF' || fail "syncfs failed during a small-file workload"
import ctypes, os, sys, threading, time
mnt = sys.argv[1]
libc = ctypes.CDLL(None, use_errno=True)
d = os.path.join(mnt, "small")
os.mkdir(d)
stop = False
def worker(n):
    i = 0
    while not stop:
        i += 1
        p = os.path.join(d, "t%d-%d" % (n, i))
        with open(p, "wb") as f:
            f.write(b"x" * (i % 9000))
        if i % 3 == 0:
            os.rename(p, os.path.join(d, "t%d-last" % n))	# replaces the previous one
        else:
            os.unlink(p)
threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
for t in threads:
    t.start()
errors = []
calls = 0
fd = os.open(mnt, os.O_RDONLY | os.O_DIRECTORY)
end = time.monotonic() + 3	# the race needs many tries: thousands failed in 3 s before the fix
try:
    while time.monotonic() < end:
        calls += 1
        if libc.syncfs(fd) != 0:
            errors.append(os.strerror(ctypes.get_errno()))
finally:
    stop = True
    for t in threads:
        t.join()
    os.close(fd)
if errors:
    sys.exit("syncfs failed %d of %d times: %s" % (len(errors), calls, errors[0]))
EOF

note "space of removed files comes back once the kernel forgets them"
head -c 200000000 /dev/zero > mnt/big || fail "write a big file"
sync mnt/big
free=$(stat -f -c '%f' mnt)
rm mnt/big
i=0
until [ "$(stat -f -c '%f' mnt)" -gt $((free + 40000)) ]; do
	sleep 0.2
	i=$((i + 1))
	[ $i -lt 50 ] || fail "the space of a removed file is not free 10 s later"
done
unmount_wait umount mnt
expect_ok "$BFS" fsck -n img

note "an open, removed directory is freed at the next mount after a kill -9"
"$BFS" mount -f img mnt 2>mount.err &
pid=$!
wait_mounted mnt
mkdir mnt/held
python3 - "$PWD/mnt" > holder.out <<'EOF' &
import os, sys, time
fd = os.open(os.path.join(sys.argv[1], "held"), os.O_RDONLY | os.O_DIRECTORY)
os.rmdir(os.path.join(sys.argv[1], "held"))
fd2 = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
os.fsync(fd2)		# the rmdir (and the orphan record) is durable
print("held", flush=True)
time.sleep(60)
EOF
holder=$!
i=0
until grep -q held holder.out; do
	sleep 0.1
	i=$((i + 1))
	[ $i -lt 100 ] || { kill "$holder"; fail "rmdir of the open directory did not happen"; }
done
kill -9 "$pid"
wait "$pid" 2>/dev/null
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
fusermount3 -u -z mnt 2>/dev/null || umount -l mnt || fail "cannot remove the dead mount"
"$BFS" mount -f img mnt2 2>mount2.err &
pid=$!
wait_mounted mnt2
unmount_wait umount mnt2
wait "$pid" || fail "the mount after kill -9 failed: $(cat mount2.err)"
contains mount2.err "freed 1 orphaned inode"
expect_ok "$BFS" fsck -n img
expect_ok "$BFS" dump-btree --btree inodes img
lacks out "orphan"
echo "open inode tests passed"
