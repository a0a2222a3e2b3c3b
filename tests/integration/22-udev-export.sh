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

# The rule itself on a loop device: `udevadm test` always where udevadm runs
# (it applies the rules, links included, without udevd), then through a real
# systemd-udevd (the running one, or one started here for the test) with
# `udevadm trigger`/`settle`: the /dev/disk links appear and findfs (libblkid's
# tag lookup, what mount UUID=/LABEL= and fsck -A use) resolves them.
RULE=/etc/udev/rules.d/64-bcowfs.rules
loop= udevd_pid= made_run= made_disk= made_block=
udev_cleanup() {
	if [ -n "$loop" ]; then
		losetup -d "$loop" 2>/dev/null
		# drops the links and the database entry the add made
		if [ -n "$udevd_pid" ]; then
			udevadm trigger --action=remove --settle "$sys" >/dev/null 2>&1
		else
			udevadm test --action=remove "$sys" >/dev/null 2>&1
		fi
	fi
	[ -z "$udevd_pid" ] || { kill "$udevd_pid" 2>/dev/null; wait "$udevd_pid" 2>/dev/null; }
	rm -f "$RULE"
	[ -z "$made_disk" ] || rm -rf /dev/disk
	[ -z "$made_block" ] || rmdir /dev/block 2>/dev/null
	[ -z "$made_run" ] || rm -rf /run/udev
	loop=
}
udev_reason=
if [ "$(id -u)" != 0 ]; then udev_reason="not root"
elif ! command -v udevadm >/dev/null; then udev_reason="udevadm not installed (Debian package udev)"
elif ! command -v losetup >/dev/null || [ ! -e /dev/loop-control ]; then udev_reason="no loop devices"
elif [ ! -d /etc/udev/rules.d ]; then udev_reason="no /etc/udev/rules.d"
elif [ -e "$RULE" ]; then udev_reason="$RULE is installed already (not overwritten)"
fi
if [ -z "$udev_reason" ]; then
	[ -e /run/udev ] || made_run=1
	[ -e /dev/disk ] || made_disk=1
	[ -e /dev/block ] || made_block=1
	expect_ok "$BFS" format -q -f -L "udev test" img
	uuid=$("$BFS" show-super --export img | sed -n 's/^ID_FS_UUID_ENC=//p')
	loop=$(losetup -f --show img 2>/dev/null) || udev_reason="losetup failed"
fi
if [ -n "$loop" ]; then
	trap udev_cleanup EXIT
	sys=/sys/class/block/${loop#/dev/}
	sed "s|@SBINDIR@|$(dirname "$BFS")|g" "$REPO/udev/64-bcowfs.rules.in" > "$RULE"

	note "udevadm test: $loop gets its identity from show-super --export, and the links"
	udevadm test --action=add "$sys" > udev.out 2>&1 || { cat udev.out; fail "udevadm test failed"; }
	for kv in ID_FS_TYPE=bcowfs "ID_FS_UUID=$uuid" "ID_FS_UUID_ENC=$uuid" ID_FS_LABEL=udev_test \
		'ID_FS_LABEL_ENC=udev\x20test' ID_FS_VERSION=1 ID_FS_USAGE=filesystem; do
		grep -qxF "$kv" udev.out || { cat udev.out; fail "udevadm test: no $kv"; }
	done
	grep -q "64-bcowfs.rules.*show-super --export" udev.out ||
		{ cat udev.out; fail "the rule did not import from show-super"; }
	grep -q "disk/by-uuid/$uuid" udev.out || { cat udev.out; fail "no by-uuid link"; }
	grep -q 'disk/by-label/udev\\x20test' udev.out || { cat udev.out; fail "no by-label link"; }
	udevadm test --action=remove "$sys" >/dev/null 2>&1

	# a udevd to trigger: the running one, else one of our own where it can start
	if [ -S /run/udev/control ] && udevadm control --ping 2>/dev/null; then
		:
	elif [ -x /lib/systemd/systemd-udevd ]; then
		/lib/systemd/systemd-udevd --debug > udevd.log 2>&1 &
		udevd_pid=$!
		i=0
		until udevadm control --ping 2>/dev/null; do
			sleep 0.1
			i=$((i + 1))
			kill -0 "$udevd_pid" 2>/dev/null && [ $i -lt 50 ] ||
				{ udev_reason="systemd-udevd does not start here: $(tail -1 udevd.log)"; break; }
		done
	else
		udev_reason="no systemd-udevd"
	fi
	if [ -z "$udev_reason" ]; then
		note "udevadm trigger + settle: /dev/disk/by-uuid and by-label links, findfs"
		udevadm trigger --action=add --settle "$sys" || fail "udevadm trigger"
		timeout 30 udevadm settle || fail "udevadm settle"
		[ "$(readlink -f "/dev/disk/by-uuid/$uuid")" = "$loop" ] ||
			fail "/dev/disk/by-uuid/$uuid is not a link to $loop: $(ls -l /dev/disk/by-uuid 2>&1)"
		[ "$(readlink -f '/dev/disk/by-label/udev\x20test')" = "$loop" ] ||
			fail "no /dev/disk/by-label link to $loop: $(ls -l /dev/disk/by-label 2>&1)"
		udevadm info --query=property "$loop" > info
		contains info "ID_FS_TYPE=bcowfs"
		contains info "ID_FS_UUID=$uuid"
		if command -v findfs >/dev/null; then
			[ "$(findfs "UUID=$uuid")" = "$loop" ] || fail "findfs UUID=$uuid"
			[ "$(findfs "LABEL=udev test")" = "$loop" ] || fail "findfs LABEL="
		fi
		note "removed: the links go"
		losetup -d "$loop"
		udevadm trigger --action=remove --settle "$sys"
		timeout 30 udevadm settle
		[ ! -e "/dev/disk/by-uuid/$uuid" ] || fail "by-uuid link left after remove"
		loop=
	fi
	udev_cleanup
	trap - EXIT
fi
[ -z "$udev_reason" ] || echo "skipped (the udev rule through udevd): $udev_reason"
echo ok
