/* Pure parts of the showback report: number formats, the CSV and HTML of a
 * hand-built model (hostile names, "no data" never 0, reconciliation),
 * budget thresholds and the linear forecast, schedule times and file names.
 * Expected values are worked out by hand in the comments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/budget.h"
#include "gl/cost.h"
#include "gl/report.h"
#include "gl/report_sched.h"
#include "gl/report_style.h"
#include "gl/reports.h"
#include "gl/strbuf.h"

#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <stdlib.h>
#include <string.h>

/* The repository's reports/ (the tests run from the top of the tree). */
static void style(struct gl_report_style *st, const char *th, const char *dec)
{
	struct gl_err err = {0};
	if (gl_report_style_load("reports", th, dec, st, &err))
		fail_msg("%s", err.msg);
}

static void test_formats(void **state)
{
	char b[64];
	gl_report_fmt_hours(3600, b, sizeof b);
	assert_string_equal(b, "1.000");
	gl_report_fmt_hours(5, b, sizeof b); /* 5/3600 h = 0.00139 -> 0.001 */
	assert_string_equal(b, "0.001");
	gl_report_fmt_hours(1, b, sizeof b); /* 0.000278 h -> 0.000 */
	assert_string_equal(b, "0.000");
	gl_report_fmt_hours(9, b, sizeof b); /* 0.0025 h: half up -> 0.003 */
	assert_string_equal(b, "0.003");
	gl_report_fmt_pct(1, 3, b, sizeof b); /* 33.333 % -> 33.33 */
	assert_string_equal(b, "33.33");
	gl_report_fmt_pct(2, 3, b, sizeof b); /* 66.667 -> 66.67 */
	assert_string_equal(b, "66.67");
	gl_report_fmt_pct(-1, 4, b, sizeof b);
	assert_string_equal(b, "-25.00");
	gl_report_fmt_pct(5, 0, b, sizeof b);
	assert_string_equal(b, "");
	gl_report_fmt_kwh(3600000000LL, b, sizeof b); /* 3.6e9 mJ = 1 kWh */
	assert_string_equal(b, "1.000");
	gl_report_fmt_kwh(1800000LL, b, sizeof b); /* 0.5 Wh -> 0.001 kWh half up */
	assert_string_equal(b, "0.001");
	assert_string_equal(gl_report_owner_label(""), "(none)");
	assert_int_equal(gl_cost_minor("JPY"), 0);
	assert_int_equal(gl_cost_minor("KWD"), 3);
	assert_int_equal(gl_cost_minor("EUR"), 2);
	assert_int_equal(gl_cost_minor("CLF"), 4);
	assert_int_equal(gl_cost_minor("HUF"), 2); /* ISO 4217 says 2, whatever the coins */
	/* not codes: lower case, old, made up, wrong length */
	assert_int_equal(gl_cost_minor("usd"), -1);
	assert_int_equal(gl_cost_minor("EURO"), -1);
	assert_int_equal(gl_cost_minor("DEM"), -1);
	assert_int_equal(gl_cost_minor("XYZ"), -1);
	assert_int_equal(gl_cost_minor(""), -1);
	assert_int_equal(gl_cost_minor(NULL), -1);
	assert_int_equal(gl_cost_minor("AED"), 2); /* the table's first */
	assert_int_equal(gl_cost_minor("ZWL"), 2); /* and last */
}

/* Two owners (one hostile, one without exporter data) and __idle__. */
static void model(struct gl_sbmodel *sb)
{
	memset(sb, 0, sizeof *sb);
	snprintf(sb->month, sizeof sb->month, "2026-10");
	snprintf(sb->aggregate, sizeof sb->aggregate, "team");
	snprintf(sb->currency, sizeof sb->currency, "USD");
	sb->minor = 2;
	sb->closed = 1;
	sb->n_days = 2;
	sb->day_start = calloc(2, sizeof *sb->day_start);
	sb->day_start[0] = 1790812800; /* 2026-10-01 */
	sb->day_start[1] = 1790899200;
	sb->n_owners = 2;
	sb->owners = calloc(2, sizeof *sb->owners);
	sb->owners[0].name = strdup("=cmd|' /C calc'!A0, \"x\" <script>é");
	sb->owners[0].alloc_s = 7200;
	sb->owners[0].cost_micros = 5000000; /* 5.00 */
	sb->owners[0].total_micros = 5000000;
	sb->owners[0].has_usage = 1;
	sb->owners[0].busy_s = 5400;
	sb->owners[0].aidle_s = 1800;
	sb->owners[0].aidle_micros = 1250000;
	sb->owners[0].daily_s = calloc(2, sizeof(int64_t));
	sb->owners[1].name = strdup("plain");
	sb->owners[1].alloc_s = 3600;
	sb->owners[1].cost_micros = 2500001;
	sb->owners[1].total_micros = 2500001; /* 2.500001 -> "2.50" */
	sb->owners[1].daily_s = calloc(2, sizeof(int64_t));
	sb->fleet.allocated_s = 10800;
	sb->fleet.idle_left_micros = 999999;
	sb->fleet.total_micros = 5000000 + 2500001 + 999999; /* 8.500000 */
	sb->unpriced_models = strdup("");
}

static void test_csv_owners_safe_and_no_data(void **state)
{
	struct gl_sbmodel sb;
	struct gl_strbuf o = GL_STRBUF_INIT;
	model(&sb);
	assert_int_equal(gl_report_csv(&sb, "owners", &o), 0);
	/* the hostile name: quoted (comma, quote), guarded with ', quotes doubled */
	assert_non_null(strstr(o.p, "\r\n\"'=cmd|' /C calc'!A0, \"\"x\"\" <script>é\",7200,2.000,0,5.00,"));
	/* exporter data missing: "no data", not 0 */
	assert_non_null(strstr(o.p, "\r\nplain,3600,1.000,0,2.50,no data,no data,no data,no data,"));
	/* the record ends the CSV with CRLF; header first */
	assert_int_equal(strncmp(o.p, "owner,gpu_seconds,gpu_hours,", 28), 0);
	assert_string_equal(o.p + o.len - 2, "\r\n");
	gl_strbuf_reset(&o);
	assert_int_equal(gl_report_csv(&sb, "reconciliation", &o), 0);
	/* 5000000 + 2500001 + 999999 = 8500000: difference 0 */
	assert_non_null(strstr(o.p, "sum of owners,10800,7.50,7500001\r\n"));
	assert_non_null(strstr(o.p, "__idle__,0,1.00,999999\r\n"));
	assert_non_null(strstr(o.p, "fleet total,0,8.50,8500000\r\n"));
	assert_non_null(strstr(o.p, "difference,10800,0.00,0\r\n"));
	assert_int_equal(gl_report_reconcile_diff(&sb), 0);
	sb.fleet.total_micros += 1;
	assert_int_equal(gl_report_reconcile_diff(&sb), -1);
	gl_strbuf_reset(&o);
	assert_int_equal(gl_report_csv(&sb, "nope", &o), -GL_EINVAL);
	gl_strbuf_fini(&o);
	gl_showback_fini(&sb);
}

static void test_html_escapes(void **state)
{
	struct gl_sbmodel sb;
	struct gl_strbuf o = GL_STRBUF_INIT;
	struct gl_report_style st;
	model(&sb);
	style(&st, ",", ".");
	gl_report_html(&sb, &st, 1793491200, &o);
	gl_report_style_fini(&st);
	assert_null(strstr(o.p, "<script>"));
	assert_non_null(strstr(o.p, "=cmd|&#39; /C calc&#39;!A0, &quot;x&quot; &lt;script&gt;é"));
	assert_non_null(strstr(o.p, "generated at 2026-11-01T00:00:00Z"));
	assert_non_null(strstr(o.p, "Reconciles to the micro-unit."));
	gl_strbuf_fini(&o);
	gl_showback_fini(&sb);
}

static void test_budget_pure(void **state)
{
	int th[GL_SETTINGS_MAX_THRESHOLDS];
	size_t n;
	struct gl_err e = {0};
	assert_int_equal(gl_settings_thresholds_parse("50,75,90,100", th, GL_SETTINGS_MAX_THRESHOLDS, &n, &e), 0);
	assert_int_equal(n, 4);
	assert_int_equal(th[3], 100);
	assert_int_not_equal(gl_settings_thresholds_parse("75,50", th, GL_SETTINGS_MAX_THRESHOLDS, &n, &e), 0);
	assert_int_not_equal(gl_settings_thresholds_parse("50,x", th, GL_SETTINGS_MAX_THRESHOLDS, &n, &e), 0);
	assert_int_not_equal(gl_settings_thresholds_parse("0", th, GL_SETTINGS_MAX_THRESHOLDS, &n, &e), 0);
	/* 10 days into a 30-day month with 100 spent: 300 at month end */
	assert_int_equal(gl_budget_forecast(100, 0, 30 * 86400, 10 * 86400), 300);
	/* a third of a day into 3 days with 1 spent: 9 */
	assert_int_equal(gl_budget_forecast(1, 0, 3 * 86400, 28800), 9);
	/* over: the spend itself */
	assert_int_equal(gl_budget_forecast(123, 0, 86400, 90000), 123);
}

static void test_schedule_and_names(void **state)
{
	int64_t s;
	struct gl_err e = {0};
	char b[128];
	assert_int_equal(gl_settings_schedule_parse("02:30", &s, &e), 0);
	assert_int_equal(s, 2 * 3600 + 30 * 60);
	assert_int_not_equal(gl_settings_schedule_parse("24:00", &s, &e), 0);
	assert_int_not_equal(gl_settings_schedule_parse("2:30", &s, &e), 0);
	assert_int_not_equal(gl_settings_schedule_parse("02:30x", &s, &e), 0);
	gl_report_sched_name("2026-10", "team", GL_CHARGEBACK_SHARE_NONE, "owners", "csv", 1, b, sizeof b);
	assert_string_equal(b, "showback-2026-10-team-owners.csv");
	gl_report_sched_name("2026-10", "team", GL_CHARGEBACK_SHARE_NONE, NULL, "pdf", 3, b, sizeof b);
	assert_string_equal(b, "showback-2026-10-team.v3.pdf");
	/* a shared idle is named: its figures are not the unshared set's */
	gl_report_sched_name("2026-10", "team", GL_CHARGEBACK_SHARE_PROPORTIONAL, "owners", "csv", 2, b, sizeof b);
	assert_string_equal(b, "showback-2026-10-team-idle_proportional-owners.v2.csv");
	gl_report_sched_name("2026-10", "team", GL_CHARGEBACK_SHARE_OWNER, NULL, "html", 1, b, sizeof b);
	assert_string_equal(b, "showback-2026-10-team-idle_owner.html");
	assert_int_equal(gl_showback_month_parse("2026-10", &s, &e), 0);
	assert_int_equal(s, 1790812800);
	assert_int_not_equal(gl_showback_month_parse("2026-1", &s, &e), 0);
	assert_int_not_equal(gl_showback_month_parse("2026-13", &s, &e), 0);
	assert_int_not_equal(gl_showback_month_parse("2026-10-01", &s, &e), 0);
}

/* Shown money that adds up (largest remainder, ties by name). Every
 * expectation is worked out by hand in the comment beside it. */
static void test_shown_parts(void **state)
{
	int64_t out[4];
	(void)state;
	/* half away from zero, in micro-units */
	assert_int_equal(gl_cost_round(1005000, 2), 1010000);
	assert_int_equal(gl_cost_round(1004999, 2), 1000000);
	assert_int_equal(gl_cost_round(-1005000, 2), -1010000);
	assert_int_equal(gl_cost_round(-1004999, 2), -1000000);
	assert_int_equal(gl_cost_round(100500000, 0), 101000000);
	assert_int_equal(gl_cost_round(1500, 3), 2000);
	{
		/* three owners of 1.005 each: the total 3.015 shows 3.02, naive
		 * rounding 1.01 x 3 = 3.03 (a cent off). Floors 1.00 x 3 = 3.00,
		 * two cents left; equal remainders 0.005: by name, alice (index 1)
		 * and bob (index 2) get one each, carol (index 0) stays 1.00. */
		const int64_t part[3] = {1005000, 1005000, 1005000};
		const char *const name[3] = {"carol", "alice", "bob"};
		assert_int_equal(gl_cost_shown_parts(3020000, part, name, 3, 2, out), 0);
		assert_int_equal(out[0], 1000000);
		assert_int_equal(out[1], 1010000);
		assert_int_equal(out[2], 1010000);
	}
	{
		/* the reviewer's dave: cost 0.2430 + idle share 125.6745 = 125.9175,
		 * shown 125.92; naive 0.24 + 125.67 = 125.91. Floors 0.24 + 125.67,
		 * one cent left, to the larger remainder (0.0045 > 0.0030): the
		 * idle share, 0.24 + 125.68 = 125.92. */
		const int64_t part[2] = {243000, 125674500};
		assert_int_equal(gl_cost_shown_parts(125920000, part, NULL, 2, 2, out), 0);
		assert_int_equal(out[0], 240000);
		assert_int_equal(out[1], 125680000);
		/* equal remainders without names: the lower index first */
		const int64_t eq[2] = {244000, 125674000}; /* 125.918 -> 125.92 */
		assert_int_equal(gl_cost_shown_parts(125920000, eq, NULL, 2, 2, out), 0);
		assert_int_equal(out[0], 250000);
		assert_int_equal(out[1], 125670000);
	}
	{
		/* a credit: -1.005 + 3.004 = 1.999, shown 2.00; naive -1.01 + 3.00
		 * = 1.99. Floors -1.01 (remainder 0.005) and 3.00 (0.004): the
		 * cent goes to the credit, -1.00 + 3.00 = 2.00. */
		const int64_t part[2] = {-1005000, 3004000};
		assert_int_equal(gl_cost_shown_parts(2000000, part, NULL, 2, 2, out), 0);
		assert_int_equal(out[0], -1000000);
		assert_int_equal(out[1], 3000000);
	}
	{
		/* JPY, no decimals: 100.5 yen x 3 = 301.5, shown 302; floors 300,
		 * two yen left; ties by name: x (index 2), y (index 1). */
		const int64_t part[3] = {100500000, 100500000, 100500000};
		const char *const name[3] = {"z", "y", "x"};
		assert_int_equal(gl_cost_shown_parts(302000000, part, name, 3, 0, out), 0);
		assert_int_equal(out[0], 100000000);
		assert_int_equal(out[1], 101000000);
		assert_int_equal(out[2], 101000000);
	}
	{
		/* BHD, three decimals: 0.0015 x 4 = 0.006 shown 0.006, naive 0.002 x
		 * 4 = 0.008. Floors 0.001 x 4, two mils left: a (index 1), b
		 * (index 0). */
		const int64_t part[4] = {1500, 1500, 1500, 1500};
		const char *const name[4] = {"b", "a", "d", "c"};
		assert_int_equal(gl_cost_shown_parts(6000, part, name, 4, 3, out), 0);
		assert_int_equal(out[0], 2000);
		assert_int_equal(out[1], 2000);
		assert_int_equal(out[2], 1000);
		assert_int_equal(out[3], 1000);
	}
	{
		/* a shown total the parts cannot make: refused, each part rounded
		 * on its own */
		const int64_t part[2] = {1005000, 1000000};
		assert_int_equal(gl_cost_shown_parts(2015000, part, NULL, 2, 2, out), -GL_EINVAL); /* not whole cents */
		assert_int_equal(out[0], 1010000);
		assert_int_equal(gl_cost_shown_parts(5000000, part, NULL, 2, 2, out), -GL_EINVAL); /* 3 cents > 2 parts */
		assert_int_equal(gl_cost_shown_parts(1990000, part, NULL, 2, 2, out), -GL_EINVAL); /* below the floors */
		assert_int_equal(out[1], 1000000);
	}
}

/* A hand-built model whose amounts round badly one by one: the CSV, HTML
 * and fleet rows show figures that add up. Owners a, b, c: cost 1.002 +
 * idle share 0.003 = 1.005 each, __idle__ 0.004; fleet total 3.019 shows
 * 3.02. Down the table: floors 1.00 x 3 + 0.00, two cents left; remainders
 * a, b, c 0.005, __idle__ 0.004: a and b (by name) get 1.01, c 1.00,
 * __idle__ 0.00. Along a's row: 1.01 over cost 1.002 (floor 1.00, 0.002)
 * and idle 0.003 (floor 0.00, 0.003): the cent to the idle share, 1.00 +
 * 0.01; c: 1.00 = 1.00 + 0.00. Fleet: allocation 1.00 x 3 = 3.00, shared
 * 0.01 + 0.01 + 0.00 = 0.02, left 0.00, unallocated idle 0.02, total 3.02.
 * Naive rounding would show 1.01 x 3 + 0.00 = 3.03 beside 3.02. */
static void test_shown_model(void **state)
{
	struct gl_sbmodel sb;
	struct gl_strbuf o = GL_STRBUF_INIT;
	struct gl_report_fleet_row rows[GL_REPORT_FLEET_ROWS];
	const char *const names[3] = {"c", "b", "a"}; /* the model's order: total desc, then name, here reversed on purpose */
	size_t n;
	struct gl_report_style st;
	(void)state;
	memset(&sb, 0, sizeof sb);
	snprintf(sb.month, sizeof sb.month, "2026-10");
	snprintf(sb.aggregate, sizeof sb.aggregate, "team");
	snprintf(sb.currency, sizeof sb.currency, "USD");
	sb.minor = 2;
	sb.closed = 1;
	sb.n_owners = 3;
	sb.owners = calloc(3, sizeof *sb.owners);
	for (size_t i = 0; i < 3; i++) {
		sb.owners[i].name = strdup(names[i]);
		sb.owners[i].cost_micros = 1002000;
		sb.owners[i].idle_share_micros = 3000;
		sb.owners[i].total_micros = 1005000;
	}
	sb.fleet.capacity_known = 1;
	sb.fleet.cost_micros = 3006000;
	sb.fleet.idle_total_micros = 9000 + 4000;
	sb.fleet.idle_left_micros = 4000;
	sb.fleet.total_micros = 3019000;
	sb.unpriced_models = strdup("");
	assert_int_equal(gl_report_csv(&sb, "owners", &o), 0);
	assert_non_null(strstr(o.p, "\r\nc,0,0.000,0,1.00,no data,no data,no data,no data,0.000,0.00,1.00,1005000,"));
	assert_non_null(strstr(o.p, "\r\nb,0,0.000,0,1.00,no data,no data,no data,no data,0.000,0.01,1.01,1005000,"));
	assert_non_null(strstr(o.p, "\r\na,0,0.000,0,1.00,no data,no data,no data,no data,0.000,0.01,1.01,1005000,"));
	gl_strbuf_reset(&o);
	assert_int_equal(gl_report_csv(&sb, "reconciliation", &o), 0);
	assert_non_null(strstr(o.p, "sum of owners,0,3.02,3015000\r\n"));
	assert_non_null(strstr(o.p, "__idle__,0,0.00,4000\r\n"));
	assert_non_null(strstr(o.p, "fleet total,0,3.02,3019000\r\n"));
	n = gl_report_fleet_rows(&sb, rows);
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(rows[i].key, "allocation_cost"))
			assert_string_equal(rows[i].value, "3.00");
		if (!strcmp(rows[i].key, "unallocated_idle_cost"))
			assert_string_equal(rows[i].value, "0.02");
		if (!strcmp(rows[i].key, "idle_cost_shared_to_owners"))
			assert_string_equal(rows[i].value, "0.02");
		if (!strcmp(rows[i].key, "idle_cost_left_in___idle__"))
			assert_string_equal(rows[i].value, "0.00");
		if (!strcmp(rows[i].key, "total"))
			assert_string_equal(rows[i].value, "3.02");
	}
	gl_strbuf_reset(&o);
	style(&st, ",", ".");
	gl_report_html(&sb, &st, 1790812800, &o);
	gl_report_style_fini(&st);
	assert_non_null(strstr(o.p, "<strong class=n id=fleet-total>3.02</strong>"));
	assert_non_null(strstr(o.p, "<td class=\"n total\">1.01</td>"));
	gl_strbuf_fini(&o);
	gl_showback_fini(&sb);
}

/* The fleet rows: the CSV table in order, identity rows unlabelled, "no
 * data" where the model knows nothing (no capacity, no exporter, no
 * energy), and the values the CSV shows. */
static void test_fleet_rows_one_list(void **state)
{
	struct gl_sbmodel sb;
	struct gl_report_fleet_row rows[GL_REPORT_FLEET_ROWS];
	struct gl_strbuf csv = GL_STRBUF_INIT;
	size_t n, labelled = 0;
	(void)state;
	model(&sb);
	n = gl_report_fleet_rows(&sb, rows);
	assert_true(n <= GL_REPORT_FLEET_ROWS);
	assert_string_equal(rows[0].key, "month");
	assert_null(rows[0].label);
	for (size_t i = 0; i < n; i++) {
		labelled += rows[i].label != NULL;
		if (!strcmp(rows[i].key, "capacity_gpu_hours") || !strcmp(rows[i].key, "busy_gpu_hours") ||
		    !strcmp(rows[i].key, "energy_kwh") || !strcmp(rows[i].key, "saturation_pct"))
			assert_string_equal(rows[i].value, "no data");
		if (!strcmp(rows[i].key, "allocated_gpu_hours"))
			assert_string_equal(rows[i].value, "3.000");
		if (!strcmp(rows[i].key, "total"))
			assert_string_equal(rows[i].value, "8.50");
	}
	assert_int_equal(labelled, n - 5);
	/* the CSV table is exactly these rows under a metric,value header */
	assert_int_equal(gl_report_csv(&sb, "fleet", &csv), 0);
	{
		struct gl_strbuf want = GL_STRBUF_INIT;
		gl_strbuf_puts(&want, "metric,value\r\n");
		for (size_t i = 0; i < n; i++)
			gl_strbuf_printf(&want, "%s,%s\r\n", rows[i].key, rows[i].value); /* none needs quoting */
		assert_string_equal(gl_strbuf_cstr(&csv), gl_strbuf_cstr(&want));
		gl_strbuf_fini(&want);
	}
	gl_strbuf_fini(&csv);
	gl_showback_fini(&sb);
}

/* A report is written under a name no one can plant beforehand: a symlink
 * at the old predictable temporary name (.NAME.tmp<pid>) used to redirect
 * the write into whatever it pointed at. */
static void test_write_file_no_planted_tmp(void **state)
{
	char dir[] = "/tmp/gl-reports-XXXXXX", link_path[256], victim[256], path[256], buf[64] = "";
	struct gl_strbuf b = GL_STRBUF_INIT;
	struct gl_err err = {0};
	struct stat st;
	FILE *f;
	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(victim, sizeof victim, "%s/victim", dir);
	f = fopen(victim, "w");
	assert_non_null(f);
	fputs("keep", f);
	fclose(f);
	snprintf(link_path, sizeof link_path, "%s/.r.csv.tmp%ld", dir, (long)getpid());
	assert_int_equal(symlink(victim, link_path), 0);
	gl_strbuf_puts(&b, "a,b\r\n");
	assert_int_equal(gl_reports_write_file(dir, "r.csv", &b, &err), 0);
	f = fopen(victim, "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof buf, f));
	fclose(f);
	assert_string_equal(buf, "keep");
	snprintf(path, sizeof path, "%s/r.csv", dir);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0644);
	assert_int_equal(st.st_size, 5);
	/* the mode is the process's umask's, as any file it creates: a
	 * deployment that keeps reports from other users (umask 027) gets
	 * 0640, not a world-readable 0644 */
	{
		mode_t old = umask(027);
		int wrc = gl_reports_write_file(dir, "r.csv", &b, &err);
		umask(old);
		assert_int_equal(wrc, 0);
		assert_int_equal(lstat(path, &st), 0);
		assert_int_equal(st.st_mode & 0777, 0640);
	}
	unlink(path);
	unlink(link_path);
	unlink(victim);
	rmdir(dir);
	gl_strbuf_fini(&b);
}

/* The site's separators in the leading number only; text, dates and the
 * rest of a cell unchanged. */
static void test_fmt_local(void **state)
{
	struct gl_report_style en = {.thousands = ",", .decimal = "."}, de = {.thousands = ".", .decimal = ","},
			       none = {.thousands = "", .decimal = "."}, nb = {.thousands = "\u202f", .decimal = ","};
	char b[96];
	(void)state;
	gl_report_fmt_local(&en, "276364.80", b, sizeof b);
	assert_string_equal(b, "276,364.80");
	gl_report_fmt_local(&en, "1234567", b, sizeof b);
	assert_string_equal(b, "1,234,567");
	gl_report_fmt_local(&en, "-1234.5 + unpriced", b, sizeof b);
	assert_string_equal(b, "-1,234.5 + unpriced");
	gl_report_fmt_local(&en, "999.999", b, sizeof b);
	assert_string_equal(b, "999.999");
	gl_report_fmt_local(&en, "327 h 08 min", b, sizeof b);
	assert_string_equal(b, "327 h 08 min");
	gl_report_fmt_local(&en, "1327 h 08 min", b, sizeof b);
	assert_string_equal(b, "1,327 h 08 min");
	gl_report_fmt_local(&de, "273088.227", b, sizeof b);
	assert_string_equal(b, "273.088,227");
	gl_report_fmt_local(&none, "273088.227", b, sizeof b);
	assert_string_equal(b, "273088.227");
	gl_report_fmt_local(&nb, "1000000.5", b, sizeof b);
	assert_string_equal(b, "1\u202f000\u202f000,5");
	/* not numbers: copied as they are */
	static const char *const keep[] = {"no data", "2026-10-01", "12ab", "1.", "-", "", "a100", "1.2.3"};
	for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++) {
		gl_report_fmt_local(&en, keep[i], b, sizeof b);
		assert_string_equal(b, keep[i]);
	}
}

static void test_fmt_wait_and_gpus(void **state)
{
	char b[48];
	(void)state;
	gl_report_fmt_wait(0, b, sizeof b);
	assert_string_equal(b, "0 s");
	gl_report_fmt_wait(59, b, sizeof b);
	assert_string_equal(b, "59 s");
	gl_report_fmt_wait(60, b, sizeof b);
	assert_string_equal(b, "1 min");
	gl_report_fmt_wait(89, b, sizeof b); /* 1.48 min */
	assert_string_equal(b, "1 min");
	gl_report_fmt_wait(3599, b, sizeof b); /* 59.98 min rounds to the hour */
	assert_string_equal(b, "1 h 00 min");
	gl_report_fmt_wait(1177708, b, sizeof b); /* 19,628.47 min = 327 h 8 min */
	assert_string_equal(b, "327 h 08 min");
	gl_report_fmt_gpus_shown(16 * GL_GPU_MICRO, b, sizeof b);
	assert_string_equal(b, "16");
	gl_report_fmt_gpus_shown(0, b, sizeof b);
	assert_string_equal(b, "0");
	gl_report_fmt_gpus_shown(GL_GPU_MICRO / 2, b, sizeof b);
	assert_string_equal(b, "0.500");
	gl_report_fmt_gpus_shown(GL_GPU_MICRO / 7, b, sizeof b);
	assert_string_equal(b, "0.142857");
	/* the CSV keeps its fixed decimals */
	gl_report_fmt_gpus(16 * GL_GPU_MICRO, b, sizeof b);
	assert_string_equal(b, "16.000");
}

/* Round ticks: the chart, whose one label was its maximum
 * (14895.092 GPU-h), gets 0, 5,000, 10,000 and 15,000. */
static void test_axis_ticks(void **state)
{
	struct gl_report_axis ax;
	char b[32];
	(void)state;
	gl_report_axis_ticks(14895092, 6, &ax);
	assert_int_equal(ax.step_milli, 5000000);
	assert_int_equal(ax.ticks, 3);
	assert_int_equal(ax.top_milli, 15000000);
	gl_report_fmt_tick(&ax, ax.step_milli * 2, b, sizeof b);
	assert_string_equal(b, "10000");
	gl_report_axis_ticks(11000000, 6, &ax); /* 11,000: 2,000 x 6 = 12,000 */
	assert_int_equal(ax.step_milli, 2000000);
	assert_int_equal(ax.ticks, 6);
	gl_report_axis_ticks(2300, 6, &ax); /* 2.3 h: 0.5 x 5 */
	assert_int_equal(ax.step_milli, 500);
	assert_int_equal(ax.ticks, 5);
	gl_report_fmt_tick(&ax, 1500, b, sizeof b);
	assert_string_equal(b, "1.5");
	gl_report_axis_ticks(0, 6, &ax); /* an empty month still has an axis */
	assert_true(ax.ticks >= 1 && ax.top_milli >= 1);
	for (int64_t m = 1; m < 100000000; m = m * 3 + 7) {
		gl_report_axis_ticks(m, 6, &ax);
		assert_true(ax.top_milli >= m && ax.ticks <= 6 && ax.ticks >= 1);
		assert_true(ax.top_milli - ax.step_milli < m); /* no empty interval on top */
	}
}

static void put_file(const char *dir, const char *name, const char *text)
{
	char path[512];
	FILE *f;
	snprintf(path, sizeof path, "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *b = calloc(1, 1 << 16);
	assert_non_null(f);
	assert_true(fread(b, 1, (1 << 16) - 1, f) > 0);
	fclose(f);
	return b;
}

/* The page is the template directory's: a site edits reports/ and the next
 * rendering shows it, nothing recompiled; numbers take its separators. */
static void test_html_template_from_dir(void **state)
{
	char dir[] = "/tmp/gl-report-tmpl-XXXXXX", path[256];
	static const char *const files[] = {"showback.html", "showback.css", "pdf-layout.yaml"};
	struct gl_sbmodel sb;
	struct gl_report_style st;
	struct gl_strbuf o = GL_STRBUF_INIT;
	struct gl_err err = {0};
	(void)state;
	assert_non_null(mkdtemp(dir));
	for (size_t i = 0; i < 3; i++) {
		char src[64], *t;
		snprintf(src, sizeof src, "reports/%s", files[i]);
		t = slurp(src);
		put_file(dir, files[i], t);
		free(t);
	}
	model(&sb);
	sb.fleet.allocated_s = 12345 * 3600 + 1800; /* 12,345.5 GPU-h */
	sb.fleet.usage_known = 1; /* the first owner has exporter data */
	assert_int_equal(gl_report_style_load(dir, ",", ".", &st, &err), 0);
	gl_report_html(&sb, &st, 1793491200, &o);
	gl_report_style_fini(&st);
	assert_non_null(strstr(o.p, "<title>GPU showback 2026-10</title>"));
	assert_non_null(strstr(o.p, "@page { size: A4")); /* the CSS file, inlined */
	assert_non_null(strstr(o.p, "<strong class=n id=allocated-hours>12,345.500</strong>"));
	assert_null(strstr(o.p, "site-x"));
	/* the site's own look */
	put_file(dir, "showback.html", "<!DOCTYPE html>\n<html><head><title>ACME {{title}}</title>"
				       "<style>{{css}}</style></head>\n<body><main class=site-x>{{body}}</main></body></html>\n");
	put_file(dir, "showback.css", ".site-x { color: #123456 }\n");
	gl_strbuf_reset(&o);
	assert_int_equal(gl_report_style_load(dir, ".", ",", &st, &err), 0);
	gl_report_html(&sb, &st, 1793491200, &o);
	gl_report_style_fini(&st);
	assert_non_null(strstr(o.p, "<title>ACME GPU showback 2026-10</title>"));
	assert_non_null(strstr(o.p, "<style>.site-x { color: #123456 }\n</style>"));
	assert_non_null(strstr(o.p, "<main class=site-x><h1>GPU showback 2026-10</h1>"));
	assert_null(strstr(o.p, "@page"));
	assert_non_null(strstr(o.p, "<strong class=n id=allocated-hours>12.345,500</strong>"));
	/* a Swiss apostrophe goes in as it is, the escaped text around it untouched */
	gl_strbuf_reset(&o);
	assert_int_equal(gl_report_style_load(dir, "'", ".", &st, &err), 0);
	gl_report_html(&sb, &st, 1793491200, &o);
	gl_report_style_fini(&st);
	assert_non_null(strstr(o.p, "<strong class=n id=allocated-hours>12'345.500</strong>"));
	assert_non_null(strstr(o.p, "=cmd|&#39; /C calc&#39;!A0, &quot;x&quot; &lt;script&gt;é"));
	/* the busy/idle chart is there when the month has exporter data, a
	 * sentence in its place when not */
	assert_null(strstr(o.p, "id=no-usage"));
	sb.fleet.usage_known = 0;
	gl_strbuf_reset(&o);
	assert_int_equal(gl_report_style_load(dir, ",", ".", &st, &err), 0);
	gl_report_html(&sb, &st, 1793491200, &o);
	gl_report_style_fini(&st);
	assert_non_null(strstr(o.p, gl_report_no_usage_note));
	assert_null(strstr(o.p, "green: busy GPU-hours"));
	for (size_t i = 0; i < 3; i++) {
		snprintf(path, sizeof path, "%s/%s", dir, files[i]);
		unlink(path);
	}
	rmdir(dir);
	gl_strbuf_fini(&o);
	gl_showback_fini(&sb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_formats),
		cmocka_unit_test(test_csv_owners_safe_and_no_data),
		cmocka_unit_test(test_html_escapes),
		cmocka_unit_test(test_budget_pure),
		cmocka_unit_test(test_schedule_and_names),
		cmocka_unit_test(test_fleet_rows_one_list),
		cmocka_unit_test(test_shown_parts),
		cmocka_unit_test(test_shown_model),
		cmocka_unit_test(test_write_file_no_planted_tmp),
		cmocka_unit_test(test_fmt_local),
		cmocka_unit_test(test_fmt_wait_and_gpus),
		cmocka_unit_test(test_axis_ticks),
		cmocka_unit_test(test_html_template_from_dir),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
