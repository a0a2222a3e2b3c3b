#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/fs_tree_gen.py: the smallfiles and objects workloads of `bfs bench fs`
on a mounted filesystem, for bench/fs-vs-peers.  Prints one JSON object.

  fs_tree_gen.py tree DIR [--files N] [--seed S] [--time-limit SECS]
      unpack a kernel-like tree into DIR/tree: directories of 50 files in
      groups of 16 (tree/gGGG/dDDDDD/fNN.c), sizes log-normal (median 3000
      bytes, sigma 1.5, at most 1 MiB), one write per file like tar; then sync.
  fs_tree_gen.py objects DIR [--objects N] [--fsync-every K] [--seed S]
      4 MiB objects (DIR/objects/oNNNNNN, written in 1 MiB pieces) each with a
      user.meta xattr, a 4 KiB record appended to DIR/objects.log per object
      and an fsync of the log every K records; then sync.

The sizes come from the same splitmix64 stream as cmd/bench_fs.c, so the
tree is byte-for-byte the size of the one `bfs bench fs` builds in-process.

"sync" is syncfs(2) on DIR plus an fsync of the last file and of the top
directory: FUSE does not pass syncfs(2) to the filesystem (only virtiofs gets
FUSE_SYNCFS), and on bfs and fuse2fs one fsync makes everything durable, so
every target ends with the whole tree on disk.  --time-limit stops creating
files early (the rate is still right; the run says how many were made).
"""
import argparse
import ctypes
import json
import math
import os
import sys
import time

MASK = (1 << 64) - 1
GAMMA = 0x9E3779B97F4A7C15
W_SMALLFILES = 3            # enum fs_workload in cmd/bench_fs.c
FILES_PER_DIR = 50
DIRS_PER_GROUP = 16
SMALL_MEDIAN = 3000.0
SMALL_SIGMA = 1.5
SMALL_MAX = 1 << 20
OBJECT_SIZE = 4 << 20
OBJECT_PIECE = 1 << 20
LOG_RECORD = 4096


def mix64(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


class Stream:
    """stream_seed()/next_u64()/next_unit() of cmd/bench_fs.c"""

    def __init__(self, seed, workload, ident):
        self.s = mix64(seed ^ (workload << 32) ^ (ident + 1))

    def u64(self):
        self.s = (self.s + GAMMA) & MASK
        return mix64(self.s)

    def unit(self):
        return ((self.u64() >> 11) + 1) * 2.0 ** -53


def small_file_size(st):
    u1, u2 = st.unit(), st.unit()
    z = math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)
    v = math.floor(SMALL_MEDIAN * math.exp(SMALL_SIGMA * z))
    return SMALL_MAX if v > SMALL_MAX else int(v)


_libc = ctypes.CDLL(None, use_errno=True)


def syncfs(path):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        if _libc.syncfs(fd) != 0:
            e = ctypes.get_errno()
            raise OSError(e, os.strerror(e), path)
    finally:
        os.close(fd)


def fsync_path(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def full_sync(top, last_file):
    syncfs(top)
    if last_file:
        fsync_path(last_file)
    fsync_path(top)


def write_file(path, data, mode=0o644):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def run_tree(args, data):
    st = Stream(args.seed, W_SMALLFILES, 0)
    top = os.path.join(args.dir, "tree")
    t0 = time.monotonic()
    deadline = t0 + args.time_limit if args.time_limit else None
    os.mkdir(top)
    nbytes = files = 0
    group = dirpath = path = None
    for i in range(args.files):
        size = small_file_size(st)
        if i % FILES_PER_DIR == 0:
            if deadline and time.monotonic() > deadline:
                break
            k = i // FILES_PER_DIR
            if k % DIRS_PER_GROUP == 0:
                group = os.path.join(top, "g%03d" % (k // DIRS_PER_GROUP))
                os.mkdir(group)
            dirpath = os.path.join(group, "d%05d" % k)
            os.mkdir(dirpath)
        path = os.path.join(dirpath, "f%02d.c" % (i % FILES_PER_DIR))
        off = (i * 4096 * 7) % (len(data) - size + 1) // 4096 * 4096
        write_file(path, data[off:off + size])
        nbytes += size
        files += 1
    full_sync(top, path)
    ns = int((time.monotonic() - t0) * 1e9)
    return {"workload": "smallfiles", "ops": files, "bytes": nbytes, "total_ns": ns,
            "complete": files == args.files}


def put_object(objdir, i, data):
    path = os.path.join(objdir, "o%06d" % i)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        for off in range(0, OBJECT_SIZE, OBJECT_PIECE):
            start = ((i + off // OBJECT_PIECE) * 4096 * 7) % (len(data) - OBJECT_PIECE + 1)
            start = start // 4096 * 4096
            piece = memoryview(data)[start:start + OBJECT_PIECE]
            while piece:
                piece = piece[os.write(fd, piece):]
        meta = '{"content-type":"application/octet-stream","etag":"%016x%016x","size":%d}' % (
            mix64(i), mix64(~i & MASK), OBJECT_SIZE)
        os.setxattr(fd, "user.meta", meta.encode())
    finally:
        os.close(fd)


def run_objects(args, data):
    objdir = os.path.join(args.dir, "objects")
    logpath = os.path.join(args.dir, "objects.log")
    t0 = time.monotonic()
    os.mkdir(objdir)
    log = os.open(logpath, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    fsyncs = 0
    try:
        for i in range(args.objects):
            put_object(objdir, i, data)
            off = (i * 4096 * 7) % (len(data) - LOG_RECORD + 1) // 4096 * 4096
            os.write(log, data[off:off + LOG_RECORD])
            # the log is the commit point: durable every K records
            if (i + 1) % args.fsync_every == 0:
                os.fsync(log)
                fsyncs += 1
    finally:
        os.close(log)
    full_sync(args.dir, logpath)
    ns = int((time.monotonic() - t0) * 1e9)
    return {"workload": "objects", "ops": args.objects,
            "bytes": args.objects * (OBJECT_SIZE + LOG_RECORD), "total_ns": ns,
            "fsyncs": fsyncs + 1, "complete": True}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("mode", choices=["tree", "objects"])
    p.add_argument("dir")
    p.add_argument("--files", type=int, default=20000)
    p.add_argument("--objects", type=int, default=256)
    p.add_argument("--fsync-every", type=int, default=8)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--time-limit", type=float, default=0,
                   help="tree: stop creating files after this many seconds")
    args = p.parse_args()
    if args.files < 1 or args.objects < 1 or args.fsync_every < 1:
        p.error("counts must be positive")
    # random bytes, as in bfs bench fs: compression must not flatter anyone
    data = os.urandom(2 << 20)
    res = run_tree(args, data) if args.mode == "tree" else run_objects(args, data)
    ns = max(res["total_ns"], 1)
    res["ops_per_sec"] = res["ops"] * 1e9 / ns
    res["bytes_per_sec"] = res["bytes"] * 1e9 / ns
    json.dump(res, sys.stdout)
    print()


if __name__ == "__main__":
    main()
