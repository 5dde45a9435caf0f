/* Unit tests for src/sources/kube.c. Run from the repo root (fixtures are
 * found by relative path). The small PodLists below are HAND-WRITTEN for these
 * tests; the openb-at-*.json snapshots are derived from the Alibaba trace by
 * tests/tools/openb_to_podlist (see tests/fixtures/kube/README.md). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/kube.h"
#include "lib/testlib.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIXDIR "tests/fixtures/kube"
/* The real trace CSV the snapshots were derived from (tests/fixtures/kube/
 * README.md), after $GL_OPENB_CSV when that is set. */
static const char *const csv_paths[] = {
	FIXDIR "/openb_pod_list_default.csv",
};
/* Must match tests/tools/openb_to_podlist.c (the model is documented there). */
#define OPENB_EPOCH 1672531200LL
#define OPENB_LINGER_S 86400LL

/* ---- quantities ------------------------------------------------------ */

static void test_quantity(void **state)
{
	static const struct {
		const char *in;
		int rc;
		int64_t want;
	} cases[] = {
		{"1", 0, 1000},
		{"2", 0, 2000},
		{"500m", 0, 500},
		{"0.5", 0, 500},
		{"0.460", 0, 460},
		{".5", 0, 500},
		{"1.", 0, 1000},
		{"+1", 0, 1000},
		{"1.5", 0, 1500},
		{"0", 0, 0},
		{"0m", 0, 0},
		{"000", 0, 0},
		{"1k", 0, 1000000},
		{"1Ki", 0, 1024000},
		{"0.5Ki", 0, 512000},
		{"1e3", 0, 1000000},
		{"1E3", 0, 1000000},
		{"1e-3", 0, 1},
		{"1e+2", 0, 100000},
		{"0.0001", 0, 1},        /* rounds up like MilliValue() */
		{"100u", 0, 1},
		{"1n", 0, 1},
		{"1500u", 0, 2},
		{"1.00000000000000000000001", 0, 1001}, /* beyond 19 digits still rounds up */
		{"99999999999999999999999", -GL_ERANGE, 0},
		{"9223372036854775807m", 0, INT64_MAX},
		{"9223372036854775", 0, 9223372036854775000},
		{"9223372036854775808m", -GL_ERANGE, 0},
		{"1E", -GL_ERANGE, 0},   /* 1 exa = 1e21 milli */
		{"1e100", -GL_ERANGE, 0},
		{"1e-100", 0, 1},
		{"", -GL_EINVAL, 0},
		{".", -GL_EINVAL, 0},
		{"-1", -GL_EINVAL, 0},
		{"abc", -GL_EINVAL, 0},
		{"1x", -GL_EINVAL, 0},
		{"1e", -GL_EINVAL, 0},
		{"1e+", -GL_EINVAL, 0},
		{"1 ", -GL_EINVAL, 0},
		{"1KI", -GL_EINVAL, 0},
		{"1..5", -GL_EINVAL, 0},
	};
	(void)state;
	for (size_t i = 0; i < GL_ARRAY_LEN(cases); i++) {
		int64_t got = -42;
		int rc = gl_kube_parse_quantity_milli(cases[i].in, strlen(cases[i].in), &got);
		if (rc != cases[i].rc || (rc == 0 && got != cases[i].want))
			fail_msg("quantity '%s': rc %d got %lld, want rc %d %lld", cases[i].in, rc,
				 (long long)got, cases[i].rc, (long long)cases[i].want);
	}
	/* length-bounded: no NUL needed */
	{
		int64_t got;
		assert_int_equal(gl_kube_parse_quantity_milli("250mXX", 4, &got), 0);
		assert_int_equal(got, 250);
	}
}

/* ---- RFC 3339 -------------------------------------------------------- */

static void test_rfc3339(void **state)
{
	static const struct {
		const char *in;
		int rc;
		int64_t want;
	} cases[] = {
		{"1970-01-01T00:00:00Z", 0, 0},
		{"1969-12-31T23:59:59Z", 0, -1},
		{"2026-10-01T12:00:00Z", 0, 1790856000},
		{"2026-10-01T12:00:00.999999999Z", 0, 1790856000},
		{"2026-10-01T14:00:00+02:00", 0, 1790856000},
		{"2026-10-01T07:30:00-04:30", 0, 1790856000},
		{"2026-10-01t12:00:00z", 0, 1790856000},
		{"2026-10-01 12:00:00Z", 0, 1790856000},
		{"2026-10-01T12:00:00.5+00:00", 0, 1790856000},
		{"2024-02-29T00:00:00Z", 0, 1709164800},
		{"2000-03-01T00:00:00Z", 0, 951868800},
		{"1900-01-01T00:00:00Z", 0, -2208988800LL},
		{"9999-12-31T23:59:59Z", 0, 253402300799LL},
		{"0000-01-01T00:00:00Z", 0, -62167219200LL},
		{"2016-12-31T23:59:60Z", 0, 1483228800}, /* leap second = next minute */
		{"2023-02-29T00:00:00Z", -GL_EINVAL, 0},
		{"1900-02-29T00:00:00Z", -GL_EINVAL, 0},
		{"2026-13-01T00:00:00Z", -GL_EINVAL, 0},
		{"2026-00-01T00:00:00Z", -GL_EINVAL, 0},
		{"2026-04-31T00:00:00Z", -GL_EINVAL, 0},
		{"2026-10-01T24:00:00Z", -GL_EINVAL, 0},
		{"2026-10-01T12:60:00Z", -GL_EINVAL, 0},
		{"2026-10-01T12:00:00", -GL_EINVAL, 0},
		{"2026-10-01T12:00:00.Z", -GL_EINVAL, 0},
		{"2026-10-01T12:00:00+0200", -GL_EINVAL, 0},
		{"2026-10-01T12:00:00+24:00", -GL_EINVAL, 0},
		{"2026-10-01T12:00:00ZZ", -GL_EINVAL, 0},
		{"2026-10-01X12:00:00Z", -GL_EINVAL, 0},
		{"2026-1-01T12:00:00Z", -GL_EINVAL, 0},
		{"+026-10-01T12:00:00Z", -GL_EINVAL, 0},
		{"", -GL_EINVAL, 0},
	};
	(void)state;
	for (size_t i = 0; i < GL_ARRAY_LEN(cases); i++) {
		int64_t got = -42;
		int rc = gl_kube_parse_rfc3339(cases[i].in, strlen(cases[i].in), &got);
		if (rc != cases[i].rc || (rc == 0 && got != cases[i].want))
			fail_msg("rfc3339 '%s': rc %d got %lld, want rc %d %lld", cases[i].in, rc,
				 (long long)got, cases[i].rc, (long long)cases[i].want);
	}
}

static void test_depth(void **state)
{
	static const struct {
		const char *in;
		int want;
	} cases[] = {
		{"", 0},
		{"1", 0},
		{"[]", 1},
		{"[[{}]]", 3},
		{"[\"[[[[\"]", 1},
		{"[\"\\\"[[[[\"]", 1},     /* escaped quote stays inside the string */
		{"[\"\\\\\",[[]]]", 3},     /* escaped backslash ends before the quote */
		{"]]]][", 1},
		{"[[[[[[", 5},             /* stops at max_depth + 1 */
	};
	(void)state;
	for (size_t i = 0; i < GL_ARRAY_LEN(cases); i++) {
		int got = gl_kube_json_depth(cases[i].in, strlen(cases[i].in), 4);
		if (got != cases[i].want)
			fail_msg("depth '%s': got %d want %d", cases[i].in, got, cases[i].want);
	}
}

/* ---- hand-written PodLists ------------------------------------------- */

static int parse_str(const char *doc, const struct gl_kube_opts *opts, struct gl_kube_result *res,
		     struct gl_err *err)
{
	return gl_kube_parse(doc, strlen(doc), opts, res, err);
}

static const struct gl_kube_pod *find_pod(const struct gl_kube_result *r, const char *uid)
{
	for (size_t i = 0; i < r->npods; i++)
		if (!strcmp(r->pods[i].uid, uid))
			return &r->pods[i];
	return NULL;
}

#define META(uid) "\"metadata\":{\"uid\":\"" uid "\",\"name\":\"" uid "\",\"creationTimestamp\":\"2026-10-01T12:00:00Z\""
#define CTR(res) "{\"name\":\"c\",\"resources\":" res "}"

/* HAND-WRITTEN: GPU accounting rules, one pod per rule. */
static void test_gpu_rules(void **state)
{
	static const struct {
		const char *pod;   /* one item */
		int64_t milli;     /* 0 = skipped as no-GPU */
		const char *type;
	} cases[] = {
		{"{" META("whole") "},\"spec\":{\"containers\":[" CTR("{\"limits\":{\"nvidia.com/gpu\":\"2\"}}") "," CTR("{\"limits\":{\"nvidia.com/gpu\":1}}") "]}}", 3000, ""},
		{"{" META("mig") "},\"spec\":{\"containers\":[" CTR("{\"limits\":{\"nvidia.com/mig-1g.10gb\":\"1\"}}") "," CTR("{\"limits\":{\"nvidia.com/mig-1g.10gb\":\"1\"}}") "]}}", 2000, "1g.10gb"},
		{"{" META("mig-mixed") "},\"spec\":{\"containers\":[" CTR("{\"limits\":{\"nvidia.com/mig-1g.10gb\":\"1\",\"nvidia.com/mig-3g.40gb\":\"1\"}}") "]}}", 2000, ""},
		{"{" META("mig-and-whole") "},\"spec\":{\"containers\":[" CTR("{\"limits\":{\"nvidia.com/mig-1g.10gb\":\"1\",\"nvidia.com/gpu\":\"1\"}}") "]}}", 2000, ""},
		{"{" META("milli-qty") "},\"spec\":{\"containers\":[" CTR("{\"limits\":{\"nvidia.com/gpu\":\"500m\"}}") "]}}", 500, ""},
		{"{" META("decimal-qty") "},\"spec\":{\"containers\":[" CTR("{\"limits\":{\"nvidia.com/gpu\":\"0.25\"}}") "]}}", 250, ""},
		{"{" META("requests-only") "},\"spec\":{\"containers\":[" CTR("{\"limits\":{\"cpu\":\"1\"},\"requests\":{\"nvidia.com/gpu\":\"1\"}}") "]}}", 1000, ""},
		{"{" META("limits-win") "},\"spec\":{\"containers\":[" CTR("{\"limits\":{\"nvidia.com/gpu\":\"2\"},\"requests\":{\"nvidia.com/gpu\":\"1\"}}") "]}}", 2000, ""},
		{"{" META("ali-annot") ",\"annotations\":{\"alibabacloud.com/gpu-milli\":\"460\",\"alibabacloud.com/gpu-count\":\"1\"}},\"spec\":{\"containers\":[" CTR("{}") "]}}", 460, ""},
		{"{" META("ali-annot-2") ",\"annotations\":{\"alibabacloud.com/gpu-milli\":\"1000\",\"alibabacloud.com/gpu-count\":\"4\"}},\"spec\":{\"containers\":[" CTR("{}") "]}}", 4000, ""},
		{"{" META("share-x-gpus") ",\"annotations\":{\"gpu-milli\":\"250\"}},\"spec\":{\"containers\":[" CTR("{\"limits\":{\"nvidia.com/gpu\":\"2\"}}") "]}}", 500, ""},
		{"{" META("share-label") ",\"labels\":{\"gpu_milli\":\"300\"}},\"spec\":{\"containers\":[" CTR("{}") "]}}", 300, ""},
		{"{" META("hami-cores") "},\"spec\":{\"containers\":[" CTR("{\"limits\":{\"nvidia.com/gpu\":\"1\",\"nvidia.com/gpucores\":\"30\",\"nvidia.com/gpumem\":\"3000\"}}") "]}}", 300, ""},
		{"{" META("init-max") "},\"spec\":{\"initContainers\":[" CTR("{\"limits\":{\"nvidia.com/gpu\":\"4\"}}") "],\"containers\":[" CTR("{\"limits\":{\"nvidia.com/gpu\":\"1\"}}") "," CTR("{\"limits\":{\"nvidia.com/gpu\":\"1\"}}") "]}}", 4000, ""},
		{"{" META("init-small") "},\"spec\":{\"initContainers\":[" CTR("{\"limits\":{\"nvidia.com/gpu\":\"1\"}}") "],\"containers\":[" CTR("{\"limits\":{\"nvidia.com/gpu\":\"2\"}}") "," CTR("{\"limits\":{\"nvidia.com/gpu\":\"1\"}}") "]}}", 3000, ""},
		/* sidecar 1 runs through: max(1 + app 1, 1 + regular init 2) = 3 */
		{"{" META("sidecar") "},\"spec\":{\"initContainers\":[{\"name\":\"s\",\"restartPolicy\":\"Always\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}},{\"name\":\"i\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"2\"}}}],\"containers\":[" CTR("{\"limits\":{\"nvidia.com/gpu\":\"1\"}}") "]}}", 3000, ""},
		{"{" META("cpu-only") "},\"spec\":{\"containers\":[" CTR("{\"limits\":{\"cpu\":\"4\",\"memory\":\"1Gi\"}}") "]}}", 0, ""},
		{"{" META("no-spec") "}}", 0, ""},
		{"{" META("zero-gpu") "},\"spec\":{\"containers\":[" CTR("{\"limits\":{\"nvidia.com/gpu\":\"0\"}}") "]}}", 0, ""},
		{"{" META("amd") "},\"spec\":{\"containers\":[" CTR("{\"limits\":{\"amd.com/gpu\":\"1\"}}") "]}}", 1000, ""},
	};
	(void)state;
	for (size_t i = 0; i < GL_ARRAY_LEN(cases); i++) {
		struct gl_kube_result r;
		struct gl_err err = {0};
		char doc[2048];
		int rc;

		snprintf(doc, sizeof doc, "{\"kind\":\"PodList\",\"items\":[%s]}", cases[i].pod);
		rc = parse_str(doc, NULL, &r, &err);
		if (rc != 0)
			fail_msg("case %zu: rc %d: %s", i, rc, err.msg);
		if (r.nproblems)
			fail_msg("case %zu: problem %s", i, r.problems[0]);
		if (cases[i].milli == 0) {
			assert_int_equal(r.npods, 0);
			assert_int_equal(r.skipped_no_gpu, 1);
		} else {
			if (r.npods != 1 || r.pods[0].gpu.gpu_micro != cases[i].milli * 1000 ||
			    strcmp(r.pods[0].gpu_type, cases[i].type))
				fail_msg("case %zu (%s): got %zu pods, %lld milli, type '%s'", i,
					 r.npods ? r.pods[0].uid : "-",
					 r.npods, r.npods ? (long long)r.pods[0].gpu.gpu_micro / 1000 : 0LL,
					 r.npods ? r.pods[0].gpu_type : "");
		}
		gl_kube_result_fini(&r);
	}
}

/* HAND-WRITTEN: a realistic pod (kubectl shape), every mapped field. */
static const char full_doc[] =
	"{\"apiVersion\":\"v1\",\"kind\":\"List\",\"metadata\":{\"resourceVersion\":\"\"},\"items\":[\n"
	"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"train-7f9c-x2\",\"namespace\":\"ml-research\","
	"\"uid\":\"5c1b9e4a-2f3d-4b8e-9a6c-0d1e2f3a4b5c\",\"creationTimestamp\":\"2026-10-01T11:58:00Z\","
	"\"labels\":{\"team\":\"vision\",\"project\":\"detector \\\"v2\\\"\",\"cost-center\":\"cc-42\",\"qos\":\"LS\"},"
	"\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"Thing\",\"name\":\"not-me\"},"
	"{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"name\":\"train-7f9c\",\"uid\":\"u\",\"controller\":true,\"blockOwnerDeletion\":true}]},"
	"\"spec\":{\"nodeName\":\"gpu-node-07\",\"containers\":["
	"{\"name\":\"main\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"4\"}}},"
	"{\"name\":\"logger\",\"resources\":{}}]},"
	"\"status\":{\"phase\":\"Succeeded\",\"conditions\":["
	"{\"type\":\"Initialized\",\"status\":\"True\",\"lastTransitionTime\":\"2026-10-01T11:59:00Z\"},"
	"{\"type\":\"PodScheduled\",\"status\":\"True\",\"lastTransitionTime\":\"2026-10-01T11:58:30Z\"}],"
	"\"containerStatuses\":["
	"{\"name\":\"main\",\"state\":{\"terminated\":{\"exitCode\":0,\"finishedAt\":\"2026-10-01T13:00:00.123456Z\"}}},"
	"{\"name\":\"logger\",\"state\":{\"terminated\":{\"exitCode\":0,\"finishedAt\":\"2026-10-01T15:00:01+02:00\"}}}]}}\n"
	"]}";

static void test_full_pod(void **state)
{
	struct gl_kube_result r;
	struct gl_err err = {0};
	struct gl_jobrow row;
	const struct gl_kube_pod *p;

	(void)state;
	assert_int_equal(parse_str(full_doc, NULL, &r, &err), 0);
	assert_int_equal(r.nitems, 1);
	assert_int_equal(r.npods, 1);
	assert_int_equal(r.nproblems, 0);
	p = &r.pods[0];
	assert_string_equal(p->uid, "5c1b9e4a-2f3d-4b8e-9a6c-0d1e2f3a4b5c");
	assert_string_equal(p->name, "train-7f9c-x2");
	assert_string_equal(p->namespace_, "ml-research");
	assert_string_equal(p->node_name, "gpu-node-07");
	assert_string_equal(p->nodes_json, "[\"gpu-node-07\"]");
	assert_int_equal(p->phase, GL_KUBE_PHASE_SUCCEEDED);
	assert_string_equal(p->owner_kind, "Job");
	assert_string_equal(p->owner_name, "train-7f9c");
	assert_int_equal(p->submit_s, 1790855880);
	assert_int_equal(p->start_s, 1790855910); /* PodScheduled, no startTime */
	assert_int_equal(p->end_s, 1790859601);   /* max finishedAt, offsets applied */
	assert_int_equal(p->gpu.gpu_micro, 4000000);
	assert_string_equal(p->labels_json,
			    "{\"team\":\"vision\",\"project\":\"detector \\\"v2\\\"\",\"cost-center\":\"cc-42\",\"qos\":\"LS\"}");
	assert_string_equal(p->tags_json,
			    "{\"namespace\":\"ml-research\",\"owner_kind\":\"Job\",\"owner_name\":\"train-7f9c\","
			    "\"team\":\"vision\",\"project\":\"detector \\\"v2\\\"\",\"cost_center\":\"cc-42\","
			    "\"labels\":{\"team\":\"vision\",\"project\":\"detector \\\"v2\\\"\",\"cost-center\":\"cc-42\",\"qos\":\"LS\"}}");
	{
		/* the tags are valid JSON */
		cJSON *t = cJSON_Parse(p->tags_json);
		assert_non_null(t);
		assert_string_equal(cJSON_GetObjectItem(t, "project")->valuestring, "detector \"v2\"");
		cJSON_Delete(t);
	}

	gl_kube_pod_to_row(p, 1790870000, &row);
	assert_string_equal(row.job_key, p->uid);
	assert_string_equal(row.job_id, "train-7f9c-x2");
	assert_string_equal(row.namespace_, "ml-research");
	assert_null(row.account);
	assert_string_equal(row.state, "COMPLETED");
	assert_int_equal(row.state_known, 1);
	assert_int_equal(row.submit_s, 1790855880);
	assert_int_equal(row.start_s, 1790855910);
	assert_int_equal(row.end_s, 1790859601);
	assert_int_equal(row.elapsed_s, 1790859601 - 1790855910);
	assert_int_equal(row.gpu_micro, 4000000);
	assert_int_equal(row.req_gpu_micro, 4000000);
	assert_int_equal(row.phys_micro, 4000000);
	assert_string_equal(row.gpu_share, "whole");
	assert_null(row.gpu_uuids_json);
	assert_null(row.gpu_note);
	assert_null(row.gpu_type);
	assert_int_equal(row.nnodes, 1);
	assert_string_equal(row.node_list, "gpu-node-07");
	assert_string_equal(row.nodes_json, "[\"gpu-node-07\"]");
	assert_ptr_equal(row.tags_json, p->tags_json);
	assert_int_equal(row.last_seen_s, 1790870000);
	assert_int_equal(row.array_job_id, -1);
	assert_int_equal(row.uid, -1);
	gl_kube_result_fini(&r);

	/* custom label keys; "" switches one off */
	{
		struct gl_kube_opts o = {.team_label = "qos", .project_label = "", .cost_center_label = "nope"};
		assert_int_equal(parse_str(full_doc, &o, &r, &err), 0);
		cJSON *t = cJSON_Parse(r.pods[0].tags_json);
		assert_string_equal(cJSON_GetObjectItem(t, "team")->valuestring, "LS");
		assert_null(cJSON_GetObjectItem(t, "project"));
		assert_null(cJSON_GetObjectItem(t, "cost_center"));
		cJSON_Delete(t);
		gl_kube_result_fini(&r);
	}
}

/* HAND-WRITTEN: phase -> state, start/end rules, allocated vs requested. */
static void test_phases(void **state)
{
	static const struct {
		const char *status;
		const char *spec_extra;
		const char *state;
		int known;
		int64_t start, end, alloc;
	} cases[] = {
		{"{\"phase\":\"Pending\",\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"False\",\"lastTransitionTime\":\"2026-10-01T12:00:05Z\"}]}",
		 "", "PENDING", 1, GL_TIME_NONE, GL_TIME_NONE, 0},
		{"{\"phase\":\"Pending\",\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"True\",\"lastTransitionTime\":\"2026-10-01T12:00:05Z\"}]}",
		 "\"nodeName\":\"n1\",", "PENDING", 1, 1790856005, GL_TIME_NONE, 1000},
		{"{\"phase\":\"Running\",\"startTime\":\"2026-10-01T12:00:10Z\",\"containerStatuses\":[{\"state\":{\"running\":{}}}]}",
		 "\"nodeName\":\"n1\",", "RUNNING", 1, 1790856010, GL_TIME_NONE, 1000},
		/* all containers terminated while the phase still says Running (a
		 * crash loop under restartPolicy Always): it runs on, no end */
		{"{\"phase\":\"Running\",\"startTime\":\"2026-10-01T12:00:10Z\",\"containerStatuses\":[{\"state\":{\"terminated\":{\"finishedAt\":\"2026-10-01T12:10:00Z\"}}}]}",
		 "\"nodeName\":\"n1\",", "RUNNING", 1, 1790856010, GL_TIME_NONE, 1000},
		{"{\"phase\":\"Pending\",\"containerStatuses\":[{\"state\":{\"terminated\":{\"finishedAt\":\"2026-10-01T12:10:00Z\"}}}]}",
		 "\"nodeName\":\"n1\",", "PENDING", 1, GL_TIME_NONE, GL_TIME_NONE, 1000},
		{"{\"phase\":\"Failed\",\"startTime\":\"2026-10-01T12:00:10Z\",\"containerStatuses\":[{\"state\":{\"terminated\":{\"finishedAt\":\"2026-10-01T12:10:00Z\"}}},{\"state\":{\"waiting\":{}}}]}",
		 "\"nodeName\":\"n1\",", "FAILED", 1, 1790856010, 1790856600, 1000},
		/* evicted: no container states, ends at the last condition change */
		{"{\"phase\":\"Failed\",\"reason\":\"Evicted\",\"startTime\":\"2026-10-01T12:00:10Z\",\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"True\",\"lastTransitionTime\":\"2026-10-01T12:00:05Z\"},{\"type\":\"Ready\",\"status\":\"False\",\"lastTransitionTime\":\"2026-10-01T13:00:00Z\"}]}",
		 "\"nodeName\":\"n1\",", "FAILED", 1, 1790856010, 1790859600, 1000},
		{"{\"phase\":\"Succeeded\",\"startTime\":\"2026-10-01T12:00:10Z\"}", "\"nodeName\":\"n1\",", "COMPLETED", 1, 1790856010, GL_TIME_NONE, 1000},
		{"{\"phase\":\"Unknown\"}", "\"nodeName\":\"n1\",", "UNKNOWN", 0, GL_TIME_NONE, GL_TIME_NONE, 1000},
		{"{\"phase\":\"Weird\"}", "", "Weird", 0, GL_TIME_NONE, GL_TIME_NONE, 0},
		{"{}", "", "UNKNOWN", 0, GL_TIME_NONE, GL_TIME_NONE, 0},
	};
	(void)state;
	for (size_t i = 0; i < GL_ARRAY_LEN(cases); i++) {
		struct gl_kube_result r;
		struct gl_err err = {0};
		struct gl_jobrow row;
		char doc[2048];

		snprintf(doc, sizeof doc,
			 "{\"kind\":\"PodList\",\"items\":[{" META("p") "},\"spec\":{%s\"containers\":[" CTR("{\"limits\":{\"nvidia.com/gpu\":\"1\"}}") "]},\"status\":%s}]}",
			 cases[i].spec_extra, cases[i].status);
		if (parse_str(doc, NULL, &r, &err) != 0 || r.npods != 1)
			fail_msg("case %zu: %s", i, err.msg);
		gl_kube_pod_to_row(&r.pods[0], GL_TIME_NONE, &row);
		if (strcmp(row.state, cases[i].state) || row.state_known != cases[i].known ||
		    row.start_s != cases[i].start || row.end_s != cases[i].end ||
		    row.gpu_micro != cases[i].alloc * 1000 || row.req_gpu_micro != 1000000)
			fail_msg("case %zu: state %s/%d start %lld end %lld alloc %lld", i, row.state,
				 row.state_known, (long long)row.start_s, (long long)row.end_s,
				 (long long)row.gpu_micro);
		gl_kube_result_fini(&r);
	}
}

/* HAND-WRITTEN: bad pods are skipped with their JSON path, the rest kept. */
static void test_bad_pods(void **state)
{
	static const char doc[] =
		"{\"kind\":\"PodList\",\"items\":["
		"{" META("good1") "},\"spec\":{\"containers\":[" CTR("{\"limits\":{\"nvidia.com/gpu\":\"1\"}}") "]}},"
		"{\"metadata\":{\"name\":\"no-uid\",\"creationTimestamp\":\"2026-10-01T12:00:00Z\"},\"spec\":{\"containers\":[" CTR("{\"limits\":{\"nvidia.com/gpu\":\"1\"}}") "]}},"
		"{\"metadata\":{\"uid\":\"no-created\"},\"spec\":{\"containers\":[" CTR("{\"limits\":{\"nvidia.com/gpu\":\"1\"}}") "]}},"
		"{\"metadata\":{\"uid\":\"bad-created\",\"creationTimestamp\":\"yesterday\"}},"
		"42,"
		"{\"metadata\":{\"uid\":\"\",\"creationTimestamp\":\"2026-10-01T12:00:00Z\"}},"
		"{" META("bad-qty") "},\"spec\":{\"containers\":[" CTR("{\"limits\":{\"nvidia.com/gpu\":\"lots\"}}") "," CTR("{\"limits\":{\"nvidia.com/gpu\":\"1\"}}") "]}},"
		"{" META("bad-start") "},\"spec\":{\"containers\":[" CTR("{\"limits\":{\"nvidia.com/gpu\":\"1\"}}") "]},\"status\":{\"startTime\":\"soon\"}},"
		"{" META("huge") "},\"spec\":{\"containers\":[" CTR("{\"limits\":{\"nvidia.com/gpu\":\"9e15\"}}") "," CTR("{\"limits\":{\"nvidia.com/gpu\":\"9e15\"}}") "]}},"
		"{" META("good2") "},\"spec\":{\"containers\":[" CTR("{\"limits\":{\"nvidia.com/gpu\":\"1\"}}") "]}},"
		/* raw Latin-1 bytes: a label value, a label key */
		"{" META("latin1") ",\"labels\":{\"team\":\"caf\xe9\"}},\"spec\":{\"containers\":[" CTR("{\"limits\":{\"nvidia.com/gpu\":\"1\"}}") "]}},"
		"{" META("latin1key") ",\"labels\":{\"t\xe9\":\"x\"}},\"spec\":{\"containers\":[" CTR("{\"limits\":{\"nvidia.com/gpu\":\"1\"}}") "]}},"
		/* ... in a pod without GPUs: not stored, so not a problem */
		"{" META("latin1-nogpu") ",\"labels\":{\"team\":\"caf\xe9\"}}},"
		/* ... in an array element */
		"{" META("latin1-arr") "},\"spec\":{\"containers\":[" CTR("{\"limits\":{\"nvidia.com/gpu\":\"1\"}}") "," "{\"name\":\"\xff\"}" "]}}"
		"]}";
	static const char *const want[] = {
		"items[1].metadata.uid: missing",
		"items[2].metadata.creationTimestamp: missing",
		"items[3].metadata.creationTimestamp: bad time 'yesterday'",
		"items[4]: not an object",
		"items[5].metadata.uid: missing",
		"items[6].spec.containers[0].resources.limits.nvidia.com/gpu: bad quantity",
		"items[7].status.startTime: bad time 'soon'",
		"items[8].spec: GPU request out of range",
		"items[10].metadata.labels.team: not valid UTF-8",
		"items[11].metadata.labels (a key): not valid UTF-8",
		"items[13].spec.containers[1].name: not valid UTF-8",
	};
	struct gl_kube_result r;
	struct gl_err err = {0};

	(void)state;
	assert_int_equal(parse_str(doc, NULL, &r, &err), 0);
	assert_int_equal(r.nitems, 14);
	assert_int_equal(r.npods, 4);
	assert_int_equal(r.skipped_bad, 9);
	assert_int_equal(r.skipped_no_gpu, 1);
	assert_non_null(find_pod(&r, "good1"));
	assert_non_null(find_pod(&r, "good2"));
	assert_int_equal(find_pod(&r, "bad-qty")->gpu.gpu_micro, 1000000);
	assert_int_equal(find_pod(&r, "bad-start")->start_s, GL_TIME_NONE);
	assert_int_equal(r.nproblems, GL_ARRAY_LEN(want));
	for (size_t i = 0; i < GL_ARRAY_LEN(want); i++)
		assert_string_equal(r.problems[i], want[i]);
	gl_kube_result_fini(&r);
	gl_kube_result_fini(&r); /* idempotent */
	gl_kube_result_free(NULL);
}

/* HAND-WRITTEN: spec.activeDeadlineSeconds is the pod's time limit (its
 * row's timelimit_s, as Timelimit is a Slurm job's); absent is none, a value
 * that is not a positive whole number is named and ignored, the pod kept. */
static void test_active_deadline(void **state)
{
	static const char doc[] =
		"{\"kind\":\"PodList\",\"items\":["
		"{" META("d3600") "},\"spec\":{\"activeDeadlineSeconds\":3600,\"containers\":[" CTR("{\"limits\":{\"nvidia.com/gpu\":\"1\"}}") "]}},"
		"{" META("none") "},\"spec\":{\"containers\":[" CTR("{\"limits\":{\"nvidia.com/gpu\":\"1\"}}") "]}},"
		"{" META("text") "},\"spec\":{\"activeDeadlineSeconds\":\"1h\",\"containers\":[" CTR("{\"limits\":{\"nvidia.com/gpu\":\"1\"}}") "]}},"
		"{" META("zero") "},\"spec\":{\"activeDeadlineSeconds\":0,\"containers\":[" CTR("{\"limits\":{\"nvidia.com/gpu\":\"1\"}}") "]}},"
		"{" META("half") "},\"spec\":{\"activeDeadlineSeconds\":1.5,\"containers\":[" CTR("{\"limits\":{\"nvidia.com/gpu\":\"1\"}}") "]}}"
		"]}";
	static const char *const want[] = {
		"items[2].spec.activeDeadlineSeconds: not a positive whole number of seconds",
		"items[3].spec.activeDeadlineSeconds: not a positive whole number of seconds",
		"items[4].spec.activeDeadlineSeconds: not a positive whole number of seconds",
	};
	static const char *const names[] = {"d3600", "none", "text", "zero", "half"};
	static const int64_t limits[] = {3600, -1, -1, -1, -1};
	struct gl_kube_result r;
	struct gl_err err = {0};
	struct gl_jobrow row;

	(void)state;
	assert_int_equal(parse_str(doc, NULL, &r, &err), 0);
	assert_int_equal(r.npods, 5);
	for (size_t i = 0; i < GL_ARRAY_LEN(names); i++) {
		const struct gl_kube_pod *p = find_pod(&r, names[i]);
		assert_non_null(p);
		assert_int_equal(p->active_deadline_s, limits[i]);
		gl_kube_pod_to_row(p, 1790870000, &row);
		assert_int_equal(row.timelimit_s, limits[i]);
	}
	assert_int_equal(r.nproblems, GL_ARRAY_LEN(want));
	for (size_t i = 0; i < GL_ARRAY_LEN(want); i++)
		assert_string_equal(r.problems[i], want[i]);
	gl_kube_result_fini(&r);
}

/* HAND-WRITTEN: documents refused whole, with nothing produced. */
static void test_bad_documents(void **state)
{
	static const struct {
		const char *doc;
		int rc;
		const char *msg; /* substring */
	} cases[] = {
		{"", -GL_EINVAL, "invalid JSON"},
		{"{\"kind\":\"PodList\",\"items\":[", -GL_EINVAL, "invalid JSON"},
		{"{\"kind\":\"PodList\",\"items\":[]} []", -GL_EINVAL, "trailing data at byte 30"},
		{"{\"kind\":\"PodList\",\"items\":[]} trailing", -GL_EINVAL, "truncated"},
		/* ends after a comma: cJSON < 1.7.18 read past the buffer here */
		{"{\"kind\":\"PodList\",\"items\":[{\"a\":1,", -GL_EINVAL, "truncated"},
		{"{\"a\":1,  \n", -GL_EINVAL, "truncated"},
		{"42", -GL_EINVAL, "invalid JSON"},
		{" \n", -GL_EINVAL, "empty document"},
		{"{\"kind\":\"PodList\",\"items\":[]}{}", -GL_EINVAL, "trailing data"},
		{" {\"kind\":\"PodList\",\"items\":[]}\r\n", 0, NULL},
		{"not json", -GL_EINVAL, "invalid JSON"},
		{"[]", -GL_EFORMAT, "not a JSON object"},
		{"{\"items\":[]}", -GL_EFORMAT, "kind: missing"},
		{"{\"kind\":\"NodeList\",\"items\":[]}", -GL_EFORMAT, "'NodeList' is not PodList"},
		{"{\"kind\":\"PodList\"}", -GL_EFORMAT, "items: missing"},
		{"{\"kind\":\"PodList\",\"items\":{}}", -GL_EFORMAT, "items: not an array"},
		{"{\"kind\":\"List\",\"items\":[{\"kind\":\"Pod\"},{\"kind\":\"Node\",\"metadata\":{\"uid\":\"x\"}}]}",
		 -GL_EFORMAT, "items[1].kind: 'Node' is not Pod"},
		{"{\"kind\":\"List\",\"items\":[{\"metadata\":{}}]}", -GL_EFORMAT, "items[0].kind: '(missing)'"},
		{"{\"kind\":\"PodList\",\"items\":[]}", 0, NULL},
	};
	(void)state;
	for (size_t i = 0; i < GL_ARRAY_LEN(cases); i++) {
		struct gl_kube_result r;
		struct gl_err err = {0};
		int rc = parse_str(cases[i].doc, NULL, &r, &err);
		if (rc != cases[i].rc)
			fail_msg("case %zu: rc %d want %d (%s)", i, rc, cases[i].rc, err.msg);
		if (cases[i].msg && !strstr(err.msg, cases[i].msg))
			fail_msg("case %zu: message '%s' lacks '%s'", i, err.msg, cases[i].msg);
		assert_int_equal(r.npods, 0);
		assert_null(r.pods);
		assert_int_equal(r.nproblems, 0);
		gl_kube_result_fini(&r);
	}
}

/* HAND-WRITTEN: bombs are refused before cJSON sees them. */
static void test_bounds(void **state)
{
	size_t n = 100000;
	char *bomb = malloc(6 * n + 64);
	struct gl_kube_result r;
	struct gl_err err = {0};
	struct gl_kube_opts small = {.max_doc_bytes = 64};

	(void)state;
	assert_non_null(bomb);
	memset(bomb, '[', n);
	assert_int_equal(gl_kube_parse(bomb, n, NULL, &r, &err), -GL_ERANGE);
	assert_non_null(strstr(err.msg, "deeper than 64"));

	/* objects nested in a valid-looking PodList */
	{
		size_t len = 0;
		len += (size_t)sprintf(bomb, "{\"kind\":\"PodList\",\"items\":[");
		for (size_t i = 0; i < n; i++)
			len += (size_t)sprintf(bomb + len, "{\"a\":");
		assert_int_equal(gl_kube_parse(bomb, len, NULL, &r, &err), -GL_ERANGE);
	}
	/* exactly at the limit still parses */
	{
		struct gl_kube_opts d3 = {.max_depth = 3};
		const char *ok = "{\"kind\":\"PodList\",\"items\":[{}]}";
		assert_int_equal(gl_kube_parse(ok, strlen(ok), &d3, &r, &err), 0);
		assert_int_equal(r.skipped_bad, 1);
		gl_kube_result_fini(&r);
		d3.max_depth = 2;
		assert_int_equal(gl_kube_parse(ok, strlen(ok), &d3, &r, &err), -GL_ERANGE);
	}
	free(bomb);

	/* size cap */
	{
		char big[200];
		memset(big, ' ', sizeof big);
		memcpy(big, "{\"kind\":\"PodList\",\"items\":[]}", 29);
		assert_int_equal(gl_kube_parse(big, sizeof big, &small, &r, &err), -GL_ERANGE);
		assert_non_null(strstr(err.msg, "200 bytes"));
		assert_int_equal(gl_kube_parse(big, 64, &small, &r, &err), 0);
		gl_kube_result_fini(&r);
	}
	assert_int_equal(gl_kube_parse(NULL, 0, NULL, &r, &err), -GL_EINVAL);
}

/* HAND-WRITTEN: problems are capped so a hostile list cannot balloon. */
static void test_problem_cap(void **state)
{
	size_t n = GL_KUBE_MAX_PROBLEMS + 500, len = 0;
	char *doc = malloc(n * 3 + 64);
	struct gl_kube_result r;
	struct gl_err err = {0};

	(void)state;
	len += (size_t)sprintf(doc, "{\"kind\":\"PodList\",\"items\":[");
	for (size_t i = 0; i < n; i++)
		len += (size_t)sprintf(doc + len, "%s{}", i ? "," : "");
	len += (size_t)sprintf(doc + len, "]}");
	assert_int_equal(gl_kube_parse(doc, len, NULL, &r, &err), 0);
	assert_int_equal(r.skipped_bad, n);
	assert_int_equal(r.nproblems, GL_KUBE_MAX_PROBLEMS);
	assert_int_equal(r.problems_dropped, 500);
	gl_kube_result_fini(&r);
	free(doc);
}

/* ---- the real trace -------------------------------------------------- */

struct csv_pod {
	char name[64], qos[32], phase[16];
	long num_gpu, gpu_milli;
	long long created, deleted, scheduled;
};

static struct csv_pod *load_csv(size_t *n)
{
	FILE *f = NULL;
	char line[1024];
	struct csv_pod *pods = NULL;
	size_t cap = 0;

	*n = 0;
	{
		const char *env = getenv("GL_OPENB_CSV");
		if (env)
			f = fopen(env, "r");
	}
	for (size_t i = 0; !f && i < GL_ARRAY_LEN(csv_paths); i++)
		f = fopen(csv_paths[i], "r");
	if (!f)
		return NULL;
	if (!fgets(line, sizeof line, f)) {
		fclose(f);
		return NULL;
	}
	while (fgets(line, sizeof line, f)) {
		char *col[11], *p = line;
		int k = 0;
		line[strcspn(line, "\r\n")] = '\0';
		for (; k < 11 && p; k++) {
			col[k] = p;
			p = strchr(p, ',');
			if (p)
				*p++ = '\0';
		}
		assert_int_equal(k, 11);
		if (*n == cap) {
			cap = cap ? cap * 2 : 1024;
			pods = realloc(pods, cap * sizeof *pods);
			assert_non_null(pods);
		}
		snprintf(pods[*n].name, sizeof pods[*n].name, "%s", col[0]);
		pods[*n].num_gpu = atol(col[3]);
		pods[*n].gpu_milli = atol(col[4]);
		snprintf(pods[*n].qos, sizeof pods[*n].qos, "%s", col[6]);
		snprintf(pods[*n].phase, sizeof pods[*n].phase, "%s", col[7]);
		pods[*n].created = atoll(col[8]);
		pods[*n].deleted = atoll(col[9]);
		pods[*n].scheduled = col[10][0] ? atoll(col[10]) : -1;
		(*n)++;
	}
	fclose(f);
	return pods;
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;
	return (x > y) - (x < y);
}

#define NQOS 8
struct qos_sum {
	char qos[32];
	int64_t milli;
};

static void qos_add(struct qos_sum *s, size_t *n, const char *qos, int64_t milli)
{
	for (size_t i = 0; i < *n; i++) {
		if (!strcmp(s[i].qos, qos)) {
			s[i].milli += milli;
			return;
		}
	}
	assert_true(*n < NQOS);
	snprintf(s[*n].qos, sizeof s[*n].qos, "%s", qos);
	s[(*n)++].milli = milli;
}

static int64_t qos_get(const struct qos_sum *s, size_t n, const char *qos)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(s[i].qos, qos))
			return s[i].milli;
	return 0;
}

/* Parses each derived snapshot in time order and checks it against the CSV:
 * running GPU milli per qos, pending/finished/non-GPU counts, and that pods
 * that disappear between snapshots were deleted (and garbage-collected) in
 * between according to the trace. */
static void test_openb_snapshots(void **state)
{
	size_t ncsv, nsnap = 0;
	struct csv_pod *csv = load_csv(&ncsv);
	long long instants[32];
	DIR *d;
	struct dirent *de;
	char *prev_seen = NULL; /* per CSV row: present in the previous snapshot */
	long long prev_t = -1;
	int64_t grand_running = 0;

	(void)state;
	if (!csv)
		fail_msg("%s/openb_pod_list_default.csv is missing (the trace the snapshots come from)", FIXDIR);
	d = opendir(FIXDIR);
	assert_non_null(d);
	while ((de = readdir(d))) {
		long long t;
		char tail[8];
		if (sscanf(de->d_name, "openb-at-%lld.%7s", &t, tail) == 2 && !strcmp(tail, "json")) {
			assert_true(nsnap < GL_ARRAY_LEN(instants));
			instants[nsnap++] = t;
		}
	}
	closedir(d);
	assert_true(nsnap >= 2);
	qsort(instants, nsnap, sizeof instants[0], cmp_ll);
	prev_seen = calloc(ncsv, 1);
	assert_non_null(prev_seen);

	for (size_t k = 0; k < nsnap; k++) {
		long long t = instants[k];
		char path[256], *doc, *seen;
		size_t len, nq_want = 0, nq_got = 0;
		size_t want_pending = 0, want_done = 0, want_nogpu = 0, want_present = 0;
		size_t got_pending = 0, got_done = 0;
		struct qos_sum want[NQOS], got[NQOS];
		struct gl_kube_result r;
		struct gl_err err = {0};

		/* independent expectation, straight from the CSV */
		for (size_t i = 0; i < ncsv; i++) {
			const struct csv_pod *c = &csv[i];
			int terminal = !strcmp(c->phase, "Succeeded") || !strcmp(c->phase, "Failed");
			int present = c->created <= t &&
				      (t < c->deleted || (terminal && t < c->deleted + OPENB_LINGER_S));
			if (!present)
				continue;
			want_present++;
			if (c->num_gpu == 0) {
				want_nogpu++;
				continue;
			}
			if (t >= c->deleted)
				want_done++;
			else if (c->scheduled < 0 || t < c->scheduled)
				want_pending++;
			else
				qos_add(want, &nq_want, c->qos, (int64_t)c->num_gpu * c->gpu_milli);
		}

		snprintf(path, sizeof path, FIXDIR "/openb-at-%lld.json", t);
		doc = gl_test_read_file(path, &len);
		if (gl_kube_parse(doc, len, NULL, &r, &err) != 0)
			fail_msg("%s: %s", path, err.msg);
		if (r.nproblems)
			fail_msg("%s: %s", path, r.problems[0]);
		assert_int_equal(r.nitems, want_present);
		assert_int_equal(r.skipped_no_gpu, want_nogpu);
		assert_int_equal(r.skipped_bad, 0);

		seen = calloc(ncsv, 1);
		assert_non_null(seen);
		for (size_t i = 0; i < r.npods; i++) {
			const struct gl_kube_pod *p = &r.pods[i];
			struct gl_jobrow row;
			cJSON *labels = cJSON_Parse(p->labels_json);
			const cJSON *q = cJSON_GetObjectItem(labels, "qos");
			size_t idx;

			assert_true(cJSON_IsString(q));
			/* the CSV row is the pod's name suffix: "openb-pod-0042" */
			assert_int_equal(sscanf(p->name, "openb-pod-%zu", &idx), 1);
			assert_true(idx < ncsv && !strcmp(csv[idx].name, p->name));
			seen[idx] = 1;
			assert_int_equal(p->submit_s, OPENB_EPOCH + csv[idx].created);
			gl_kube_pod_to_row(p, OPENB_EPOCH + t, &row);
			if (p->phase == GL_KUBE_PHASE_RUNNING) {
				assert_string_equal(row.state, "RUNNING");
				assert_int_equal(row.start_s, OPENB_EPOCH + csv[idx].scheduled);
				assert_int_equal(row.end_s, GL_TIME_NONE);
				qos_add(got, &nq_got, q->valuestring, row.gpu_micro / 1000);
			} else if (p->phase == GL_KUBE_PHASE_PENDING) {
				assert_int_equal(row.gpu_micro, 0);
				assert_int_equal(row.req_gpu_micro,
						 (int64_t)csv[idx].num_gpu * csv[idx].gpu_milli * 1000);
				got_pending++;
			} else {
				assert_true(p->phase == GL_KUBE_PHASE_SUCCEEDED ||
					    p->phase == GL_KUBE_PHASE_FAILED);
				assert_string_equal(p->phase_raw, csv[idx].phase);
				assert_int_equal(row.end_s, OPENB_EPOCH + csv[idx].deleted);
				got_done++;
			}
			cJSON_Delete(labels);
		}
		assert_int_equal(got_pending, want_pending);
		assert_int_equal(got_done, want_done);
		assert_int_equal(nq_got, nq_want);
		for (size_t i = 0; i < nq_want; i++) {
			if (qos_get(got, nq_got, want[i].qos) != want[i].milli)
				fail_msg("%s: qos %s: parsed %lld milli-GPUs running, CSV says %lld", path,
					 want[i].qos, (long long)qos_get(got, nq_got, want[i].qos),
					 (long long)want[i].milli);
			grand_running += want[i].milli;
		}
		/* vanished since the previous snapshot: the trace must agree */
		for (size_t i = 0; prev_t >= 0 && i < ncsv; i++) {
			if (prev_seen[i] && !seen[i]) {
				const struct csv_pod *c = &csv[i];
				int terminal = !strcmp(c->phase, "Succeeded") || !strcmp(c->phase, "Failed");
				long long gone = c->deleted + (terminal ? OPENB_LINGER_S : 0);
				if (!(gone > prev_t && gone <= t))
					fail_msg("%s vanished between %lld and %lld but the trace says %lld",
						 c->name, prev_t, t, gone);
			}
		}
		free(prev_seen);
		prev_seen = seen;
		prev_t = t;
		gl_kube_result_fini(&r);
		free(doc);
	}
	/* the fixtures really exercise fractional GPUs */
	assert_true(grand_running % 1000 != 0);
	free(prev_seen);
	free(csv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_quantity),
		cmocka_unit_test(test_rfc3339),
		cmocka_unit_test(test_depth),
		cmocka_unit_test(test_gpu_rules),
		cmocka_unit_test(test_full_pod),
		cmocka_unit_test(test_phases),
		cmocka_unit_test(test_bad_pods), cmocka_unit_test(test_active_deadline),
		cmocka_unit_test(test_bad_documents),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_problem_cap),
		cmocka_unit_test(test_openb_snapshots),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
