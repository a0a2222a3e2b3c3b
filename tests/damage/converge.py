#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""fsck convergence harness: damage populated images, repair, check the result.

For every base image, damage mode and seed:
  1. copy the base image and damage it with bfs-damage (seeded);
  2. `bfs fsck -n`: must terminate (timeout), must not crash or print a
     sanitizer report, and must not change one byte of the image;
  3. `bfs fsck -y` (with --check-data once fsck has it): must terminate
     without a crash or sanitizer report;
  4. a second `bfs fsck -n` must exit 0 (converged) and write nothing;
  5. the result must open through the filesystem layer (bfs-fsimage
     manifest, the code the mount runs) and every file must read back with
     its original content, or else be one fsck reported (its inode number or
     path in the output of `fsck -y`); nothing fsck did not report is lost.

Only properties 2 and 3 (no crash, no hang, -n never writes) fail the run
today; the convergence rate is printed per mode and fails the run only below
--min-converge (raise it as repair lands).  Every failing case is listed with
its seed and the command that reproduces it.

usage: converge.py --bfs BFS --tools DIR [--seeds 1-20] [--modes a,b]
                   [--images a,b] [--count N] [--jobs N] [--timeout S]
                   [--min-converge PCT] [--case IMAGE:MODE:SEED] [--keep DIR]
                   [--bases DIR]
The base images are made afresh unless --bases keeps them: bfs format picks
random node seqs and name-hash seeds, so a case reproduces exactly only on
the same base image (--keep also saves each failing image before fsck).
"""
import argparse
import collections
import concurrent.futures
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile

# name -> (bfs format options, bfs-fsimage populate options); without
# checksums a changed data byte is undetectable by design
NO_CSUM = {"nocsum"}
IMAGES = {
    "csum": (["--btree-node-size=4K"], []),
    "nocsum": (["--btree-node-size=4K", "--checksum=none"], []),
    "zstd": (["--compression=zstd"], []),
    "unclean": (["--btree-node-size=4K"], ["--unclean"]),
}
IMAGE_SIZE = "16M"
FILES = 60

# outcome classes, worst first; the first four are the properties that must
# hold today (they fail the run whatever the threshold)
HARD = ["crash", "hang", "n-wrote", "harness-error"]
SOFT = ["not-converged", "unopenable", "unreported-eio", "unreported-loss"]
SANITIZER = re.compile(r"ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|"
                       r"SUMMARY: UndefinedBehaviorSanitizer")


def sha(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def run(cmd, timeout):
    """(rc, output); rc None on timeout"""
    env = dict(os.environ, BFS_NO_PROGRESS="1",
               ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:exitcode=99",
               UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:exitcode=99")
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=timeout, env=env)
        return p.returncode, p.stdout.decode("utf-8", "replace")
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode("utf-8", "replace") if e.stdout else ""
        return None, out


def manifest(tools, img, timeout):
    rc, out = run([os.path.join(tools, "bfs-fsimage"), "manifest", img], timeout)
    if rc != 0:
        return None, out
    m = {}
    for line in out.splitlines():
        f = line.split(" ", 5)
        if len(f) == 6:
            m[f[5]] = {"kind": f[0], "ino": f[1], "size": f[3], "hash": f[4]}
    return m, out


def make_base(args, name, work):
    """a populated image; with --bases, made once and reused, so that a case
    can be reproduced exactly (format picks random node seqs and hash seed)"""
    fmt, pop = IMAGES[name]
    img = os.path.join(args.bases or work, "base-%s.img" % name)
    if not (args.bases and os.path.exists(img)):
        if os.path.exists(img):
            os.unlink(img)
        subprocess.run([args.bfs, "format", "-q", "--size", IMAGE_SIZE] + fmt + [img],
                       check=True)
        subprocess.run([os.path.join(args.tools, "bfs-fsimage"), "populate", "--seed", "1",
                        "--files", str(FILES)] + pop + [img], check=True)
    rc, out = run([args.bfs, "fsck", "-f", "-n", img], args.timeout)
    if rc != 0:
        sys.exit("converge: base image %s is not clean (fsck -n exit %s):\n%s" % (name, rc, out))
    m, out = manifest(args.tools, img, args.timeout)
    if m is None or not any(e["kind"] == "f" for e in m.values()):
        sys.exit("converge: base image %s does not read back:\n%s" % (name, out))
    return img, m


def reported(fsck_out, path, ino, before):
    """fsck named the file: "inode N", its whole path, or its directory
    entry ("'NAME' in directory DIR-INODE", as pass 2 says it)"""
    if re.search(r"\binode %s\b" % re.escape(ino), fsck_out):
        return True
    if re.search(re.escape(path) + r"(?=$|[\s:,;'\")])", fsck_out, re.M):
        return True
    parent, name = path.rsplit("/", 1)
    pino = before[parent]["ino"] if parent in before else "1" if not parent else None
    return pino is not None and ("'%s' in directory %s " % (name, pino)) in fsck_out


def check_fsck(res, step, rc, out):
    """a crash, a hang or a sanitizer report ends the case"""
    if rc is None:
        res["class"], res["why"] = "hang", "%s did not finish" % step
    elif SANITIZER.search(out) or rc < 0 or rc >= 99:
        res["class"], res["why"] = "crash", "%s: exit %s" % (step, rc)
    else:
        return True
    res["out"] += "\n--- %s\n%s" % (step, out)
    return False


def one_case(args, bases, name, mode, seed, keep):
    base, before = bases[name]
    res = {"image": name, "mode": mode, "seed": seed, "class": None, "why": "", "out": ""}
    d = tempfile.mkdtemp(prefix="case-", dir=args.work)
    img = os.path.join(d, "damaged.img")
    try:
        subprocess.run(["cp", "--sparse=always", base, img], check=True)
        rc, out = run([os.path.join(args.tools, "bfs-damage"), "--seed", str(seed), "--count",
                       str(args.count), mode, img], args.timeout)
        res["damage"] = out.strip()
        if rc == 3:
            res["class"] = "no-target"
            return res
        if rc != 0:
            res["class"], res["why"] = "harness-error", "bfs-damage exit %s: %s" % (rc, out)
            return res
        if keep:
            subprocess.run(["cp", "--sparse=always", img, os.path.join(d, "damaged-before-fsck.img")],
                           check=True)
        rc, out = run([args.bfs, "show-super", img], args.timeout)
        if rc != 0:
            res["class"] = "no-superblock"	# outside the contract: nothing to trust
            return res

        h = sha(img)
        rc, out = run([args.bfs, "fsck", "-f", "-n", img], args.timeout)
        if not check_fsck(res, "fsck -n", rc, out):
            return res
        if sha(img) != h:
            res["class"], res["why"] = "n-wrote", "fsck -n changed the damaged image"
            return res
        res["first_n_rc"] = rc

        rc, fix = run([args.bfs, "fsck", "-f", "-y"] + args.fsck_opts + [img], args.timeout)
        res["out"] += "--- fsck -y (exit %s)\n%s" % (rc, fix)
        if not check_fsck(res, "fsck -y", rc, fix):
            return res
        res["y_rc"] = rc

        h = sha(img)
        rc, out = run([args.bfs, "fsck", "-f", "-n", img], args.timeout)
        if not check_fsck(res, "second fsck -n", rc, out):
            return res
        if sha(img) != h:
            res["class"], res["why"] = "n-wrote", "second fsck -n changed the image"
            return res
        if rc != 0:
            res["out"] += "--- second fsck -n (exit %s)\n%s" % (rc, out)
            res["class"], res["why"] = "not-converged", "second fsck -n exit %s" % rc
            return res

        after, out = manifest(args.tools, img, args.timeout)
        if after is None:
            res["out"] += "--- manifest\n%s" % out
            res["class"], res["why"] = "unopenable", "does not open after fsck -y"
            return res
        lost, eio = [], []
        for path, e in sorted(before.items()):
            a = after.get(path)
            if a and a["kind"] == e["kind"] and a["size"] == e["size"] and a["hash"] == e["hash"]:
                continue
            if reported(fix, path, e["ino"], before):
                continue
            if not a:
                lost.append(path + " (missing)")
            elif not re.match("^[0-9a-f]{16}$|^-$", a["hash"]):
                eio.append("%s (reads %s)" % (path, a["hash"]))
            else:
                lost.append(path + " (changed)")
        if (lost and not eio and name in NO_CSUM and "file data" in res["damage"] and
                all(l.endswith("(changed)") for l in lost)):
            res["class"] = "undetectable"	# outside the contract: nothing to check against
            return res
        if lost or eio:
            # silent loss is worse than an unreported read error: name it first
            res["class"] = "unreported-loss" if lost else "unreported-eio"
            res["why"] = "%d not reported by fsck: %s" % (len(lost + eio),
                                                          ", ".join((lost + eio)[:4]))
            return res
        res["class"] = "converged"
        return res
    finally:
        if keep and (res["class"] in HARD or
                     (not args.keep_hard_only and res["class"] not in ("converged", "no-target"))):
            dst = os.path.join(keep, "%s-%s-%d" % (name, mode, seed))
            shutil.rmtree(dst, ignore_errors=True)
            # cp keeps the images sparse (copytree would write every zero)
            subprocess.run(["cp", "-r", "--sparse=always", d, dst], check=True)
            os.rename(os.path.join(dst, "damaged.img"), os.path.join(dst, "after-fsck-y.img"))
            with open(os.path.join(dst, "log"), "w") as f:
                f.write("%s\n%s\n%s\n" % (res.get("damage", ""), res["why"], res["out"]))
        shutil.rmtree(d, ignore_errors=True)


NUM = re.compile(r"\b(0x[0-9a-f]+|[0-9a-f]{16}|\d+)\b")
BTREE = re.compile(r"\bbtree (extents|inodes|dirents|xattrs|alloc)\b")


def reason(r):
    """what made a case fail, with numbers taken out so that cases group"""
    if r["class"] in ("unreported-loss", "unreported-eio"):
        what = "file data" if "file data" in r.get("damage", "") else "metadata"
        return "%s: %s after %s damage" % (r["class"], "EIO" if r["class"] == "unreported-eio"
                                           else "lost or changed", what)
    if r["class"] != "not-converged":
        return "%s: %s" % (r["class"], NUM.sub("N", r["why"]))
    # what the second fsck -n still finds is what -y did not repair
    left = r["out"].split("--- second fsck -n", 1)[-1]
    for line in left.splitlines():
        if line.startswith("error: "):
            line = line[len("error: "):]
            if line.startswith("verify: "):
                line = line[len("verify: "):]
            line = BTREE.sub("btree B", NUM.sub("N", line.split(" (")[0]))
            return "not-converged: " + line
    for line in left.splitlines():
        if ":" in line and not line.startswith(("---", "replaying", " (exit")):
            return "not-converged: " + NUM.sub("N", line)
    return "not-converged"


def seeds_of(spec):
    out = []
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        out += range(int(lo), int(hi or lo) + 1)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bfs", required=True, help="the bfs binary under test (ASan build)")
    ap.add_argument("--tools", required=True, help="directory of bfs-damage and bfs-fsimage")
    ap.add_argument("--seeds", default="1-10", help="e.g. 1-100 or 3,7,9")
    ap.add_argument("--modes", default=None, help="comma list (default: every mode)")
    ap.add_argument("--images", default=",".join(IMAGES), help="comma list of " +
                    ", ".join(IMAGES))
    ap.add_argument("--count", type=int, default=1, help="mutations per image")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=120, help="seconds per command")
    ap.add_argument("--min-converge", type=float, default=0.0,
                    help="fail below this %% converged (per mode)")
    ap.add_argument("--case", help="IMAGE:MODE:SEED: run one case, print everything")
    ap.add_argument("--keep", help="copy every failing case (images, log) under this directory")
    ap.add_argument("--keep-hard-only", action="store_true",
                    help="--keep only crashes, hangs and writes by fsck -n")
    ap.add_argument("--bases", help="keep the base images here and reuse them (exact repro)")
    ap.add_argument("--quiet", action="store_true", help="no list of failing cases")
    ap.add_argument("--top", type=int, default=15, help="how many failure reasons to list")
    args = ap.parse_args()
    args.bfs = os.path.abspath(args.bfs)
    args.tools = os.path.abspath(args.tools)

    # once fsck can read every extent (-c), a bad data checksum is its to report
    helptext = subprocess.run([args.bfs, "fsck", "--help"], stdout=subprocess.PIPE,
                              universal_newlines=True).stdout
    args.fsck_opts = ["--check-data"] if "--check-data" in helptext else []
    dmg = os.path.join(args.tools, "bfs-damage")
    all_modes = subprocess.run([dmg, "--list"], stdout=subprocess.PIPE, check=True,
                               universal_newlines=True).stdout.split()
    all_modes.append("any")
    if args.case:
        name, mode, seed = args.case.split(":")
        images, modes, seeds = [name], [mode], [int(seed)]
    else:
        images = args.images.split(",")
        modes = args.modes.split(",") if args.modes else all_modes
        seeds = seeds_of(args.seeds)
    for m in modes:
        if m not in all_modes:
            sys.exit("converge: unknown mode %s (modes: %s)" % (m, " ".join(all_modes)))
    for i in images:
        if i not in IMAGES:
            sys.exit("converge: unknown image %s (images: %s)" % (i, " ".join(IMAGES)))

    with tempfile.TemporaryDirectory(prefix="bfs-converge-") as work:
        args.work = work
        if args.keep:
            os.makedirs(args.keep, exist_ok=True)
        if args.bases:
            args.bases = os.path.abspath(args.bases)
            os.makedirs(args.bases, exist_ok=True)
        bases = {i: make_base(args, i, work) for i in images}
        cases = [(i, m, s) for m in modes for i in images for s in seeds]
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
            results = list(ex.map(lambda c: one_case(args, bases, c[0], c[1], c[2], args.keep),
                                  cases))

    if args.case:
        r = results[0]
        print("damage:\n%s\nresult: %s %s\n%s" % (r.get("damage", ""), r["class"], r["why"],
                                                r["out"]))
        return 1 if r["class"] in HARD else 0
    return report(args, modes, results)


def report(args, modes, results):
    by_mode = collections.OrderedDict((m, collections.Counter()) for m in modes)
    for r in results:
        by_mode[r["mode"]][r["class"]] += 1
    cols = ["converged"] + HARD + SOFT
    print("| mode | cases | in contract | converged | " + " | ".join(cols[1:]) + " |")
    print("|---" * (len(cols) + 3) + "|")
    bad = 0
    tot = collections.Counter()
    for m, c in by_mode.items():
        n = sum(c.values())
        inc = n - c["no-target"] - c["no-superblock"] - c["undetectable"]
        rate = 100.0 * c["converged"] / inc if inc else 100.0
        print("| %s | %d | %d | %.1f%% | %s |" % (m, n, inc, rate,
                                                 " | ".join(str(c[k]) for k in cols[1:])))
        tot.update(c)
        if inc and rate < args.min_converge:
            bad += 1
    n = sum(tot.values())
    inc = n - tot["no-target"] - tot["no-superblock"] - tot["undetectable"]
    print("| all | %d | %d | %.1f%% | %s |" % (n, inc, 100.0 * tot["converged"] / inc if inc
                                             else 100.0,
                                             " | ".join(str(tot[k]) for k in cols[1:])))
    print("(in contract: damage was made and a superblock is still valid; excluded: %d with "
          "nothing to damage, %d with no valid superblock, %d data changes on a filesystem "
          "without checksums)" % (tot["no-target"], tot["no-superblock"], tot["undetectable"]))
    reasons = collections.OrderedDict()
    for r in results:
        if r["class"] in HARD + SOFT:
            reasons.setdefault(reason(r), []).append(r)
    print("\ntop reasons (cases, reason, example):")
    for why, rs in sorted(reasons.items(), key=lambda kv: -len(kv[1]))[:args.top]:
        r = rs[0]
        print("%5d  %s  [e.g. %s:%s:%d]" % (len(rs), why, r["image"], r["mode"], r["seed"]))
    failing = [r for r in results if r["class"] in HARD + SOFT]
    if failing and not args.quiet:
        print("\nfailing cases (reproduce with the command after each):")
    for r in failing if not args.quiet else [r for r in failing if r["class"] in HARD]:
        print("%s %s seed %d: %s: %s" % (r["image"], r["mode"], r["seed"], r["class"], r["why"]))
        for line in r.get("damage", "").splitlines():
            print("    " + line)
        if r["class"] in HARD:
            for line in r["out"].splitlines()[-30:]:
                print("    | " + line)
        print("    repro: %s --bfs %s --tools %s --count %d%s --case %s:%s:%d" % (
            sys.argv[0], args.bfs, args.tools, args.count,
            " --bases " + args.bases if args.bases else "", r["image"], r["mode"], r["seed"]))
    hard = sum(tot[k] for k in HARD)
    if hard:
        print("FAIL: %d cases crashed, hung, or were written by fsck -n" % hard)
    if bad:
        print("FAIL: %d modes converge below %.1f%%" % (bad, args.min_converge))
    return 1 if hard or bad else 0


if __name__ == "__main__":
    sys.exit(main())
