# Third-party load on a bfs mount, each followed by unmount and the
# structural check: fio with --verify, stress-ng's filesystem stressors
# with --verify, dbench and fs_mark (Debian packages fio, stress-ng, dbench,
# fsmark; a tool that is missing is skipped with a message).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount-lib.sh"
mount_prereqs

expect_ok "$BFS" format -q --size 2G img
ran=0

# run_load NAME COMMAND...: mount, run in mnt, unmount, fsck -n must be clean
run_load() {
	name=$1; shift
	note "$name"
	expect_ok "$BFS" mount img "$PWD/mnt"
	wait_mounted mnt
	if ! (cd mnt && "$@") > load.log 2>&1; then
		tail -n 30 load.log
		fail "$name failed on the bfs mount"
	fi
	unmount_wait umount "$PWD/mnt"
	expect_ok "$BFS" fsck -n img
	contains out "clean"
	ran=$((ran + 1))
}

if command -v fio >/dev/null; then
	run_load "fio: random writes with verification, 4 jobs" \
		fio --name=verify --directory=. --size=48M --bs=4k --rw=randwrite --numjobs=4 \
		    --verify=crc32c --verify_fatal=1 --do_verify=1 --ioengine=psync --fsync=64 \
		    --group_reporting
	run_load "fio: mixed block sizes, appends and reads with verification" \
		fio --name=mixed --directory=. --size=32M --bsrange=4k-256k --rw=readwrite \
		    --verify=md5 --verify_fatal=1 --numjobs=2 --ioengine=psync --group_reporting
else
	echo "fio not installed: skipped"
fi

if command -v stress-ng >/dev/null; then
	run_load "stress-ng: filesystem stressors with --verify" \
		stress-ng --temp-path . --verify --timeout 8 --metrics-brief \
		    --hdd 2 --hdd-bytes 16M --dir 1 --dentry 1 --link 1 --symlink 1 \
		    --rename 1 --fallocate 1 --xattr 1 --seek 1 --filename 1
else
	echo "stress-ng not installed: skipped"
fi

if command -v dbench >/dev/null; then
	loadfile=$(ls /usr/share/dbench/client.txt 2>/dev/null)
	[ -n "$loadfile" ] || loadfile=$(find /usr/share -name client.txt 2>/dev/null | head -n 1)
	run_load "dbench: 4 clients for 10 s" dbench -D . -c "$loadfile" -t 10 4
else
	echo "dbench not installed: skipped"
fi

if command -v fs_mark >/dev/null; then
	run_load "fs_mark: 4 threads of small files with fsync" \
		fs_mark -d ./fsm -s 4096 -n 500 -t 4 -S 1 -L 2
else
	echo "fs_mark not installed: skipped"
fi

[ $ran -gt 0 ] || skip "none of fio, stress-ng, dbench, fs_mark is installed"
echo "ok: $ran loads"
