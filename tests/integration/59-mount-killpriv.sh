# Set-ID bits and file capabilities after writes, truncation and chown end
# as on ext4 (the VFS's rules), whether the kernel clears them
# (BFS_FUSE_WIRE=0: plain libfuse) or, with FUSE_HANDLE_KILLPRIV_V2
# negotiated by the /dev/fuse shim, bfs does (cmd/fuse_kill.c).  The same
# sequence runs on a loop-mounted ext4 and on bfs; the transcripts must be
# equal.  What xfstests generic/355 and generic/683-687 check, through
# write(2), O_DIRECT, truncate(2), fallocate(2), O_TRUNC and chown(2), by callers with
# and without CAP_FSETID, in and out of the file's group.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount-lib.sh"

mount_prereqs
command -v setpriv >/dev/null || skip "setpriv(1) not installed (util-linux)"
command -v setcap >/dev/null && command -v getcap >/dev/null ||
	skip "setcap/getcap not installed (libcap2-bin)"
[ -x /usr/bin/python3 ] || skip "no /usr/bin/python3"
command -v mkfs.ext4 >/dev/null || skip "mkfs.ext4 not installed (e2fsprogs)"
command -v losetup >/dev/null && [ -e /dev/loop-control ] || skip "no loop devices"

chmod 755 .	# the callers without privileges reach the mount points
EXT4_MNT=$PWD/ext4
killpriv_cleanup() {
	mountpoint -q "$EXT4_MNT" 2>/dev/null && umount "$EXT4_MNT"
	mount_cleanup
}
trap killpriv_cleanup EXIT

NOBODY=65534
# a caller without privileges, outside group 0, inside group $NOBODY
as_user() { setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups "$@"; }
# the same caller holding CAP_FSETID
as_fsetid() {
	setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups \
		--inh-caps=+fsetid --ambient-caps=+fsetid "$@"
}

# a fresh file $1 in directory $D, owner root:$3 (default root), mode $2
mkfile() {
	rm -f "$D/$1"
	printf 'seed' > "$D/$1"
	chown "root:${3:-root}" "$D/$1"
	chmod "$2" "$D/$1"
}
# one transcript line: the case, the mode, the capability left
show() {
	caps=$(getcap "$D/$2" 2>/dev/null | sed 's/.* //')
	echo "$1: $(stat -c '%a %U:%G' "$D/$2") caps=${caps:-none}"
}
# an O_DIRECT write of 4 KiB at offset 0 of $1
cat > dwrite.py <<'EOF'
import mmap, os, sys
buf = mmap.mmap(-1, 4096)
buf.write(b"d" * 4096)
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_DIRECT)
os.pwritev(fd, [buf], 0)
os.close(fd)
EOF
dwrite() { python3 "$PWD/dwrite.py" "$1" || fail "O_DIRECT write to $1 failed"; }
# a capability set on $1 while it is open O_DIRECT and written to: the
# next write through that open drops it (bfs keeps whether an open file
# has one in memory, libcore/fs/orphan.c: setcap must invalidate that)
cat > dwrite_open.py <<'EOF'
import mmap, os, subprocess, sys
path = sys.argv[1]
buf = mmap.mmap(-1, 4096)
buf.write(b"o" * 4096)
def caps():
    out = subprocess.run(["getcap", path], capture_output=True, text=True).stdout.split()
    return out[-1] if len(out) > 1 else "none"
fd = os.open(path, os.O_WRONLY | os.O_DIRECT)
os.pwritev(fd, [buf], 0)
for i in (1, 2):
    subprocess.run(["setcap", "cap_net_raw+ep", path], check=True)
    before = caps()
    os.pwritev(fd, [buf], 4096 * i)
    print(f"setcap {i} on a file open O_DIRECT: caps={before}, after a write caps={caps()}")
os.close(fd)
EOF
# the system's python: one under /root is out of the unprivileged caller's reach
as_user_dwrite() { as_user /usr/bin/python3 "$PWD/dwrite.py" "$1" || fail "O_DIRECT write to $1 failed"; }

sequence() {
	D=$1
	for m in 6777 4777 2777 6767 2767 2766 777; do
		mkfile w$m $m
		as_user sh -c "printf x >> '$D/w$m'"
		show "write by user, $m" w$m
	done
	mkfile wg 6767 $NOBODY
	as_user sh -c "printf x >> '$D/wg'"
	show "write by user in the file's group, 6767" wg
	mkfile wf 6777
	as_fsetid sh -c "printf x >> '$D/wf'"
	show "write by user with CAP_FSETID, 6777" wf
	mkfile wr 6777
	printf x >> "$D/wr"
	show "write by root, 6777" wr
	mkfile dw 6777
	as_user_dwrite "$D/dw"
	show "O_DIRECT write by user, 6777" dw
	mkfile dr 6777
	dwrite "$D/dr"
	show "O_DIRECT write by root, 6777" dr
	mkfile tu 6777
	as_user truncate -s 1 "$D/tu"
	show "truncate by user, 6777" tu
	mkfile tn 6767
	as_user truncate -s 1 "$D/tn"
	show "truncate by user, 6767" tn
	mkfile tr 6777
	truncate -s 1 "$D/tr"
	show "truncate by root, 6777" tr
	mkfile fa 6777
	as_user fallocate -l 65536 "$D/fa"
	show "fallocate by user, 6777" fa
	mkfile fk 6777
	as_user fallocate -n -l 65536 "$D/fk"
	show "fallocate --keep-size by user, 6777" fk
	mkfile fp 6777
	as_user fallocate -p -o 0 -l 2 "$D/fp"
	show "punch hole by user, 6777" fp
	mkfile fr 6777
	fallocate -l 65536 "$D/fr"
	show "fallocate by root, 6777" fr
	mkfile ou 6777
	as_user sh -c ": > '$D/ou'"
	show "O_TRUNC open by user, 6777" ou
	mkfile of 6777
	as_fsetid sh -c ": > '$D/of'"
	show "O_TRUNC open by user with CAP_FSETID, 6777" of
	for m in 6755 2755 2745 4745; do
		mkfile c$m $m
		chown $NOBODY "$D/c$m"
		show "chown by root, $m" c$m
	done
	mkfile cg 6775
	chown $NOBODY:$NOBODY "$D/cg"
	chmod 6775 "$D/cg"
	as_user chgrp $NOBODY "$D/cg"
	show "chgrp by the owner, 6775" cg
	mkfile cgn 2745
	chown $NOBODY:$NOBODY "$D/cgn"
	chmod 2745 "$D/cgn"
	as_user chgrp $NOBODY "$D/cgn"
	show "chgrp by the owner, 2745" cgn
	# file capabilities: removed by every write, truncation and chown
	for how in write-user write-root dwrite-user dwrite-root truncate fallocate chown open-trunc; do
		mkfile k$how 755
		chmod 777 "$D/k$how"
		setcap cap_net_raw+ep "$D/k$how" || fail "setcap on $D failed"
		getcap "$D/k$how" | grep -q cap_net_raw || fail "no capability after setcap on $D"
		case $how in
		write-user)	as_user sh -c "printf x >> '$D/k$how'" ;;
		dwrite-user)	as_user_dwrite "$D/k$how" ;;
		write-root)	printf x >> "$D/k$how" ;;
		dwrite-root)	dwrite "$D/k$how" ;;
		truncate)	truncate -s 1 "$D/k$how" ;;
		fallocate)	fallocate -l 65536 "$D/k$how" ;;
		chown)		chown $NOBODY "$D/k$how" ;;
		open-trunc)	: > "$D/k$how" ;;
		esac
		show "capability, then $how" k$how
	done
	mkfile kopen 755
	python3 "$PWD/dwrite_open.py" "$D/kopen" || fail "O_DIRECT writes to $D/kopen failed"
	show "capability set while open O_DIRECT, then writes" kopen
	# set-ID bits set again after a write are kept until the next one
	mkfile again 777
	as_user sh -c "printf x >> '$D/again'"
	chmod 6777 "$D/again"
	show "chmod 6777 after a write" again
	as_user sh -c "printf x >> '$D/again'"
	show "then a write by user" again
}

note "the reference: ext4 on a loop device"
truncate -s 64M ext4.img
mkfs.ext4 -q -F ext4.img || fail "mkfs.ext4 failed"
mkdir -p "$EXT4_MNT"
mount -o loop ext4.img "$EXT4_MNT" || skip "cannot loop-mount ext4"
chmod 755 "$EXT4_MNT"
sequence "$EXT4_MNT" > ext4.out
umount "$EXT4_MNT"

expect_ok "$BFS" format -q --size 256M img
# the shim on, on with the kernel's write-back cache (set-ID files are
# written through), and off
for run in 1:allow_other 1:allow_other,writeback 0:allow_other; do
	wire=${run%%:*} opts=${run#*:}
	note "bfs -o $opts, BFS_FUSE_WIRE=$wire"
	export BFS_FUSE_WIRE=$wire
	expect_ok "$BFS" mount -o "$opts" img mnt
	chmod 755 mnt
	sequence "$PWD/mnt" > bfs.out
	if [ $wire = 0 ]; then
		# without KILLPRIV_V2 the kernel clears set-group-ID bits
		# itself, and only on group-executable files
		for f in ext4.out bfs.out; do
			grep -v -e "^write by user, [26]76[67]:" -e "^truncate by user, 6767:" \
				$f > $f.common
		done
		diff -u ext4.out.common bfs.out.common ||
			fail "BFS_FUSE_WIRE=0: not what ext4 does"
	else
		diff -u ext4.out bfs.out || fail "-o $opts: not what ext4 does"
	fi
	unmount_wait umount mnt
done
unset BFS_FUSE_WIRE
# the reference itself: the rules this test is about
contains ext4.out "write by user, 6777: 777 "
contains ext4.out "write by user with CAP_FSETID, 6777: 6777 "
contains ext4.out "capability, then write-root: 777 root:root caps=none"
contains ext4.out "setcap 2 on a file open O_DIRECT: caps=cap_net_raw=ep, after a write caps=none"
cat ext4.out
