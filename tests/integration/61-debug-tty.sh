# bfs debug, interactive: driven through a pseudo-terminal (python3's pty
# module) to check tab completion of commands, btree names, field names and
# paths inside the image, and the history file.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || skip "python3 is needed to drive a pseudo-terminal"

expect_ok "$BFS" format -q --size 64M img
printf 'hello world\n' >hello.txt
expect_ok "$BFS" debug -w -f - img <<EOF
mkdir /dir
write hello.txt /dir/hello.txt
EOF
mkdir home

# each step: keys to type, then text the terminal must show before the next
cat >session.py <<'EOF'
import os, pty, select, sys, time

bfs, img, home, steps = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
pid, fd = pty.fork()
if pid == 0:
    os.environ.update(TERM="dumb", INPUTRC="/dev/null")
    if home == "-":
        os.environ.pop("HOME", None)
    else:
        os.environ["HOME"] = home
    os.execv(bfs, [bfs, "debug", img])

seen = b""
def wait_for(text, timeout=10.0):
    global seen
    end = time.time() + timeout
    while text.encode() not in seen:
        left = end - time.time()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            sys.exit("timed out waiting for %r; the terminal showed:\n%s" %
                     (text, seen.decode(errors="replace")))
        try:
            data = os.read(fd, 4096)
        except OSError:
            data = b""
        if not data:
            sys.exit("bfs debug exited while waiting for %r; the terminal showed:\n%s" %
                     (text, seen.decode(errors="replace")))
        seen += data
    # later waits look only at what comes after
    seen = seen[seen.index(text.encode()) + len(text):]

wait_for("bfs: ")
for keys, want in zip(steps[0::2], steps[1::2]):
    os.write(fd, keys.encode().decode("unicode_escape").encode())
    wait_for(want)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
EOF

note "completion of commands, btrees, fields and image paths"
python3 session.py "$BFS" img home \
	'btr\t\n' 'key bytes' \
	'keys ino\t1:0 1:0\n' 'type inode pos 1:0:0' \
	'set-super lab\tx\n' 'set-super: the image is open read-only' \
	'cat /d\t' 'cat /dir/' \
	'hel\t\n' 'hello world' \
	'stat /dir/hello.txt\n' 'regular' \
	'help cor\t\n' 'flip bytes' \
	'quit\n' '' >session.out 2>&1
rc=$?
# set-super failed (read-only), so the session's exit status is 1
[ $rc -eq 1 ] || { cat session.out; fail "interactive session exited $rc, expected 1"; }

note "history is saved in ~/.bfs_debug_history"
h=home/.bfs_debug_history
[ -f "$h" ] || fail "no history file"
contains "$h" "btrees"
contains "$h" "keys inodes 1:0 1:0"
contains "$h" "cat /dir/hello.txt"
contains "$h" "quit"
grep -q ' $' "$h" && fail "history lines keep the blank completion appended"

note "the history comes back in the next session (ctrl-p recalls the last line)"
python3 session.py "$BFS" img home \
	'\x10\x10\n' 'help corrupt' \
	'\x10\x10\x10\x10\x10\n' 'hello world' \
	'quit\n' '' >session.out 2>&1 || { cat session.out; fail "history session"; }

note "without HOME there is no history, and no error"
python3 session.py "$BFS" img - 'pwd\n' '(inode 1)' 'quit\n' '' \
	>session.out 2>&1 || { cat session.out; fail "session without HOME"; }
echo ok
