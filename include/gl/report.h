/* gpuledger — showback report renderers: CSV tables and a self-contained
 * HTML page from a gathered struct gl_sbmodel. Pure: no I/O, no clock (the
 * generated-at time is a parameter, and it never goes into a CSV, so a
 * closed month renders byte-identical CSV every time).
 *
 * Ownership: the renderers append to the caller's strbuf; the model is
 * borrowed. gl_report_fmt_* write into the caller's buffer.
 */
#ifndef GL_REPORT_H
#define GL_REPORT_H

#include "gl/sbmodel.h"
#include "gl/strbuf.h"

/* CSV table names, NULL-terminated: owners, models, daily, fleet, waits,
 * top_cost, top_idle, reconciliation, rates, owner_rules, partial. */
extern const char *const gl_report_tables[];

/* Appends table `table` as RFC 4180 CSV (UTF-8, header row, CRLF, text
 * fields formula-safe, money with the currency's minor units and no
 * thousands separators). -GL_EINVAL for an unknown table. */
int gl_report_csv(const struct gl_sbmodel *sb, const char *table, struct gl_strbuf *out) GL_MUSTCHECK;

/* The PDF's page geometry and type, read at run time from the template
 * directory's pdf-layout.yaml (src/report/report_style.c), so a site
 * restyles its reports without recompiling. Lengths in points. */
struct gl_report_pdf_layout {
	char font[64];                        /* family, e.g. "DejaVu Sans" */
	double page_width, page_height;       /* A4: 595 x 842 */
	double margin, footer;                /* all four margins; the footer band above the bottom one */
	double title_size, heading_size, text_size, table_size, small_size;
	double row_padding;                   /* between a table row's text and the next row */
	double min_column_width;              /* a column is never narrower: the table splits instead */
	double name_column_width;             /* owner / name columns (their text wraps, never cut) */
	double chart_height;
};

/* How HTML and PDF show numbers and where their look comes from. The CSV
 * never uses it: it stays machine-readable (no separators, '.' decimals).
 *
 * Ownership: gl_report_style_fini() (report_style.h) frees html and css. */
struct gl_report_style {
	char thousands[8]; /* between groups of three digits; "" for none */
	char decimal[8];   /* before the fraction */
	char *html;        /* the page template: {{title}}, {{css}}, {{body}} */
	char *css;         /* inlined into {{css}} (the page stays self-contained) */
	struct gl_report_pdf_layout pdf;
};

/* Appends the HTML page (the style's template around the report's
 * content: inline CSS and SVG charts, everything escaped). */
void gl_report_html(const struct gl_sbmodel *sb, const struct gl_report_style *st, int64_t generated_at_s,
		    struct gl_strbuf *out);

/* The separators (config checks them when it loads): decimal one to seven
 * bytes, thousands zero to seven, neither with a digit, '-', '<', '>' or
 * '&', and not the same. 0 or -GL_EINVAL with the reason. */
int gl_report_seps_check(const char *thousands, const char *decimal, struct gl_err *err) GL_MUSTCHECK;

/* Said where the busy/idle chart would be when no exporter data exists. */
extern const char gl_report_no_usage_note[];

/* Copies in to buf with the style's separators in its leading number
 * ("-1234567.89 + unpriced" -> "-1,234,567.89 + unpriced"); text that does
 * not start with a plain number ("no data", a date) is copied unchanged. */
void gl_report_fmt_local(const struct gl_report_style *st, const char *in, char *buf, size_t n);
/* A queue wait for people: "45 s", "12 min", "327 h 08 min" (to the
 * nearest minute from a minute on). The CSV keeps the seconds. */
void gl_report_fmt_wait(int64_t seconds, char *buf, size_t n);
/* GPUs for people: "16" when a whole number, else as gl_report_fmt_gpus. */
void gl_report_fmt_gpus_shown(int64_t micro, char *buf, size_t n);

/* A chart's value axis: ticks at multiples of a round step (1, 2 or 5 x a
 * power of ten, in thousandths of the unit) from 0 to top >= the largest
 * value, at most max_ticks + 1 labels. */
struct gl_report_axis {
	int64_t step_milli, top_milli;
	int ticks; /* intervals: labels at 0, step, ..., top */
};
void gl_report_axis_ticks(int64_t max_milli, int max_ticks, struct gl_report_axis *ax);
/* A tick label in the unit, with as few decimals as the step needs. */
void gl_report_fmt_tick(const struct gl_report_axis *ax, int64_t milli, char *buf, size_t n);

/* Shared number formats (also used by the PDF renderer). */
void gl_report_fmt_hours(int64_t gpu_seconds, char *buf, size_t n);    /* "12.345" (3 decimals, half up) */
void gl_report_fmt_pct(int64_t num, int64_t den, char *buf, size_t n); /* "12.34", "" when den == 0 */
void gl_report_fmt_kwh(int64_t mj, char *buf, size_t n);               /* "1.234" */
/* GPUs from micro-GPUs: "2.000", "0.500", or six decimals for a share
 * milli-GPUs cannot hold ("0.142857"). */
void gl_report_fmt_gpus(int64_t micro, char *buf, size_t n);
/* A top job's cost (or idle cost) for HTML and PDF: "unpriced" when no rate
 * covers any of its GPU-time (a 0.00 would read as free), "12.34 +
 * unpriced" when one covers only part, else the amount. */
void gl_report_fmt_job_money(const struct gl_sbmodel *sb, const struct gl_sbmodel_job *j, int64_t micros, char *buf,
			     size_t n);
/* Display name of an owner key: "(none)" for the empty key. */
const char *gl_report_owner_label(const char *key);
/* The reconciliation of the model: 0 when Σ owners + __idle__ = fleet total
 * to the micro-unit, else the difference. */
int64_t gl_report_reconcile_diff(const struct gl_sbmodel *sb);

/* The money amounts as every format shows them (micro-units, multiples of
 * the minor unit), so that the shown figures add up (docs/reports.md):
 * the fleet total is rounded once; the owner totals and the __idle__ line
 * share it by largest remainder (ties by owner name); each owner's shown
 * total is shared the same way between its cost and idle share. The fleet
 * table's allocation cost and idle cost shared to owners are the sums of
 * the shown owner columns, and its unallocated idle cost is shared + left,
 * while those identities hold to the micro-unit in the model (else each
 * amount is rounded on its own). The *_micros columns stay exact.
 *
 * Ownership: gl_report_shown_fini() frees the arrays. */
struct gl_report_shown {
	int64_t *cost, *idle_share, *total; /* parallel to sb->owners */
	int64_t owners, unallocated, idle_left, fleet_total; /* the reconciliation's lines */
	int64_t alloc_cost, idle_total, idle_shared;         /* the fleet table's */
};
void gl_report_shown_compute(const struct gl_sbmodel *sb, struct gl_report_shown *out);
void gl_report_shown_fini(struct gl_report_shown *s);

/* One row of the fleet table. CSV, HTML and PDF all render this one list,
 * so the fleet's numbers cannot differ between formats. */
struct gl_report_fleet_row {
	const char *key;   /* the CSV metric */
	const char *label; /* HTML and PDF label; NULL: the month's identity, which those show elsewhere */
	char value[64];    /* formatted (hours, money, %, kWh, text) or "no data" */
};
#define GL_REPORT_FLEET_ROWS 24
/* Fills rows (GL_REPORT_FLEET_ROWS at most), money as gl_report_shown
 * shows it; returns how many. */
size_t gl_report_fleet_rows(const struct gl_sbmodel *sb, struct gl_report_fleet_row *rows);

/* The capacity page's cells, one row per struct gl_sbmodel_capacity, the same in
 * HTML and PDF: cluster, model, GPUs, the month's peak demand, the first
 * days P(saturation) reaches 50 % and 80 %, GPUs to add, the first need-by
 * and order-by dates (with "late"), the method. */
#define GL_REPORT_CAPACITY_COLS 9
extern const char *const gl_report_capacity_head[GL_REPORT_CAPACITY_COLS + 1]; /* NULL-terminated */
void gl_report_capacity_cells(const struct gl_sbmodel_capacity *r, char cells[GL_REPORT_CAPACITY_COLS][64]);
/* The sentence under the capacity table: from when, how far, at what risk. */
void gl_report_capacity_note(const struct gl_sbmodel *sb, char *buf, size_t n);

/* Stable file name of a table or format: "showback-2026-10-team-owners.csv",
 * "showback-2026-10-team.html"; a report whose idle is shared says how after
 * the aggregate ("showback-2026-10-team-idle_proportional.pdf"), so it never
 * takes the name of the unshared one, whose figures differ. */
void gl_report_file_name(const struct gl_sbmodel *sb, const char *table, const char *ext, char *buf, size_t n);
/* "" for shareIdle none, "-idle_proportional", "-idle_owner": the part of
 * the file names above that tells the sharing apart. */
const char *gl_report_share_tag(enum gl_chargeback_share_idle share);

#endif
