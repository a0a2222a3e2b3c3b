#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The layers of libcore hold: every #include goes down (or stays in its own
# module), never up.  doc/layers.md says what each layer is and why btree/
# and core/ are one module.
#
#   sh tests/check-layers.sh        (run by `make check`)
#
# Layers, lowest first; a file may include the public headers (include/bfs/)
# and the internal headers of its own layer or below, and no other module's
# internal header unless listed in ALLOWED below.
set -u
cd "$(dirname "$0")/.." || exit 2

dir_layer() {
	case $1 in
	util) echo 0 ;; os) echo 1 ;;
	super | keys | alloc | journal) echo 2 ;;
	btree | core) echo 3 ;;
	fs) echo 4 ;;
	fsck | mkfs | image) echo 5 ;;
	*) echo "" ;;
	esac
}

header_layer() {
	case $1 in
	types.h | os.h | log.h | checksum.h | format.h | bkey.h | btree_format.h | \
	extent_format.h | fs_format.h | journal_format.h | iolog_format.h | finding.h | \
	fsck_problems.h | migrate_format.h | image_format.h) echo 0 ;;
	dev.h | probe.h | lazy_lib.h) echo 1 ;;
	super.h | alloc.h | journal.h | devspec.h) echo 2 ;;
	btree.h | core.h | btree_scan.h | btree_repair.h) echo 3 ;;
	fs.h | resize.h | import.h | online.h | fs_repair.h) echo 4 ;;
	fsck.h | mkfs.h | image.h) echo 5 ;;
	*) echo "" ;;
	esac
}

# modules that are one module in two folders (doc/layers.md)
same_module() {
	[ "$1" = "$2" ] && return 0
	case "$1:$2" in
	btree:core | core:btree) return 0 ;;
	esac
	return 1
}

# known exceptions, each with the issue that removes it: "dir:header" (none left)
ALLOWED=""

fails=0
checked=0
fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

for f in $(find libcore -name '*.[ch]' | sort); do
	dir=$(echo "$f" | cut -d/ -f2)
	mine=$(dir_layer "$dir")
	[ -n "$mine" ] || { fail "$f: libcore/$dir/ is in no layer (add it to tests/check-layers.sh)"; continue; }
	grep -n '^#include' "$f" | while IFS= read -r line; do
		n=${line%%:*}
		inc=${line#*:}
		case $inc in
		*'<bfs/'*)
			h=$(echo "$inc" | sed 's|.*<bfs/\([^>]*\)>.*|\1|')
			l=$(header_layer "$h")
			if [ -z "$l" ]; then
				echo "FAIL: $f:$n: include/bfs/$h is in no layer (add it to tests/check-layers.sh)"
			elif [ "$l" -gt "$mine" ]; then
				echo "FAIL: $f:$n: <bfs/$h> (layer $l) is above libcore/$dir (layer $mine)"
			fi ;;
		*'"../'*)
			other=$(echo "$inc" | sed 's|.*"\.\./\([a-z_]*\)/.*|\1|')
			h=$(echo "$inc" | sed 's|.*"\.\./\([^"]*\)".*|\1|')
			l=$(dir_layer "$other")
			if [ -z "$l" ]; then
				echo "FAIL: $f:$n: \"../$h\" is in no layer"
			elif [ "$l" -gt "$mine" ]; then
				echo "FAIL: $f:$n: \"../$h\" reaches up from libcore/$dir (layer $mine) to layer $l"
			elif ! same_module "$dir" "$other" && ! echo " $ALLOWED " | grep -q " $dir:$h "; then
				echo "FAIL: $f:$n: \"../$h\" is an internal header of another module: use its public header"
			fi ;;
		esac
	done
	checked=$((checked + 1))
done >"${TMPDIR:-/tmp}/bfs-layers.$$"

for f in cmd/*.[ch]; do
	grep -n '^#include "' "$f" | grep -v '#include "[a-z_]*\.h"' | while IFS= read -r line; do
		echo "FAIL: $f:${line%%:*}: cmd/ includes only <bfs/...> and its own headers: ${line#*:}"
	done
done >>"${TMPDIR:-/tmp}/bfs-layers.$$"

out=$(cat "${TMPDIR:-/tmp}/bfs-layers.$$")
rm -f "${TMPDIR:-/tmp}/bfs-layers.$$"
if [ -n "$out" ]; then
	echo "$out"
	echo "layers: $(echo "$out" | wc -l) include(s) cross a layer"
	exit 1
fi
echo "layers: every include of $(find libcore -name '*.[ch]' | wc -l) libcore files and cmd/ goes down"
exit 0
