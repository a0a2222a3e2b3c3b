# POSIX behaviour through bfs mount: permissions (as a non-root user),
# rename, link counts, sticky and set-group-ID directories, truncate,
# sparse files, fallocate, SEEK_DATA/SEEK_HOLE, O_APPEND, O_DIRECT, mmap,
# unlinked open files, xattr errors, locks, concurrent writers.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount-lib.sh"

mount_prereqs
export TZ=UTC
command -v setpriv >/dev/null || skip "setpriv not installed (util-linux)"

# run as an unprivileged user (uid/gid 1000 or 2000), no supplementary groups
as_user() { u=$1; shift; setpriv --reuid="$u" --regid="$u" --clear-groups "$@"; }
py() { python3 -c "$@"; }

# the scratch directory is 0700: the test users must reach the mount point
chmod 0755 .
expect_ok "$BFS" format -q --size 2G img
# without allow_other FUSE lets nobody but the mounting user in at all
expect_ok "$BFS" mount -o allow_other img mnt
M=$PWD/mnt

note "permissions (default_permissions: the kernel checks them)"
mkdir "$M/root-only" "$M/u1000" "$M/shared"
chmod 0755 "$M/root-only"
chown 1000:1000 "$M/u1000"
echo secret > "$M/root-only/secret"
chmod 0600 "$M/root-only/secret"
echo public > "$M/root-only/public"
chmod 0644 "$M/root-only/public"
as_user 1000 cat "$M/root-only/secret" 2>err && fail "user read a 0600 root file"
contains err "Permission denied"
[ "$(as_user 1000 cat "$M/root-only/public")" = public ] || fail "user cannot read a 0644 file"
as_user 1000 sh -c "echo x >> '$M/root-only/public'" 2>err && fail "user wrote a 0644 root file"
as_user 1000 touch "$M/root-only/new" 2>err && fail "user created a file in a 0755 root dir"
as_user 1000 touch "$M/u1000/mine" || fail "user cannot create in own dir"
[ "$(stat -c %u:%g "$M/u1000/mine")" = 1000:1000 ] || fail "owner of a user's new file"
as_user 1000 chmod 0777 "$M/root-only/public" 2>err && fail "user chmod'ed root's file"
contains err "Operation not permitted"
as_user 1000 chown 1000 "$M/u1000/mine" || fail "chown to oneself"
as_user 1000 chown 2000 "$M/u1000/mine" 2>err && fail "user gave a file away"
chmod 0700 "$M/u1000"
as_user 2000 ls "$M/u1000" 2>err && fail "other user listed a 0700 dir"
as_user 1000 ls "$M/u1000" >/dev/null || fail "owner cannot list own 0700 dir"
as_user 1000 sh -c "umask 027; mkdir '$M/u1000/d'; touch '$M/u1000/d/f'"
[ "$(stat -c %a "$M/u1000/d")" = 750 ] || fail "umask not applied to mkdir: $(stat -c %a "$M/u1000/d")"
[ "$(stat -c %a "$M/u1000/d/f")" = 640 ] || fail "umask not applied to create"

note "set-user-ID bit cleared by a write of another user"
cp /bin/true "$M/shared/suid"
chmod 4777 "$M/shared/suid"
as_user 1000 sh -c "echo >> '$M/shared/suid'"
[ "$(stat -c %a "$M/shared/suid")" = 777 ] || fail "set-user-ID kept after write: $(stat -c %a "$M/shared/suid")"

note "sticky directory"
mkdir "$M/tmp"
chmod 1777 "$M/tmp"
as_user 1000 touch "$M/tmp/a"
as_user 2000 touch "$M/tmp/b"
as_user 2000 rm -f "$M/tmp/a" 2>err && fail "user 2000 removed user 1000's file in a sticky dir"
as_user 2000 mv "$M/tmp/a" "$M/tmp/c" 2>err && fail "user 2000 renamed user 1000's file in a sticky dir"
as_user 1000 rm "$M/tmp/a" || fail "owner cannot remove own file in a sticky dir"
rm "$M/tmp/b" || fail "root cannot remove in a sticky dir"

note "set-group-ID directory"
mkdir "$M/sgid"
chown 0:5678 "$M/sgid"
chmod 2775 "$M/sgid"
touch "$M/sgid/f"
mkdir "$M/sgid/d"
[ "$(stat -c %g "$M/sgid/f")" = 5678 ] || fail "file did not inherit the group"
[ "$(stat -c %g "$M/sgid/d")" = 5678 ] || fail "dir did not inherit the group"
[ -g "$M/sgid/d" ] || fail "dir did not inherit set-group-ID"

note "link counts"
mkdir "$M/links"
echo data > "$M/links/f"
[ "$(stat -c %h "$M/links/f")" = 1 ] || fail "new file nlink"
ln "$M/links/f" "$M/links/g"
ln "$M/links/f" "$M/links/h"
[ "$(stat -c %h "$M/links/f")" = 3 ] || fail "nlink after two links"
[ "$(stat -c %i "$M/links/f")" = "$(stat -c %i "$M/links/h")" ] || fail "link has another inode"
rm "$M/links/f"
[ "$(stat -c %h "$M/links/g")" = 2 ] || fail "nlink after unlink"
[ "$(cat "$M/links/h")" = data ] || fail "data through the remaining link"
[ "$(stat -c %h "$M/links")" = 2 ] || fail "empty dir nlink $(stat -c %h "$M/links")"
mkdir "$M/links/s1" "$M/links/s2"
[ "$(stat -c %h "$M/links")" = 4 ] || fail "dir nlink with two subdirs: $(stat -c %h "$M/links")"
rmdir "$M/links/s2"
[ "$(stat -c %h "$M/links")" = 3 ] || fail "dir nlink after rmdir"
ln "$M/links" "$M/links2" 2>/dev/null && fail "hard link to a directory"
rmdir "$M/links" 2>err && fail "rmdir of a non-empty dir"
contains err "Directory not empty"

note "rename"
mkdir "$M/ren" "$M/ren/d1" "$M/ren/d2" "$M/ren/full"
echo a > "$M/ren/a"
echo b > "$M/ren/b"
touch "$M/ren/full/x"
ino_b=$(stat -c %i "$M/ren/a")
mv "$M/ren/a" "$M/ren/b"
[ "$(cat "$M/ren/b")" = a ] && [ ! -e "$M/ren/a" ] || fail "rename over a file"
[ "$(stat -c %i "$M/ren/b")" = "$ino_b" ] || fail "rename changed the inode number"
py 'import os; os.rename("'"$M"'/ren/d1", "'"$M"'/ren/d2")' || fail "rename dir over empty dir"
[ ! -e "$M/ren/d1" ] && [ -d "$M/ren/d2" ] || fail "rename dir over empty dir result"
py 'import os; os.rename("'"$M"'/ren/d2", "'"$M"'/ren/full")' 2>err && fail "rename over non-empty dir"
contains err "Directory not empty"
py 'import os; os.rename("'"$M"'/ren/d2", "'"$M"'/ren/d2/sub")' 2>err && fail "dir moved into itself"
contains err "Invalid argument"
py 'import os; os.rename("'"$M"'/ren/b", "'"$M"'/ren/full")' 2>err && fail "file over dir"
contains err "Is a directory"
py 'import os; os.rename("'"$M"'/ren/full", "'"$M"'/ren/b")' 2>err && fail "dir over file"
contains err "Not a directory"
mv "$M/ren/b" "$M/links/moved"
[ "$(cat "$M/links/moved")" = a ] || fail "rename across directories"
mkdir "$M/ren/sub"
mv "$M/ren/sub" "$M/links/"
[ "$(stat -c %h "$M/links")" = 4 ] || fail "nlink after moving a dir in: $(stat -c %h "$M/links")"
[ "$(stat -c %h "$M/ren")" = 4 ] || fail "nlink after moving a dir out: $(stat -c %h "$M/ren")"
[ "$(cd "$M/links/sub/.." && pwd -P)" = "$M/links" ] || fail "'..' of a moved dir"
echo x > "$M/ren/x"
echo y > "$M/ren/y"
renameat2() {
	python3 - "$@" <<'EOF'
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
flags = {"noreplace": 1, "exchange": 2}[sys.argv[3]]
if libc.renameat2(-100, sys.argv[1].encode(), -100, sys.argv[2].encode(), flags):
    e = ctypes.get_errno()
    sys.exit("renameat2: " + os.strerror(e))
EOF
}
renameat2 "$M/ren/x" "$M/ren/y" noreplace 2>err && fail "RENAME_NOREPLACE replaced"
contains err "File exists"
renameat2 "$M/ren/x" "$M/ren/y" exchange || fail "RENAME_EXCHANGE"
[ "$(cat "$M/ren/x")" = y ] && [ "$(cat "$M/ren/y")" = x ] || fail "RENAME_EXCHANGE result"
renameat2 "$M/ren/x" "$M/ren/z" noreplace || fail "RENAME_NOREPLACE to a new name"

note "truncate and sparse files"
f=$M/sparse
truncate -s 1G "$f"
[ "$(stat -c %s "$f")" = 1073741824 ] || fail "size after truncate up"
[ "$(allocated "$f")" -lt 1048576 ] || fail "truncate up allocated $(allocated "$f") bytes"
[ "$(dd if="$f" bs=4096 skip=12345 count=1 2>/dev/null | tr -d '\0' | wc -c)" = 0 ] ||
	fail "hole does not read as zeros"
printf 'middle' | dd of="$f" bs=1 seek=536870912 conv=notrunc 2>/dev/null
[ "$(dd if="$f" bs=1 skip=536870912 count=6 2>/dev/null)" = middle ] || fail "write in a hole"
[ "$(allocated "$f")" -lt 4194304 ] || fail "one write in a hole allocated $(allocated "$f") bytes"
py '
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
d = os.lseek(fd, 0, os.SEEK_DATA)
h = os.lseek(fd, d, os.SEEK_HOLE)
assert d <= 536870912 < h, (d, h)
assert os.lseek(fd, 0, os.SEEK_HOLE) <= 536870912
' "$f" || fail "SEEK_DATA / SEEK_HOLE"
head -c 100000 /dev/urandom > data
cp data "$M/trunc"
truncate -s 50000 "$M/trunc"
head -c 50000 data | cmp - "$M/trunc" || fail "truncate down"
truncate -s 80000 "$M/trunc"
{ head -c 50000 data; head -c 30000 /dev/zero; } | cmp - "$M/trunc" || fail "truncate up after down: stale data"
: > "$M/trunc"
[ "$(stat -c %s "$M/trunc")" = 0 ] || fail "O_TRUNC"

note "fallocate"
fallocate -l 8M "$M/falloc" || fail "fallocate"
[ "$(stat -c %s "$M/falloc")" = 8388608 ] || fail "fallocate size"
head -c 8388608 /dev/zero | cmp - "$M/falloc" || fail "fallocated range not zero"
head -c 1048576 /dev/urandom > chunk
dd if=chunk of="$M/falloc" bs=1M seek=2 conv=notrunc 2>/dev/null
fallocate -p -o 2097152 -l 524288 "$M/falloc" || fail "punch hole"
{ head -c 2097152 /dev/zero; head -c 524288 /dev/zero; tail -c 524288 chunk; head -c 5242880 /dev/zero; } |
	cmp - "$M/falloc" || fail "punch hole contents"
fallocate -n -o 16M -l 1M "$M/falloc" || fail "fallocate --keep-size"
[ "$(stat -c %s "$M/falloc")" = 8388608 ] || fail "keep-size changed the size"
fallocate -z -o 2621440 -l 4096 "$M/falloc" || fail "zero range"
fallocate -c -o 0 -l 1M "$M/falloc" 2>err && fail "collapse range is not supported but succeeded"

note "O_APPEND from two processes"
append() {
	python3 - "$@" <<'EOF'
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
rec = (sys.argv[2] * 99 + "\n").encode()
for _ in range(2000):
    assert os.write(fd, rec) == 100
EOF
}
append "$M/log" A & p1=$!
append "$M/log" B & p2=$!
wait $p1 || fail "appender A"
wait $p2 || fail "appender B"
[ "$(stat -c %s "$M/log")" = 400000 ] || fail "O_APPEND lost writes: size $(stat -c %s "$M/log")"
[ "$(grep -c -x 'A\{99\}' "$M/log")" = 2000 ] || fail "O_APPEND records of A mixed up"
[ "$(grep -c -x 'B\{99\}' "$M/log")" = 2000 ] || fail "O_APPEND records of B mixed up"

note "O_DIRECT"
head -c 8388608 /dev/urandom > big
dd if=big of="$M/direct" bs=1M oflag=direct 2>err || { cat err; fail "O_DIRECT write"; }
dd if="$M/direct" of=big.back bs=1M iflag=direct 2>err || { cat err; fail "O_DIRECT read"; }
cmp big big.back || fail "O_DIRECT data"
cmp big "$M/direct" || fail "buffered read after O_DIRECT write"
dd if=big of="$M/direct" bs=4096 count=1 seek=5 oflag=direct conv=notrunc 2>/dev/null
[ "$(dd if="$M/direct" bs=4096 skip=5 count=1 2>/dev/null | md5sum)" = "$(head -c 4096 big | md5sum)" ] ||
	fail "page cache stale after an O_DIRECT overwrite"

note "mmap reads and writes"
python3 - "$M/mm" <<'EOF' || fail "mmap"
import mmap, os, sys
p = sys.argv[1]
with open(p, "wb") as f:
    f.write(b"\0" * 1048576)
with open(p, "r+b") as f:
    m = mmap.mmap(f.fileno(), 0)
    for i in range(0, 1048576, 4096):
        m[i:i + 8] = b"page%04d" % (i // 4096)
    m.flush()
    m.close()
with open(p, "rb") as f:
    data = f.read()
for i in range(0, 1048576, 4096):
    assert data[i:i + 8] == b"page%04d" % (i // 4096), i
with open(p, "rb") as f:
    m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
    assert m[4096 * 7:4096 * 7 + 8] == b"page0007"
    m.close()
EOF

note "an unlinked file stays readable while open"
python3 - "$M/doomed" <<'EOF' || fail "unlinked open file"
import os, sys
p = sys.argv[1]
fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o644)
os.write(fd, b"still here")
os.unlink(p)
assert not os.path.exists(p)
assert os.fstat(fd).st_nlink == 0
os.write(fd, b", and more")
assert os.pread(fd, 100, 0) == b"still here, and more"
os.fsync(fd)
os.close(fd)
EOF

note "times"
touch -d '2000-01-01 00:00:00.5' "$M/times"
[ "$(stat -c %Y "$M/times")" = 946684800 ] || fail "utimensat"
[ "$(stat -c %y "$M/times")" = "2000-01-01 00:00:00.500000000 +0000" ] || fail "utimensat ns"
touch -a -d '2010-01-01' "$M/times"
[ "$(stat -c %X "$M/times")" = 1262304000 ] && [ "$(stat -c %Y "$M/times")" = 946684800 ] ||
	fail "touch -a changed mtime or not atime"
before=$(stat -c %Y "$M/times")
touch "$M/times"
[ "$(stat -c %Y "$M/times")" -gt "$before" ] || fail "touch (UTIME_NOW)"
mt=$(stat -c %Y "$M/ren")
sleep 1.1
touch "$M/ren/newfile"
[ "$(stat -c %Y "$M/ren")" -gt "$mt" ] || fail "directory mtime not updated by create"

note "xattr errors"
touch "$M/xa"
python3 - "$M/xa" <<'EOF' || fail "xattr semantics"
import errno, os, sys
p = sys.argv[1]
def err(f, *a, **k):
    try:
        f(*a, **k)
    except OSError as e:
        return e.errno
    return 0
assert err(os.getxattr, p, "user.none") == errno.ENODATA
os.setxattr(p, "user.a", b"1")
assert err(os.setxattr, p, "user.a", b"2", os.XATTR_CREATE) == errno.EEXIST
assert err(os.setxattr, p, "user.b", b"2", os.XATTR_REPLACE) == errno.ENODATA
os.setxattr(p, "user.a", b"3", os.XATTR_REPLACE)
assert os.getxattr(p, "user.a") == b"3"
os.setxattr(p, "user.big", b"x" * 60000)
assert os.getxattr(p, "user.big") == b"x" * 60000
assert sorted(os.listxattr(p)) == ["user.a", "user.big"]
os.removexattr(p, "user.a")
assert err(os.removexattr, p, "user.a") == errno.ENODATA
assert os.listxattr(p) == ["user.big"]
os.setxattr(p, "trusted.t", b"root only")
assert os.getxattr(p, "trusted.t") == b"root only"
EOF

note "flock and POSIX locks are kept by the kernel"
touch "$M/lockfile"
flock -x "$M/lockfile" sh -c 'touch locked; sleep 2' &
lp=$!
i=0
until [ -e locked ]; do sleep 0.1; i=$((i + 1)); [ $i -lt 100 ] || fail "flock holder did not start"; done
flock -n -x "$M/lockfile" true && fail "second exclusive flock granted"
wait $lp
flock -n -x "$M/lockfile" true || fail "flock not released"

note "concurrent writers from several processes"
mkdir "$M/conc"
for w in 1 2 3 4 5 6; do
	(
		head -c $((3 * 1048576 + w * 4099)) /dev/urandom > "src.$w"
		cp "src.$w" "$M/conc/big.$w"
		i=0
		while [ $i -lt 150 ]; do
			echo "writer $w file $i" > "$M/conc/small.$w.$i"
			i=$((i + 1))
		done
	) &
done
wait
for w in 1 2 3 4 5 6; do
	cmp "src.$w" "$M/conc/big.$w" || fail "writer $w: data differs"
	i=0
	while [ $i -lt 150 ]; do
		[ "$(cat "$M/conc/small.$w.$i")" = "writer $w file $i" ] || fail "small.$w.$i"
		i=$((i + 1))
	done
done
[ "$(ls "$M/conc" | wc -l)" = $((6 * 151)) ] || fail "wrong number of files in conc/"

note "everything is still there after a remount"
sums=$(cd "$M" && md5sum conc/big.* mm direct falloc log sparse | md5sum)
unmount_wait umount mnt
expect_ok "$BFS" fsck -n img
expect_ok "$BFS" mount img mnt
[ "$(cd "$M" && md5sum conc/big.* mm direct falloc log sparse | md5sum)" = "$sums" ] ||
	fail "data changed across a remount"
[ "$(stat -c %h "$M/links")" = 4 ] || fail "dir nlink after remount"
[ "$(stat -c %g "$M/sgid/f")" = 5678 ] || fail "group after remount"
[ ! -e "$M/doomed" ] || fail "unlinked file came back"
unmount_wait umount mnt
expect_ok "$BFS" fsck -n img

note "the same data paths with the kernel's write-back cache (-o writeback)"
expect_ok "$BFS" mount -o writeback img mnt
rm -f "$M/log"
append "$M/log" A & p1=$!
append "$M/log" B & p2=$!
wait $p1 && wait $p2 || fail "appenders (writeback)"
[ "$(grep -c -x 'A\{99\}' "$M/log")" = 2000 ] && [ "$(grep -c -x 'B\{99\}' "$M/log")" = 2000 ] ||
	fail "O_APPEND with writeback"
python3 - "$M/wb" <<'EOF' || fail "small random writes (writeback)"
import os, random, sys
r = random.Random(5)
model = bytearray(300000)
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
os.ftruncate(fd, len(model))
for _ in range(3000):
    off, n = r.randrange(len(model) - 100), r.randrange(1, 100)
    b = os.urandom(n)
    os.pwrite(fd, b, off)
    model[off:off + n] = b
os.fsync(fd)
assert os.pread(fd, len(model) + 1, 0) == bytes(model)
os.close(fd)
open(sys.argv[1] + ".model", "wb").write(model)
EOF
touch -d '2001-01-01' "$M/wb.model"
sums=$(cd "$M" && md5sum wb wb.model log)
unmount_wait umount mnt
expect_ok "$BFS" mount img mnt
[ "$(cd "$M" && md5sum wb wb.model log)" = "$sums" ] || fail "writeback data changed across a remount"
[ "$(stat -c %Y "$M/wb.model")" = 978307200 ] || fail "mtime set under writeback lost"
unmount_wait umount mnt
expect_ok "$BFS" fsck -n img
echo "all POSIX tests passed"
