# bfs mount: copy a real tree in, unmount, fsck, remount and compare
# contents and metadata; unmount by umount, fusermount3 and SIGTERM; ro
# mounts; refusals; mount.bcowfs and mount -t bcowfs.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount-lib.sh"

mount_prereqs

note "a source tree: real files plus every kind of inode and metadata"
mkdir src
cp -a /usr/include/linux src/include-linux
cp -a /usr/share/doc/bash src/doc-bash 2>/dev/null || mkdir src/doc-bash
mkdir -p src/special/empty-dir src/modes
: > src/special/empty
printf 'hello\n' > src/special/hello
ln src/special/hello src/special/hello-link1
ln src/special/hello src/modes/hello-link2
ln -s hello src/special/rel-symlink
ln -s /etc/passwd src/special/abs-symlink
ln -s does/not/exist src/special/dangling
ln -s "$(printf 'x%.0s' $(seq 1 300))" src/special/long-target
mkfifo src/special/fifo0
mknod src/special/chardev0 c 1 3
long=$(printf 'n%.0s' $(seq 1 255))
echo long > "src/special/$long"
printf 'tail' | dd of=src/special/sparse bs=1 seek=$((64 * 1024 * 1024)) conv=notrunc 2>/dev/null
printf 'head' | dd of=src/special/sparse bs=1 conv=notrunc 2>/dev/null
head -c 3000000 /dev/urandom > src/special/random
for m in 0400 0644 0755 1777 2755 4755 0000; do
	echo "$m" > "src/modes/f$m"
	chmod "$m" "src/modes/f$m"
	mkdir "src/modes/d$m"
	chmod "$m" "src/modes/d$m"
done
chown 1234:5678 src/modes/f0644
chown -h 4321:8765 src/special/rel-symlink
touch -h -d '2001-02-03 04:05:06.123456789' src/special/rel-symlink
touch -d '1999-12-31 23:59:59.987654321' src/special/hello
touch -d '2038-01-20 00:00:00' src/modes/f0400
set_xattr src/special/hello user.greeting "bonjour"
set_xattr src/special/empty user.empty ""
set_xattr src/special/random user.big "$(head -c 3000 /dev/zero | tr '\0' 'v')"
set_xattr src/special/empty-dir user.dir "on a directory"
for i in 1 2 3 4 5 6 7 8 9 10; do set_xattr src/modes/f0755 "user.n$i" "value $i"; done

note "format and mount"
expect_ok "$BFS" format -q --size 1G img
expect_ok "$BFS" mount img mnt
is_mounted || fail "not mounted after bfs mount returned"
grep -q "^$PWD/img $PWD/mnt fuse.bcowfs " /proc/mounts ||
	fail "/proc/mounts does not say '$PWD/img $PWD/mnt fuse.bcowfs': $(grep mnt /proc/mounts)"
df -k mnt > out || fail "statfs failed"
stat -f -c '%b %a %c' mnt > out || fail "stat -f failed"
[ "$(awk '{print $1}' out)" -gt 0 ] || fail "statfs reports no blocks"

note "copy the tree in"
cp -a src mnt/tree || fail "cp -a into the mount failed"
compare_trees src mnt/tree

note "unmount (umount), fsck, remount, compare"
unmount_wait umount mnt
expect_ok "$BFS" fsck -n img
expect_ok "$BFS" show-super img
contains out "State:                     clean"
expect_ok "$BFS" mount img mnt
compare_trees src mnt/tree
allocated=$(allocated mnt/tree/special/sparse)
[ "$allocated" -lt $((4 * 1024 * 1024)) ] ||
	fail "the sparse file is not sparse after the copy: $allocated bytes allocated"

note "changes after a remount survive fusermount3 -u"
echo more >> mnt/tree/special/hello
rm mnt/tree/special/hello-link1
mv mnt/tree/doc-bash mnt/tree/doc-bash-renamed
unmount_wait fusermount3 -u mnt
expect_ok "$BFS" mount img mnt
[ "$(cat mnt/tree/special/hello)" = "$(printf 'hello\nmore')" ] || fail "append lost"
[ ! -e mnt/tree/special/hello-link1 ] || fail "unlink lost"
[ -d mnt/tree/doc-bash-renamed ] && [ ! -e mnt/tree/doc-bash ] || fail "rename lost"
[ "$(stat -c %h mnt/tree/special/hello)" = 2 ] || fail "link count after unlink"

note "refusals while mounted"
expect_rc 1 "$BFS" mount img mnt2
contains err "already in use"
expect_fail "$BFS" format --force img
expect_fail "$BFS" fsck -n img
unmount_wait umount mnt

note "SIGTERM closes cleanly (foreground mount)"
"$BFS" mount -f img mnt 2>fg.err &
pid=$!
wait_mounted mnt
echo "written before SIGTERM" > mnt/sigterm-file
kill -TERM "$pid"
wait "$pid"
rc=$?
[ "$rc" -eq 0 ] || { cat fg.err; fail "bfs mount -f exited $rc after SIGTERM"; }
! is_mounted || fail "still mounted after SIGTERM"
expect_ok "$BFS" show-super img
contains out "State:                     clean"
expect_ok "$BFS" fsck -n img

note "SIGTERM to the background daemon"
expect_ok "$BFS" mount img mnt
[ "$(cat mnt/sigterm-file)" = "written before SIGTERM" ] || fail "file lost after SIGTERM"
pid=$(holder_pid img)
[ -n "$pid" ] || fail "cannot find the mount daemon"
kill -INT "$pid"
wait_gone "$pid"
! is_mounted || fail "still mounted after SIGINT"
wait_unlocked img
expect_ok "$BFS" fsck -n img

note "read-only mounts"
sum=$(md5sum < img)
expect_ok "$BFS" mount -o ro img mnt
grep " $PWD/mnt fuse.bcowfs ro[,]" /proc/mounts >/dev/null || fail "not ro in /proc/mounts"
if touch mnt/new 2>err; then fail "created a file on a ro mount"; fi
contains err "Read-only file system"
if sh -c 'echo x >> mnt/tree/special/hello' 2>err; then fail "wrote to a ro mount"; fi
cmp src/special/random mnt/tree/special/random || fail "ro mount reads wrong data"
expect_fail "$BFS" format --force img
unmount_wait umount mnt
[ "$(md5sum < img)" = "$sum" ] || fail "a read-only mount changed the image"
expect_ok "$BFS" mount -r img mnt
unmount_wait umount mnt

note "bad images, options, mount points"
head -c $((16 * 1024 * 1024)) /dev/zero > junk
expect_rc 1 "$BFS" mount junk mnt
contains err "not a bfs filesystem"
! is_mounted || fail "mounted junk"
expect_rc 1 "$BFS" mount missing.img mnt
contains err "missing.img"
expect_rc 2 "$BFS" mount -o bogus img mnt
contains err "unknown mount option 'bogus'"
expect_rc 2 "$BFS" mount -o fsname=x img mnt
expect_rc 2 "$BFS" mount -o cache_size=lots img mnt
contains err "invalid value"
expect_rc 2 "$BFS" mount img
expect_rc 1 "$BFS" mount img img
contains err "not a directory"

note "options"
expect_ok "$BFS" mount -o cache_size=64M,max_threads=4,attr_timeout=0,entry_timeout=0.5,nodev,noexec,noatime,defaults,_netdev img mnt
grep " $PWD/mnt fuse.bcowfs " /proc/mounts | grep -q noexec || fail "noexec not passed on"
cat mnt/tree/special/hello > /dev/null || fail "read with options"
unmount_wait umount mnt
expect_ok "$BFS" mount -o writeback,allow_other img mnt
echo wb > mnt/wb && [ "$(cat mnt/wb)" = wb ] || fail "writeback mount"
unmount_wait umount mnt
expect_ok "$BFS" mount -o norecovery img mnt
grep " $PWD/mnt fuse.bcowfs ro[,]" /proc/mounts >/dev/null || fail "norecovery is not ro"
unmount_wait umount mnt

note "a damaged primary superblock: the backup is used, with a warning"
cp img damaged.img
dd if=/dev/zero of=damaged.img bs=4096 seek=1 count=1 conv=notrunc 2>/dev/null
expect_ok "$BFS" mount -o ro damaged.img mnt
contains err "primary superblock"
cmp src/special/random mnt/tree/special/random || fail "reading through the backup superblock"
unmount_wait umount mnt
rm damaged.img

# (needs /dev/fuse open to everyone, as udev sets it up; containers may not)
if command -v setpriv >/dev/null && [ -u "$(command -v fusermount3)" ] &&
	setpriv --reuid=1000 --regid=1000 --clear-groups test -w /dev/fuse; then
	note "a user mount through fusermount3"
	chmod 0755 .
	expect_ok "$BFS" format -q --size 64M user.img
	chown 1000:1000 user.img mnt2
	setpriv --reuid=1000 --regid=1000 --clear-groups "$BFS" mount user.img mnt2 2>err ||
		{ cat err; fail "user mount"; }
	grep -q "^$PWD/user.img $PWD/mnt2 fuse.bcowfs .*user_id=1000" /proc/mounts || fail "user mount entry"
	setpriv --reuid=1000 --regid=1000 --clear-groups ls mnt2 > out || fail "user cannot list own mount"
	contains out "lost+found"
	ls mnt2 >/dev/null 2>&1 && fail "root got into a user mount without allow_root"
	setpriv --reuid=1000 --regid=1000 --clear-groups fusermount3 -u mnt2 || fail "fusermount3 -u as the user"
	wait_unlocked user.img
	expect_ok "$BFS" fsck -n user.img
fi

note "mount.bcowfs: mount(8)'s calling convention"
ln -s "$BFS" mount.bcowfs
expect_ok ./mount.bcowfs img mnt -f -o rw
! is_mounted || fail "mount.bcowfs -f (fake) mounted"
expect_ok ./mount.bcowfs "$PWD/img" "$PWD/mnt" -n -o rw,noatime
is_mounted || fail "mount.bcowfs did not mount"
unmount_wait umount mnt
expect_rc 32 ./mount.bcowfs junk mnt
contains err "mount.bcowfs: "
expect_rc 1 ./mount.bcowfs img

# mount(8) finds helpers as /sbin/mount.TYPE: mount.bcowfs for -t bcowfs,
# mount.fuse.bcowfs for -t fuse.bcowfs.  Both are installed by make install.
if [ -w /sbin ] && [ ! -e /sbin/mount.bcowfs ] && [ ! -e /sbin/mount.fuse.bcowfs ] &&
	command -v mount >/dev/null; then
	note "mount -t bcowfs, -t fuse.bcowfs and fstab through /sbin/mount.bcowfs"
	ln -s "$BFS" /sbin/mount.bcowfs
	ln -s "$BFS" /sbin/mount.fuse.bcowfs
	SBIN_LINK="/sbin/mount.bcowfs /sbin/mount.fuse.bcowfs"
	expect_ok mount -t bcowfs img mnt
	grep -Eq "^($PWD/img|/dev/loop[0-9]+) $PWD/mnt fuse.bcowfs " /proc/mounts || fail "mount -t bcowfs"
	[ "$(cat mnt/sigterm-file)" = "written before SIGTERM" ] || fail "mount -t bcowfs contents"
	unmount_wait umount mnt
	expect_ok mount -t fuse.bcowfs -o ro img mnt
	grep -q "^$PWD/img $PWD/mnt fuse.bcowfs ro," /proc/mounts || fail "mount -t fuse.bcowfs -o ro"
	unmount_wait umount mnt
	printf '%s %s fuse.bcowfs defaults,noatime,ro,nofail 0 0\n' "$PWD/img" "$PWD/mnt" > fstab
	expect_ok mount -T "$PWD/fstab" "$PWD/mnt"
	grep -q " $PWD/mnt fuse.bcowfs ro," /proc/mounts || fail "fstab entry"
	unmount_wait umount mnt
	rm -f $SBIN_LINK
	SBIN_LINK=
else
	note "(mount -t bcowfs skipped: /sbin not writable or mount.bcowfs already installed)"
fi

expect_ok "$BFS" fsck -n img
echo "all mount tests passed"
