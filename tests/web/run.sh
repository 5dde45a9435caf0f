#!/usr/bin/env bash
# The browser tests: every tests/web/*.test.mjs under node, each printing TAP
# (ok / not ok lines) that tests/run.sh counts. Needs the GL_TEST_*
# variables tests/run.sh exports (a throwaway PostgreSQL), Debian's chromium
# and node/npm (scripts/deps.sh installs them); installs the pinned
# playwright-core and axe-core with `npm ci` when they are missing.
set -uo pipefail
cd "$(dirname "$0")"
status=0
if ! command -v node >/dev/null || ! command -v npm >/dev/null || [[ ! -x ${GL_TEST_CHROMIUM:-/usr/bin/chromium} ]]; then
	echo "not ok 1 - web tests need node, npm and chromium (run scripts/deps.sh)"
	exit 1
fi
if [[ ! -f node_modules/.package-lock.json ]] || [[ package-lock.json -nt node_modules/.package-lock.json ]]; then
	if ! npm ci --ignore-scripts --no-audit --no-fund >npm-ci.log 2>&1; then
		echo "not ok 1 - npm ci in tests/web (see tests/web/npm-ci.log)"
		exit 1
	fi
fi
# WEB_TESTS="demo-sim inventory": only those files (with TESTS naming the C programs to run beside them)
for t in *.test.mjs; do
	[[ -f $t ]] || continue
	[[ -z ${WEB_TESTS:-} || " $WEB_TESTS " == *" ${t%.test.mjs} "* ]] || continue
	echo "# $t"
	timeout 300 node "$t" || status=1
done
exit $status
