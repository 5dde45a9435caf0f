/* The showback report's per-job figures (the jobs stream of
 * src/store/showback.c folded by src/domain/jobstats.c: failed-job waste,
 * the top jobs by cost, queue-wait percentiles per partition and owner) on
 * the messy fleet (tests/fixtures/messy/README.md), by team and by workload
 * type, with days of the month built by the rollup and days not. The
 * expected figures are worked out by hand from the fixture files below;
 * money to the cent, waits to the second. Real binary over real HTTP, real
 * PostgreSQL. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char g_dsn[512];
static struct gl_test_daemon g_d;

/* The messy fleet's cost model, and workload types by run kind (a Slurm
 * array, a het job) and by a pod label: the stream reads run kinds and
 * labels only when a rule needs them, and these rules need both */
static const char config_yaml[] = GL_TEST_MESSY_COST_YAML
	"workload_types:\n"
	"  - match: run_kind\n    value: het\n    type: het\n"
	"  - match: run_kind\n    value: array\n    type: array\n"
	"  - match: label:qos\n    value: LS\n    type: latency\n";

static int setup(void **state)
{
	struct gl_test_out o;
	if (gl_test_db_fresh("gl_test_report_jobs", g_dsn, sizeof g_dsn) || gl_test_messy_jobs(g_dsn) ||
	    gl_test_daemon_start(&g_d, g_dsn, config_yaml, (const char *[]){"--no-ingest", NULL}))
		return -1;
	/* the 25 days before today built (with the daemon's cost model), the
	 * month's first days (run on 28 November: 1-2 November) not */
	if (gl_test_run(g_dsn, NULL, &o, "rollup", "--days", "25", NULL) || o.status != 0)
		return -1;
	gl_test_out_fini(&o);
	return 0;
}

static int teardown(void **state)
{
	return gl_test_daemon_stop(&g_d) == 0 ? 0 : -1;
}

/* The table's CSV (RFC 4180: CRLF) equal to want, the header line left out. */
static void table_is(const char *agg, const char *table, const char *want)
{
	struct gl_test_http r;
	char url[256];
	const char *body;
	snprintf(url, sizeof url, "/v1/reports/showback?month=2026-11&aggregate=%s&format=csv&table=%s", agg, table);
	assert_int_equal(gl_test_http(g_d.port, "GET", url, NULL, 0, NULL, &r), 0);
	assert_int_equal(r.status, 200);
	body = strchr(r.body, '\n');
	assert_non_null(body);
	if (strcmp(body + 1, want))
		fail_msg("%s by %s:\n%s\nwanted:\n%s", table, agg, body + 1, want);
	gl_test_http_fini(&r);
}

/* The 20 dearest jobs of November. Alpha's (sacct_alpha.txt) cost GPUs x
 * seconds x rate (a100 2.50, v100 1.20: every alpha job lies before the
 * a100 change on the 16th): job 4, 4 a100 for 300,000 s = 833.33; job 6, 8
 * a100 for 150,000 s, the same 833.33 (ties by load order); ... Open jobs
 * are firm up to the sacct run of 7 November 12:00: job 8 (2 a100 from 6
 * November 10:33:20) 91,600 s = 127.22, 14+0 / 14+1 (one a100 / one v100
 * from 11:56:40) 86,600 s = 60.14 / 28.87, 16 (2 a100 from 8:46:40 on the
 * 7th) 11,600 s = 16.11. Beta's pods (1 GPU, no model: the "*" rate 1.00)
 * up to their last snapshot, 5 November 00:00: messy-2 from 1 November
 * 12:00 84 h, messy-3 78 h, messy-4 72 h. Owners by account as of the
 * job's start (teama: vision before 4 November, nlp after), pods by
 * namespace; teamc has no rule. */
static const char top_cost[] =
	"1,4,alpha,language,COMPLETED,4.000,333.333,0.000,833.33,no data,no data\r\n"
	"2,6,alpha,__unallocated__,COMPLETED,8.000,333.333,0.000,833.33,no data,no data\r\n"
	"3,3,alpha,vision,COMPLETED,2.000,111.111,0.000,277.78,no data,no data\r\n"
	"4,2,alpha,vision,COMPLETED,1.000,55.556,0.000,138.89,no data,no data\r\n"
	"5,8,alpha,__unallocated__,RUNNING,2.000,50.889,0.000,127.22,no data,no data\r\n"
	"6,11,alpha,vision,TIMEOUT,1.000,98.611,0.000,118.33,no data,no data\r\n"
	"7,9,alpha,language,COMPLETED,2.000,83.333,0.000,100.00,no data,no data\r\n"
	"8,5,alpha,__unallocated__,REQUEUED,1.000,36.111,0.000,90.28,no data,no data\r\n"
	"9,messy-2,beta,vision,RUNNING,1.000,84.000,0.000,84.00,no data,no data\r\n"
	"10,messy-3,beta,vision,RUNNING,1.000,78.000,0.000,78.00,no data,no data\r\n"
	"11,messy-4,beta,vision,RUNNING,1.000,72.000,0.000,72.00,no data,no data\r\n"
	"12,14+0,alpha,nlp,RUNNING,1.000,24.056,0.000,60.14,no data,no data\r\n"
	"13,7_0,alpha,language,COMPLETED,1.000,20.833,0.000,52.08,no data,no data\r\n"
	"14,7_1,alpha,language,COMPLETED,1.000,20.833,0.000,52.08,no data,no data\r\n"
	"15,7_2,alpha,language,COMPLETED,1.000,20.833,0.000,52.08,no data,no data\r\n"
	"16,7_3,alpha,language,COMPLETED,1.000,20.833,0.000,52.08,no data,no data\r\n"
	"17,13,alpha,vision,CANCELLED,1.000,34.722,0.000,41.67,no data,no data\r\n"
	"18,14+1,alpha,nlp,RUNNING,1.000,24.056,0.000,28.87,no data,no data\r\n"
	"19,10,alpha,__unallocated__,FAILED,1.000,13.889,0.000,16.67,no data,no data\r\n"
	"20,16,alpha,language,RUNNING,2.000,6.444,0.000,16.11,no data,no data\r\n";

/* Queue waits (Start - Submit) of the jobs started in November,
 * percentile_disc: a100's twelve, v100's five (12 never started; 10 waited
 * 5,000 s, 13 45,000 s, 14+1 410,000 s), the five pods 0 (created when they
 * started); the array's four 440,000 s, the het job's two 410,000 s. */
static const char waits_team[] = "partition,,5,0,0,0\r\n"
				 "partition,a100,12,410000,440000,480000\r\n"
				 "partition,v100,5,5000,410000,410000\r\n"
				 "owner,__unallocated__,4,5000,435000,435000\r\n"
				 "owner,language,7,440000,480000,480000\r\n"
				 "owner,nlp,2,410000,410000,410000\r\n"
				 "owner,vision,9,0,45000,45000\r\n";
static const char waits_type[] = "partition,,5,0,0,0\r\n"
				 "partition,a100,12,410000,440000,480000\r\n"
				 "partition,v100,5,5000,410000,410000\r\n"
				 "owner,array,4,440000,440000,440000\r\n"
				 "owner,het,2,410000,410000,410000\r\n"
				 "owner,latency,5,0,0,0\r\n"
				 "owner,unclassified,11,5000,435000,480000\r\n";

static void test_top_jobs_by_cost(void **state)
{
	table_is("team", "top_cost", top_cost);
	/* no exporter data: no job has an idle figure */
	table_is("team", "top_idle", "");
}

static void test_waits(void **state)
{
	table_is("team", "waits", waits_team);
	table_is("workload_type", "waits", waits_type);
}

/* Failed-job waste: job 11 (TIMEOUT, 1 v100, 355,000 s: vision, started 1
 * November) 98.611 h, 118.33; job 10 (FAILED, 1 v100, 50,000 s: teamc, no
 * owner) 13.889 h, 16.67; by type both unclassified: 112.500 h, 135.00.
 * CANCELLED and REQUEUED are not failures. */
static void failed_are(const char *agg, const char *const *want, size_t n)
{
	struct gl_test_http r;
	struct gl_test_csv t;
	char url[256];
	int oc, hc, cc;
	size_t seen = 0;
	snprintf(url, sizeof url, "/v1/reports/showback?month=2026-11&aggregate=%s&format=csv&table=owners", agg);
	assert_int_equal(gl_test_http(g_d.port, "GET", url, NULL, 0, NULL, &r), 0);
	assert_int_equal(r.status, 200);
	assert_int_equal(gl_test_csv_parse(r.body, &t), 0);
	oc = gl_test_csv_col(&t, "owner");
	hc = gl_test_csv_col(&t, "failed_gpu_hours");
	cc = gl_test_csv_col(&t, "failed_cost");
	assert_true(oc >= 0 && hc >= 0 && cc >= 0);
	for (size_t i = 1; i < t.nrows; i++)
		for (size_t k = 0; k < n; k++)
			if (!strcmp(t.cell[i][oc], want[3 * k])) {
				assert_string_equal(t.cell[i][hc], want[3 * k + 1]);
				assert_string_equal(t.cell[i][cc], want[3 * k + 2]);
				seen++;
			}
	assert_int_equal(seen, n);
	gl_test_csv_free(&t);
	gl_test_http_fini(&r);
}

static void test_failed(void **state)
{
	static const char *const team[] = {"vision",	"98.611", "118.33", "__unallocated__", "13.889", "16.67",
					   "language", "0.000",  "0.00",   "nlp",		  "0.000",  "0.00"};
	static const char *const type[] = {"unclassified", "112.500", "135.00", "het",	   "0.000", "0.00",
					   "array",	   "0.000",   "0.00",   "latency", "0.000", "0.00"};
	failed_are("team", team, 4);
	failed_are("workload_type", type, 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_top_jobs_by_cost),
		cmocka_unit_test(test_waits),
		cmocka_unit_test(test_failed),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
