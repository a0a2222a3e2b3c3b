# File attributes (lsattr / chattr): immutable, append-only, nodump and
# noatime are stored, survive a remount, and are enforced by the
# filesystem as on ext4.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount-lib.sh"

mount_prereqs
command -v chattr >/dev/null && command -v lsattr >/dev/null ||
	skip "chattr/lsattr not installed (Debian package e2fsprogs)"

# refused CMD...: the command fails with "Operation not permitted"
refused() {
	"$@" >out 2>err && fail "'$*' succeeded on a protected file"
	grep -q "Operation not permitted" err || { cat err; fail "'$*': not EPERM"; }
}
flags_of() { lsattr -d "$1" | awk '{print $1}'; }

expect_ok "$BFS" format -q --size 256M img
chmod 711 .	# another user reaches the mount below
expect_ok "$BFS" mount -o attr_timeout=0,allow_other img mnt
echo hi > mnt/f
mkdir mnt/d mnt/e
echo inside > mnt/d/old

note "lsattr on a fresh file and directory"
expect_ok lsattr mnt/f
expect_ok lsattr -d mnt/d
[ "$(flags_of mnt/f)" = "----------------------" ] || fail "fresh file has flags $(flags_of mnt/f)"

note "immutable: no write, truncate, rename, unlink, link, chmod, chown, utimes, xattr"
expect_ok chattr +i mnt/f
case $(flags_of mnt/f) in ----i*) ;; *) fail "chattr +i not shown: $(flags_of mnt/f)" ;; esac
refused sh -c "echo x >> mnt/f"
refused sh -c "echo x > mnt/f"
refused truncate -s 0 mnt/f
refused mv mnt/f mnt/g
refused rm mnt/f
refused ln mnt/f mnt/h
refused chmod 600 mnt/f
refused chown 1:1 mnt/f
refused touch mnt/f
refused python3 -c 'import os; os.setxattr("mnt/f", "user.x", b"1")'
mv mnt/e mnt/f 2>err && fail "rename over an immutable file succeeded"
python3 - "$PWD/mnt/f" <<'EOF' || fail "an fd opened before chattr +i could still write"
import os, subprocess, sys
# opened for writing before the flag was set: writes are refused all the same
subprocess.run(["chattr", "-i", sys.argv[1]], check=True)
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
subprocess.run(["chattr", "+i", sys.argv[1]], check=True)
try:
    os.write(fd, b"late")
    sys.exit("write after chattr +i succeeded")
except PermissionError:
    pass
EOF
[ "$(cat mnt/f)" = hi ] || fail "the immutable file changed: $(cat mnt/f)"

note "immutable directory: no new or removed entries; its files still change"
expect_ok chattr +i mnt/d
refused touch mnt/d/new
refused rm mnt/d/old
refused mv mnt/d/old mnt/old
refused mkdir mnt/d/sub
echo changed > mnt/d/old || fail "a file in an immutable directory could not be written"
expect_ok chattr -i mnt/d

note "append-only: appends only, and the name stays"
expect_ok chattr -i mnt/f
expect_ok chattr +a mnt/f
echo more >> mnt/f || fail "append to an append-only file failed"
refused sh -c "echo x > mnt/f"
refused truncate -s 1 mnt/f
refused rm mnt/f
refused chmod 600 mnt/f
refused fallocate -p -o 0 -l 1 mnt/f
python3 - "$PWD/mnt/f" <<'EOF' || fail "append-only: a write in the middle was allowed"
import os, sys
try:
    fd = os.open(sys.argv[1], os.O_WRONLY)
    sys.exit("open for writing without O_APPEND succeeded")
except PermissionError:
    pass
EOF
[ "$(cat mnt/f)" = "hi
more" ] || fail "append-only file holds $(cat mnt/f)"

note "only root (CAP_LINUX_IMMUTABLE) sets +i or +a; the owner may set nodump"
chown 4242 mnt/e
python3 - "$PWD/mnt/e" <<'EOF' || fail "permission checks of chattr"
import os, subprocess, sys
pid = os.fork()
if pid == 0:
    os.setgid(4242)
    os.setuid(4242)
    r = subprocess.run(["chattr", "+i", sys.argv[1]], capture_output=True)
    if r.returncode == 0:
        os._exit(1)
    r = subprocess.run(["chattr", "+d", sys.argv[1]], capture_output=True)
    os._exit(0 if r.returncode == 0 else 2)
_, st = os.waitpid(pid, 0)
sys.exit({0: 0, 1: "a user set +i", 2: "the owner could not set +d"}.get(os.WEXITSTATUS(st), 3))
EOF

note "noatime flag: reads leave atime; nodump is kept; unsupported flags are refused"
expect_ok chattr -a +A +d mnt/f
t0=$(python3 -c 'import os; print(os.stat("mnt/f").st_atime_ns)')
touch -m mnt/f
cat mnt/f > /dev/null
[ "$(python3 -c 'import os; print(os.stat("mnt/f").st_atime_ns)')" = "$t0" ] ||
	fail "a read changed the atime of a +A file"
expect_fail chattr +c mnt/f
contains err "Operation not supported"

note "the flags survive a remount; fsck is clean"
expect_ok chattr +i mnt/d
unmount_wait umount mnt
expect_ok "$BFS" fsck -n img
expect_ok "$BFS" mount img mnt
case $(flags_of mnt/f) in ------dA*) ;; *) fail "flags after remount: $(flags_of mnt/f)" ;; esac
case $(flags_of mnt/d) in ----i*) ;; *) fail "directory flags after remount: $(flags_of mnt/d)" ;; esac
expect_ok chattr -i mnt/d
unmount_wait umount mnt
echo "attribute tests passed"
