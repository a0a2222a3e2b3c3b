#!/bin/sh
# Install the Debian packages bfs needs to build and test, if any is missing.
# As root it installs them with apt-get; otherwise it prints the command.
# The list is the single source of truth for README, `make demo` and CI.
set -e
PKGS="build-essential pkg-config clang
libblkid-dev uuid-dev libzstd-dev libxxhash-dev libreadline-dev check
libfuse3-dev fuse3 libext2fs-dev liblmdb-dev liburing-dev
python3 e2fsprogs util-linux fdisk groff-base man-db bash-completion zstd
fio stress-ng dbench fsmark xfsprogs btrfs-progs fuse2fs
attr acl udev libcap2-bin"

missing=""
for p in $PKGS; do
	dpkg-query -W -f '${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0

echo "bfs: missing Debian packages:$missing"
if [ "$(id -u)" -ne 0 ]; then
	echo "bfs: run as root, or: sudo apt-get install$missing" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing
