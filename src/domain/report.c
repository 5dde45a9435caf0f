/* Showback report renderers: CSV and HTML (see include/gl/report.h). */
#include "gl/report.h"
#include "gl/capacity.h"
#include "gl/cost.h"
#include "gl/csv.h"
#include "gl/timeutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const gl_report_tables[] = {"owners", "models", "daily", "fleet", "waits", "top_cost", "top_idle",
					 "reconciliation", "rates", "owner_rules", "partial", "inference", NULL};


void gl_report_fmt_hours(int64_t s, char *buf, size_t n)
{
	int neg = s < 0;
	int64_t u = neg ? -s : s, milli = (u * 1000 * 2 + 3600) / 7200; /* thousandths of an hour, half up */
	snprintf(buf, n, "%s%lld.%03lld", neg ? "-" : "", (long long)(milli / 1000), (long long)(milli % 1000));
}

void gl_report_fmt_job_money(const struct gl_sbmodel *sb, const struct gl_sbmodel_job *j, int64_t micros, char *buf,
			     size_t n)
{
	char m[48];
	if (j->unpriced_s > 0 && j->unpriced_s >= j->alloc_s) {
		snprintf(buf, n, "unpriced");
		return;
	}
	gl_cost_format(micros, sb->minor, m, sizeof m);
	snprintf(buf, n, "%s%s", m, j->unpriced_s > 0 ? " + unpriced" : "");
}

void gl_report_fmt_pct(int64_t num, int64_t den, char *buf, size_t n)
{
	gl_cost_i128 v;
	int neg;
	if (den == 0) {
		snprintf(buf, n, "%s", "");
		return;
	}
	neg = (num < 0) != (den < 0) && num != 0;
	if (num < 0)
		num = -num;
	if (den < 0)
		den = -den;
	v = ((gl_cost_i128)num * 10000 * 2 + den) / ((gl_cost_i128)den * 2); /* hundredths of a percent */
	snprintf(buf, n, "%s%lld.%02lld", neg ? "-" : "", (long long)(v / 100), (long long)(v % 100));
}

void gl_report_fmt_kwh(int64_t mj, char *buf, size_t n)
{
	/* 1 kWh = 3.6e9 mJ; three decimals = Wh */
	int64_t wh = (mj * 2 + 3600000) / 7200000;
	snprintf(buf, n, "%lld.%03lld", (long long)(wh / 1000), (long long)(wh % 1000));
}

void gl_report_fmt_gpus(int64_t micro, char *buf, size_t n)
{
	if (micro % 1000 == 0)
		snprintf(buf, n, "%lld.%03lld", (long long)(micro / GL_GPU_MICRO), (long long)(micro % GL_GPU_MICRO / 1000));
	else
		snprintf(buf, n, "%lld.%06lld", (long long)(micro / GL_GPU_MICRO), (long long)(micro % GL_GPU_MICRO));
}

void gl_report_fmt_gpus_shown(int64_t micro, char *buf, size_t n)
{
	if (micro % GL_GPU_MICRO == 0)
		snprintf(buf, n, "%lld", (long long)(micro / GL_GPU_MICRO));
	else
		gl_report_fmt_gpus(micro, buf, n);
}

void gl_report_fmt_wait(int64_t s, char *buf, size_t n)
{
	int64_t m = (s + 30) / 60;
	if (s < 60)
		snprintf(buf, n, "%lld s", (long long)(s < 0 ? 0 : s));
	else if (m < 60)
		snprintf(buf, n, "%lld min", (long long)m);
	else
		snprintf(buf, n, "%lld h %02lld min", (long long)(m / 60), (long long)(m % 60));
}

void gl_report_fmt_local(const struct gl_report_style *st, const char *in, char *buf, size_t n)
{
	size_t i = 0, d0, d1, o = 0;
	char tmp[256];
	if (in[i] == '-')
		i++;
	d0 = i;
	while (in[i] >= '0' && in[i] <= '9')
		i++;
	d1 = i;
	/* a plain number ends the text or a word: "2026-10-01" and "12ab" are not one */
	if (d1 == d0 || (in[i] && in[i] != '.' && in[i] != ' ') ||
	    (in[i] == '.' && !(in[i + 1] >= '0' && in[i + 1] <= '9'))) {
		snprintf(buf, n, "%s", in);
		return;
	}
	if (d0)
		tmp[o++] = '-';
	for (size_t k = d0; k < d1 && o + 16 < sizeof tmp; k++) {
		tmp[o++] = in[k];
		if ((d1 - k - 1) % 3 == 0 && k + 1 < d1)
			for (const char *t = st->thousands; *t && o + 16 < sizeof tmp; t++)
				tmp[o++] = *t;
	}
	if (in[i] == '.') {
		for (const char *t = st->decimal; *t && o + 16 < sizeof tmp; t++)
			tmp[o++] = *t;
		i++;
		while (in[i] >= '0' && in[i] <= '9' && o + 2 < sizeof tmp)
			tmp[o++] = in[i++];
		if (in[i] && in[i] != ' ') {
			snprintf(buf, n, "%s", in);
			return;
		}
	}
	tmp[o] = '\0';
	snprintf(buf, n, "%s%s", tmp, in + i);
}

int gl_report_seps_check(const char *thousands, const char *decimal, struct gl_err *err)
{
	const char *v[] = {thousands, decimal};
	if (!decimal[0])
		return gl_err_set(err, GL_EINVAL, "decimal_separator: must not be empty");
	for (int i = 0; i < 2; i++) {
		if (strlen(v[i]) > 7)
			return gl_err_set(err, GL_EINVAL, "'%s' is longer than 7 bytes", v[i]);
		if (strpbrk(v[i], "0123456789-<>&"))
			return gl_err_set(err, GL_EINVAL, "'%s' may not hold a digit, '-', '<', '>' or '&'", v[i]);
	}
	if (!strcmp(thousands, decimal))
		return gl_err_set(err, GL_EINVAL, "thousands and decimal separators are both '%s'", decimal);
	return 0;
}

void gl_report_axis_ticks(int64_t max_milli, int max_ticks, struct gl_report_axis *ax)
{
	static const int mant[] = {1, 2, 5};
	int64_t p = 1;
	if (max_milli < 1)
		max_milli = 1;
	if (max_ticks < 1)
		max_ticks = 1;
	for (;;) {
		for (size_t k = 0; k < 3; k++) {
			int64_t step = mant[k] * p, t = (max_milli + step - 1) / step;
			if (t <= max_ticks) {
				ax->step_milli = step;
				ax->ticks = (int)t;
				ax->top_milli = step * t;
				return;
			}
		}
		p *= 10;
	}
}

void gl_report_fmt_tick(const struct gl_report_axis *ax, int64_t milli, char *buf, size_t n)
{
	if (ax->step_milli % 1000 == 0)
		snprintf(buf, n, "%lld", (long long)(milli / 1000));
	else if (ax->step_milli % 100 == 0)
		snprintf(buf, n, "%lld.%01lld", (long long)(milli / 1000), (long long)(milli % 1000 / 100));
	else if (ax->step_milli % 10 == 0)
		snprintf(buf, n, "%lld.%02lld", (long long)(milli / 1000), (long long)(milli % 1000 / 10));
	else
		snprintf(buf, n, "%lld.%03lld", (long long)(milli / 1000), (long long)(milli % 1000));
}

const char *gl_report_owner_label(const char *key)
{
	return key && *key ? key : "(none)";
}

int64_t gl_report_reconcile_diff(const struct gl_sbmodel *sb)
{
	int64_t sum = sb->fleet.idle_left_micros;
	for (size_t i = 0; i < sb->n_owners; i++)
		sum += sb->owners[i].total_micros;
	return sum - sb->fleet.total_micros;
}

void gl_report_shown_compute(const struct gl_sbmodel *sb, struct gl_report_shown *out)
{
	const struct gl_sbmodel_fleet *f = &sb->fleet;
	size_t n = sb->n_owners;
	int64_t *cost = gl_xcalloc(n + 1, sizeof *cost), *share = gl_xcalloc(n + 1, sizeof *share);
	const char **name = gl_xcalloc(n + 1, sizeof *name);
	int64_t sum_c = 0, sum_s = 0, sh_c = 0, sh_s = 0;
	memset(out, 0, sizeof *out);
	out->cost = gl_xcalloc(n ? n : 1, sizeof *out->cost);
	out->idle_share = gl_xcalloc(n ? n : 1, sizeof *out->idle_share);
	out->total = gl_xcalloc(n ? n : 1, sizeof *out->total);
	for (size_t i = 0; i < n; i++) {
		cost[i] = sb->owners[i].cost_micros;
		share[i] = sb->owners[i].idle_share_micros;
		name[i] = sb->owners[i].name;
	}
	out->fleet_total = gl_cost_round(f->total_micros, sb->minor);
	/* the one rule of every view (the API's too): Σ owner totals +
	 * __idle__ = the fleet total, cost + idle share = each owner's; a model
	 * that does not reconcile says so, its lines rounded one by one */
	(void)!gl_cost_shown_rows(out->fleet_total, cost, share, name, n, f->idle_left_micros, sb->minor, out->total,
				   out->cost, out->idle_share, &out->idle_left);
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(sb->owners[i].name, "__unallocated__"))
			out->unallocated += out->total[i];
		else
			out->owners += out->total[i];
		sum_c += cost[i];
		sum_s += share[i];
		sh_c += out->cost[i];
		sh_s += out->idle_share[i];
	}
	if (sum_c == f->cost_micros && sum_s == f->idle_total_micros - f->idle_left_micros) {
		out->alloc_cost = sh_c;
		out->idle_shared = sh_s;
		out->idle_total = sh_s + out->idle_left;
	} else {
		out->alloc_cost = gl_cost_round(f->cost_micros, sb->minor);
		out->idle_shared = gl_cost_round(f->idle_total_micros - f->idle_left_micros, sb->minor);
		out->idle_total = gl_cost_round(f->idle_total_micros, sb->minor);
	}
	free(cost);
	free(share);
	free(name);
}

void gl_report_shown_fini(struct gl_report_shown *s)
{
	free(s->cost);
	free(s->idle_share);
	free(s->total);
	memset(s, 0, sizeof *s);
}

const char *gl_report_share_tag(enum gl_chargeback_share_idle share)
{
	switch (share) {
	case GL_CHARGEBACK_SHARE_PROPORTIONAL:
		return "-idle_proportional";
	case GL_CHARGEBACK_SHARE_OWNER:
		return "-idle_owner";
	case GL_CHARGEBACK_SHARE_PROPORTIONAL_FLEET:
		return "-idle_proportional_fleet";
	default:
		return "";
	}
}

void gl_report_file_name(const struct gl_sbmodel *sb, const char *table, const char *ext, char *buf, size_t n)
{
	const char *tag = gl_report_share_tag(sb->share);
	if (table)
		snprintf(buf, n, "showback-%s-%s%s-%s.%s", sb->month, sb->aggregate, tag, table, ext);
	else
		snprintf(buf, n, "showback-%s-%s%s.%s", sb->month, sb->aggregate, tag, ext);
}

/* ---- CSV ---- */

static void c_i64(struct gl_strbuf *o, int64_t v)
{
	char b[24];
	snprintf(b, sizeof b, "%lld", (long long)v);
	gl_csv_raw(o, b);
}

static void c_money(struct gl_strbuf *o, const struct gl_sbmodel *sb, int64_t micros)
{
	char b[48];
	gl_cost_format(micros, sb->minor, b, sizeof b);
	gl_csv_raw(o, b);
}

static void c_hours(struct gl_strbuf *o, int64_t s)
{
	char b[32];
	gl_report_fmt_hours(s, b, sizeof b);
	gl_csv_raw(o, b);
}

static void c_pct(struct gl_strbuf *o, int64_t a, int64_t b)
{
	char buf[32];
	gl_report_fmt_pct(a, b, buf, sizeof buf);
	gl_csv_raw(o, buf);
}

static void c_header(struct gl_strbuf *o, const char *const *cols)
{
	for (size_t i = 0; cols[i]; i++)
		gl_csv_field(o, cols[i]);
	gl_csv_end(o);
}

static void csv_owners(const struct gl_sbmodel *sb, struct gl_strbuf *o)
{
	static const char *const h[] = {"owner", "gpu_seconds", "gpu_hours", "unpriced_gpu_seconds", "cost",
					"busy_gpu_hours", "allocated_idle_gpu_hours", "busy_cost", "allocated_idle_cost",
					"idle_share_gpu_hours", "idle_share", "total", "total_micros",
					"share_of_fleet_pct", "previous_month_total", "change", "change_pct", "budget",
					"budget_used_pct", "failed_gpu_hours", "failed_cost", "energy_kwh", NULL};
	struct gl_report_shown sh;
	c_header(o, h);
	gl_report_shown_compute(sb, &sh);
	for (size_t i = 0; i < sb->n_owners; i++) {
		const struct gl_sbmodel_owner *w = &sb->owners[i];
		gl_csv_field(o, w->name);
		c_i64(o, w->alloc_s);
		c_hours(o, w->alloc_s);
		c_i64(o, w->unpriced_s);
		c_money(o, sb, sh.cost[i]);
		if (w->has_usage) {
			c_hours(o, w->busy_s);
			c_hours(o, w->aidle_s);
			c_money(o, sb, w->busy_micros);
			c_money(o, sb, w->aidle_micros);
		} else {
			/* no exporter data: unknown, never zero */
			for (int k = 0; k < 4; k++)
				gl_csv_field(o, "no data");
		}
		c_hours(o, w->idle_share_s);
		c_money(o, sb, sh.idle_share[i]);
		c_money(o, sb, sh.total[i]);
		c_i64(o, w->total_micros);
		c_pct(o, w->total_micros, sb->fleet.total_micros);
		if (w->has_prev) {
			/* shown total - shown previous total, so the change adds up too */
			c_money(o, sb, gl_cost_round(w->prev_total_micros, sb->minor));
			c_money(o, sb, sh.total[i] - gl_cost_round(w->prev_total_micros, sb->minor));
			c_pct(o, w->total_micros - w->prev_total_micros, w->prev_total_micros);
		} else {
			gl_csv_field(o, "no data");
			gl_csv_raw(o, "");
			gl_csv_raw(o, "");
		}
		if (w->has_budget) {
			c_money(o, sb, w->budget_micros);
			c_pct(o, w->total_micros, w->budget_micros);
		} else {
			gl_csv_raw(o, "");
			gl_csv_raw(o, "");
		}
		c_hours(o, w->failed_s);
		c_money(o, sb, w->failed_micros);
		if (w->has_energy) {
			char b[32];
			gl_report_fmt_kwh(w->energy_mj, b, sizeof b);
			gl_csv_raw(o, b);
		} else {
			gl_csv_field(o, "no data");
		}
		gl_csv_end(o);
	}
	gl_report_shown_fini(&sh);
}

static void csv_models(const struct gl_sbmodel *sb, struct gl_strbuf *o)
{
	static const char *const h[] = {"owner", "gpu_model", "gpu_seconds", "gpu_hours", "unpriced_gpu_seconds",
					"cost", NULL};
	c_header(o, h);
	for (size_t i = 0; i < sb->n_models; i++) {
		const struct gl_sbmodel_model *m = &sb->models[i];
		gl_csv_field(o, m->owner);
		gl_csv_field(o, m->model);
		c_i64(o, m->alloc_s);
		c_hours(o, m->alloc_s);
		c_i64(o, m->unpriced_s);
		c_money(o, sb, m->cost_micros);
		gl_csv_end(o);
	}
}

static void csv_daily(const struct gl_sbmodel *sb, struct gl_strbuf *o)
{
	static const char *const h[] = {"day", "owner", "gpu_seconds", "gpu_hours", NULL};
	c_header(o, h);
	for (size_t d = 0; d < sb->n_days; d++) {
		char day[32];
		gl_timeutil_format_day(sb->day_start[d], day, sizeof day);
		for (size_t i = 0; i < sb->n_owners; i++) {
			if (!sb->owners[i].daily_s[d])
				continue;
			gl_csv_raw(o, day);
			gl_csv_field(o, sb->owners[i].name);
			c_i64(o, sb->owners[i].daily_s[d]);
			c_hours(o, sb->owners[i].daily_s[d]);
			gl_csv_end(o);
		}
	}
}

static void kv(struct gl_strbuf *o, const char *k, const char *v)
{
	gl_csv_field(o, k);
	gl_csv_field(o, v);
	gl_csv_end(o);
}

/* the row list's builders */
static struct gl_report_fleet_row *fr_add(struct gl_report_fleet_row *rows, size_t *n, const char *key,
					  const char *label)
{
	struct gl_report_fleet_row *r = &rows[(*n)++];
	r->key = key;
	r->label = label;
	r->value[0] = '\0';
	return r;
}

static void fr_text(struct gl_report_fleet_row *rows, size_t *n, const char *key, const char *label, const char *v)
{
	snprintf(fr_add(rows, n, key, label)->value, sizeof rows->value, "%s", v);
}

static void fr_hours(struct gl_report_fleet_row *rows, size_t *n, const char *key, const char *label, int known,
		     int64_t s)
{
	struct gl_report_fleet_row *r = fr_add(rows, n, key, label);
	if (known)
		gl_report_fmt_hours(s, r->value, sizeof r->value);
	else
		snprintf(r->value, sizeof r->value, "no data");
}

static void fr_money(struct gl_report_fleet_row *rows, size_t *n, const struct gl_sbmodel *sb, const char *key,
		     const char *label, int known, int64_t m)
{
	struct gl_report_fleet_row *r = fr_add(rows, n, key, label);
	if (known)
		gl_cost_format(m, sb->minor, r->value, sizeof r->value);
	else
		snprintf(r->value, sizeof r->value, "no data");
}

size_t gl_report_fleet_rows(const struct gl_sbmodel *sb, struct gl_report_fleet_row *rows)
{
	const struct gl_sbmodel_fleet *f = &sb->fleet;
	int64_t avail = f->capacity_s - f->unavailable_s;
	char b[48];
	size_t n = 0;
	struct gl_report_shown sh;
	gl_report_shown_compute(sb, &sh);
	fr_text(rows, &n, "month", NULL, sb->month);
	fr_text(rows, &n, "aggregate", NULL, sb->aggregate);
	fr_text(rows, &n, "share_idle", NULL, gl_chargeback_share_name(sb->share));
	fr_text(rows, &n, "currency", NULL, sb->currency);
	fr_text(rows, &n, "closed", NULL, sb->closed ? "yes" : "no (month to date)");
	fr_hours(rows, &n, "capacity_gpu_hours", "Capacity GPU-h", f->capacity_known, f->capacity_s);
	fr_hours(rows, &n, "unavailable_gpu_hours", "Unavailable GPU-h", f->capacity_known, f->unavailable_s);
	fr_hours(rows, &n, "allocated_gpu_hours", "Allocated GPU-h", 1, f->allocated_s);
	fr_hours(rows, &n, "busy_gpu_hours", "Busy GPU-h", f->usage_known, f->busy_s);
	fr_hours(rows, &n, "allocated_idle_gpu_hours", "Allocated-idle GPU-h", f->usage_known, f->aidle_s);
	fr_hours(rows, &n, "unallocated_idle_gpu_hours", "Unallocated idle GPU-h", f->capacity_known, f->unalloc_idle_s);
	fr_hours(rows, &n, "overallocated_gpu_hours", "Overallocated GPU-h", f->capacity_known, f->overalloc_s);
	/* over the GPU time with capacity data; what ran beyond it beside */
	gl_report_fmt_pct(gl_capacity_inside(avail, f->unalloc_idle_s, f->allocated_s), avail, b, sizeof b);
	fr_text(rows, &n, "saturation_pct", "Saturation %", f->capacity_known && avail > 0 ? b : "no data");
	fr_hours(rows, &n, "beyond_inventory_gpu_hours", "Allocated beyond inventory GPU-h", f->capacity_known,
		 gl_capacity_beyond(avail, f->unalloc_idle_s, f->allocated_s));
	fr_money(rows, &n, sb, "allocation_cost", "Allocation cost", 1, sh.alloc_cost);
	fr_money(rows, &n, sb, "unallocated_idle_cost", "Unallocated idle cost", f->capacity_known, sh.idle_total);
	fr_money(rows, &n, sb, "idle_cost_shared_to_owners", "Idle cost shared to owners", f->capacity_known,
		 sh.idle_shared);
	fr_money(rows, &n, sb, "idle_cost_left_in___idle__", "Idle cost left in __idle__", f->capacity_known,
		 sh.idle_left);
	fr_money(rows, &n, sb, "total", "Fleet total", 1, sh.fleet_total);
	fr_money(rows, &n, sb, "previous_month_total", "Previous month total", f->has_prev, f->prev_total_micros);
	fr_hours(rows, &n, "failed_job_gpu_hours", "Failed-job GPU-h", 1, f->failed_s);
	fr_money(rows, &n, sb, "failed_job_cost", "Failed-job cost", 1, f->failed_micros);
	gl_report_fmt_kwh(f->energy_mj, b, sizeof b);
	fr_text(rows, &n, "energy_kwh", "Energy kWh", f->has_energy ? b : "no data");
	gl_report_shown_fini(&sh);
	return n;
}

static void csv_fleet(const struct gl_sbmodel *sb, struct gl_strbuf *o)
{
	struct gl_report_fleet_row rows[GL_REPORT_FLEET_ROWS];
	size_t n = gl_report_fleet_rows(sb, rows);
	kv(o, "metric", "value");
	for (size_t i = 0; i < n; i++)
		kv(o, rows[i].key, rows[i].value);
}

static void csv_waits(const struct gl_sbmodel *sb, struct gl_strbuf *o)
{
	static const char *const h[] = {"by", "name", "jobs", "wait_p50_s", "wait_p90_s", "wait_p99_s", NULL};
	c_header(o, h);
	for (size_t i = 0; i < sb->n_waits; i++) {
		const struct gl_sbmodel_wait *w = &sb->waits[i];
		gl_csv_field(o, w->kind);
		gl_csv_field(o, w->name);
		c_i64(o, w->jobs);
		c_i64(o, w->p50_s);
		c_i64(o, w->p90_s);
		c_i64(o, w->p99_s);
		gl_csv_end(o);
	}
}

static void csv_jobs(const struct gl_sbmodel *sb, const struct gl_sbmodel_job *j, size_t n, struct gl_strbuf *o)
{
	static const char *const h[] = {"rank", "job_id", "cluster", "owner", "state", "gpus", "gpu_hours",
					"unpriced_gpu_hours", "cost", "idle_gpu_hours", "idle_cost", NULL};
	c_header(o, h);
	for (size_t i = 0; i < n; i++) {
		char g[32];
		/* no rate at all: "unpriced", as the idle columns say "no data",
		 * not a 0.00 that reads as free; a part unpriced shows in
		 * unpriced_gpu_hours and the cost is the priced part's */
		int none_priced = j[i].unpriced_s > 0 && j[i].unpriced_s >= j[i].alloc_s;
		c_i64(o, (int64_t)i + 1);
		gl_csv_field(o, j[i].job_id);
		gl_csv_field(o, j[i].cluster);
		gl_csv_field(o, j[i].owner);
		gl_csv_field(o, j[i].state);
		gl_report_fmt_gpus(j[i].gpu_micro, g, sizeof g);
		gl_csv_raw(o, g);
		c_hours(o, j[i].alloc_s);
		c_hours(o, j[i].unpriced_s);
		if (none_priced)
			gl_csv_field(o, "unpriced");
		else
			c_money(o, sb, j[i].cost_micros);
		if (j[i].has_usage) {
			c_hours(o, j[i].idle_s);
			if (none_priced)
				gl_csv_field(o, "unpriced");
			else
				c_money(o, sb, j[i].idle_micros);
		} else {
			gl_csv_field(o, "no data");
			gl_csv_field(o, "no data");
		}
		gl_csv_end(o);
	}
}

static void csv_reconciliation(const struct gl_sbmodel *sb, struct gl_strbuf *o)
{
	static const char *const h[] = {"line", "gpu_seconds", "amount", "amount_micros", NULL};
	int64_t owners_m = 0, owners_s = 0, un_m = 0, un_s = 0;
	struct gl_report_shown sh;
	c_header(o, h);
	gl_report_shown_compute(sb, &sh);
	for (size_t i = 0; i < sb->n_owners; i++) {
		const struct gl_sbmodel_owner *w = &sb->owners[i];
		if (!strcmp(w->name, "__unallocated__")) {
			un_m += w->total_micros;
			un_s += w->alloc_s + w->idle_share_s;
			continue;
		}
		owners_m += w->total_micros;
		owners_s += w->alloc_s + w->idle_share_s;
	}
	gl_csv_field(o, "sum of owners");
	c_i64(o, owners_s);
	c_money(o, sb, sh.owners);
	c_i64(o, owners_m);
	gl_csv_end(o);
	gl_csv_field(o, "__unallocated__");
	c_i64(o, un_s);
	c_money(o, sb, sh.unallocated);
	c_i64(o, un_m);
	gl_csv_end(o);
	gl_csv_field(o, "__idle__");
	c_i64(o, sb->fleet.idle_left_s);
	c_money(o, sb, sh.idle_left);
	c_i64(o, sb->fleet.idle_left_micros);
	gl_csv_end(o);
	gl_csv_field(o, "fleet total");
	c_i64(o, sb->fleet.total_s);
	c_money(o, sb, sh.fleet_total);
	c_i64(o, sb->fleet.total_micros);
	gl_csv_end(o);
	gl_csv_field(o, "difference");
	c_i64(o, owners_s + un_s + sb->fleet.idle_left_s - sb->fleet.total_s);
	c_money(o, sb, gl_report_reconcile_diff(sb));
	c_i64(o, gl_report_reconcile_diff(sb));
	gl_csv_end(o);
	gl_report_shown_fini(&sh);
}

static void csv_rates(const struct gl_sbmodel *sb, struct gl_strbuf *o)
{
	static const char *const h[] = {"gpu_model", "mig_profile", "currency", "per_gpu_hour", "valid_from",
					"valid_to", NULL};
	c_header(o, h);
	for (size_t i = 0; i < sb->n_rates; i++) {
		const struct gl_sbmodel_rate *r = &sb->rates[i];
		char b[48];
		gl_csv_field(o, r->model);
		gl_csv_field(o, r->mig_profile);
		gl_csv_field(o, r->currency);
		gl_cost_format(r->micros_per_gpu_hour, 6, b, sizeof b);
		gl_csv_raw(o, b);
		gl_csv_field(o, r->valid_from);
		gl_csv_field(o, r->valid_to);
		gl_csv_end(o);
	}
}

static void csv_rules(const struct gl_sbmodel *sb, struct gl_strbuf *o)
{
	static const char *const h[] = {"priority", "cluster", "match", "value", "team", "project", "cost_center",
					"valid_from", "valid_to", NULL};
	c_header(o, h);
	for (size_t i = 0; i < sb->n_rules; i++) {
		const struct gl_sbmodel_rule *r = &sb->rules[i];
		c_i64(o, r->priority);
		gl_csv_field(o, r->cluster);
		gl_csv_field(o, r->match_field);
		gl_csv_field(o, r->match_value);
		gl_csv_field(o, r->team);
		gl_csv_field(o, r->project);
		gl_csv_field(o, r->cost_center);
		gl_csv_field(o, r->valid_from);
		gl_csv_field(o, r->valid_to);
		gl_csv_end(o);
	}
}

/* price per unit at full precision (a cent is too coarse for a token) */
static void fmt_per(int have, int64_t micros, char *b, size_t n)
{
	if (have)
		gl_cost_format(micros, 6, b, n);
	else
		snprintf(b, n, "%s", "");
}

static void fmt_latency(double v, char *b, size_t n)
{
	if (isnan(v))
		snprintf(b, n, "%s", "");
	else
		snprintf(b, n, "%.3f", v);
}

static void csv_inference(const struct gl_sbmodel *sb, struct gl_strbuf *o)
{
	static const char *const h[] = {"owner", "requests", "failed_requests", "prompt_tokens", "generated_tokens",
					"gpu_hours", "cost", "cost_per_1k_requests", "cost_per_1m_prompt_tokens",
					"cost_per_1m_generated_tokens", "latency_p50_seconds", "latency_p99_seconds", NULL};
	c_header(o, h);
	for (size_t i = 0; i < sb->n_inference; i++) {
		const struct gl_sbmodel_inference *x = &sb->inference[i];
		char b[48];
		gl_csv_field(o, x->owner);
		c_i64(o, x->requests);
		c_i64(o, x->failed);
		c_i64(o, x->prompt_tokens);
		c_i64(o, x->generated_tokens);
		c_hours(o, x->gpu_s);
		c_money(o, sb, x->cost_micros);
		fmt_per(x->have_per_1k, x->per_1k_micros, b, sizeof b);
		gl_csv_raw(o, b);
		fmt_per(x->have_per_1m_prompt, x->per_1m_prompt_micros, b, sizeof b);
		gl_csv_raw(o, b);
		fmt_per(x->have_per_1m_generated, x->per_1m_generated_micros, b, sizeof b);
		gl_csv_raw(o, b);
		fmt_latency(x->p50_s, b, sizeof b);
		gl_csv_raw(o, b);
		fmt_latency(x->p99_s, b, sizeof b);
		gl_csv_raw(o, b);
		gl_csv_end(o);
	}
}

int gl_report_csv(const struct gl_sbmodel *sb, const char *table, struct gl_strbuf *o)
{
	if (!strcmp(table, "owners"))
		csv_owners(sb, o);
	else if (!strcmp(table, "models"))
		csv_models(sb, o);
	else if (!strcmp(table, "daily"))
		csv_daily(sb, o);
	else if (!strcmp(table, "fleet"))
		csv_fleet(sb, o);
	else if (!strcmp(table, "waits"))
		csv_waits(sb, o);
	else if (!strcmp(table, "top_cost"))
		csv_jobs(sb, sb->top_cost, sb->n_top_cost, o);
	else if (!strcmp(table, "top_idle"))
		csv_jobs(sb, sb->top_idle, sb->n_top_idle, o);
	else if (!strcmp(table, "reconciliation"))
		csv_reconciliation(sb, o);
	else if (!strcmp(table, "rates"))
		csv_rates(sb, o);
	else if (!strcmp(table, "owner_rules"))
		csv_rules(sb, o);
	else if (!strcmp(table, "inference"))
		csv_inference(sb, o);
	else if (!strcmp(table, "partial")) {
		gl_csv_field(o, "note");
		gl_csv_end(o);
		for (size_t i = 0; i < sb->n_partial; i++) {
			gl_csv_field(o, sb->partial[i]);
			gl_csv_end(o);
		}
	} else
		return -GL_EINVAL;
	return 0;
}

/* ---- HTML ---- */

static void esc(struct gl_strbuf *o, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&': gl_strbuf_puts(o, "&amp;"); break;
		case '<': gl_strbuf_puts(o, "&lt;"); break;
		case '>': gl_strbuf_puts(o, "&gt;"); break;
		case '"': gl_strbuf_puts(o, "&quot;"); break;
		case '\'': gl_strbuf_puts(o, "&#39;"); break;
		default: gl_strbuf_putc(o, *s);
		}
	}
}

static void td(struct gl_strbuf *o, const char *s)
{
	gl_strbuf_puts(o, "<td>");
	esc(o, s);
	gl_strbuf_puts(o, "</td>");
}

static void tdn(struct gl_strbuf *o, const char *s)
{
	gl_strbuf_puts(o, "<td class=n>");
	esc(o, s);
	gl_strbuf_puts(o, "</td>");
}

static void tdm(struct gl_strbuf *o, const struct gl_sbmodel *sb, int64_t m)
{
	char b[48];
	gl_cost_format(m, sb->minor, b, sizeof b);
	tdn(o, b);
}

static void tdh(struct gl_strbuf *o, int64_t s)
{
	char b[32];
	gl_report_fmt_hours(s, b, sizeof b);
	tdn(o, b);
}

static void ths(struct gl_strbuf *o, const char *const *h)
{
	gl_strbuf_puts(o, "<thead><tr>");
	for (size_t i = 0; h[i]; i++) {
		gl_strbuf_puts(o, "<th>");
		esc(o, h[i]);
		gl_strbuf_puts(o, "</th>");
	}
	gl_strbuf_puts(o, "</tr></thead><tbody>");
}

static const char *const palette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
				      "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
#define CHART_SERIES 9 /* the rest of the owners go into "others" */

/* Stacked GPU-hours by owner per day, on a value axis with round ticks. */
static void svg_daily(const struct gl_sbmodel *sb, struct gl_strbuf *o)
{
	const int W = 680, H = 240, L = 56, B = 20, T = 12;
	int64_t max = 0;
	size_t ns = sb->n_owners < CHART_SERIES ? sb->n_owners : CHART_SERIES;
	struct gl_report_axis ax;
	double bw, span = H - B - T;
	for (size_t d = 0; d < sb->n_days; d++) {
		int64_t t = 0;
		for (size_t i = 0; i < sb->n_owners; i++)
			t += sb->owners[i].daily_s[d];
		if (t > max)
			max = t;
	}
	gl_report_axis_ticks((max * 1000 + 3599) / 3600, 6, &ax);
	bw = (double)(W - L - 10) / (double)(sb->n_days ? sb->n_days : 1);
	gl_strbuf_printf(o, "<svg class=chart role=img aria-label=\"GPU-hours by owner per day\" viewBox=\"0 0 %d %d\">",
			 W, H + 30);
	for (int k = 0; k <= ax.ticks; k++) {
		char b[32];
		double y = H - B - span * k / ax.ticks;
		gl_report_fmt_tick(&ax, ax.step_milli * k, b, sizeof b);
		gl_strbuf_printf(o, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"%s\"/>", L - 4, y, W - 10,
				 y, k ? "#e4e4e4" : "#888");
		gl_strbuf_printf(o, "<text x=\"%d\" y=\"%.1f\" class=\"n ax tick\" text-anchor=\"end\">%s</text>", L - 6,
				 y + 3, b);
	}
	gl_strbuf_printf(o, "<text x=\"2\" y=\"%d\" class=ax>GPU-h</text>", T - 4 > 0 ? T - 4 : 8);
	for (size_t d = 0; d < sb->n_days; d++) {
		double y = H - B;
		for (size_t i = 0; i < sb->n_owners; i++) {
			size_t series = i < ns ? i : ns;
			double h = (double)sb->owners[i].daily_s[d] * 1000.0 / 3600.0 * span / (double)ax.top_milli;
			if (h <= 0)
				continue;
			y -= h;
			gl_strbuf_printf(o, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>",
					 L + bw * (double)d + 1, y, bw - 2 > 1 ? bw - 2 : 1, h, palette[series % 10]);
		}
		if (d % 5 == 0 || d + 1 == sb->n_days)
			gl_strbuf_printf(o, "<text x=\"%.1f\" y=\"%d\" class=ax text-anchor=\"middle\">%zu</text>",
					 L + bw * ((double)d + 0.5), H - 5, d + 1);
	}
	/* legend */
	for (size_t i = 0; i <= ns && i < sb->n_owners; i++) {
		gl_strbuf_printf(o, "<rect x=\"%zu\" y=\"%d\" width=\"10\" height=\"10\" fill=\"%s\"/>",
				 (size_t)L + (i % 5) * 125, H + 2 + (int)(i / 5) * 14, palette[i % 10]);
		gl_strbuf_printf(o, "<text x=\"%zu\" y=\"%d\" class=ax>", (size_t)L + (i % 5) * 125 + 14,
				 H + 11 + (int)(i / 5) * 14);
		if (i == ns)
			gl_strbuf_puts(o, "others");
		else
			esc(o, gl_report_owner_label(sb->owners[i].name));
		gl_strbuf_puts(o, "</text>");
	}
	gl_strbuf_puts(o, "</svg>");
}

/* Horizontal bars per owner: two series (busy/idle or this/previous month). */
static void svg_pairs(const struct gl_sbmodel *sb, struct gl_strbuf *o, int mom)
{
	size_t n = sb->n_owners < 12 ? sb->n_owners : 12;
	int64_t max = 1;
	const int W = 680, L = 160, row = 22;
	for (size_t i = 0; i < n; i++) {
		const struct gl_sbmodel_owner *w = &sb->owners[i];
		int64_t a = mom ? w->total_micros : w->busy_s, b = mom ? w->prev_total_micros : w->aidle_s;
		if (mom ? a > max : a + b > max)
			max = mom ? a : a + b;
		if (mom && b > max)
			max = b;
	}
	gl_strbuf_printf(o, "<svg class=chart role=img aria-label=\"%s\" viewBox=\"0 0 %d %zu\">",
			 mom ? "cost by owner, this month and the previous one" : "busy and allocated-idle GPU-hours",
			 W, n * (size_t)row + 24);
	for (size_t i = 0; i < n; i++) {
		const struct gl_sbmodel_owner *w = &sb->owners[i];
		double y = (double)i * row + 4, span = W - L - 10;
		gl_strbuf_printf(o, "<text x=\"%d\" y=\"%.1f\" class=ax text-anchor=\"end\">", L - 6, y + 13);
		esc(o, gl_report_owner_label(w->name));
		gl_strbuf_puts(o, "</text>");
		if (mom) {
			double a = (double)(w->total_micros > 0 ? w->total_micros : 0) * span / (double)max;
			double b = (double)(w->prev_total_micros > 0 ? w->prev_total_micros : 0) * span / (double)max;
			gl_strbuf_printf(o, "<rect x=\"%d\" y=\"%.1f\" width=\"%.1f\" height=\"8\" fill=\"%s\"/>", L, y + 2,
					 a, palette[0]);
			gl_strbuf_printf(o, "<rect x=\"%d\" y=\"%.1f\" width=\"%.1f\" height=\"8\" fill=\"%s\"/>", L, y + 10,
					 b, palette[9]);
		} else if (w->has_usage) {
			double a = (double)w->busy_s * span / (double)max, b = (double)w->aidle_s * span / (double)max;
			gl_strbuf_printf(o, "<rect x=\"%d\" y=\"%.1f\" width=\"%.1f\" height=\"14\" fill=\"%s\"/>", L, y + 2,
					 a, palette[4]);
			gl_strbuf_printf(o, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"14\" fill=\"%s\"/>",
					 L + a, y + 2, b, palette[2]);
		} else {
			gl_strbuf_printf(o, "<text x=\"%d\" y=\"%.1f\" class=ax>no data</text>", L + 4, y + 13);
		}
	}
	gl_strbuf_printf(o, "<text x=\"%d\" y=\"%zu\" class=ax>%s</text>", L, n * (size_t)row + 18,
			 mom ? "upper bar: this month, lower bar: previous month"
			     : "green: busy GPU-hours, red: allocated-idle GPU-hours (exporter data)");
	gl_strbuf_puts(o, "</svg>");
}

static void html_jobs(const struct gl_sbmodel *sb, struct gl_strbuf *o, const struct gl_sbmodel_job *j, size_t n)
{
	static const char *const h[] = {"#", "Job", "Cluster", "Owner", "State", "GPUs", "GPU-h", "Cost", "Idle GPU-h",
					"Idle cost", NULL};
	gl_strbuf_puts(o, "<table>");
	ths(o, h);
	for (size_t i = 0; i < n; i++) {
		char b[64];
		gl_strbuf_printf(o, "<tr><td class=n>%zu</td>", i + 1);
		td(o, j[i].job_id);
		td(o, j[i].cluster);
		td(o, gl_report_owner_label(j[i].owner));
		td(o, j[i].state);
		gl_report_fmt_gpus_shown(j[i].gpu_micro, b, sizeof b);
		tdn(o, b);
		tdh(o, j[i].alloc_s);
		gl_report_fmt_job_money(sb, &j[i], j[i].cost_micros, b, sizeof b);
		tdn(o, b);
		if (j[i].has_usage) {
			tdh(o, j[i].idle_s);
			gl_report_fmt_job_money(sb, &j[i], j[i].idle_micros, b, sizeof b);
			tdn(o, b);
		} else {
			tdn(o, "no data");
			tdn(o, "no data");
		}
		gl_strbuf_puts(o, "</tr>");
	}
	gl_strbuf_puts(o, "</tbody></table>");
}

/* owners */
static void html_owners(const struct gl_sbmodel *sb, const struct gl_report_shown *sh, struct gl_strbuf *o)
{
	const struct gl_sbmodel_fleet *f = &sb->fleet;
	char b[64];
	static const char *const h[] = {"Owner", "GPU-h", "Cost", "Busy GPU-h", "Alloc-idle GPU-h",
					"Alloc-idle cost", "Idle share", "Total", "Share", "Prev. month", "Change",
					"Budget used", "Failed-job cost", "Energy kWh", NULL};
	gl_strbuf_puts(o, "<h2>Owners</h2><table id=owners>");
	ths(o, h);
	for (size_t i = 0; i < sb->n_owners; i++) {
		const struct gl_sbmodel_owner *w = &sb->owners[i];
		gl_strbuf_puts(o, "<tr>");
		td(o, gl_report_owner_label(w->name));
		tdh(o, w->alloc_s);
		tdm(o, sb, sh->cost[i]);
		if (w->has_usage) {
			tdh(o, w->busy_s);
			tdh(o, w->aidle_s);
			tdm(o, sb, w->aidle_micros);
		} else {
			tdn(o, "no data");
			tdn(o, "no data");
			tdn(o, "no data");
		}
		tdm(o, sb, sh->idle_share[i]);
		gl_strbuf_puts(o, "<td class=\"n total\">");
		gl_cost_format(sh->total[i], sb->minor, b, sizeof b);
		esc(o, b);
		gl_strbuf_puts(o, "</td>");
		gl_report_fmt_pct(w->total_micros, f->total_micros, b, sizeof b);
		strcat(b, b[0] ? " %" : "");
		tdn(o, b);
		if (w->has_prev) {
			tdm(o, sb, w->prev_total_micros);
			gl_report_fmt_pct(w->total_micros - w->prev_total_micros, w->prev_total_micros, b, sizeof b);
			strcat(b, b[0] ? " %" : "new");
			tdn(o, b);
		} else {
			tdn(o, "no data");
			tdn(o, "");
		}
		if (w->has_budget) {
			gl_report_fmt_pct(w->total_micros, w->budget_micros, b, sizeof b);
			strcat(b, " %");
			tdn(o, b);
		} else {
			tdn(o, "no budget");
		}
		tdm(o, sb, w->failed_micros);
		if (w->has_energy) {
			gl_report_fmt_kwh(w->energy_mj, b, sizeof b);
			tdn(o, b);
		} else {
			tdn(o, "no data");
		}
		gl_strbuf_puts(o, "</tr>");
	}
	gl_strbuf_puts(o, "</tbody></table>\n");
}

/* fleet: the CSV table's rows, labelled */
static void html_fleet(const struct gl_sbmodel *sb, struct gl_strbuf *o)
{
	struct gl_report_fleet_row rows[GL_REPORT_FLEET_ROWS];
	size_t n = gl_report_fleet_rows(sb, rows);
	gl_strbuf_puts(o, "<h2>Fleet</h2><table id=fleet><tbody>");
	for (size_t i = 0; i < n; i++) {
		if (!rows[i].label)
			continue;
		gl_strbuf_puts(o, "<tr data-key=");
		esc(o, rows[i].key);
		gl_strbuf_puts(o, ">");
		td(o, rows[i].label);
		tdn(o, rows[i].value);
		gl_strbuf_puts(o, "</tr>");
	}
	gl_strbuf_puts(o, "</tbody></table>\n");
}

/* reconciliation */
static void html_reconciliation(const struct gl_sbmodel *sb, const struct gl_report_shown *sh, struct gl_strbuf *o)
{
	const struct gl_sbmodel_fleet *f = &sb->fleet;
	int64_t own = 0, un = 0, diff = gl_report_reconcile_diff(sb);
	for (size_t i = 0; i < sb->n_owners; i++) {
		if (!strcmp(sb->owners[i].name, "__unallocated__"))
			un += sb->owners[i].total_micros;
		else
			own += sb->owners[i].total_micros;
	}
	gl_strbuf_puts(o, "<h2>Reconciliation</h2><table id=reconciliation><tbody>");
	gl_strbuf_puts(o, "<tr><td>Σ owners</td>");
	tdm(o, sb, sh->owners);
	gl_strbuf_printf(o, "<td class=n>%lld µ</td></tr><tr><td>__unallocated__</td>", (long long)own);
	tdm(o, sb, sh->unallocated);
	gl_strbuf_printf(o, "<td class=n>%lld µ</td></tr><tr><td>__idle__</td>", (long long)un);
	tdm(o, sb, sh->idle_left);
	gl_strbuf_printf(o, "<td class=n>%lld µ</td></tr><tr><td>Fleet total</td>", (long long)f->idle_left_micros);
	tdm(o, sb, sh->fleet_total);
	gl_strbuf_printf(o, "<td class=n id=total-micros>%lld µ</td></tr></tbody></table>", (long long)f->total_micros);
	gl_strbuf_printf(o, "<p class=%s>%s</p>\n", diff ? "bad" : "ok",
			 diff ? "Does NOT reconcile" : "Reconciles to the micro-unit.");
}

/* by model */
static void html_models(const struct gl_sbmodel *sb, struct gl_strbuf *o)
{
	static const char *const h[] = {"Owner", "GPU model / MIG profile", "GPU-h", "Unpriced GPU-h", "Cost", NULL};
	gl_strbuf_puts(o, "<h2>GPU-hours by GPU model / MIG profile</h2><table id=models>");
	ths(o, h);
	for (size_t i = 0; i < sb->n_models; i++) {
		gl_strbuf_puts(o, "<tr>");
		td(o, gl_report_owner_label(sb->models[i].owner));
		td(o, sb->models[i].model);
		tdh(o, sb->models[i].alloc_s);
		tdh(o, sb->models[i].unpriced_s);
		tdm(o, sb, sb->models[i].cost_micros);
		gl_strbuf_puts(o, "</tr>");
	}
	gl_strbuf_puts(o, "</tbody></table>\n");
}

/* failed-job waste and energy */
static void html_waste(const struct gl_sbmodel *sb, struct gl_strbuf *o)
{
	static const char *const h[] = {"Owner", "Failed-job GPU-h", "Failed-job cost", NULL};
	gl_strbuf_puts(o, "<h2>Failed-job waste</h2><p class=meta>Jobs that ended FAILED, TIMEOUT, NODE_FAIL,"
			  " OUT_OF_MEMORY or BOOT_FAIL.</p><table id=waste>");
	ths(o, h);
	for (size_t i = 0; i < sb->n_owners; i++) {
		if (!sb->owners[i].failed_s && !sb->owners[i].failed_micros)
			continue;
		gl_strbuf_puts(o, "<tr>");
		td(o, gl_report_owner_label(sb->owners[i].name));
		tdh(o, sb->owners[i].failed_s);
		tdm(o, sb, sb->owners[i].failed_micros);
		gl_strbuf_puts(o, "</tr>");
	}
	gl_strbuf_puts(o, "</tbody></table>\n");
}

/* waits */
static void html_waits(const struct gl_sbmodel *sb, struct gl_strbuf *o)
{
	static const char *const h[] = {"By", "Name", "Jobs", "Wait p50", "p90", "p99", NULL};
	gl_strbuf_puts(o, "<h2>Queue waits</h2><table id=waits>");
	ths(o, h);
	for (size_t i = 0; i < sb->n_waits; i++) {
		const struct gl_sbmodel_wait *w = &sb->waits[i];
		char b[48];
		gl_strbuf_puts(o, "<tr>");
		td(o, w->kind);
		td(o, gl_report_owner_label(w->name));
		gl_strbuf_printf(o, "<td class=n>%lld</td>", (long long)w->jobs);
		gl_report_fmt_wait(w->p50_s, b, sizeof b);
		tdn(o, b);
		gl_report_fmt_wait(w->p90_s, b, sizeof b);
		tdn(o, b);
		gl_report_fmt_wait(w->p99_s, b, sizeof b);
		tdn(o, b);
		gl_strbuf_puts(o, "</tr>");
	}
	gl_strbuf_puts(o, "</tbody></table>\n");
}

/* capacity outlook */
static void html_inference(const struct gl_sbmodel *sb, struct gl_strbuf *o)
{
	static const char *const h[] = {"Owner", "Requests", "Generated tokens", "GPU-h", "Cost", "Per 1k requests",
					"Per 1M prompt tokens", "Per 1M generated tokens", "p50 s", "p99 s", NULL};
	if (!sb->n_inference)
		return;
	gl_strbuf_puts(o, "<h2>Inference served</h2><p class=meta>Serving endpoints' requests and tokens, priced"
			  " from the GPU-time of the pods and jobs they ran on (docs/serving.md).</p><table id=inference>");
	ths(o, h);
	for (size_t i = 0; i < sb->n_inference; i++) {
		const struct gl_sbmodel_inference *x = &sb->inference[i];
		char pb[48];
		gl_strbuf_puts(o, "<tr>");
		td(o, gl_report_owner_label(x->owner));
		gl_strbuf_printf(o, "<td class=n>%lld</td><td class=n>%lld</td>", (long long)x->requests,
				 (long long)x->generated_tokens);
		tdh(o, x->gpu_s);
		tdm(o, sb, x->cost_micros);
		fmt_per(x->have_per_1k, x->per_1k_micros, pb, sizeof pb);
		tdn(o, pb);
		fmt_per(x->have_per_1m_prompt, x->per_1m_prompt_micros, pb, sizeof pb);
		tdn(o, pb);
		fmt_per(x->have_per_1m_generated, x->per_1m_generated_micros, pb, sizeof pb);
		tdn(o, pb);
		fmt_latency(x->p50_s, pb, sizeof pb);
		tdn(o, pb);
		fmt_latency(x->p99_s, pb, sizeof pb);
		tdn(o, pb);
		gl_strbuf_puts(o, "</tr>");
	}
	gl_strbuf_puts(o, "</tbody></table>\n");
}

static void html_capacity(const struct gl_sbmodel *sb, struct gl_strbuf *o)
{
	char cells[GL_REPORT_CAPACITY_COLS][64], note[400];
	gl_strbuf_puts(o, "<h2>Capacity outlook</h2><table id=capacity>");
	ths(o, gl_report_capacity_head);
	for (size_t i = 0; i < sb->n_capacity; i++) {
		gl_report_capacity_cells(&sb->capacity[i], cells);
		gl_strbuf_puts(o, "<tr>");
		for (int k = 0; k < GL_REPORT_CAPACITY_COLS; k++)
			(k == 2 || k == 3 || k == 6 ? tdn : td)(o, cells[k]);
		gl_strbuf_puts(o, "</tr>");
	}
	gl_strbuf_puts(o, "</tbody></table>\n<p class=meta>");
	gl_report_capacity_note(sb, note, sizeof note);
	esc(o, note);
	gl_strbuf_puts(o, "</p>\n");
}

/* rates and owner rules in force */
static void html_rates(const struct gl_sbmodel *sb, struct gl_strbuf *o)
{
	char b[64];
	static const char *const h[] = {"GPU model", "MIG profile", "Currency", "Per GPU-hour", "From", "To", NULL};
	gl_strbuf_puts(o, "<h2>Rates in force</h2><table id=rates>");
	ths(o, h);
	for (size_t i = 0; i < sb->n_rates; i++) {
		const struct gl_sbmodel_rate *r = &sb->rates[i];
		gl_strbuf_puts(o, "<tr>");
		td(o, r->model);
		td(o, r->mig_profile);
		td(o, r->currency);
		gl_cost_format(r->micros_per_gpu_hour, 6, b, sizeof b);
		tdn(o, b);
		td(o, r->valid_from[0] ? r->valid_from : "always");
		td(o, r->valid_to[0] ? r->valid_to : "open");
		gl_strbuf_puts(o, "</tr>");
	}
	gl_strbuf_puts(o, "</tbody></table>\n");
}

static void html_rules(const struct gl_sbmodel *sb, struct gl_strbuf *o)
{
	static const char *const h[] = {"Priority", "Cluster", "Match", "Value", "Team", "Project", "Cost center",
					"From", "To", NULL};
	gl_strbuf_puts(o, "<h2>Owner rules in force</h2><table id=rules>");
	ths(o, h);
	for (size_t i = 0; i < sb->n_rules; i++) {
		const struct gl_sbmodel_rule *r = &sb->rules[i];
		gl_strbuf_printf(o, "<tr><td class=n>%lld</td>", (long long)r->priority);
		td(o, r->cluster);
		td(o, r->match_field);
		td(o, r->match_value);
		td(o, r->team);
		td(o, r->project);
		td(o, r->cost_center);
		td(o, r->valid_from[0] ? r->valid_from : "always");
		td(o, r->valid_to[0] ? r->valid_to : "open");
		gl_strbuf_puts(o, "</tr>");
	}
	gl_strbuf_puts(o, "</tbody></table>\n");
}

/* A numeric element: a start tag with class n ("<td class=n>", "<td
 * class=\"n total\">", "<strong class=n id=..>"). */
static int numeric_tag(const char *tag, size_t len)
{
	for (size_t k = 0; k + 8 <= len; k++)
		if (!strncmp(tag + k, " class=n", 8) && (tag[k + 8] == ' ' || tag[k + 8] == '>'))
			return 1;
		else if (!strncmp(tag + k, " class=\"n ", 10) || !strncmp(tag + k, " class=\"n\"", 10))
			return 1;
	return 0;
}

/* Every numeric element's text with the site's separators: the one place
 * the HTML decides how a number reads, so no table can forget it. */
static void localize(const struct gl_report_style *st, const char *s, struct gl_strbuf *o)
{
	while (*s) {
		const char *lt = strchr(s, '<'), *gt, *end;
		char in[256], out[512];
		if (!lt) {
			gl_strbuf_puts(o, s);
			return;
		}
		gt = strchr(lt, '>');
		if (!gt) {
			gl_strbuf_puts(o, s);
			return;
		}
		gl_strbuf_append(o, s, (size_t)(gt + 1 - s));
		s = gt + 1;
		if (!numeric_tag(lt, (size_t)(gt - lt)))
			continue;
		end = strchr(s, '<');
		if (!end || (size_t)(end - s) >= sizeof in)
			continue;
		memcpy(in, s, (size_t)(end - s));
		in[end - s] = '\0';
		/* in is escaped already; the separators cannot hold < > &
		 * (gl_report_seps_check), so out needs no second escaping */
		gl_report_fmt_local(st, in, out, sizeof out);
		gl_strbuf_puts(o, out);
		s = end;
	}
}

/* The page's content, between the template's <body> tags. */
static void html_body(const struct gl_sbmodel *sb, const char *gen, struct gl_strbuf *o)
{
	const struct gl_sbmodel_fleet *f = &sb->fleet;
	char b[64], c[64];
	struct gl_report_shown sh;

	gl_strbuf_puts(o, "<h1>GPU showback ");
	esc(o, sb->month);
	gl_strbuf_puts(o, "</h1><p class=meta>by ");
	esc(o, sb->aggregate);
	gl_strbuf_puts(o, " · idle shared: ");
	esc(o, gl_chargeback_share_name(sb->share));
	gl_strbuf_puts(o, " · currency ");
	esc(o, sb->currency);
	gl_strbuf_puts(o, " · generated at ");
	esc(o, gen);
	gl_strbuf_puts(o, sb->closed ? "" : " · month to date");
	gl_strbuf_puts(o, "</p>\n");
	if (sb->n_partial) {
		gl_strbuf_puts(o, "<div class=warn id=partial><strong>Partial data</strong><ul>");
		for (size_t i = 0; i < sb->n_partial; i++) {
			gl_strbuf_puts(o, "<li>");
			esc(o, sb->partial[i]);
			gl_strbuf_puts(o, "</li>");
		}
		gl_strbuf_puts(o, "</ul></div>\n");
	}
	gl_report_shown_compute(sb, &sh);
	gl_cost_format(sh.fleet_total, sb->minor, b, sizeof b);
	gl_strbuf_puts(o, "<p>Fleet total: <strong class=n id=fleet-total>");
	esc(o, b);
	gl_strbuf_puts(o, "</strong> ");
	esc(o, sb->currency);
	gl_report_fmt_hours(f->allocated_s, c, sizeof c);
	gl_strbuf_puts(o, " · allocated GPU-hours: <strong class=n id=allocated-hours>");
	esc(o, c);
	gl_strbuf_puts(o, "</strong></p>\n");

	html_owners(sb, &sh, o);
	gl_strbuf_puts(o, "<h2>GPU-hours by owner per day</h2>");
	svg_daily(sb, o);
	gl_strbuf_puts(o, "<h2>Busy and allocated-idle GPU-hours</h2>");
	if (sb->fleet.usage_known)
		svg_pairs(sb, o, 0);
	else
		gl_strbuf_printf(o, "<p class=meta id=no-usage>%s</p>", gl_report_no_usage_note);
	gl_strbuf_puts(o, "<h2>Cost by owner, month over month</h2>");
	svg_pairs(sb, o, 1);

	html_fleet(sb, o);
	html_reconciliation(sb, &sh, o);
	html_models(sb, o);
	html_waste(sb, o);
	html_waits(sb, o);
	html_inference(sb, o);
	html_capacity(sb, o);
	gl_strbuf_puts(o, "<h2>Top 20 jobs by cost</h2>");
	html_jobs(sb, o, sb->top_cost, sb->n_top_cost);
	gl_strbuf_puts(o, "<h2>Top 20 jobs by idle cost</h2>");
	html_jobs(sb, o, sb->top_idle, sb->n_top_idle);
	html_rates(sb, o);
	html_rules(sb, o);
	gl_strbuf_puts(o, "<p class=meta>gpuledger ");
	esc(o, sb->month);
	gl_strbuf_puts(o, " · generated at ");
	esc(o, gen);
	gl_strbuf_puts(o, "</p>\n");
	gl_report_shown_fini(&sh);
}

const char gl_report_no_usage_note[] =
	"No exporter data (dcgm-exporter) for this month's jobs: busy and allocated-idle GPU-hours are unknown, so "
	"the chart is left out.";

void gl_report_html(const struct gl_sbmodel *sb, const struct gl_report_style *st, int64_t generated_at_s,
		    struct gl_strbuf *o)
{
	struct gl_strbuf body = GL_STRBUF_INIT;
	char gen[32];
	const char *t = st->html;

	gl_timeutil_format(generated_at_s, gen, sizeof gen);
	html_body(sb, gen, &body);
	gl_strbuf_putc(&body, '\0');
	/* the template's placeholders were checked when it was read
	 * (gl_report_style_load); anything else in it is copied as it is */
	while (*t) {
		const char *at = strstr(t, "{{");
		if (!at) {
			gl_strbuf_puts(o, t);
			break;
		}
		gl_strbuf_append(o, t, (size_t)(at - t));
		if (!strncmp(at, "{{title}}", 9)) {
			gl_strbuf_puts(o, "GPU showback ");
			esc(o, sb->month);
			t = at + 9;
		} else if (!strncmp(at, "{{css}}", 7)) {
			gl_strbuf_puts(o, st->css ? st->css : "");
			t = at + 7;
		} else if (!strncmp(at, "{{body}}", 8)) {
			localize(st, body.p, o);
			t = at + 8;
		} else {
			gl_strbuf_puts(o, "{{");
			t = at + 2;
		}
	}
	gl_strbuf_fini(&body);
}

/* ---- the capacity page ---- */

const char *const gl_report_capacity_head[GL_REPORT_CAPACITY_COLS + 1] = {
	"Cluster", "GPU model", "GPUs", "Peak demand", "P >= 50 % from", "P >= 80 % from", "GPUs to add", "First order",
	"Method", NULL,
};

static void day_or(int64_t t, const char *none, char *buf, size_t n)
{
	if (t < 0)
		snprintf(buf, n, "unknown");
	else if (t == 0)
		snprintf(buf, n, "%s", none);
	else
		gl_timeutil_format_day(t, buf, n);
}

void gl_report_capacity_cells(const struct gl_sbmodel_capacity *r, char cells[GL_REPORT_CAPACITY_COLS][64])
{
	char d1[16], d2[16];
	snprintf(cells[0], 64, "%s", r->cluster);
	snprintf(cells[1], 64, "%s", r->gpu_model);
	if (isnan(r->capacity_gpus))
		snprintf(cells[2], 64, "unknown");
	else
		snprintf(cells[2], 64, "%.0f", r->capacity_gpus);
	snprintf(cells[3], 64, "%.1f", r->peak_gpus);
	day_or(r->sat50_s, "not within", cells[4], 64);
	day_or(r->sat80_s, "not within", cells[5], 64);
	if (r->gpus_to_add < 0)
		snprintf(cells[6], 64, "unknown");
	else
		snprintf(cells[6], 64, "%lld", (long long)r->gpus_to_add);
	if (!r->need_by_s) {
		snprintf(cells[7], 64, "-");
	} else {
		gl_timeutil_format_day(r->need_by_s, d1, sizeof d1);
		gl_timeutil_format_day(r->order_by_s, d2, sizeof d2);
		snprintf(cells[7], 64, "by %s for %s%s", d2, d1, r->late ? " (late)" : "");
	}
	snprintf(cells[8], 64, "%s", r->method);
}

void gl_report_capacity_note(const struct gl_sbmodel *sb, char *buf, size_t n)
{
	char day[16];
	gl_timeutil_format_day(sb->capacity_asof_s, day, sizeof day);
	snprintf(buf, n,
		 "Peak demand: the month's largest hour of allocated and pending GPUs. Outlook from %s, %d days ahead"
		 " (or as far as the history answers): the peak forecast from the 91 days before against the GPUs"
		 " available and the capacity plan; GPUs to add keep P(saturation) under 20 %%, ordered %lld days before"
		 " they are needed. Unknown: no inventory, or too little history for an interval.",
		 day, GL_SBMODEL_CAPACITY_DAYS, (long long)sb->capacity_lead_days);
}
