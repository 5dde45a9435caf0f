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

#define PAGE_W (p->L->page_width)
#define PAGE_H (p->L->page_height)
#define MARGIN (p->L->margin)
#define FOOT (p->L->footer)
#define TEXT_W (PAGE_W - 2 * MARGIN)

struct pdf {
	cairo_surface_t *surf;
	cairo_t *cr;
	/* a font map of our own, released after the document: the shared
	 * default one is per thread and never freed, which a daemon's API
	 * threads would pile up */
	PangoFontMap *fm;
	PangoContext *pc;
	const struct gl_sbmodel *sb;
	const struct gl_report_style *st;
	const struct gl_report_pdf_layout *L;
	char gen[32];
	int page;
	double y;
};

enum face { F_REGULAR, F_BOLD, F_ITALIC };

static cairo_status_t write_cb(void *closure, const unsigned char *data, unsigned int len)
{
	gl_strbuf_append(closure, data, len);
	return CAIRO_STATUS_SUCCESS;
}

/* A layout of s in the layout file's family at size, wrapped at w (0: to
 * the right margin from x). Nothing is ever ellipsized or shrunk: a name
 * wraps (at a word, else anywhere), so finance reads it whole. Invalid
 * UTF-8 (an owner name from the database) is repaired rather than refused. */
static PangoLayout *lay(struct pdf *p, double x, double w, const char *s, double size, enum face f, int align)
{
	PangoLayout *l = pango_layout_new(p->pc);
	PangoFontDescription *fd = pango_font_description_from_string(p->L->font);
	char *v = g_utf8_make_valid(s, -1);
	pango_font_description_set_size(fd, (gint)(size * PANGO_SCALE));
	if (f == F_BOLD)
		pango_font_description_set_weight(fd, PANGO_WEIGHT_BOLD);
	else if (f == F_ITALIC)
		pango_font_description_set_style(fd, PANGO_STYLE_OBLIQUE);
	pango_layout_set_font_description(l, fd);
	pango_layout_set_text(l, v, -1);
	pango_layout_set_width(l, (int)((w > 0 ? w : PAGE_W - MARGIN - x) * PANGO_SCALE));
	pango_layout_set_wrap(l, PANGO_WRAP_WORD_CHAR);
	pango_layout_set_alignment(l, align == 2 ? PANGO_ALIGN_CENTER : align ? PANGO_ALIGN_RIGHT : PANGO_ALIGN_LEFT);
	g_free(v);
	pango_font_description_free(fd);
	return l;
}

/* Draws text at (x, y) top-left in a box of width w (0: to the right
 * margin); align 0 left, 1 right, 2 centred. Returns the height used. */
static double text(struct pdf *p, double x, double y, double w, const char *s, double size, enum face f, int align)
{
	PangoLayout *l = lay(p, x, w, s, size, f, align);
	int tw, th;
	pango_layout_get_pixel_size(l, &tw, &th);
	cairo_move_to(p->cr, x, y);
	pango_cairo_show_layout(p->cr, l);
	g_object_unref(l);
	return th;
}

/* The height text() would use, drawing nothing. */
static double text_h(struct pdf *p, double w, const char *s, double size, enum face f)
{
	PangoLayout *l = lay(p, MARGIN, w, s, size, f, 0);
	int tw, th;
	pango_layout_get_pixel_size(l, &tw, &th);
	g_object_unref(l);
	return th;
}

/* The width s takes on one line. */
static double text_w(struct pdf *p, const char *s, double size, enum face f)
{
	PangoLayout *l = lay(p, MARGIN, 0, s, size, f, 0);
	int tw, th;
	pango_layout_set_width(l, -1);
	pango_layout_get_pixel_size(l, &tw, &th);
	g_object_unref(l);
	return tw;
}

/* The widest part of s that must stay on one line: all of it for a number
 * (a figure broken over two lines reads as two), else its longest word. */
static double unbreakable_w(struct pdf *p, const char *s, double size, enum face f, int number)
{
	char w[256];
	double max = 0;
	if (number)
		return text_w(p, s, size, f);
	while (*s) {
		size_t n = strcspn(s, " ");
		if (n && n < sizeof w) {
			double x;
			memcpy(w, s, n);
			w[n] = '\0';
			x = text_w(p, w, size, f);
			max = x > max ? x : max;
		}
		s += n;
		s += strspn(s, " ");
	}
	return max;
}

static void footer(struct pdf *p)
{
	char b[128];
	cairo_set_source_rgb(p->cr, 0.4, 0.4, 0.4);
	snprintf(b, sizeof b, "GPU showback %s · generated at %s", p->sb->month, p->gen);
	text(p, MARGIN, PAGE_H - FOOT, 0, b, p->L->small_size, F_REGULAR, 0);
	snprintf(b, sizeof b, "Page %d", p->page);
	text(p, PAGE_W - MARGIN - 100, PAGE_H - FOOT, 100, b, p->L->small_size, F_REGULAR, 1);
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
	p->y += text(p, MARGIN, p->y, 0, s, p->L->heading_size, F_BOLD, 0) + 4;
}

/* A number as the site writes it (reports.thousands_separator, ...). */
static void local(struct pdf *p, char *b, size_t n)
{
	char t[256];
	gl_report_fmt_local(p->st, b, t, sizeof t);
	snprintf(b, n, "%s", t);
}

/* A table: rows of ncols strings; columns right-aligned (numbers) where
 * align[c]. Widths are minimums from the code, raised to the layout's
 * min_column_width (name_column_width for a name column); a table wider
 * than the page is drawn in parts of whole columns, the first column
 * repeated in each, never squeezed. */
#define T_MAXCOLS 16
struct table {
	size_t ncols, nrows, cap;
	const char *const *head;
	double width[T_MAXCOLS];
	const int *align;
	const char *empty; /* said under the heading when there is no row (static) */
	char **cells;      /* nrows x ncols */
	unsigned name;     /* mask of the name columns */
};

/* name: the columns that hold names (wrap, name_column_width) as a mask */
static void t_init(struct pdf *p, struct table *t, const char *const *head, const double *width, const int *align,
		   size_t ncols, unsigned name)
{
	memset(t, 0, sizeof *t);
	t->head = head;
	t->align = align;
	t->empty = "None this month.";
	assert(ncols <= T_MAXCOLS);
	t->ncols = ncols;
	t->name = name;
	for (size_t c = 0; c < t->ncols; c++) {
		double min = name & (1u << c) ? p->L->name_column_width : p->L->min_column_width;
		t->width[c] = width[c] > min ? width[c] : min;
	}
}

static void t_row(struct pdf *p, struct table *t, ...)
{
	va_list ap;
	if (t->nrows == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 16;
		t->cells = gl_xrealloc(t->cells, t->cap * t->ncols * sizeof *t->cells);
	}
	va_start(ap, t);
	for (size_t c = 0; c < t->ncols; c++) {
		const char *v = va_arg(ap, const char *);
		char b[256];
		if (t->align[c]) { /* a figure: short, shown with the site's separators */
			gl_report_fmt_local(p->st, v, b, sizeof b);
			v = b;
		}
		t->cells[t->nrows * t->ncols + c] = gl_xstrdup(v); /* a name whole, however long */
	}
	va_end(ap);
	t->nrows++;
}

/* The columns of a part: 0, then from..to-1. */
static double t_head(struct pdf *p, const struct table *t, size_t from, size_t to, int draw)
{
	double x = MARGIN, hh = 0, w = t->width[0];
	for (size_t c = from; c < to; c++)
		w += t->width[c];
	for (size_t c = 0; c < to; c = c ? c + 1 : from) {
		double h = text_h(p, t->width[c] - 4, t->head[c], p->L->table_size, F_BOLD);
		hh = h > hh ? h : hh;
	}
	if (!draw)
		return hh + 4;
	cairo_set_source_rgb(p->cr, 0.93, 0.93, 0.93);
	cairo_rectangle(p->cr, MARGIN, p->y - 1, w, hh + 3);
	cairo_fill(p->cr);
	cairo_set_source_rgb(p->cr, 0, 0, 0);
	for (size_t c = 0; c < to; c = c ? c + 1 : from) {
		text(p, x + 2, p->y, t->width[c] - 4, t->head[c], p->L->table_size, F_BOLD, t->align[c]);
		x += t->width[c];
	}
	p->y += hh + 4;
	return hh + 4;
}

static double t_row_h(struct pdf *p, const struct table *t, size_t r, size_t from, size_t to)
{
	double rh = 0;
	for (size_t c = 0; c < to; c = c ? c + 1 : from) {
		double h = text_h(p, t->width[c] - 4, t->cells[r * t->ncols + c], p->L->table_size, F_REGULAR);
		rh = h > rh ? h : rh;
	}
	return rh + p->L->row_padding;
}

static void t_part(struct pdf *p, const struct table *t, size_t from, size_t to)
{
	double w = t->width[0];
	for (size_t c = from; c < to; c++)
		w += t->width[c];
	need(p, t_head(p, t, from, to, 0) + (t->nrows ? t_row_h(p, t, 0, from, to) : 12));
	t_head(p, t, from, to, 1);
	/* a heading over nothing read as a table cut off */
	if (!t->nrows)
		p->y += text(p, MARGIN + 2, p->y, 0, t->empty, p->L->table_size, F_ITALIC, 0) + 2;
	for (size_t r = 0; r < t->nrows; r++) {
		double x = MARGIN, rh = t_row_h(p, t, r, from, to);
		if (p->y + rh > PAGE_H - MARGIN - FOOT) {
			new_page(p);
			t_head(p, t, from, to, 1);
		}
		for (size_t c = 0; c < to; c = c ? c + 1 : from) {
			text(p, x + 2, p->y, t->width[c] - 4, t->cells[r * t->ncols + c], p->L->table_size, F_REGULAR,
			     t->align[c]);
			x += t->width[c];
		}
		cairo_set_source_rgb(p->cr, 0.85, 0.85, 0.85);
		cairo_set_line_width(p->cr, 0.3);
		cairo_move_to(p->cr, MARGIN, p->y + rh - 0.5);
		cairo_line_to(p->cr, MARGIN + w, p->y + rh - 0.5);
		cairo_stroke(p->cr);
		cairo_set_source_rgb(p->cr, 0, 0, 0);
		p->y += rh;
	}
	p->y += 4;
}

/* Widens each column to what must stay on one line in it, except a name
 * column, whose long names wrap (a whole word wider than it breaks). */
static void t_fit(struct pdf *p, struct table *t)
{
	for (size_t c = 0; c < t->ncols; c++) {
		/* 4 pt of the width are the gap to the next column */
		double need_w = unbreakable_w(p, t->head[c], p->L->table_size, F_BOLD, 0) + 8;
		if (t->name & (1u << c))
			continue;
		for (size_t r = 0; r < t->nrows; r++) {
			double x = unbreakable_w(p, t->cells[r * t->ncols + c], p->L->table_size, F_REGULAR, t->align[c]) + 8;
			need_w = x > need_w ? x : need_w;
		}
		if (need_w > TEXT_W - t->width[0])
			need_w = TEXT_W - t->width[0];
		t->width[c] = need_w > t->width[c] ? need_w : t->width[c];
	}
}

static void t_draw(struct pdf *p, struct table *t)
{
	size_t from = 1;
	t_fit(p, t);
	while (from < t->ncols || from == 1) {
		double w = t->width[0];
		size_t to = from;
		while (to < t->ncols && (to == from || w + t->width[to] <= TEXT_W))
			w += t->width[to++];
		if (from > 1) {
			need(p, 40);
			p->y += text(p, MARGIN, p->y, 0, "continued: the table's further columns", p->L->small_size,
				     F_ITALIC, 0) + 2;
		}
		t_part(p, t, from, to);
		if (to >= t->ncols)
			break;
		from = to;
	}
	for (size_t i = 0; i < t->nrows * t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	t->cells = NULL;
	t->nrows = t->cap = 0;
}

static const double pal[][3] = {{0.31, 0.47, 0.65}, {0.95, 0.56, 0.17}, {0.88, 0.34, 0.35}, {0.46, 0.72, 0.70},
				{0.35, 0.63, 0.31}, {0.93, 0.79, 0.28}, {0.69, 0.48, 0.63}, {1.00, 0.62, 0.65},
				{0.61, 0.46, 0.37}, {0.73, 0.69, 0.67}};
#define SERIES 9

static void money(const struct gl_sbmodel *sb, int64_t m, char *b, size_t n)
{
	gl_cost_format(m, sb->minor, b, n);
}

/* The daily chart's legend: the first owners, then "others"; a long name
 * wraps inside its slot. */
static void chart_legend(struct pdf *p, size_t ns)
{
	const struct gl_sbmodel *sb = p->sb;
	double slot = TEXT_W / 4, rowh = 0;
	for (size_t i = 0; i <= ns && i < p->sb->n_owners; i++) {
		const char *name = i == ns ? "others" : gl_report_owner_label(sb->owners[i].name);
		double lx = MARGIN + (double)(i % 4) * slot, h;
		if (i % 4 == 0) {
			p->y += rowh;
			rowh = 0;
			need(p, 24);
		}
		cairo_set_source_rgb(p->cr, pal[i % 10][0], pal[i % 10][1], pal[i % 10][2]);
		cairo_rectangle(p->cr, lx, p->y + 1, 7, 7);
		cairo_fill(p->cr);
		cairo_set_source_rgb(p->cr, 0, 0, 0);
		h = text(p, lx + 10, p->y, slot - 14, name, p->L->small_size, F_REGULAR, 0) + 3;
		rowh = h > rowh ? h : rowh;
	}
	p->y += rowh + 12;
}

/* Stacked GPU-hours by owner per day on a value axis with round, labelled
 * ticks and grid lines; days labelled every five. */
static void chart_daily(struct pdf *p)
{
	const struct gl_sbmodel *sb = p->sb;
	double x0 = MARGIN + 44, w = TEXT_W - 44, h = p->L->chart_height, bw, fs = p->L->small_size;
	size_t ns = sb->n_owners < SERIES ? sb->n_owners : SERIES;
	int64_t max = 0;
	struct gl_report_axis ax;
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
	gl_report_axis_ticks((max * 1000 + 3599) / 3600, 6, &ax);
	p->y += text(p, MARGIN, p->y, 40, "GPU-h", fs, F_REGULAR, 1) + 2;
	cairo_set_line_width(p->cr, 0.3);
	for (int k = 0; k <= ax.ticks; k++) {
		double ty = p->y + h - h * k / ax.ticks;
		gl_report_fmt_tick(&ax, ax.step_milli * k, b, sizeof b);
		local(p, b, sizeof b);
		cairo_set_source_rgb(p->cr, 0, 0, 0);
		text(p, MARGIN, ty - fs * 0.7, 38, b, fs, F_REGULAR, 1);
		cairo_set_source_rgb(p->cr, k ? 0.85 : 0, k ? 0.85 : 0, k ? 0.85 : 0);
		cairo_move_to(p->cr, x0 - 3, ty);
		cairo_line_to(p->cr, x0 + w, ty);
		cairo_stroke(p->cr);
	}
	bw = w / (double)(sb->n_days ? sb->n_days : 1);
	for (size_t d = 0; d < sb->n_days; d++) {
		double y = p->y + h;
		for (size_t i = 0; i < sb->n_owners; i++) {
			size_t s = i < ns ? i : ns;
			double bh = (double)sb->owners[i].daily_s[d] * 1000.0 / 3600.0 * h / (double)ax.top_milli;
			if (bh <= 0)
				continue;
			y -= bh;
			cairo_set_source_rgb(p->cr, pal[s % 10][0], pal[s % 10][1], pal[s % 10][2]);
			cairo_rectangle(p->cr, x0 + bw * (double)d + 0.5, y, bw - 1, bh);
			cairo_fill(p->cr);
		}
		cairo_set_source_rgb(p->cr, 0, 0, 0);
		if (d % 5 == 0 || d + 1 == sb->n_days) {
			snprintf(b, sizeof b, "%zu", d + 1);
			text(p, x0 + bw * ((double)d + 0.5) - 10, p->y + h + 2, 20, b, fs, F_REGULAR, 2);
		}
	}
	p->y += h + 14;
	chart_legend(p, ns);
}

static void chart_pairs(struct pdf *p, int mom)
{
	const struct gl_sbmodel *sb = p->sb;
	size_t n = sb->n_owners < 12 ? sb->n_owners : 12;
	double lw = p->L->name_column_width, x0 = MARGIN + lw + 5, w = TEXT_W - lw - 5;
	int64_t max = 1;
	heading(p, mom ? "Cost by owner, month over month" : "Busy and allocated-idle GPU-hours");
	if (!mom && !sb->fleet.usage_known) {
		/* a chart of "no data" bars said nothing a sentence does not */
		p->y += text(p, MARGIN, p->y, 0, gl_report_no_usage_note, p->L->text_size, F_ITALIC, 0) + 8;
		return;
	}
	for (size_t i = 0; i < n; i++) {
		const struct gl_sbmodel_owner *o = &sb->owners[i];
		int64_t a = mom ? o->total_micros : o->busy_s + o->aidle_s;
		if (a > max)
			max = a;
		if (mom && o->prev_total_micros > max)
			max = o->prev_total_micros;
	}
	for (size_t i = 0; i < n; i++) {
		const struct gl_sbmodel_owner *o = &sb->owners[i];
		const char *name = gl_report_owner_label(o->name);
		double rh = text_h(p, lw, name, p->L->table_size, F_REGULAR);
		rh = rh > 14 ? rh + 2 : 16;
		need(p, rh);
		text(p, MARGIN, p->y + 2, lw, name, p->L->table_size, F_REGULAR, 1);
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
			text(p, x0 + 2, p->y + 2, 0, "no data", p->L->table_size, F_REGULAR, 0);
		}
		cairo_set_source_rgb(p->cr, 0, 0, 0);
		p->y += rh;
	}
	text(p, x0, p->y, 0,
	     mom ? "upper bar: this month, lower bar: previous month"
		 : "green: busy GPU-hours, red: allocated-idle GPU-hours (exporter data)",
	     p->L->small_size, F_REGULAR, 0);
	p->y += 14;
}

static void jobs_table(struct pdf *p, const char *title, const char *empty, const struct gl_sbmodel_job *j, size_t n)
{
	static const char *const h[] = {"#", "Job", "Cluster", "Owner", "State", "GPUs", "GPU-h", "Cost", "Idle GPU-h",
					"Idle cost"};
	static const double w[] = {18, 40, 40, 80, 40, 28, 45, 45, 40, 45};
	static const int a[] = {1, 0, 0, 0, 0, 1, 1, 1, 1, 1};
	struct table t;
	heading(p, title);
	t_init(p, &t, h, w, a, 10, 1u << 3);
	t.empty = empty;
	for (size_t i = 0; i < n; i++) {
		char r[16], g[32], hh[32], c[64], ih[32], ic[64];
		snprintf(r, sizeof r, "%zu", i + 1);
		gl_report_fmt_gpus_shown(j[i].gpu_micro, g, sizeof g);
		gl_report_fmt_hours(j[i].alloc_s, hh, sizeof hh);
		gl_report_fmt_job_money(p->sb, &j[i], j[i].cost_micros, c, sizeof c);
		gl_report_fmt_hours(j[i].idle_s, ih, sizeof ih);
		gl_report_fmt_job_money(p->sb, &j[i], j[i].idle_micros, ic, sizeof ic);
		t_row(p, &t, r, j[i].job_id, j[i].cluster, gl_report_owner_label(j[i].owner), j[i].state, g, hh, c,
		      j[i].has_usage ? ih : "no data", j[i].has_usage ? ic : "no data");
	}
	t_draw(p, &t);
}

/* The cover: the month, the one fleet total, the reconciliation status and
 * the partial-data notes. */
static void cover(struct pdf *p, const struct gl_report_shown *shn)
{
	const struct gl_sbmodel *sb = p->sb;
	char b[256], c[64];
	int64_t diff = gl_report_reconcile_diff(sb);
	new_page(p);
	p->y = 150;
	p->y += text(p, MARGIN, p->y, 0, "GPU showback and chargeback", p->L->title_size, F_BOLD, 0) + 6;
	snprintf(b, sizeof b, "%s · by %s · idle shared: %s · %s%s", sb->month, sb->aggregate, gl_chargeback_share_name(sb->share),
		 sb->currency, sb->closed ? "" : " · month to date");
	p->y += text(p, MARGIN, p->y, 0, b, p->L->heading_size, F_REGULAR, 0) + 20;
	money(sb, shn->fleet_total, c, sizeof c);
	local(p, c, sizeof c);
	snprintf(b, sizeof b, "Fleet total: %s %s", c, sb->currency);
	p->y += text(p, MARGIN, p->y, 0, b, p->L->heading_size + 2, F_BOLD, 0) + 4;
	gl_report_fmt_hours(sb->fleet.allocated_s, c, sizeof c);
	local(p, c, sizeof c);
	snprintf(b, sizeof b, "Allocated GPU-hours: %s", c);
	p->y += text(p, MARGIN, p->y, 0, b, p->L->text_size + 2, F_REGULAR, 0) + 4;
	snprintf(b, sizeof b, "Owners: %zu · %s", sb->n_owners,
		 diff ? "DOES NOT RECONCILE" : "reconciles to the micro-unit");
	p->y += text(p, MARGIN, p->y, 0, b, p->L->text_size + 2, F_REGULAR, 0) + 4;
	snprintf(b, sizeof b, "Generated at %s", p->gen);
	p->y += text(p, MARGIN, p->y, 0, b, p->L->text_size, F_REGULAR, 0) + 24;
	if (!sb->n_partial)
		return;
	p->y += text(p, MARGIN, p->y, 0, "Partial data", p->L->text_size + 2, F_BOLD, 0) + 4;
	for (size_t i = 0; i < sb->n_partial; i++) {
		need(p, text_h(p, TEXT_W - 10, sb->partial[i], p->L->text_size, F_REGULAR));
		p->y += text(p, MARGIN + 10, p->y, TEXT_W - 10, sb->partial[i], p->L->text_size, F_REGULAR, 0) + 3;
	}
}

static void owners_table(struct pdf *p, const struct gl_report_shown *shn)
{
	const struct gl_sbmodel *sb = p->sb;
	static const char *const h[] = {"Owner", "GPU-h", "Cost", "Alloc-idle GPU-h", "Idle share", "Total",
					"Share %", "Prev. month", "Change %", "Budget %", "Failed cost", "kWh"};
	static const double w[] = {90, 50, 58, 50, 50, 58, 40, 58, 44, 44, 50, 44};
	static const int a[] = {0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
	struct table t;
	heading(p, "Owners");
	t_init(p, &t, h, w, a, 12, 1u);
	for (size_t i = 0; i < sb->n_owners; i++) {
		const struct gl_sbmodel_owner *o = &sb->owners[i];
		char gh[32], co[48], ai[32], is[48], to[48], sh[32], pv[48], ch[32], bu[32], fc[48], kw[32];
		gl_report_fmt_hours(o->alloc_s, gh, sizeof gh);
		money(sb, shn->cost[i], co, sizeof co);
		if (o->has_usage)
			gl_report_fmt_hours(o->aidle_s, ai, sizeof ai);
		else
			snprintf(ai, sizeof ai, "no data");
		money(sb, shn->idle_share[i], is, sizeof is);
		money(sb, shn->total[i], to, sizeof to);
		gl_report_fmt_pct(o->total_micros, sb->fleet.total_micros, sh, sizeof sh);
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
		t_row(p, &t, gl_report_owner_label(o->name), gh, co, ai, is, to, sh, pv, ch, bu, fc, kw);
	}
	t_draw(p, &t);
}

static void reconciliation_table(struct pdf *p, const struct gl_report_shown *shn)
{
	const struct gl_sbmodel *sb = p->sb;
	static const char *const h[] = {"Line", "Amount", "Micro-units"};
	static const double w[] = {200, 100, 120};
	static const int a[] = {0, 1, 1};
	const char *label[] = {"Σ owners", "__unallocated__", "__idle__", "Fleet total", "Difference"};
	int64_t diff = gl_report_reconcile_diff(sb), own = 0, un = 0;
	struct table t;
	for (size_t i = 0; i < sb->n_owners; i++) {
		if (!strcmp(sb->owners[i].name, "__unallocated__"))
			un += sb->owners[i].total_micros;
		else
			own += sb->owners[i].total_micros;
	}
	{
		int64_t shown[] = {shn->owners, shn->unallocated, shn->idle_left, shn->fleet_total, diff};
		int64_t exact[] = {own, un, sb->fleet.idle_left_micros, sb->fleet.total_micros, diff};
		heading(p, "Reconciliation");
		t_init(p, &t, h, w, a, 3, 1u);
		for (size_t i = 0; i < 5; i++) {
			char c[64], d[32];
			money(sb, shown[i], c, sizeof c);
			snprintf(d, sizeof d, "%lld", (long long)exact[i]);
			t_row(p, &t, label[i], c, d);
		}
		t_draw(p, &t);
	}
}

/* The fleet: the CSV table's rows, labelled. */
static void fleet_table(struct pdf *p)
{
	static const char *const h[] = {"Fleet", "Value"};
	static const double w[] = {200, 120};
	static const int a[] = {0, 1};
	struct gl_report_fleet_row rows[GL_REPORT_FLEET_ROWS];
	size_t n = gl_report_fleet_rows(p->sb, rows);
	struct table t;
	heading(p, "Fleet");
	t_init(p, &t, h, w, a, 2, 1u);
	for (size_t i = 0; i < n; i++)
		if (rows[i].label)
			t_row(p, &t, rows[i].label, rows[i].value);
	t_draw(p, &t);
}

static void models_table(struct pdf *p)
{
	const struct gl_sbmodel *sb = p->sb;
	static const char *const h[] = {"Owner", "GPU model / MIG profile", "GPU-h", "Unpriced GPU-h", "Cost"};
	static const double w[] = {150, 130, 80, 80, 70};
	static const int a[] = {0, 0, 1, 1, 1};
	struct table t;
	heading(p, "GPU-hours by GPU model / MIG profile");
	t_init(p, &t, h, w, a, 5, 3u);
	for (size_t i = 0; i < sb->n_models; i++) {
		char gh[32], uh[32], co[48];
		gl_report_fmt_hours(sb->models[i].alloc_s, gh, sizeof gh);
		gl_report_fmt_hours(sb->models[i].unpriced_s, uh, sizeof uh);
		money(sb, sb->models[i].cost_micros, co, sizeof co);
		t_row(p, &t, gl_report_owner_label(sb->models[i].owner), sb->models[i].model, gh, uh, co);
	}
	t_draw(p, &t);
}

static void waste_table(struct pdf *p)
{
	const struct gl_sbmodel *sb = p->sb;
	static const char *const h[] = {"Owner", "Failed-job GPU-h", "Failed-job cost"};
	static const double w[] = {200, 100, 100};
	static const int a[] = {0, 1, 1};
	struct table t;
	heading(p, "Failed-job waste");
	p->y += text(p, MARGIN, p->y, 0, "Jobs that ended FAILED, TIMEOUT, NODE_FAIL, OUT_OF_MEMORY or BOOT_FAIL.",
		     p->L->small_size + 1, F_REGULAR, 0) + 3;
	t_init(p, &t, h, w, a, 3, 1u);
	for (size_t i = 0; i < sb->n_owners; i++) {
		char gh[32], co[48];
		if (!sb->owners[i].failed_s && !sb->owners[i].failed_micros)
			continue;
		gl_report_fmt_hours(sb->owners[i].failed_s, gh, sizeof gh);
		money(sb, sb->owners[i].failed_micros, co, sizeof co);
		t_row(p, &t, gl_report_owner_label(sb->owners[i].name), gh, co);
	}
	t_draw(p, &t);
}

static void waits_table(struct pdf *p)
{
	const struct gl_sbmodel *sb = p->sb;
	static const char *const h[] = {"By", "Name", "Jobs", "Wait p50", "p90", "p99"};
	static const double w[] = {60, 160, 60, 70, 70, 70};
	static const int a[] = {0, 0, 1, 1, 1, 1};
	struct table t;
	heading(p, "Queue waits");
	t_init(p, &t, h, w, a, 6, 2u);
	for (size_t i = 0; i < sb->n_waits; i++) {
		const struct gl_sbmodel_wait *wt = &sb->waits[i];
		char n1[24], n2[32], n3[32], n4[32];
		snprintf(n1, sizeof n1, "%lld", (long long)wt->jobs);
		gl_report_fmt_wait(wt->p50_s, n2, sizeof n2);
		gl_report_fmt_wait(wt->p90_s, n3, sizeof n3);
		gl_report_fmt_wait(wt->p99_s, n4, sizeof n4);
		t_row(p, &t, wt->kind, gl_report_owner_label(wt->name), n1, n2, n3, n4);
	}
	t_draw(p, &t);
}

/* The capacity page: its own page, the cells the HTML shows. */
static void capacity_page(struct pdf *p)
{
	const struct gl_sbmodel *sb = p->sb;
	static const double w[] = {56, 60, 40, 44, 56, 56, 44, 70, 50};
	static const int a[] = {0, 0, 1, 1, 0, 0, 1, 0, 0}; /* as the HTML: numbers right */
	char cells[GL_REPORT_CAPACITY_COLS][64], note[400];
	struct table t;
	new_page(p);
	heading(p, "Capacity outlook");
	t_init(p, &t, gl_report_capacity_head, w, a, GL_REPORT_CAPACITY_COLS, 0u);
	t.empty = "No GPU demand or inventory in the 91 days before.";
	for (size_t i = 0; i < sb->n_capacity; i++) {
		gl_report_capacity_cells(&sb->capacity[i], cells);
		t_row(p, &t, cells[0], cells[1], cells[2], cells[3], cells[4], cells[5], cells[6], cells[7], cells[8]);
	}
	t_draw(p, &t);
	gl_report_capacity_note(sb, note, sizeof note);
	need(p, 40);
	p->y += text(p, MARGIN, p->y + 4, 0, note, p->L->text_size - 1, F_REGULAR, 0) + 8;
}

static void rates_table(struct pdf *p)
{
	const struct gl_sbmodel *sb = p->sb;
	static const char *const h[] = {"GPU model", "MIG profile", "Currency", "Per GPU-hour", "From", "To"};
	static const double w[] = {90, 70, 50, 70, 110, 110};
	static const int a[] = {0, 0, 0, 1, 0, 0};
	struct table t;
	heading(p, "Rates in force");
	t_init(p, &t, h, w, a, 6, 1u);
	for (size_t i = 0; i < sb->n_rates; i++) {
		const struct gl_sbmodel_rate *r = &sb->rates[i];
		char c[64];
		gl_cost_format(r->micros_per_gpu_hour, 6, c, sizeof c);
		t_row(p, &t, r->model, r->mig_profile, r->currency, c, r->valid_from[0] ? r->valid_from : "always",
		      r->valid_to[0] ? r->valid_to : "open");
	}
	t_draw(p, &t);
}

static void rules_table(struct pdf *p)
{
	const struct gl_sbmodel *sb = p->sb;
	static const char *const h[] = {"Prio", "Cluster", "Match", "Value", "Team", "Project", "Cost center",
					"From", "To"};
	static const double w[] = {28, 50, 50, 60, 60, 55, 55, 76, 76};
	static const int a[] = {1, 0, 0, 0, 0, 0, 0, 0, 0};
	struct table t;
	heading(p, "Owner rules in force");
	t_init(p, &t, h, w, a, 9, 0u);
	for (size_t i = 0; i < sb->n_rules; i++) {
		const struct gl_sbmodel_rule *r = &sb->rules[i];
		char d[32];
		snprintf(d, sizeof d, "%lld", (long long)r->priority);
		t_row(p, &t, d, r->cluster, r->match_field, r->match_value, r->team, r->project, r->cost_center,
		      r->valid_from[0] ? r->valid_from : "always", r->valid_to[0] ? r->valid_to : "open");
	}
	t_draw(p, &t);
}

static void body(struct pdf *p)
{
	const struct gl_sbmodel *sb = p->sb;
	struct gl_report_shown shn;

	gl_report_shown_compute(sb, &shn);
	cover(p, &shn);
	new_page(p);
	owners_table(p, &shn);
	reconciliation_table(p, &shn);
	fleet_table(p);
	new_page(p);
	chart_daily(p);
	chart_pairs(p, 0);
	chart_pairs(p, 1);
	models_table(p);
	waste_table(p);
	waits_table(p);
	capacity_page(p);
	jobs_table(p, "Top 20 jobs by cost", "No GPU job this month.", sb->top_cost, sb->n_top_cost);
	jobs_table(p, "Top 20 jobs by idle cost",
		   sb->fleet.usage_known ? "No job was idle in its allocation this month."
					 : "Unknown: no exporter data (dcgm-exporter) for this month's jobs.",
		   sb->top_idle, sb->n_top_idle);
	rates_table(p);
	rules_table(p);
	footer(p);
	cairo_show_page(p->cr);
	gl_report_shown_fini(&shn);
}

int gl_report_pdf(const struct gl_sbmodel *sb, const struct gl_report_style *style, int64_t generated_at_s,
		  struct gl_strbuf *out, struct gl_err *err)
{
	struct pdf p;
	cairo_status_t st;
	int rc = 0;

	memset(&p, 0, sizeof p);
	p.sb = sb;
	p.st = style;
	p.L = &style->pdf;
	gl_timeutil_format(generated_at_s, p.gen, sizeof p.gen);
	p.surf = cairo_pdf_surface_create_for_stream(write_cb, out, p.L->page_width, p.L->page_height);
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
