#!/bin/sh
# GL_TEST_BIN for the integration and http suites under valgrind memcheck
# (tests/run.sh does this with VALGRIND=1): execs the real binary under
# valgrind, one log per process in $GL_VG_LOGDIR/vg.<pid>. No
# --error-exitcode here: a test that checks the binary's exit status keeps
# seeing the binary's own; tests/run.sh reads the logs afterwards.
#   GL_VG_BIN     the binary (default: build/gpuledger of this tree)
#   GL_VG_LOGDIR  where the logs go (default: build/valgrind)
#   GL_VG_OPTS    more valgrind options, e.g. --show-leak-kinds=all
# Children the binary forks and execs (sacct, pg_ctl, hook commands) run
# without valgrind.
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=${GL_VG_BIN:-$root/${BUILD:-build}/gpuledger}
logdir=${GL_VG_LOGDIR:-$root/${BUILD:-build}/valgrind}
mkdir -p "$logdir"
exec valgrind --leak-check=full --show-leak-kinds=definite,indirect \
	--errors-for-leak-kinds=definite,indirect --track-origins=yes --num-callers=30 \
	--child-silent-after-fork=yes --suppressions="$here/valgrind.supp" \
	--log-file="$logdir/vg.%p" ${GL_VG_OPTS:-} "$bin" "$@"
