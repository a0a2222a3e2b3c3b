# POSIX ACLs: setfacl/getfacl, permission checks as other users, the mode
# and the access ACL kept in step (chmod, setfacl), default ACLs inherited
# instead of the umask, persistence, and -o noacl.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount-lib.sh"

mount_prereqs
command -v setfacl >/dev/null && command -v getfacl >/dev/null ||
	skip "setfacl/getfacl not installed (Debian package acl)"

# as_user UID CMD...: run CMD as UID (and GID UID), status is CMD's
as_user() {
	python3 - "$@" <<'EOF'
import os, subprocess, sys
uid = int(sys.argv[1])
os.setgroups([])
os.setgid(uid)
os.setuid(uid)
sys.exit(subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode)
EOF
}
acl_of() { getfacl -c -p "$1" 2>/dev/null | grep -v '^$' | tr '\n' ' '; }

chmod 711 .	# other users reach the mount below
expect_ok "$BFS" format -q --size 256M img
expect_ok "$BFS" mount -o allow_other img mnt

note "an access ACL grants one user what the mode does not, and sets the mode"
echo secret > mnt/f
chmod 600 mnt/f
! as_user 4242 cat mnt/f || fail "user 4242 reads a 0600 file"
expect_ok setfacl -m u:4242:r mnt/f
as_user 4242 cat mnt/f || fail "user 4242 cannot read with user:4242:r"
! as_user 4243 cat mnt/f || fail "user 4243 reads without an entry"
! as_user 4242 sh -c 'echo x >> mnt/f' || fail "user 4242 writes with only r"
[ "$(stat -c %a mnt/f)" = 640 ] || fail "mode after setfacl: $(stat -c %a mnt/f), want 640 (mask r)"
ls -l mnt/f | grep -q '^-rw-r-----+' || fail "ls does not show the ACL: $(ls -l mnt/f)"

note "chmod changes the mask; the mask limits named entries"
expect_ok setfacl -m u:4242:rw mnt/f
chmod 600 mnt/f
! as_user 4242 cat mnt/f || fail "chmod 600 did not mask user:4242"
acl_of mnt/f | grep -q "mask::---" || fail "mask after chmod 600: $(acl_of mnt/f)"
chmod 660 mnt/f
as_user 4242 sh -c 'echo more >> mnt/f' || fail "user 4242 cannot write after chmod 660"

note "group entries"
echo g > mnt/g
chmod 600 mnt/g
expect_ok setfacl -m g:5555:r mnt/g
python3 - "$PWD/mnt/g" <<'EOF' || fail "a group entry does not grant its group"
import os, sys
pid = os.fork()
if pid == 0:
    os.setgroups([5555])
    os.setgid(4244)
    os.setuid(4244)
    try:
        open(sys.argv[1]).read()
        os._exit(0)
    except PermissionError:
        os._exit(1)
sys.exit(os.waitpid(pid, 0)[1] != 0)
EOF

note "removing the ACL, and an ACL equal to the mode, leave no ACL"
expect_ok setfacl -b mnt/g
[ -z "$(getfacl -c -s mnt/g 2>/dev/null)" ] || fail "setfacl -b left an ACL"
ls -l mnt/g | grep -q '^-rw-------' || fail "after setfacl -b: $(ls -l mnt/g)"
expect_ok setfacl -m u::rw,g::r,o::r mnt/g
[ "$(stat -c %a mnt/g)" = 644 ] || fail "a minimal ACL did not set the mode"
! ls -l mnt/g | grep -q '+' || fail "a minimal ACL was stored"

note "default ACLs are inherited instead of the umask"
mkdir mnt/d
expect_ok setfacl -d -m u:4242:rwx,g::rx,o::- mnt/d
(umask 077 && touch mnt/d/new && mkdir mnt/d/sub) || fail "create in a directory with a default ACL"
acl_of mnt/d/new | grep -q "user:4242:rwx" || fail "new file did not inherit: $(acl_of mnt/d/new)"
[ "$(stat -c %a mnt/d/new)" = 660 ] || fail "new file mode $(stat -c %a mnt/d/new), want 660 (umask ignored)"
acl_of mnt/d/sub | grep -q "default:user:4242:rwx" || fail "new directory lacks the default ACL"
as_user 4242 sh -c 'echo x > mnt/d/new' || fail "user 4242 cannot write the inherited file"
(umask 077 && touch mnt/plain) || fail "create"
[ "$(stat -c %a mnt/plain)" = 600 ] || fail "without a default ACL the umask applies: $(stat -c %a mnt/plain)"
expect_fail setfacl -d -m u:4242:r mnt/f

note "setfacl by the owner outside the file's group clears S_ISGID (generic/375)"
# as_ids UID GID CMD...: run CMD as UID with only GID, status is CMD's
as_ids() {
	python3 - "$@" <<'EOF'
import os, subprocess, sys
os.setgroups([])
os.setgid(int(sys.argv[2]))
os.setuid(int(sys.argv[1]))
sys.exit(subprocess.run(sys.argv[3:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode)
EOF
}
# sgid_after UID GID ACL: the mode of a 2755 file of 4250:4250 after UID:GID sets ACL
sgid_after() {
	rm -f mnt/sg
	touch mnt/sg && chown 4250:4250 mnt/sg && chmod 2755 mnt/sg || fail "set up mnt/sg"
	as_ids "$1" "$2" setfacl -m "$3" mnt/sg || fail "setfacl -m $3 as $1:$2"
	stat -c %a mnt/sg
}
chmod 777 mnt
m=$(sgid_after 4250 4251 u::rwx,g::rwx,o::rwx)
[ "$m" = 777 ] || fail "owner outside the group: mode $m, want 777 (S_ISGID cleared)"
m=$(sgid_after 4250 4251 u:4242:r)
[ "$m" = 755 ] || fail "owner outside the group, a named entry: mode $m, want 755"
m=$(sgid_after 4250 4250 u::rwx,g::rwx,o::rwx)
[ "$m" = 2777 ] || fail "owner in the group: mode $m, want 2777"
m=$(sgid_after 0 0 u::rwx,g::rwx,o::rwx)
[ "$m" = 2777 ] || fail "root (CAP_FSETID): mode $m, want 2777"
rm -f mnt/sg
chmod 755 mnt

note "ACLs survive a remount; fsck is clean"
before=$(acl_of mnt/f; acl_of mnt/d; acl_of mnt/d/sub)
unmount_wait umount mnt
expect_ok "$BFS" fsck -n img
expect_ok "$BFS" mount -o allow_other img mnt
[ "$(acl_of mnt/f; acl_of mnt/d; acl_of mnt/d/sub)" = "$before" ] || fail "ACLs changed across a remount"
as_user 4242 sh -c 'cat mnt/f' || fail "user 4242 lost access after remount"
unmount_wait umount mnt

note "-o noacl: ACLs are refused"
expect_ok "$BFS" mount -o noacl img mnt
expect_fail setfacl -m u:4242:r mnt/plain
contains err "Operation not supported"
unmount_wait umount mnt
echo "ACL tests passed"
