/* hook.policies[]: loading, rejection with file:line, scope, exclusions,
 * command templates (split once, placeholders never reach a shell). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/config.h"
#include "gl/hookpolicy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char good[] =
	"hook:\n"                                      /* 1 */
	"  act: true\n"                                /* 2 */
	"  max_data_age_s: 600\n"                      /* 3 */
	"  policies:\n"                                /* 4 */
	"    - name: jds\n"                            /* 5 */
	"      scope: {clusters: \"a, b\", partitions: gpu}\n"
	"      exclude: {users: root, qos: debug}\n"
	"      min_age_min: 30\n"
	"      rule: {kind: fixed, t1_min: 60, t2_min: 105, t3_min: 120}\n"
	"      warn_command: \"mail -s 'idle GPUs: {job_id}' {user}\"\n"
	"    - name: pruner\n"                         /* 11 */
	"      scope: {namespaces: ml, labels: \"app=nb\"}\n"
	"      signal: {power_busy_watts: 100, memory_counts_as_busy: true}\n"
	"      rule: {kind: sliding, t1_min: 20, t3_min: 30, gpu_fraction: \"0.5\"}\n"
	"      kube_command: kubectl scale --replicas=0 -n {namespace} deploy/{pod}\n";

static void test_load_good(void **s)
{
	struct gl_config c;
	struct gl_err e = {0};
	struct gl_hookpolicy *p;
	size_t n;
	(void)s;
	if (gl_config_load_buf(&c, "gl.yaml", good, strlen(good), &e))
		fail_msg("%s", e.msg);
	assert_int_equal(c.n_hook_policies, 2);
	assert_int_equal(c.hook_policies[0].line, 5);
	assert_int_equal(c.hook_policies[1].line, 11);
	assert_int_equal(gl_config_hookpolicies(&c, &p, &n, &e), 0);
	assert_int_equal(n, 2);
	assert_int_equal(p[0].rule.kind, GL_IDLERULE_FIXED);
	assert_int_equal(p[0].rule.t2_s, 105 * 60);
	assert_int_equal(p[0].rule.max_data_age_s, 600);
	assert_int_equal(p[0].clusters.n, 2);
	assert_string_equal(p[0].clusters.v[1], "b");
	assert_int_equal(p[0].warn_argv.n, 4);
	assert_string_equal(p[0].warn_argv.v[2], "idle GPUs: {job_id}");
	assert_string_equal(p[0].slurm_argv.v[0], "scancel"); /* hook.slurm_command */
	assert_true(p[1].rule.gpu_fraction == 0.5);
	assert_true(p[1].signal.power_busy_watts == 100);
	assert_string_equal(p[1].kube_argv.v[5], "deploy/{pod}");
	gl_hookpolicy_free(p, n);
	gl_config_fini(&c);
}

static void expect_bad(const char *policy_body, const char *want_line, const char *want_msg)
{
	char buf[2048];
	struct gl_config c;
	struct gl_err e = {0};
	snprintf(buf, sizeof buf, "hook:\n  policies:\n    - name: p1\n%s", policy_body);
	if (!gl_config_load_buf(&c, "gl.yaml", buf, strlen(buf), &e)) {
		gl_config_fini(&c);
		fail_msg("accepted: %s", policy_body);
	}
	if (!strstr(e.msg, want_line) || !strstr(e.msg, want_msg))
		fail_msg("message '%s' lacks '%s' / '%s'", e.msg, want_line, want_msg);
}

static void test_reject(void **s)
{
	(void)s;
	/* an inherited command's bad placeholder names the key it came from */
	{
		const char *y = "hook:\n  slurm_command: scancel {jobid}\n  policies:\n    - name: p1\n"
				"      scope: {clusters: a}\n      rule: {kind: fixed, t1_min: 1, t3_min: 2}\n";
		struct gl_config c;
		struct gl_err e = {0};
		assert_int_not_equal(gl_config_load_buf(&c, "gl.yaml", y, strlen(y), &e), 0);
		assert_non_null(strstr(e.msg, "slurm_command (hook.slurm_command): unknown placeholder {jobid}"));
	}
	/* unknown key, at its own line */
	expect_bad("      scope: {clusters: a}\n      rule: {kind: fixed, t1_min: 1, t3_min: 2}\n      frobnicate: 1\n",
		   "gl.yaml:6:", "unknown key 'frobnicate'");
	expect_bad("      scope: {clusters: a}\n      rule: {kind: fixed, t1_min: 1, t3_min: 2, t4_min: 3}\n", "gl.yaml:5:",
		   "rule.t4_min");
	/* T1 >= T3, at the policy's line */
	expect_bad("      scope: {clusters: a}\n      rule: {kind: fixed, t1_min: 120, t3_min: 60}\n", "gl.yaml:3:",
		   "t1_min (120) must be below t3_min (60)");
	expect_bad("      scope: {clusters: a}\n      rule: {kind: reset, t1_min: 10, t2_min: 40, t3_min: 30}\n",
		   "gl.yaml:3:", "t2_min");
	/* empty scope */
	expect_bad("      rule: {kind: fixed, t1_min: 1, t3_min: 2}\n", "gl.yaml:3:", "scope: empty");
	expect_bad("      scope: {clusters: \" , \"}\n      rule: {kind: fixed, t1_min: 1, t3_min: 2}\n", "gl.yaml:3:",
		   "scope: empty");
	expect_bad("      scope: {clusters: a}\n      rule: {kind: lazy, t1_min: 1, t3_min: 2}\n", "gl.yaml:3:",
		   "rule.kind");
	expect_bad("      scope: {clusters: a}\n      rule: {kind: fixed, t1_min: 1, t3_min: 2, gpu_fraction: \"1.5\"}\n",
		   "gl.yaml:3:", "gpu_fraction");
	expect_bad("      scope: {clusters: a}\n      rule: {kind: fixed, t1_min: 1, t3_min: 2}\n"
		   "      warn_command: mail {usr}\n",
		   "gl.yaml:3:", "unknown placeholder {usr}");
	expect_bad("      scope: {clusters: a}\n      rule: {kind: fixed, t1_min: 1, t3_min: 2}\n"
		   "      slurm_command: \"scancel '{job_id}\"\n",
		   "gl.yaml:3:", "unterminated");
	expect_bad("      scope: {clusters: a}\n      rule: {kind: fixed, t3_min: 2}\n", "gl.yaml:3:", "rule.t1_min: required");
	expect_bad("      scope: {clusters: a}\n      rule: {kind: fixed, t1_min: 1, t3_min: 2}\n"
		   "    - name: p1\n      scope: {clusters: a}\n      rule: {kind: fixed, t1_min: 1, t3_min: 2}\n",
		   "gl.yaml:6:", "used twice");
}

static void test_expand_no_shell(void **s)
{
	struct gl_hookpolicy_list t;
	struct gl_err e = {0};
	const struct gl_tmpl_var vars[] = {
		{"job_id", "x; rm -rf /"}, {"user", "$(id)"}, {"idle_minutes", "125"}};
	char **argv;
	(void)s;
	assert_int_equal(gl_hookpolicy_split("notify --job={job_id} \"to {user}\" {idle_minutes}min {nope} a\\ b", &t, &e),
			 0);
	assert_int_equal(t.n, 6);
	argv = gl_hookpolicy_expand(&t, vars, GL_ARRAY_LEN(vars));
	assert_string_equal(argv[0], "notify");
	assert_string_equal(argv[1], "--job=x; rm -rf /");
	assert_string_equal(argv[2], "to $(id)");
	assert_string_equal(argv[3], "125min");
	assert_string_equal(argv[4], "{nope}");
	assert_string_equal(argv[5], "a b");
	assert_null(argv[6]);
	gl_hookpolicy_argv_free(argv);
	gl_hookpolicy_list_fini(&t);
	assert_int_equal(gl_hookpolicy_split("  ", &t, &e), 0);
	assert_int_equal(t.n, 0);
	assert_int_equal(gl_hookpolicy_split("a ''", &t, &e), 0);
	assert_int_equal(t.n, 2);
	assert_string_equal(t.v[1], "");
	gl_hookpolicy_list_fini(&t);
}

/* Only a dash that job data puts at the start of an argument is flagged:
 * the template's own options, and dashes inside a word, are not. */
static void test_dash_from_data(void **s)
{
	struct gl_hookpolicy_list t;
	struct gl_err e = {0};
	const struct gl_tmpl_var bad[] = {{"job_name", "--output=/tmp/x"}, {"user", "-oProxyCommand=id"}};
	const struct gl_tmpl_var plain[] = {{"job_name", "nb-1"}, {"user", "alice"}};
	char **argv;
	(void)s;
	assert_int_equal(gl_hookpolicy_split("notify -s --to={user} x{job_name} {job_name} {user}", &t, &e), 0);
	argv = gl_hookpolicy_expand(&t, bad, GL_ARRAY_LEN(bad));
	assert_int_equal(gl_hookpolicy_dash_arg(&t, argv), 4);
	gl_hookpolicy_argv_free(argv);
	argv = gl_hookpolicy_expand(&t, plain, GL_ARRAY_LEN(plain));
	assert_int_equal(gl_hookpolicy_dash_arg(&t, argv), -1);
	gl_hookpolicy_argv_free(argv);
	gl_hookpolicy_list_fini(&t);
	assert_int_equal(gl_hookpolicy_split("scancel {user}", &t, &e), 0);
	argv = gl_hookpolicy_expand(&t, bad, GL_ARRAY_LEN(bad));
	assert_int_equal(gl_hookpolicy_dash_arg(&t, argv), 1);
	gl_hookpolicy_argv_free(argv);
	gl_hookpolicy_list_fini(&t);
}

static void test_scope_exclude(void **s)
{
	struct gl_config c;
	struct gl_err e = {0};
	struct gl_hookpolicy *p;
	size_t n;
	char why[128];
	const char *nb[] = {"app=nb", "gpuledger.io/keep=true"}, *nb2[] = {"app=nb"};
	struct gl_hookpolicy_job slurm = {"a", "slurm", "gpu", "normal", "phys", "alice", NULL, NULL, 0};
	struct gl_hookpolicy_job pod = {"k", "kubernetes", NULL, NULL, NULL, "bob", "ml", nb, 2};
	(void)s;
	assert_int_equal(gl_config_load_buf(&c, "gl.yaml", good, strlen(good), &e), 0);
	assert_int_equal(gl_config_hookpolicies(&c, &p, &n, &e), 0);
	assert_true(gl_hookpolicy_in_scope(&p[0], &slurm));
	assert_false(gl_hookpolicy_in_scope(&p[1], &slurm));
	assert_false(gl_hookpolicy_excluded(&p[0], &slurm, why, sizeof why));
	slurm.partition = "cpu";
	assert_false(gl_hookpolicy_in_scope(&p[0], &slurm));
	slurm.partition = "gpu";
	slurm.qos = "debug";
	assert_true(gl_hookpolicy_excluded(&p[0], &slurm, why, sizeof why));
	assert_string_equal(why, "exclude.qos: debug");
	assert_true(gl_hookpolicy_in_scope(&p[1], &pod));
	assert_true(gl_hookpolicy_excluded(&p[1], &pod, why, sizeof why));
	assert_string_equal(why, "exclude.label: gpuledger.io/keep=true");
	pod.labels = nb2;
	pod.nlabels = 1;
	assert_false(gl_hookpolicy_excluded(&p[1], &pod, why, sizeof why));
	pod.nlabels = 0;
	assert_false(gl_hookpolicy_in_scope(&p[1], &pod));
	gl_hookpolicy_free(p, n);
	gl_config_fini(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_load_good),
		cmocka_unit_test(test_reject),
		cmocka_unit_test(test_expand_no_shell),
		cmocka_unit_test(test_dash_from_data),
		cmocka_unit_test(test_scope_exclude),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
