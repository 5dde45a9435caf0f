/* gl_accounting_capacity_days counts the UTC days of a window that have capacity
 * data, worked out from the spans for speed (asking gl_capacity day by day
 * took seconds for a year of a large fleet). The oracle here is the
 * definition itself: a day counts when gl_capacity(day clipped to the
 * window) has a row. Scheduler spans with gaps (one closing and reopening
 * inside a day, one shorter than a day), and a cluster with exporter GPUs
 * only (two MIG rows of one GPU merged, one GPU absent for a while);
 * windows that cut days anywhere; the fleet narrowed by a filter's
 * cluster, partition and gpu_model clauses (as /v1/chargeback narrows its
 * idle), owner clauses ignored. Real PostgreSQL. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "store/accounting_int.h"
#include "gl/filter.h"
#include "lib/testlib.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char g_dsn[512];
static PGconn *g_c;

static int setup(void **state)
{
	static const char *const sql[] = {
		"INSERT INTO clusters (name, kind) VALUES ('s1', 'slurm'), ('k1', 'kubernetes')",
		"INSERT INTO node_gpu_spans (cluster_id, node, gpu_model, gpus, partition, partitions, source, valid_from,"
		" valid_to) SELECT cluster_id, v.n, 'a100', 4, 'p', ARRAY['p'], 'scontrol', v.f::timestamptz,"
		" v.t::timestamptz FROM clusters, (VALUES"
		" ('n1', '2026-09-02T10:00:00Z', '2026-09-04T06:00:00Z'),"
		" ('n1', '2026-09-04T08:00:00Z', '2026-09-05T00:00:00Z'),"
		" ('n2', '2026-09-10T03:00:00Z', '2026-09-10T04:00:00Z'),"
		" ('n3', '2026-09-25T23:59:00Z', NULL)) v(n, f, t) WHERE name = 's1'",
		"INSERT INTO nodes (cluster_id, name, first_seen, last_seen) SELECT cluster_id, n, '2026-08-01', '2026-08-01'"
		" FROM clusters, (VALUES ('x1'), ('x2')) v(n) WHERE name = 'k1'",
		"INSERT INTO gpus (cluster_id, node_id, uuid, mig_instance, model, first_seen, last_seen, absent_since)"
		" SELECT n.cluster_id, n.node_id, v.u, v.mi, 'a100', v.f::timestamptz, v.f::timestamptz, v.t::timestamptz"
		" FROM nodes n JOIN (VALUES"
		"  ('x1', 'u1', 0, '2026-08-20T05:00:00Z', '2026-08-21T00:00:00Z'),"
		"  ('x1', 'u1', 1, '2026-08-20T20:00:00Z', '2026-08-23T01:00:00Z'),"
		"  ('x2', 'u2', -1, '2026-09-14T12:00:00Z', '2026-09-15T12:00:00Z')) v(nd, u, mi, f, t)"
		" ON v.nd = n.name",
	};
	if (gl_test_db_fresh("gl_test_capacity_days", g_dsn, sizeof g_dsn))
		return -1;
	g_c = PQconnectdb(g_dsn);
	if (PQstatus(g_c) != CONNECTION_OK)
		return -1;
	for (size_t i = 0; i < sizeof sql / sizeof sql[0]; i++)
		if (gl_test_exec_dsn(g_dsn, sql[i]) < 1)
			return -1;
	return 0;
}

static int teardown(void **state)
{
	PQfinish(g_c);
	return 0;
}

/* The filters checked, each with the condition on a gl_capacity row
 * (cp, its cluster c) that says the same, keyed as chargeback keys idle. */
static const struct {
	const char *filter, *where;
} g_filters[] = {
	{NULL, "true"},
	{"cluster:\"s1\"", "c.name = 's1'"},
	{"cluster:\"k1\"", "c.name = 'k1'"},
	{"partition:\"p\"", "coalesce(cp.partition, '') = 'p'"},
	{"gpu_model:\"a100\"+cluster:\"k1\"", "gl_gpu_model(cp.gpu_model) = 'a100' AND c.name = 'k1'"},
	{"gpu_model:\"h100\"", "gl_gpu_model(cp.gpu_model) = 'h100'"},
	{"team:\"t\"", "true"}, /* owners do not narrow the fleet */
};

static void check_filtered(int64_t a, int64_t b, int64_t now, size_t fi)
{
	int64_t known = -1, days = -1, end = b < now ? b : now;
	struct gl_err e = {0};
	struct gl_filter f = {0};
	long long want_known, want_days;
	if (g_filters[fi].filter && gl_filter_parse(g_filters[fi].filter, gl_accounting_dims, &f, &e))
		fail_msg("%s: %s", g_filters[fi].filter, e.msg);
	assert_int_equal(gl_accounting_capacity_days(g_c, a, b, now, g_filters[fi].filter ? &f : NULL, &known, &days, &e), 0);
	if (g_filters[fi].filter)
		gl_filter_fini(&f);
	want_known = gl_test_qintf(g_c,
				   "SELECT count(*) FROM generate_series(%lld::bigint / 86400 * 86400, %lld::bigint - 1, 86400) d"
				   " WHERE EXISTS (SELECT 1 FROM gl_capacity(to_timestamp(greatest(d, %lld)),"
				   " to_timestamp(least(d + 86400, %lld))) cp JOIN clusters c USING (cluster_id) WHERE %s)",
				   (long long)a, (long long)end, (long long)a, (long long)end, g_filters[fi].where);
	want_days = gl_test_qintf(g_c, "SELECT count(*) FROM generate_series(%lld::bigint / 86400 * 86400, %lld::bigint - 1, 86400)",
				  (long long)a, (long long)end);
	if (known != want_known || days != want_days)
		fail_msg("[%lld, %lld) now %lld, filter %s: %lld of %lld days, gl_capacity says %lld of %lld",
			 (long long)a, (long long)b, (long long)now,
			 g_filters[fi].filter ? g_filters[fi].filter : "none", (long long)known, (long long)days,
			 want_known, want_days);
}

static void check(int64_t a, int64_t b, int64_t now)
{
	for (size_t fi = 0; fi < sizeof g_filters / sizeof g_filters[0]; fi++)
		check_filtered(a, b, now, fi);
}

static void test_days_as_gl_capacity(void **state)
{
	const int64_t aug1 = 1785542400; /* 2026-08-01T00:00:00Z */
	const int64_t oct1 = aug1 + 61 * 86400;
	const int64_t cuts[] = {aug1, aug1 + 19 * 86400 + 3600, aug1 + 22 * 86400 + 7 * 3600, oct1 - 27 * 86400 + 1,
				oct1 - 6 * 86400 - 60, oct1};
	for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++)
		for (size_t j = i + 1; j < sizeof cuts / sizeof cuts[0]; j++) {
			check(cuts[i], cuts[j], oct1 + 86400 * 400);
			check(cuts[i], cuts[j], cuts[j] - 5000); /* now inside the window */
		}
	/* the whole stretch: Aug 20-23, Sep 2-4, 10, 14-15, 25-30 */
	{
		int64_t known, days;
		struct gl_err e = {0};
		assert_int_equal(gl_accounting_capacity_days(g_c, aug1, oct1, oct1, NULL, &known, &days, &e), 0);
		assert_int_equal(days, 61);
		assert_int_equal(known, 4 + 3 + 1 + 2 + 6);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_days_as_gl_capacity),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
