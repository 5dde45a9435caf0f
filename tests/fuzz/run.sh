#!/usr/bin/env bash
# Builds and runs libFuzzer harnesses: tests/fuzz/run.sh tests/fuzz/fuzz_X.c ...
# Each runs for ${FUZZ_SECONDS:-30} s seeded from tests/fuzz/corpus/<X>/ (read
# only: new inputs go to $BUILD/fuzz/<X>/corpus so the repo is not flooded);
# crashes land in $BUILD/fuzz/<X>/. Needs clang.
# A harness whose first lines say "fuzz-link: full" (the config file, the
# query parameters, the API's POST bodies) is linked with every source of
# the binary but the programs' mains (cli/main.c, sim/sim_main.c: libFuzzer
# has its own), instrumented, and the daemon's libraries; the
# objects are built once into $BUILD/fuzz/full-obj.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
CC=${FUZZ_CC:-clang}
SECS=${FUZZ_SECONDS:-30}
CFLAGS=(-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
        -std=c11 -D_GNU_SOURCE -Iinclude -Isrc $(pkg-config --cflags libcjson 2>/dev/null))
LIBS=($(pkg-config --libs libcjson 2>/dev/null) -lz -lm)

if (($# == 0)); then
	set -- tests/fuzz/fuzz_*.c
fi
# The pure, non-I/O sources (and the counter arithmetic fuzz_servemetrics
# checks the parser's output with): whatever compiles without the daemon's libraries
# (libpq, MHD, curl, yaml, crypto). Files needing those are skipped, not linked.
srcs=()
for f in src/util/*.c src/sources/*.c src/domain/increase.c; do
	[[ -e $f ]] || continue
	if grep -qE '#include <(libpq-fe|microhttpd|curl/curl|yaml|openssl/[a-z]+)\.h>' "$f"; then
		continue
	fi
	srcs+=("$f")
done

# every source of the binary but a file that defines main (the same two the
# Makefile leaves out of libgl.a), instrumented (full harnesses)
full_objs=()
build_full() {
	local objdir="$BUILD/fuzz/full-obj" f o
	((${#full_objs[@]})) && return 0
	mkdir -p "$objdir"
	"${MAKE:-make}" --no-print-directory BUILD="$BUILD" "$BUILD/gen/migrations.c" >&2
	for f in $(find src -name '*.c' | sort | xargs grep -L '^int main(') "$BUILD/gen/migrations.c"; do
		o="$objdir/$(echo "$f" | tr / _).o"
		if [[ ! -e $o || $f -nt $o ]]; then
			"$CC" -g -O1 -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined \
				-std=c11 -D_GNU_SOURCE -Iinclude -Isrc $(pkg-config --cflags $FULL_PKGS) -c "$f" -o "$o"
		fi
		full_objs+=("$o")
	done
}
FULL_PKGS="libpq libmicrohttpd libcjson yaml-0.1 libcurl libcrypto zlib pangocairo cairo-pdf"

rc=0
for h in "$@"; do
	name=$(basename "$h" .c)
	name=${name#fuzz_}
	out="$BUILD/fuzz/$name"
	corpus="tests/fuzz/corpus/$name"
	mkdir -p "$out/corpus" "$corpus"
	echo "fuzz: building $name" >&2
	if head -5 "$h" | grep -q "fuzz-link: full"; then
		build_full
		"$CC" "${CFLAGS[@]}" $(pkg-config --cflags $FULL_PKGS) -o "$out/fuzz_$name" "$h" "${full_objs[@]}" \
			$(pkg-config --libs $FULL_PKGS) \
			-lpthread -lm
	else
		"$CC" "${CFLAGS[@]}" -o "$out/fuzz_$name" "$h" "${srcs[@]}" "${LIBS[@]}"
	fi
	echo "fuzz: running $name for ${SECS}s" >&2
	if ! (cd "$out" && ./"fuzz_$name" -max_total_time="$SECS" -print_final_stats=1 \
		-artifact_prefix=./ corpus "$OLDPWD/$corpus"); then
		echo "fuzz: $name FAILED (artifacts in $out)" >&2
		rc=1
	fi
done
exit $rc
