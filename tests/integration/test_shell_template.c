/* A command template that wraps a shell around a placeholder (issue 24:
 * `warn_command: /bin/sh -c "echo idle {job_name} >> ..."` passed
 * check-config, and a job named `x; touch f`, `$(touch f)` or with
 * backticks then ran its name) is refused by check-config, `hook idle` and
 * `serve` alike, naming file:line and the safe form; `allow_shell: true`
 * lets it through with a warning at every start. The real binary. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/common.h"
#include "lib/testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char g_dsn[512], g_dir[256], g_cfg[300];

static const char policy[] = "hook:\n  policies:\n    - name: idle2h\n      scope:\n        clusters: c1\n"
			     "      rule:\n        kind: fixed\n        t1_min: 60\n        t3_min: 120\n"
			     "      warn_command: /bin/sh -c \"echo idle {job_name} >> %s/idle.log\"\n%s";

static void write_cfg(const char *extra)
{
	FILE *f = fopen(g_cfg, "w");
	assert_non_null(f);
	fprintf(f, policy, g_dir, extra);
	fclose(f);
}

static void test_refused_everywhere(void **state)
{
	static const char *const cmds[][4] = {
		{"check-config", NULL},
		{"hook", "idle", "--dry-run", NULL},
		{"serve", "--listen", "127.0.0.1:0", NULL},
	};
	(void)state;
	write_cfg("");
	for (size_t i = 0; i < GL_ARRAY_LEN(cmds); i++) {
		struct gl_test_out o;
		assert_int_equal(gl_test_run(g_dsn, NULL, &o, "--config", g_cfg, cmds[i][0], cmds[i][1], cmds[i][2],
					     cmds[i][3]),
				 0);
		if (o.status == 0 || !strstr(o.err, "config.yaml:10: hook.policies[0].warn_command: runs sh with the"
						    " placeholder {job_name}") ||
		    !strstr(o.err, "sh -c '... \"$1\"' sh {job_name}") ||
		    !strstr(o.err, "hook.policies[0].allow_shell: true"))
			fail_msg("%s: exit %d, stderr: %s", cmds[i][0], o.status, o.err);
		gl_test_out_fini(&o);
	}
	/* nothing was run or recorded */
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM hook_actions"), 0);
	{
		char p[300];
		snprintf(p, sizeof p, "%s/idle.log", g_dir);
		assert_int_equal(access(p, F_OK), -1);
	}
}

static void test_allowed_with_warning(void **state)
{
	struct gl_test_out o;
	(void)state;
	write_cfg("      allow_shell: true\n");
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "--config", g_cfg, "check-config", NULL), 0);
	assert_int_equal(o.status, 0);
	assert_non_null(strstr(o.err, "WARN"));
	assert_non_null(strstr(o.err, "hook.policies[0].warn_command runs sh with the placeholder {job_name}"));
	assert_non_null(strstr(o.err, "allowed by hook.policies[0].allow_shell: true"));
	gl_test_out_fini(&o);
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "--config", g_cfg, "hook", "idle", "--dry-run", NULL), 0);
	assert_true(o.status == 0 || o.status == 3);
	assert_non_null(strstr(o.err, "allowed by hook.policies[0].allow_shell: true"));
	gl_test_out_fini(&o);
}

static int setup(void **state)
{
	snprintf(g_dir, sizeof g_dir, "/tmp/gltest-shelltmpl-XXXXXX");
	if (!mkdtemp(g_dir))
		return -1;
	snprintf(g_cfg, sizeof g_cfg, "%s/config.yaml", g_dir);
	return gl_test_db_fresh("gl_test_shell_template", g_dsn, sizeof g_dsn);
}

static int teardown(void **state)
{
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refused_everywhere),
		cmocka_unit_test(test_allowed_with_warning),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
