# The kernel's attribute and name caches stay exact however long they may
# keep entries (attr_timeout / entry_timeout): only this mount changes the
# filesystem, and each change either comes through the kernel (which drops
# what it changes) or returns the new attributes.  After every kind of
# change, what stat(2) shows from the cache must be what the filesystem
# says (stat --cached=never: AT_STATX_FORCE_SYNC asks it), with and without
# the write-back cache.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount-lib.sh"

mount_prereqs
command -v setfacl >/dev/null || skip "setfacl not installed (Debian package acl)"
command -v fallocate >/dev/null || skip "fallocate not installed (util-linux)"

expect_ok "$BFS" format -q --size 256M img
# mode, links, owner, size, blocks, mtime, ctime (ns); atime is the reader's business
FMT='%f %h %u %g %s %b %y %z'
same() {
	for p in "$@"; do
		a=$(stat -c "$FMT" "$p") || fail "$what: stat $p"
		b=$(stat --cached=never -c "$FMT" "$p") || fail "$what: stat --cached=never $p"
		[ "$a" = "$b" ] || fail "$what ($opts): the cache says '$a' of $p, the filesystem '$b'"
	done
}
# step WHAT CMD...: cache the attributes of every file, change, compare
step() {
	what=$1
	shift
	stat mnt/t mnt/t/* mnt/t/*/* >/dev/null 2>&1
	"$@" || fail "$what: '$*' failed"
	same mnt/t $(ls -d mnt/t/* mnt/t/*/* 2>/dev/null)
}

for opts in attr_timeout=3600,entry_timeout=3600 attr_timeout=3600,entry_timeout=3600,writeback; do
	note "-o $opts"
	expect_ok "$BFS" mount -o "$opts" img mnt
	rm -rf mnt/t
	mkdir mnt/t mnt/t/a mnt/t/b
	echo one > mnt/t/f
	step "append" sh -c 'echo two >> mnt/t/f'
	step "write past the end" dd if=/dev/urandom of=mnt/t/f bs=4096 seek=8 count=2 conv=notrunc status=none
	step "punch a hole" fallocate -p -o 32768 -l 4096 mnt/t/f
	step "preallocate" fallocate -o 65536 -l 65536 mnt/t/f
	step "truncate" truncate -s 5000 mnt/t/f
	step "open with O_TRUNC" sh -c ': > mnt/t/f'
	step "hard link" ln mnt/t/f mnt/t/a/g
	step "unlink the other name" rm mnt/t/a/g
	step "rename" mv mnt/t/f mnt/t/b/f
	step "mkdir" mkdir mnt/t/a/sub
	step "rename a directory across" mv mnt/t/a/sub mnt/t/b/sub
	step "rmdir" rmdir mnt/t/b/sub
	step "chmod" chmod 0640 mnt/t/b/f
	step "chown" chown 1000:1000 mnt/t/b/f
	step "setfacl" setfacl -m u:2000:rwx mnt/t/b/f
	step "setfacl -b" setfacl -b mnt/t/b/f
	step "setxattr" setfattr -n user.x -v 1 mnt/t/b/f
	step "removexattr" setfattr -x user.x mnt/t/b/f
	step "symlink" ln -s f mnt/t/b/l
	step "mkfifo" mkfifo mnt/t/b/p
	step "write through a second descriptor" sh -c 'exec 3>>mnt/t/b/f; echo more >&3; echo again >> mnt/t/b/f'
	step "utimes" touch -d 2001-01-01 mnt/t/b/f
	step "chattr (an ioctl: the filesystem drops the kernel's attributes itself)" chattr +d mnt/t/b/f
	step "chattr on a directory" chattr +d mnt/t/b
	echo t1 > mnt/t/t1
	echo t2 > mnt/t/t2
	ln mnt/t/t2 mnt/t/a/t2b
	step "rename over a file with another link" mv mnt/t/t1 mnt/t/t2
	mkdir mnt/t/a/x
	step "exchange a file and a directory (RENAME_EXCHANGE)" python3 -c '
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.renameat2(-100, b"mnt/t/t2", -100, b"mnt/t/a/x", 2):
    sys.exit("renameat2: errno %d" % ctypes.get_errno())'
	stat mnt/t/nothing 2>/dev/null && fail "a name that is not there"
	step "create a name looked up before" sh -c 'echo x > mnt/t/nothing'
	[ "$(cat mnt/t/nothing)" = x ] || fail "a negative entry outlived the create"
	unmount_wait umount mnt
	expect_ok "$BFS" fsck -n img
done
echo "attribute cache tests passed"
