#!/usr/bin/env bash
# Runs the test suites: unit (cmocka, pure), then integration and http
# against a throwaway PostgreSQL cluster made by the real `gpuledger db init`.
# Usage: tests/run.sh all|unit|integration|ha
#   ha: the several-daemon, standby and failover programs alone (make test-ha:
#       tests/ha/test_* and the http suite's test_ha_*, GL_HA_TRIALS kills)
#   VALGRIND=1  under valgrind memcheck (make test-valgrind): each unit test
#               binary, and in the integration and http suites the real
#               binary they run (GL_TEST_BIN = tests/tools/valgrind-bin.sh;
#               the test programs themselves run natively); no web tests.
#               Logs in $BUILD/valgrind, one per process; each with
#               errors (leaks: definite and indirect) counts as a failure.
#               Helpers wait GL_TEST_TIMEOUT_SCALE (default 10) times longer.
#   TESTS="test_a test_b"  only these test programs (any suite)
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
what=${1:-all}
passed=0; failed=0; failures=()
VG=${VALGRIND:-}
[[ $VG == 0 ]] && VG=
VG_DIR=$BUILD/valgrind
VG_OPTS=(--leak-check=full --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect
	--track-origins=yes --num-callers=30 --child-silent-after-fork=yes --suppressions=tests/tools/valgrind.supp)
if [[ -n $VG ]]; then
	rm -rf "$VG_DIR" && mkdir -p "$VG_DIR"
	export GL_VG_BIN=$PWD/$BUILD/gpuledger GL_VG_LOGDIR=$PWD/$VG_DIR
	export GL_TEST_TIMEOUT_SCALE=${GL_TEST_TIMEOUT_SCALE:-10}
fi

# The programs a suite must run come from the sources (tests/unit/test_*.c
# -> $BUILD/tests/unit/test_*): a program that failed to build, or a name in
# TESTS that no source has, is a failure, never a silent skip.
expected() { # expected DIR... -> the binaries of DIR/test_*.c (those named in TESTS, if set)
	local d src t
	for d in "$@"; do
		for src in tests/"$d"/test_*.c; do
			[[ -f $src ]] || continue
			t=${src##*/}; t=${t%.c}
			[[ -z ${TESTS:-} || " $TESTS " == *" $t "* ]] && echo "$BUILD/tests/$d/$t"
		done
	done
}

# Wall time of each program, so the slowest are named at the end (make test
# has a 15-minute budget on 2 cores; this says where it goes).
timings=()
timed() { # timed NAME START (an $EPOCHREALTIME)
	local ms=$(( (${EPOCHREALTIME/./} - ${2/./}) / 1000 ))
	timings+=("$ms ${1##*/}")
}

run_suite() { # run_suite BINARY...
	for t in "$@"; do
		if [[ ! -x $t ]]; then
			echo "=== $t: missing (did it build? 'make build-tests')"
			failed=$((failed + 1)); failures+=("$t (missing)")
			continue
		fi
		echo "=== $t"
		t0=$EPOCHREALTIME
		if [[ -n $VG && $t == */unit/* ]]; then
			out=$(valgrind "${VG_OPTS[@]}" --log-file="$VG_DIR/${t##*/}.%p" "$t" 2>&1); rc=$?
		else
			out=$("$t" 2>&1); rc=$?
		fi
		printf '%s\n' "$out"
		timed "$t" "$t0"
		p=$(grep -c '^\[       OK \]' <<<"$out"); f=$(grep -c '^\[  FAILED  \]' <<<"$out")
		# cmocka lists failures twice (inline and in the summary): count the summary once
		f=$(grep -E '^\[  FAILED  \] [0-9]+ test' <<<"$out" | awk '{s+=$4} END{print s+0}')
		if ((rc != 0 && f == 0)); then f=1; fi
		passed=$((passed + p)); failed=$((failed + f))
		((rc != 0)) && failures+=("$t (exit $rc)")
	done
}

if [[ -n ${TESTS:-} ]]; then
	for t in $TESTS; do
		[[ -f tests/unit/$t.c || -f tests/integration/$t.c || -f tests/http/$t.c || -f tests/ha/$t.c ]] && continue
		echo "=== $t: no such test program (tests/unit, tests/integration, tests/http, tests/ha)"
		failed=$((failed + 1)); failures+=("$t (no source)")
	done
fi

if [[ $what == all || $what == unit ]]; then
	mapfile -t progs < <(expected unit)
	run_suite "${progs[@]}"
fi

if [[ $what == all || $what == integration || $what == ha ]]; then
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
		status=$("$BUILD/gpuledger" --config "$T/config.yaml" db status)
		sock=$(sed -n 's/.*socket \([^)]*\)).*/\1/p' <<<"$status")
		pass=$(sed -n 's/^passfile \([^ ]*\) .*/\1/p' <<<"$status")
		export GL_TEST_BIN=$PWD/$BUILD/gpuledger
		[[ -n $VG ]] && GL_TEST_BIN=$PWD/tests/tools/valgrind-bin.sh
		export GL_TEST_ADMIN_DSN="host=$sock port=5432 dbname=postgres user=postgres passfile=$pass"
		export GL_TEST_APP_DSN="host=$sock port=5432 user=gpuledger passfile=$pass"
		export GL_TEST_OWNER_DSN="host=$sock port=5432 user=gpuledger_owner passfile=$pass"
		export GL_TEST_TMP=$T
		if [[ $what == ha ]]; then
			# the HA programs of tests/http by their sources: a glob of the
			# build directory would also take the compiler's .d files
			mapfile -t progs < <(expected http ha | grep -E '/(ha/|http/test_ha_)')
		else
			mapfile -t progs < <(expected integration http)
		fi
		run_suite "${progs[@]}"
		for w in tests/web/run.sh; do
			[[ $what == ha ]] && continue
			[[ -x $w && -z $VG && ( -z ${TESTS:-} || -n ${WEB_TESTS:-} ) ]] || continue
			echo "=== $w"
			t0=$EPOCHREALTIME
			out=$("$w" 2>&1); rc=$?
			printf '%s\n' "$out"
			timed "$w" "$t0"
			p=$(grep -cE '^ok ' <<<"$out"); f=$(grep -cE '^not ok ' <<<"$out")
			((rc != 0 && f == 0)) && f=1
			passed=$((passed + p)); failed=$((failed + f))
			((rc != 0)) && failures+=("$w (exit $rc)")
		done
	fi
fi

if [[ -n $VG ]]; then
	nlogs=0; nbad=0; nkilled=0
	for l in "$VG_DIR"/*; do
		[[ -s $l ]] || continue # a forked child that exec'd (--child-silent-after-fork)
		nlogs=$((nlogs + 1))
		cmd=$(sed -n 's/^==[0-9]*== Command: //p' "$l" | head -1)
		if ! grep -q 'ERROR SUMMARY:' "$l"; then
			nkilled=$((nkilled + 1)) # killed before its exit check (SIGKILL): nothing to judge
		elif ! grep -q 'ERROR SUMMARY: 0 errors' "$l"; then
			nbad=$((nbad + 1)); failed=$((failed + 1)); failures+=("valgrind: $l: ${cmd:0:160}")
		fi
	done
	echo "valgrind: $nlogs processes, $nbad with errors, $nkilled without an exit check (killed); logs in $VG_DIR"
fi

echo
if ((${#timings[@]})); then
	echo "slowest programs (wall s):"
	printf '%s\n' "${timings[@]}" | sort -rn | head -8 | awk '{printf "  %7.1f  %s\n", $1 / 1000, $2}'
fi
if ((${#failures[@]})); then
	echo "failed suites:"; printf '  %s\n' "${failures[@]}"
fi
echo "total: $passed passed, $failed failed"
((failed == 0 && ${#failures[@]} == 0))
