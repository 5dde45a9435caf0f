/* The monthly showback report over real HTTP and the real CLI, on real
 * ingested data (the Slurm testbed output and Philly jobs): its totals equal
 * /v1/chargeback for the same month to the micro-unit, its GPU-seconds
 * equal a computation over the Philly JSON done here, a closed month
 * regenerates byte-identical CSV, hostile owner names are safe in CSV and
 * escaped in HTML, and the PDF has non-blank pages whose text carries the
 * CSV's totals (poppler's pdftoppm, pdfinfo and pdftotext). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TB "tests/fixtures/sacct/testbed/"
#define NB "tests/fixtures/nodes/testbed/"
#define MAXJ 5000
#define PH_MONTH "2017-11"
#define KUBE_SNAP "tests/fixtures/kube/openb-at-10326485.json"

static char g_dsn[512], g_tmp[PATH_MAX];
static struct gl_test_daemon g_d;

/* Hostile owner names: formula starters, quotes, commas, markup, non-ASCII. */
#define HOSTILE1 "=HYPERLINK(\"http://x\"), Ünïcode <b>&'"
#define HOSTILE2 "+vc,\"quoted\""
#define HOSTILE3 "@at team"
#define HOSTILE4 "-minus 東京"

static const char cost_yaml[] =
	"rates:\n  - model: a100\n    per_gpu_hour: \"2.50\"\n  - model: v100\n    per_gpu_hour: \"1.20\"\n"
	"  - model: \"*\"\n    per_gpu_hour: \"0.93\"\n"
	"owners:\n  - match: account\n    value: teama\n    team: vision\n"
	"  - match: account\n    value: teamb\n    team: language\n"
	"  - match: account\n    value: ee9e8c\n    team: '=HYPERLINK(\"http://x\"), Ünïcode <b>&'''\n"
	"  - match: account\n    value: 0e4a51\n    team: '+vc,\"quoted\"'\n"
	"  - match: account\n    value: 103959\n    team: '@at team'\n"
	"  - match: account\n    value: 6214e9\n    team: '-minus 東京'\n"
	"  - match: \"label:qos\"\n    value: LS\n    team: latency-critical\n";

static struct gl_test_philly_job g_j[MAXJ];
static int g_n;

/* Philly's JSON as sacct lines and the jobs kept here. */
static int philly_to_sacct(const char *out_path)
{
	g_n = gl_test_philly_to_sacct(out_path, "n1", g_j, MAXJ);
	return g_n > 4000 ? 0 : -1;
}

static int setup(void **state)
{
	char path[PATH_MAX + 32], fields[1024];
	struct gl_test_out o;
	snprintf(g_tmp, sizeof g_tmp, "%s/report-test", getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp");
	mkdir(g_tmp, 0755);
	snprintf(path, sizeof path, "%s/philly-sacct.txt", g_tmp);
	if (philly_to_sacct(path) || gl_test_db_fresh("gl_test_report", g_dsn, sizeof g_dsn) ||
	    gl_test_sacct_fields(fields, sizeof fields))
		return -1;
	if (gl_test_run(g_dsn, NULL, &o, "ingest", "sacct", "--cluster", "philly", "--file", path, "--fields",
			GL_TEST_PHILLY_FIELDS,
			NULL) ||
	    o.status != 0)
		return -1;
	gl_test_out_fini(&o);
	if (gl_test_run(g_dsn, NULL, &o, "ingest", "sacct", "--cluster", "testgpu", "--file", TB "sacct_alloc.txt",
			"--fields", fields, NULL) ||
	    o.status != 0)
		return -1;
	gl_test_out_fini(&o);
	/* the testbed's nodes (capacity, so unallocated idle is known in 2026-11) */
	if (gl_test_run(g_dsn, NULL, &o, "ingest", "slurm-nodes", "--cluster", "testgpu", "--nodes",
			NB "start_scontrol_show_node.txt", "--at", "2026-11-22T17:59:00Z", NULL) ||
	    o.status != 0)
		return -1;
	gl_test_out_fini(&o);
	if (gl_test_run(g_dsn, NULL, &o, "ingest", "slurm-nodes", "--cluster", "testgpu", "--nodes",
			NB "end_scontrol_show_node.txt", "--events", NB "sacctmgr_events.txt", "--reservations",
			NB "sacctmgr_reservations.txt", "--at", "2026-11-22T18:03:30Z", NULL) ||
	    o.status != 0)
		return -1;
	gl_test_out_fini(&o);
	/* exporter samples for job 4 (account teamb -> team language; 4 a100 on gpu02, 16:03:57-16:04:57): GPUs 0 and 1 idle, 2 and 3 at 60 %;
	 * each GPU's energy counter rises 90,000,000 then 75,000,000 mJ */
	{
		static const char *const at[] = {"2026-11-22T16:04:00Z", "2026-11-22T16:04:30Z", "2026-11-22T16:04:55Z"};
		static const long long energy[] = {1000000000LL, 1090000000LL, 1165000000LL};
		for (size_t i = 0; i < 3; i++) {
			char prom[PATH_MAX + 32], text[4096] = "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
							       "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n";
			for (int g = 0; g < 4; g++)
				snprintf(text + strlen(text), sizeof text - strlen(text),
					 "DCGM_FI_DEV_GPU_UTIL{gpu=\"%d\",UUID=\"GPU-rep-%d\",modelName=\"NVIDIA A100-SXM4-80GB\","
					 "Hostname=\"gpu02\",hpc_job=\"4\"} %d\n"
					 "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"%d\",UUID=\"GPU-rep-%d\","
					 "modelName=\"NVIDIA A100-SXM4-80GB\",Hostname=\"gpu02\",hpc_job=\"4\"} %lld\n",
					 g, g, g < 2 ? 0 : 60, g, g, energy[i]);
			snprintf(prom, sizeof prom, "%s/rep-dcgm.prom", g_tmp);
			{
				FILE *f = fopen(prom, "w");
				if (!f)
					return -1;
				fputs(text, f);
				fclose(f);
			}
			if (gl_test_run(g_dsn, NULL, &o, "ingest", "dcgm", "--cluster", "testgpu", "--file", prom, "--at",
					at[i], NULL) ||
			    o.status != 0)
				return -1;
			gl_test_out_fini(&o);
		}
	}
	/* Kubernetes pods (an openb snapshot) whose owner comes from a label
	 * rule; an empty list a day later ends them, so no month's total
	 * depends on the time of the request */
	snprintf(path, sizeof path, "%s/kube-empty.json", g_tmp);
	{
		FILE *f = fopen(path, "w");
		if (!f)
			return -1;
		fputs("{\"apiVersion\": \"v1\", \"kind\": \"List\", \"items\": []}\n", f);
		fclose(f);
	}
	if (gl_test_run(g_dsn, NULL, &o, "ingest", "kube", "--cluster", "kc", "--file", KUBE_SNAP, "--at",
			"2023-05-01T00:00:00Z", NULL) ||
	    o.status != 0)
		return -1;
	gl_test_out_fini(&o);
	if (gl_test_run(g_dsn, NULL, &o, "ingest", "kube", "--cluster", "kc", "--file", path, "--at",
			"2023-05-02T00:00:00Z", NULL) ||
	    o.status != 0)
		return -1;
	gl_test_out_fini(&o);
	/* a scraper that ran every 5 minutes through 2017-11 and paused from
	 * 08:00 to 14:30 on the 10th, then stopped with the month */
	if (gl_test_exec_dsn(g_dsn, "INSERT INTO ingest_runs (source, cluster_id, started_at, finished_at, status)"
				    " SELECT 'dcgm-scrape', (SELECT cluster_id FROM clusters WHERE name = 'philly'), t, t, 'ok'"
				    " FROM generate_series(timestamptz '2017-11-01', '2017-11-30 23:55', '5 minutes') t"
				    " WHERE t < '2017-11-10 08:00Z' OR t >= '2017-11-10 14:30Z'") < 0)
		return -1;
	return gl_test_daemon_start(&g_d, g_dsn, cost_yaml, (const char *[]){"--no-ingest", NULL});
}

static int teardown(void **state)
{
	return gl_test_daemon_stop(&g_d) == 0 ? 0 : -1;
}

static int csv_col(const struct gl_test_csv *c, const char *name)
{
	int k = gl_test_csv_col(c, name);
	if (k < 0)
		fail_msg("no column %s", name);
	return k;
}

static char *get_body(const char *path, long want, const char *want_ctype, size_t *len)
{
	struct gl_test_http r;
	char *b;
	assert_int_equal(gl_test_http(g_d.port, "GET", path, NULL, 0, NULL, &r), 0);
	if (r.status != want)
		fprintf(stderr, "%s: %ld %s\n", path, r.status, r.body);
	assert_int_equal(r.status, want);
	if (want_ctype) {
		char h[256];
		snprintf(h, sizeof h, "Content-Type: %s", want_ctype);
		assert_non_null(strcasestr(r.headers, h));
	}
	b = malloc(r.len + 1);
	memcpy(b, r.body, r.len);
	b[r.len] = '\0';
	if (len)
		*len = r.len;
	gl_test_http_fini(&r);
	return b;
}

static void get_csv(const char *query, struct gl_test_csv *c)
{
	char path[512];
	char *b;
	snprintf(path, sizeof path, "/v1/reports/showback?%s", query);
	b = get_body(path, 200, "text/csv", NULL);
	assert_int_equal(gl_test_csv_parse(b, c), 0);
	free(b);
}

/* Every owner's total and the fleet total against /v1/chargeback. */
static void check_against_chargeback(const char *month, const char *agg, const char *share)
{
	char q[256];
	struct gl_test_csv own, rec;
	cJSON *cb, *items, *it;
	int tcol, ocol, gcol, matched = 0;
	long long sum = 0;

	/* an open month counts idle up to now: the three answers are compared
	 * only when all three were made within the same second (a handful of
	 * tries at most; a closed month needs one) */
	for (int attempt = 0;; attempt++) {
		time_t t0 = time(NULL);
		snprintf(q, sizeof q, "month=%s&aggregate=%s&shareIdle=%s&table=owners", month, agg, share);
		get_csv(q, &own);
		snprintf(q, sizeof q, "month=%s&aggregate=%s&shareIdle=%s&table=reconciliation", month, agg, share);
		get_csv(q, &rec);
		snprintf(q, sizeof q, "/v1/chargeback?window=%s&aggregate=%s&shareIdle=%s", month, agg, share);
		cb = gl_test_get_json(g_d.port, q, 200);
		assert_non_null(cb);
		if (time(NULL) == t0 || attempt == 9)
			break;
		cJSON_Delete(cb);
		gl_test_csv_free(&own);
		gl_test_csv_free(&rec);
	}
	items = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(cb, "steps"), 0), "items");
	tcol = csv_col(&own, "total_micros");
	ocol = csv_col(&own, "owner");
	gcol = csv_col(&own, "gpu_seconds");
	assert_true(own.nrows > 1);
	cJSON_ArrayForEach(it, items)
	{
		const char *name = cJSON_GetObjectItem(cJSON_GetObjectItem(it, "key"), agg)->valuestring;
		size_t r = 1;
		char want[300];
		/* the CSV guards formula starters with a quote, never otherwise */
		snprintf(want, sizeof want, "%s%s", strchr("=+-@", name[0]) && name[0] ? "'" : "", name);
		while (r < own.nrows && strcmp(own.cell[r][ocol], want))
			r++;
		assert_true(r < own.nrows);
		assert_int_equal(atoll(own.cell[r][tcol]), (long long)cJSON_GetObjectItem(it, "total_micros")->valuedouble);
		assert_int_equal(atoll(own.cell[r][gcol]),
				 (long long)cJSON_GetObjectItem(it, "allocated_gpu_seconds")->valuedouble);
		sum += atoll(own.cell[r][tcol]);
		matched++;
	}
	/* the rest: owners of the previous month only, with nothing this month */
	for (size_t r = 1; r < own.nrows; r++) {
		int found = 0;
		cJSON_ArrayForEach(it, items)
		{
			const char *name = cJSON_GetObjectItem(cJSON_GetObjectItem(it, "key"), agg)->valuestring;
			const char *cell = own.cell[r][ocol];
			if (!strcmp(cell[0] == '\'' && strchr("=+-@", cell[1]) ? cell + 1 : cell, name))
				found = 1;
		}
		if (!found) {
			assert_int_equal(atoll(own.cell[r][tcol]), 0);
			assert_int_equal(atoll(own.cell[r][gcol]), 0);
		} else {
			matched--;
		}
	}
	assert_int_equal(matched, 0);
	/* reconciliation: Σ owners + __unallocated__ + __idle__ = fleet total = /v1/chargeback's */
	{
		int am = csv_col(&rec, "amount_micros");
		long long parts = 0, total = -1, diff = -1;
		for (size_t r = 1; r < rec.nrows; r++) {
			const char *line = rec.cell[r][0];
			if (!strcmp(line, "fleet total"))
				total = atoll(rec.cell[r][am]);
			else if (!strcmp(line, "difference"))
				diff = atoll(rec.cell[r][am]);
			else
				parts += atoll(rec.cell[r][am]);
		}
		assert_int_equal(total, (long long)cJSON_GetObjectItem(cJSON_GetObjectItem(cb, "totals"), "total_micros")
						->valuedouble);
		assert_int_equal(parts, total);
		assert_int_equal(diff, 0);
		/* owners + __idle__ = total; __idle__ as chargeback has it */
		{
			cJSON *idle = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(cb, "steps"), 0), "idle");
			cJSON *im = cJSON_GetObjectItem(idle, "total_micros");
			long long want_idle = cJSON_IsNumber(im) ? (long long)im->valuedouble : 0;
			assert_int_equal(sum + want_idle, total);
			if (!strcmp(month, "2026-11") && !strcmp(share, "none"))
				assert_true(want_idle > 0); /* capacity known: idle priced */
		}
	}
	cJSON_Delete(cb);
	gl_test_csv_free(&own);
	gl_test_csv_free(&rec);
}

static void test_totals_equal_chargeback(void **state)
{
	check_against_chargeback(PH_MONTH, "team", "none");
	check_against_chargeback(PH_MONTH, "user", "none");
	check_against_chargeback(PH_MONTH, "account", "proportional");
	check_against_chargeback("2017-10", "team", "none");
	check_against_chargeback("2026-11", "team", "none");
	check_against_chargeback("2026-11", "user", "none");
	check_against_chargeback("2026-11", "team", "proportional");
}

/* GPU-seconds per Philly user in the month, computed here from the JSON. */
static void test_gpu_seconds_from_philly_json(void **state)
{
	struct gl_test_csv own;
	long long a = 1509494400LL /* 2017-11-01 */, b = 1512086400LL /* 2017-12-01 */, all = 0, seen = 0;
	int ocol, gcol;
	get_csv("month=" PH_MONTH "&aggregate=user", &own);
	ocol = csv_col(&own, "owner");
	gcol = csv_col(&own, "gpu_seconds");
	for (size_t r = 1; r < own.nrows; r++) {
		long long want = 0;
		for (int i = 0; i < g_n; i++) {
			long long s = g_j[i].start > a ? g_j[i].start : a, e = g_j[i].end < b ? g_j[i].end : b;
			if (e > s && !strcmp(g_j[i].user, own.cell[r][ocol]))
				want += g_j[i].gpus * (e - s);
		}
		assert_int_equal(atoll(own.cell[r][gcol]), want);
		seen += want;
	}
	for (int i = 0; i < g_n; i++) {
		long long s = g_j[i].start > a ? g_j[i].start : a, e = g_j[i].end < b ? g_j[i].end : b;
		if (e > s)
			all += g_j[i].gpus * (e - s);
	}
	assert_true(all > 0);
	assert_int_equal(seen, all);
	gl_test_csv_free(&own);
}

/* The top jobs by cost: each one's GPU-hours, cost and owner worked out
 * here from the Philly JSON (JobID k is the k-th converted job; every
 * Philly job is priced by the "*" rate, 0.93 per GPU-hour), and in order. */
static void test_top_jobs_from_philly_json(void **state)
{
	static const char *const vc[] = {"ee9e8c", "0e4a51", "103959", "6214e9"};
	static const char *const team[] = {HOSTILE1, HOSTILE2, HOSTILE3, HOSTILE4};
	struct gl_test_csv top;
	long long a = 1509494400LL, b = 1512086400LL, prev = LLONG_MAX;
	int rows = 0;
	get_csv("month=" PH_MONTH "&table=top_cost", &top);
	for (size_t r = 1; r < top.nrows; r++) {
		const struct gl_test_philly_job *j;
		long long s, e, micros, cents;
		char want_owner[256] = "__unallocated__", want_cost[32], want_h[32];
		if (strcmp(top.cell[r][csv_col(&top, "cluster")], "philly"))
			continue;
		j = &g_j[atoi(top.cell[r][csv_col(&top, "job_id")]) - 1];
		s = j->start > a ? j->start : a;
		e = j->end < b ? j->end : b;
		/* gpus x seconds x 930000 micros / 3600, half up; then cents half up */
		micros = (j->gpus * (e - s) * 930000 * 2 + 3600) / 7200;
		cents = (micros + 5000) / 10000;
		snprintf(want_cost, sizeof want_cost, "%lld.%02lld", cents / 100, cents % 100);
		snprintf(want_h, sizeof want_h, "%lld.%03lld", (j->gpus * (e - s) * 1000 * 2 + 3600) / 7200 / 1000,
			 (j->gpus * (e - s) * 1000 * 2 + 3600) / 7200 % 1000);
		for (size_t k = 0; k < 4; k++)
			if (!strcmp(j->vc, vc[k]))
				snprintf(want_owner, sizeof want_owner, "'%s", team[k]);
		assert_string_equal(top.cell[r][csv_col(&top, "cost")], want_cost);
		assert_string_equal(top.cell[r][csv_col(&top, "gpu_hours")], want_h);
		assert_string_equal(top.cell[r][csv_col(&top, "owner")], want_owner);
		assert_true(micros <= prev);
		prev = micros;
		rows++;
	}
	assert_int_equal(rows, 20); /* the testbed's jobs are in 2026, not 2017-11 */
	gl_test_csv_free(&top);
}

static int cmp_ll(const void *pa, const void *pb)
{
	long long a = *(const long long *)pa, b = *(const long long *)pb;
	return (a > b) - (a < b);
}

/* percentile_disc: the first value whose cumulative share reaches p */
static long long pct_disc(const long long *sorted, int n, double p)
{
	int k = (int)ceil(p * n);
	return sorted[(k < 1 ? 1 : k) - 1];
}

/* Failed-job waste per user and queue-wait percentiles per user and
 * partition, each worked out here from the Philly JSON: a job whose status
 * is not Pass was ingested as FAILED; its GPU-time in the month is priced
 * by the "*" rate (0.93), half up per job; a wait is start - submit of a
 * job that started in the month. */
static void test_failed_waste_and_waits_from_philly_json(void **state)
{
	struct gl_test_csv own, w;
	long long a = 1509494400LL, b = 1512086400LL;
	long long *waits = calloc((size_t)g_n, sizeof *waits);
	int oc, fh, fc, users = 0, with_failed = 0, all_n = 0;
	(void)state;
	get_csv("month=" PH_MONTH "&aggregate=user", &own);
	get_csv("month=" PH_MONTH "&aggregate=user&table=waits", &w);
	oc = csv_col(&own, "owner");
	fh = csv_col(&own, "failed_gpu_hours");
	fc = csv_col(&own, "failed_cost");
	for (size_t r = 1; r < own.nrows; r++) {
		long long fs = 0, micros = 0;
		char want_h[48], want_c[48];
		for (int i = 0; i < g_n; i++) {
			const struct gl_test_philly_job *j = &g_j[i];
			long long s = j->start > a ? j->start : a, e = j->end < b ? j->end : b;
			if (!j->failed || j->gpus == 0 || j->start >= b || j->end <= a || strcmp(j->user, own.cell[r][oc]))
				continue;
			fs += j->gpus * (e - s);
			micros += (j->gpus * (e - s) * 930000 * 2 + 3600) / 7200;
		}
		snprintf(want_h, sizeof want_h, "%lld.%03lld", (fs * 1000 * 2 + 3600) / 7200 / 1000,
			 (fs * 1000 * 2 + 3600) / 7200 % 1000);
		snprintf(want_c, sizeof want_c, "%lld.%02lld", (micros + 5000) / 10000 / 100, (micros + 5000) / 10000 % 100);
		assert_string_equal(own.cell[r][fh], want_h);
		assert_string_equal(own.cell[r][fc], want_c);
		users++;
		with_failed += fs > 0;
	}
	assert_true(users > 50);
	assert_true(with_failed > 10);
	/* waits: every Philly job is in partition "gpu" */
	for (size_t r = 1; r < w.nrows; r++) {
		const char *kind = w.cell[r][0], *name = w.cell[r][1];
		int n = 0;
		for (int i = 0; i < g_n; i++) {
			const struct gl_test_philly_job *j = &g_j[i];
			if (j->gpus == 0 || j->start < a || j->start >= b || j->end <= a)
				continue;
			if (!strcmp(kind, "owner") && strcmp(j->user, name))
				continue;
			waits[n++] = j->start > j->submit ? j->start - j->submit : 0;
		}
		if (!strcmp(kind, "partition")) {
			assert_string_equal(name, "gpu");
			all_n = n;
		}
		assert_true(n > 0);
		qsort(waits, (size_t)n, sizeof *waits, cmp_ll);
		assert_int_equal(atoll(w.cell[r][2]), n);
		assert_int_equal(atoll(w.cell[r][3]), pct_disc(waits, n, 0.5));
		assert_int_equal(atoll(w.cell[r][4]), pct_disc(waits, n, 0.9));
		assert_int_equal(atoll(w.cell[r][5]), pct_disc(waits, n, 0.99));
	}
	assert_true(all_n > 1000);
	free(waits);
	gl_test_csv_free(&own);
	gl_test_csv_free(&w);
}

/* Stretches with no ingestion run are listed on the report's first page
 * (and in its partial table): the scraper's 6.5-hour pause in November,
 * and December, when it never ran again; October, before it started, says
 * nothing about it. */
static void test_ingestion_gaps_without_runs(void **state)
{
	static const char *const months[] = {"2017-10", "2017-11", "2017-12"};
	static const char *const want[] = {
		NULL,
		"ingestion gap: no dcgm-scrape run on philly from 2017-11-10T07:55:00Z to 2017-11-10T14:30:00Z (6.6 h in "
		"the month; it runs every 5 min)",
		"ingestion gap: no dcgm-scrape run on philly from 2017-12-01T00:00:00Z to 2018-01-01T00:00:00Z (744.0 h in "
		"the month; it runs every 5 min)",
	};
	(void)state;
	for (size_t m = 0; m < 3; m++) {
		char q[128], *html;
		struct gl_test_csv p;
		int hits = 0;
		snprintf(q, sizeof q, "month=%s&table=partial", months[m]);
		get_csv(q, &p);
		for (size_t r = 1; r < p.nrows; r++) {
			if (!strstr(p.cell[r][0], "dcgm-scrape"))
				continue;
			assert_non_null(want[m]);
			assert_string_equal(p.cell[r][0], want[m]);
			hits++;
		}
		assert_int_equal(hits, want[m] ? 1 : 0);
		gl_test_csv_free(&p);
		if (!want[m])
			continue;
		snprintf(q, sizeof q, "/v1/reports/showback?month=%s&format=html", months[m]);
		html = get_body(q, 200, "text/html", NULL);
		assert_non_null(strstr(html, "no dcgm-scrape run on philly from"));
		free(html);
	}
}

/* The per-job part resolves owners by label rules too: in 2023-04 the top
 * jobs of the Kubernetes cluster belong to "latency-critical" exactly when
 * the pod's qos label in the snapshot file is LS. */
static void test_top_jobs_owner_by_label_rule(void **state)
{
	struct gl_test_csv top;
	size_t len;
	char *doc = gl_test_read_file(KUBE_SNAP, &len);
	cJSON *root = cJSON_Parse(doc), *it;
	int ls = 0, other = 0;
	(void)state;
	assert_non_null(root);
	get_csv("month=2023-04&table=top_cost", &top);
	for (size_t r = 1; r < top.nrows; r++) {
		const char *job = top.cell[r][csv_col(&top, "job_id")], *qos = NULL;
		assert_string_equal(top.cell[r][csv_col(&top, "cluster")], "kc");
		cJSON_ArrayForEach(it, cJSON_GetObjectItem(root, "items"))
		{
			cJSON *md = cJSON_GetObjectItem(it, "metadata");
			if (!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(md, "name")), job))
				qos = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(md, "labels"), "qos"));
		}
		assert_non_null(qos);
		if (!strcmp(qos, "LS")) {
			assert_string_equal(top.cell[r][csv_col(&top, "owner")], "latency-critical");
			ls++;
		} else {
			assert_string_equal(top.cell[r][csv_col(&top, "owner")], "__unallocated__");
			other++;
		}
	}
	assert_true(ls > 0 && other > 0);
	cJSON_Delete(root);
	free(doc);
	gl_test_csv_free(&top);
}

/* format=zip: one archive holding every CSV table under its file name, each
 * byte-identical to the table on its own (read back with the real unzip);
 * a closed month zips to the same bytes twice. */
static void test_zip_bundles_every_table(void **state)
{
	static const char *const tables[] = {"owners", "models", "daily", "fleet", "waits", "top_cost",
					     "top_idle", "reconciliation", "rates", "owner_rules", "partial", "inference"};
	struct gl_test_http r;
	char path[PATH_MAX + 32], cmd[PATH_MAX + 128], line[256];
	size_t len1, len2;
	char *z1, *z2;
	int n = 0;
	FILE *f;
	(void)state;
	assert_int_equal(gl_test_http(g_d.port, "GET", "/v1/reports/showback?month=2017-11&format=zip", NULL, 0, NULL,
				      &r),
			 0);
	assert_int_equal(r.status, 200);
	assert_non_null(strcasestr(r.headers, "Content-Type: application/zip"));
	assert_non_null(strcasestr(r.headers, "filename=\"showback-2017-11-team.zip\""));
	gl_test_http_fini(&r);
	z1 = get_body("/v1/reports/showback?month=2017-11&format=zip", 200, "application/zip", &len1);
	z2 = get_body("/v1/reports/showback?month=2017-11&format=zip", 200, "application/zip", &len2);
	assert_int_equal(len1, len2);
	assert_memory_equal(z1, z2, len1);
	snprintf(path, sizeof path, "%s/showback.zip", g_tmp);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(z1, 1, len1, f), len1);
	fclose(f);
	snprintf(cmd, sizeof cmd, "unzip -Z1 '%s'", path);
	f = popen(cmd, "r");
	assert_non_null(f);
	while (fgets(line, sizeof line, f)) {
		char want[128], q[128], *csv, *got;
		size_t glen;
		FILE *p;
		line[strcspn(line, "\n")] = '\0';
		assert_true(n < 12);
		snprintf(want, sizeof want, "showback-2017-11-team-%s.csv", tables[n]);
		assert_string_equal(line, want);
		snprintf(q, sizeof q, "/v1/reports/showback?month=2017-11&table=%s", tables[n]);
		csv = get_body(q, 200, "text/csv", NULL);
		snprintf(cmd, sizeof cmd, "unzip -p '%s' '%s'", path, want);
		p = popen(cmd, "r");
		assert_non_null(p);
		got = malloc(strlen(csv) + 2);
		glen = fread(got, 1, strlen(csv) + 1, p);
		assert_int_equal(pclose(p), 0);
		assert_int_equal(glen, strlen(csv));
		assert_memory_equal(got, csv, glen);
		free(got);
		free(csv);
		n++;
	}
	assert_int_equal(pclose(f), 0);
	assert_int_equal(n, 12);
	free(z1);
	free(z2);
}

/* Exporter data: job 4's owner has busy / allocated-idle hours and energy;
 * the others say "no data", never 0. */
static void test_exporter_usage_and_energy(void **state)
{
	struct gl_test_csv own;
	int oc, bc, ic, ec, seen = 0;
	get_csv("month=2026-11", &own);
	oc = csv_col(&own, "owner");
	bc = csv_col(&own, "busy_gpu_hours");
	ic = csv_col(&own, "allocated_idle_gpu_hours");
	ec = csv_col(&own, "energy_kwh");
	for (size_t r = 1; r < own.nrows; r++) {
		if (!strcmp(own.cell[r][oc], "language")) {
			/* 4 GPUs x 165,000,000 mJ = 660,000,000 mJ = 0.183 kWh */
			assert_string_equal(own.cell[r][ec], "0.183");
			assert_string_not_equal(own.cell[r][bc], "no data");
			assert_string_not_equal(own.cell[r][ic], "no data");
			/* 55 s observed on 4 GPUs; GPUs 2 and 3 at 60 % duty are busy
			 * 0.6 x 55 s each (66 GPU-s = 0.018 h), the rest is allocated idle
			 * (2 x 55 + 2 x 0.4 x 55 = 154 GPU-s = 0.043 h) */
			assert_string_equal(own.cell[r][bc], "0.018");
			assert_string_equal(own.cell[r][ic], "0.043");
			seen++;
		} else {
			assert_string_equal(own.cell[r][ec], "no data");
			assert_string_equal(own.cell[r][bc], "no data");
		}
	}
	assert_int_equal(seen, 1);
	gl_test_csv_free(&own);
}

static void test_bad_months(void **state)
{
	static const char *const bad[] = {"month=2031-01", "month=2010-01", "month=2017-13", "month=17-11",
					  "month=", "aggregate=team"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char path[256];
		cJSON *j, *e;
		snprintf(path, sizeof path, "/v1/reports/showback?%s", bad[i]);
		j = gl_test_get_json(g_d.port, path, 400);
		assert_non_null(j);
		e = cJSON_GetObjectItem(j, "error");
		assert_string_equal(cJSON_GetObjectItem(e, "param")->valuestring, "month");
		cJSON_Delete(j);
	}
	{
		cJSON *j = gl_test_get_json(g_d.port, "/v1/reports/showback?month=2017-11&format=xls", 400);
		assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "error"), "param")->valuestring, "format");
		cJSON_Delete(j);
		j = gl_test_get_json(g_d.port, "/v1/reports/showback?month=2017-11&aggregate=cluster", 400);
		assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "error"), "param")->valuestring,
				    "aggregate");
		cJSON_Delete(j);
	}
}

static void test_formats_and_headers(void **state)
{
	struct gl_test_http r;
	assert_int_equal(gl_test_http(g_d.port, "GET", "/v1/reports/showback?month=2017-11&format=html", NULL, 0, NULL,
				      &r),
			 0);
	assert_int_equal(r.status, 200);
	assert_non_null(strcasestr(r.headers, "Content-Type: text/html; charset=utf-8"));
	assert_non_null(strcasestr(r.headers, "Content-Disposition: attachment; filename=\"showback-2017-11-team.html\""));
	gl_test_http_fini(&r);
	assert_int_equal(gl_test_http(g_d.port, "GET", "/v1/reports/showback?month=2017-11&format=pdf", NULL, 0, NULL,
				      &r),
			 0);
	assert_int_equal(r.status, 200);
	assert_non_null(strcasestr(r.headers, "Content-Type: application/pdf"));
	assert_non_null(strcasestr(r.headers, "filename=\"showback-2017-11-team.pdf\""));
	assert_true(r.len > 1000 && !memcmp(r.body, "%PDF-", 5));
	gl_test_http_fini(&r);
	assert_int_equal(gl_test_http(g_d.port, "GET", "/v1/reports/showback?month=2017-11&table=fleet", NULL, 0, NULL,
				      &r),
			 0);
	assert_non_null(strcasestr(r.headers, "filename=\"showback-2017-11-team-fleet.csv\""));
	gl_test_http_fini(&r);
}

static int run_cli(const char *dir, const char *month, const char *format)
{
	struct gl_test_out o;
	int st;
	if (gl_test_run(g_dsn, NULL, &o, "report", "showback", "--month", month, "--format", format, "--out", dir,
			NULL))
		return -1;
	st = o.status;
	if (st)
		fprintf(stderr, "report: %s\n", o.err);
	gl_test_out_fini(&o);
	return st;
}

static void test_regenerate_closed_month_byte_identical(void **state)
{
	char d1[PATH_MAX + 8], d2[PATH_MAX + 8];
	DIR *dh;
	struct dirent *e;
	int files = 0;
	snprintf(d1, sizeof d1, "%s/r1", g_tmp);
	snprintf(d2, sizeof d2, "%s/r2", g_tmp);
	assert_int_equal(run_cli(d1, PH_MONTH, "csv"), 0);
	sleep(1); /* a later generated-at second must not change a byte */
	assert_int_equal(run_cli(d2, PH_MONTH, "csv"), 0);
	dh = opendir(d1);
	assert_non_null(dh);
	while ((e = readdir(dh))) {
		char p1[2 * PATH_MAX], p2[2 * PATH_MAX];
		size_t l1, l2;
		char *b1, *b2;
		if (!strstr(e->d_name, ".csv"))
			continue;
		snprintf(p1, sizeof p1, "%s/%s", d1, e->d_name);
		snprintf(p2, sizeof p2, "%s/%s", d2, e->d_name);
		b1 = gl_test_read_file(p1, &l1);
		b2 = gl_test_read_file(p2, &l2);
		assert_int_equal(l1, l2);
		assert_memory_equal(b1, b2, l1);
		free(b1);
		free(b2);
		files++;
	}
	closedir(dh);
	assert_int_equal(files, 12);
}

static void test_hostile_names(void **state)
{
	struct gl_test_csv own;
	char *html;
	const char *names[] = {HOSTILE1, HOSTILE2, HOSTILE3, HOSTILE4};
	char *raw;
	int ocol;
	get_csv("month=" PH_MONTH, &own);
	ocol = csv_col(&own, "owner");
	for (size_t i = 0; i < 4; i++) {
		char want[256];
		size_t r = 1;
		snprintf(want, sizeof want, "'%s", names[i]);
		while (r < own.nrows && strcmp(own.cell[r][ocol], want))
			r++;
		assert_true(r < own.nrows); /* present, quote-guarded, round-trips through RFC 4180 */
	}
	/* no cell anywhere starts with a formula character */
	for (size_t r = 0; r < own.nrows; r++)
		for (size_t k = 0; k < own.ncols[r]; k++) {
			const char *c = own.cell[r][k];
			if (c[0] == '-' && (c[1] >= '0' && c[1] <= '9'))
				continue; /* a negative number */
			assert_null(strchr("=+@", c[0]) && c[0] ? c : NULL);
		}
	gl_test_csv_free(&own);
	raw = get_body("/v1/reports/showback?month=" PH_MONTH, 200, NULL, NULL);
	assert_non_null(strstr(raw, "\"'=HYPERLINK(\"\"http://x\"\"), Ünïcode <b>&'\""));
	free(raw);
	html = get_body("/v1/reports/showback?month=" PH_MONTH "&format=html", 200, "text/html", NULL);
	assert_null(strstr(html, "<b>"));
	assert_null(strstr(html, "\"http://x\""));
	assert_non_null(strstr(html, "=HYPERLINK(&quot;http://x&quot;), Ünïcode &lt;b&gt;&amp;&#39;"));
	assert_non_null(strstr(html, "+vc,&quot;quoted&quot;"));
	assert_non_null(strstr(html, "-minus 東京"));
	free(html);
}

/* A value of the fleet table (metric,value). */
static void fleet_value(const char *month, const char *metric, char *out, size_t n)
{
	struct gl_test_csv f;
	char q[128];
	snprintf(q, sizeof q, "month=%s&table=fleet", month);
	get_csv(q, &f);
	out[0] = '\0';
	for (size_t r = 1; r < f.nrows; r++)
		if (!strcmp(f.cell[r][0], metric))
			snprintf(out, n, "%s", f.cell[r][1]);
	gl_test_csv_free(&f);
	assert_true(out[0] != '\0');
}

static char *run_capture(const char *cmd)
{
	FILE *p = popen(cmd, "r");
	size_t cap = 1 << 16, n = 0, k;
	char *b = malloc(cap);
	assert_non_null(p);
	while ((k = fread(b + n, 1, cap - n - 1, p)) > 0) {
		n += k;
		if (n + 1 == cap)
			b = realloc(b, cap *= 2);
	}
	b[n] = '\0';
	assert_int_equal(pclose(p), 0);
	return b;
}

/* A CSV number as the report shows it with the default separators:
 * "276364.80" -> "276,364.80" (worked out here, not by the code under test). */
static void grouped(const char *in, char *out, size_t n)
{
	const char *dot = strchr(in, '.');
	size_t lead = in[0] == '-', digits = (dot ? (size_t)(dot - in) : strlen(in)) - lead, o = 0;
	char b[128];
	if (lead)
		b[o++] = '-';
	for (size_t k = 0; k < digits; k++) {
		if (k && (digits - k) % 3 == 0)
			b[o++] = ',';
		b[o++] = in[lead + k];
	}
	snprintf(b + o, sizeof b - o, "%s", dot ? dot : "");
	snprintf(out, n, "%s", b);
}

static void test_pdf_pages_and_text(void **state)
{
	char dir[PATH_MAX + 8], cmd[4 * PATH_MAX], total[64], hours[64];
	char *info, *txt;
	int pages, rendered = 0;
	struct gl_test_csv own;
	snprintf(dir, sizeof dir, "%s/pdf", g_tmp);
	assert_int_equal(run_cli(dir, PH_MONTH, "pdf"), 0);
	snprintf(cmd, sizeof cmd, "pdfinfo '%s/showback-" PH_MONTH "-team.pdf'", dir);
	info = run_capture(cmd);
	assert_non_null(strstr(info, "Pages:"));
	pages = atoi(strstr(info, "Pages:") + 6);
	free(info);
	assert_true(pages >= 4); /* cover, owners, charts, details */
	/* every page rendered, and none blank: a grey level below white somewhere */
	snprintf(cmd, sizeof cmd, "cd '%s' && pdftoppm -r 24 -gray showback-" PH_MONTH "-team.pdf pg", dir);
	free(run_capture(cmd));
	for (int i = 1; i <= pages; i++) {
		char p[2 * PATH_MAX];
		size_t len;
		char *img;
		int w, h, maxv, off = 0, dark = 0;
		/* pdftoppm numbers pages with as many digits as the last one needs */
		snprintf(p, sizeof p, "%s/pg-%0*d.pgm", dir, pages >= 10 ? 2 : 1, i);
		img = gl_test_read_file(p, &len);
		assert_int_equal(sscanf(img, "P5 %d %d %d%n", &w, &h, &maxv, &off), 3);
		off++; /* the single whitespace after maxval */
		assert_true((size_t)off + (size_t)w * (size_t)h <= len);
		for (int k = 0; k < w * h; k++)
			if ((unsigned char)img[off + k] < 200)
				dark++;
		assert_true(dark > 20);
		free(img);
		rendered++;
	}
	assert_int_equal(rendered, pages);
	/* its text carries the CSV's totals */
	snprintf(cmd, sizeof cmd, "pdftotext -layout '%s/showback-" PH_MONTH "-team.pdf' -", dir);
	txt = run_capture(cmd);
	fleet_value(PH_MONTH, "total", total, sizeof total);
	fleet_value(PH_MONTH, "allocated_gpu_hours", hours, sizeof hours);
	{
		char want[128], g[96];
		grouped(total, g, sizeof g);
		snprintf(want, sizeof want, "Fleet total: %s USD", g);
		assert_non_null(strstr(txt, want));
		grouped(hours, g, sizeof g);
		snprintf(want, sizeof want, "Allocated GPU-hours: %s", g);
		assert_non_null(strstr(txt, want));
	}
	{
		/* the fleet table on its page: the CSV fleet table's rows, the same values */
		static const char *const fl[][2] = {{"Allocated GPU-h", "allocated_gpu_hours"},
						    {"Fleet total", "total"},
						    {"Allocation cost", "allocation_cost"}};
		for (size_t i = 0; i < sizeof fl / sizeof fl[0]; i++) {
			char v[64], *at = strstr(txt, fl[i][0]), *eol, g[96];
			fleet_value(PH_MONTH, fl[i][1], g, sizeof g);
			grouped(g, v, sizeof v);
			assert_non_null(at);
			eol = strchr(at, '\n');
			assert_non_null(eol);
			*eol = '\0';
			assert_non_null(strstr(at, v));
			*eol = '\n';
		}
	}
	get_csv("month=" PH_MONTH, &own);
	{
		int tc = csv_col(&own, "total");
		for (size_t r = 1; r < own.nrows && r < 10; r++) {
			char g[96];
			grouped(own.cell[r][tc], g, sizeof g);
			assert_non_null(strstr(txt, g));
		}
	}
	gl_test_csv_free(&own);
	free(txt);
}

/* The PDF's layout, read back with pdftotext -bbox: no word runs into the
 * right margin (the owners' twelve columns ended 20 pt into it), column
 * headings keep their size (Budget % was shrunk to about 3 pt to fit), and a
 * table with no row says why (the idle top 20 of a month without exporter
 * data was a bare heading). */
static void test_pdf_layout(void **state)
{
	char dir[PATH_MAX + 8], cmd[4 * PATH_MAX];
	char *html, *at;
	int words = 0, heads = 0;
	snprintf(dir, sizeof dir, "%s/pdflayout", g_tmp);
	assert_int_equal(run_cli(dir, PH_MONTH, "pdf"), 0);
	snprintf(cmd, sizeof cmd, "pdftotext -bbox '%s/showback-" PH_MONTH "-team.pdf' -", dir);
	html = run_capture(cmd);
	for (at = strstr(html, "<word "); at; at = strstr(at + 1, "<word ")) {
		double x0, y0, x1, y1;
		char w[64] = "";
		assert_int_equal(sscanf(at, "<word xMin=\"%lf\" yMin=\"%lf\" xMax=\"%lf\" yMax=\"%lf\">%63[^<]", &x0, &y0, &x1,
					&y1, w),
				 5);
		words++;
		/* A4 is 595 pt wide and the margins 42 pt */
		if (x1 > 595.0 - 42.0 + 0.5)
			fail_msg("'%s' ends at %.1f pt, in the right margin (553 pt)", w, x1);
		if (!strcmp(w, "Budget") || !strcmp(w, "Change")) {
			heads++;
			if (y1 - y0 < 6.0)
				fail_msg("heading '%s' is %.1f pt tall: shrunk", w, y1 - y0);
		}
	}
	assert_true(words > 200);
	assert_int_equal(heads, 2);
	free(html);
	snprintf(cmd, sizeof cmd, "pdftotext -layout '%s/showback-" PH_MONTH "-team.pdf' -", dir);
	html = run_capture(cmd);
	/* the Philly month has no exporter data */
	at = strstr(html, "Top 20 jobs by idle cost");
	assert_non_null(at);
	assert_non_null(strstr(at, "Unknown: no exporter data (dcgm-exporter) for this month's jobs."));
	free(html);
}

/* A word of pdftotext -bbox, its entities decoded. */
struct pword {
	int page;
	double x0, y0, x1, y1;
	char t[128];
};

static size_t pdf_words(const char *bbox, struct pword **out)
{
	size_t n = 0, cap = 1024;
	int page = 0;
	struct pword *w = malloc(cap * sizeof *w);
	for (const char *at = bbox; (at = strchr(at, '<')); at++) {
		char raw[256] = "";
		struct pword *p;
		if (!strncmp(at, "<page ", 6)) {
			page++;
			continue;
		}
		if (strncmp(at, "<word ", 6))
			continue;
		if (n == cap)
			w = realloc(w, (cap *= 2) * sizeof *w);
		p = &w[n];
		assert_int_equal(sscanf(at, "<word xMin=\"%lf\" yMin=\"%lf\" xMax=\"%lf\" yMax=\"%lf\">%255[^<]", &p->x0, &p->y0,
					&p->x1, &p->y1, raw),
				 5);
		p->page = page;
		{
			size_t o = 0;
			static const char *const ent[][2] = {{"&amp;", "&"}, {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""},
							     {"&apos;", "'"}, {"&#39;", "'"}};
			for (const char *r = raw; *r && o + 1 < sizeof p->t;) {
				size_t e = 0;
				while (e < 6 && strncmp(r, ent[e][0], strlen(ent[e][0])))
					e++;
				if (e < 6) {
					p->t[o++] = ent[e][1][0];
					r += strlen(ent[e][0]);
				} else
					p->t[o++] = *r++;
			}
			p->t[o] = '\0';
		}
		n++;
	}
	*out = w;
	return n;
}

/* Whether name (spaces ignored) is drawn whole: from a word that starts
 * it, the following pieces are on the same line just after it or on the
 * next line at the same left edge (a wrapped cell). */
static int name_whole(const struct pword *w, size_t n, const char *name)
{
	char want[256];
	size_t k = 0;
	for (const char *c = name; *c && k + 1 < sizeof want; c++)
		if (*c != ' ')
			want[k++] = *c;
	want[k] = '\0';
	for (size_t i = 0; i < n; i++) {
		size_t got = strlen(w[i].t), cur = i;
		double left = w[i].x0;
		if (strncmp(want, w[i].t, got))
			continue;
		while (got < k) {
			size_t j, l = 0;
			for (j = 0; j < n; j++) {
				int same_line = fabs(w[j].y0 - w[cur].y0) < 0.5 && w[j].x0 > w[cur].x1 && w[j].x0 - w[cur].x1 < 4;
				int next_line = fabs(w[j].x0 - left) < 1 && w[j].y0 > w[cur].y0 && w[j].y0 - w[cur].y0 < 12;
				l = strlen(w[j].t);
				if (w[j].page == w[cur].page && (same_line || next_line) && !strncmp(want + got, w[j].t, l))
					break;
			}
			if (j == n)
				break;
			got += l;
			cur = j;
		}
		if (got == k)
			return 1;
	}
	return 0;
}

/* The test's own h/min: minutes rounded, "327 h 08 min". */
static void wait_hmin(long long s, char *b, size_t n)
{
	long long m = (s + 30) / 60;
	if (s < 60)
		snprintf(b, n, "%lld s", s);
	else if (m < 60)
		snprintf(b, n, "%lld min", m);
	else
		snprintf(b, n, "%lld h %02lld min", m / 60, m % 60);
}

/* The PDF finance reads (issue 28): columns no narrower than the layout's
 * minimum, every owner's name whole (wrapped, never "foundatio…"), figures
 * with thousands separators, waits in h/min, whole GPU counts as integers,
 * the daily chart's value axis labelled with round ticks, the busy/idle
 * chart replaced by a sentence for a month with no exporter data. */
static void test_pdf_finance_readable(void **state)
{
	char dir[PATH_MAX + 8], cmd[4 * PATH_MAX], total[64], want[160], g[96];
	char *txt, *bbox;
	struct pword *w;
	size_t n;
	struct gl_test_csv own, waits, top, daily;
	snprintf(dir, sizeof dir, "%s/pdffin", g_tmp);
	assert_int_equal(run_cli(dir, PH_MONTH, "pdf"), 0);
	snprintf(cmd, sizeof cmd, "pdftotext -layout '%s/showback-" PH_MONTH "-team.pdf' -", dir);
	txt = run_capture(cmd);
	snprintf(cmd, sizeof cmd, "pdftotext -bbox '%s/showback-" PH_MONTH "-team.pdf' -", dir);
	bbox = run_capture(cmd);
	n = pdf_words(bbox, &w);
	assert_true(n > 300);

	/* separators: the fleet total (six digits before the point) grouped */
	fleet_value(PH_MONTH, "total", total, sizeof total);
	assert_true(strchr(total, '.') - total >= 4);
	grouped(total, g, sizeof g);
	snprintf(want, sizeof want, "Fleet total: %s USD", g);
	assert_non_null(strstr(txt, want));
	assert_null(strstr(strstr(txt, want) + 1, want)); /* one fleet total, one name */
	assert_null(strstr(txt, "Total (owners and __idle__)"));

	/* no text set smaller to fit, no cut label */
	for (size_t i = 0; i < n; i++)
		if (w[i].y1 - w[i].y0 < 5.5)
			fail_msg("'%s' is %.1f pt tall: shrunk to fit", w[i].t, w[i].y1 - w[i].y0);
	assert_null(strstr(txt, "…"));
	get_csv("month=" PH_MONTH, &own);
	{
		int oc = csv_col(&own, "owner");
		for (size_t r = 1; r < own.nrows; r++) {
			const char *name = own.cell[r][oc][0] == '\'' ? own.cell[r][oc] + 1 : own.cell[r][oc];
			if (!name_whole(w, n, name))
				fail_msg("owner '%s' is not drawn whole", name);
		}
	}
	gl_test_csv_free(&own);

	/* the owners table: each column's right edge at least 28 pt (the
	 * layout's min_column_width) from the previous one, on the first line
	 * of its heading (a heading's words closer than 3 pt are one cell) */
	{
		size_t h = 0;
		double y = -1, edges[32];
		int ne = 0;
		while (h < n && !(strcmp(w[h].t, "Owners") == 0 && h + 1 < n && strcmp(w[h + 1].t, "Owner") == 0))
			h++;
		assert_true(h < n);
		y = w[h + 1].y0;
		/* the heading's later lines come between in reading order */
		for (size_t i = h + 1, last = 0; i < n && i < h + 60; i++) {
			if (fabs(w[i].y0 - y) >= 0.5)
				continue;
			if (ne && w[i].x0 - w[last].x1 < 3)
				edges[ne - 1] = w[i].x1;
			else if (ne < 32)
				edges[ne++] = w[i].x1;
			last = i;
		}
		assert_true(ne >= 6);
		for (int i = 1; i < ne; i++)
			if (edges[i] - edges[i - 1] < 28)
				fail_msg("owners column %d is %.1f pt wide", i, edges[i] - edges[i - 1]);
	}

	/* waits in h/min, as the test computes them from the CSV's seconds */
	get_csv("month=" PH_MONTH "&table=waits", &waits);
	assert_true(waits.nrows > 1);
	assert_null(strstr(txt, "p99 s"));
	for (size_t r = 1; r < waits.nrows; r++) {
		wait_hmin(atoll(waits.cell[r][csv_col(&waits, "wait_p99_s")]), g, sizeof g);
		if (!strstr(txt, g))
			fail_msg("p99 wait '%s' (%s s) not in the PDF", g, waits.cell[r][csv_col(&waits, "wait_p99_s")]);
	}
	gl_test_csv_free(&waits);

	/* GPUs of the top jobs: "8", not "8.000", right after the job's state
	 * on the line of its rank and id */
	get_csv("month=" PH_MONTH "&table=top_cost", &top);
	assert_true(top.nrows > 5);
	for (size_t r = 1; r < top.nrows; r++) {
		const char *gpus = top.cell[r][csv_col(&top, "gpus")], *st = top.cell[r][csv_col(&top, "state")];
		const char *id = top.cell[r][csv_col(&top, "job_id")];
		char rank[16];
		int found = 0;
		snprintf(rank, sizeof rank, "%zu", r);
		for (char *line = txt; line && *line && !found; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
			char copy[1024], *tok[64], *save = NULL;
			size_t len = strcspn(line, "\n"), nt = 0;
			if (len >= sizeof copy)
				continue;
			memcpy(copy, line, len);
			copy[len] = '\0';
			for (char *t = strtok_r(copy, " ", &save); t && nt < 64; t = strtok_r(NULL, " ", &save))
				tok[nt++] = t;
			if (nt < 6 || strcmp(tok[0], rank) || strcmp(tok[1], id))
				continue;
			for (size_t k = 2; k + 1 < nt; k++)
				if (!strcmp(tok[k], st)) {
					char whole[32];
					snprintf(whole, sizeof whole, "%.*s", (int)strcspn(gpus, "."), gpus);
					assert_string_equal(tok[k + 1], strstr(gpus, ".000") ? whole : gpus);
					found = 1;
					break;
				}
		}
		if (!found)
			fail_msg("top job %s (rank %s) not found on one line", id, rank);
	}
	gl_test_csv_free(&top);

	/* the daily chart's value axis: labels right-aligned left of the plot
	 * (ending by 82 pt), round, evenly spaced from 0 to at least the
	 * busiest day's GPU-hours (summed here from the daily CSV) */
	get_csv("month=" PH_MONTH "&table=daily", &daily);
	{
		double day_h[32] = {0}, busiest = 0;
		long long ticks[16], step, m;
		int nt = 0, page;
		size_t h = 0;
		int dc = csv_col(&daily, "day"), hc = csv_col(&daily, "gpu_hours");
		for (size_t r = 1; r < daily.nrows; r++) {
			int d = atoi(daily.cell[r][dc] + 8);
			assert_true(d >= 1 && d <= 31);
			day_h[d] += atof(daily.cell[r][hc]);
			busiest = day_h[d] > busiest ? day_h[d] : busiest;
		}
		while (h + 4 < n && !(!strcmp(w[h].t, "GPU-hours") && !strcmp(w[h + 1].t, "by") && !strcmp(w[h + 4].t, "day")))
			h++;
		assert_true(h + 4 < n);
		page = w[h].page;
		for (size_t i = h; i < n && w[i].page == page && nt < 16; i++) {
			char digits[32];
			size_t k = 0;
			if (w[i].x1 > 82)
				continue;
			for (const char *c = w[i].t; *c && k + 1 < sizeof digits; c++)
				if (*c != ',')
					digits[k++] = *c;
			digits[k] = '\0';
			if (k && strspn(digits, "0123456789") == k)
				ticks[nt++] = atoll(digits);
		}
		assert_true(nt >= 3);
		for (int a = 0; a < nt; a++)
			for (int b = a + 1; b < nt; b++)
				if (ticks[b] < ticks[a]) {
					long long t = ticks[a];
					ticks[a] = ticks[b];
					ticks[b] = t;
				}
		assert_int_equal(ticks[0], 0);
		step = m = ticks[1];
		while (m >= 10 && m % 10 == 0)
			m /= 10;
		assert_true(m == 1 || m == 2 || m == 5);
		for (int i = 0; i < nt; i++)
			assert_int_equal(ticks[i], step * i);
		assert_true((double)ticks[nt - 1] >= busiest);
		assert_true((double)ticks[nt - 2] < busiest); /* no empty band on top */
	}
	gl_test_csv_free(&daily);

	/* no exporter data in the Philly month: a sentence, no bars of "no data" */
	{
		char *at = strstr(txt, "Busy and allocated-idle GPU-hours"), *end;
		assert_non_null(at);
		end = strstr(at, "Cost by owner, month over month");
		assert_non_null(end);
		*end = '\0';
		assert_non_null(strstr(at, "No exporter data"));
		assert_null(strstr(at, "no data"));
		*end = 'C';
	}
	free(w);
	free(bbox);
	free(txt);
}

/* The HTML carries the same figures: grouped, waits in h/min, the
 * template from reports/. */
static void test_html_finance_readable(void **state)
{
	char *html, total[64], g[96], want[160];
	struct gl_test_csv waits;
	html = get_body("/v1/reports/showback?month=" PH_MONTH "&format=html", 200, "text/html", NULL);
	fleet_value(PH_MONTH, "total", total, sizeof total);
	grouped(total, g, sizeof g);
	snprintf(want, sizeof want, "<strong class=n id=fleet-total>%s</strong>", g);
	assert_non_null(strstr(html, want));
	assert_non_null(strstr(html, "/* The showback report's HTML look")); /* reports/showback.css, inlined */
	get_csv("month=" PH_MONTH "&table=waits", &waits);
	for (size_t r = 1; r < waits.nrows; r++) {
		char cell[96];
		wait_hmin(atoll(waits.cell[r][csv_col(&waits, "wait_p50_s")]), g, sizeof g);
		snprintf(cell, sizeof cell, "<td class=n>%s</td>", g);
		assert_non_null(strstr(html, cell));
	}
	gl_test_csv_free(&waits);
	assert_non_null(strstr(html, "id=no-usage"));
	{
		/* the top job's GPUs, whole: "<td>COMPLETED</td><td class=n>16</td>" */
		struct gl_test_csv top;
		char cell[160];
		const char *gpus;
		get_csv("month=" PH_MONTH "&table=top_cost", &top);
		gpus = top.cell[1][csv_col(&top, "gpus")];
		assert_non_null(strstr(gpus, ".000"));
		snprintf(cell, sizeof cell, "<td>%s</td><td class=n>%.*s</td>", top.cell[1][csv_col(&top, "state")],
			 (int)strcspn(gpus, "."), gpus);
		assert_non_null(strstr(html, cell));
		gl_test_csv_free(&top);
	}
	free(html);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_totals_equal_chargeback),
		cmocka_unit_test(test_pdf_layout),
		cmocka_unit_test(test_gpu_seconds_from_philly_json),
		cmocka_unit_test(test_top_jobs_from_philly_json),
		cmocka_unit_test(test_failed_waste_and_waits_from_philly_json),
		cmocka_unit_test(test_ingestion_gaps_without_runs),
		cmocka_unit_test(test_top_jobs_owner_by_label_rule),
		cmocka_unit_test(test_zip_bundles_every_table),
		cmocka_unit_test(test_exporter_usage_and_energy),
		cmocka_unit_test(test_bad_months),
		cmocka_unit_test(test_formats_and_headers),
		cmocka_unit_test(test_regenerate_closed_month_byte_identical),
		cmocka_unit_test(test_hostile_names),
		cmocka_unit_test(test_pdf_pages_and_text),
		cmocka_unit_test(test_pdf_finance_readable),
		cmocka_unit_test(test_html_finance_readable),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
