#!/usr/bin/env bash
# The layering rules of docs/ARCHITECTURE.md, checked: run by `make test`
# before the suites, failing the run.
#
#   libpq   only src/store/ talks to PostgreSQL: no file outside it includes
#           libpq-fe.h (directly or through a header: the compiler's own -MM
#           list) nor names PGconn, PGresult or a PQ* call;
#   pure    src/domain/ and src/sources/ include no store header (one named
#           after a src/store/ file, or one that pulls libpq) nor config.h, and
#           do no I/O and read no clock;
#   ingest  src/ingest/ includes no daemon header (one named after a
#           src/daemon/ file, directly or through a header): the daemon
#           calls ingest, and ingest reports health through srchealth.h;
#   name    no two files under src/ share a name;
#   long    no function under src/ is longer than 200 lines (its body, from
#           the opening brace at column 0 to the closing one: the house
#           style), key "long FILE FUNCTION";
#   prefix  every function a file exports, and every type, enumerator and
#           macro a header defines, is named after the file: gl_FILE or
#           gl_FILE_* (GL_FILE_* for the upper-case ones; scripts/prefix.awk,
#           which also names the families that keep a shared prefix on
#           purpose), key "prefix FILE NAME".
#
# Each violation is one line "RULE FILE: why". scripts/layers-known.txt lists
# the ones the tree still carries ("RULE FILE" a line); a violation not in it
# fails, and so does a line of it that no longer occurs, so the list only
# shrinks.
#
# usage: scripts/check-layers.sh [ROOT]   (ROOT: a tree, default this one)
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"
known=scripts/layers-known.txt
cc=${CC:-cc}
pkgs="libpq libmicrohttpd libcjson yaml-0.1 libcurl libcrypto zlib pangocairo cairo-pdf"
# shellcheck disable=SC2086
pkgflags=$(pkg-config --cflags $pkgs 2>/dev/null || true)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

mapfile -t srcs < <(find src -name '*.c' | sort)
# "file.c dep dep ..." a line, from the compiler's own include resolution
# shellcheck disable=SC2086
"$cc" -MM -std=c11 -D_GNU_SOURCE -Iinclude -Isrc $pkgflags "${srcs[@]}" >"$tmp/mm" 2>"$tmp/mm.err" || {
	echo "check-layers: $cc -MM failed:" >&2
	cat "$tmp/mm.err" >&2
	exit 2
}
sed -e ':a' -e '/\\$/N; s/\\\n//; ta' "$tmp/mm" | sed -E 's/^[^:]*: *//; s/ +/ /g' >"$tmp/deps"

# store headers: named after a src/store/ file, or pulling libpq themselves
for f in src/store/*.c; do
	b=$(basename "$f" .c)
	[ -f "include/gl/$b.h" ] && echo "include/gl/$b.h"
done >"$tmp/storeh"
grep -l 'libpq-fe\.h' include/gl/*.h >>"$tmp/storeh" 2>/dev/null || true
sort -u -o "$tmp/storeh" "$tmp/storeh"
# daemon headers: named after a src/daemon/ file, or private to it
for f in src/daemon/*.c; do
	b=$(basename "$f" .c)
	[ -f "include/gl/$b.h" ] && echo "include/gl/$b.h"
done >"$tmp/daemonh"
find src/daemon -name '*.h' >>"$tmp/daemonh"

out=$tmp/found
: >"$out"
while read -r file deps; do
	case $file in
	src/store/*) continue ;;
	esac
	for d in $deps; do
		case $d in
		*libpq-fe.h)
			echo "libpq $file: includes libpq-fe.h" >>"$out"
			break
			;;
		esac
	done
	case $file in
	src/ingest/*)
		for d in $deps; do
			if grep -qxF "$d" "$tmp/daemonh"; then
				echo "ingest $file: includes the daemon header $d" >>"$out"
			fi
		done
		;;
	esac
	case $file in
	src/domain/* | src/sources/*)
		for d in $deps; do
			if [ "$d" = include/gl/config.h ] || grep -qxF "$d" "$tmp/storeh"; then
				echo "pure $file: includes $d" >>"$out"
			fi
		done
		;;
	esac
done <"$tmp/deps"

# names: code, not comments (a line that starts a comment is skipped)
code_grep() { # ERE, files... -> "file" a line
	local re=$1
	shift
	[ $# -gt 0 ] || return 0
	grep -HnE "$re" "$@" 2>/dev/null | grep -vE '^[^:]+:[0-9]+:[[:space:]]*(/?\*|//)' | cut -d: -f1 | sort -u || true
}
mapfile -t outside < <(find src -name '*.[ch]' -not -path 'src/store/*' | sort)
code_grep '\bPQ[a-zA-Z]+\(|\bPG(conn|result)\b' "${outside[@]}" | sed 's/^/libpq /; s/$/: names PGconn, PGresult or PQ*/' >>"$out"
mapfile -t pure < <(find src/domain src/sources -name '*.[ch]' | sort)
io='\b(fopen|freopen|fdopen|open|openat|popen|read|write|socket|connect|fork|exec[lv]p?e?|system|getenv|time|clock_gettime|gettimeofday|sleep|usleep|nanosleep)\(|\bcurl_|\bPQ[a-zA-Z]+\('
grep -HnE "$io" "${pure[@]}" 2>/dev/null | grep -vE '^[^:]+:[0-9]+:[[:space:]]*(/?\*|//)' |
	grep -vE '(->|\.)(read|write|open|time)\(' | cut -d: -f1 | sort -u |
	sed 's/^/pure /; s/$/: does I\/O or reads the clock/' >>"$out" || true

find src -name '*.[ch]' | awk -F/ '{ n[$NF] = n[$NF] " " $0 } END { for (b in n) if (split(n[b], a, " ") > 1) print b, n[b] }' |
	while read -r b paths; do
		for p in $paths; do echo "name $p: $b is also $(echo "$paths" | tr ' ' '\n' | grep -vxF "$p" | tr '\n' ' ' | sed 's/ $//')"; done
	done >>"$out"

# functions: a definition starts at a column-0 line naming NAME( and its
# body at a "{" alone at column 0; it ends at the next "}" at column 0
find src -name '*.c' | sort | xargs awk -v max=200 '
	FNR == 1 { sig = ""; start = 0 }
	/^[A-Za-z_].*\(/ && !start { sig = $0 }
	/^\{$/ && !start && sig != "" { start = FNR; fn = sig; sub(/\(.*/, "", fn); sub(/.*[ *]/, "", fn); next }
	/^\}/ && start {
		if (FNR - start + 1 > max) printf "long %s %s: %d lines (at most %d)\n", FILENAME, fn, FNR - start + 1, max
		start = 0; sig = ""
	}' >>"$out"

mapfile -t named < <(find src include -name '*.[ch]' | sort)
awk -f scripts/prefix.awk "${named[@]}" |
	awk '{ b = $1; sub(/.*\//, "", b); sub(/(_int)?\.[ch]$/, "", b)
	       if ($2 ~ /^GL_/) b = toupper(b)
	       p = $2 ~ /^GL_/ ? "GL_" : "gl_"
	       printf "prefix %s %s: not named %s%s or %s%s_* after its file\n", $1, $2, p, b, p, b }' >>"$out"

sort -u -o "$out" "$out"
cut -d: -f1 "$out" | sort -u >"$tmp/keys"
if [ -f "$known" ]; then
	{ grep -vE "^[[:space:]]*(#|$)" "$known" || true; } | sort -u >"$tmp/known"
else
	: >"$tmp/known"
fi
rc=0
new=$(comm -23 "$tmp/keys" "$tmp/known")
if [ -n "$new" ]; then
	echo "check-layers: the layering rules (docs/ARCHITECTURE.md) broken:" >&2
	while read -r k; do grep -F "$k:" "$out" | sed 's/^/  /' >&2; done <<<"$new"
	rc=1
fi
gone=$(comm -13 "$tmp/keys" "$tmp/known")
if [ -n "$gone" ]; then
	echo "check-layers: fixed, take these lines out of $known:" >&2
	echo "$gone" | sed 's/^/  /' >&2
	rc=1
fi
[ $rc -ne 0 ] || echo "check-layers: ok ($(wc -l <"$tmp/deps") files, $(wc -l <"$tmp/known") known exceptions in $known)"
exit $rc
