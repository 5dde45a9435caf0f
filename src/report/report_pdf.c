/* The showback report as PDF (see include/gl/report_pdf.h). */
#include "gl/report_pdf.h"
#include "gl/cost.h"
#include "gl/report.h"
#include "gl/timeutil.h"

#include <cairo-pdf.h>
#include <cairo.h>
#include <glib.h>
#include <assert.h>
#include <stdarg.h>
#include <pango/pangocairo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGE_W 595.0 /* A4 in points */
#define PAGE_H 842.0
#define MARGIN 42.0
#define FOOT 28.0

struct pdf {
	cairo_surface_t *surf;
	cairo_t *cr;
	/* a font map of our own, released after the document: the shared
	 * default one is per thread and never freed, which a daemon's API
	 * threads would pile up */
	PangoFontMap *fm;
	PangoContext *pc;
	const struct gl_showback *sb;
	char gen[32];
	int page;
	double y;
};

static cairo_status_t write_cb(void *closure, const unsigned char *data, unsigned int len)
{
	gl_strbuf_append(closure, data, len);
	return CAIRO_STATUS_SUCCESS;
}

/* Draws text at (x, y) top-left in a box of width w (0: to the right
 * margin, wrapping, so a long note or owner list stays on the page);
 * align 0 left, 1 right. Returns the height used. Invalid UTF-8 (an owner
 * name from the database) is repaired rather than refused. */
static double text(struct pdf *p, double x, double y, double w, const char *s, const char *font, int align)
{
	PangoLayout *l = pango_layout_new(p->pc);
	PangoFontDescription *fd = pango_font_description_from_string(font);
	char *v = g_utf8_make_valid(s, -1);
	int tw, th;
	pango_layout_set_font_description(l, fd);
	pango_layout_set_text(l, v, -1);
	if (w > 0 && align) {
		/* a number is never cut: a wide one is set smaller to fit */
		pango_layout_get_pixel_size(l, &tw, &th);
		if (tw > w) {
			pango_font_description_set_size(fd, (gint)((double)pango_font_description_get_size(fd) * w / tw));
			pango_layout_set_font_description(l, fd);
		}
		pango_layout_set_width(l, (int)(w * PANGO_SCALE));
		pango_layout_set_alignment(l, PANGO_ALIGN_RIGHT);
	} else if (w > 0) {
		pango_layout_set_width(l, (int)(w * PANGO_SCALE));
		pango_layout_set_ellipsize(l, PANGO_ELLIPSIZE_END);
	} else {
		pango_layout_set_width(l, (int)((PAGE_W - MARGIN - x) * PANGO_SCALE));
		pango_layout_set_wrap(l, PANGO_WRAP_WORD_CHAR);
	}
	pango_layout_get_pixel_size(l, &tw, &th);
	cairo_move_to(p->cr, x, y);
	pango_cairo_show_layout(p->cr, l);
	g_free(v);
	pango_font_description_free(fd);
	g_object_unref(l);
	return th;
}

static void footer(struct pdf *p)
{
	char b[128];
	cairo_set_source_rgb(p->cr, 0.4, 0.4, 0.4);
	snprintf(b, sizeof b, "GPU showback %s · generated at %s", p->sb->month, p->gen);
	text(p, MARGIN, PAGE_H - FOOT, 0, b, "DejaVu Sans 7", 0);
	snprintf(b, sizeof b, "Page %d", p->page);
	text(p, PAGE_W - MARGIN - 100, PAGE_H - FOOT, 100, b, "DejaVu Sans 7", 1);
	cairo_set_source_rgb(p->cr, 0, 0, 0);
}

static void new_page(struct pdf *p)
{
	if (p->page > 0) {
		footer(p);
		cairo_show_page(p->cr);
	}
	p->page++;
	p->y = MARGIN;
}

static void need(struct pdf *p, double h)
{
	if (p->y + h > PAGE_H - MARGIN - FOOT)
		new_page(p);
}

static void heading(struct pdf *p, const char *s)
{
	need(p, 60);
	p->y += 8;
	p->y += text(p, MARGIN, p->y, 0, s, "DejaVu Sans Bold 12", 0) + 4;
}

/* A table: rows of ncols strings; columns right-aligned where align[c]. */
#define T_MAXCOLS 16
struct table {
	size_t ncols, nrows, cap;
	const char *const *head;
	double width[T_MAXCOLS];
	const int *align;
	const char *empty; /* said under the heading when there is no row (static) */
	char **cells;      /* nrows x ncols */
};

/* Widths wider than the text area between the margins are scaled down to
 * it: the owners' twelve columns ran 20 pt into the right margin. */
static void t_init(struct table *t, const char *const *head, const double *width, const int *align, size_t ncols)
{
	double sum = 0, k;
	memset(t, 0, sizeof *t);
	t->head = head;
	t->align = align;
	t->empty = "None this month.";
	assert(ncols <= T_MAXCOLS);
	t->ncols = ncols;
	for (size_t c = 0; c < t->ncols; c++)
		sum += width[c];
	k = sum > PAGE_W - 2 * MARGIN ? (PAGE_W - 2 * MARGIN) / sum : 1.0;
	for (size_t c = 0; c < t->ncols; c++)
		t->width[c] = width[c] * k;
}

static void t_row(struct table *t, ...)
{
	va_list ap;
	if (t->nrows == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 16;
		t->cells = gl_xrealloc(t->cells, t->cap * t->ncols * sizeof *t->cells);
	}
	va_start(ap, t);
	for (size_t c = 0; c < t->ncols; c++)
		t->cells[t->nrows * t->ncols + c] = gl_xstrdup(va_arg(ap, const char *));
	va_end(ap);
	t->nrows++;
}

/* A column heading wraps onto more lines at its size instead of shrinking
 * to fit its column (Budget % was set at about 3 pt). Returns the height of
 * the heading, drawn when draw. */
static double t_head_cell(struct pdf *p, double x, double y, double w, const char *s, int align, int draw)
{
	PangoLayout *l = pango_layout_new(p->pc);
	PangoFontDescription *fd = pango_font_description_from_string("DejaVu Sans Bold 6.5");
	int tw, th;
	pango_layout_set_font_description(l, fd);
	pango_layout_set_text(l, s, -1);
	pango_layout_set_width(l, (int)(w * PANGO_SCALE));
	pango_layout_set_wrap(l, PANGO_WRAP_WORD_CHAR);
	pango_layout_set_alignment(l, align ? PANGO_ALIGN_RIGHT : PANGO_ALIGN_LEFT);
	pango_layout_get_pixel_size(l, &tw, &th);
	if (draw) {
		cairo_move_to(p->cr, x, y);
		pango_cairo_show_layout(p->cr, l);
	}
	pango_font_description_free(fd);
	g_object_unref(l);
	return th;
}

static void t_head(struct pdf *p, const struct table *t)
{
	double x = MARGIN, hh = 0;
	for (size_t c = 0; c < t->ncols; c++) {
		double h = t_head_cell(p, 0, 0, t->width[c] - 4, t->head[c], t->align[c], 0);
		hh = h > hh ? h : hh;
	}
	cairo_set_source_rgb(p->cr, 0.93, 0.93, 0.93);
	cairo_rectangle(p->cr, MARGIN, p->y - 1, PAGE_W - 2 * MARGIN, hh + 3);
	cairo_fill(p->cr);
	cairo_set_source_rgb(p->cr, 0, 0, 0);
	for (size_t c = 0; c < t->ncols; c++) {
		t_head_cell(p, x + 2, p->y, t->width[c] - 4, t->head[c], t->align[c], 1);
		x += t->width[c];
	}
	p->y += hh + 4;
}

static void t_draw(struct pdf *p, struct table *t)
{
	need(p, 30);
	t_head(p, t);
	/* a heading over nothing read as a table cut off */
	if (!t->nrows)
		p->y += text(p, MARGIN + 2, p->y, 0, t->empty, "DejaVu Sans Oblique 6.5", 0) + 2;
	for (size_t r = 0; r < t->nrows; r++) {
		double x = MARGIN;
		if (p->y + 11 > PAGE_H - MARGIN - FOOT) {
			new_page(p);
			t_head(p, t);
		}
		for (size_t c = 0; c < t->ncols; c++) {
			text(p, x + 2, p->y, t->width[c] - 4, t->cells[r * t->ncols + c], "DejaVu Sans 6.5", t->align[c]);
			x += t->width[c];
		}
		cairo_set_source_rgb(p->cr, 0.85, 0.85, 0.85);
		cairo_set_line_width(p->cr, 0.3);
		cairo_move_to(p->cr, MARGIN, p->y + 10.5);
		cairo_line_to(p->cr, PAGE_W - MARGIN, p->y + 10.5);
		cairo_stroke(p->cr);
		cairo_set_source_rgb(p->cr, 0, 0, 0);
		p->y += 11;
	}
	for (size_t i = 0; i < t->nrows * t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	t->cells = NULL;
	t->nrows = t->cap = 0;
	p->y += 4;
}

static const double pal[][3] = {{0.31, 0.47, 0.65}, {0.95, 0.56, 0.17}, {0.88, 0.34, 0.35}, {0.46, 0.72, 0.70},
				{0.35, 0.63, 0.31}, {0.93, 0.79, 0.28}, {0.69, 0.48, 0.63}, {1.00, 0.62, 0.65},
				{0.61, 0.46, 0.37}, {0.73, 0.69, 0.67}};
#define SERIES 9

static void money(const struct gl_showback *sb, int64_t m, char *b, size_t n)
{
	gl_money_format(m, sb->minor, b, n);
}

static void chart_daily(struct pdf *p)
{
	const struct gl_showback *sb = p->sb;
	double x0 = MARGIN + 40, w = PAGE_W - 2 * MARGIN - 40, h = 170, bw;
	size_t ns = sb->n_owners < SERIES ? sb->n_owners : SERIES;
	int64_t max = 1;
	char b[48];
	heading(p, "GPU-hours by owner per day");
	need(p, h + 50);
	for (size_t d = 0; d < sb->n_days; d++) {
		int64_t t = 0;
		for (size_t i = 0; i < sb->n_owners; i++)
			t += sb->owners[i].daily_s[d];
		if (t > max)
			max = t;
	}
	bw = w / (double)(sb->n_days ? sb->n_days : 1);
	gl_report_fmt_hours(max, b, sizeof b);
	text(p, MARGIN, p->y, 38, b, "DejaVu Sans 6", 1);
	for (size_t d = 0; d < sb->n_days; d++) {
		double y = p->y + h;
		for (size_t i = 0; i < sb->n_owners; i++) {
			size_t s = i < ns ? i : ns;
			double bh = (double)sb->owners[i].daily_s[d] * h / (double)max;
			if (bh <= 0)
				continue;
			y -= bh;
			cairo_set_source_rgb(p->cr, pal[s % 10][0], pal[s % 10][1], pal[s % 10][2]);
			cairo_rectangle(p->cr, x0 + bw * (double)d + 0.5, y, bw - 1, bh);
			cairo_fill(p->cr);
		}
		cairo_set_source_rgb(p->cr, 0, 0, 0);
		if (d % 5 == 0) {
			snprintf(b, sizeof b, "%zu", d + 1);
			text(p, x0 + bw * (double)d, p->y + h + 2, 0, b, "DejaVu Sans 6", 0);
		}
	}
	cairo_set_line_width(p->cr, 0.5);
	cairo_move_to(p->cr, x0, p->y + h);
	cairo_line_to(p->cr, x0 + w, p->y + h);
	cairo_stroke(p->cr);
	p->y += h + 14;
	for (size_t i = 0; i <= ns && i < sb->n_owners; i++) {
		double lx = MARGIN + (double)(i % 5) * 100, ly = p->y + (double)(i / 5) * 11;
		cairo_set_source_rgb(p->cr, pal[i % 10][0], pal[i % 10][1], pal[i % 10][2]);
		cairo_rectangle(p->cr, lx, ly + 1, 7, 7);
		cairo_fill(p->cr);
		cairo_set_source_rgb(p->cr, 0, 0, 0);
		text(p, lx + 10, ly, 88, i == ns ? "others" : gl_report_owner_label(sb->owners[i].name), "DejaVu Sans 6", 0);
	}
	p->y += 26;
}

static void chart_pairs(struct pdf *p, int mom)
{
	const struct gl_showback *sb = p->sb;
	size_t n = sb->n_owners < 12 ? sb->n_owners : 12;
	double x0 = MARGIN + 110, w = PAGE_W - 2 * MARGIN - 110;
	int64_t max = 1;
	heading(p, mom ? "Cost by owner, month over month" : "Busy and allocated-idle GPU-hours");
	for (size_t i = 0; i < n; i++) {
		const struct gl_sb_owner *o = &sb->owners[i];
		int64_t a = mom ? o->total_micros : o->busy_s + o->aidle_s;
		if (a > max)
			max = a;
		if (mom && o->prev_total_micros > max)
			max = o->prev_total_micros;
	}
	need(p, (double)n * 16 + 20);
	for (size_t i = 0; i < n; i++) {
		const struct gl_sb_owner *o = &sb->owners[i];
		text(p, MARGIN, p->y + 2, 105, gl_report_owner_label(o->name), "DejaVu Sans 6.5", 1);
		if (mom) {
			double a = (double)(o->total_micros > 0 ? o->total_micros : 0) * w / (double)max;
			double b = (double)(o->prev_total_micros > 0 ? o->prev_total_micros : 0) * w / (double)max;
			cairo_set_source_rgb(p->cr, pal[0][0], pal[0][1], pal[0][2]);
			cairo_rectangle(p->cr, x0, p->y + 1, a, 6);
			cairo_fill(p->cr);
			cairo_set_source_rgb(p->cr, pal[9][0], pal[9][1], pal[9][2]);
			cairo_rectangle(p->cr, x0, p->y + 7, b, 6);
			cairo_fill(p->cr);
		} else if (o->has_usage) {
			double a = (double)o->busy_s * w / (double)max, b = (double)o->aidle_s * w / (double)max;
			cairo_set_source_rgb(p->cr, pal[4][0], pal[4][1], pal[4][2]);
			cairo_rectangle(p->cr, x0, p->y + 1, a, 12);
			cairo_fill(p->cr);
			cairo_set_source_rgb(p->cr, pal[2][0], pal[2][1], pal[2][2]);
			cairo_rectangle(p->cr, x0 + a, p->y + 1, b, 12);
			cairo_fill(p->cr);
		} else {
			cairo_set_source_rgb(p->cr, 0.4, 0.4, 0.4);
			text(p, x0 + 2, p->y + 2, 0, "no data", "DejaVu Sans 6.5", 0);
		}
		cairo_set_source_rgb(p->cr, 0, 0, 0);
		p->y += 16;
	}
	text(p, x0, p->y, 0,
	     mom ? "upper bar: this month, lower bar: previous month"
		 : "green: busy GPU-hours, red: allocated-idle GPU-hours (exporter data)",
	     "DejaVu Sans 6", 0);
	p->y += 14;
}

static void jobs_table(struct pdf *p, const char *title, const char *empty, const struct gl_sb_job *j, size_t n)
{
	static const char *const h[] = {"#", "Job", "Cluster", "Owner", "State", "GPUs", "GPU-h", "Cost", "Idle GPU-h",
					"Idle cost"};
	static const double w[] = {18, 70, 55, 90, 60, 35, 45, 50, 46, 42};
	static const int a[] = {1, 0, 0, 0, 0, 1, 1, 1, 1, 1};
	struct table t;
	heading(p, title);
	t_init(&t, h, w, a, 10);
	t.empty = empty;
	for (size_t i = 0; i < n; i++) {
		char r[16], g[32], hh[32], c[64], ih[32], ic[64];
		snprintf(r, sizeof r, "%zu", i + 1);
		gl_report_fmt_gpus(j[i].gpu_micro, g, sizeof g);
		gl_report_fmt_hours(j[i].alloc_s, hh, sizeof hh);
		gl_report_fmt_job_money(p->sb, &j[i], j[i].cost_micros, c, sizeof c);
		gl_report_fmt_hours(j[i].idle_s, ih, sizeof ih);
		gl_report_fmt_job_money(p->sb, &j[i], j[i].idle_micros, ic, sizeof ic);
		t_row(&t, r, j[i].job_id, j[i].cluster, gl_report_owner_label(j[i].owner), j[i].state, g, hh, c,
		      j[i].has_usage ? ih : "no data", j[i].has_usage ? ic : "no data");
	}
	t_draw(p, &t);
}

static void body(struct pdf *p)
{
	const struct gl_showback *sb = p->sb;
	const struct gl_sb_fleet *f = &sb->fleet;
		char b[256], c[64], d[64];
	struct table t;
	int64_t diff = gl_report_reconcile_diff(sb), own = 0, un = 0;
	struct gl_report_shown shn;

	gl_report_shown_compute(sb, &shn);

	/* cover */
	new_page(p);
	p->y = 150;
	p->y += text(p, MARGIN, p->y, 0, "GPU showback and chargeback", "DejaVu Sans Bold 20", 0) + 6;
	snprintf(b, sizeof b, "%s · by %s · idle shared: %s · %s%s", sb->month, sb->aggregate, gl_cb_share_name(sb->share),
		 sb->currency, sb->closed ? "" : " · month to date");
	p->y += text(p, MARGIN, p->y, 0, b, "DejaVu Sans 12", 0) + 20;
	money(sb, shn.fleet_total, c, sizeof c);
	snprintf(b, sizeof b, "Fleet total: %s %s", c, sb->currency);
	p->y += text(p, MARGIN, p->y, 0, b, "DejaVu Sans Bold 14", 0) + 4;
	gl_report_fmt_hours(f->allocated_s, c, sizeof c);
	snprintf(b, sizeof b, "Allocated GPU-hours: %s", c);
	p->y += text(p, MARGIN, p->y, 0, b, "DejaVu Sans 11", 0) + 4;
	snprintf(b, sizeof b, "Owners: %zu · %s", sb->n_owners,
		 diff ? "DOES NOT RECONCILE" : "reconciles to the micro-unit");
	p->y += text(p, MARGIN, p->y, 0, b, "DejaVu Sans 11", 0) + 4;
	snprintf(b, sizeof b, "Generated at %s", p->gen);
	p->y += text(p, MARGIN, p->y, 0, b, "DejaVu Sans 9", 0) + 24;
	if (sb->n_partial) {
		p->y += text(p, MARGIN, p->y, 0, "Partial data", "DejaVu Sans Bold 11", 0) + 4;
		for (size_t i = 0; i < sb->n_partial; i++) {
			PangoLayout *l = pango_layout_new(p->pc);
			PangoFontDescription *fd = pango_font_description_from_string("DejaVu Sans 9");
			char *v = g_utf8_make_valid(sb->partial[i], -1);
			int tw, th;
			pango_layout_set_font_description(l, fd);
			pango_layout_set_width(l, (int)((PAGE_W - 2 * MARGIN - 10) * PANGO_SCALE));
			pango_layout_set_wrap(l, PANGO_WRAP_WORD_CHAR);
			pango_layout_set_text(l, v, -1);
			pango_layout_get_pixel_size(l, &tw, &th);
			need(p, th);
			cairo_move_to(p->cr, MARGIN + 10, p->y);
			pango_cairo_show_layout(p->cr, l);
			p->y += th + 3;
			g_free(v);
			pango_font_description_free(fd);
			g_object_unref(l);
		}
	}

	/* owners */
	new_page(p);
	{
		static const char *const h[] = {"Owner", "GPU-h", "Cost", "Alloc-idle GPU-h", "Idle share", "Total",
						"Share %", "Prev. month", "Change %", "Budget %", "Failed cost", "kWh"};
		static const double w[] = {68, 36, 40, 38, 34, 44, 34, 38, 44, 44, 36, 40};
		static const int a[] = {0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
		heading(p, "Owners");
		t_init(&t, h, w, a, 12);
		for (size_t i = 0; i < sb->n_owners; i++) {
			const struct gl_sb_owner *o = &sb->owners[i];
			char gh[32], co[48], ai[32], is[48], to[48], sh[32], pv[48], ch[32], bu[32], fc[48], kw[32];
			gl_report_fmt_hours(o->alloc_s, gh, sizeof gh);
			money(sb, shn.cost[i], co, sizeof co);
			if (o->has_usage)
				gl_report_fmt_hours(o->aidle_s, ai, sizeof ai);
			else
				snprintf(ai, sizeof ai, "no data");
			money(sb, shn.idle_share[i], is, sizeof is);
			money(sb, shn.total[i], to, sizeof to);
			gl_report_fmt_pct(o->total_micros, f->total_micros, sh, sizeof sh);
			if (o->has_prev) {
				money(sb, o->prev_total_micros, pv, sizeof pv);
				gl_report_fmt_pct(o->total_micros - o->prev_total_micros, o->prev_total_micros, ch, sizeof ch);
				if (!ch[0])
					snprintf(ch, sizeof ch, "new");
			} else {
				snprintf(pv, sizeof pv, "no data");
				ch[0] = '\0';
			}
			if (o->has_budget)
				gl_report_fmt_pct(o->total_micros, o->budget_micros, bu, sizeof bu);
			else
				snprintf(bu, sizeof bu, "none");
			money(sb, o->failed_micros, fc, sizeof fc);
			if (o->has_energy)
				gl_report_fmt_kwh(o->energy_mj, kw, sizeof kw);
			else
				snprintf(kw, sizeof kw, "no data");
			t_row(&t, gl_report_owner_label(o->name), gh, co, ai, is, to, sh, pv, ch, bu, fc, kw);
		}
		t_draw(p, &t);
	}
	/* reconciliation */
	for (size_t i = 0; i < sb->n_owners; i++) {
		if (!strcmp(sb->owners[i].name, "__unallocated__"))
			un += sb->owners[i].total_micros;
		else
			own += sb->owners[i].total_micros;
	}
	{
		static const char *const h[] = {"Line", "Amount", "Micro-units"};
		static const double w[] = {200, 100, 120};
		static const int a[] = {0, 1, 1};
		heading(p, "Reconciliation");
		t_init(&t, h, w, a, 3);
#define RROW(label, shown, v)                                                                                        \
	do {                                                                                                         \
		money(sb, shown, c, sizeof c);                                                                       \
		snprintf(d, sizeof d, "%lld", (long long)(v));                                                      \
		t_row(&t, label, c, d);                                                                              \
	} while (0)
		RROW("Σ owners", shn.owners, own);
		RROW("__unallocated__", shn.unallocated, un);
		RROW("__idle__", shn.idle_left, f->idle_left_micros);
		RROW("Fleet total", shn.fleet_total, f->total_micros);
		RROW("Difference", diff, diff);
#undef RROW
		t_draw(p, &t);
	}
	/* fleet: the CSV table's rows, labelled */
	{
		static const char *const h[] = {"Fleet", "Value"};
		static const double w[] = {200, 120};
		static const int a[] = {0, 1};
		struct gl_report_fleet_row rows[GL_REPORT_FLEET_ROWS];
		size_t n = gl_report_fleet_rows(sb, rows);
		heading(p, "Fleet");
		t_init(&t, h, w, a, 2);
		for (size_t i = 0; i < n; i++)
			if (rows[i].label)
				t_row(&t, rows[i].label, rows[i].value);
		t_draw(p, &t);
	}
	/* charts */
	new_page(p);
	chart_daily(p);
	chart_pairs(p, 0);
	chart_pairs(p, 1);
	/* detail tables */
	{
		static const char *const h[] = {"Owner", "GPU model / MIG profile", "GPU-h", "Unpriced GPU-h", "Cost"};
		static const double w[] = {150, 130, 80, 80, 70};
		static const int a[] = {0, 0, 1, 1, 1};
		heading(p, "GPU-hours by GPU model / MIG profile");
		t_init(&t, h, w, a, 5);
		for (size_t i = 0; i < sb->n_models; i++) {
			char gh[32], uh[32], co[48];
			gl_report_fmt_hours(sb->models[i].alloc_s, gh, sizeof gh);
			gl_report_fmt_hours(sb->models[i].unpriced_s, uh, sizeof uh);
			money(sb, sb->models[i].cost_micros, co, sizeof co);
			t_row(&t, gl_report_owner_label(sb->models[i].owner), sb->models[i].model, gh, uh, co);
		}
		t_draw(p, &t);
	}
	{
		static const char *const h[] = {"Owner", "Failed-job GPU-h", "Failed-job cost"};
		static const double w[] = {200, 100, 100};
		static const int a[] = {0, 1, 1};
		heading(p, "Failed-job waste");
		p->y += text(p, MARGIN, p->y, 0, "Jobs that ended FAILED, TIMEOUT, NODE_FAIL, OUT_OF_MEMORY or BOOT_FAIL.",
			     "DejaVu Sans 7", 0) + 3;
		t_init(&t, h, w, a, 3);
		for (size_t i = 0; i < sb->n_owners; i++) {
			char gh[32], co[48];
			if (!sb->owners[i].failed_s && !sb->owners[i].failed_micros)
				continue;
			gl_report_fmt_hours(sb->owners[i].failed_s, gh, sizeof gh);
			money(sb, sb->owners[i].failed_micros, co, sizeof co);
			t_row(&t, gl_report_owner_label(sb->owners[i].name), gh, co);
		}
		t_draw(p, &t);
	}
	{
		static const char *const h[] = {"By", "Name", "Jobs", "Wait p50 s", "p90 s", "p99 s"};
		static const double w[] = {60, 160, 60, 70, 70, 70};
		static const int a[] = {0, 0, 1, 1, 1, 1};
		heading(p, "Queue waits");
		t_init(&t, h, w, a, 6);
		for (size_t i = 0; i < sb->n_waits; i++) {
			const struct gl_sb_wait *wt = &sb->waits[i];
			char n1[24], n2[24], n3[24], n4[24];
			snprintf(n1, sizeof n1, "%lld", (long long)wt->jobs);
			snprintf(n2, sizeof n2, "%lld", (long long)wt->p50_s);
			snprintf(n3, sizeof n3, "%lld", (long long)wt->p90_s);
			snprintf(n4, sizeof n4, "%lld", (long long)wt->p99_s);
			t_row(&t, wt->kind, gl_report_owner_label(wt->name), n1, n2, n3, n4);
		}
		t_draw(p, &t);
	}
	{
		/* the capacity page: its own page, the cells the HTML shows */
		static const double w[] = {70, 70, 45, 55, 65, 65, 50, 110, 55};
		static const int a[] = {0, 0, 1, 1, 0, 0, 1, 0, 0}; /* as the HTML: numbers right */
		char cells[GL_REPORT_CAPACITY_COLS][64], note[400];
		new_page(p);
		heading(p, "Capacity outlook");
		t_init(&t, gl_report_capacity_head, w, a, GL_REPORT_CAPACITY_COLS);
		t.empty = "No GPU demand or inventory in the 91 days before.";
		for (size_t i = 0; i < sb->n_capacity; i++) {
			gl_report_capacity_cells(&sb->capacity[i], cells);
			t_row(&t, cells[0], cells[1], cells[2], cells[3], cells[4], cells[5], cells[6], cells[7], cells[8]);
		}
		t_draw(p, &t);
		gl_report_capacity_note(sb, note, sizeof note);
		need(p, 40);
		p->y += text(p, MARGIN, p->y + 4, 0, note, "DejaVu Sans 8", 0) + 8;
	}
	jobs_table(p, "Top 20 jobs by cost", "No GPU job this month.", sb->top_cost, sb->n_top_cost);
	jobs_table(p, "Top 20 jobs by idle cost",
		   sb->fleet.usage_known ? "No job was idle in its allocation this month."
					 : "Unknown: no exporter data (dcgm-exporter) for this month's jobs.",
		   sb->top_idle, sb->n_top_idle);
	{
		static const char *const h[] = {"GPU model", "MIG profile", "Currency", "Per GPU-hour", "From", "To"};
		static const double w[] = {90, 70, 50, 70, 110, 110};
		static const int a[] = {0, 0, 0, 1, 0, 0};
		heading(p, "Rates in force");
		t_init(&t, h, w, a, 6);
		for (size_t i = 0; i < sb->n_rates; i++) {
			const struct gl_sb_rate *r = &sb->rates[i];
			gl_money_format(r->micros_per_gpu_hour, 6, c, sizeof c);
			t_row(&t, r->model, r->mig_profile, r->currency, c, r->valid_from[0] ? r->valid_from : "always",
			      r->valid_to[0] ? r->valid_to : "open");
		}
		t_draw(p, &t);
	}
	{
		static const char *const h[] = {"Prio", "Cluster", "Match", "Value", "Team", "Project", "Cost center",
						"From", "To"};
		static const double w[] = {28, 50, 50, 60, 60, 55, 55, 76, 76};
		static const int a[] = {1, 0, 0, 0, 0, 0, 0, 0, 0};
		heading(p, "Owner rules in force");
		t_init(&t, h, w, a, 9);
		for (size_t i = 0; i < sb->n_rules; i++) {
			const struct gl_sb_rule *r = &sb->rules[i];
			snprintf(d, sizeof d, "%lld", (long long)r->priority);
			t_row(&t, d, r->cluster, r->match_field, r->match_value, r->team, r->project, r->cost_center,
			      r->valid_from[0] ? r->valid_from : "always", r->valid_to[0] ? r->valid_to : "open");
		}
		t_draw(p, &t);
	}
	footer(p);
	cairo_show_page(p->cr);
	gl_report_shown_fini(&shn);
}

int gl_report_pdf(const struct gl_showback *sb, int64_t generated_at_s, struct gl_strbuf *out, struct gl_err *err)
{
	struct pdf p;
	cairo_status_t st;
	int rc = 0;

	memset(&p, 0, sizeof p);
	p.sb = sb;
	gl_time_format(generated_at_s, p.gen, sizeof p.gen);
	p.surf = cairo_pdf_surface_create_for_stream(write_cb, out, PAGE_W, PAGE_H);
	cairo_pdf_surface_set_metadata(p.surf, CAIRO_PDF_METADATA_TITLE, "GPU showback");
	cairo_pdf_surface_set_metadata(p.surf, CAIRO_PDF_METADATA_CREATOR, "gpuledger");
	p.cr = cairo_create(p.surf);
	p.fm = pango_cairo_font_map_new();
	p.pc = pango_font_map_create_context(p.fm);
	pango_cairo_update_context(p.cr, p.pc);
	body(&p);
	g_object_unref(p.pc);
	g_object_unref(p.fm);
	cairo_destroy(p.cr);
	cairo_surface_finish(p.surf);
	st = cairo_surface_status(p.surf);
	if (st != CAIRO_STATUS_SUCCESS)
		rc = gl_err_set(err, GL_EIO, "report pdf: %s", cairo_status_to_string(st));
	cairo_surface_destroy(p.surf);
	return rc;
}

/* LeakSanitizer reads this hook (make SANITIZE=address): fontconfig keeps
 * one ~300-byte block of its process-wide configuration unreachable on
 * purpose; everything pango and cairo allocate for a document is freed
 * above. Unused in normal builds. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:libfontconfig.so\n";
}
