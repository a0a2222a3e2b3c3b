# bfs image: dump, restore and info on every fixture and on populated
# images, obfuscated and not; the restored image must check, dump and show
# exactly as the original (names aside when obfuscated), an obfuscated dump
# must hold none of the original names or values, and a damaged or cut dump
# must be refused with a message.
. "$(dirname "$0")/lib.sh"
command -v zstd >/dev/null || skip "zstd not installed"
POP="$TOOLS/bfs-populate"
[ -x "$POP" ] || fail "missing $POP (make integration-check builds it)"

# names and values are what obfuscation changes: blank them out
names_aside() {
	sed -e "s/dirent '[^']*'/dirent NAME/" \
	    -e "s/ bytes '.*'\$/ bytes TARGET/" \
	    -e "s/xattr user\.[^ ]*/xattr user.NAME/" \
	    -e "s/'[^']*' \(in\|->\)/NAME \1/" \
	    -e 's|([^)]*/[^)]*)|(PATH)|g'
}

# run a read-only command on an image: output (image name replaced) and status
look() {	# look NAME IMG CMD...
	name=$1 img=$2; shift 2
	"$BFS" "$@" "$img" > "$name" 2>&1
	echo "exit $?" >> "$name"
	# nodes made by an in-memory journal replay get a random seq each time
	sed -i -e "s|$img|IMG|g" -e 's/seq [0-9]*  bsets 0  written 0/seq NEW  bsets 0  written 0/' "$name"
}

CHECKS="fsck nodes keys super debug"
# outputs of the read-only commands on image $2, into CHECK.$1
looks() {	# looks SUFFIX IMG
	look fsck.$1 "$2" fsck -n
	look nodes.$1 "$2" dump-btree --nodes
	look keys.$1 "$2" dump-btree
	look super.$1 "$2" show-super
	look debug.$1 "$2" debug -R "ls -l /"
}

# the restored image $2 behaves as the original $1 (names aside if $3 = obf);
# the original's outputs are in *.orig already if $5 is "cached"
same() {
	[ "${5:-}" = cached ] || looks orig "$1"
	looks rest "$2"
	for f in $CHECKS; do
		if [ "$3" = obf ]; then
			names_aside < $f.orig > $f.o
			names_aside < $f.rest > $f.r
		else
			cp $f.orig $f.o
			cp $f.rest $f.r
		fi
		# debug ls lists names: only their count and the rest of the line
		if [ $f = debug ] && [ "$3" = obf ]; then
			sed -i 's/ [^ ]*$/ NAME/' $f.o $f.r
			sort -o $f.o $f.o
			sort -o $f.r $f.r
		fi
		if ! cmp -s $f.o $f.r; then
			diff -u $f.o $f.r | head -20
			fail "$4: $f differs after dump and restore ($3)"
		fi
	done
}

# dump $1 both ways, restore each, compare
roundtrip() {	# roundtrip IMG LABEL [DUMP-OPTION]
	looks orig "$1"
	for mode in obf raw; do
		opt=${3:-}
		[ $mode = raw ] && opt="$opt --no-obfuscate"
		rm -f dump.$mode rest.img
		expect_ok "$BFS" image dump $opt -o dump.$mode "$1"
		contains err "btree nodes"
		expect_ok "$BFS" image info --json dump.$mode
		json_ok out
		[ "$(json_get out valid)" = true ] || fail "$2: info says the dump is not valid"
		[ "$(json_get out obfuscated)" = "$([ $mode = obf ] && echo true || echo false)" ] ||
			fail "$2: info obfuscated flag"
		expect_ok "$BFS" image restore dump.$mode rest.img
		[ "$(stat -c %s rest.img)" = "$(stat -c %s "$1")" ] || fail "$2: size differs"
		same "$1" rest.img $mode "$2" cached
	done
	# names of 6 bytes or more that the original lists must not be in the dump
	# (unless it holds file data, which may well contain them)
	zstd -q -dc dump.obf > stream
	[ -z "${3:-}" ] || return 0
	"$BFS" dump-btree -b dirents "$1" 2>/dev/null |
		sed -n "s/.* dirent '\([^']*\)' .*/\1/p" | grep -v '^lost+found$' |
		awk 'length($0) >= 6' | sort -u > names || true
	if [ -s names ] && grep -a -F -f names stream > leaked; then
		head -3 leaked | cut -c1-200
		fail "$2: an obfuscated dump contains original names"
	fi
}

note "every fixture"
n=0
for dir in "$REPO"/fixtures/f_*/; do
	f=$(basename "$dir")
	zstd -q -d -f "$dir/image.zst" -o fix.img || fail "$f: cannot decompress"
	case $f in
	# fsck settles these generation disputes by reading the file data, which
	# a metadata-only dump does not have
	f_fs_alloc_gen_old|f_fs_alloc_missing|f_fs_extent_gen_newer)
		roundtrip fix.img "$f" --data ;;
	*)	roundtrip fix.img "$f" ;;
	esac
	n=$((n + 1))
done
[ $n -gt 0 ] || fail "no fixtures found"

note "a populated filesystem, cleanly closed and needing replay"
for state in clean unclean; do
	rm -f pop.img
	expect_ok "$BFS" format -q --size 128M pop.img
	if [ $state = clean ]; then
		expect_ok "$POP" pop.img 2000
	else
		expect_ok "$POP" pop.img 2000 --unclean
	fi
	roundtrip pop.img "populated ($state)"
	# every name, target, user xattr name and value has "secret" in it
	if grep -a -c secret stream > count; then
		fail "populated ($state): 'secret' appears $(cat count) times in the obfuscated stream"
	fi
	grep -a -q secret pop.img || fail "populated ($state): the image itself has no names?"
done

note "refusals"
expect_rc 1 "$BFS" image dump -o dump.obf pop.img
contains err "exists; use --force"
expect_ok "$BFS" image dump -f -o dump.obf pop.img
expect_rc 1 "$BFS" image restore dump.obf rest.img
contains err "not empty; use --force"
expect_ok "$BFS" image restore -f dump.obf rest.img
expect_rc 2 "$BFS" image frobnicate x
expect_rc 2 "$BFS" image restore dump.obf
expect_rc 2 "$BFS" image info --data dump.obf

LOOP=
cleanup_loop() { [ -z "$LOOP" ] || losetup -d "$LOOP"; LOOP=; }
trap cleanup_loop EXIT
if [ "$(id -u)" -eq 0 ] && command -v losetup >/dev/null && truncate -s 150M loop.img &&
   LOOP=$(losetup -f --show loop.img 2>/dev/null); then
	note "restore onto a block device: refused if it holds a filesystem, else zeroed first"
	dd if=/dev/urandom of="$LOOP" bs=1M count=4 seek=40 status=none	# junk must not survive
	expect_ok "$BFS" image restore dump.obf "$LOOP"
	expect_rc 1 "$BFS" image restore dump.obf "$LOOP"
	contains err "contains a bfs filesystem; use --force"
	expect_ok "$BFS" image restore --force dump.obf "$LOOP"
	look fsck.loop "$LOOP" fsck -n
	look fsck.pop pop.img fsck -n
	cmp -s fsck.loop fsck.pop || fail "fsck of the restored device: $(cat fsck.loop)"
	[ "$(dd if="$LOOP" bs=1M count=4 skip=40 status=none | tr -d '\000' | wc -c)" -eq 0 ] ||
		[ "$(dd if=pop.img bs=1M count=4 skip=40 status=none | tr -d '\000' | wc -c)" -ne 0 ] ||
		fail "junk left on the device outside the restored extents"
	cleanup_loop
fi
rm -f loop.img

note "a dump in a pipe, progress on a descriptor"
"$BFS" image dump -C 3 pop.img 3>progress | "$BFS" image restore -f - rest.img > out 2> err ||
	fail "dump | restore failed: $(cat err)"
[ "$(tail -n 1 progress | cut -d' ' -f1)" = 1 ] || fail "no progress lines: $(tail -n 2 progress)"
awk '{ if ($2 > $3) exit 1 }' progress || fail "progress beyond its total"
same pop.img rest.img obf "piped"

note "damaged and cut dumps"
size=$(stat -c %s dump.obf)
head -c $((size / 2)) dump.obf > cut
expect_rc 1 "$BFS" image restore -f cut rest.img
contains err "truncated"
contains err "incomplete"
rm -f rest.img
expect_rc 1 "$BFS" image restore cut rest.img
contains err "nothing restored"
[ ! -e rest.img ] || fail "a failed restore left a new image behind"
expect_rc 1 "$BFS" image info cut
contains err "truncated"
: > empty
expect_rc 1 "$BFS" image info empty
contains err "not a bfs dump"
expect_rc 1 "$BFS" image info pop.img
contains err "not a bfs dump"
# a record damaged inside a valid zstd stream: the record checksum finds it
zstd -q -dc dump.obf > stream
printf 'X' | dd of=stream bs=1 seek=$((600 + 5000)) conv=notrunc status=none
zstd -q -c stream > damaged
expect_rc 1 "$BFS" image restore -f damaged rest.img
contains err "damaged"
contains err "record"

if [ "$(id -u)" -eq 0 ] && [ -c /dev/fuse ] && command -v fusermount3 >/dev/null &&
   command -v flock >/dev/null; then
	note "a mounted device: refused read-write unless --force, fine read-only"
	mkdir mnt
	trap 'grep -q " $PWD/mnt fuse" /proc/mounts && umount -l "$PWD/mnt"; cleanup_loop' EXIT
	for ro in rw ro; do
		expect_ok "$BFS" mount -o $ro pop.img mnt
		rm -f live.dump
		if [ $ro = rw ]; then
			expect_rc 1 "$BFS" image dump -o live.dump pop.img
			contains err "in use read-write"
			[ ! -e live.dump ] || fail "a refused dump left a file"
			expect_ok "$BFS" image dump --force -o live.dump pop.img
			contains err "may be inconsistent"
		else
			expect_ok "$BFS" image dump -o live.dump pop.img
			lacks err "inconsistent"
		fi
		umount "$PWD/mnt"
		flock pop.img true
	done
else
	note "skipped the mounted-device checks (needs root, /dev/fuse, fusermount3, flock)"
fi
