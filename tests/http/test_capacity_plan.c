/* Capacity planning over real HTTP, the real binary and PostgreSQL
 * (docs/forecast.md, "Capacity planning"): a fleet whose a100 demand grows
 * linearly (a known line plus a fixed wobble, one job a day) against 8 a100
 * GPUs; /v1/capacity/forecast's trend, saturation dates and purchase
 * recommendation, the last computed here independently from the answer's
 * own quantiles and checked against the known line; a what-if plan (moves
 * the saturation date by what the line says, is not saved, is audited as a
 * read); POST /v1/capacity/plan (admin, audited) and its refusals naming
 * the field; and the config's capacity_plan refused at start with
 * file:line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define HIST_DAYS 84
#define CAP_A100 8
#define LEAD_DAYS 30
/* the a100 demand of history day d (0 = the window's first): the line
 * A + B d and a wobble of +-0.3 GPUs that repeats every 5 days */
#define LINE_A 2.02
#define LINE_B 0.05

static char g_dsn[512];
static struct gl_test_daemon g_d;
static long long g_today; /* 00:00 UTC of today */

static double line(double d)
{
	return LINE_A + LINE_B * d;
}

static void day_text(long long t, char *buf, size_t n)
{
	time_t tt = (time_t)t;
	struct tm tm;
	gmtime_r(&tt, &tm);
	strftime(buf, n, "%Y-%m-%d", &tm);
}

static int setup(void **state)
{
	char sql[2048], cfg[512], d10[16];
	(void)state;
	g_today = (long long)time(NULL) / 86400 * 86400;
	day_text(g_today + 10 * 86400, d10, sizeof d10);
	if (gl_test_db_fresh("gl_test_capacity_plan", g_dsn, sizeof g_dsn))
		return -1;
	/* cluster c1: 8 a100 and 4 h100, present since 200 days ago */
	if (gl_test_exec_dsn(g_dsn, "INSERT INTO clusters (name, kind) VALUES ('c1', 'kubernetes')") != 1 ||
	    gl_test_exec_dsn(g_dsn, "INSERT INTO node_gpu_spans (cluster_id, node, gpu_model, gpus, source, valid_from)"
				    " SELECT cluster_id, n, m, g, 'kube', now() - interval '200 days' FROM clusters,"
				    " (VALUES ('n1', 'a100', 8), ('n2', 'h100', 4)) v(n, m, g) WHERE name = 'c1'") != 2)
		return -1;
	/* one a100 job a day, all day long, of line(d) + wobble(d) GPUs */
	snprintf(sql, sizeof sql,
		 "INSERT INTO jobs (cluster_id, job_key, job_id, state, submit_at, start_at, end_at, gpu_micro,"
		 " req_gpu_micro, gpu_type)"
		 " SELECT cluster_id, 'd' || d, 'd' || d, 'Succeeded', s, s, s + interval '1 day', g, g, 'a100' FROM clusters,"
		 " (SELECT d, to_timestamp(%lld + 86400 * d) AS s,"
		 "   round(1000 * (%.17g + %.17g * d + 0.15 * ((d * 7) %% 5 - 2)))::bigint * 1000 AS g"
		 "  FROM generate_series(0, %d) d) x WHERE name = 'c1'",
		 g_today - HIST_DAYS * 86400LL, LINE_A, LINE_B, HIST_DAYS - 1);
	if (gl_test_exec_dsn(g_dsn, sql) != HIST_DAYS)
		return -1;
	/* the config's plan: 4 more h100 in 10 days */
	snprintf(cfg, sizeof cfg,
		 "procurement:\n  lead_days: %d\ncapacity_plan:\n  - cluster: c1\n    gpu_model: H100\n    action: add\n"
		 "    gpus: 4\n    date: \"%s\"\n    note: PO 4711\n",
		 LEAD_DAYS, d10);
	return gl_test_daemon_start(&g_d, g_dsn, cfg, (const char *[]){"--no-ingest", NULL});
}

static int teardown(void **state)
{
	(void)state;
	return gl_test_daemon_stop(&g_d) == 0 ? 0 : -1;
}

static cJSON *series_of(cJSON *j, const char *model)
{
	cJSON *s;
	cJSON_ArrayForEach(s, cJSON_GetObjectItem(j, "series"))
	if (!strcmp(cJSON_GetObjectItem(s, "gpu_model")->valuestring, model))
		return s;
	fail_msg("no series for %s", model);
	return NULL;
}

static double num(const cJSON *o, const char *k)
{
	cJSON *v = cJSON_GetObjectItem(o, k);
	if (!cJSON_IsNumber(v))
		fail_msg("%s is not a number", k);
	return v->valuedouble;
}

/* The forecast day (0 = the first after the window) a line reaches cap. */
static int crossing(double cap)
{
	for (int k = 0; k < 1000; k++)
		if (line(HIST_DAYS + k) >= cap)
			return k;
	return -1;
}

/* The value v with P(demand > v) = p from the five quantiles, linear
 * between them: written here again, not the module's. */
static double value_above(double p, const double q[5])
{
	static const double lv[5] = {0.025, 0.1, 0.5, 0.9, 0.975};
	double c = 1 - p;
	for (int i = 0; i < 4; i++)
		if (c <= lv[i + 1])
			return q[i] + (c - lv[i]) / (lv[i + 1] - lv[i]) * (q[i + 1] - q[i]);
	return q[4];
}

static void test_trend_saturation_and_recommendation(void **state)
{
	char path[256], want[16];
	cJSON *j, *s, *days, *d, *pu;
	long long bought = 0;
	int n, np = 0, k50;
	(void)state;
	snprintf(path, sizeof path, "/v1/capacity/forecast?cluster=c1&window=%dd&horizon=90&risk=20", HIST_DAYS);
	j = gl_test_get_json(g_d.port, path, 200);
	assert_non_null(j);
	assert_int_equal(num(j, "procurement_lead_days"), LEAD_DAYS);
	s = series_of(j, "a100");
	assert_int_equal(num(s, "capacity_gpus"), CAP_A100);
	/* a trend: the no-trend methods forecast about today's level for ever */
	if (!strstr("damped linear loglin", cJSON_GetObjectItem(s, "method")->valuestring))
		fail_msg("method %s: %s", cJSON_GetObjectItem(s, "method")->valuestring,
			 cJSON_GetObjectItem(s, "note")->valuestring);
	days = cJSON_GetObjectItem(s, "days");
	n = cJSON_GetArraySize(days);
	assert_int_equal(n, num(s, "horizon_answered"));
	/* a trend is backtested from origins with 4 weeks of history before
	 * them: two of those have actuals 84 - 28 - 1 = 55 days ahead */
	assert_int_equal(n, 55);
	assert_non_null(strstr(cJSON_GetObjectItem(s, "note")->valuestring, "answered 55 of the 90 days asked"));
	/* the median follows the line the data was made from */
	for (int k = 0; k < n; k++) {
		d = cJSON_GetArrayItem(days, k);
		assert_true(fabs(num(d, "peak_demand") - line(HIST_DAYS + k)) < 0.35 + 0.004 * k);
		assert_int_equal(num(d, "capacity_gpus"), CAP_A100);
	}
	/* saturation: the median reaches 8 GPUs where the line does, give or
	 * take the wobble (within 10 % of the days to it) */
	k50 = crossing(CAP_A100);
	assert_true(cJSON_IsString(cJSON_GetObjectItem(s, "saturation_date_p50")));
	if (!(fabs(num(s, "days_until_saturation_p50") - 1 - k50) <= 0.1 * k50 + 1))
		fail_msg("p50 date: day %g, the line crosses on day %d", num(s, "days_until_saturation_p50"), k50 + 1);
	assert_true(num(s, "days_until_saturation_p80") >= num(s, "days_until_saturation_p50"));
	/* the recommendation, computed here from the answer's own quantiles:
	 * at each day capacity must exceed the 80 % quantile of demand, GPUs
	 * bought stay, an order goes out LEAD_DAYS before it is needed */
	pu = cJSON_GetObjectItem(cJSON_GetObjectItem(s, "recommendation"), "purchases");
	assert_true(cJSON_IsArray(pu));
	for (int k = 0; k < n; k++) {
		double q[5];
		long long need;
		d = cJSON_GetArrayItem(days, k);
		q[0] = num(d, "lo95"), q[1] = num(d, "lo80"), q[2] = num(d, "p50"), q[3] = num(d, "hi80"),
		q[4] = num(d, "hi95");
		double v = value_above(0.2, q);
		need = v >= CAP_A100 ? (long long)floor(v - CAP_A100) + 1 : 0;
		if (need <= bought)
			continue;
		cJSON *b = cJSON_GetArrayItem(pu, np++);
		assert_non_null(b);
		assert_string_equal(cJSON_GetObjectItem(b, "need_by")->valuestring, cJSON_GetObjectItem(d, "date")->valuestring);
		assert_int_equal(num(b, "gpus"), need - bought);
		assert_int_equal(num(b, "total"), need);
		day_text(g_today + (long long)k * 86400 - LEAD_DAYS * 86400LL, want, sizeof want);
		assert_string_equal(cJSON_GetObjectItem(b, "order_by")->valuestring, want);
		assert_int_equal(cJSON_IsTrue(cJSON_GetObjectItem(b, "late")), k < LEAD_DAYS);
		bought = need;
	}
	assert_int_equal(cJSON_GetArraySize(pu), np);
	assert_true(np >= 2);
	assert_int_equal(num(cJSON_GetObjectItem(s, "recommendation"), "gpus"), bought);
	/* and against the line itself: the GPUs bought keep capacity above it
	 * on the last day answered */
	assert_true(CAP_A100 + bought > line(HIST_DAYS + n - 1));
	/* the config's plan: h100 capacity steps from 4 to 8 on its day */
	s = series_of(j, "h100");
	days = cJSON_GetObjectItem(s, "days");
	assert_int_equal(num(cJSON_GetArrayItem(days, 9), "capacity_gpus"), 4);
	assert_int_equal(num(cJSON_GetArrayItem(days, 10), "capacity_gpus"), 8);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(s, "plan"), 0), "source")->valuestring,
			    "config");
	cJSON_Delete(j);
}

static long long wait_count(const char *sql, long long want)
{
	long long v = 0;
	for (int i = 0; i < 100; i++) {
		v = gl_test_qint_dsn(g_dsn, sql);
		if (v >= want)
			break;
		usleep(50 * 1000);
	}
	return v;
}

static void test_what_if_moves_saturation(void **state)
{
	char path[512], day[16];
	int k50 = crossing(CAP_A100), k_add = k50 - 10, k2;
	long long before;
	cJSON *j, *s;
	(void)state;
	/* 4 a100 more from 10 days before the line reaches 8: it saturates where
	 * the line reaches 12 instead */
	day_text(g_today + (long long)k_add * 86400, day, sizeof day);
	snprintf(path, sizeof path, "/v1/capacity/forecast?cluster=c1&window=%dd&horizon=90&plan=c1,NVIDIA%%20A100,%%2B4,%s",
		 HIST_DAYS, day);
	before = gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM capacity_plan");
	j = gl_test_get_json(g_d.port, path, 200);
	assert_non_null(j);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "plan"), "what_if")));
	s = series_of(j, "a100");
	assert_int_equal(num(cJSON_GetArrayItem(cJSON_GetObjectItem(s, "days"), k_add - 1), "capacity_gpus"), CAP_A100);
	assert_int_equal(num(cJSON_GetArrayItem(cJSON_GetObjectItem(s, "days"), k_add), "capacity_gpus"), CAP_A100 + 4);
	k2 = crossing(CAP_A100 + 4);
	if (k2 < num(s, "horizon_answered")) {
		assert_true(fabs(num(s, "days_until_saturation_p50") - 1 - k2) <= 0.1 * k2 + 1);
	} else {
		assert_true(cJSON_IsNull(cJSON_GetObjectItem(s, "saturation_date_p50")));
	}
	cJSON_Delete(j);
	/* not saved; audited as a read, with the plan asked about */
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM capacity_plan"), before);
	assert_int_equal(wait_count("SELECT count(*) FROM audit_log WHERE action = 'capacity.whatif' AND outcome = 'ok'"
				    " AND detail->>'saved' = 'false' AND detail->>'plan' LIKE 'c1,NVIDIA A100,+4,%'",
				    1),
			 1);
	/* a bad what-if: 400 naming plan, and the entry's field */
	j = gl_test_get_json(g_d.port, "/v1/capacity/forecast?cluster=c1&plan=c9,a100,%2B4,2030-01-01", 400);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "error"), "param")->valuestring, "plan");
	assert_non_null(strstr(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "error"), "message")->valuestring,
			       "entry 1: cluster: unknown cluster 'c9'"));
	cJSON_Delete(j);
	j = gl_test_get_json(g_d.port, "/v1/capacity/forecast?cluster=c1&plan=c1,a100,-9,2030-01-01", 400);
	assert_non_null(strstr(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "error"), "message")->valuestring,
			       "entry 1: gpus: retires 9 a100 GPUs in c1 on 2030-01-01, but 8 are there"));
	cJSON_Delete(j);
	j = gl_test_get_json(g_d.port, "/v1/capacity/forecast?cluster=c1&plan=c1,a100,4,2030-01-01", 400);
	assert_non_null(strstr(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "error"), "message")->valuestring,
			       "entry 1: gpus: '4' is not +N"));
	cJSON_Delete(j);
}

/* POSTs body as the admin; returns the answer (status in *status). */
static cJSON *post_plan(const char *body, long *status)
{
	struct gl_test_http r;
	cJSON *j;
	assert_int_equal(gl_test_http(g_d.port, "POST", "/v1/capacity/plan", body, strlen(body), NULL, &r), 0);
	*status = r.status;
	j = cJSON_Parse(r.body);
	gl_test_http_fini(&r);
	return j;
}

static void expect_refused(const char *body, const char *param, const char *msg)
{
	long st;
	cJSON *j = post_plan(body, &st), *e;
	assert_int_equal(st, 400);
	e = cJSON_GetObjectItem(j, "error");
	assert_string_equal(cJSON_GetObjectItem(e, "param")->valuestring, param);
	if (!strstr(cJSON_GetObjectItem(e, "message")->valuestring, msg))
		fail_msg("%s: message '%s' lacks '%s'", body, cJSON_GetObjectItem(e, "message")->valuestring, msg);
	cJSON_Delete(j);
}

static void test_plan_post(void **state)
{
	char body[1024], d20[16], d30[16], path[256];
	long st;
	cJSON *j, *ch;
	long long audits;
	(void)state;
	day_text(g_today + 20 * 86400, d20, sizeof d20);
	day_text(g_today + 30 * 86400, d30, sizeof d30);
	audits = gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM audit_log WHERE action = 'capacity.plan'");
	/* refused, each naming the field, and nothing stored */
	snprintf(body, sizeof body, "{\"changes\":[{\"cluster\":\"c9\",\"gpu_model\":\"a100\",\"action\":\"add\",\"gpus\":4,"
				    "\"date\":\"%s\"}]}", d20);
	expect_refused(body, "changes[0].cluster", "unknown cluster 'c9'");
	snprintf(body, sizeof body, "{\"changes\":[{\"cluster\":\"c1\",\"gpu_model\":\"h999\",\"action\":\"add\",\"gpus\":4,"
				    "\"date\":\"%s\"}]}", d20);
	expect_refused(body, "changes[0].gpu_model", "unknown GPU model 'h999'");
	snprintf(body, sizeof body, "{\"changes\":[{\"cluster\":\"c1\",\"gpu_model\":\"a100\",\"action\":\"add\",\"gpus\":-3,"
				    "\"date\":\"%s\"}]}", d20);
	expect_refused(body, "changes[0].gpus", "a whole number of GPUs");
	/* 8 a100 there, 4 added on day 20: retiring 13 on day 30 is too many,
	 * retiring 12 is not */
	snprintf(body, sizeof body,
		 "{\"changes\":[{\"cluster\":\"c1\",\"gpu_model\":\"a100\",\"action\":\"add\",\"gpus\":4,\"date\":\"%s\"},"
		 "{\"cluster\":\"c1\",\"gpu_model\":\"a100\",\"action\":\"retire\",\"gpus\":13,\"date\":\"%s\"}]}",
		 d20, d30);
	expect_refused(body, "changes[1].gpus", "retires 13 a100 GPUs in c1");
	expect_refused("{\"changes\":[{\"cluster\":\"c1\",\"gpu_model\":\"a100\",\"action\":\"add\",\"gpus\":1,"
		       "\"date\":\"2030-02-30\"}]}",
		       "changes[0].date", "YYYY-MM-DD");
	expect_refused("{\"changes\":[{\"cluster\":\"c1\",\"gpu_model\":\"a100\",\"action\":\"add\",\"gpus\":1,"
		       "\"date\":\"2030-02-01\",\"when\":1}]}",
		       "changes[0]", "unknown field 'when'");
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM capacity_plan WHERE source = 'api'"), 0);
	/* accepted: stored, listed with the config's entry, audited */
	snprintf(body, sizeof body,
		 "{\"changes\":[{\"cluster\":\"c1\",\"gpu_model\":\"A100\",\"action\":\"add\",\"gpus\":4,\"date\":\"%s\","
		 "\"note\":\"PO 4712\"},"
		 "{\"cluster\":\"c1\",\"gpu_model\":\"a100\",\"action\":\"retire\",\"gpus\":12,\"date\":\"%s\"}]}",
		 d20, d30);
	j = post_plan(body, &st);
	assert_int_equal(st, 200);
	ch = cJSON_GetObjectItem(j, "changes");
	assert_int_equal(cJSON_GetArraySize(ch), 3);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(ch, 0), "source")->valuestring, "config");
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(ch, 1), "gpu_model")->valuestring, "a100");
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(ch, 2), "action")->valuestring, "retire");
	cJSON_Delete(j);
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM audit_log WHERE action = 'capacity.plan'"),
			 audits + 1);
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM audit_log WHERE action = 'capacity.plan'"
						 " AND actor LIKE 'token:%' AND (detail->>'entries')::int = 2"),
			 1);
	/* the forecast draws it at once (the cached answer was dropped) */
	snprintf(path, sizeof path, "/v1/capacity/forecast?cluster=c1&window=%dd&horizon=90&risk=20", HIST_DAYS);
	j = gl_test_get_json(g_d.port, path, 200);
	{
		cJSON *days = cJSON_GetObjectItem(series_of(j, "a100"), "days");
		assert_int_equal(num(cJSON_GetArrayItem(days, 19), "capacity_gpus"), 8);
		assert_int_equal(num(cJSON_GetArrayItem(days, 20), "capacity_gpus"), 12);
		assert_int_equal(num(cJSON_GetArrayItem(days, 30), "capacity_gpus"), 0);
	}
	cJSON_Delete(j);
	/* a viewer may read the plan, not change it */
	{
		char tok[80], hdr[120];
		struct gl_test_http r;
		assert_int_equal(gl_test_token_create(g_dsn, "plan-viewer", "viewer", NULL, tok, sizeof tok, NULL), 0);
		snprintf(hdr, sizeof hdr, "Authorization: Bearer %s", tok);
		assert_int_equal(gl_test_http(g_d.port, "POST", "/v1/capacity/plan", "{\"changes\":[]}", 14,
					      (const char *[]){hdr, NULL}, &r),
				 0);
		assert_int_equal(r.status, 403);
		gl_test_http_fini(&r);
		assert_int_equal(gl_test_http(g_d.port, "GET", "/v1/capacity/plan", NULL, 0, (const char *[]){hdr, NULL}, &r), 0);
		assert_int_equal(r.status, 200);
		gl_test_http_fini(&r);
	}
	/* an empty list clears what the API entered; the config's stays */
	j = post_plan("{\"changes\":[]}", &st);
	assert_int_equal(st, 200);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "changes")), 1);
	cJSON_Delete(j);
}

static void test_report_capacity_page(void **state)
{
	/* the showback report of the month under way has a capacity page: the
	 * outlook /v1/capacity/forecast gives over the 91 days before today */
	char path[128], month[8], row[512];
	struct gl_test_http r;
	cJSON *j, *s;
	time_t now = time(NULL);
	struct tm tm;
	(void)state;
	gmtime_r(&now, &tm);
	strftime(month, sizeof month, "%Y-%m", &tm);
	j = gl_test_get_json(g_d.port, "/v1/capacity/forecast?cluster=c1&window=91d&horizon=90", 200);
	s = series_of(j, "a100");
	snprintf(path, sizeof path, "/v1/reports/showback?month=%s&format=html", month);
	assert_int_equal(gl_test_http(g_d.port, "GET", path, NULL, 0, NULL, &r), 0);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "<h2>Capacity outlook</h2><table id=capacity>"));
	snprintf(row, sizeof row, "<tr><td>c1</td><td>a100</td><td class=n>8</td>");
	assert_non_null(strstr(r.body, row));
	/* its saturation dates and purchases are the API's */
	{
		const char *at = strstr(r.body, row), *d50 = cJSON_GetObjectItem(s, "saturation_date_p50")->valuestring;
		cJSON *pu = cJSON_GetObjectItem(cJSON_GetObjectItem(s, "recommendation"), "purchases");
		char want[160];
		assert_non_null(d50);
		snprintf(want, sizeof want, "<td>%s</td>", d50);
		assert_non_null(strstr(at, want));
		snprintf(want, sizeof want, "<td class=n>%d</td><td>by %s for %s", (int)num(cJSON_GetObjectItem(s, "recommendation"), "gpus"),
			 cJSON_GetObjectItem(cJSON_GetArrayItem(pu, 0), "order_by")->valuestring,
			 cJSON_GetObjectItem(cJSON_GetArrayItem(pu, 0), "need_by")->valuestring);
		if (!strstr(at, want))
			fail_msg("report row lacks '%s': %.400s", want, at);
	}
	gl_test_http_fini(&r);
	cJSON_Delete(j);
	snprintf(path, sizeof path, "/v1/reports/showback?month=%s&format=pdf", month);
	assert_int_equal(gl_test_http(g_d.port, "GET", path, NULL, 0, NULL, &r), 0);
	assert_int_equal(r.status, 200);
	assert_true(r.len > 4 && !memcmp(r.body, "%PDF", 4));
	gl_test_http_fini(&r);
}

/* serve with a bad capacity_plan stops at start, naming file:line. */
static void start_refused(const char *entry, const char *want)
{
	char path[512], yaml[512];
	struct gl_test_out o;
	FILE *f;
	snprintf(path, sizeof path, "%s/capplan-bad.yaml", getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp");
	snprintf(yaml, sizeof yaml, "log:\n  level: warn\ncapacity_plan:\n%s", entry);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(yaml, f);
	fclose(f);
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "--config", path, "serve", "--no-ingest", "--listen", "127.0.0.1:0",
				     NULL),
			 0);
	assert_int_equal(o.status, 1);
	if (!strstr(o.err, want))
		fail_msg("stderr '%s' lacks '%s'", o.err, want);
	gl_test_out_fini(&o);
}

static void test_config_plan_refused_at_start(void **state)
{
	char e[256];
	(void)state;
	snprintf(e, sizeof e, "  - cluster: c1\n    gpu_model: a100\n    action: retire\n    gpus: 9\n    date: \"2030-01-01\"\n");
	start_refused(e, "capplan-bad.yaml:4: capacity_plan[0].gpus: retires 9 a100 GPUs in c1 on 2030-01-01, but 8 are there");
	snprintf(e, sizeof e, "  - cluster: nowhere\n    gpu_model: a100\n    action: add\n    gpus: 9\n    date: \"2030-01-01\"\n");
	start_refused(e, "capplan-bad.yaml:4: capacity_plan[0].cluster: unknown cluster 'nowhere'");
	snprintf(e, sizeof e, "  - cluster: c1\n    gpu_model: a100\n    action: add\n    gpus: -9\n    date: \"2030-01-01\"\n");
	start_refused(e, "capplan-bad.yaml:7: capacity_plan[0].gpus: -9 is out of range");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_trend_saturation_and_recommendation),
		cmocka_unit_test(test_what_if_moves_saturation),
		cmocka_unit_test(test_plan_post),
		cmocka_unit_test(test_report_capacity_page),
		cmocka_unit_test(test_config_plan_refused_at_start),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
