#!/bin/sh
# make demo: install what is missing, build, format a default sparse image
# and show its superblock.  Leaves demo/bfs.img for the next steps.
set -e
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
sh tests/install-deps.sh
make -s all
mkdir -p demo
img=demo/bfs.img
rm -f "$img"
echo "== bfs format --size 4G $img"
build/bfs format --size 4G "$img"
echo
echo "== bfs show-super $img"
build/bfs show-super "$img"
echo
echo "== bfs fsck -n $img"
build/bfs fsck -n "$img"
echo
echo "Image left at $img ($(du -h "$img" | cut -f1) allocated of $(du -h --apparent-size "$img" | cut -f1))."
