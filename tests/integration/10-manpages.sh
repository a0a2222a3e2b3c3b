#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Man pages and bash completion agree with the command table.
#
#   sh tests/integration/10-manpages.sh /path/to/bfs
#
# For every command that `bfs --help` lists:
#   - doc/bfs-NAME.8 exists and doc/bfs.8 refers to it;
#   - groff -man -ww -z gives no warning (skipped, with a message, if groff
#     is missing; every other doc/*.8 is checked too);
#   - the first line of the man page's SYNOPSIS, with the formatting
#     stripped, equals the usage line of `bfs NAME --help` after "usage: ";
#   - its OPTIONS section describes every option of the --help lines (which
#     come from the command's option table), and its .TP tags name no other;
#   - the usage line names only options of the table.
# Every name of `bfs --aliases` is in its command's SYNOPSIS and completion.
# And bash-completion/bfs is exactly the output of `bfs completion`.
#
# Every failure is printed as "FAIL: ..."; the exit status is 1 if any check
# failed, 2 if the test could not run at all.

set -u

me=10-manpages
die() {
	echo "$me: ERROR: $*" >&2
	exit 2
}

[ $# -eq 1 ] || die "usage: sh $0 /path/to/bfs"
bfs=$1
case $bfs in
/*) ;;
*) bfs=$(pwd)/$bfs ;;
esac
[ -x "$bfs" ] || die "'$bfs' is not an executable file (build it with 'make')"

root=$(cd "$(dirname "$0")/../.." && pwd) || die "cannot find the repository root"
[ -d "$root/doc" ] || die "no doc/ directory in '$root'"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/bfs-manpages.XXXXXX") || die "mktemp failed"
trap 'rm -rf "$tmp"' EXIT
trap 'exit 2' HUP INT TERM

failures=0
checks=0
fail() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}
pass() {
	checks=$((checks + 1))
}

if command -v groff >/dev/null 2>&1; then
	have_groff=1
else
	have_groff=0
	echo "$me: groff not found: skipping the groff warning checks"
fi

# The first line of the SYNOPSIS section of man page $1 as groff would fill
# it, with fonts and escapes stripped: macro and text lines are joined with
# spaces up to the first break (.br, .PP, a blank line, ...).  Handles the
# font macros .B .I .R (arguments joined by spaces) and .BR .RB .IR .RI .BI
# .IB (arguments joined without spaces).  Any other macro before the first
# break is reported as "?MACRO?" so that the comparison fails visibly.
synopsis_from_source() {
	awk '
	function splitargs(s, a,    n, i, c, cur, inq, have) {
		n = 0; cur = ""; inq = 0; have = 0
		for (i = 1; i <= length(s); i++) {
			c = substr(s, i, 1)
			if (inq) {
				if (c == "\"") {
					if (substr(s, i + 1, 1) == "\"") { cur = cur "\""; i++ }
					else inq = 0
				} else cur = cur c
			} else if (c == "\"" && !have) {
				inq = 1; have = 1
			} else if (c == " " || c == "\t") {
				if (have) { a[++n] = cur; cur = ""; have = 0 }
			} else {
				cur = cur c; have = 1
			}
		}
		if (have) a[++n] = cur
		return n
	}
	function clean(s) {
		gsub(/\\f\[[^]]*\]/, "", s)
		gsub(/\\f\([A-Za-z][A-Za-z]/, "", s)
		gsub(/\\f[A-Za-z1-4]/, "", s)
		gsub(/\\-/, "-", s)
		gsub(/\\&/, "", s)
		gsub(/\\[|^]/, "", s)
		gsub(/\\[ ~]/, " ", s)
		return s
	}
	function add(s) {
		s = clean(s)
		if (s != "") out = (out == "" ? s : out " " s)
	}
	BEGIN { insyn = 0; done = 0; out = "" }
	done { next }
	/^\.SH([ \t]|$)/ {
		if (insyn) { done = 1; next }
		h = $0; sub(/^\.SH[ \t]*/, "", h); gsub(/"/, "", h)
		if (h == "SYNOPSIS") insyn = 1
		next
	}
	!insyn { next }
	/^[.\047][ \t]*\\"/ { next }
	/^[.\047][ \t]*$/ { next }
	/^[ \t]*$/ { if (out != "") done = 1; next }
	/^[.\047]/ {
		m = $0; sub(/^[.\047][ \t]*/, "", m); sub(/[ \t].*/, "", m)
		rest = $0; sub(/^[.\047][ \t]*[^ \t]*[ \t]*/, "", rest)
		if (m ~ /^(br|PP|P|LP|sp|TP|IP|HP|SS|RS|RE|nf|fi|EX|EE|in|ti|ad|na|nh|hy)$/) {
			if (out != "") done = 1
			next
		}
		n = splitargs(rest, a)
		s = ""
		if (m ~ /^(B|I|R|SM|SB)$/) {
			for (i = 1; i <= n; i++) s = s (i > 1 ? " " : "") a[i]
		} else if (m ~ /^(BR|RB|IR|RI|BI|IB)$/) {
			for (i = 1; i <= n; i++) s = s a[i]
		} else {
			s = "?" m "?"
		}
		add(s)
		next
	}
	{ add($0) }
	END {
		gsub(/[ \t]+/, " ", out); sub(/^ /, "", out); sub(/ $/, "", out)
		print out
	}' "$1"
}

# The same line as groff renders it (plain ASCII, a very long line length so
# nothing wraps), to make sure the stripping above matches what readers see.
synopsis_rendered() {
	groff -man -Tascii -P-cbou -rLL=400n "$1" 2>/dev/null | awk '
		/^SYNOPSIS/ { on = 1; next }
		on && NF { sub(/^[ \t]+/, ""); sub(/[ \t]+$/, ""); gsub(/[ \t]+/, " "); print; exit }'
}

# The options the option lines of a --help output name, one a line: the
# lines cmd/opts.c prints, "  -L, --label=LABEL", "      --discard", "  -C FD".
help_opts() {
	sed -n 's/^  \(-[A-Za-z0-9]\)\(, --[a-z0-9-]*\)\{0,1\}\([= ].*\)\{0,1\}$/\1\2/p
		s/^      \(--[a-z0-9-]*\)\([= ].*\)\{0,1\}$/\1/p' "$1" | sed 's/, /\n/'
}

# The lines of section $2 of man page $1 (up to the next .SH).
man_section() {
	awk -v want="$2" '
		/^\.SH/ { h = $0; sub(/^\.SH[ \t]*/, "", h); gsub(/"/, "", h); on = (h == want); next }
		on' "$1"
}

# The options named by the tag lines (the line after each .TP) of man text on
# stdin: "-L", "--label".
man_tags() {
	awk 'tp { print; tp = 0; next } /^\.TP/ { tp = 1 }' |
		sed 's/\\f[A-Z]//g; s/\\-/-/g' |
		grep -o -- '\(^\|[ "]\)--\{0,1\}[A-Za-z0-9][-a-z0-9]*' | sed 's/^[ "]//' |
		grep -- '^-'
}

trim() {
	printf '%s\n' "$1" | sed 's/[[:space:]]*$//'
}

# ---- the command list ----

if ! "$bfs" --help >"$tmp/help" 2>"$tmp/help.err"; then
	die "'$bfs --help' failed: $(cat "$tmp/help.err")"
fi
cmds=$(awk '
	/commands are:/ { on = 1; next }
	on && /^  [a-z][-a-z0-9]*( |$)/ { print $1; next }
	on && /^See / { exit }' "$tmp/help")
[ -n "$cmds" ] || die "could not parse any command from '$bfs --help':
$(cat "$tmp/help")"
cmd_list=$(printf '%s\n' "$cmds" | tr '\n' ' ')
echo "$me: commands: $cmd_list"

# ---- groff warnings, every page ----

if [ "$have_groff" = 1 ]; then
	for page in "$root"/doc/*.8; do
		[ -e "$page" ] || continue
		rel=${page#"$root"/}
		if ! groff -man -ww -z "$page" >"$tmp/groff" 2>&1 || [ -s "$tmp/groff" ]; then
			fail "$rel: groff -man -ww -z reports:"
			sed 's/^/    /' "$tmp/groff"
		else
			pass
		fi
	done
fi

# ---- per command ----

overview=$root/doc/bfs.8
[ -f "$overview" ] || fail "doc/bfs.8 (the overview page) is missing"

for name in $cmds; do
	page=$root/doc/bfs-$name.8
	rel=doc/bfs-$name.8

	if [ ! -f "$page" ]; then
		fail "$rel is missing: every command in 'bfs --help' needs a man page"
		continue
	fi
	pass

	# the overview refers to it as .BR bfs\-NAME (8)
	esc=$(printf '%s' "$name" | sed 's/-/\\\\-/g')
	if [ -f "$overview" ] && ! grep -q "^\.BR bfs\\\\-$esc (8)" "$overview"; then
		fail "doc/bfs.8 does not refer to bfs-$name(8) (expected a line '.BR bfs\\-$esc (8)')"
	else
		pass
	fi

	if ! "$bfs" "$name" --help >"$tmp/cmdhelp" 2>"$tmp/cmdhelp.err"; then
		fail "'bfs $name --help' failed: $(cat "$tmp/cmdhelp.err")"
		continue
	fi
	usage=$(sed -n 1p "$tmp/cmdhelp")
	case $usage in
	"usage: bfs $name"*) ;;
	*)
		fail "'bfs $name --help' does not start with 'usage: bfs $name': got '$usage'"
		continue
		;;
	esac
	want=$(trim "${usage#usage: }")

	got=$(synopsis_from_source "$page")
	if [ -z "$got" ]; then
		fail "$rel: no SYNOPSIS section, or it is empty"
		continue
	fi
	if [ "$got" != "$want" ]; then
		fail "$rel: SYNOPSIS does not match 'bfs $name --help'
    man page: '$got'
    --help:   '$want'"
		continue
	fi
	pass

	# every option of the table (the --help lines) is in OPTIONS, and the
	# OPTIONS tags name no option the table lacks
	help_opts $tmp/cmdhelp | sort -u >"$tmp/opts.help"
	man_section "$page" OPTIONS | man_tags | sort -u >"$tmp/opts.tags"
	man_section "$page" OPTIONS | sed 's/\\-/-/g' >"$tmp/opts.text"
	for o in $(cat "$tmp/opts.help"); do
		case $o in -h|--help) continue ;; esac
		if grep -q -- "$o\([^-a-z0-9]\|\$\)" "$tmp/opts.text"; then
			pass
		else
			fail "$rel: OPTIONS does not describe '$o' (an option of 'bfs $name --help')"
		fi
	done
	# the usage line names only options of the table ("-sfnv": each letter)
	for o in $(printf '%s\n' "$want" | grep -o -- '[[ |]--\{0,1\}[A-Za-z][-a-z0-9]*' |
		   sed 's/^.//; /^--/!s/^-\(.*\)/\1/; /^--/!s/./-&\n/g' | grep -- '^-'); do
		if grep -qx -- "$o" "$tmp/opts.help"; then
			pass
		else
			fail "'bfs $name --help': the usage line names '$o', which is not an option of it"
		fi
	done

	# the OPTION=VALUE settings of the --help (set-option): each named in the page
	for o in $(sed -n 's/^  \([a-z_][a-z0-9_]*=\)[A-Z].*/\1/p' "$tmp/cmdhelp"); do
		if sed 's/\\f[A-Z]//g; s/\\-/-/g' "$page" | grep -q -- "$o"; then
			pass
		else
			fail "$rel: does not describe the setting '$o' of 'bfs $name --help'"
		fi
	done
	for o in $(cat "$tmp/opts.tags"); do
		if grep -qx -- "$o" "$tmp/opts.help"; then
			pass
		else
			fail "$rel: OPTIONS describes '$o', which 'bfs $name --help' does not list"
		fi
	done

	if [ "$have_groff" = 1 ]; then
		rendered=$(synopsis_rendered "$page")
		if [ "$rendered" != "$want" ]; then
			fail "$rel: SYNOPSIS as rendered by groff does not match 'bfs $name --help'
    rendered: '$rendered'
    --help:   '$want'"
		else
			pass
		fi
	fi
done

# ---- the installed names (bfs --aliases): each in its command's SYNOPSIS ----

if ! "$bfs" --aliases >"$tmp/aliases" 2>"$tmp/aliases.err" || [ ! -s "$tmp/aliases" ]; then
	fail "'bfs --aliases' failed or listed nothing: $(cat "$tmp/aliases.err")"
fi
while read -r alias target; do
	page=$root/doc/bfs-$target.8
	if man_section "$page" SYNOPSIS | grep -qx "\.B $alias\( .*\)\{0,1\}"; then
		pass
	else
		fail "doc/bfs-$target.8: SYNOPSIS does not show '$alias' (an installed name of 'bfs $target')"
	fi
	if grep -q "^	$alias) cmd=$target ;;\$" "$root/bash-completion/bfs"; then
		pass
	else
		fail "bash-completion/bfs does not complete '$alias' as 'bfs $target'"
	fi
done <"$tmp/aliases"

# man pages of commands that no longer exist: a warning, not a failure
for page in "$root"/doc/bfs-*.8; do
	[ -e "$page" ] || continue
	name=${page##*/bfs-}
	name=${name%.8}
	case " $cmd_list" in
	*" $name "*) ;;
	*) echo "$me: warning: doc/bfs-$name.8 documents no command listed by 'bfs --help'" ;;
	esac
done

# ---- bash completion ----

completion=$root/bash-completion/bfs
if ! "$bfs" completion >"$tmp/completion" 2>"$tmp/completion.err"; then
	fail "'bfs completion' failed: $(cat "$tmp/completion.err")"
elif [ ! -f "$completion" ]; then
	fail "bash-completion/bfs does not exist: run 'make completion' to generate it"
elif ! cmp -s "$completion" "$tmp/completion"; then
	fail "bash-completion/bfs is stale (differs from 'bfs completion'): run 'make completion'"
	diff -u "$completion" "$tmp/completion" | head -40 | sed 's/^/    /'
else
	pass
fi

# ---- the problem list of bfs-fsck(8) ----

sed -n '/^\.\\" BEGIN PROBLEMS/,/^\.\\" END PROBLEMS/p' "$root/doc/bfs-fsck.8" |
	sed '1d;$d' >"$tmp/problems.man"
if ! sh "$root/doc/gen-fsck-problems.sh" "$bfs" >"$tmp/problems.gen" 2>"$tmp/problems.err"; then
	fail "doc/gen-fsck-problems.sh failed: $(cat "$tmp/problems.err")"
elif [ ! -s "$tmp/problems.gen" ]; then
	fail "'bfs fsck --list-problems' listed nothing"
elif ! cmp -s "$tmp/problems.man" "$tmp/problems.gen"; then
	fail "the PROBLEMS list of doc/bfs-fsck.8 is stale: run 'make man-problems'"
	diff -u "$tmp/problems.man" "$tmp/problems.gen" | head -20 | sed 's/^/    /'
else
	pass
fi

if [ "$failures" -ne 0 ]; then
	echo "$me: $failures check(s) FAILED ($checks passed)"
	exit 1
fi
echo "$me: all $checks checks passed"
exit 0
