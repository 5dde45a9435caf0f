#!/usr/bin/env bash
# Runs the test suites: unit (cmocka, pure), then integration and http
# against a throwaway PostgreSQL cluster made by the real `gpuledger db init`.
# Usage: tests/run.sh all|unit|integration
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
what=${1:-all}
passed=0; failed=0; failures=()

run_suite() { # run_suite BINARY...
	for t in "$@"; do
		[[ -x $t ]] || continue
		echo "=== $t"
		out=$("$t" 2>&1); rc=$?
		printf '%s\n' "$out"
		p=$(grep -c '^\[       OK \]' <<<"$out"); f=$(grep -c '^\[  FAILED  \]' <<<"$out")
		# cmocka lists failures twice (inline and in the summary): count the summary once
		f=$(grep -E '^\[  FAILED  \] [0-9]+ test' <<<"$out" | awk '{s+=$4} END{print s+0}')
		if ((rc != 0 && f == 0)); then f=1; fi
		passed=$((passed + p)); failed=$((failed + f))
		((rc != 0)) && failures+=("$t (exit $rc)")
	done
}

if [[ $what == all || $what == unit ]]; then
	run_suite "$BUILD"/tests/unit/test_*
fi

if [[ $what == all || $what == integration ]]; then
	T=$(mktemp -d /tmp/gpuledger-test.XXXXXX)
	chmod 755 "$T"
	cleanup() {
		"$BUILD/gpuledger" --config "$T/config.yaml" db stop >/dev/null 2>&1
		[[ -n ${GL_TEST_KEEP:-} ]] || rm -rf "$T"
	}
	trap cleanup EXIT
	printf 'database:\n  embedded_dir: %s/var\nlog:\n  level: warn\n' "$T" >"$T/config.yaml"
	if ! GL_PG_FAST=1 "$BUILD/gpuledger" --config "$T/config.yaml" db init ||
		! "$BUILD/gpuledger" --config "$T/config.yaml" db start; then
		echo "tests: could not start the throwaway PostgreSQL (see $T/var/log)" >&2
		failed=$((failed + 1)); failures+=("embedded PostgreSQL")
	else
		sock=$("$BUILD/gpuledger" --config "$T/config.yaml" db status | sed -n 's/.*socket \([^)]*\)).*/\1/p')
		export GL_TEST_BIN=$PWD/$BUILD/gpuledger
		export GL_TEST_ADMIN_DSN="host=$sock port=5432 dbname=postgres user=postgres"
		export GL_TEST_APP_DSN="host=$sock port=5432 user=gpuledger"
		export GL_TEST_TMP=$T
		run_suite "$BUILD"/tests/integration/test_* "$BUILD"/tests/http/test_*
		for w in tests/web/run.sh; do
			[[ -x $w ]] || continue
			echo "=== $w"
			out=$("$w" 2>&1); rc=$?
			printf '%s\n' "$out"
			p=$(grep -cE '^ok ' <<<"$out"); f=$(grep -cE '^not ok ' <<<"$out")
			((rc != 0 && f == 0)) && f=1
			passed=$((passed + p)); failed=$((failed + f))
			((rc != 0)) && failures+=("$w (exit $rc)")
		done
	fi
fi

echo
if ((${#failures[@]})); then
	echo "failed suites:"; printf '  %s\n' "${failures[@]}"
fi
echo "total: $passed passed, $failed failed"
((failed == 0 && ${#failures[@]} == 0))
