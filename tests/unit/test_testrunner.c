/* tests/run.sh takes the programs a suite must run from the sources
 * (issue 25): a test whose program did not build used to be skipped
 * without a word (`[[ -x $t ]] || continue`), and the suite passed. Here
 * the real script runs against a build directory of its own: a program
 * missing from it is a failure, a TESTS name no source has is one too,
 * and the same program present passes. Run from the repo root. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char g_dir[64];

/* tests/run.sh unit with BUILD=g_dir and TESTS=tests; its output into out,
 * its exit status returned */
static int run_unit(const char *tests, char *out, size_t n)
{
	char cmd[512];
	size_t k = 0;
	FILE *p;
	int st;
	snprintf(cmd, sizeof cmd, "env -u VALGRIND BUILD='%s' TESTS='%s' tests/run.sh unit 2>&1", g_dir, tests);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (k + 1 < n && fgets(out + k, (int)(n - k), p))
		k += strlen(out + k);
	while (fgetc(p) != EOF)
		;
	st = pclose(p);
	/* indented, so the suite around this one does not count its lines */
	for (const char *l = out; *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] != '\0'))
		fprintf(stderr, "  | %.*s\n", (int)strcspn(l, "\n"), l);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static int setup(void **state)
{
	char sub[128];
	snprintf(g_dir, sizeof g_dir, "/tmp/gltest-runner-XXXXXX");
	if (!mkdtemp(g_dir))
		return -1;
	snprintf(sub, sizeof sub, "%s/tests", g_dir);
	if (mkdir(sub, 0755))
		return -1;
	snprintf(sub, sizeof sub, "%s/tests/unit", g_dir);
	return mkdir(sub, 0755);
}

static int teardown(void **state)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_missing_program_fails_the_suite(void **state)
{
	char out[8192];
	assert_int_not_equal(run_unit("test_util", out, sizeof out), 0);
	assert_non_null(strstr(out, "tests/unit/test_util: missing"));
	assert_non_null(strstr(out, "1 failed"));
}

static void test_unknown_name_in_tests_fails(void **state)
{
	char out[8192];
	assert_int_not_equal(run_unit("test_no_such_program", out, sizeof out), 0);
	assert_non_null(strstr(out, "test_no_such_program: no such test program"));
}

/* the control: the same program present, the suite passes */
static void test_present_program_runs(void **state)
{
	char out[65536], link[PATH_MAX], target[PATH_MAX], cwd[PATH_MAX];
	const char *build = getenv("BUILD") && *getenv("BUILD") ? getenv("BUILD") : "build";
	assert_non_null(getcwd(cwd, sizeof cwd));
	snprintf(target, sizeof target, "%s%s%s/tests/unit/test_util", build[0] == '/' ? "" : cwd,
		 build[0] == '/' ? "" : "/", build);
	snprintf(link, sizeof link, "%s/tests/unit/test_util", g_dir);
	assert_int_equal(symlink(target, link), 0);
	assert_int_equal(run_unit("test_util", out, sizeof out), 0);
	assert_null(strstr(out, "missing"));
	assert_non_null(strstr(out, " passed, 0 failed"));
	assert_int_equal(unlink(link), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_missing_program_fails_the_suite),
		cmocka_unit_test(test_unknown_name_in_tests_fails),
		cmocka_unit_test(test_present_program_runs),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
