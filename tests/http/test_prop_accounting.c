/* Property tests of the accounting: seeded random fleets (tests/lib/
 * propfleet: three clusters, one without any capacity data, a few hundred
 * jobs of whole GPUs and seconds, owners by account, a dedicated cluster
 * for shareIdle=owner) and random queries (window, step, aggregate,
 * shareIdle, shareIdleBy) against the real binary over real HTTP and real
 * PostgreSQL, half the fleets with their days rolled up. Every case:
 *   - allocation: every item's GPU-seconds equal the oracle's sum over the
 *     jobs (each GPU-second once; nothing beyond what the jobs held);
 *   - conservation in every row and step: items + __idle__ = the step's
 *     totals, to the second and to the micro-unit, steps to the totals;
 *   - shown money: each item's cost + idle share = its total, items +
 *     __idle__ = the step's total, steps = the total, to the cent, in the
 *     JSON and in the CSV, which shows the JSON's cents;
 *   - the same cents for the same owner in the showback report's owners
 *     table (the month by team);
 *   - no idle crosses a cluster: under shareIdle=proportional an item that
 *     held no GPU-time on a cluster with capacity data gets no idle;
 *   - idle never exceeds the capacity the inventory reported.
 * GL_PROP_CASES (default 520) and GL_PROP_SEED pick the cases; a failure
 * names the seed, fleet and query to replay. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/propfleet.h"
#include "lib/testlib.h"

#include "gl/timeutil.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_FLEETS 2
#define JOBS 240

static const int64_t lo_s = 1790812800 - 2 * 86400; /* 2026-09-29 */
static const int64_t hi_s = 1790812800 + 35 * 86400; /* 2026-11-05 */

static char g_ctx[768]; /* the case being checked, for failure messages */

#define CHECK(cond, ...)                                                                                              \
	do {                                                                                                          \
		if (!(cond)) {                                                                                        \
			char m_[512];                                                                                 \
			snprintf(m_, sizeof m_, __VA_ARGS__);                                                          \
			fail_msg("%s: %s", g_ctx, m_);                                                               \
		}                                                                                                     \
	} while (0)

/* "1234.56" -> micro-units */
static long long micros_of(const char *s)
{
	long long w = 0, f = 0;
	int neg = s && *s == '-', fd = 0;
	const char *p = s + neg;
	CHECK(s != NULL, "money missing");
	for (; *p >= '0' && *p <= '9'; p++)
		w = w * 10 + (*p - '0');
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++, fd++)
			f = f * 10 + (*p - '0');
	CHECK(*p == '\0', "not money: '%s'", s);
	for (; fd < 6; fd++)
		f *= 10;
	return (neg ? -1 : 1) * (w * 1000000 + f);
}

static int64_t epoch(const cJSON *o, const char *key)
{
	const char *s = cJSON_GetStringValue(cJSON_GetObjectItem(o, key));
	int64_t t = 0;
	CHECK(s && gl_timeutil_parse(s, strlen(s), &t) == 0, "bad time %s", key);
	return t;
}

static const char *jstr(const cJSON *o, const char *key)
{
	const char *s = cJSON_GetStringValue(cJSON_GetObjectItem(o, key));
	CHECK(s != NULL, "no string %s", key);
	return s;
}

/* The item's key, dims joined by '/', as the API names it. */
static void job_key(const struct gl_prop_fleet *f, const struct gl_prop_job *j, const struct gl_prop_query *q,
		    char *buf, size_t n)
{
	char a[64], b[64];
	gl_prop_dim(f, j, q->dims[0], a, sizeof a);
	if (q->n_dims > 1)
		snprintf(buf, n, "%s/%s", a, gl_prop_dim(f, j, q->dims[1], b, sizeof b));
	else
		snprintf(buf, n, "%s", a);
}

/* The oracle for one item of step [a, b): its GPU-seconds, and those on
 * clusters with capacity data. */
static void oracle(const struct gl_prop_fleet *f, const struct gl_prop_query *q, const char *name, int64_t a, int64_t b,
		   int64_t *all, int64_t *inv)
{
	char k[160];
	*all = *inv = 0;
	for (size_t i = 0; i < f->n_jobs; i++) {
		int64_t s;
		job_key(f, &f->jobs[i], q, k, sizeof k);
		if (strcmp(k, name) || !(s = gl_prop_alloc(&f->jobs[i], a, b)))
			continue;
		*all += s;
		if (f->clusters[f->jobs[i].cluster].nodes)
			*inv += s;
	}
}

static int64_t oracle_step(const struct gl_prop_fleet *f, int64_t a, int64_t b, int64_t *cap)
{
	int64_t sum = 0;
	*cap = 0;
	for (size_t i = 0; i < f->n_jobs; i++)
		sum += gl_prop_alloc(&f->jobs[i], a, b);
	for (int c = 0; c < f->n_clusters; c++)
		*cap += (int64_t)f->clusters[c].nodes * f->clusters[c].gpus_per_node * (b - a);
	return sum;
}

static void check_step(const struct gl_prop_fleet *f, const struct gl_prop_query *q, const cJSON *st)
{
	int64_t a = epoch(st, "start"), b = epoch(st, "end"), cap, want = oracle_step(f, a, b, &cap);
	const cJSON *it, *idle = cJSON_GetObjectItem(st, "idle"), *t = cJSON_GetObjectItem(st, "totals");
	long long alloc = 0, secs = 0, micros = 0, shown = 0;
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(st, "items"))
	{
		const char *name = jstr(it, "name");
		int64_t all, inv;
		long long c = gl_test_jnum(it, "cost_shown_micros"), s = gl_test_jnum(it, "idle_share_shown_micros"),
			  tt = gl_test_jnum(it, "total_shown_micros");
		oracle(f, q, name, a, b, &all, &inv);
		CHECK(gl_test_jnum(it, "allocated_gpu_seconds") == all, "%s allocated %lld, the jobs held %lld", name,
		      gl_test_jnum(it, "allocated_gpu_seconds"), (long long)all);
		CHECK(gl_test_jnum(it, "total_micros") == gl_test_jnum(it, "cost_micros") + gl_test_jnum(it, "idle_share_micros"),
		      "%s total_micros", name);
		CHECK(c + s == tt, "%s shown cost + idle share != total", name);
		CHECK(tt % 10000 == 0 && c % 10000 == 0, "%s shown not in cents", name);
		CHECK(micros_of(jstr(it, "total")) == tt && micros_of(jstr(it, "cost")) == c &&
			      micros_of(jstr(it, "idle_share")) == s,
		      "%s shown text differs from *_shown_micros", name);
		if (!strcmp(q->share, "proportional") && inv == 0)
			CHECK(gl_test_jnum(it, "idle_share_micros") == 0 && gl_test_jnum(it, "idle_share_gpu_seconds") == 0,
			      "%s ran on no cluster with capacity data yet got idle", name);
		alloc += all;
		secs += gl_test_jnum(it, "allocated_gpu_seconds") + gl_test_jnum(it, "idle_share_gpu_seconds");
		micros += gl_test_jnum(it, "total_micros");
		shown += tt;
	}
	CHECK(alloc == want, "items hold %lld GPU-s, the jobs %lld", alloc, (long long)want);
	CHECK(gl_test_jnum(t, "allocated_gpu_seconds") == want, "step allocated");
	if (!cJSON_IsNull(cJSON_GetObjectItem(idle, "gpu_seconds"))) {
		secs += gl_test_jnum(idle, "gpu_seconds");
		micros += gl_test_jnum(idle, "total_micros");
		shown += gl_test_jnum(idle, "total_shown_micros");
		CHECK(gl_test_jnum(idle, "unshared_gpu_seconds") <= cap, "idle %lld beyond capacity %lld",
		      gl_test_jnum(idle, "unshared_gpu_seconds"), (long long)cap);
	}
	CHECK(secs == gl_test_jnum(t, "gpu_seconds"), "step GPU-seconds: rows %lld, total %lld", secs,
	      gl_test_jnum(t, "gpu_seconds"));
	CHECK(micros == gl_test_jnum(t, "total_micros"), "step micro-units: rows %lld, total %lld", micros,
	      gl_test_jnum(t, "total_micros"));
	CHECK(shown == gl_test_jnum(t, "total_shown_micros"), "step shown: rows %lld, total %lld", shown,
	      gl_test_jnum(t, "total_shown_micros"));
}

/* The CSV shows the JSON's cents, row by row, and adds up to its total. */
static void check_csv(int port, const struct gl_prop_query *q, const cJSON *j)
{
	char path[600];
	struct gl_test_http r;
	struct gl_test_csv t;
	const cJSON *steps = cJSON_GetObjectItem(j, "steps");
	long long sum = 0;
	int ct = -1, cc = -1, cs = -1, cd[2];
	size_t row = 1;
	snprintf(path, sizeof path, "%s&format=csv", q->path);
	CHECK(gl_test_http(port, "GET", path, NULL, 0, NULL, &r) == 0 && r.status == 200, "CSV status");
	CHECK(gl_test_csv_parse(r.body, &t) == 0, "CSV parse");
	gl_test_http_fini(&r);
	ct = gl_test_csv_col(&t, "total");
	cc = gl_test_csv_col(&t, "cost");
	cs = gl_test_csv_col(&t, "idle_share");
	for (int d = 0; d < q->n_dims; d++)
		cd[d] = gl_test_csv_col(&t, q->dims[d]);
	for (int i = 0; i < cJSON_GetArraySize(steps); i++) {
		const cJSON *st = cJSON_GetArrayItem(steps, i), *it, *idle = cJSON_GetObjectItem(st, "idle");
		cJSON_ArrayForEach(it, cJSON_GetObjectItem(st, "items"))
		{
			const cJSON *key = cJSON_GetObjectItem(it, "key");
			CHECK(row < t.nrows, "CSV short");
			for (int d = 0; d < q->n_dims; d++)
				CHECK(!strcmp(t.cell[row][cd[d]], jstr(key, q->dims[d])), "CSV row %zu key", row);
			CHECK(micros_of(t.cell[row][ct]) == gl_test_jnum(it, "total_shown_micros") &&
				      micros_of(t.cell[row][cc]) == gl_test_jnum(it, "cost_shown_micros") &&
				      micros_of(t.cell[row][cs]) == gl_test_jnum(it, "idle_share_shown_micros"),
			      "CSV row %zu cents differ from the JSON's", row);
			sum += micros_of(t.cell[row][ct]);
			row++;
		}
		if (!cJSON_IsNull(cJSON_GetObjectItem(idle, "gpu_seconds"))) {
			CHECK(row < t.nrows && !strcmp(t.cell[row][cd[0]], "__idle__"), "CSV __idle__ row");
			CHECK(micros_of(t.cell[row][ct]) == gl_test_jnum(idle, "total_shown_micros"), "CSV __idle__ cents");
			sum += micros_of(t.cell[row][ct]);
			row++;
		}
	}
	CHECK(row == t.nrows, "CSV has %zu rows, the JSON %zu", t.nrows, row);
	CHECK(sum == gl_test_jnum(cJSON_GetObjectItem(j, "totals"), "total_shown_micros"), "CSV rows add to %lld, total %lld",
	      sum, gl_test_jnum(cJSON_GetObjectItem(j, "totals"), "total_shown_micros"));
	gl_test_csv_free(&t);
}

/* The month by team: the showback report's owners show the same cents. */
static void check_report(int port, const struct gl_prop_query *q, const cJSON *j)
{
	char path[256];
	struct gl_test_http r;
	struct gl_test_csv t;
	const cJSON *it;
	int ct, cc, cs;
	snprintf(path, sizeof path, "/v1/reports/showback?month=2026-10&aggregate=team&shareIdle=%s&table=owners", q->share);
	CHECK(gl_test_http(port, "GET", path, NULL, 0, NULL, &r) == 0 && r.status == 200, "report status");
	CHECK(gl_test_csv_parse(r.body, &t) == 0, "report parse");
	gl_test_http_fini(&r);
	ct = gl_test_csv_col(&t, "total");
	cc = gl_test_csv_col(&t, "cost");
	cs = gl_test_csv_col(&t, "idle_share");
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "steps"), 0), "items"))
	{
		const char *name = jstr(it, "name");
		size_t i = 1;
		while (i < t.nrows && strcmp(t.cell[i][0], name))
			i++;
		CHECK(i < t.nrows, "report has no owner %s", name);
		CHECK(micros_of(t.cell[i][ct]) == gl_test_jnum(it, "total_shown_micros") &&
			      micros_of(t.cell[i][cc]) == gl_test_jnum(it, "cost_shown_micros") &&
			      micros_of(t.cell[i][cs]) == gl_test_jnum(it, "idle_share_shown_micros"),
		      "%s: report %s / %s / %s, API %s / %s / %s", name, t.cell[i][cc], t.cell[i][cs], t.cell[i][ct],
		      jstr(it, "cost"), jstr(it, "idle_share"), jstr(it, "total"));
	}
	gl_test_csv_free(&t);
}

static void check_case(int port, const struct gl_prop_fleet *f, const struct gl_prop_query *q)
{
	struct gl_test_http r;
	cJSON *j, *st;
	long long micros = 0, shown = 0;
	CHECK(gl_test_http(port, "GET", q->path, NULL, 0, NULL, &r) == 0, "no answer");
	CHECK(r.status == 200, "status %ld: %.300s", (long)r.status, r.body ? r.body : "");
	j = cJSON_Parse(r.body);
	gl_test_http_fini(&r);
	CHECK(j != NULL, "no JSON");
	cJSON_ArrayForEach(st, cJSON_GetObjectItem(j, "steps"))
	{
		check_step(f, q, st);
		micros += gl_test_jnum(cJSON_GetObjectItem(st, "totals"), "total_micros");
		shown += gl_test_jnum(cJSON_GetObjectItem(st, "totals"), "total_shown_micros");
	}
	CHECK(micros == gl_test_jnum(cJSON_GetObjectItem(j, "totals"), "total_micros"), "steps' micro-units != total");
	CHECK(shown == gl_test_jnum(cJSON_GetObjectItem(j, "totals"), "total_shown_micros"), "steps' shown != total");
	check_csv(port, q, j);
	if (q->month && !strcmp(q->step, "none") && q->n_dims == 1 && !strcmp(q->dims[0], "team"))
		check_report(port, q, j);
	cJSON_Delete(j);
}

static void test_properties(void **state)
{
	const char *e = getenv("GL_PROP_CASES"), *sd = getenv("GL_PROP_SEED");
	long cases = e ? atol(e) : 520;
	uint64_t seed = sd ? strtoull(sd, NULL, 10) : 26;
	double t0 = gl_test_now_s();
	long done = 0;
	for (int k = 0; k < N_FLEETS; k++) {
		struct gl_prop_fleet f;
		struct gl_test_daemon d;
		char dsn[512], name[64];
		uint64_t rng = seed * 1000003 + (uint64_t)k;
		snprintf(name, sizeof name, "gl_test_prop_%d", k);
		assert_int_equal(gl_test_db_fresh(name, dsn, sizeof dsn), 0);
		gl_prop_fleet_make(&f, seed + (uint64_t)k, JOBS, lo_s, hi_s);
		assert_int_equal(gl_prop_load(&f, dsn), 0);
		/* odd fleets read their past days from the rollup */
		if (k % 2)
			assert_int_equal(gl_test_cli(dsn, "rollup", "--days", "90", NULL), 0);
		assert_int_equal(gl_test_daemon_start(&d, dsn, gl_prop_config(), (const char *[]){"--no-ingest", NULL}), 0);
		fprintf(stderr, "test_prop_accounting: fleet %d ready at %.1f s\n", k, gl_test_now_s() - t0);
		for (long c = k; c < cases; c += N_FLEETS) {
			struct gl_prop_query q;
			gl_prop_query_make(&rng, &q);
			snprintf(g_ctx, sizeof g_ctx, "seed %llu fleet %d case %ld: %s", (unsigned long long)seed, k, c, q.path);
			check_case(d.port, &f, &q);
			done++;
		}
		assert_int_equal(gl_test_daemon_stop(&d), 0);
		gl_prop_fleet_fini(&f);
	}
	fprintf(stderr, "test_prop_accounting: %ld cases (seed %llu) in %.1f s\n", done, (unsigned long long)seed,
		gl_test_now_s() - t0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_properties),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
