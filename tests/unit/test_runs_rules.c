/* The runs' grouping rules (domain/runs): a Slurm job's attempts and het
 * components stay one run whatever the rules, each rule kind's key,
 * priority order, effective dating at the first attempt, the training
 * operators' labels before the pod's controller, and the sums of a run
 * (failed attempts, attempts with het components counted once, state).
 * The jobs are hand-written rows as the store hands them in. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/runs.h"

#include <stdlib.h>
#include <string.h>

#define T0 1795000000LL /* 2026-11-18T... */
#define NL 12

static const char *labels[NL][NL];

static struct gl_runs_job job(int64_t pk, const char *job_id, int64_t submit, int64_t start, int64_t end,
			      const char *state)
{
	struct gl_runs_job j;
	memset(&j, 0, sizeof j);
	j.job_pk = pk;
	j.cluster = "c1";
	j.job_id = job_id;
	j.state = state;
	j.array_job_id = j.het_job_id = j.het_offset = -1;
	j.submit_s = submit;
	j.start_s = start;
	j.end_s = end;
	j.queue_wait_s = start == GL_TIME_NONE || submit == GL_TIME_NONE ? -1 : start - submit;
	j.user_name = "alice";
	j.name = "train";
	return j;
}

static struct gl_runs_rule rule(const char *by)
{
	struct gl_runs_rule r = {"", GL_RUNS_BY_ARRAY, NULL, GL_TIME_NONE, GL_TIME_NONE};
	assert_int_equal(gl_runs_by_parse(by, &r.by, &r.label), 0);
	return r;
}

static const char *key_of(const struct gl_runs_job *j, const struct gl_runs_rule *r, size_t n)
{
	static char buf[256];
	const char *kind;
	gl_runs_key(j, r, n, buf, sizeof buf, &kind);
	return buf;
}

static void test_by_names(void **state)
{
	enum gl_runs_by by;
	const char *label;
	assert_int_equal(gl_runs_by_parse("label:team", &by, &label), 0);
	assert_int_equal(by, GL_RUNS_BY_LABEL);
	assert_string_equal(label, "team");
	assert_int_equal(gl_runs_by_parse("label:", &by, &label), -GL_EINVAL);
	assert_int_equal(gl_runs_by_parse("Array", &by, &label), -GL_EINVAL);
	assert_int_equal(gl_runs_by_parse("", &by, &label), -GL_EINVAL);
	assert_int_equal(gl_runs_by_parse(NULL, &by, &label), -GL_EINVAL);
}

/* Each rule's key, and a job without the rule's field falling through. */
static void test_rule_keys(void **state)
{
	struct gl_runs_rule r[] = {rule("array"), rule("tag"), rule("wckey"), rule("name_user")};
	struct gl_runs_job j = job(1, "7_3", T0, T0 + 5, T0 + 50, "COMPLETED");
	j.array_job_id = 7;
	assert_string_equal(key_of(&j, r, 4), "c1/array/7");
	j.array_job_id = -1;
	/* run= at the start, after a non-word character, never inside a word */
	j.name = "bert run=exp42,lr=3";
	assert_string_equal(key_of(&j, r, 4), "c1/tag/exp42");
	j.name = "xrun=no";
	j.comment = "ckpt;run=from-comment";
	assert_string_equal(key_of(&j, r, 4), "c1/tag/from-comment");
	j.comment = "my_run=no";
	j.wckey = "proj-a";
	assert_string_equal(key_of(&j, r, 4), "c1/wckey/proj-a");
	j.wckey = "";
	assert_string_equal(key_of(&j, r, 4), "c1/name_user/alice/xrun=no");
	/* no rule: the Slurm job id; het components: the leader's */
	assert_string_equal(key_of(&j, r, 0), "c1/job/7_3");
	j.het_job_id = 14;
	assert_string_equal(key_of(&j, r, 0), "c1/job/14");
}

/* Kubernetes: the training operator's label first, then the controller. */
static void test_kube_owner(void **state)
{
	struct gl_runs_rule r[] = {rule("kube_owner"), rule("label:team")};
	const char **keys;
	size_t nk;
	struct gl_runs_job j = job(1, "torch-a-worker-0", T0, T0, GL_TIME_NONE, "RUNNING");
	gl_runs_label_keys(r, 2, &keys, &nk);
	assert_int_equal(nk, 9);
	assert_string_equal(keys[0], "training.kubeflow.org/job-name");
	assert_string_equal(keys[8], "team");
	j.namespace_ = "ml";
	j.labels = labels[0];
	j.owner_kind = "PyTorchJob";
	j.owner_name = "torch-a";
	assert_string_equal(key_of(&j, r, 2), "c1/owner/ml/PyTorchJob/torch-a");
	labels[0][0] = "torch-a";
	assert_string_equal(key_of(&j, r, 2), "c1/kubeflow/ml/torch-a");
	/* a JobSet's pod is owned by a Job: the JobSet is the run */
	j.labels = labels[1];
	j.owner_kind = "Job";
	j.owner_name = "set-a-workers-0";
	labels[1][1] = "set-a";
	assert_string_equal(key_of(&j, r, 2), "c1/jobset/ml/set-a");
	/* a pod with no owner and no operator label: the label rule, else itself */
	j.labels = labels[2];
	j.owner_kind = j.owner_name = NULL;
	labels[2][8] = "vision";
	assert_string_equal(key_of(&j, r, 2), "c1/label/ml/team/vision");
	labels[2][8] = NULL;
	j.job_key = "5f0c7c4e-uid";
	assert_string_equal(key_of(&j, r, 2), "c1/pod/ml/torch-a-worker-0/5f0c7c4e-uid");
	free(keys);
}

/* Rules apply in their period by the first attempt's submit time: a
 * requeued job whose second attempt falls after the rule ends stays whole. */
static void test_dated_rules_and_attempts(void **state)
{
	struct gl_runs_rule r[] = {rule("name_user")};
	struct gl_runs_job j[3];
	struct gl_runs out;
	r[0].to_s = T0 + 100;
	j[0] = job(1, "5", T0, T0 + 1, T0 + 27, "REQUEUED");
	j[1] = job(2, "5", T0 + 150, T0 + 271, T0 + 311, "COMPLETED");
	j[2] = job(3, "6", T0 + 200, T0 + 201, T0 + 211, "FAILED");
	for (int i = 0; i < 3; i++) {
		j[i].gpu_s = j[i].end_s - j[i].start_s;
		j[i].cost_micros = 1000 * j[i].gpu_s;
	}
	gl_runs_group(j, 3, r, 1, &out);
	assert_int_equal(out.n, 2);
	/* newest first: job 6 alone (the rule had ended when it was submitted) */
	assert_string_equal(out.runs[0].key, "c1/job/6");
	assert_string_equal(out.runs[0].state, "FAILED");
	assert_int_equal(out.runs[0].failed_cost_micros, 10000);
	assert_string_equal(out.runs[1].key, "c1/name_user/alice/train");
	assert_int_equal(out.runs[1].attempts, 2);
	assert_int_equal(out.runs[1].jobs, 1);
	assert_int_equal(out.runs[1].gpu_s, 66);
	assert_int_equal(out.runs[1].cost_micros, 66000);
	assert_int_equal(out.runs[1].failed_cost_micros, 26000);
	assert_int_equal(out.runs[1].queue_s, 1 + 121);
	assert_int_equal(out.runs[1].first_submit_s, T0);
	assert_int_equal(out.runs[1].last_end_s, T0 + 311);
	assert_string_equal(out.runs[1].state, "COMPLETED");
	assert_int_equal(strlen(out.runs[1].id), 16);
	gl_runs_fini(&out);
}

/* Het components are one attempt; a running member makes the run RUNNING
 * with no last end; CANCELLED is not a failed attempt (the report's rule). */
static void test_het_and_state(void **state)
{
	struct gl_runs_job j[3];
	struct gl_runs out;
	j[0] = job(1, "14+0", T0, T0 + 2, T0 + 12, "COMPLETED");
	j[1] = job(2, "14+1", T0, T0 + 2, T0 + 12, "COMPLETED");
	j[0].het_job_id = j[1].het_job_id = 14;
	j[0].het_offset = 0;
	j[1].het_offset = 1;
	j[2] = job(3, "14+0", T0 + 20, T0 + 22, GL_TIME_NONE, "RUNNING");
	j[2].het_job_id = 14;
	j[2].het_offset = 0;
	gl_runs_group(j, 3, NULL, 0, &out);
	assert_int_equal(out.n, 1);
	assert_int_equal(out.runs[0].attempts, 2);
	assert_int_equal(out.runs[0].jobs, 1);
	assert_string_equal(out.runs[0].state, "RUNNING");
	assert_int_equal(out.runs[0].last_end_s, GL_TIME_NONE);
	gl_runs_fini(&out);
	assert_true(gl_runs_attempt_failed("TIMEOUT"));
	assert_true(gl_runs_attempt_failed("preempted"));
	assert_true(gl_runs_attempt_failed("REQUEUED"));
	assert_false(gl_runs_attempt_failed("CANCELLED by 2003"));
	assert_false(gl_runs_attempt_failed("COMPLETED"));
	assert_false(gl_runs_attempt_failed(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_by_names),	 cmocka_unit_test(test_rule_keys),
		cmocka_unit_test(test_kube_owner),	 cmocka_unit_test(test_dated_rules_and_attempts),
		cmocka_unit_test(test_het_and_state),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
