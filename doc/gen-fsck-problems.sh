#!/bin/sh
# SPDX-License-Identifier: MIT
# Print the PROBLEMS section of bfs-fsck(8) from `bfs fsck --list-problems`
# (the problem list in include/bfs/fsck_problems.h), or with -w rewrite it
# in place between the BEGIN/END PROBLEMS markers of doc/bfs-fsck.8.
#   sh doc/gen-fsck-problems.sh [-w] build/bfs
set -eu
write=0
[ "${1:-}" = "-w" ] && { write=1; shift; }
bfs=$1
man=$(dirname "$0")/bfs-fsck.8

section() {
	"$bfs" fsck --list-problems | while IFS="$(printf '\t')" read -r name flags msg; do
		printf '.TP\n.B %s\n' "$name"
		printf '%s' "$msg" | sed -e 's/\\/\\\\/g' -e 's/-/\\-/g' -e 's/^\./\\\&./'
		printf ' (%s)\n' "$flags"
	done
}

if [ $write -eq 0 ]; then
	section
	exit 0
fi
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
{
	sed -n '1,/^\.\\" BEGIN PROBLEMS/p' "$man"
	section
	sed -n '/^\.\\" END PROBLEMS/,$p' "$man"
} >"$tmp"
cat "$tmp" >"$man"
