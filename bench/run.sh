#!/usr/bin/env bash
# `make bench`: every benchmark, one table. Benchmarks that need a database
# get a throwaway embedded cluster (as tests/run.sh does). Never part of
# `make test`. Each benchmark prints markdown rows "| figure | ours | limit | ratio |".
# Usage: bench/run.sh [bench_x ...]   (names: only these, and no web bench)
set -uo pipefail
only=" $* "
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
# a benchmark asked by name and not built would print no row and exit 0
for b in "$@"; do
	[[ -x $BUILD/bench/$b ]] || { echo "bench/run.sh: $BUILD/bench/$b is not built (make $BUILD/bench/$b)" >&2; exit 2; }
done
T=$(mktemp -d /tmp/gpuledger-bench.XXXXXX)
chmod 755 "$T"
trap '"$BUILD/gpuledger" --config "$T/config.yaml" db stop >/dev/null 2>&1; rm -rf "$T"' EXIT
printf 'database:\n  embedded_dir: %s/var\nlog:\n  level: warn\n' "$T" >"$T/config.yaml"
"$BUILD/gpuledger" --config "$T/config.yaml" db init >/dev/null 2>&1
"$BUILD/gpuledger" --config "$T/config.yaml" db start >/dev/null 2>&1
status=$("$BUILD/gpuledger" --config "$T/config.yaml" db status)
sock=$(sed -n 's/.*socket \([^)]*\)).*/\1/p' <<<"$status")
pass=$(sed -n 's/^passfile \([^ ]*\) .*/\1/p' <<<"$status")
export GL_TEST_BIN=$PWD/$BUILD/gpuledger
export GL_TEST_ADMIN_DSN="host=$sock port=5432 dbname=postgres user=postgres passfile=$pass"
export GL_TEST_APP_DSN="host=$sock port=5432 user=gpuledger passfile=$pass"
export GL_TEST_OWNER_DSN="host=$sock port=5432 user=gpuledger_owner passfile=$pass"
export GL_TEST_TMP=$T
rows=()
echo "machine: $(nproc) cores, $(awk '/MemTotal/{printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -r)" >&2
for b in "$BUILD"/bench/bench_*; do
	[[ -x $b && $b != *.d ]] || continue
	[[ $only == "  " || $only == *" $(basename "$b") "* ]] || continue
	load=$(cut -d' ' -f1 /proc/loadavg)
	echo "running $(basename "$b") (load average $load) ..." >&2
	out=$("$b" 2> >(sed 's/^/  /' >&2)) || echo "  $(basename "$b") failed" >&2
	while IFS= read -r l; do
		# a benchmark's own header lines are not figures; every row says
		# the load average it started under (figures of a shared machine
		# are read beside it)
		[[ $l == '| '* && $l != '| benchmark |'* && $l != '| figure |'* ]] &&
			rows+=("$(sed "s/^| \([^|]*[^ |]\) *|/| \1 [load $load] |/" <<<"$l")")
	done <<<"$out"
done
# the dashboard in headless chromium (bench/web), when the web suite's
# node modules are installed (tests/web/run.sh does it)
if [[ $only == "  " && -d tests/web/node_modules/playwright-core ]] && command -v node >/dev/null; then
	echo "running bench/web/bench_web.mjs ..." >&2
	out=$(node bench/web/bench_web.mjs 2> >(sed 's/^/  /' >&2)) || echo "  bench_web failed" >&2
	while IFS= read -r l; do [[ $l == '| '* ]] && rows+=("$l"); done <<<"$out"
fi
echo
echo "| figure | ours | limit / peer | ratio |"
echo "|---|---|---|---|"
printf '%s\n' "${rows[@]}" | awk '!seen[$0]++'
