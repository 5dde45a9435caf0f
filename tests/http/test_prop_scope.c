/* Property test of owner-scoped tokens (issue 26): seeded random fleets
 * (tests/lib/propfleet), random token scopes over team, account and user
 * (one or two dimensions, one or two values each) and random chargeback
 * queries (window, step, aggregate, shareIdle), against the real binary
 * over real HTTP and real PostgreSQL. Every case:
 *   - the scoped answer's items equal, figure for figure, the admin's
 *     answer to the same query with the scope as its filter;
 *   - they are a subset of the admin's unfiltered answer: every item is
 *     there, with no more GPU-time;
 *   - every item holds exactly the GPU-seconds of the jobs inside the
 *     scope (the oracle), and an item named by a scope dimension names one
 *     of its values;
 *   - nothing of the fleet: no __idle__ figures, totals the sums of the
 *     items.
 * GL_PROP_SCOPE_CASES (default 120) and GL_PROP_SEED pick the cases; a
 * failure names the seed, fleet, scope and query to replay. */
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
#define N_SCOPES 6

static const int64_t lo_s = 1790812800 - 2 * 86400; /* 2026-09-29 */
static const int64_t hi_s = 1790812800 + 35 * 86400; /* 2026-11-05 */

static char g_ctx[1024];
static long g_nonempty; /* cases whose scoped answer has an item: the properties held on something */

#define CHECK(cond, ...)                                                                                              \
	do {                                                                                                          \
		if (!(cond)) {                                                                                        \
			char m_[512];                                                                                 \
			snprintf(m_, sizeof m_, __VA_ARGS__);                                                          \
			fail_msg("%s: %s", g_ctx, m_);                                                               \
		}                                                                                                     \
	} while (0)

static cJSON *get(int port, const char *path, const char *token)
{
	struct gl_test_http_opts o = {token, 0, NULL};
	struct gl_test_http r;
	cJSON *j;
	CHECK(gl_test_http_ex(port, "GET", path, NULL, 0, NULL, &o, &r) == 0, "no answer to %s", path);
	CHECK(r.status == 200, "%s: status %ld: %.300s", path, r.status, r.body ? r.body : "");
	j = cJSON_Parse(r.body);
	gl_test_http_fini(&r);
	CHECK(j != NULL, "%s: no JSON", path);
	return j;
}

static int64_t epoch(const cJSON *o, const char *key)
{
	const char *s = cJSON_GetStringValue(cJSON_GetObjectItem(o, key));
	int64_t t = 0;
	CHECK(s && gl_timeutil_parse(s, strlen(s), &t) == 0, "bad time %s", key);
	return t;
}

static const cJSON *item_named(const cJSON *st, const char *name)
{
	const cJSON *it;
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(st, "items"))
	{
		if (!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(it, "name")), name))
			return it;
	}
	return NULL;
}

/* GPU-seconds in [a, b) of the jobs inside the scope whose key is name. */
static int64_t oracle(const struct gl_prop_fleet *f, const struct gl_prop_query *q, const struct gl_prop_scope *sc,
		      const char *name, int64_t a, int64_t b)
{
	int64_t sum = 0;
	for (size_t i = 0; i < f->n_jobs; i++) {
		char k[160], x[64], y[64];
		const struct gl_prop_job *j = &f->jobs[i];
		if (!gl_prop_in_scope(f, j, sc))
			continue;
		gl_prop_dim(f, j, q->dims[0], x, sizeof x);
		if (q->n_dims > 1)
			snprintf(k, sizeof k, "%s/%s", x, gl_prop_dim(f, j, q->dims[1], y, sizeof y));
		else
			snprintf(k, sizeof k, "%s", x);
		if (!strcmp(k, name))
			sum += gl_prop_alloc(j, a, b);
	}
	return sum;
}

/* An item's key on a dimension the scope names is one of its values. */
static void check_key(const struct gl_prop_query *q, const struct gl_prop_scope *sc, const cJSON *it)
{
	const cJSON *key = cJSON_GetObjectItem(it, "key");
	for (int d = 0; d < sc->n_dims; d++) {
		const char *v = cJSON_GetStringValue(cJSON_GetObjectItem(key, sc->dims[d]));
		int in = 0;
		if (!v)
			continue;
		for (int k = 0; k < sc->n_values[d]; k++)
			in |= !strcmp(v, sc->values[d][k]);
		CHECK(in, "item %s: %s outside the scope", cJSON_GetStringValue(cJSON_GetObjectItem(it, "name")), v);
	}
}

static void check_step(const struct gl_prop_fleet *f, const struct gl_prop_query *q, const struct gl_prop_scope *sc,
		       const cJSON *s, const cJSON *s_filt, const cJSON *s_all)
{
	static const char *const keys[] = {"allocated_gpu_seconds", "cost_micros", "idle_share_gpu_seconds",
					   "idle_share_micros", "total_micros", "unpriced_gpu_seconds"};
	int64_t a = epoch(s, "start"), b = epoch(s, "end");
	long long sum = 0, alloc = 0;
	const cJSON *it;
	CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(s, "items")) == cJSON_GetArraySize(cJSON_GetObjectItem(s_filt, "items")),
	      "%d items, the admin's filtered answer %d", cJSON_GetArraySize(cJSON_GetObjectItem(s, "items")),
	      cJSON_GetArraySize(cJSON_GetObjectItem(s_filt, "items")));
	CHECK(cJSON_IsNull(cJSON_GetObjectItem(s, "idle")), "step idle shown to a scope");
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(s, "items"))
	{
		const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(it, "name"));
		const cJSON *fi = item_named(s_filt, name), *ai = item_named(s_all, name);
		CHECK(fi != NULL, "item %s not in the admin's filtered answer", name);
		CHECK(ai != NULL, "item %s not in the admin's answer", name);
		for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
			CHECK(gl_test_jnum(it, keys[k]) == gl_test_jnum(fi, keys[k]), "item %s %s: %lld, admin filtered %lld",
			      name, keys[k], gl_test_jnum(it, keys[k]), gl_test_jnum(fi, keys[k]));
		CHECK(gl_test_jnum(it, "allocated_gpu_seconds") <= gl_test_jnum(ai, "allocated_gpu_seconds"),
		      "item %s holds more than the admin's", name);
		CHECK(gl_test_jnum(it, "allocated_gpu_seconds") == oracle(f, q, sc, name, a, b),
		      "item %s allocated %lld, the scope's jobs held %lld", name, gl_test_jnum(it, "allocated_gpu_seconds"),
		      (long long)oracle(f, q, sc, name, a, b));
		check_key(q, sc, it);
		sum += gl_test_jnum(it, "total_micros");
		alloc += gl_test_jnum(it, "allocated_gpu_seconds");
	}
	CHECK(sum == gl_test_jnum(cJSON_GetObjectItem(s, "totals"), "total_micros"), "step total is not its items'");
	CHECK(alloc <= gl_test_jnum(cJSON_GetObjectItem(s_all, "totals"), "allocated_gpu_seconds"),
	      "step allocates more than the fleet");
}

static void check_case(int port, const char *token, const struct gl_prop_fleet *f, const struct gl_prop_query *q,
		       const struct gl_prop_scope *sc)
{
	char path[1024];
	cJSON *js = get(port, q->path, token), *jf, *ja;
	const cJSON *tot = cJSON_GetObjectItem(js, "totals");
	long long sum = 0;
	snprintf(path, sizeof path, "%s&filter=%s", q->path, sc->filter);
	jf = get(port, path, NULL);
	ja = get(port, q->path, NULL);
	CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(js, "steps")) == cJSON_GetArraySize(cJSON_GetObjectItem(ja, "steps")),
	      "steps differ");
	for (int i = 0; i < cJSON_GetArraySize(cJSON_GetObjectItem(js, "steps")); i++) {
		const cJSON *s = cJSON_GetArrayItem(cJSON_GetObjectItem(js, "steps"), i);
		check_step(f, q, sc, s, cJSON_GetArrayItem(cJSON_GetObjectItem(jf, "steps"), i),
			   cJSON_GetArrayItem(cJSON_GetObjectItem(ja, "steps"), i));
		sum += gl_test_jnum(cJSON_GetObjectItem(s, "totals"), "total_micros");
	}
	CHECK(sum == gl_test_jnum(tot, "total_micros"), "total is not its steps'");
	g_nonempty += gl_test_jnum(tot, "allocated_gpu_seconds") > 0;
	CHECK(cJSON_IsNull(cJSON_GetObjectItem(tot, "idle_micros")), "fleet idle shown to a scope");
	cJSON_Delete(js);
	cJSON_Delete(jf);
	cJSON_Delete(ja);
}

static void test_scoped_properties(void **state)
{
	const char *e = getenv("GL_PROP_SCOPE_CASES"), *sd = getenv("GL_PROP_SEED");
	long cases = e ? atol(e) : 120;
	uint64_t seed = sd ? strtoull(sd, NULL, 10) : 26;
	double t0 = gl_test_now_s();
	long done = 0;
	for (int k = 0; k < N_FLEETS; k++) {
		struct gl_prop_fleet f;
		struct gl_test_daemon d;
		struct gl_prop_scope sc[N_SCOPES];
		char dsn[512], name[64], tok[N_SCOPES][64];
		uint64_t rng = seed * 7919 + (uint64_t)k;
		snprintf(name, sizeof name, "gl_test_prop_scope_%d", k);
		assert_int_equal(gl_test_db_fresh(name, dsn, sizeof dsn), 0);
		gl_prop_fleet_make(&f, seed + (uint64_t)k, JOBS, lo_s, hi_s);
		assert_int_equal(gl_prop_load(&f, dsn), 0);
		if (k % 2)
			assert_int_equal(gl_test_cli(dsn, "rollup", "--days", "90", NULL), 0);
		for (int s = 0; s < N_SCOPES; s++) {
			const char *extra[2 * 4 + 1];
			char tname[32];
			gl_prop_scope_make(&rng, &sc[s]);
			for (int a = 0; a < sc[s].n_args; a++) {
				extra[2 * a] = "--scope";
				extra[2 * a + 1] = sc[s].args[a];
			}
			extra[2 * sc[s].n_args] = NULL;
			snprintf(tname, sizeof tname, "scope%d", s);
			assert_int_equal(gl_test_token_create(dsn, tname, "finance", extra, tok[s], sizeof tok[s], NULL), 0);
		}
		assert_int_equal(gl_test_daemon_start(&d, dsn, gl_prop_config(), (const char *[]){"--no-ingest", NULL}), 0);
		for (long c = k; c < cases; c += N_FLEETS) {
			struct gl_prop_query q;
			int s = (int)(gl_prop_rand(&rng) % N_SCOPES);
			gl_prop_query_make(&rng, &q);
			snprintf(g_ctx, sizeof g_ctx, "seed %llu fleet %d case %ld scope %s: %s", (unsigned long long)seed, k,
				 c, sc[s].filter, q.path);
			check_case(d.port, tok[s], &f, &q, &sc[s]);
			done++;
		}
		assert_int_equal(gl_test_daemon_stop(&d), 0);
		gl_prop_fleet_fini(&f);
	}
	fprintf(stderr, "test_prop_scope: %ld cases (seed %llu, %ld with GPU-time in scope) in %.1f s\n", done,
		(unsigned long long)seed, g_nonempty, gl_test_now_s() - t0);
	assert_true(g_nonempty * 3 >= done);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scoped_properties),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
