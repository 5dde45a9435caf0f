/* `make run` builds in parallel (issue 28: its build was serial, the longest
 * part of a cold start): the recursive make it runs, as `make -n run` prints
 * it, asks for -j with the machine's core count, and builds the simulator
 * the demo starts beside the daemon. Run from the repo root, with the build
 * directory tests/run.sh exports in $BUILD (make's own BUILD follows it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_run_builds_in_parallel(void **state)
{
	const char *build = getenv("BUILD") && *getenv("BUILD") ? getenv("BUILD") : "build";
	FILE *p = popen("make -n --no-print-directory run SIM=0 2>&1", "r");
	char line[4096], bin[512];
	int found = 0;
	(void)state;
	snprintf(bin, sizeof bin, "%s/gpuledger ", build);
	assert_non_null(p);
	while (fgets(line, sizeof line, p))
		if (strstr(line, "make") && strstr(line, bin) && strstr(line, "gpuledger-sim")) {
			assert_non_null(strstr(line, " -j$(nproc) "));
			found = 1;
		}
	assert_int_equal(pclose(p), 0);
	assert_true(found);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_run_builds_in_parallel)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
