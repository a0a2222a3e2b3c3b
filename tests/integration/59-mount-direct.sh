# O_DIRECT: the page cache stays coherent with direct I/O (buffered reads
# after synchronous and asynchronous direct writes see the new data, direct
# reads see buffered writes), and mmap(MAP_SHARED) works on an O_DIRECT
# descriptor, as on ext4.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount-lib.sh"

mount_prereqs

direct_checks() {
	python3 - "$PWD/mnt" <<'EOF' || fail "O_DIRECT coherence ($1)"
import mmap, os, sys
mnt = sys.argv[1]
p = os.path.join(mnt, "d")
with open(p, "wb") as f:
    f.write(b"A" * 1048576)
# warm the page cache with buffered reads
with open(p, "rb") as f:
    assert f.read() == b"A" * 1048576
buf = mmap.mmap(-1, 65536)		# page-aligned for O_DIRECT
buf.write(b"B" * 65536)
fd = os.open(p, os.O_RDWR | os.O_DIRECT)
os.pwritev(fd, [buf], 131072)
# MAP_SHARED on the O_DIRECT descriptor
m = mmap.mmap(fd, 1048576, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
if m[131072:131072 + 4] != b"BBBB":
    sys.exit("mmap of an O_DIRECT descriptor shows stale data")
m[0:4] = b"MMAP"
m.flush()
m.close()
os.close(fd)
with open(p, "rb") as f:
    data = f.read()
if data[131072:131072 + 65536] != b"B" * 65536:
    sys.exit("a buffered read after an O_DIRECT write returned stale data")
if data[0:4] != b"MMAP":
    sys.exit("a buffered read misses a write through mmap")
# buffered write, then a direct read
with open(p, "r+b") as f:
    f.seek(262144)
    f.write(b"C" * 4096)
fd = os.open(p, os.O_RDONLY | os.O_DIRECT)
n = os.preadv(fd, [buf], 262144)
os.close(fd)
if n != 65536 or buf[0:4096] != b"C" * 4096:
    sys.exit("an O_DIRECT read after a buffered write returned stale data")
EOF
}

expect_ok "$BFS" format -q --size 512M img
expect_ok "$BFS" mount img mnt
note "synchronous direct I/O and mmap"
direct_checks default
# buffered reads through other opens racing AIO direct writes (xfstests
# generic/451): main's bfs of session 6 read stale pages within a second
note "buffered reads racing AIO direct writes (bfs-dio-race)"
"$TOOLS/bfs-dio-race" mnt/race "${RACE_SECS:-6}" 2>race.err ||
	{ cat race.err; fail "a buffered read after a racing AIO direct write"; }
# a file no buffered open ever touched: its direct writes send no
# invalidation until a mapping's faults fill pages, then drop all of them
# once (direct_write_inval() in cmd/fuse_ops.c)
note "mappings of O_DIRECT opens racing AIO direct writes (bfs-dio-race mmap)"
"$TOOLS/bfs-dio-race" mnt/race-map "${RACE_SECS:-3}" mmap 2>race.err ||
	{ cat race.err; fail "a mapping read after a racing AIO direct write"; }
if command -v fio >/dev/null; then
	note "asynchronous direct writes (fio, libaio), then buffered reads"
	head -c 8388608 /dev/zero > mnt/aio
	cat mnt/aio > /dev/null		# cached
	fio --name=aio --filename=mnt/aio --rw=randwrite --bs=4k --size=8m --direct=1 \
		--ioengine=libaio --iodepth=16 --buffer_pattern=0x5a --randrepeat=0 \
		--output=fio.out >/dev/null 2>fio.err || { cat fio.err; fail "fio failed"; }
	python3 - "$PWD/mnt/aio" <<'EOF' || fail "buffered reads after async direct writes are stale"
import sys
data = open(sys.argv[1], "rb").read()
# every 4k block fio wrote holds 0x5a; none may still read as the cached zeros
zero = sum(1 for i in range(0, len(data), 4096) if data[i:i + 4096] == bytes(4096))
if zero:
    sys.exit("%d of %d blocks read back as the old cached zeros" % (zero, len(data) // 4096))
EOF
	# FOPEN_PARALLEL_DIRECT_WRITES (with the /dev/fuse shim): four writers
	# inside one file at once, each its own quarter, each checked after
	note "parallel direct writes to one file (fio, 4 jobs, verified)"
	head -c 16777216 /dev/zero > mnt/par
	fio --name=par --filename=mnt/par --rw=randwrite --bs=4k --size=4m --numjobs=4 \
		--offset_increment=4m --direct=1 --ioengine=libaio --iodepth=8 \
		--verify=crc32c --verify_fatal=1 --randrepeat=0 \
		--output=fio-par.out >/dev/null 2>fio-par.err ||
		{ cat fio-par.err fio-par.out; fail "parallel direct writes: fio or its verification failed"; }
	[ "$(stat -c %s mnt/par)" = 16777216 ] || fail "parallel direct writes changed the size"
fi
unmount_wait umount mnt
note "the same with the kernel write-back cache"
expect_ok "$BFS" mount -o writeback img mnt
direct_checks writeback
unmount_wait umount mnt
expect_ok "$BFS" fsck -n img
echo "O_DIRECT tests passed"
