# Mount options as admins write them: every option bfs-mount(8) lists
# mounts, and the atime options do what they say (relatime by default,
# strictatime, noatime, nodiratime).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount-lib.sh"

mount_prereqs

expect_ok "$BFS" format -q --size 256M img

note "every option of bfs-mount(8) is accepted"
# the option names from the MOUNT OPTIONS section, with a value where one is needed
python3 - "$REPO/doc/bfs-mount.8" > options <<'EOF' || fail "cannot read the man page"
import re, sys
sample = {"cache_size": "32M", "max_threads": "3", "attr_timeout": "0.5",
          "entry_timeout": "2", "commit": "7"}
lines = open(sys.argv[1]).read().split("\n")
sec = lines.index(".SH MOUNT OPTIONS")
opts = []
for i in range(sec + 1, len(lines)):
    if lines[i].startswith(".SH"):
        break
    if lines[i] != ".TP":
        continue
    words = re.sub(r'\\f.|\\-|"', "", lines[i + 1].split(" ", 1)[1])
    for w in re.split(r"[ ,]+", words):
        name = w.rstrip("=")
        if name in sample:
            opts.append(name + "=" + sample[name])
        elif re.fullmatch(r"[a-z_]+", w) and w not in ("fsname", "subtype"):
            opts.append(w)
print("\n".join(opts))
EOF
[ "$(wc -l < options)" -ge 35 ] || fail "only $(wc -l < options) options found in bfs-mount(8)"
for opt in $(cat options); do
	case $opt in
	remount) continue ;;			# below
	norecovery|noreplay) extra=ro ;;	# a clean filesystem: nothing to skip
	*) extra=rw ;;
	esac
	if [ "$opt" = uring ] && ! grep -qs Y /sys/module/fuse/parameters/enable_uring; then
		# the kernel does not offer the ring: -o uring must say so (59-mount-uring covers it on)
		expect_fail "$BFS" mount -o "rw,uring" img mnt
		contains err "enable_uring"
		continue
	fi
	if [ "$opt" = debug ]; then
		# debug implies -f: the trace goes to stderr
		"$BFS" mount -o debug img mnt 2>debug.err &
		pid=$!
		wait_mounted mnt
		unmount_wait umount mnt
		wait "$pid" || fail "-o debug exited non-zero"
		contains debug.err "INIT"
		continue
	fi
	"$BFS" mount -o "$extra,$opt" img mnt >out 2>err ||
		{ cat err; fail "'-o $opt' (listed in bfs-mount(8)) is refused"; }
	is_mounted || fail "-o $opt: not mounted"
	unmount_wait umount mnt
done
note "the same through mount(8)"
SBIN_LINK="/sbin/mount.fuse.bcowfs /sbin/mount.bcowfs"
for l in $SBIN_LINK; do ln -sf "$(realpath "$BFS")" "$l"; done
expect_ok mount -t fuse.bcowfs -o nodiratime,diratime,relatime,lazytime "$PWD/img" mnt
unmount_wait umount mnt
rm -f $SBIN_LINK

# atime of $1 in ns (the mount uses attr_timeout=0: no stale attributes)
atime() { python3 -c 'import os, sys; print(os.stat(sys.argv[1]).st_atime_ns)' "$1"; }
read_file() { cat "$1" > /dev/null || fail "cannot read $1"; }

# (the day-old rule of relatime is in tests/unit/test_fs_namespace.c: ctime cannot be set back here)
note "relatime (the default): a read after a change updates atime, a second read does not"
expect_ok "$BFS" mount -o attr_timeout=0 img mnt
echo data > mnt/f
mkdir mnt/d
touch -a -d '2001-01-01' mnt/f mnt/d
t0=$(atime mnt/f)
touch -m mnt/f		# now mtime > atime
read_file mnt/f
t1=$(atime mnt/f)
[ "$t1" -gt "$t0" ] || fail "relatime: a read after a change left atime at $t0"
sleep 0.05
read_file mnt/f
[ "$(atime mnt/f)" = "$t1" ] || fail "relatime: a second read changed atime again"
d0=$(atime mnt/d)
touch -m mnt/d
ls mnt/d > /dev/null
[ "$(atime mnt/d)" -gt "$d0" ] || fail "relatime: listing a changed directory left its atime"
t2=$t1
unmount_wait umount mnt
expect_ok "$BFS" mount -o attr_timeout=0 img mnt
[ "$(atime mnt/f)" = "$t2" ] || fail "the atime update did not survive an unmount"
unmount_wait umount mnt

note "an atime update reaches stat(2) at once, however long the kernel may cache attributes"
expect_ok "$BFS" mount -o attr_timeout=3600,entry_timeout=3600 img mnt
touch -m mnt/f
t0=$(atime mnt/f)	# now cached for an hour
read_file mnt/f
[ "$(atime mnt/f)" -gt "$t0" ] || fail "relatime with attr_timeout=3600: stat shows the old atime"
unmount_wait umount mnt

note "noatime: reads never change atime"
expect_ok "$BFS" mount -o attr_timeout=0,noatime img mnt
grep " $PWD/mnt " /proc/mounts | grep -q noatime || fail "/proc/mounts does not say noatime"
touch -m mnt/f
t0=$(atime mnt/f)
read_file mnt/f
ls mnt/d > /dev/null
[ "$(atime mnt/f)" = "$t0" ] || fail "noatime: a read changed atime"
unmount_wait umount mnt

note "strictatime: every read in a new open updates atime"
expect_ok "$BFS" mount -o attr_timeout=0,strictatime img mnt
read_file mnt/f
t0=$(atime mnt/f)
sleep 0.05
read_file mnt/f
t1=$(atime mnt/f)
[ "$t1" -gt "$t0" ] || fail "strictatime: a second read left atime"
unmount_wait umount mnt

note "nodiratime: listings leave directories alone, files still get relatime"
expect_ok "$BFS" mount -o attr_timeout=0,nodiratime img mnt
touch -m mnt/d mnt/f
d0=$(atime mnt/d)
ls mnt/d > /dev/null
[ "$(atime mnt/d)" = "$d0" ] || fail "nodiratime: a listing changed the directory's atime"
t0=$(atime mnt/f)
read_file mnt/f
[ "$(atime mnt/f)" -gt "$t0" ] || fail "nodiratime: files lost relatime"
unmount_wait umount mnt

note "remount: ro flushes and refuses writes, rw and commit=N apply to the running mount"
for l in $SBIN_LINK; do ln -sf "$(realpath "$BFS")" "$l"; done
# kill_remount: kill -9 the foreground mount process $pid, remove the dead mount
kill_dead() {
	kill -9 "$pid"
	wait "$pid" 2>/dev/null
	fusermount3 -u -z mnt 2>/dev/null || umount -l mnt || fail "cannot remove the dead mount"
}
"$BFS" mount -f -o commit=3600 img mnt 2>remount.err &
pid=$!
wait_mounted mnt
echo "before ro" > mnt/r1 || fail "write"
expect_ok mount -o remount,ro mnt
grep " $PWD/mnt " /proc/mounts | grep -q " ro," || fail "remount,ro: the mount is not read-only"
expect_fail sh -c "echo x > mnt/r2"
contains err "Read-only file system"
expect_ok mount -o remount,rw,commit=1 mnt
echo "after rw" > mnt/r2 || fail "remount,rw: still read-only"
sleep 2.5
kill_dead
expect_ok "$BFS" mount -o ro img mnt
[ "$(cat mnt/r1)" = "before ro" ] || fail "remount,ro did not flush"
[ "$(cat mnt/r2)" = "after rw" ] || fail "remount,commit=1 did not shorten the interval"
note "remount,rw of a mount whose device is open read-only is refused, and it stays read-only"
expect_rc 32 mount -o remount,rw mnt
contains err "mounted read-only"
grep " $PWD/mnt " /proc/mounts | grep -q " ro," || fail "a refused remount,rw left the mount writable"
expect_ok "$BFS" mount -o remount,ro img mnt
unmount_wait umount mnt
expect_rc 1 "$BFS" mount -o remount,ro mnt
contains err "is not mounted"
rm -f $SBIN_LINK

note "discard: freed space goes back to the sparse image file"
expect_ok "$BFS" mount -o discard,commit=1 img mnt
head -c 60000000 /dev/urandom > mnt/big || fail "write a big file"
sync mnt/big
full=$(du -k img | cut -f1)
rm mnt/big
i=0
until [ "$(du -k img | cut -f1)" -lt $((full - 40000)) ]; do
	sleep 0.2
	i=$((i + 1))
	[ $i -lt 50 ] || fail "-o discard: the image still uses $(du -k img | cut -f1) KiB (was $full)"
done
unmount_wait umount mnt
expect_ok "$BFS" fsck -n img
note "without discard (or with nodiscard after it) the space stays allocated in the image"
for opts in commit=1 discard,nodiscard,commit=1; do
	expect_ok "$BFS" mount -o $opts img mnt
	head -c 60000000 /dev/urandom > mnt/big || fail "write a big file"
	sync mnt/big
	full=$(du -k img | cut -f1)
	rm mnt/big
	sleep 2.5
	[ "$(du -k img | cut -f1)" -gt $((full - 40000)) ] || fail "-o $opts: space was discarded"
	unmount_wait umount mnt
done

note "norelatime is strictatime, atime and nostrictatime are relatime"
for opt in norelatime atime nostrictatime; do
	expect_ok "$BFS" mount -o attr_timeout=0,$opt img mnt
	touch -m mnt/f
	read_file mnt/f
	t0=$(atime mnt/f)
	sleep 0.05
	read_file mnt/f
	t1=$(atime mnt/f)
	case $opt in
	norelatime) [ "$t1" -gt "$t0" ] || fail "-o norelatime: a second read left atime" ;;
	*) [ "$t1" = "$t0" ] || fail "-o $opt: a second read changed atime (not relatime)" ;;
	esac
	unmount_wait umount mnt
done

note "mount flags reach the kernel: nosuid nodev noexec sync dirsync, and their opposites undo them"
expect_ok "$BFS" mount -o nosuid,nodev,noexec,sync,dirsync img mnt
line=$(grep " $PWD/mnt " /proc/mounts)
for flag in nosuid nodev noexec sync dirsync; do
	echo "$line" | grep -Eq "[ ,]$flag[ ,]" || fail "-o $flag: /proc/mounts says $line"
done
printf '#!/bin/sh\necho ran\n' > mnt/script && chmod 755 mnt/script
expect_fail mnt/script
unmount_wait umount mnt
expect_ok "$BFS" mount -o noexec,nosuid,exec,suid,dev,async img mnt
line=$(grep " $PWD/mnt " /proc/mounts)
echo "$line" | grep -Eq "[ ,](noexec|nosuid)[ ,]" && fail "exec/suid after noexec/nosuid: $line"
[ "$(mnt/script)" = ran ] || fail "-o exec: the script did not run"
unmount_wait umount mnt

note "noreplay is norecovery: read-only, the journal left alone"
expect_ok "$BFS" mount -o noreplay img mnt
grep " $PWD/mnt " /proc/mounts | grep -q " ro," || fail "-o noreplay: the mount is not read-only"
unmount_wait umount mnt

note "allow_root: root gets in, other users do not; allow_other lets them"
chmod 0755 .	# the scratch directory is 0700: the other user must reach the mount point
for opt in allow_root allow_other; do
	expect_ok "$BFS" mount -o $opt img mnt
	[ "$(cat mnt/f)" = data ] || fail "-o $opt: root cannot read"
	if setpriv --reuid=65534 --regid=65534 --clear-groups cat mnt/f >/dev/null 2>&1; then
		[ $opt = allow_other ] || fail "-o allow_root: another user could read"
	else
		[ $opt = allow_root ] || fail "-o allow_other: another user could not read"
	fi
	unmount_wait umount mnt
done

note "writeback, writeback_cache and nowriteback: the kernel's write-back cache on or off"
# FUSE_WRITEBACK_CACHE is bit 16 of the INIT reply's flags (libfuse's -d trace)
for opts in writeback writeback_cache writeback,nowriteback nowriteback; do
	"$BFS" mount -o debug,$opts img mnt 2>wb.err &
	pid=$!
	wait_mounted mnt
	echo "$opts" > mnt/wb || fail "-o $opts: write"
	[ "$(cat mnt/wb)" = "$opts" ] || fail "-o $opts: read back"
	unmount_wait umount mnt
	wait "$pid" || fail "-o debug,$opts exited non-zero"
	flags=$(sed -n 's/^ *flags=0x\([0-9a-f]*\)$/\1/p' wb.err | tail -1)
	[ -n "$flags" ] || fail "no INIT reply flags in the -d trace"
	on=$(( (0x$flags >> 16) & 1 ))
	case $opts in
	*nowriteback) [ $on = 0 ] || fail "-o $opts: the write-back cache is on" ;;
	*) [ $on = 1 ] || fail "-o $opts: the write-back cache is off" ;;
	esac
done

note "clone_fd with few threads serves a parallel load"
expect_ok "$BFS" mount -o clone_fd,max_threads=2 img mnt
for i in 1 2 3 4; do
	( for j in $(seq 20); do echo "$i $j" > mnt/c$i.$j; done ) &
done
wait
[ "$(cat mnt/c*.* | wc -l)" = 80 ] || fail "-o clone_fd: files missing"
unmount_wait umount mnt

note "read-only mounts write no atime"
sum=$(md5sum < img)
expect_ok "$BFS" mount -o ro,strictatime img mnt
read_file mnt/f
unmount_wait umount mnt
[ "$(md5sum < img)" = "$sum" ] || fail "a read-only mount wrote an atime"
expect_ok "$BFS" fsck -n img
echo "mount option tests passed"
