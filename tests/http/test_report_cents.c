/* The showback report's shown money adds up to the cent (docs/reports.md,
 * "Rounding"): per owner, cost + idle share = total; down the owners table,
 * Σ totals + __idle__ = the fleet total; the reconciliation and the fleet
 * table the same; the *_micros columns exact. Each amount rounded on its
 * own used to break this (three owners of 1.005, 1.015 and 1.025 showed
 * 1.01 + 1.02 + 1.03 beside a fleet total two cents short).
 *
 * tests/fixtures/cents/sacct_cents.txt on the 6 a100 of
 * tests/fixtures/conservation/scontrol_nodes.txt, October 2026, 3.60 a
 * GPU-hour (1,000 micro-units a GPU-second). Real binary over real HTTP,
 * real PostgreSQL; the CSV read back with the tests' own RFC 4180 reader.
 *
 * Worked out by hand:
 *   capacity 6 x 31 x 86,400 = 16,070,400 GPU-s; allocated 1,005 (carol) +
 *   1,015 (alice) + 1,025 (bob) = 3,045; idle 16,067,355 GPU-s =
 *   16,067,355,000 micros; fleet total 16,070,400,000 = 16070.40.
 *
 * shareIdle=none: owner totals 1.005, 1.015, 1.025 and __idle__ 16067.355,
 *   every remainder half a cent. Floors 1.02 + 1.01 + 1.00 + 16067.35 =
 *   16070.38, two cents left, ties by name: "__idle__" < "alice": __idle__
 *   16067.36, alice 1.02, bob 1.02, carol 1.00. Naive: 1.03 + 1.02 + 1.01
 *   + 16067.36 = 16070.42.
 *
 * shareIdle=proportional (by allocated GPU-seconds, largest remainder to
 *   the micro-unit): 16,067,355,000 x 1,005 / 3,045 = 5,303,018,645.32,
 *   x 1,015 / 3,045 = 5,355,785,000, x 1,025 / 3,045 = 5,408,551,354.67;
 *   floors sum to one short, the micro-unit to bob (.67): 5,408,551,355.
 *   Totals: carol 5,304,023,645, alice 5,356,800,000, bob 5,409,576,355;
 *   __idle__ 0. Down the table: floors 5304.02 + 5356.80 + 5409.57 =
 *   16070.39, the cent to bob (remainder .006355): 5409.58. Rows: carol
 *   5304.02 over 1.005 (1.00, .005) and 5303.018645 (5303.01, .008645):
 *   the cent to the idle share, 1.00 + 5303.02 (naive 1.01 + 5303.02 =
 *   5304.03); alice 5356.80 over 1.015 and 5355.785 (both .005): the cost
 *   first, 1.02 + 5355.78; bob 5409.58 over 1.025 (.005) and 5408.551355
 *   (.001355): the cent to the cost, 1.03 + 5408.55 (naive 1.03 + 5408.55
 *   = 5409.58 beside a naive total 5409.58; carol and alice's rows break). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include <cjson/cJSON.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char g_dsn[512];
static struct gl_test_daemon g_d;

static int setup(void **state)
{
	if (gl_test_db_fresh("gl_test_report_cents", g_dsn, sizeof g_dsn))
		return -1;
	if (gl_test_cli(g_dsn, "ingest", "slurm-nodes", "--cluster", "c1", "--nodes",
			gl_test_fixture("tests/fixtures/conservation/scontrol_nodes.txt"), "--at", "2026-09-01T00:00:00Z",
			NULL) ||
	    /* the same inventory seen again on 1 November: October's capacity is firm */
	    gl_test_cli(g_dsn, "ingest", "slurm-nodes", "--cluster", "c1", "--nodes",
			gl_test_fixture("tests/fixtures/conservation/scontrol_nodes.txt"), "--at", "2026-11-01T00:00:00Z",
			NULL))
		return -1;
	if (gl_test_cli(g_dsn, "ingest", "sacct", "--cluster", "c1", "--file",
			gl_test_fixture("tests/fixtures/cents/sacct_cents.txt"), NULL))
		return -1;
	return gl_test_daemon_start(&g_d, g_dsn, "rates:\n  - model: a100\n    per_gpu_hour: \"3.60\"\n",
				    (const char *[]){"--no-ingest", NULL});
}

static int teardown(void **state)
{
	return gl_test_daemon_stop(&g_d) == 0 ? 0 : -1;
}

/* "-12.34" -> -1234 cents; the cell must be exactly that shape. */
static long long cents(const char *s)
{
	long long v = 0;
	int neg = *s == '-';
	const char *p = s + neg, *dot = strchr(p, '.');
	assert_non_null(dot);
	assert_true(dot > p);
	assert_int_equal(strlen(dot), 3);
	for (; *p; p++) {
		if (p == dot)
			continue;
		assert_true(*p >= '0' && *p <= '9');
		v = v * 10 + (*p - '0');
	}
	return neg ? -v : v;
}

static long long ll(const char *s)
{
	char *end;
	long long v = strtoll(s, &end, 10);
	assert_true(*s && !*end);
	return v;
}

static void get_csv(const char *share, const char *table, struct gl_test_csv *t)
{
	struct gl_test_http r;
	char path[256];
	snprintf(path, sizeof path, "/v1/reports/showback?month=2026-10&aggregate=account&shareIdle=%s&table=%s", share,
		 table);
	assert_int_equal(gl_test_http(g_d.port, "GET", path, NULL, 0, NULL, &r), 0);
	assert_int_equal(r.status, 200);
	assert_int_equal(gl_test_csv_parse(r.body, t), 0);
	gl_test_http_fini(&r);
}

/* The metric's value in the fleet table (metric,value rows). */
static const char *fleet_value(const struct gl_test_csv *t, const char *metric)
{
	for (size_t i = 1; i < t->nrows; i++)
		if (t->ncols[i] == 2 && !strcmp(t->cell[i][0], metric))
			return t->cell[i][1];
	fail_msg("fleet table: no metric %s", metric);
	return NULL;
}

/* The reconciliation's line: its amount (cents) and amount_micros. */
static void recon_line(const struct gl_test_csv *t, const char *line, long long *amount, long long *micros)
{
	int ca = gl_test_csv_col(t, "amount"), cm = gl_test_csv_col(t, "amount_micros");
	assert_true(ca >= 0 && cm >= 0);
	for (size_t i = 1; i < t->nrows; i++)
		if (!strcmp(t->cell[i][0], line)) {
			*amount = cents(t->cell[i][ca]);
			*micros = ll(t->cell[i][cm]);
			return;
		}
	fail_msg("reconciliation: no line %s", line);
}

struct want_owner {
	const char *name;
	long long cost, idle_share, total; /* cents shown */
	long long cost_micros, total_micros;
};

/* micro-units to cents, half up (all positive here) */
static long long naive(long long micros)
{
	return (micros + 5000) / 10000;
}

/* Every identity the report states, read from its CSV, and the shown and
 * exact figures worked out above. */
static void check(const char *share, const struct want_owner *want, size_t n_want, long long want_idle)
{
	struct gl_test_csv ow, rc, fl;
	long long sum_cost = 0, sum_share = 0, sum_total = 0, sum_micros = 0, naive_cents = 0;
	int naive_breaks = 0;
	long long owners, owners_m, un, un_m, idle, idle_m, fleet, fleet_m, diff, diff_m;
	int c_cost, c_share, c_total, c_micros;

	get_csv(share, "owners", &ow);
	get_csv(share, "reconciliation", &rc);
	get_csv(share, "fleet", &fl);
	c_cost = gl_test_csv_col(&ow, "cost");
	c_share = gl_test_csv_col(&ow, "idle_share");
	c_total = gl_test_csv_col(&ow, "total");
	c_micros = gl_test_csv_col(&ow, "total_micros");
	assert_true(c_cost >= 0 && c_share >= 0 && c_total >= 0 && c_micros >= 0);
	assert_int_equal(ow.nrows, 1 + n_want);
	for (size_t i = 1; i < ow.nrows; i++) {
		long long c = cents(ow.cell[i][c_cost]), s = cents(ow.cell[i][c_share]), t = cents(ow.cell[i][c_total]);
		long long m = ll(ow.cell[i][c_micros]);
		const struct want_owner *w = NULL;
		for (size_t k = 0; k < n_want; k++)
			if (!strcmp(want[k].name, ow.cell[i][0]))
				w = &want[k];
		assert_non_null(w);
		/* (1) along the row */
		assert_int_equal(c + s, t);
		assert_int_equal(c, w->cost);
		assert_int_equal(s, w->idle_share);
		assert_int_equal(t, w->total);
		/* the exact column unchanged */
		assert_int_equal(m, w->total_micros);
		sum_cost += c;
		sum_share += s;
		sum_total += t;
		sum_micros += m;
		/* each rounded on its own */
		naive_cents += naive(m);
		naive_breaks += naive(w->cost_micros) + naive(m - w->cost_micros) != naive(m);
	}
	recon_line(&rc, "sum of owners", &owners, &owners_m);
	recon_line(&rc, "__unallocated__", &un, &un_m);
	recon_line(&rc, "__idle__", &idle, &idle_m);
	recon_line(&rc, "fleet total", &fleet, &fleet_m);
	recon_line(&rc, "difference", &diff, &diff_m);
	/* the exact lines: as before, and they reconcile to the micro-unit */
	assert_int_equal(fleet_m, 16070400000LL);
	assert_int_equal(owners_m, sum_micros);
	assert_int_equal(un_m, 0);
	assert_int_equal(idle_m, want_idle);
	assert_int_equal(owners_m + un_m + idle_m, fleet_m);
	assert_int_equal(diff_m, 0);
	assert_int_equal(diff, 0);
	/* (2) down the table: Σ shown totals + __idle__ = the shown fleet total */
	assert_int_equal(fleet, 1607040);
	assert_int_equal(owners, sum_total);
	assert_int_equal(un, 0);
	assert_int_equal(owners + un + idle, fleet);
	assert_int_equal(sum_total + idle, fleet);
	/* the fleet table shows the same figures, and they add up too */
	assert_int_equal(cents(fleet_value(&fl, "total")), fleet);
	assert_int_equal(cents(fleet_value(&fl, "idle_cost_left_in___idle__")), idle);
	assert_int_equal(cents(fleet_value(&fl, "allocation_cost")), sum_cost);
	assert_int_equal(cents(fleet_value(&fl, "idle_cost_shared_to_owners")), sum_share);
	assert_int_equal(cents(fleet_value(&fl, "idle_cost_shared_to_owners")) +
				 cents(fleet_value(&fl, "idle_cost_left_in___idle__")),
			 cents(fleet_value(&fl, "unallocated_idle_cost")));
	assert_int_equal(cents(fleet_value(&fl, "allocation_cost")) + cents(fleet_value(&fl, "unallocated_idle_cost")),
			 cents(fleet_value(&fl, "total")));
	/* the data is one on which rounding each amount on its own breaks (1) or (2) */
	naive_breaks += naive_cents + naive(idle_m) != fleet;
	assert_true(naive_breaks > 0);
	gl_test_csv_free(&ow);
	gl_test_csv_free(&rc);
	gl_test_csv_free(&fl);
}

static void test_unshared_adds_up(void **state)
{
	static const struct want_owner w[] = {
		{"alice", 102, 0, 102, 1015000, 1015000},
		{"bob", 102, 0, 102, 1025000, 1025000},
		{"carol", 100, 0, 100, 1005000, 1005000},
	};
	check("none", w, 3, 16067355000LL);
}

static void test_shared_rows_add_up(void **state)
{
	static const struct want_owner w[] = {
		{"carol", 100, 530302, 530402, 1005000, 5304023645LL},
		{"alice", 102, 535578, 535680, 1015000, 5356800000LL},
		{"bob", 103, 540855, 540958, 1025000, 5409576355LL},
	};
	check("proportional", w, 3, 0);
}

/* /v1/chargeback shows the report's cents (one rule for every view): each
 * owner's cost, idle share and total in its JSON and its CSV equal the
 * report's owners table, and its lines and __idle__ add up to its shown
 * total. Rounded on its own, the API showed bob 1.03 beside the report's
 * 1.02, and lines three cents over its total. */
static void api_same_cents(const char *share)
{
	struct gl_test_csv ow, cb;
	struct gl_test_http r;
	char path[256];
	cJSON *j, *st, *it;
	long long sum = 0, csum = 0, total;
	int c_cost, c_share, c_total, k_cost, k_share, k_total, k_acct;

	get_csv(share, "owners", &ow);
	c_cost = gl_test_csv_col(&ow, "cost");
	c_share = gl_test_csv_col(&ow, "idle_share");
	c_total = gl_test_csv_col(&ow, "total");
	snprintf(path, sizeof path, "/v1/chargeback?window=2026-10&aggregate=account&shareIdle=%s", share);
	j = gl_test_get_json(g_d.port, path, 200);
	assert_non_null(j);
	st = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "steps"), 0);
	total = cents(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "totals"), "total")));
	assert_int_equal(total, 1607040);
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(st, "items"))
	{
		const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(it, "name"));
		long long c = cents(cJSON_GetStringValue(cJSON_GetObjectItem(it, "cost")));
		long long s = cents(cJSON_GetStringValue(cJSON_GetObjectItem(it, "idle_share")));
		long long t = cents(cJSON_GetStringValue(cJSON_GetObjectItem(it, "total")));
		size_t i = 1;
		while (i < ow.nrows && strcmp(ow.cell[i][0], name))
			i++;
		assert_true(i < ow.nrows);
		assert_int_equal(c, cents(ow.cell[i][c_cost]));
		assert_int_equal(s, cents(ow.cell[i][c_share]));
		assert_int_equal(t, cents(ow.cell[i][c_total]));
		assert_int_equal(c + s, t);
		assert_int_equal(gl_test_jnum(it, "total_shown_micros"), t * 10000);
		sum += t;
	}
	sum += cents(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(st, "idle"), "total")));
	assert_int_equal(sum, total);
	cJSON_Delete(j);

	/* the CSV: the same cents, and its rows add up to the same total */
	snprintf(path, sizeof path, "/v1/chargeback?window=2026-10&aggregate=account&shareIdle=%s&format=csv", share);
	assert_int_equal(gl_test_http(g_d.port, "GET", path, NULL, 0, NULL, &r), 0);
	assert_int_equal(r.status, 200);
	assert_int_equal(gl_test_csv_parse(r.body, &cb), 0);
	gl_test_http_fini(&r);
	k_acct = gl_test_csv_col(&cb, "account");
	k_cost = gl_test_csv_col(&cb, "cost");
	k_share = gl_test_csv_col(&cb, "idle_share");
	k_total = gl_test_csv_col(&cb, "total");
	assert_true(k_acct >= 0 && k_cost >= 0 && k_share >= 0 && k_total >= 0);
	for (size_t i = 1; i < cb.nrows; i++) {
		size_t o = 1;
		csum += cents(cb.cell[i][k_total]);
		if (!strcmp(cb.cell[i][k_acct], "__idle__"))
			continue;
		while (o < ow.nrows && strcmp(ow.cell[o][0], cb.cell[i][k_acct]))
			o++;
		assert_true(o < ow.nrows);
		assert_int_equal(cents(cb.cell[i][k_cost]), cents(ow.cell[o][c_cost]));
		assert_int_equal(cents(cb.cell[i][k_share]), cents(ow.cell[o][c_share]));
		assert_int_equal(cents(cb.cell[i][k_total]), cents(ow.cell[o][c_total]));
	}
	assert_int_equal(csum, total);
	gl_test_csv_free(&cb);
	gl_test_csv_free(&ow);
}

static void test_api_same_cents(void **state)
{
	api_same_cents("none");
	api_same_cents("proportional");
}

/* HTML shows the CSV's figures (with the default thousands separator):
 * the fleet total and each owner's total. */
static void test_html_same_figures(void **state)
{
	struct gl_test_http r;
	assert_int_equal(gl_test_http(g_d.port, "GET",
				      "/v1/reports/showback?month=2026-10&aggregate=account&shareIdle=none&format=html",
				      NULL, 0, NULL, &r),
			 0);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "<strong class=n id=fleet-total>16,070.40</strong>"));
	{
		const char *own = strstr(r.body, "<table id=owners>"), *end = own ? strstr(own, "</table>") : NULL;
		const char *p = own;
		int n102 = 0, n100 = 0;
		assert_non_null(end);
		while ((p = strstr(p, "<td class=\"n total\">")) && p < end) {
			p += strlen("<td class=\"n total\">");
			n102 += !strncmp(p, "1.02<", 5);
			n100 += !strncmp(p, "1.00<", 5);
		}
		assert_int_equal(n102, 2);
		assert_int_equal(n100, 1);
	}
	{
		const char *rec = strstr(r.body, "<table id=reconciliation>");
		assert_non_null(rec);
		assert_non_null(strstr(rec, "<td>__idle__</td><td class=n>16,067.36</td>"));
	}
	gl_test_http_fini(&r);
}

/* The PDF shows them too (pdftotext -layout, as tests/http/test_report.c
 * reads it, figures grouped): with shared idle, carol's row is 1.00,
 * 5,303.02, 5,304.02 (naive 1.01, 5,303.02, 5,304.02) and bob's 1.03,
 * 5,408.55, 5,409.58. */
static void test_pdf_same_figures(void **state)
{
	struct gl_test_http r;
	char path[512], cmd[600], txt[65536];
	size_t n;
	FILE *f;
	assert_int_equal(gl_test_http(g_d.port, "GET",
				      "/v1/reports/showback?month=2026-10&aggregate=account&shareIdle=proportional"
				      "&format=pdf",
				      NULL, 0, NULL, &r),
			 0);
	assert_int_equal(r.status, 200);
	snprintf(path, sizeof path, "%s/cents.pdf", getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp");
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(r.body, 1, r.len, f), r.len);
	fclose(f);
	gl_test_http_fini(&r);
	snprintf(cmd, sizeof cmd, "pdftotext -layout '%s' -", path);
	f = popen(cmd, "r");
	assert_non_null(f);
	n = fread(txt, 1, sizeof txt - 1, f);
	txt[n] = '\0';
	assert_int_equal(pclose(f), 0);
	assert_non_null(strstr(txt, "Fleet total: 16,070.40 USD"));
	{
		const char *carol = strstr(txt, "carol "), *bob = strstr(txt, "bob ");
		char row[256];
		assert_non_null(carol);
		assert_non_null(bob);
		snprintf(row, sizeof row, "%.*s", (int)strcspn(carol, "\n"), carol);
		assert_non_null(strstr(row, " 1.00 "));
		assert_non_null(strstr(row, " 5,303.02 "));
		assert_non_null(strstr(row, " 5,304.02 "));
		snprintf(row, sizeof row, "%.*s", (int)strcspn(bob, "\n"), bob);
		assert_non_null(strstr(row, " 1.03 "));
		assert_non_null(strstr(row, " 5,408.55 "));
		assert_non_null(strstr(row, " 5,409.58 "));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unshared_adds_up),
		cmocka_unit_test(test_shared_rows_add_up),
		cmocka_unit_test(test_api_same_cents),
		cmocka_unit_test(test_html_same_figures),
		cmocka_unit_test(test_pdf_same_figures),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
