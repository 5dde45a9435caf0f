/* gpuledger — zero-copy parser for the Prometheus text exposition format
 * (0.0.4) and its OpenMetrics 1.0 variant.
 *
 * Pure: no I/O, no clock, no libpq. The caller hands over one whole scrape
 * buffer; the parser calls back once per sample, in input order.
 *
 * Ownership: nothing is retained after gl_promtext_parse() returns. Every
 * gl_str handed to a callback points either INTO THE CALLER'S BUFFER or into
 * a parser-owned scratch buffer (label values and HELP text with escapes), and
 * is valid ONLY DURING THAT CALLBACK: copy what you keep. The label array is
 * parser-owned, likewise valid only during the callback. struct
 * gl_promtext_stats is caller-owned; its reason strings are static.
 *
 * Robustness: a malformed line is skipped and counted, never fatal. Lines are
 * bounded (opts->max_line, default GL_PROMTEXT_MAX_LINE) and so are label sets
 * (GL_PROMTEXT_MAX_LABELS). A line that is not valid UTF-8 is a bad line
 * ("not valid UTF-8"): the store could not take its strings. Not checked, as
 * Prometheus checks them later in its scrape loop rather than in the parser:
 * duplicate label names within one sample, TYPE consistency across lines.
 */
#ifndef GL_PROMTEXT_H
#define GL_PROMTEXT_H

#include "gl/common.h"

#include <stddef.h>
#include <stdint.h>

#define GL_PROMTEXT_MAX_LABELS 64
#define GL_PROMTEXT_MAX_LINE (64 * 1024)
#define GL_PROMTEXT_MAX_BAD 8 /* bad lines remembered with their reason */

enum gl_promtext_format {
	/* OpenMetrics when the buffer's last non-blank line is "# EOF", else 0.0.4.
	 * The HTTP Content-Type is the authority when the caller has it. */
	GL_PROMTEXT_AUTO = 0,
	GL_PROMTEXT_0_0_4,     /* timestamps: int64 milliseconds */
	GL_PROMTEXT_OPENMETRICS, /* timestamps: (fractional) seconds; exemplars skipped */
};

struct gl_promtext_label {
	struct gl_str name;
	struct gl_str value; /* escapes decoded */
};

struct gl_promtext_sample {
	struct gl_str name;
	const struct gl_promtext_label *labels;
	size_t nlabels;
	/* has_value = 0: the value token is not a number per Go's ParseFloat
	 * (dcgm-exporter writes "ERROR - FAILED TO CONVERT TO STRING" or
	 * "<<<NULL>>>"); value is then NaN and value_raw holds the rest of the
	 * line. NaN written as "NaN" is a number: has_value = 1. */
	double value;
	int has_value;
	struct gl_str value_raw;
	int has_ts;
	int64_t ts_ms; /* milliseconds since the epoch, OpenMetrics seconds converted */
	size_t line;   /* 1-based */
};

enum gl_promtext_meta_kind { GL_PROMTEXT_HELP = 0, GL_PROMTEXT_TYPE, GL_PROMTEXT_UNIT };

struct gl_promtext_meta {
	enum gl_promtext_meta_kind kind;
	struct gl_str metric;
	struct gl_str text; /* HELP text (escapes decoded), TYPE name, or UNIT */
	size_t line;
};

/* Callbacks return 0 to go on; any other value stops the parse, and
 * gl_promtext_parse() returns it (a negative GL_E* code, by convention). */
struct gl_promtext_handler {
	int (*on_sample)(void *ctx, const struct gl_promtext_sample *s);
	int (*on_meta)(void *ctx, const struct gl_promtext_meta *m); /* NULL: HELP/TYPE ignored */
	void *ctx;
};

struct gl_promtext_opts {
	enum gl_promtext_format format;
	size_t max_line; /* 0: GL_PROMTEXT_MAX_LINE */
};

struct gl_promtext_bad {
	size_t line;
	const char *reason; /* static */
};

struct gl_promtext_stats {
	size_t lines;     /* lines read, blank and comment lines included */
	size_t samples;   /* sample lines delivered (has_value or not) */
	size_t no_value;  /* of which has_value = 0 */
	size_t meta;      /* HELP/TYPE/UNIT lines */
	size_t comments;  /* other # lines */
	size_t bad_lines; /* skipped */
	int saw_eof;      /* OpenMetrics "# EOF" seen: parsing stopped there */
	int openmetrics;  /* the format actually used */
	size_t nbad;      /* entries filled in bad[] (at most GL_PROMTEXT_MAX_BAD) */
	struct gl_promtext_bad bad[GL_PROMTEXT_MAX_BAD];
};

/* Parses buf[0..len). opts may be NULL (auto format, default bounds); stats
 * may be NULL. Returns 0, a callback's non-zero return (err names the line),
 * or -GL_EFORMAT when the buffer held non-blank lines but not one of them
 * parsed (an HTML error page, a wrong port): callbacks were still made for
 * any meta lines, and stats are filled either way. */
int gl_promtext_parse(const char *buf, size_t len, const struct gl_promtext_opts *opts,
		      const struct gl_promtext_handler *h, struct gl_promtext_stats *stats,
		      struct gl_err *err) GL_MUSTCHECK;

/* A value token per Go's strconv.ParseFloat (decimal, exponent, NaN, ±Inf,
 * hex floats; out-of-range is an error, as in Go). Exact: a fast path for
 * short decimals, strtod otherwise. Returns 0 or -GL_EINVAL. */
int gl_promtext_parse_float(const char *s, size_t n, double *out) GL_MUSTCHECK;

#endif
