# SPDX-License-Identifier: MIT
# Helpers of 80-migrate.sh.
#   tree.py make DIR        a tree with every file type, hard links, xattrs,
#                           owners, modes, sparse and huge files, a deep and
#                           a large directory
#   tree.py manifest DIR    one line per path: type, mode, owner, times,
#                           size, content hash, link target, device, xattrs
#                           (system.* left out: FUSE mounts differ there), and
#                           which paths are hard links of each other; times
#                           in whole seconds, as fuse2fs (the reference) shows
#                           them (the nanoseconds are checked separately)
import hashlib, os, socket, stat, sys

def make(root):
    os.makedirs(root)
    def w(path, data, mode=0o644, uid=0, gid=0):
        p = os.path.join(root, path)
        with open(p, 'wb') as f:
            f.write(data)
        os.chmod(p, mode)
        os.chown(p, uid, gid)
    os.makedirs(os.path.join(root, 'dir/sub'))
    w('empty', b'')
    w('small', b'hello\n', 0o4755, 1000, 1000)
    w('tiny', b'x' * 40, 0o2644)
    w('dir/block', os.urandom(4096 * 3 + 17), 0o600, 12345, 54321)
    w('dir/sub/big', os.urandom(3 * 1024 * 1024 + 5))
    with open(os.path.join(root, 'sparse'), 'wb') as f:
        f.write(b'head')
        f.seek(9 * 1024 * 1024)
        f.write(b'tail')
    with open(os.path.join(root, 'huge'), 'wb') as f:
        f.seek(5 * 1024 ** 3)
        f.write(b'beyond 4 GiB')
    os.link(os.path.join(root, 'small'), os.path.join(root, 'dir/small-link'))
    os.link(os.path.join(root, 'small'), os.path.join(root, 'dir/sub/small-link2'))
    os.symlink('small', os.path.join(root, 'fast-link'))
    os.symlink('/' + 'long/' * 60 + 'target', os.path.join(root, 'slow-link'))
    os.mkfifo(os.path.join(root, 'fifo'), 0o640)
    os.mknod(os.path.join(root, 'chr'), 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    os.mknod(os.path.join(root, 'blk'), 0o660 | stat.S_IFBLK, os.makedev(8, 17))
    s = socket.socket(socket.AF_UNIX)
    s.bind(os.path.join(root, 'sock'))
    s.close()
    sticky = os.path.join(root, 'sticky')
    os.mkdir(sticky, 0o1777)
    os.chmod(sticky, 0o1777)
    deep = root
    for i in range(40):
        deep = os.path.join(deep, 'd%02d' % i)
    os.makedirs(deep)
    w(os.path.relpath(os.path.join(deep, 'leaf'), root), b'deep\n')
    large = os.path.join(root, 'large')
    os.mkdir(large)
    for i in range(1500):
        open(os.path.join(large, 'entry-with-a-longer-name-%05d' % i), 'w').close()
    os.setxattr(os.path.join(root, 'small'), 'user.colour', b'blue')
    os.setxattr(os.path.join(root, 'small'), 'trusted.secret', b'\0\1\2')
    os.setxattr(os.path.join(root, 'small'), 'security.label', b'system_u:object_r')
    os.setxattr(os.path.join(root, 'dir'), 'user.big', os.urandom(900))
    os.setxattr(os.path.join(root, 'tiny'), 'user.empty', b'')
    os.utime(os.path.join(root, 'dir/block'), ns=(1000000000123456789, 946684800987654321))

def manifest(root):
    out, inodes = [], {}
    for dirpath, dirs, files in os.walk(root):
        dirs.sort()
        if dirpath == root and 'ext2_saved' in dirs:
            dirs.remove('ext2_saved')
        for name in sorted(dirs + files):
            p = os.path.join(dirpath, name)
            rel = os.path.relpath(p, root)
            st = os.lstat(p)
            line = [rel, stat.filemode(st.st_mode), '%o' % st.st_mode, str(st.st_uid),
                    str(st.st_gid), str(st.st_mtime_ns // 10**9), str(st.st_atime_ns // 10**9),
                    str(st.st_ctime_ns // 10**9)]
            if stat.S_ISREG(st.st_mode):
                h = hashlib.sha256()
                with open(p, 'rb') as f:
                    if st.st_size > 64 << 20:
                        # huge sparse files: the first and last MiB, not GiBs of holes
                        h.update(f.read(1 << 20))
                        f.seek(st.st_size - (1 << 20))
                    while True:
                        b = f.read(1 << 20)
                        if not b:
                            break
                        h.update(b)
                line += [str(st.st_size), h.hexdigest()[:16], 'links=%d' % st.st_nlink]
                inodes.setdefault(st.st_ino, []).append(rel)
            elif stat.S_ISLNK(st.st_mode):
                line += [os.readlink(p)]
            elif stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
                line += ['%d,%d' % (os.major(st.st_rdev), os.minor(st.st_rdev))]
            elif stat.S_ISDIR(st.st_mode):
                line += ['links=%d' % st.st_nlink]
            if not stat.S_ISLNK(st.st_mode):
                for x in sorted(os.listxattr(p)):
                    if not x.startswith('system.'):
                        line.append('%s=%s' % (x, hashlib.sha256(os.getxattr(p, x)).hexdigest()[:12]))
            out.append(' '.join(line))
    for paths in sorted(sorted(v) for v in inodes.values() if len(v) > 1):
        out.append('hardlinks ' + ' '.join(paths))
    print('\n'.join(out))

if __name__ == '__main__':
    {'make': make, 'manifest': manifest}[sys.argv[1]](sys.argv[2])
