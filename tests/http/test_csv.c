/* format=csv on the table endpoints over real HTTP, against a real
 * PostgreSQL loaded with the real Slurm testbed output (sacct for jobs and
 * chargeback; the node testbed's scontrol snapshots and sacctmgr events of
 * the same cluster, an hour later, for capacity, inventory and idle capacity;
 * hand-written exporter samples for one job, for allocated idle time). Each CSV is read back with the small RFC 4180
 * reader below and compared, cell by cell, with the JSON of the same request;
 * an owner name built to be a spreadsheet formula comes out quoted and
 * guarded; unknown format/table values are 400 naming the parameter. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TB "tests/fixtures/sacct/testbed/"
#define NB "tests/fixtures/nodes/testbed/"
#define WIN "window=2026-11-22T16:00:00Z,2026-11-22T17:00:00Z"
#define NWIN "window=2026-11-22T17:00:00Z,2026-11-22T19:00:00Z"
#define EVIL "=HYPERLINK(\"x\"),evil"

static char g_dsn[512];
static struct gl_test_daemon g_d;

static const char cost_yaml[] =
	"rates:\n  - model: a100\n    per_gpu_hour: \"2.50\"\n  - model: v100\n    per_gpu_hour: \"1.20\"\n"
	"owners:\n  - match: account\n    value: teamb\n    team: language\n";

/* Column index of name in the header row; fails the test when absent. */
static int col(const struct gl_test_csv *t, const char *name)
{
	int k = gl_test_csv_col(t, name);
	if (k < 0)
		fail_msg("CSV has no column %s", name);
	return k;
}

/* ---- helpers ---- */

static cJSON *get_json(const char *path)
{
	cJSON *j = gl_test_get_json(g_d.port, path, 200);
	assert_non_null(j);
	return j;
}

/* GET path as CSV: checks the status, the headers and that every record has
 * as many cells as the header; parses into t. */
static void get_csv(const char *path, const char *filename, struct gl_test_csv *t)
{
	struct gl_test_http r;
	char disp[128];
	assert_int_equal(gl_test_http(g_d.port, "GET", path, NULL, 0, NULL, &r), 0);
	if (r.status != 200)
		fprintf(stderr, "%s: %ld %s\n", path, r.status, r.body);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.headers, "Content-Type: text/csv; charset=utf-8\r\n"));
	snprintf(disp, sizeof disp, "Content-Disposition: attachment; filename=\"%s\"\r\n", filename);
	assert_non_null(strstr(r.headers, disp));
	assert_int_equal(gl_test_csv_parse(r.body, t), 0);
	gl_test_http_fini(&r);
	assert_true(t->nrows >= 1);
	for (size_t i = 1; i < t->nrows; i++)
		assert_int_equal(t->ncols[i], t->ncols[0]);
}

/* A JSON value as the CSV cell it should be: strings as they are, numbers
 * in the shortest form, null empty. */
static void expect_cell(const cJSON *v, const char *cell, const char *what)
{
	if (!v || cJSON_IsNull(v)) {
		if (*cell)
			fail_msg("%s: want an empty cell, got '%s'", what, cell);
	} else if (cJSON_IsString(v)) {
		if (strcmp(v->valuestring, cell))
			fail_msg("%s: want '%s', got '%s'", what, v->valuestring, cell);
	} else if (cJSON_IsNumber(v)) {
		char *end;
		double d = strtod(cell, &end);
		if (!*cell || *end || fabs(d - v->valuedouble) > 1e-6 * fmax(1, fabs(d)))
			fail_msg("%s: want %.17g, got '%s'", what, v->valuedouble, cell);
	} else {
		fail_msg("%s: unexpected JSON type", what);
	}
}

/* Micro-units as currency with 2 decimals, half away from zero (positive here). */
static void money(const cJSON *v, char *buf, size_t n)
{
	long long m;
	if (!v || cJSON_IsNull(v)) {
		buf[0] = '\0';
		return;
	}
	m = (long long)v->valuedouble;
	m = (m + 5000) / 10000;
	snprintf(buf, n, "%lld.%02lld", m / 100, m % 100);
}

static void expect_money(const cJSON *v, const char *cell, const char *what)
{
	char want[48];
	money(v, want, sizeof want);
	if (strcmp(want, cell))
		fail_msg("%s: want money '%s', got '%s'", what, want, cell);
}

/* Every listed key of every object of arr against the same-named column of
 * t, row by row; money keys ("*_cost_micros" / "cost_micros") go to the
 * column named without "_micros" in currency units. */
static void compare_table(const cJSON *arr, const struct gl_test_csv *t, const char *const *keys)
{
	assert_int_equal(cJSON_GetArraySize(arr), t->nrows - 1);
	for (size_t i = 1; i < t->nrows; i++) {
		const cJSON *o = cJSON_GetArrayItem(arr, (int)i - 1);
		for (size_t k = 0; keys[k]; k++) {
			const char *key = keys[k], *m = strstr(key, "cost_micros");
			char what[128];
			snprintf(what, sizeof what, "row %zu %s", i, key);
			if (m) {
				char name[64];
				snprintf(name, sizeof name, "%.*scost", (int)(m - key), key);
				expect_money(cJSON_GetObjectItem(o, key), t->cell[i][col(t, name)], what);
			} else {
				expect_cell(cJSON_GetObjectItem(o, key), t->cell[i][col(t, key)], what);
			}
		}
	}
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int run_ok(const char *const *argv)
{
	struct gl_test_out o;
	int rc = gl_test_run(g_dsn, NULL, &o, argv[0], argv[1], argv[2], argv[3], argv[4], argv[5], argv[6], argv[7],
			     argv[8], argv[9], argv[10], argv[11], argv[12]);
	if (rc || o.status)
		fprintf(stderr, "gpuledger %s %s: %d %s\n", argv[0], argv[1], o.status, o.err ? o.err : "");
	rc = rc || o.status;
	gl_test_out_fini(&o);
	return rc ? -1 : 0;
}

static void read_line(const char *path, char *out, size_t n)
{
	char *s = gl_test_read_file(gl_test_fixture(path), NULL);
	snprintf(out, n, "%.*s", (int)strcspn(s, "\r\n"), s);
	free(s);
}

static int setup(void **state)
{
	char fields[1024], at0[64], at1[64], rates[PATH_MAX];
	const char *tmp = getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp";
	if (gl_test_db_fresh("gl_test_csv", g_dsn, sizeof g_dsn) || gl_test_sacct_fields(fields, sizeof fields))
		return -1;
	read_line(NB "start_taken_at.txt", at0, sizeof at0 - 1);
	read_line(NB "end_taken_at.txt", at1, sizeof at1 - 1);
	strcat(at0, "Z");
	strcat(at1, "Z");
	snprintf(rates, sizeof rates, "%s/csv-rates.yaml", tmp);
	write_file(rates, cost_yaml);
	if (run_ok((const char *[]){"ingest", "sacct", "--cluster", "testgpu", "--file", TB "sacct_alloc.txt",
				    "--fields", fields, NULL, NULL, NULL, NULL, NULL}) ||
	    run_ok((const char *[]){"ingest", "slurm-nodes", "--cluster", "testgpu", "--nodes",
				    NB "start_scontrol_show_node.txt", "--at", at0, NULL, NULL, NULL, NULL, NULL}) ||
	    run_ok((const char *[]){"ingest", "slurm-nodes", "--cluster", "testgpu", "--nodes",
				    NB "end_scontrol_show_node.txt", "--events", NB "sacctmgr_events.txt",
				    "--reservations", NB "sacctmgr_reservations.txt", "--at", at1, NULL}) ||
	    run_ok((const char *[]){"rates", "load", rates, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL}))
		return -1;
	/* exporter samples for job 4 (4 a100 on gpu02, 16:03:57-16:04:57): two of
	 * its GPUs idle, so /v1/idle has allocated idle time and a top job */
	{
		char prom[PATH_MAX], text[2048] = "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n";
		static const char *const at[] = {"2026-11-22T16:04:00Z", "2026-11-22T16:04:30Z", "2026-11-22T16:04:55Z"};
		for (int g = 0; g < 4; g++)
			snprintf(text + strlen(text), sizeof text - strlen(text),
				 "DCGM_FI_DEV_GPU_UTIL{gpu=\"%d\",UUID=\"GPU-csv-%d\",modelName=\"NVIDIA A100-SXM4-80GB\","
				 "Hostname=\"gpu02\",hpc_job=\"4\"} %d\n",
				 g, g, g < 2 ? 0 : 60);
		snprintf(prom, sizeof prom, "%s/csv-dcgm.prom", tmp);
		write_file(prom, text);
		for (size_t i = 0; i < 3; i++)
			if (run_ok((const char *[]){"ingest", "dcgm", "--cluster", "testgpu", "--file", prom, "--at", at[i],
						    NULL, NULL, NULL, NULL, NULL}))
				return -1;
	}
	return gl_test_daemon_start(&g_d, g_dsn, NULL, (const char *[]){"--no-ingest", NULL});
}

/* the other-currency daemons of test_currency_minor_units: stopped here
 * too, so a failed assertion there leaves no server running */
static struct gl_test_daemon g_cur[2];

static int teardown(void **state)
{
	for (size_t i = 0; i < 2; i++)
		if (g_cur[i].pid > 0)
			gl_test_daemon_stop(&g_cur[i]);
	return gl_test_daemon_stop(&g_d) == 0 ? 0 : -1;
}

/* ---- tests ---- */

static void test_jobs(void **state)
{
	static const char *const keys[] = {"cluster", "key", "job_id", "name", "user", "account", "partition",
					   "qos", "namespace", "state", "submit", "start", "end", "elapsed_s", "gpus",
					   "gpu_type", "queue_wait_s", "node_list", "gpus_requested", "gpu_seconds",
					   "cost_micros", "busy_gpu_seconds", "idle_in_allocation_gpu_seconds",
					   "held_idle_gpu_seconds", NULL};
	struct gl_test_csv t;
	struct gl_test_http r;
	cJSON *j = get_json("/v1/jobs?" WIN "&cluster=testgpu&limit=1000");
	long long gs = 0;
	get_csv("/v1/jobs?" WIN "&cluster=testgpu&limit=1000&format=csv", "jobs.csv", &t);
	assert_true(t.nrows > 10);
	compare_table(cJSON_GetObjectItem(j, "jobs"), &t, keys);
	for (size_t i = 1; i < t.nrows; i++)
		gs += atoll(t.cell[i][col(&t, "gpu_seconds")]);
	/* the testbed's hour: 1002 GPU-seconds (sreport's figure, test_chargeback.c) */
	assert_int_equal(gs, 1002);
	cJSON_Delete(j);
	gl_test_csv_free(&t);

	/* without a window: no per-window columns; a full page names the next cursor */
	get_csv("/v1/jobs?cluster=testgpu&limit=3&format=csv", "jobs.csv", &t);
	assert_int_equal(t.nrows, 4);
	assert_int_equal(t.ncols[0], 19);
	gl_test_csv_free(&t);
	j = get_json("/v1/jobs?cluster=testgpu&limit=3");
	assert_int_equal(gl_test_http(g_d.port, "GET", "/v1/jobs?cluster=testgpu&limit=3&format=csv", NULL, 0, NULL, &r), 0);
	{
		char want[64];
		snprintf(want, sizeof want, "X-Next-Cursor: %.0f\r\n",
			 cJSON_GetObjectItem(j, "next_cursor")->valuedouble);
		assert_non_null(strstr(r.headers, want));
	}
	gl_test_http_fini(&r);
	cJSON_Delete(j);
}

static void test_ingest_runs(void **state)
{
	static const char *const keys[] = {"run_id", "source", "cluster", "input", "started", "finished", "status",
					   "lines_read", "inserted", "updated", "unchanged", "skipped", "ignored",
					   "error", NULL};
	struct gl_test_csv t;
	cJSON *j = get_json("/v1/ingest/runs");
	cJSON *runs = cJSON_GetObjectItem(j, "runs");
	get_csv("/v1/ingest/runs?format=csv", "ingest_runs.csv", &t);
	/* one sacct run, two node snapshots, three exporter scrapes */
	assert_int_equal(t.nrows - 1, 6);
	compare_table(runs, &t, keys);
	/* skip reasons: one JSON object per cell, the same object */
	for (size_t i = 1; i < t.nrows; i++) {
		cJSON *a = cJSON_Parse(t.cell[i][col(&t, "skip_reasons")]);
		assert_non_null(a);
		assert_true(cJSON_Compare(a, cJSON_GetObjectItem(cJSON_GetArrayItem(runs, i - 1), "skip_reasons"), 1));
		cJSON_Delete(a);
	}
	cJSON_Delete(j);
	gl_test_csv_free(&t);
}

/* The audit page as CSV: the same rows as the JSON page at the same
 * cursor (rows below a cursor never change: the log is append-only). */
static void test_audit(void **state)
{
	static const char *const keys[] = {"seq", "at", "actor", "source_addr", "action", "object", "outcome",
					   "prev_hash", "hash", NULL};
	char path[128];
	struct gl_test_csv t;
	cJSON *j = get_json("/v1/audit?limit=1"), *entries;
	long long top = (long long)cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "entries"), 0),
						      "seq")->valuedouble;
	(void)state;
	cJSON_Delete(j);
	snprintf(path, sizeof path, "/v1/audit?limit=40&cursor=%lld", top + 1);
	j = get_json(path);
	entries = cJSON_GetObjectItem(j, "entries");
	assert_true(cJSON_GetArraySize(entries) > 5);
	snprintf(path, sizeof path, "/v1/audit?limit=40&cursor=%lld&format=csv", top + 1);
	get_csv(path, "audit.csv", &t);
	compare_table(entries, &t, keys);
	/* detail: one JSON object per cell, the same object */
	for (size_t i = 1; i < t.nrows; i++) {
		cJSON *a = cJSON_Parse(t.cell[i][col(&t, "detail")]);
		assert_non_null(a);
		assert_true(cJSON_Compare(a, cJSON_GetObjectItem(cJSON_GetArrayItem(entries, i - 1), "detail"), 1));
		cJSON_Delete(a);
	}
	cJSON_Delete(j);
	gl_test_csv_free(&t);
}

static void test_idle_tables(void **state)
{
	static const char *const owner_keys[] = {"idle_gpu_seconds", "busy_gpu_seconds", "observed_gpu_seconds",
						 "idle_cost_micros", "unpriced_jobs", "held_idle_gpu_seconds", NULL};
	static const char *const top_keys[] = {"cluster", "job_id", "owner", "user", "gpus", "gpu_model", "state",
					       "idle_gpu_seconds", "busy_gpu_seconds", "idle_cost_micros", "from", "to",
					       "held_idle_gpu_seconds", NULL};
	static const char *const fleet_keys[] = {"cluster", "partition", "gpu_model", "reported_gpu_seconds",
						 "unavailable_gpu_seconds", "allocated_gpu_seconds", "idle_gpu_seconds",
						 "overallocated_gpu_seconds", "idle_cost_micros", NULL};
	struct gl_test_csv t;
	cJSON *j = get_json("/v1/idle?" WIN "&aggregate=account");
	cJSON *arr = cJSON_GetObjectItem(j, "allocated_idle"), *it;
	double idle = 0;

	/* default table: allocated idle per owner, the key column named by the dimension */
	get_csv("/v1/idle?" WIN "&aggregate=account&format=csv", "idle_allocated.csv", &t);
	assert_int_equal(t.nrows, 2);
	compare_table(arr, &t, owner_keys);
	for (size_t i = 1; i < t.nrows; i++)
		expect_cell(cJSON_GetObjectItem(cJSON_GetArrayItem(arr, i - 1), "key"), t.cell[i][col(&t, "account")],
			    "account");
	gl_test_csv_free(&t);
	get_csv("/v1/idle?" WIN "&aggregate=account&format=csv&table=top_jobs", "idle_top_jobs.csv", &t);
	assert_int_equal(t.nrows, 2);
	compare_table(cJSON_GetObjectItem(j, "top_jobs"), &t, top_keys);
	/* job 4: two of its four GPUs idle and two 60 % busy for 55 s: 110 +
	 * 2 x 55 x 0.4 idle GPU-seconds (the busy share, sql/048), priced at
	 * the a100 rate: 154 / 240 of its 0.1667 */
	assert_string_equal(t.cell[1][col(&t, "job_id")], "4");
	assert_string_equal(t.cell[1][col(&t, "idle_gpu_seconds")], "154");
	assert_string_equal(t.cell[1][col(&t, "idle_cost")], "0.11");
	gl_test_csv_free(&t);
	cJSON_Delete(j);
	j = get_json("/v1/idle?" NWIN "&aggregate=account");
	get_csv("/v1/idle?" NWIN "&aggregate=account&format=csv&table=unallocated", "idle_unallocated.csv", &t);
	arr = cJSON_GetObjectItem(j, "unallocated_idle");
	/* the node testbed has capacity: the table is not empty */
	assert_true(cJSON_GetArraySize(arr) > 0);
	compare_table(arr, &t, fleet_keys);
	cJSON_ArrayForEach(it, arr) idle += cJSON_GetObjectItem(it, "idle_gpu_seconds")->valuedouble;
	assert_true(idle > 0);
	gl_test_csv_free(&t);
	cJSON_Delete(j);
}

static void test_capacity(void **state)
{
	static const char *const keys[] = {"start", "end", "cluster", "gpu_model", "reported_gpu_seconds",
					   "allocated_gpu_seconds", "down_gpu_seconds", "planned_down_gpu_seconds",
					   "reserved_gpu_seconds", "idle_gpu_seconds", "over_gpu_seconds", "saturation",
					   NULL};
	struct gl_test_csv t;
	cJSON *j = get_json("/v1/capacity?" NWIN "&step=hour&aggregate=gpu_model&cluster=testgpu");
	get_csv("/v1/capacity?" NWIN "&step=hour&aggregate=gpu_model&cluster=testgpu&format=csv", "capacity.csv", &t);
	assert_true(t.nrows > 2);
	compare_table(cJSON_GetObjectItem(j, "rows"), &t, keys);
	gl_test_csv_free(&t);
	cJSON_Delete(j);
}

/* The queue table: every field of a JSON item is a CSV column with the same
 * value (the key under the dimension's name); gpus_started was left out. */
static void test_queue(void **state)
{
	struct gl_test_csv t;
	cJSON *j = get_json("/v1/queue?window=2026-11-22&aggregate=partition"), *it;
	size_t row = 1, fields = 0;
	get_csv("/v1/queue?window=2026-11-22&aggregate=partition&format=csv", "queue.csv", &t);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "items")), t.nrows - 1);
	assert_true(t.nrows > 1);
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(j, "items"))
	{
		const cJSON *f;
		cJSON_ArrayForEach(f, it)
		{
			char what[96];
			snprintf(what, sizeof what, "row %zu %s", row, f->string);
			expect_cell(f, t.cell[row][col(&t, strcmp(f->string, "key") ? f->string : "partition")], what);
			fields++;
		}
		row++;
	}
	/* key, jobs, 5 waits, eligible p50, gpus_started per row */
	assert_int_equal(fields, (t.nrows - 1) * 9);
	assert_true(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "items"), 0), "gpus_started") != NULL);
	gl_test_csv_free(&t);
	cJSON_Delete(j);
}

static void test_inventory(void **state)
{
	struct gl_test_csv t;
	cJSON *j = get_json("/v1/inventory?cluster=testgpu"), *n;
	int want_rows = 0, row = 1;
	get_csv("/v1/inventory?cluster=testgpu&format=csv", "inventory.csv", &t);
	cJSON_ArrayForEach(n, cJSON_GetObjectItem(j, "nodes"))
	{
		cJSON *gpus = cJSON_GetObjectItem(n, "gpus"), *g;
		int ng = cJSON_GetArraySize(gpus);
		want_rows += ng ? ng : 1;
		if (!ng) {
			expect_cell(cJSON_GetObjectItem(n, "node"), t.cell[row][col(&t, "node")], "node");
			assert_string_equal(t.cell[row++][col(&t, "gpus")], "");
			continue;
		}
		cJSON_ArrayForEach(g, gpus)
		{
			expect_cell(cJSON_GetObjectItem(n, "cluster"), t.cell[row][col(&t, "cluster")], "cluster");
			expect_cell(cJSON_GetObjectItem(n, "node"), t.cell[row][col(&t, "node")], "node");
			expect_cell(cJSON_GetObjectItem(n, "partitions"), t.cell[row][col(&t, "partitions")], "partitions");
			expect_cell(cJSON_GetObjectItem(n, "state"), t.cell[row][col(&t, "state")], "state");
			expect_cell(cJSON_GetObjectItem(g, "model"), t.cell[row][col(&t, "gpu_model")], "gpu_model");
			expect_cell(cJSON_GetObjectItem(g, "gpus"), t.cell[row][col(&t, "gpus")], "gpus");
			expect_cell(cJSON_GetObjectItem(g, "mig_instances"), t.cell[row][col(&t, "mig_instances")], "mig");
			expect_cell(cJSON_GetObjectItem(g, "since"), t.cell[row][col(&t, "since")], "since");
			row++;
		}
	}
	assert_true(want_rows > 0);
	assert_int_equal(t.nrows - 1, want_rows);
	gl_test_csv_free(&t);
	cJSON_Delete(j);
}

/* An owner name that a spreadsheet would run: quoted (it has a comma and
 * quotes) and guarded with a leading single quote, in the chargeback CSV. */
static void test_formula_guard(void **state)
{
	char rates[PATH_MAX], yaml[512];
	const char *tmp = getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp";
	struct gl_test_http r;
	struct gl_test_csv t;
	cJSON *j, *it;
	int found = 0;
	snprintf(yaml, sizeof yaml, "%s  - match: account\n    value: teama\n    team: '%s'\n", cost_yaml, EVIL);
	snprintf(rates, sizeof rates, "%s/csv-rates-evil.yaml", tmp);
	write_file(rates, yaml);
	assert_int_equal(run_ok((const char *[]){"rates", "load", rates, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
						 NULL, NULL, NULL}),
			 0);
	assert_int_equal(gl_test_http(g_d.port, "GET", "/v1/chargeback?" WIN "&aggregate=team&format=csv", NULL, 0,
				      NULL, &r),
			 0);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.headers, "Content-Disposition: attachment; filename=\"chargeback.csv\""));
	/* on the wire: quoted, quotes doubled, the formula behind a quote */
	assert_non_null(strstr(r.body, ",\"'=HYPERLINK(\"\"x\"\"),evil\","));
	assert_int_equal(gl_test_csv_parse(r.body, &t), 0);
	gl_test_http_fini(&r);
	j = get_json("/v1/chargeback?" WIN "&aggregate=team");
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "steps"), 0), "items"))
	{
		if (strcmp(cJSON_GetObjectItem(it, "name")->valuestring, EVIL))
			continue;
		for (size_t i = 1; i < t.nrows; i++) {
			if (strcmp(t.cell[i][col(&t, "team")], "'" EVIL))
				continue;
			found = 1;
			expect_cell(cJSON_GetObjectItem(it, "allocated_gpu_seconds"),
				    t.cell[i][col(&t, "allocated_gpu_seconds")], "allocated");
			expect_money(cJSON_GetObjectItem(it, "cost_micros"), t.cell[i][col(&t, "cost")], "cost");
		}
	}
	assert_true(found);
	gl_test_csv_free(&t);
	cJSON_Delete(j);
}

static void expect_400(const char *path, const char *param)
{
	cJSON *j = gl_test_get_json(g_d.port, path, 400), *e;
	assert_non_null(j);
	e = cJSON_GetObjectItem(j, "error");
	assert_string_equal(cJSON_GetObjectItem(e, "param")->valuestring, param);
	cJSON_Delete(j);
}

static void test_bad_format(void **state)
{
	expect_400("/v1/jobs?format=xml", "format");
	expect_400("/v1/jobs?format=CSV", "format");
	expect_400("/v1/ingest/runs?format=xlsx", "format");
	expect_400("/v1/idle?format=tsv", "format");
	expect_400("/v1/idle?format=csv&table=everything", "table");
	expect_400("/v1/inventory?format=yaml", "format");
	expect_400("/v1/capacity?format=html", "format");
	expect_400("/v1/queue?format=xml", "format");
	expect_400("/v1/chargeback?format=xml", "format");
}

/* Money in the configured currency's ISO 4217 minor units: the same rows
 * served by a daemon whose currency is BHD (3 decimals) and one with JPY
 * (none) show each cost_micros rounded half up to those digits, in JSON
 * and in CSV; the USD daemon shows 2. */
static void fmt_minor(long long micros, int minor, char *buf, size_t n)
{
	long long unit = 1, div = 1, q;
	for (int i = minor; i < 6; i++)
		unit *= 10;
	for (int i = 0; i < minor; i++)
		div *= 10;
	q = (micros + unit / 2) / unit; /* costs are never negative here */
	if (minor)
		snprintf(buf, n, "%lld.%0*lld", q / div, minor, q % div);
	else
		snprintf(buf, n, "%lld", q);
}

static void test_currency_minor_units(void **state)
{
	(void)state;
	static const struct {
		const char *yaml;
		int minor;
	} cur[] = {{"currency: BHD\nrates:\n  - model: a100\n    per_gpu_hour: \"2.50\"\n    currency: BHD\n"
		    "  - model: v100\n    per_gpu_hour: \"1.20\"\n    currency: BHD\n",
		    3},
		   {"currency: JPY\nrates:\n  - model: a100\n    per_gpu_hour: \"2.50\"\n    currency: JPY\n"
		    "  - model: v100\n    per_gpu_hour: \"1.20\"\n    currency: JPY\n",
		    0}};
	char rates[PATH_MAX];
	cJSON *usd = gl_test_get_json(g_d.port, "/v1/chargeback?" WIN "&aggregate=team", 200), *l;
	assert_non_null(usd);
	for (size_t c = 0; c < 2; c++) {
		struct gl_test_daemon *d = &g_cur[c];
		struct gl_test_http r;
		int seen = 0;
		assert_int_equal(gl_test_daemon_start(d, g_dsn, cur[c].yaml, (const char *[]){"--no-ingest", NULL}), 0);
		cJSON *j = gl_test_get_json(d->port, "/v1/chargeback?" WIN "&aggregate=team", 200);
		assert_non_null(j);
		assert_int_equal(gl_test_http(d->port, "GET", "/v1/chargeback?" WIN "&aggregate=team&format=csv", NULL, 0,
					      NULL, &r),
				 0);
		assert_int_equal(r.status, 200);
		cJSON_ArrayForEach(l, cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "steps"), 0), "items"))
		{
			char want[48], csvcell[64];
			long long micros = (long long)cJSON_GetObjectItem(l, "cost_micros")->valuedouble;
			fmt_minor(micros, cur[c].minor, want, sizeof want);
			assert_string_equal(cJSON_GetObjectItem(l, "cost")->valuestring, want);
			/* the CSV row of this owner carries the same string */
			snprintf(csvcell, sizeof csvcell, ",%s,", want);
			assert_non_null(strstr(r.body, csvcell));
			seen += micros > 0;
		}
		assert_true(seen > 0);
		gl_test_http_fini(&r);
		cJSON_Delete(j);
		assert_int_equal(gl_test_daemon_stop(d), 0);
	}
	/* the daemons loaded their rates (same prices, other currencies): put
	 * the USD ones back for whatever runs after */
	snprintf(rates, sizeof rates, "%s/csv-rates.yaml", getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp");
	assert_int_equal(run_ok((const char *[]){"rates", "load", rates, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
						  NULL, NULL}),
			 0);
	/* and USD, 2 */
	cJSON_ArrayForEach(l, cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(usd, "steps"), 0), "items"))
	{
		char want[48];
		fmt_minor((long long)cJSON_GetObjectItem(l, "cost_micros")->valuedouble, 2, want, sizeof want);
		assert_string_equal(cJSON_GetObjectItem(l, "cost")->valuestring, want);
	}
	cJSON_Delete(usd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_jobs),	       cmocka_unit_test(test_ingest_runs), cmocka_unit_test(test_idle_tables),
		cmocka_unit_test(test_capacity),       cmocka_unit_test(test_queue), cmocka_unit_test(test_inventory),   cmocka_unit_test(test_formula_guard),
		cmocka_unit_test(test_bad_format), cmocka_unit_test(test_currency_minor_units),	       cmocka_unit_test(test_audit),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
