/* Capacity from the schedulers against a real PostgreSQL, through the real
 * binary and the real daemon:
 * - the slurm-testbed-nodes run (sacct rows, node dumps, node events and a
 *   maintenance reservation) gives, hour by hour, exactly the Allocated,
 *   Down, PLND Down, Idle and Reported GPU-seconds of the real `sreport
 *   cluster Utilization` files, parsed here; format=sreport prints the same
 *   bytes;
 * - hand-written Kubernetes node documents at four instants (a node
 *   cordoned, one NotReady and back, one removed, one added with MIG): the
 *   capacity intervals follow and the totals equal a computation written here;
 * - conservation in every row, the exporter fallback, conflicts between
 *   sources, and bad input (an empty or older snapshot changes nothing). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/capstore.h"
#include "store/db_int.h"
#include "gl/timeutil.h"
#include "gl/window.h"
#include "lib/testlib.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TB "tests/fixtures/nodes/testbed/"
#define KU "tests/fixtures/nodes/kube/"

static char g_dsn[512], g_tmp[512];
static const char *g_run_dsn = g_dsn; /* the database the CLI runs against */
static PGconn *g_c;
/* sreport's semantics: a node's last state runs to the window's end */
static const struct gl_capacity_observed as_sreport = {-1, 1};
static struct gl_test_daemon g_d;

static int64_t ts(const char *s)
{
	int64_t v;
	if (gl_timeutil_parse(s, strlen(s), &v))
		fail_msg("bad time %s", s);
	return v;
}

static void read_line(const char *path, char *buf, size_t n)
{
	FILE *f = fopen(gl_test_fixture(path), "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, (int)n, f));
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
}

static void run_ok(int want_status, const char *a0, ...)
{
	const char *a[32];
	struct gl_test_out o;
	va_list ap;
	size_t k = 0;
	a[k++] = a0;
	va_start(ap, a0);
	while (k < 31 && (a[k] = va_arg(ap, const char *)) != NULL)
		k++;
	va_end(ap);
	a[k] = NULL;
	assert_int_equal(gl_test_run(g_run_dsn, NULL, &o, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10],
				     a[11], a[12], a[13], NULL),
			 0);
	if (o.status != want_status)
		fprintf(stderr, "gpuledger %s %s: status %d: %s\n", a[0], a[1] ? a[1] : "", o.status, o.err);
	assert_int_equal(o.status, want_status);
	gl_test_out_fini(&o);
}

static void ingest_testbed(const char *dir)
{
	char fields[1024], at0[64], at1[64], p[8][300];
	snprintf(p[0], sizeof p[0], "%ssacct_fields.txt", dir);
	snprintf(p[1], sizeof p[1], "%sstart_taken_at.txt", dir);
	snprintf(p[2], sizeof p[2], "%send_taken_at.txt", dir);
	snprintf(p[3], sizeof p[3], "%ssacct_alloc.txt", dir);
	snprintf(p[4], sizeof p[4], "%sstart_scontrol_show_node.txt", dir);
	snprintf(p[5], sizeof p[5], "%send_scontrol_show_node.txt", dir);
	snprintf(p[6], sizeof p[6], "%ssacctmgr_events.txt", dir);
	snprintf(p[7], sizeof p[7], "%ssacctmgr_reservations.txt", dir);
	read_line(p[0], fields, sizeof fields);
	for (char *c = fields; *c; c++)
		if (*c == '|')
			*c = ',';
	/* the dumps say when they were taken (UTC, no zone) */
	read_line(p[1], at0, sizeof at0);
	read_line(p[2], at1, sizeof at1);
	strcat(at0, "Z");
	strcat(at1, "Z");
	run_ok(0, "ingest", "sacct", "--cluster", "testgpu", "--file", gl_test_fixture(p[3]), "--fields", fields, NULL);
	run_ok(0, "ingest", "slurm-nodes", "--cluster", "testgpu", "--nodes", p[4], "--at", at0, NULL);
	run_ok(0, "ingest", "slurm-nodes", "--cluster", "testgpu", "--nodes", p[5], "--events", p[6], "--reservations",
	       p[7], "--at", at1, NULL);
}

static char g_failflag[600];

static int setup(void **state)
{
	char cwd[400], cfg[2048], fix[600];
	if (gl_test_db_fresh("gl_test_capacity", g_dsn, sizeof g_dsn))
		return -1;
	if (!getcwd(cwd, sizeof cwd))
		return -1;
	g_c = PQconnectdb(g_dsn);
	if (PQstatus(g_c) != CONNECTION_OK)
		return -1;
	PQclear(PQexec(g_c, "SET client_min_messages = warning"));
	snprintf(g_tmp, sizeof g_tmp, "%s", getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp");
	ingest_testbed(TB);
	/* the daemon's own Slurm node source, against a stand-in scontrol/sacctmgr */
	snprintf(fix, sizeof fix, "%s/" TB, cwd);
	snprintf(g_failflag, sizeof g_failflag, "%s/fake-slurm-fail", g_tmp);
	unlink(g_failflag);
	setenv("GL_FAKE_SLURM_FIXTURES", fix, 1);
	setenv("GL_FAKE_SLURM_FAIL", g_failflag, 1);
	snprintf(cfg, sizeof cfg,
		 "log:\n  level: warn\nsources:\n  slurm_nodes:\n    - cluster: fakeslurm\n"
		 "      scontrol: %s/tests/tools/fake-slurm.sh\n      sacctmgr: %s/tests/tools/fake-slurm.sh\n"
		 "      interval_s: 5\n",
		 cwd, cwd);
	return gl_test_daemon_start(&g_d, g_dsn, cfg, NULL);
}

static int teardown(void **state)
{
	int st = gl_test_daemon_stop(&g_d);
	PQfinish(g_c);
	return st == 0 ? 0 : -1;
}

/* ---- sreport ---- */

struct sr_row {
	char tres[64];
	long long v[6]; /* Allocated Down PLND-Down Idle Planned Reported */
};

static size_t read_sreport(const char *path, struct sr_row *rows, size_t max)
{
	FILE *f = fopen(gl_test_fixture(path), "r");
	char line[512];
	size_t n = 0;
	int header = 0;
	assert_non_null(f);
	while (fgets(line, sizeof line, f) && n < max) {
		char *fld[8] = {0};
		int k = 0;
		if (!strchr(line, '|'))
			continue;
		if (!header) {
			header = 1;
			assert_non_null(strstr(line, "Allocated|Down|PLND Down|Idle|Planned|Reported"));
			continue;
		}
		for (char *s = line, *t; k < 8 && (t = strsep(&s, "|\n"));)
			fld[k++] = t;
		assert_true(k >= 8);
		snprintf(rows[n].tres, sizeof rows[n].tres, "%s", fld[1]);
		for (int i = 0; i < 6; i++)
			rows[n].v[i] = atoll(fld[2 + i]);
		n++;
	}
	fclose(f);
	return n;
}

static void check_conservation(const struct gl_capacity_row *r)
{
	assert_int_equal(r->allocated_gpu_seconds + r->down_gpu_seconds + r->planned_down_gpu_seconds +
				 r->reserved_gpu_seconds + r->idle_gpu_seconds,
			 r->reported_gpu_seconds);
	assert_true(r->idle_gpu_seconds >= 0);
}

static void compare_hour_on(PGconn *c, const char *sreport_file, const char *from, const char *now)
{
	struct sr_row want[8];
	size_t nwant = read_sreport(sreport_file, want, 8), nrows = 0;
	struct gl_window w = {ts(from), ts(from) + 3600};
	struct gl_capacity_row *rows = NULL, tot;
	struct gl_err err = {0};
	assert_int_equal(nwant, 3);
	assert_int_equal(gl_capstore_query(gl_db_store(c), &w, 1, GL_CAPACITY_AGG_MODEL, "testgpu", ts(now), &as_sreport, &rows, &nrows, &err), 0);
	memset(&tot, 0, sizeof tot);
	for (size_t i = 0; i < nrows; i++) {
		check_conservation(&rows[i]);
		tot.raw_reported_gpu_seconds += rows[i].raw_reported_gpu_seconds;
		tot.raw_allocated_micro_gpu_seconds += rows[i].raw_allocated_micro_gpu_seconds;
		tot.raw_down_gpu_seconds += rows[i].raw_down_gpu_seconds;
		tot.raw_planned_down_gpu_seconds += rows[i].raw_planned_down_gpu_seconds;
		tot.raw_reserved_gpu_seconds += rows[i].raw_reserved_gpu_seconds;
	}
	gl_capacity_settle(&tot);
	check_conservation(&tot);
	for (size_t k = 0; k < nwant; k++) {
		const struct gl_capacity_row *r = NULL;
		if (!strcmp(want[k].tres, "gres/gpu"))
			r = &tot;
		else
			for (size_t i = 0; i < nrows; i++)
				if (!strcmp(want[k].tres + 9, rows[i].key))
					r = &rows[i];
		if (!r)
			fail_msg("%s %s: no row", from, want[k].tres);
		fprintf(stderr, "  %s %-14s ours alloc %lld down %lld pdown %lld idle %lld reported %lld | sreport %lld %lld %lld %lld %lld\n",
			from, want[k].tres, (long long)(r->allocated_gpu_seconds + r->reserved_gpu_seconds),
			(long long)r->down_gpu_seconds, (long long)r->planned_down_gpu_seconds, (long long)r->idle_gpu_seconds,
			(long long)r->reported_gpu_seconds, want[k].v[0], want[k].v[1], want[k].v[2], want[k].v[3],
			want[k].v[5]);
		/* sreport's Allocated includes non-maintenance reservations */
		assert_int_equal(r->allocated_gpu_seconds + r->reserved_gpu_seconds, want[k].v[0]);
		assert_int_equal(r->down_gpu_seconds, want[k].v[1]);
		assert_int_equal(r->planned_down_gpu_seconds, want[k].v[2]);
		assert_int_equal(r->idle_gpu_seconds, want[k].v[3]);
		assert_int_equal(want[k].v[4], 0); /* Planned: pending time, cpu only */
		assert_int_equal(r->reported_gpu_seconds, want[k].v[5]);
	}
	free(rows);
}

static void compare_hour(const char *sreport_file, const char *from)
{
	compare_hour_on(g_c, sreport_file, from, "2026-11-22T18:03:30Z");
}

static void test_testbed_equals_sreport(void **state)
{
	compare_hour(TB "sreport_cluster_utilization_gputres_hour_17.txt", "2026-11-22T17:00:00Z");
	compare_hour(TB "sreport_cluster_utilization_gputres_hour_18.txt", "2026-11-22T18:00:00Z");
}

static void test_api_sreport_layout_is_byte_identical(void **state)
{
	static const char *const hours[][2] = {
		{"17", "/v1/capacity?window=2026-11-22T17:00:00Z,2026-11-22T18:00:00Z&format=sreport&cluster=testgpu"},
		{"18", "/v1/capacity?window=2026-11-22T18:00:00Z,2026-11-22T19:00:00Z&format=sreport&cluster=testgpu"},
	};
	for (size_t i = 0; i < 2; i++) {
		char path[256];
		struct gl_test_http r;
		char *want;
		snprintf(path, sizeof path, TB "sreport_cluster_utilization_gputres_hour_%s.txt", hours[i][0]);
		want = gl_test_read_file(path, NULL);
		assert_int_equal(gl_test_http(g_d.port, "GET", hours[i][1], NULL, 0, NULL, &r), 0);
		assert_int_equal(r.status, 200);
		if (strcmp(r.body, want))
			fail_msg("hour %s differs:\n%s\n--- sreport:\n%s", hours[i][0], r.body, want);
		gl_test_http_fini(&r);
		free(want);
	}
}

static cJSON *get_json(const char *path, long want_status)
{
	cJSON *j = gl_test_get_json(g_d.port, path, want_status);
	assert_non_null(j);
	return j;
}

static long long num(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItem(o, k);
	if (!cJSON_IsNumber(v))
		fprintf(stderr, "'%s' is not a number\n", k);
	assert_true(cJSON_IsNumber(v));
	return (long long)v->valuedouble;
}

/* every row and the totals conserve, for every aggregation and format=json */
static void check_api_conservation(const char *path)
{
	cJSON *j = get_json(path, 200), *row;
	cJSON *rows = cJSON_GetObjectItem(j, "rows");
	assert_true(cJSON_IsArray(rows));
	cJSON_ArrayForEach(row, rows)
	{
		assert_int_equal(num(row, "allocated_gpu_seconds") + num(row, "down_gpu_seconds") +
					 num(row, "planned_down_gpu_seconds") + num(row, "reserved_gpu_seconds") +
					 num(row, "idle_gpu_seconds"),
				 num(row, "reported_gpu_seconds"));
	}
	row = cJSON_GetObjectItem(j, "totals");
	assert_int_equal(num(row, "allocated_gpu_seconds") + num(row, "down_gpu_seconds") +
				 num(row, "planned_down_gpu_seconds") + num(row, "reserved_gpu_seconds") +
				 num(row, "idle_gpu_seconds"),
			 num(row, "reported_gpu_seconds"));
	cJSON_Delete(j);
}

/* /v1/chargeback reconciles with capacity: for every step, the lines'
 * allocated GPU-seconds + __idle__ + unavailable = reported capacity (to the
 * second), and lines + __idle__ = totals (to the second and the micro-unit),
 * under every idle-sharing policy and several aggregations and windows. */
static void test_chargeback_conserves_capacity(void **state)
{
	static const char *const windows[] = {
		"2026-11-22T17:00:00Z,2026-11-22T19:00:00Z&step=hour",
		"2026-11-22T17:30:00Z,2026-11-22T18:30:00Z",
		"2026-11-22T17:59:00Z,2026-11-22T18:03:00Z&step=hour",
	};
	/* /v1/capacity per distinct step, fetched once */
	struct {
		char a[32], b[32];
		long long unavail, reported, alloc;
	} capc[16];
	int ncap = 0;
	static const char *const aggs[] = {"account", "team", "user,partition", "gpu_model"};
	static const char *const shares[] = {"none", "proportional"};
	char path[512];
	int checked = 0;
	PQclear(PQexec(g_c, "INSERT INTO rates (gpu_model, micros_per_gpu_hour) VALUES ('a100', 2500000), ('v100', 1200000)"));
	for (size_t w = 0; w < sizeof windows / sizeof windows[0]; w++)
		for (size_t a = 0; a < sizeof aggs / sizeof aggs[0]; a++)
			for (size_t sh = 0; sh < 2; sh++) {
				cJSON *cb, *st, *cap, *crow;
				(void)crow;
				snprintf(path, sizeof path, "/v1/chargeback?window=%s&aggregate=%s&shareIdle=%s&filter=cluster:testgpu",
					 windows[w], aggs[a], shares[sh]);
				cb = get_json(path, 200);
				assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cb, "capacity_known")));
				cJSON_ArrayForEach(st, cJSON_GetObjectItem(cb, "steps"))
				{
					cJSON *it, *idle = cJSON_GetObjectItem(st, "idle"), *tot = cJSON_GetObjectItem(st, "totals");
					long long alloc = 0, share_s = 0, micros = 0, unavail, reported;
					cJSON_ArrayForEach(it, cJSON_GetObjectItem(st, "items"))
					{
						alloc += num(it, "allocated_gpu_seconds");
						share_s += num(it, "idle_share_gpu_seconds");
						micros += num(it, "total_micros");
						assert_int_equal(num(it, "total_micros"),
								 num(it, "cost_micros") + num(it, "idle_share_micros"));
					}
					/* the same step from /v1/capacity */
					{
						const char *sa = cJSON_GetObjectItem(st, "start")->valuestring,
							   *sb = cJSON_GetObjectItem(st, "end")->valuestring;
						int k;
						for (k = 0; k < ncap; k++)
							if (!strcmp(capc[k].a, sa) && !strcmp(capc[k].b, sb))
								break;
						if (k == ncap) {
							assert_true(ncap < 16);
							snprintf(path, sizeof path, "/v1/capacity?window=%s,%s&cluster=testgpu", sa, sb);
							cap = get_json(path, 200);
							crow = cJSON_GetObjectItem(cap, "totals");
							snprintf(capc[k].a, sizeof capc[k].a, "%s", sa);
							snprintf(capc[k].b, sizeof capc[k].b, "%s", sb);
							capc[k].unavail = num(crow, "down_gpu_seconds") +
									  num(crow, "planned_down_gpu_seconds") +
									  num(crow, "reserved_gpu_seconds");
							capc[k].reported = num(crow, "reported_gpu_seconds");
							capc[k].alloc = num(crow, "allocated_gpu_seconds");
							cJSON_Delete(cap);
							ncap++;
						}
						unavail = capc[k].unavail;
						reported = capc[k].reported;
						assert_int_equal(alloc, capc[k].alloc);
					}
					assert_int_equal(num(idle, "overallocated_gpu_seconds"), 0);
					assert_int_equal(alloc + num(idle, "unshared_gpu_seconds") + unavail, reported);
					assert_int_equal(alloc + share_s + num(idle, "gpu_seconds"), num(tot, "gpu_seconds"));
					assert_int_equal(micros + num(idle, "total_micros"), num(tot, "total_micros"));
					if (!strcmp(shares[sh], "proportional") && alloc > 0)
						assert_int_equal(num(idle, "total_micros"), 0);
					checked++;
				}
				cJSON_Delete(cb);
			}
	assert_true(checked >= 30);
	PQclear(PQexec(g_c, "DELETE FROM rates"));
}

static void test_api_capacity(void **state)
{
	cJSON *j, *t;
	struct gl_test_http r;
	/* the two hours sreport reported again at 18:30 (requery_1830): 1008/646/0/42362/44016,
	 * with sreport's semantics (the nodes' last snapshot rolled to the hour's end) */
	j = get_json("/v1/capacity?window=2026-11-22T17:00:00Z,2026-11-22T19:00:00Z&cluster=testgpu&unobserved=include", 200);
	t = cJSON_GetObjectItem(j, "totals");
	assert_int_equal(num(t, "allocated_gpu_seconds"), 1008);
	assert_int_equal(num(t, "down_gpu_seconds"), 646);
	assert_int_equal(num(t, "planned_down_gpu_seconds"), 0);
	assert_int_equal(num(t, "idle_gpu_seconds"), 42362);
	assert_int_equal(num(t, "reported_gpu_seconds"), 44016);
	cJSON_Delete(j);
	/* by default the time past the last snapshot plus the grace is named,
	 * not counted */
	j = get_json("/v1/capacity?window=2026-11-22T17:00:00Z,2026-11-22T19:00:00Z&cluster=testgpu", 200);
	t = cJSON_GetObjectItem(j, "totals");
	assert_true(num(t, "unobserved_gpu_seconds") > 0);
	assert_int_equal(num(t, "reported_gpu_seconds") + num(t, "unobserved_gpu_seconds"), 44016);
	cJSON_Delete(j);
	check_api_conservation("/v1/capacity?window=2026-11-22T17:00:00Z,2026-11-22T19:00:00Z&step=hour&aggregate=partition");
	check_api_conservation("/v1/capacity?window=2026-11-22T17:00:00Z,2026-11-22T19:00:00Z&step=hour&aggregate=gpu_model");
	check_api_conservation("/v1/capacity?window=2026-11&step=day&aggregate=cluster");
	check_api_conservation("/v1/capacity?window=7d");
	check_api_conservation("/v1/capacity?window=24h&step=hour");
	/* bad parameters name themselves */
	static const char *const bad[][2] = {
		{"/v1/capacity?window=yesterdayish", "window"},
		{"/v1/capacity?window=2026-11-22T19:00:00Z,2026-11-22T17:00:00Z", "window"},
		{"/v1/capacity?window=24h&step=fortnight", "step"},
		{"/v1/capacity?window=24h&aggregate=team", "aggregate"},
		{"/v1/capacity?window=24h&format=xml", "format"},
	};
	for (size_t i = 0; i < GL_ARRAY_LEN(bad); i++) {
		cJSON *e = get_json(bad[i][0], 400);
		assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(e, "error"), "param")),
				    bad[i][1]);
		cJSON_Delete(e);
	}
	assert_int_equal(gl_test_http(g_d.port, "GET",
				      "/v1/capacity?window=2026-11-22T17:00:00Z,2026-11-22T19:00:00Z&step=hour&format=csv"
				      "&aggregate=gpu_model&cluster=testgpu",
				      NULL, 0, NULL, &r),
			 0);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "start,end,cluster,gpu_model,reported_gpu_seconds"));
	assert_non_null(strstr(r.body, "\r\n2026-11-22T17:00:00Z,2026-11-22T18:00:00Z,testgpu,a100,544,371,68,0,0,105,0,"));
	assert_non_null(strstr(r.headers, "filename=\"capacity.csv\""));
	gl_test_http_fini(&r);
}

static void test_reingest_and_bad_snapshots_change_nothing(void **state)
{
	char before[4096];
	/* testgpu's only: the daemon of this suite polls its own cluster
	 * (fakeslurm, the same node names) at any moment */
	const char *q = "SELECT string_agg(concat_ws('/', node, source, state, valid_from, valid_to), ',' ORDER BY node,"
			" source, valid_from) FROM node_state_spans"
			" WHERE cluster_id = (SELECT cluster_id FROM clusters WHERE name = 'testgpu')";
	const char *qg = "SELECT string_agg(concat_ws('/', node, gpu_model, gpus, valid_from, valid_to), ',' ORDER BY node)"
			 " FROM node_gpu_spans WHERE cluster_id = (SELECT cluster_id FROM clusters WHERE name = 'testgpu')";
	char beforeg[4096], empty[600], older[64];
	FILE *f;
	snprintf(before, sizeof before, "%s", gl_test_qstr(g_c, q));
	snprintf(beforeg, sizeof beforeg, "%s", gl_test_qstr(g_c, qg));
	/* the same snapshot again */
	run_ok(0, "ingest", "slurm-nodes", "--cluster", "testgpu", "--nodes", TB "end_scontrol_show_node.txt", "--events",
	       TB "sacctmgr_events.txt", "--reservations", TB "sacctmgr_reservations.txt", "--at", "2026-11-22T18:03:30Z",
	       NULL);
	assert_string_equal(gl_test_qstr(g_c, q), before);
	assert_string_equal(gl_test_qstr(g_c, qg), beforeg);
	/* scontrol answered with nothing: refused, capacity kept */
	snprintf(empty, sizeof empty, "%s/empty-nodes.txt", g_tmp);
	f = fopen(empty, "w");
	assert_non_null(f);
	fclose(f);
	run_ok(1, "ingest", "slurm-nodes", "--cluster", "testgpu", "--nodes", empty, "--at", "2026-11-22T18:10:00Z", NULL);
	/* a snapshot older than the last one: refused */
	snprintf(older, sizeof older, "2026-11-22T18:00:00Z");
	run_ok(1, "ingest", "slurm-nodes", "--cluster", "testgpu", "--nodes", TB "start_scontrol_show_node.txt", "--at",
	       older, NULL);
	/* not scontrol output */
	run_ok(1, "ingest", "slurm-nodes", "--cluster", "testgpu", "--nodes", TB "sacctmgr_events.txt", "--at",
	       "2026-11-22T18:10:00Z", NULL);
	assert_string_equal(gl_test_qstr(g_c, q), before);
	assert_string_equal(gl_test_qstr(g_c, qg), beforeg);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM ingest_runs WHERE source = 'slurm-nodes' AND status = 'failed'"
					   " AND cluster_id = (SELECT cluster_id FROM clusters WHERE name = 'testgpu')"),
			 2);
}

/* ---- Kubernetes ---- */

/* Independent timeline of the hand-written documents (see KU README):
 * gpu-n1 8 A100 all day, NotReady 10:00-15:00; gpu-n2 8 A100 all day,
 * cordoned 05:30 (taint time) until seen uncordoned at 18:00; gpu-n3 4 T4
 * until seen removed at 12:00; gpu-n4 2 H100 (14 MIG instances) from its
 * creation at 09:00. */
#define H 3600LL
static const long long k_reported = 8 * 24 * H + 8 * 24 * H + 4 * 12 * H + 2 * 15 * H;
static const long long k_down = 8 * 5 * H + 8 * 12 * H + 8 * H / 2;

static void test_kube_capacity_follows_nodes(void **state)
{
	static const char *const snaps[][2] = {
		{KU "t0_2026-11-01T00.json", "2026-11-01T00:00:00Z"},
		{KU "t1_2026-11-01T06.json", "2026-11-01T06:00:00Z"},
		{KU "t2_2026-11-01T12.json", "2026-11-01T12:00:00Z"},
		{KU "t3_2026-11-01T18.json", "2026-11-01T18:00:00Z"},
	};
	struct gl_window day = {ts("2026-11-01T00:00:00Z"), ts("2026-11-02T00:00:00Z")}, steps[48];
	struct gl_capacity_row *rows = NULL;
	size_t n = 0, nsteps = 0;
	struct gl_err err = {0};
	long long rep = 0, down = 0, alloc = 0, by_model_h100 = 0, drained_alloc = 0;
	for (size_t i = 0; i < GL_ARRAY_LEN(snaps); i++)
		run_ok(0, "ingest", "kube-nodes", "--cluster", "k8s-test", "--file", snaps[i][0], "--at", snaps[i][1], NULL);
	/* pods: 2 GPUs on n1 01:00-03:00, a 1/7 MIG share on n4 13:00-14:00, a
	 * 4-GPU pod on n2 04:00-now (running: ends at the query's now) */
	PQclear(PQexec(g_c,
		       "INSERT INTO jobs (cluster_id, job_key, job_id, state, start_at, end_at, gpu_micro, nodes)"
		       " SELECT cluster_id, k, k, s, a::timestamptz, b::timestamptz, g, ARRAY[n] FROM clusters,"
		       " (VALUES ('pod:a', 'Succeeded', '2026-11-01T01:00:00Z', '2026-11-01T03:00:00Z', 2000000, 'gpu-n1'),"
		       "         ('pod:b', 'Succeeded', '2026-11-01T13:00:00Z', '2026-11-01T14:00:00Z', 143000, 'gpu-n4'),"
		       "         ('pod:c', 'Running', '2026-11-01T04:00:00Z', NULL, 4000000, 'gpu-n2')) v(k, s, a, b, g, n)"
		       " WHERE name = 'k8s-test'"));
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM jobs WHERE job_key LIKE 'pod:%'"), 3);
	assert_int_equal(gl_window_split(&day, GL_WINDOW_STEP_HOUR, steps, 48, &nsteps, &err), 0);
	assert_int_equal(nsteps, 24);
	assert_int_equal(gl_capstore_query(gl_db_store(g_c), steps, nsteps, GL_CAPACITY_AGG_MODEL, "k8s-test", ts("2026-11-01T06:00:00Z"), &as_sreport,
					   &rows, &n, &err),
			 0);
	for (size_t i = 0; i < n; i++) {
		check_conservation(&rows[i]);
		assert_int_equal(rows[i].over_gpu_seconds, 0);
		rep += rows[i].reported_gpu_seconds;
		down += rows[i].down_gpu_seconds;
		alloc += rows[i].allocated_gpu_seconds;
		drained_alloc += rows[i].drained_allocated_gpu_seconds;
		assert_true(rows[i].drained_allocated_gpu_seconds <= rows[i].allocated_gpu_seconds);
		/* label NVIDIA-H100-80GB-HBM3, canonical h100 (sql/024) */
		if (!strcmp(rows[i].key, "h100"))
			by_model_h100 += rows[i].reported_gpu_seconds;
		/* n3's T4s are gone from the 12:00 step on */
		if (!strcmp(rows[i].key, "t4")) /* label Tesla-T4 */
			assert_true(rows[i].start_s < ts("2026-11-01T12:00:00Z"));
	}
	assert_int_equal(rep, k_reported);
	assert_int_equal(down, k_down);
	assert_int_equal(by_model_h100, 2 * 15 * H);
	/* per-hour rounding of the 1/7 share, half up as chargeback rounds:
	 * 143 ms x 3600 s = 514.8 -> 515 in its hour; the running pod ends at
	 * now (06:00): 4 GPUs x 2 h */
	assert_int_equal(alloc, 2 * 2 * H + 515 + 4 * 2 * H);
	/* gpu-n2 was cordoned at 05:30 with pod c still on it: its 4 GPUs until
	 * now (06:00) are drained-but-allocated */
	assert_int_equal(drained_alloc, 4 * H / 2);
	free(rows);
	/* the same over the API, whole day, one row per model */
	{
		cJSON *j = get_json("/v1/capacity?window=2026-11-01T00:00:00Z,2026-11-02T00:00:00Z&cluster=k8s-test"
				    "&unobserved=include",
				    200);
		cJSON *t = cJSON_GetObjectItem(j, "totals");
		assert_int_equal(num(t, "reported_gpu_seconds"), k_reported);
		assert_int_equal(num(t, "down_gpu_seconds"), k_down);
		/* with the real clock pod c runs past midnight: 05:30-18:00 on a drained node */
		assert_int_equal(num(t, "drained_allocated_gpu_seconds"), 4 * (12 * H + H / 2));
		cJSON_Delete(j);
	}
	/* the states behind it */
	assert_string_equal(gl_test_qstr(g_c, "SELECT string_agg(node || ':' || state || ':' || to_char(valid_from AT TIME"
					      " ZONE 'UTC', 'HH24:MI') || '-' || coalesce(to_char(valid_to AT TIME ZONE 'UTC',"
					      " 'HH24:MI'), 'open'), ' ' ORDER BY node, valid_from) FROM node_state_spans"
					      " WHERE state <> 'up' AND source = 'kube'"),
			    "gpu-n1:down:10:00-15:00 gpu-n2:drained:05:30-18:00");
}

static void test_inventory_and_conflicts(void **state)
{
	cJSON *j, *arr, *it;
	int found_conflict = 0, found_n4 = 0;
	/* the exporter sees 7 of gpu-n1's 8 GPUs, and a node the scheduler does not list */
	PQclear(PQexec(g_c, "INSERT INTO nodes (cluster_id, name, first_seen, last_seen) SELECT cluster_id, n,"
			    " '2026-11-01', '2026-11-02' FROM clusters, (VALUES ('gpu-n1'), ('gpu-x9')) v(n)"
			    " WHERE name = 'k8s-test'"));
	PQclear(PQexec(g_c, "INSERT INTO gpus (cluster_id, node_id, uuid, model, first_seen, last_seen)"
			    " SELECT n.cluster_id, n.node_id, 'GPU-' || n.name || '-' || g, 'NVIDIA A100-SXM4-80GB',"
			    " '2026-11-01', '2026-11-02' FROM nodes n, generate_series(1, 7) g"
			    " WHERE n.name IN ('gpu-n1', 'gpu-x9') AND (n.name = 'gpu-n1' OR g = 1)"));
	j = get_json("/v1/inventory?cluster=k8s-test", 200);
	arr = cJSON_GetObjectItem(j, "conflicts");
	cJSON_ArrayForEach(it, arr)
	{
		const char *node = cJSON_GetStringValue(cJSON_GetObjectItem(it, "node"));
		if (!strcmp(node, "gpu-n1")) {
			assert_int_equal(num(it, "scheduler_gpus"), 8);
			assert_int_equal(num(it, "exporter_gpus"), 7);
			assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(it, "kind")), "gpu_count");
			found_conflict++;
		} else if (!strcmp(node, "gpu-x9")) {
			assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(it, "kind")), "unknown_to_scheduler");
			found_conflict++;
		}
	}
	assert_int_equal(found_conflict, 2);
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(j, "nodes"))
	{
		if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(it, "node")), "gpu-n4"))
			continue;
		found_n4 = 1;
		assert_int_equal(num(cJSON_GetArrayItem(cJSON_GetObjectItem(it, "gpus"), 0), "mig_instances"), 14);
		/* GPU feature discovery's nvidia.com/gpu.memory label, MiB per GPU */
		assert_int_equal(num(cJSON_GetArrayItem(cJSON_GetObjectItem(it, "gpus"), 0), "memory_mib"), 81920);
		assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(it, "state")), "up");
	}
	assert_true(found_n4);
	cJSON_Delete(j);
	{
		/* and on /metrics */
		struct gl_test_http r;
		assert_int_equal(gl_test_http(g_d.port, "GET", "/metrics", NULL, 0, NULL, &r), 0);
		assert_non_null(strstr(r.body, "gpuledger_inventory_conflicts{cluster=\"k8s-test\",kind=\"gpu_count\"} 1\n"));
		assert_non_null(strstr(r.body, "gpuledger_inventory_conflicts{cluster=\"k8s-test\",kind=\"unknown_to_scheduler\"} 1\n"));
		assert_non_null(strstr(r.body, "gpuledger_inventory_gpus{cluster=\"testgpu\",source=\"scheduler\"} 12\n"));
		gl_test_http_fini(&r);
	}
	/* capacity still comes from the scheduler, not the exporter (never silently resolved) */
	assert_int_equal(gl_test_qint(g_c, "SELECT sum(reported_gpu_seconds) FROM gl_capacity('2026-11-01', '2026-11-02')"
					   " c JOIN clusters USING (cluster_id) WHERE name = 'k8s-test'"),
			 k_reported);
}

/* A cluster with exporter data only: capacity from first_seen..absent_since,
 * MIG instances folded into their physical GPU. */
static void test_exporter_fallback(void **state)
{
	PQclear(PQexec(g_c, "INSERT INTO clusters (name, kind) VALUES ('dcgm-only', 'slurm')"));
	PQclear(PQexec(g_c, "INSERT INTO nodes (cluster_id, name, first_seen, last_seen) SELECT cluster_id, 'e1',"
			    " '2026-10-01', '2026-10-02' FROM clusters WHERE name = 'dcgm-only'"));
	/* GPU-A whole day; GPU-B (2 MIG instances) from 06:00, absent from 18:00 */
	PQclear(PQexec(g_c, "INSERT INTO gpus (cluster_id, node_id, uuid, mig_instance, model, first_seen, last_seen,"
			    " absent_since) SELECT n.cluster_id, n.node_id, u, m, 'H100', f::timestamptz, l::timestamptz,"
			    " a::timestamptz FROM nodes n, (VALUES ('GPU-A', -1, '2026-10-01T00:00:00Z', '2026-10-02', NULL),"
			    " ('GPU-B', 1, '2026-10-01T06:00:00Z', '2026-10-01T17:59:00Z', '2026-10-01T18:00:00Z'),"
			    " ('GPU-B', 2, '2026-10-01T06:00:00Z', '2026-10-01T17:59:00Z', '2026-10-01T18:00:00Z'))"
			    " v(u, m, f, l, a) WHERE n.name = 'e1'"));
	assert_int_equal(gl_test_qint(g_c, "SELECT sum(reported_gpu_seconds) FROM gl_capacity('2026-10-01', '2026-10-02')"
					   " c JOIN clusters USING (cluster_id) WHERE name = 'dcgm-only'"),
			 24 * H + 12 * H);
}

/* polls (no timing is asserted): cond true within a generous bound */
static int wait_for(int (*cond)(void))
{
	for (int i = 0; i < 600; i++) {
		if (cond())
			return 1;
		usleep(100 * 1000);
	}
	return 0;
}

static int source_ran_ok(void)
{
	return gl_test_qint(g_c, "SELECT count(*) FROM ingest_runs r JOIN clusters c USING (cluster_id)"
				 " WHERE c.name = 'fakeslurm' AND r.source = 'slurm-nodes' AND r.status = 'ok'") > 0;
}

static int metric_up_is(const char *want)
{
	struct gl_test_http r;
	int found = 0;
	if (gl_test_http(g_d.port, "GET", "/metrics", NULL, 0, NULL, &r) || r.status != 200)
		return 0;
	for (char *line = strtok(r.body, "\n"); line; line = strtok(NULL, "\n"))
		if (!strncmp(line, "gpuledger_source_up{", 20) && strstr(line, "\"slurm-nodes\"") &&
		    strstr(line, "\"fakeslurm\"") && !strcmp(line + strlen(line) - strlen(want), want))
			found = 1;
	gl_test_http_fini(&r);
	return found;
}

static int metric_down(void)
{
	return metric_up_is(" 0");
}

static int metric_up(void)
{
	return metric_up_is(" 1");
}

/* The daemon source: a failing scontrol leaves the last known state in
 * force (capacity is not zeroed) and shows on /metrics. */
static void test_daemon_source_failure_keeps_state(void **state)
{
	const char *spans = "SELECT string_agg(concat_ws('/', s.node, s.gpu_model, s.gpus, s.valid_from, s.valid_to), ','"
			    " ORDER BY s.node) FROM node_gpu_spans s JOIN clusters c USING (cluster_id) WHERE c.name = 'fakeslurm'";
	char before[2048];
	FILE *f;
	assert_true(wait_for(source_ran_ok));
	assert_true(wait_for(metric_up));
	snprintf(before, sizeof before, "%s", gl_test_qstr(g_c, spans));
	/* from the registration in the (fake) event history, all four nodes open */
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM node_gpu_spans s JOIN clusters c USING (cluster_id)"
					   " WHERE c.name = 'fakeslurm' AND s.valid_to IS NULL"
					   " AND s.valid_from = '2026-11-22T17:58:52Z'"),
			 4);
	f = fopen(g_failflag, "w");
	assert_non_null(f);
	fclose(f);
	assert_true(wait_for(metric_down));
	assert_string_equal(gl_test_qstr(g_c, spans), before);
	/* the outage is a failed run in ingest_runs (/v1/ingest/runs, the
	 * report's partial-data notes), not only a metric */
	assert_true(gl_test_qint(g_c, "SELECT count(*) FROM ingest_runs r JOIN clusters c USING (cluster_id)"
				      " WHERE c.name = 'fakeslurm' AND r.source = 'slurm-nodes' AND r.status = 'failed'"
				      " AND r.error LIKE '%Unable to contact slurm controller%'") >= 1);
	assert_int_equal(gl_test_qint(g_c, "SELECT sum(gpus) FROM node_gpu_spans s JOIN clusters c USING (cluster_id)"
					   " WHERE c.name = 'fakeslurm' AND s.valid_to IS NULL"),
			 12);
	unlink(g_failflag);
	assert_true(wait_for(metric_up));
}

/* A second real run (make test-slurm on 2026-11-22, hour 19), in a database
 * of its own: the same cluster name and nodes, a fresh slurmdbd. */
static void test_second_real_run_equals_sreport(void **state)
{
	char dsn2[512];
	PGconn *c2;
	assert_int_equal(gl_test_db_fresh("gl_test_capacity2", dsn2, sizeof dsn2), 0);
	c2 = PQconnectdb(dsn2);
	assert_int_equal(PQstatus(c2), CONNECTION_OK);
	g_run_dsn = dsn2;
	ingest_testbed("tests/fixtures/nodes/testbed2/");
	g_run_dsn = g_dsn;
	compare_hour_on(c2, "tests/fixtures/nodes/testbed2/sreport_cluster_utilization_gputres_hour_19.txt",
			"2026-11-22T19:00:00Z", "2026-11-22T19:23:14Z");
	PQfinish(c2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_testbed_equals_sreport),
		cmocka_unit_test(test_api_sreport_layout_is_byte_identical),
		cmocka_unit_test(test_api_capacity),
		cmocka_unit_test(test_chargeback_conserves_capacity),
		cmocka_unit_test(test_reingest_and_bad_snapshots_change_nothing),
		cmocka_unit_test(test_kube_capacity_follows_nodes),
		cmocka_unit_test(test_inventory_and_conflicts),
		cmocka_unit_test(test_exporter_fallback),
		cmocka_unit_test(test_daemon_source_failure_keeps_state),
		cmocka_unit_test(test_second_real_run_equals_sreport),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
