# File handles: name_to_handle_at(2) / open_by_handle_at(2) work on the
# mount, also for inodes the kernel no longer caches (after a remount, as
# an NFS server restart sees them), directories reconnect through "..",
# and handles of removed files are stale.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount-lib.sh"

mount_prereqs

HANDLES='
import ctypes, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD = -100
def handle(path):
    buf = ctypes.create_string_buffer(8 + 128)
    struct.pack_into("Ii", buf, 0, 128, 0)
    mnt_id = ctypes.c_int()
    if libc.name_to_handle_at(AT_FDCWD, path.encode(), buf, ctypes.byref(mnt_id), 0):
        raise OSError(ctypes.get_errno(), "name_to_handle_at " + path)
    size = struct.unpack_from("I", buf, 0)[0]
    return buf.raw[:8 + size]
def open_handle(mount_dir, h, flags=os.O_RDONLY):
    mfd = os.open(mount_dir, os.O_RDONLY | os.O_DIRECTORY)
    buf = ctypes.create_string_buffer(h, len(h))
    fd = libc.open_by_handle_at(mfd, buf, flags)
    err = ctypes.get_errno()
    os.close(mfd)
    if fd < 0:
        raise OSError(err, os.strerror(err))
    return fd
'

expect_ok "$BFS" format -q --size 256M img
expect_ok "$BFS" mount img mnt
mkdir -p mnt/a/b/c
echo "by handle" > mnt/a/b/c/file
echo "doomed" > mnt/a/gone

note "handles taken, and used while cached"
python3 - "$PWD/mnt" <<EOF || fail "file handles on a cached inode"
$HANDLES
mnt = sys.argv[1]
hs = {n: handle(os.path.join(mnt, n)) for n in ("a/b/c/file", "a/b/c", "a/gone")}
open("handles", "w").write(repr({k: v.hex() for k, v in hs.items()}))
fd = open_handle(mnt, hs["a/b/c/file"])
assert os.read(fd, 100) == b"by handle\n"
os.close(fd)
EOF

note "after a remount: the kernel looks the inodes up by number"
unmount_wait umount mnt
expect_ok "$BFS" mount img mnt
python3 - "$PWD/mnt" <<EOF || fail "file handles after a remount"
$HANDLES
mnt = sys.argv[1]
hs = {k: bytes.fromhex(v) for k, v in eval(open("handles").read()).items()}
fd = open_handle(mnt, hs["a/b/c/file"])
data = os.read(fd, 100)
if data != b"by handle\n":
    sys.exit("read through a handle after remount: %r" % data)
os.close(fd)
# a directory handle reconnects to its path through ".."
fd = open_handle(mnt, hs["a/b/c"], os.O_RDONLY | os.O_DIRECTORY)
path = os.readlink("/proc/self/fd/%d" % fd)
if path != os.path.join(mnt, "a/b/c"):
    sys.exit("directory handle resolves to %s" % path)
if os.listdir(fd) != ["file"]:
    sys.exit("directory handle lists %s" % os.listdir(fd))
os.close(fd)
# a removed file's handle is stale
os.unlink(os.path.join(mnt, "a/gone"))
try:
    open_handle(mnt, hs["a/gone"])
    sys.exit("a handle of a removed file still opens")
except OSError as e:
    if e.errno != 116:	# ESTALE
        sys.exit("removed file: %s, want ESTALE" % e)
EOF
note "stale after a remount too"
unmount_wait umount mnt
expect_ok "$BFS" mount img mnt
python3 - "$PWD/mnt" <<EOF || fail "handle of a removed file after remount"
$HANDLES
mnt = sys.argv[1]
hs = {k: bytes.fromhex(v) for k, v in eval(open("handles").read()).items()}
try:
    open_handle(mnt, hs["a/gone"])
    sys.exit("a handle of a removed file opens after remount")
except OSError as e:
    if e.errno != 116:
        sys.exit("removed file after remount: %s, want ESTALE" % e)
EOF
unmount_wait umount mnt
expect_ok "$BFS" fsck -n img
echo "file handle tests passed"
