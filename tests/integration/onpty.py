# onpty.py ANSWERS CMD...: runs CMD on a pseudo-terminal and answers its
# "[y/n/a] " prompts in turn with the comma-separated ANSWERS ("^C" is the
# interrupt key); past the answers, ^D (end of input on a terminal).  All
# the terminal showed goes to ./pty.out; exits as CMD.  For bfs fsck's
# interactive mode and its progress bar (71-fsck-admin, 73-fsck-fsck8).
import os, pty, select, sys

answers, cmd = sys.argv[1].split(",") if sys.argv[1] else [], sys.argv[2:]
pid, fd = pty.fork()
if pid == 0:
    os.execvp(cmd[0], cmd)
seen, asked = b"", 0
while True:
    if not select.select([fd], [], [], 60)[0]:
        open("pty.out", "wb").write(seen.replace(b"\r\n", b"\n"))
        sys.exit("timed out; the terminal showed:\n" + seen.decode(errors="replace"))
    try:
        data = os.read(fd, 4096)
    except OSError:
        data = b""
    if not data:
        break
    seen += data
    while seen.count(b"[y/n/a] ") > asked:
        a = answers[asked] if asked < len(answers) else None
        os.write(fd, b"\x04" if a is None else b"\x03" if a == "^C" else a.encode() + b"\n")
        asked += 1
open("pty.out", "wb").write(seen.replace(b"\r\n", b"\n"))
sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
