# bfs show-super --export (udev IMPORT{program} format) and the udev rule.
. "$(dirname "$0")/lib.sh"

note "--export: the keys udev and blkid -o udev use"
label='my disk é/x'
expect_ok "$BFS" format -q -L "$label" --uuid 0b7c1e3a-52f4-4c1d-9a8e-1f2d3c4b5a69 --size 16M img
expect_ok "$BFS" show-super --export img
cat > want <<'EOW'
ID_FS_UUID=0b7c1e3a-52f4-4c1d-9a8e-1f2d3c4b5a69
ID_FS_UUID_ENC=0b7c1e3a-52f4-4c1d-9a8e-1f2d3c4b5a69
ID_FS_VERSION=1
ID_FS_TYPE=bcowfs
ID_FS_USAGE=filesystem
ID_FS_LABEL=my_disk_é/x
ID_FS_LABEL_ENC=my\x20disk\x20é\x2fx
EOW
diff -u want out || fail "--export output"
[ ! -s err ] || fail "--export wrote to stderr: $(cat err)"

note "label encodings are those of libblkid (compared with an ext4 label)"
if command -v mkfs.ext4 >/dev/null && command -v blkid >/dev/null; then
	truncate -s 8M ext4.img
	mkfs.ext4 -q -F -L "$label" ext4.img || fail "mkfs.ext4"
	blkid -p -o udev ext4.img | grep '^ID_FS_LABEL' > blkid.out
	grep '^ID_FS_LABEL' out > ours
	diff -u blkid.out ours || fail "label encoding differs from libblkid's"
	printf ' \t a  b\tc \001x\377 ' > lbl
	mkfs.ext4 -q -F -L "$(cat lbl)" ext4.img || fail "mkfs.ext4"
	expect_ok "$BFS" format -q -f -L "$(cat lbl)" img
	expect_ok "$BFS" show-super --export img
	blkid -p -o udev ext4.img | grep '^ID_FS_LABEL' > blkid.out
	grep '^ID_FS_LABEL' out > ours
	diff -u blkid.out ours || fail "whitespace/control label encoding differs from libblkid's"
else
	echo "mkfs.ext4 or blkid missing: comparison skipped"
fi

note "no label: no label keys; not bfs: an error, nothing on stdout"
expect_ok "$BFS" format -q -f img
expect_ok "$BFS" show-super --export img
lacks out "ID_FS_LABEL"
contains out "ID_FS_TYPE=bcowfs"
truncate -s 16M zero.img
expect_rc 1 "$BFS" show-super --export zero.img
[ ! -s out ] || fail "--export printed something for a non-bfs image"
contains err "not a bfs filesystem"
expect_rc 2 "$BFS" show-super --export --json img

note "make install puts the rule in lib/udev/rules.d with the program's path"
make -s -C "$REPO" B="$(dirname "$BFS")" install DESTDIR="$PWD/root" PREFIX=/usr >log 2>&1 ||
	{ cat log; fail "make install"; }
rule=root/usr/lib/udev/rules.d/64-bcowfs.rules
[ -f "$rule" ] || fail "make install did not install $rule"
contains "$rule" 'IMPORT{program}="/usr/sbin/bfs show-super --export $devnode"'
lacks "$rule" "@"
contains "$rule" 'SYMLINK+="disk/by-uuid/$env{ID_FS_UUID_ENC}"'
contains "$rule" 'SYMLINK+="disk/by-label/$env{ID_FS_LABEL_ENC}"'

# the rule itself, where udev can run it (udevadm test on a loop device)
if [ "$(id -u)" = 0 ] && command -v udevadm >/dev/null && command -v losetup >/dev/null &&
	[ -d /etc/udev/rules.d ] && [ ! -e /etc/udev/rules.d/64-bcowfs.rules ] &&
	loop=$(losetup -f --show img 2>/dev/null); then
	note "udevadm test: $loop gets the by-uuid and by-label links"
	expect_ok "$BFS" format -q -f -L "udev test" img
	sed "s|@SBINDIR@|$(dirname "$BFS")|g" "$REPO/udev/64-bcowfs.rules.in" \
		> /etc/udev/rules.d/64-bcowfs.rules
	udevadm test --action=add "/sys/class/block/${loop#/dev/}" > udev.out 2>&1
	rc=$?
	rm -f /etc/udev/rules.d/64-bcowfs.rules
	losetup -d "$loop"
	[ $rc -eq 0 ] || { cat udev.out; fail "udevadm test failed"; }
	uuid=$("$BFS" show-super --export img | sed -n 's/^ID_FS_UUID_ENC=//p')
	grep -q "disk/by-uuid/$uuid" udev.out || { cat udev.out; fail "no by-uuid link"; }
	grep -q 'disk/by-label/udev\\x20test' udev.out || { cat udev.out; fail "no by-label link"; }
else
	echo "udevadm, a loop device or root missing: the rule was not run"
fi
echo ok
