/* gl_acct_capacity_days counts the UTC days of a window that have capacity
 * data, worked out from the spans for speed (asking gl_capacity day by day
 * took seconds for a year of a large fleet). The oracle here is the
 * definition itself: a day counts when gl_capacity(day clipped to the
 * window) has a row. Scheduler spans with gaps (one closing and reopening
 * inside a day, one shorter than a day), and a cluster with exporter GPUs
 * only (two MIG rows of one GPU merged, one GPU absent for a while);
 * windows that cut days anywhere. Real PostgreSQL. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/accounting.h"
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

static void check(int64_t a, int64_t b, int64_t now)
{
	int64_t known = -1, days = -1, end = b < now ? b : now;
	struct gl_err e = {0};
	long long want_known, want_days;
	assert_int_equal(gl_acct_capacity_days(g_c, a, b, now, &known, &days, &e), 0);
	want_known = gl_test_qintf(g_c,
				   "SELECT count(*) FROM generate_series(%lld::bigint / 86400 * 86400, %lld::bigint - 1, 86400) d"
				   " WHERE EXISTS (SELECT 1 FROM gl_capacity(to_timestamp(greatest(d, %lld)),"
				   " to_timestamp(least(d + 86400, %lld))))",
				   (long long)a, (long long)end, (long long)a, (long long)end);
	want_days = gl_test_qintf(g_c, "SELECT count(*) FROM generate_series(%lld::bigint / 86400 * 86400, %lld::bigint - 1, 86400)",
				  (long long)a, (long long)end);
	if (known != want_known || days != want_days)
		fail_msg("[%lld, %lld) now %lld: %lld of %lld days, gl_capacity says %lld of %lld", (long long)a,
			 (long long)b, (long long)now, (long long)known, (long long)days, want_known, want_days);
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
		assert_int_equal(gl_acct_capacity_days(g_c, aug1, oct1, oct1, &known, &days, &e), 0);
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
