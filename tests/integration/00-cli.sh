# The command dispatcher: help, version, aliases, unknown commands.
. "$(dirname "$0")/lib.sh"

expect_ok "$BFS" --version
grep -Eq '^bfs [0-9]+\.[0-9]+\.[0-9]+$' out || fail "bad --version: $(cat out)"
expect_ok "$BFS" --help
contains out "format"
contains out "show-super"
contains out "fsck"
expect_rc 2 "$BFS"
contains err "usage: bfs"
expect_rc 2 "$BFS" no-such-command
contains err "unknown command 'no-such-command'"
expect_rc 2 "$BFS" --bogus
contains err "bfs: unknown option '--bogus'"
expect_rc 2 "$BFS" f
contains err "bfs: 'f' is ambiguous: format fsck"

cp out out.cmds
for cmd in $(sed -n 's/^  \([a-z-]*\) .*/\1/p' out.cmds); do
	expect_ok "$BFS" "$cmd" --help
	contains out "usage: bfs $cmd"
	expect_ok "$BFS" help "$cmd"
	contains out "usage: bfs $cmd"
done
expect_ok "$BFS" format --help
expect_rc 2 "$BFS" help nope

note "-h and --help are found by getopt: an option's value is not help"
expect_ok "$BFS" format -q -L -h --size 64M dash-h.img
expect_ok "$BFS" show-super dash-h.img
grep -q '^Label: *-h$' out || fail "format -L -h: the label is not '-h': $(grep -i label out)"
expect_ok "$BFS" format -q --label=--help --size 64M -f dash-h.img
expect_ok "$BFS" show-super --json dash-h.img
contains out '"label": "--help"'
expect_rc 1 "$BFS" debug -R -h dash-h.img	# the request "-h": no such shell command
contains err "command '-h'"
expect_ok "$BFS" show-super dash-h.img --help	# after the operand, as GNU getopt permutes
contains out "usage: bfs show-super"
expect_rc 1 "$BFS" show-super -- --help
contains err "cannot open '--help'"
expect_ok "$BFS" bench btree --help
contains out "usage: bfs bench"
expect_rc 2 "$BFS" bench btree --jobs 2
contains err "option '--jobs' does not apply to 'bench btree'"

note "--help lines come from the option table: each option parses"
for cmd in $(sed -n 's/^  \([a-z-]*\) .*/\1/p' out.cmds); do
	"$BFS" "$cmd" --help > help.txt
	# "  -L, --label=LABEL ..." / "      --discard ..." / "  -C FD ..."
	sed -n 's/^  \(-[A-Za-z0-9]\)\(, --[a-z0-9-]*\)\{0,1\}\([= ].*\)\{0,1\}$/\1\2/p
		s/^      \(--[a-z0-9-]*\)\([= ].*\)\{0,1\}$/\1/p' help.txt | sed 's/, /\n/' > opts.txt
	[ -s opts.txt ] || fail "bfs $cmd --help has no option lines"
	grep -qx -- --help opts.txt || fail "bfs $cmd --help does not list --help"
	for o in $(cat opts.txt); do
		# getopt knows it: not "unrecognized" / "invalid option"
		"$BFS" "$cmd" "$o" >/dev/null 2>err </dev/null
		grep -q "unrecognized option\|invalid option" err && fail "bfs $cmd: '$o' of --help is not an option"
		# and the completion offers it
		awk -v c="	$cmd)" '$0 == c { on = 1 } on && /compgen -W " / { print; exit }' \
			"$REPO/bash-completion/bfs" | grep -q -- " $o\( \|\"\)" ||
			fail "completion of 'bfs $cmd' does not offer '$o'"
	done
done
expect_ok "$BFS" --aliases
[ "$(wc -l < out)" -ge 4 ] || fail "bfs --aliases: $(cat out)"
contains out "mount.fuse.bcowfs mount-helper"

# unique prefixes work, ambiguous ones don't
expect_ok "$BFS" show --help
contains out "usage: bfs show-super"
expect_rc 2 "$BFS" f --help

# bad options: one line saying what is wrong, the usage, non-zero exit
expect_rc 2 "$BFS" format --bogus x.img
[ "$(grep -c '^bfs format: ' err)" -eq 1 ] || fail "a bad option gives more than one error: $(cat err)"
contains err "usage: bfs format"
contains err "usage: bfs format"
expect_rc 2 "$BFS" show-super
contains err "no device given"
expect_rc 2 "$BFS" show-super a b
contains err "too many arguments"
expect_rc 16 "$BFS" fsck
expect_rc 16 "$BFS" fsck -n -y x.img

# installed names dispatch on argv[0]
ln -s "$BFS" mkfs.bcowfs
ln -s "$BFS" fsck.bcowfs
expect_ok ./mkfs.bcowfs -q --size 64M alias.img
expect_ok ./fsck.bcowfs -n alias.img
contains out "clean"
expect_ok ./mkfs.bcowfs --help
contains out "usage: bfs format"
for alias in mkfs.bcowfs fsck.bcowfs mount.bcowfs mount.fuse.bcowfs; do
	ln -sf "$BFS" "$alias"
	expect_ok "./$alias" -V
	grep -Eq "^$alias \(bfs [0-9]+\.[0-9]+\.[0-9]+\)$" out || fail "$alias -V: $(cat out)"
done

note "bash completion (generated from the command table)"
if [ -f /usr/share/bash-completion/bash_completion ]; then
	cat > comp.bash <<EOS
source /usr/share/bash-completion/bash_completion
source "$REPO/bash-completion/bfs"
complete_line() {
	COMP_LINE="\$*"; COMP_POINT=\${#COMP_LINE}; read -ra COMP_WORDS <<< "\$COMP_LINE"
	[[ "\$COMP_LINE" == *" " ]] && COMP_WORDS+=("")
	COMP_CWORD=\$((\${#COMP_WORDS[@]} - 1)); COMPREPLY=(); _bfs; echo "\${COMPREPLY[*]}"
}
complete_line bfs sh
complete_line bfs format --dry
complete_line bfs show --j
complete_line mkfs.bcowfs --lab
complete_line fsck.bcowfs -
complete_line bfs help show
complete_line bfs format --compression zstd:1
complete_line bfs format --checksum=xx
complete_line bfs dump-btree -b ino
complete_line bfs mount -o ro,allow_o
complete_line bfs bench b
complete_line bfs set-option img comp
complete_line bfs set-option img compression=n
complete_line mkfs.bcowfs --checksum n
complete_line bfs debug -f $PWD/comp.ba
complete_line mount.fuse.bcowfs img dir -o ro,allow_r
complete_line bfs dump-btree -s m
EOS
	bash comp.bash > out 2>err || fail "completion script failed: $(cat err)"
	[ "$(sed -n 1p out)" = "show-super" ] || fail "command completion: $(sed -n 1p out)"
	[ "$(sed -n 2p out)" = "--dry-run" ] || fail "option completion: $(sed -n 2p out)"
	[ "$(sed -n 3p out)" = "--json" ] || fail "prefix command completion: $(sed -n 3p out)"
	[ "$(sed -n 4p out)" = "--label" ] || fail "mkfs.bcowfs completion: $(sed -n 4p out)"
	sed -n 5p out | grep -q -- "--yes" || fail "fsck.bcowfs completion: $(sed -n 5p out)"
	[ "$(sed -n 6p out)" = "show-super" ] || fail "help completion: $(sed -n 6p out)"
	[ "$(sed -n 7p out)" = "zstd:1 zstd:10 zstd:11 zstd:12 zstd:13 zstd:14 zstd:15 zstd:16 zstd:17 zstd:18 zstd:19" ] ||
		fail "--compression values: $(sed -n 7p out)"
	[ "$(sed -n 8p out)" = "xxhash" ] || fail "--checksum=VALUE: $(sed -n 8p out)"
	[ "$(sed -n 9p out)" = "inodes" ] || fail "btree names: $(sed -n 9p out)"
	[ "$(sed -n 10p out)" = "ro,allow_other" ] || fail "mount -o list: $(sed -n 10p out)"
	[ "$(sed -n 11p out)" = "btree" ] || fail "bench names: $(sed -n 11p out)"
	[ "$(sed -n 12p out)" = "compression=" ] || fail "set-option names: $(sed -n 12p out)"
	[ "$(sed -n 13p out)" = "compression=none" ] || fail "set-option values: $(sed -n 13p out)"
	[ "$(sed -n 14p out)" = "none" ] || fail "alias option values: $(sed -n 14p out)"
	[ "$(sed -n 15p out)" = "$PWD/comp.bash" ] || fail "file argument: $(sed -n 15p out)"
	[ "$(sed -n 16p out)" = "ro,allow_root" ] || fail "mount.fuse.bcowfs -o: $(sed -n 16p out)"
	[ "$(sed -n 17p out)" = "min max" ] || fail "dump-btree -s values: $(sed -n 17p out)"
	# every mount -o word is one bfs-mount(8) describes
	for w in $(sed -n 's/.*-W "\(ro rw [^"]*\)".*/\1/p' "$REPO/bash-completion/bfs" | head -1); do
		grep -q "^\.B.* ${w%=}\b\|^\.BR* ${w%=}" "$REPO/doc/bfs-mount.8" ||
			grep -qw -- "${w%=}" "$REPO/doc/bfs-mount.8" || fail "mount option '$w' not in bfs-mount(8)"
	done
else
	echo "bash-completion not installed: completion not exercised"
fi

note "every mount -o word the completion offers is one mount takes"
words=$(sed -n 's/.*-W "\(ro rw [^"]*\)".*/\1/p' "$REPO/bash-completion/bfs" | head -1)
[ -n "$words" ] || fail "no mount -o words in bash-completion/bfs"
for w in $words; do
	case $w in
	cache_size=) w=cache_size=64M ;;
	errors=) w=errors=remount-ro ;;
	*=) w=${w}1 ;;
	esac
	# -f: check the arguments, mount nothing
	"$BFS" mount-helper img mnt -f -o "$w" >/dev/null 2>err ||
		fail "completion offers '-o $w', which mount refuses: $(cat err)"
done
expect_rc 1 "$BFS" mount-helper img mnt -f -o no_such_option

note "make install honours DESTDIR and PREFIX"
make -s -C "$REPO" B="$(dirname "$BFS")" install DESTDIR="$PWD/root" PREFIX=/usr >out 2>&1 ||
	{ cat out; fail "make install"; }
for f in usr/sbin/bfs usr/sbin/mkfs.bcowfs usr/sbin/fsck.bcowfs usr/sbin/mount.bcowfs \
	 usr/sbin/mount.fuse.bcowfs usr/share/man/man8/bfs.8 usr/share/man/man8/bfs-format.8 \
	 usr/share/man/man8/mkfs.bcowfs.8 usr/share/man/man8/mount.fuse.bcowfs.8 \
	 usr/share/bash-completion/completions/bfs \
	 usr/share/bash-completion/completions/mkfs.bcowfs; do
	[ -e "root/$f" ] || fail "make install did not install $f"
done
grep -q '/usr/local' root/usr/share/man/man8/bfs.8 && fail "bfs.8 installed with PREFIX=/usr names /usr/local"
grep -q '^\.I /usr/sbin/bfs' root/usr/share/man/man8/bfs.8 || fail "bfs.8 FILES does not follow PREFIX"

note "no installed file belongs to another Debian package; the type is unknown to libblkid"
# the SCO boot filesystem owns "bfs": util-linux's mkfs.bfs, libblkid's TYPE="bfs"
if command -v dpkg >/dev/null && dpkg -S /bin/sh >/dev/null 2>&1; then
	(cd root && find . ! -type d | sed 's|^\.||') > installed
	[ -s installed ] || fail "make install installed nothing"
	while read -r f; do
		for d in "" /usr; do	# usrmerge: dpkg knows /sbin/x as /sbin/x or /usr/sbin/x
			dpkg -S "$d${f#/usr}" >owner 2>/dev/null &&
				fail "installed file $f is also $(cat owner)"
		done
	done < installed
else
	echo "dpkg not available: ownership of installed files not checked"
fi
if command -v blkid >/dev/null && blkid -k >types 2>/dev/null; then
	grep -qx bcowfs types && fail "libblkid knows a filesystem type 'bcowfs'"
	grep -qx bfs types || echo "(libblkid does not list bfs: old util-linux?)"
fi
expect_ok root/usr/sbin/mkfs.bcowfs --help
echo ok
