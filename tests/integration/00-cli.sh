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
contains err "unknown or ambiguous command 'no-such-command'"

for cmd in $(sed -n 's/^  \([a-z-]*\) .*/\1/p' out); do
	expect_ok "$BFS" "$cmd" --help
	contains out "usage: bfs $cmd"
	expect_ok "$BFS" help "$cmd"
	contains out "usage: bfs $cmd"
done
expect_ok "$BFS" format --help
expect_rc 2 "$BFS" help nope

# unique prefixes work, ambiguous ones don't
expect_ok "$BFS" show --help
contains out "usage: bfs show-super"
expect_rc 2 "$BFS" f --help

# bad options: usage on stderr, non-zero exit
expect_rc 2 "$BFS" format --bogus x.img
contains err "usage: bfs format"
expect_rc 2 "$BFS" show-super
contains err "no device given"
expect_rc 2 "$BFS" show-super a b
contains err "too many arguments"
expect_rc 16 "$BFS" fsck
expect_rc 16 "$BFS" fsck -n -y x.img

# installed names dispatch on argv[0]
ln -s "$BFS" mkfs.bfs
ln -s "$BFS" fsck.bfs
expect_ok ./mkfs.bfs -q --size 64M alias.img
expect_ok ./fsck.bfs -n alias.img
contains out "clean"
expect_ok ./mkfs.bfs --help
contains out "usage: bfs format"
echo ok
