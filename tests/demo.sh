#!/bin/sh
# make demo: install what is missing, build, format a default sparse image,
# show its superblock, then mount it, copy a real directory tree in,
# unmount, check, remount and show that the content is identical.
# Leaves demo/bfs.img behind.
set -e
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
sh tests/install-deps.sh
make -s all
mkdir -p demo
img=$root/demo/bfs.img
mnt=$root/demo/mnt
src=/usr/include
rm -f "$img"
echo "== bfs format --size 4G $img"
build/bfs format --size 4G "$img"
echo
echo "== bfs show-super $img"
build/bfs show-super "$img"
echo

if [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null || [ "$(id -u)" -ne 0 ]; then
	echo "FUSE is not usable here (needs /dev/fuse, fusermount3 and root): not mounting."
	build/bfs fsck -n "$img"
	exit 0
fi
mkdir -p "$mnt"
echo "== bfs mount $img $mnt; cp -a $src"
build/bfs mount "$img" "$mnt"
start=$(date +%s)
cp -a "$src" "$mnt/"
echo "copied $(du -sh "$mnt/$(basename "$src")" | cut -f1) in $(( $(date +%s) - start )) s"
umount "$mnt"
flock "$img" true	# the mount process has let go of the image
echo
echo "== bfs fsck -n $img"
build/bfs fsck -n "$img"
echo
echo "== remount and compare with $src"
build/bfs mount -o ro "$img" "$mnt"
if diff -r --no-dereference "$src" "$mnt/$(basename "$src")" >/dev/null; then
	echo "identical: $(find "$mnt" -type f | wc -l) files"
	rc=0
else
	echo "DIFFERENT"
	rc=1
fi
df -h "$mnt" | tail -n 1
umount "$mnt"
flock "$img" true
echo
echo "Image left at $img ($(du -h "$img" | cut -f1) allocated of $(du -h --apparent-size "$img" | cut -f1))."
exit $rc
