# Helpers for the FUSE mount tests (5x-mount*.sh); source after lib.sh.
# Mount points are ./mnt and ./mnt2 in the test's scratch directory.

SBIN_LINK=

mount_cleanup() {
	for d in mnt mnt2; do
		if grep -q " $PWD/$d fuse" /proc/mounts 2>/dev/null; then
			umount -l "$PWD/$d" 2>/dev/null || fusermount3 -u -z "$PWD/$d" 2>/dev/null
		fi
	done
	[ -z "$SBIN_LINK" ] || rm -f $SBIN_LINK
}

# skip (77) where FUSE mounts cannot work; set up mnt, mnt2 and the cleanup
mount_prereqs() {
	[ "$(id -u)" -eq 0 ] || skip "needs root (FUSE mounts, chown, mknod)"
	[ -c /dev/fuse ] || skip "no /dev/fuse"
	command -v fusermount3 >/dev/null || skip "fusermount3 not installed (Debian package fuse3)"
	command -v python3 >/dev/null || skip "python3 not installed"
	command -v flock >/dev/null || skip "flock(1) not installed (util-linux)"
	"$BFS" mount --help >/dev/null 2>&1 || skip "this bfs has no mount command"
	mkdir -p mnt mnt2
	trap mount_cleanup EXIT
	trap 'exit 1' HUP INT TERM
}

is_mounted() { grep -q " $PWD/${1:-mnt} fuse.bcowfs " /proc/mounts; }

wait_mounted() {
	i=0
	until is_mounted "$1"; do
		sleep 0.1
		i=$((i + 1))
		[ $i -lt 200 ] || fail "$1 not mounted after 20 s"
	done
}

# the image's lock is free: the mount process has closed the filesystem
wait_unlocked() {
	i=0
	until flock -n -x "$1" true 2>/dev/null; do
		sleep 0.1
		i=$((i + 1))
		[ $i -lt 300 ] || fail "$1 still in use 30 s after unmount"
	done
}

wait_gone() {
	i=0
	while kill -0 "$1" 2>/dev/null; do
		sleep 0.1
		i=$((i + 1))
		[ $i -lt 300 ] || fail "process $1 still running after 30 s"
	done
}

# the pid of the process that holds file $1 open (the mount daemon)
holder_pid() {
	f=$(realpath "$1")
	for fd in /proc/[0-9]*/fd/*; do
		if [ "$(readlink "$fd" 2>/dev/null)" = "$f" ]; then
			p=${fd#/proc/}
			echo "${p%%/*}"
			return
		fi
	done
}

# unmount_wait UNMOUNT-COMMAND... DIR: unmount, then wait until the
# background process has closed the image (umount(8) returns before that)
unmount_wait() {
	for dir in "$@"; do :; done	# the last argument
	dev=$(awk -v d="$(realpath "$dir")" '$2 == d { print $1 }' /proc/mounts)
	[ -n "$dev" ] || fail "unmount_wait: $dir is not mounted"
	"$@" || fail "'$*' failed"
	! is_mounted "$(basename "$dir")" || fail "$dir still mounted after '$*'"
	wait_unlocked "$dev"
}

set_xattr() {
	python3 -c 'import os, sys
os.setxattr(sys.argv[1], sys.argv[2], sys.argv[3].encode(), follow_symlinks=False)' "$@" ||
		fail "setxattr $2 on $1"
}

# one line per inode: path, type, mode, owner, links, size, mtime (ns),
# device number, symlink target, user xattrs, and the first path of its
# hard-link group; two trees with the same listing hold the same metadata
tree_listing() {
	python3 - "$1" <<'EOF'
import os, stat, sys
root = sys.argv[1]
first = {}
for dirpath, dirs, files in os.walk(root):
    dirs.sort()
    for name in ["."] + sorted(dirs + files):
        p = os.path.join(dirpath, name) if name != "." else dirpath
        rel = os.path.relpath(p, root)
        st = os.lstat(p)
        isdir = stat.S_ISDIR(st.st_mode)
        line = [rel, "%o" % st.st_mode, "%d:%d" % (st.st_uid, st.st_gid), "links=%d" % st.st_nlink]
        if not isdir:
            line.append("size=%d" % st.st_size)
        line.append("mtime=%d" % st.st_mtime_ns)
        if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
            line.append("rdev=%d:%d" % (os.major(st.st_rdev), os.minor(st.st_rdev)))
        if stat.S_ISLNK(st.st_mode):
            line.append("-> " + os.readlink(p))
        try:
            names = sorted(n for n in os.listxattr(p, follow_symlinks=False) if n.startswith("user."))
        except OSError:
            names = []
        for n in names:
            line.append("%s=%s" % (n, os.getxattr(p, n, follow_symlinks=False).hex()))
        if not isdir and st.st_nlink > 1:
            line.append("group=" + first.setdefault(st.st_ino, rel))
        if name == "." and dirpath != root:
            continue
        print(" ".join(line))
EOF
}

# same names, contents, symlinks and metadata
compare_trees() {
	diff -r --no-dereference -x 'fifo*' -x 'chardev*' "$1" "$2" > tree.diff ||
		{ head -20 tree.diff; fail "contents of $1 and $2 differ"; }
	tree_listing "$1" > tree.a || fail "cannot list $1"
	tree_listing "$2" > tree.b || fail "cannot list $2"
	diff tree.a tree.b > tree.diff || { head -30 tree.diff; fail "metadata of $1 and $2 differ"; }
}

expect_fail() {
	"$@" >out 2>err && { cat out err; fail "'$*' succeeded"; }
	return 0
}
