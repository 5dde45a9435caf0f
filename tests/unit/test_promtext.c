/* Unit tests for src/sources/promtext.c: table-driven {input, want} over
 * hand-written edge cases and the real scrapes in tests/fixtures/dcgm/. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/promtext.h"
#include "gl/strbuf.h"
#include "lib/testlib.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void put_double(struct gl_strbuf *b, double v)
{
	if (isnan(v))
		gl_strbuf_puts(b, "NaN");
	else if (isinf(v))
		gl_strbuf_puts(b, v > 0 ? "+Inf" : "-Inf");
	else
		gl_strbuf_printf(b, "%.17g", v);
}

/* One line per sample: name{k="v",...} value [ts=N] @line; a non-number is
 * "!<raw>". Label values are shown raw except newlines, shown as <NL>, so
 * decoded escapes are visible. */
static int dump_sample(void *ctx, const struct gl_promtext_sample *s)
{
	struct gl_strbuf *b = ctx;
	size_t i, j;

	gl_strbuf_append(b, s->name.p, s->name.len);
	if (s->nlabels) {
		gl_strbuf_putc(b, '{');
		for (i = 0; i < s->nlabels; i++) {
			if (i)
				gl_strbuf_putc(b, ',');
			gl_strbuf_append(b, s->labels[i].name.p, s->labels[i].name.len);
			gl_strbuf_puts(b, "=\"");
			for (j = 0; j < s->labels[i].value.len; j++) {
				if (s->labels[i].value.p[j] == '\n')
					gl_strbuf_puts(b, "<NL>");
				else
					gl_strbuf_putc(b, s->labels[i].value.p[j]);
			}
			gl_strbuf_putc(b, '"');
		}
		gl_strbuf_putc(b, '}');
	}
	gl_strbuf_putc(b, ' ');
	if (s->has_value) {
		put_double(b, s->value);
	} else {
		assert_true(isnan(s->value));
		gl_strbuf_putc(b, '!');
		gl_strbuf_append(b, s->value_raw.p, s->value_raw.len);
	}
	if (s->has_ts)
		gl_strbuf_printf(b, " ts=%" PRId64, s->ts_ms);
	gl_strbuf_printf(b, " @%zu\n", s->line);
	return 0;
}

static int dump_meta(void *ctx, const struct gl_promtext_meta *m)
{
	struct gl_strbuf *b = ctx;
	static const char *const kind[] = {"HELP", "TYPE", "UNIT"};
	size_t j;

	gl_strbuf_printf(b, "#%s ", kind[m->kind]);
	gl_strbuf_append(b, m->metric.p, m->metric.len);
	gl_strbuf_puts(b, " [");
	for (j = 0; j < m->text.len; j++) {
		if (m->text.p[j] == '\n')
			gl_strbuf_puts(b, "<NL>");
		else
			gl_strbuf_putc(b, m->text.p[j]);
	}
	gl_strbuf_printf(b, "] @%zu\n", m->line);
	return 0;
}

/* ---- table: whole inputs ------------------------------------------------- */

struct parse_case {
	const char *name;
	const char *input; /* all hand-written */
	enum gl_promtext_format format;
	size_t max_line;
	int want_rc;
	const char *want; /* dump of samples and meta, in order */
	size_t want_bad;
	size_t want_no_value;
	size_t want_comments;
	int want_eof;
	const char *want_reason; /* reason of the first bad line, NULL: don't check */
	size_t want_bad_line;
};

static const struct parse_case parse_cases[] = {
	{"plain", "a 1\n", 0, 0, 0, "a 1 @1\n", 0, 0, 0, 0, NULL, 0},
	/* the store could not take these strings: the line goes, not the scrape */
	{"Latin-1 label value", "a{x=\"caf\xe9\"} 1\nb 2\n", 0, 0, 0, "b 2 @2\n", 1, 0, 0, 0, "not valid UTF-8", 1},
	{"surrogate in HELP", "b 2\n# HELP a \xed\xa0\x80\n", 0, 0, 0, "b 2 @1\n", 1, 0, 0, 0, "not valid UTF-8", 2},
	{"valid UTF-8 label value", "a{x=\"caf\xc3\xa9\"} 1\n", 0, 0, 0, "a{x=\"caf\xc3\xa9\"} 1 @1\n", 0, 0, 0, 0, NULL, 0},
	/* one bad line among good ones, before and after it */
	{"bad lines among good ones", "a{x=\"\xc3\xa9\"} 1\nb{x=\"\xe9\"} 2\nc{x=\"\xe2\x82\xac\"} 3\nd{x=\"\xe2\x82\"} 4\ne 5\n",
	 0, 0, 0, "a{x=\"\xc3\xa9\"} 1 @1\nc{x=\"\xe2\x82\xac\"} 3 @3\ne 5 @5\n", 2, 0, 0, 0, "not valid UTF-8", 2},
	{"a cut sequence at the very end", "a 1\n# HELP b x\xc3", 0, 0, 0, "a 1 @1\n", 1, 0, 0, 0, "not valid UTF-8", 2},
	{"a sequence at the very end", "a 1\n# HELP b x\xc3\xa9", 0, 0, 0, "a 1 @1\n#HELP b [x\xc3\xa9] @2\n", 0, 0, 0, 0, NULL, 0},
	{"no final newline", "a 1", 0, 0, 0, "a 1 @1\n", 0, 0, 0, 0, NULL, 0},
	{"empty", "", 0, 0, 0, "", 0, 0, 0, 0, NULL, 0},
	{"blank lines only", "\n \n\t\n", 0, 0, 0, "", 0, 0, 0, 0, NULL, 0},
	{"colon in name, empty braces", "a:b_c{} 2\n", 0, 0, 0, "a:b_c 2 @1\n", 0, 0, 0, 0, NULL, 0},
	{"trailing comma", "a{x=\"1\",y=\"2\",} 3\n", 0, 0, 0, "a{x=\"1\",y=\"2\"} 3 @1\n", 0, 0, 0, 0, NULL, 0},
	{"tabs and spaces everywhere", "  a\t{ x = \"1\" ,\ty=\"2\" ,\t}\t 3 \t 123 \t\n", 0, 0, 0,
	 "a{x=\"1\",y=\"2\"} 3 ts=123 @1\n", 0, 0, 0, 0, NULL, 0},
	{"no blank after brace", "a{x=\"y\"}1\n", 0, 0, 0, "a{x=\"y\"} 1 @1\n", 0, 0, 0, 0, NULL, 0},
	{"escapes decoded, unknown kept",
	 "a{p=\"C:\\\\dir\",q=\"say \\\"hi\\\"\",n=\"l1\\nl2\",u=\"\\t\",e=\"\"} 1\n", 0, 0, 0,
	 "a{p=\"C:\\dir\",q=\"say \"hi\"\",n=\"l1<NL>l2\",u=\"\\t\",e=\"\"} 1 @1\n", 0, 0, 0, 0, NULL, 0},
	{"escape then plain label", "a{x=\"\\\\\",y=\"plain\"} 1\n", 0, 0, 0,
	 "a{x=\"\\\",y=\"plain\"} 1 @1\n", 0, 0, 0, 0, NULL, 0},
	{"Go ParseFloat specials",
	 "a NaN\nb +Inf\nc -Inf\nd inf\ne nan\nf Infinity\ng 1.5e3\nh -2E-2\ni .5\nj 5.\nk 0x1p-2\n", 0, 0, 0,
	 "a NaN @1\nb +Inf @2\nc -Inf @3\nd +Inf @4\ne NaN @5\nf +Inf @6\ng 1500 @7\nh -0.02 @8\n"
	 "i 0.5 @9\nj 5 @10\nk 0.25 @11\n",
	 0, 0, 0, 0, NULL, 0},
	{"Go rejects +nan, overflow, underscores, bare hex",
	 "k +nan\nl 1e400\nm 1_000\nn 0x18\no infin\n", 0, 0, 0,
	 "k !+nan @1\nl !1e400 @2\nm !1_000 @3\nn !0x18 @4\no !infin @5\n", 0, 5, 0, 0,
	 "value is not a number", 1},
	{"0.0.4 timestamps are ms", "a 1 1700000000000\nb 2 -5\nc 3 +7\n", 0, 0, 0,
	 "a 1 ts=1700000000000 @1\nb 2 ts=-5 @2\nc 3 ts=7 @3\n", 0, 0, 0, 0, NULL, 0},
	{"bad 0.0.4 timestamps", "a 1 1.5\nb 2 99999999999999999999\nc 3\n", 0, 0, 0, "c 3 @3\n", 2, 0, 0, 0,
	 "bad timestamp", 1},
	{"trailing characters", "a 1 2 3\nb 4\n", 0, 0, 0, "b 4 @2\n", 1, 0, 0, 0,
	 "trailing characters after timestamp", 1},
	{"OpenMetrics auto-detected",
	 "# TYPE a gauge\n# UNIT a seconds\na 1 1700000000.123\na 2 1700000000.1239\n"
	 "b_total 2 1700000000 # {trace_id=\"x\"} 1 1\nc 3 # {t=\"y\"} 1\n# EOF\n",
	 0, 0, 0,
	 "#TYPE a [gauge] @1\n#UNIT a [seconds] @2\na 1 ts=1700000000123 @3\na 2 ts=1700000000123 @4\n"
	 "b_total 2 ts=1700000000000 @5\nc 3 @6\n",
	 0, 0, 0, 1, NULL, 0},
	{"OpenMetrics negative and exponent seconds", "a 1 -1.5\nb 2 1.7e9\n# EOF", 0, 0, 0,
	 "a 1 ts=-1500 @1\nb 2 ts=1700000000000 @2\n", 0, 0, 0, 1, NULL, 0},
	{"OpenMetrics forced: stops at # EOF", "a 1\n# EOF\nb 2\n", GL_PROMTEXT_OPENMETRICS, 0, 0, "a 1 @1\n", 0,
	 0, 0, 1, NULL, 0},
	{"0.0.4: # EOF not last is a comment", "a 1\n# EOF\nb 2\n", GL_PROMTEXT_AUTO, 0, 0,
	 "a 1 @1\nb 2 @3\n", 0, 0, 1, 0, NULL, 0},
	{"0.0.4 forced: exemplar is trailing garbage", "a 1 # {x=\"y\"} 1\nb 2\n# EOF\n", GL_PROMTEXT_0_0_4, 0, 0,
	 "b 2 @2\n", 1, 0, 1, 0, "bad timestamp", 1},
	{"garbage lines between good ones",
	 "a 1\n<html>garbage\nb{x=\"1\" 2\nc{x=\"1} 2\nd{1x=\"y\"} 1\ne{x=\"y\"}\nf\n1g 1\nz 3\n", 0, 0, 0,
	 "a 1 @1\nz 3 @9\n", 7, 0, 0, 0, "bad metric name", 2},
	{"dcgm-exporter error value",
	 "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\"} ERROR - FAILED TO CONVERT TO STRING  \nDCGM_FI_DEV_FB_USED{gpu=\"0\"} <<<NULL>>>\n",
	 0, 0, 0,
	 "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\"} !ERROR - FAILED TO CONVERT TO STRING @1\n"
	 "DCGM_FI_DEV_FB_USED{gpu=\"0\"} !<<<NULL>>> @2\n",
	 0, 2, 0, 0, "value is not a number", 1},
	{"HELP/TYPE/comments",
	 "# HELP a some \\\\ help\\nmore \\\"q\\\"\n# TYPE a counter\n# just a comment\n#\n#HELP b tight\n"
	 "a 1\n# TYPE b bogus\n# HELP\n# TYPE 9x gauge\n",
	 0, 0, 0,
	 "#HELP a [some \\ help<NL>more \\\"q\\\"] @1\n#TYPE a [counter] @2\n#HELP b [tight] @5\na 1 @6\n", 3, 0, 2,
	 0, "TYPE: unknown metric type", 7},
	{"CRLF line ends", "a 1\r\nb{x=\"y\"} 2\r\n", 0, 0, 0, "a 1 @1\nb{x=\"y\"} 2 @2\n", 0, 0, 0, 0, NULL, 0},
	{"line too long", "a{x=\"0123456789\"} 1\nb 1\n", 0, 16, 0, "b 1 @2\n", 1, 0, 0, 0, "line too long", 1},
	{"not Prometheus at all", "<html>\n<body>oops</body>\n", 0, 0, -GL_EFORMAT, "", 2, 0, 0, 0,
	 "bad metric name", 1},
};

static void test_parse_table(void **state)
{
	size_t i;
	(void)state;
	for (i = 0; i < GL_ARRAY_LEN(parse_cases); i++) {
		const struct parse_case *c = &parse_cases[i];
		struct gl_strbuf b = GL_STRBUF_INIT;
		struct gl_promtext_handler h = {dump_sample, dump_meta, &b};
		struct gl_promtext_opts o = {c->format, c->max_line};
		struct gl_promtext_stats st;
		struct gl_err err = {0, ""};
		size_t len = strlen(c->input);
		int rc;

		rc = gl_promtext_parse(c->input, len, &o, &h, &st, &err);
		if (rc != c->want_rc || strcmp(gl_strbuf_cstr(&b), c->want) != 0 || st.bad_lines != c->want_bad ||
		    st.no_value != c->want_no_value || st.comments != c->want_comments || st.saw_eof != c->want_eof)
			fail_msg("case '%s': rc %d (want %d)\n got:\n%s want:\n%s bad %zu/%zu no_value %zu/%zu "
				 "comments %zu/%zu eof %d/%d",
				 c->name, rc, c->want_rc, gl_strbuf_cstr(&b), c->want, st.bad_lines, c->want_bad,
				 st.no_value, c->want_no_value, st.comments, c->want_comments, st.saw_eof,
				 c->want_eof);
		if (c->want_reason) {
			assert_true(st.nbad > 0);
			if (strcmp(st.bad[0].reason, c->want_reason) != 0 || st.bad[0].line != c->want_bad_line)
				fail_msg("case '%s': first bad line %zu '%s', want %zu '%s'", c->name, st.bad[0].line,
					 st.bad[0].reason, c->want_bad_line, c->want_reason);
		}
		if (c->want_rc)
			assert_int_equal(err.code, -c->want_rc);
		gl_strbuf_fini(&b);
	}
}

/* A NUL byte inside a label value is data, not an end of string (hand-written). */
static int check_nul(void *ctx, const struct gl_promtext_sample *s)
{
	assert_int_equal(s->nlabels, 1);
	assert_int_equal(s->labels[0].value.len, 3);
	assert_memory_equal(s->labels[0].value.p, "p\0q", 3);
	*(int *)ctx = 1;
	return 0;
}

struct name_seen {
	char name[32], label[32];
	size_t n;
};

static int note_names(void *ctx, const struct gl_promtext_sample *s)
{
	struct name_seen *ns = ctx;
	if (!ns->n) /* the first line's */
		snprintf(ns->name, sizeof ns->name, "%.*s", (int)s->name.len, s->name.p);
	snprintf(ns->label, sizeof ns->label, "%.*s", s->nlabels ? (int)s->labels[0].name.len : 0,
		 s->nlabels ? s->labels[0].name.p : "");
	ns->n++;
	return 0;
}

/* Names are read four bytes a step: a metric or label name of every
 * length to 13 ends exactly where it ends (at '{', '=', a blank or the end
 * of the line), and a byte no name may hold at any offset of it costs the
 * line. */
static void test_name_lengths(void **state)
{
	static const char alpha[] = "abcdefghijklm";
	static const char *const ends[] = {"{l=\"v\"} 1", " 1", "\t{l=\"v\"} 1"};
	char in[128], want[32];
	(void)state;
	for (size_t n = 1; n < sizeof alpha; n++) {
		for (size_t k = 0; k < sizeof ends / sizeof ends[0]; k++) {
			struct name_seen ns = {{0}, {0}, 0};
			struct gl_promtext_handler h = {note_names, NULL, &ns};
			struct gl_promtext_stats st;
			int len = snprintf(in, sizeof in, "%.*s%s\nm{%.*s=\"v\"} 2\n", (int)n, alpha, ends[k], (int)n, alpha);
			assert_int_equal(gl_promtext_parse(in, (size_t)len, NULL, &h, &st, NULL), 0);
			assert_int_equal(st.bad_lines, 0);
			assert_int_equal(ns.n, 2);
			snprintf(want, sizeof want, "%.*s", (int)n, alpha);
			assert_string_equal(ns.name, want);
			assert_string_equal(ns.label, want); /* the second line's label */
		}
		for (size_t k = 0; k < n; k++) {
			struct gl_promtext_stats st;
			int len;
			snprintf(want, sizeof want, "%.*s", (int)n, alpha);
			want[k] = '-';
			len = snprintf(in, sizeof in, "%s 1\nm{%s=\"v\"} 2\nok 3\n", want, want);
			assert_int_equal(gl_promtext_parse(in, (size_t)len, NULL, NULL, &st, NULL), 0);
			assert_int_equal(st.bad_lines, 2);
			assert_int_equal(st.samples, 1);
		}
	}
}

/* A long scrape (640 kB) of lines full of two-, three- and four-byte
 * sequences: no line is refused, and a bad byte in one line refuses that
 * line alone, the lines before and after it kept. */
static void test_utf8_long_scrape(void **state)
{
	struct gl_strbuf in = GL_STRBUF_INIT;
	struct gl_promtext_stats st;
	size_t lines = 0, bad_line = 0, bad_off = 0;
	(void)state;
	for (size_t i = 0; in.len < 40 * 16384; i++) {
		gl_strbuf_printf(&in, "m{x=\"");
		for (size_t k = 0; k < i % 37; k++)
			gl_strbuf_puts(&in, k % 3 == 0 ? "\xc3\xa9" : k % 3 == 1 ? "\xe2\x82\xac" : "\xf0\x9f\x98\x80");
		if (i == 3001) { /* a Latin-1 byte at the end of this line's value */
			bad_line = i + 1;
			bad_off = in.len;
			gl_strbuf_putc(&in, 'x');
		}
		gl_strbuf_printf(&in, "\"} %zu\n", i);
		lines++;
	}
	assert_int_equal(gl_promtext_parse(in.p, in.len, NULL, NULL, &st, NULL), 0);
	assert_int_equal(st.bad_lines, 0);
	assert_int_equal(st.samples, lines);
	in.p[bad_off] = (char)0xe9;
	assert_int_equal(gl_promtext_parse(in.p, in.len, NULL, NULL, &st, NULL), 0);
	assert_int_equal(st.bad_lines, 1);
	assert_int_equal(st.bad[0].line, bad_line);
	assert_string_equal(st.bad[0].reason, "not valid UTF-8");
	assert_int_equal(st.samples, lines - 1);
	gl_strbuf_fini(&in);
}

/* A line's end and whether it is all ASCII are found in one pass, 16
 * bytes a step: a bad byte at every offset of lines of every length to 48
 * refuses that line only, a valid sequence there refuses nothing, and the
 * next line's bytes read in the same step are not taken for this line's. */
static void test_line_ascii_steps(void **state)
{
	char text[64], in[160];
	(void)state;
	for (size_t n = 1; n <= 48; n++) {
		for (size_t k = 0; k <= n; k++) {
			for (int bad = 0; bad <= 1; bad++) {
				struct gl_promtext_stats st;
				int len;
				memset(text, 'x', n);
				text[n] = '\0';
				if (k < n && bad)
					text[k] = (char)0xff;
				else if (k + 1 < n)
					memcpy(text + k, "\xc3\xa9", 2);
				len = snprintf(in, sizeof in, "# HELP m %s\n# HELP z \xc3\xa9\xe2\x82\xac\nok 1\n# HELP y %s", text,
					       text);
				assert_int_equal(gl_promtext_parse(in, (size_t)len, NULL, NULL, &st, NULL), 0);
				if (k < n && bad) {
					assert_int_equal(st.bad_lines, 2); /* line 1 and the last, without a newline */
					assert_int_equal(st.bad[0].line, 1);
					assert_int_equal(st.bad[1].line, 4);
				} else {
					assert_int_equal(st.bad_lines, 0);
				}
				assert_int_equal(st.samples, 1);
			}
		}
	}
}

static void test_nul_byte(void **state)
{
	static const char in[] = "a{x=\"p\0q\"} 1\n";
	int seen = 0;
	struct gl_promtext_handler h = {check_nul, NULL, &seen};
	(void)state;
	assert_int_equal(gl_promtext_parse(in, sizeof in - 1, NULL, &h, NULL, NULL), 0);
	assert_true(seen);
}

/* ---- table: floats ------------------------------------------------------- */

struct float_case {
	const char *in;
	int ok;
	double want;
};

static const struct float_case float_cases[] = {
	{"0", 1, 0.0}, {"-0", 1, -0.0}, {"8.969000", 1, 8.969}, {"0.000008", 1, 8e-6},
	{"0.000003", 1, 3e-6}, {"128996013", 1, 128996013.0}, {"15109", 1, 15109.0},
	{"1.98e+09", 1, 1.98e9}, {"2.690646016e+09", 1, 2690646016.0},
	{"140737488355328.000000", 1, 140737488355328.0}, {"2147483632", 1, 2147483632.0},
	{"9223372036854775794", 1, 9223372036854775808.0}, {"0.1", 1, 0.1}, {"-273.15", 1, -273.15},
	{"123456789012345678901234", 1, 123456789012345678901234.0}, {"1e-400", 1, 0.0},
	{"4.9e-324", 1, 4.9e-324}, {"1.7976931348623157e308", 1, 1.7976931348623157e308},
	{"9007199254740993", 1, 9007199254740992.0}, /* 2^53+1 rounds to even */
	{"0x1p-2", 1, 0.25}, {"Infinity", 1, INFINITY}, {"-inf", 1, -INFINITY}, {"+Inf", 1, INFINITY},
	{"1.8e308", 0, 0}, {"", 0, 0}, {"+", 0, 0}, {".", 0, 0}, {"e5", 0, 0}, {"1e", 0, 0},
	{"1e+", 0, 0}, {"1.2.3", 0, 0}, {"0x1.8", 0, 0}, {"nan(123)", 0, 0}, {" 1", 0, 0}, {"1 ", 0, 0},
	{"infin", 0, 0}, {"+nan", 0, 0}, {"1,5", 0, 0}, {"--1", 0, 0}, {"1e5e5", 0, 0},
};

static void test_float_table(void **state)
{
	size_t i;
	(void)state;
	for (i = 0; i < GL_ARRAY_LEN(float_cases); i++) {
		const struct float_case *c = &float_cases[i];
		double v = 12345.0;
		int rc = gl_promtext_parse_float(c->in, strlen(c->in), &v);
		if (c->ok != (rc == 0))
			fail_msg("'%s': rc %d, want ok=%d", c->in, rc, c->ok);
		if (c->ok && memcmp(&v, &c->want, sizeof v) != 0)
			fail_msg("'%s': got %.17g want %.17g", c->in, v, c->want);
	}
	{
		double v;
		assert_int_equal(gl_promtext_parse_float("NaN", 3, &v), 0);
		assert_true(isnan(v));
	}
}

/* The fast path must agree bit for bit with a correctly rounding strtod. */
static void test_float_exact_vs_strtod(void **state)
{
	char s[64];
	unsigned x = 12345;
	int i;
	(void)state;
	for (i = 0; i < 200000; i++) {
		double a, b;
		int n;
		x = x * 1103515245u + 12345u;
		switch (i % 4) {
		case 0:
			n = snprintf(s, sizeof s, "%u", x);
			break;
		case 1:
			n = snprintf(s, sizeof s, "%u.%06u", x % 100000, (x >> 7) % 1000000);
			break;
		case 2:
			n = snprintf(s, sizeof s, "-%u.%u", x % 1000, x % 997);
			break;
		default:
			n = snprintf(s, sizeof s, "%u.%ue%d", x % 100, x % 9973, (int)(x % 45) - 22);
			break;
		}
		assert_int_equal(gl_promtext_parse_float(s, (size_t)n, &a), 0);
		b = strtod(s, NULL);
		if (memcmp(&a, &b, sizeof a) != 0)
			fail_msg("'%s': %.17g vs strtod %.17g", s, a, b);
	}
}

/* ---- bounds ------------------------------------------------------------- */

static void test_label_bound(void **state)
{
	struct gl_strbuf in = GL_STRBUF_INIT;
	struct gl_promtext_stats st;
	int i;
	(void)state;
	gl_strbuf_puts(&in, "ok{");
	for (i = 0; i < GL_PROMTEXT_MAX_LABELS; i++)
		gl_strbuf_printf(&in, "l%d=\"%d\",", i, i);
	gl_strbuf_puts(&in, "} 1\nbad{");
	for (i = 0; i < GL_PROMTEXT_MAX_LABELS + 1; i++)
		gl_strbuf_printf(&in, "l%d=\"%d\",", i, i);
	gl_strbuf_puts(&in, "} 1\n");
	assert_int_equal(gl_promtext_parse(in.p, in.len, NULL, NULL, &st, NULL), 0);
	assert_int_equal(st.samples, 1);
	assert_int_equal(st.bad_lines, 1);
	assert_string_equal(st.bad[0].reason, "too many labels");
	assert_int_equal(st.bad[0].line, 2);
	gl_strbuf_fini(&in);
}

static void test_bad_list_bounded(void **state)
{
	struct gl_strbuf in = GL_STRBUF_INIT;
	struct gl_promtext_stats st;
	int i;
	(void)state;
	for (i = 0; i < 20; i++)
		gl_strbuf_puts(&in, "{bad\ngood 1\n");
	assert_int_equal(gl_promtext_parse(in.p, in.len, NULL, NULL, &st, NULL), 0);
	assert_int_equal(st.lines, 40);
	assert_int_equal(st.samples, 20);
	assert_int_equal(st.bad_lines, 20);
	assert_int_equal(st.nbad, GL_PROMTEXT_MAX_BAD);
	assert_int_equal(st.bad[GL_PROMTEXT_MAX_BAD - 1].line, 2 * GL_PROMTEXT_MAX_BAD - 1);
	gl_strbuf_fini(&in);
}

static int stop_at_second(void *ctx, const struct gl_promtext_sample *s)
{
	int *n = ctx;
	return ++*n == 2 ? -GL_EIO : 0;
}

static void test_callback_stops(void **state)
{
	struct gl_promtext_handler h = {stop_at_second, NULL, NULL};
	struct gl_err err = {0, ""};
	int n = 0;
	(void)state;
	h.ctx = &n;
	assert_int_equal(gl_promtext_parse("a 1\nb 2\nc 3\n", 12, NULL, &h, NULL, &err), -GL_EIO);
	assert_int_equal(n, 2);
	assert_string_equal(err.msg, "line 2: stopped by callback");
}

/* ---- real fixtures ------------------------------------------------------ */

struct fixture_case {
	const char *path;
	size_t lines, samples, meta, comments;
	const char *want_line; /* one dumped sample that must appear */
};

static const struct fixture_case fixture_cases[] = {
	{"tests/fixtures/dcgm/datadog_dcgm_fixture_metrics.prom", 116, 38, 76, 2,
	 "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-20c56d28-0da5-6d26-a36a-e7af1ce2586e\",device=\"nvidia0\","
	 "modelName=\"Tesla T4\",Hostname=\"424773df46e0\",DCGM_FI_DRIVER_VERSION=\"460.106.00\","
	 "DCGM_FI_PROCESS_NAME=\"/usr/bin/dcgm-exporter\"} 8.9689999999999994 @12\n"},
	{"tests/fixtures/dcgm/nvidia_gpu_exporter_output__h100__idle.prom", 396, 132, 264, 0,
	 "nvidia_smi_clocks_current_graphics_clock_hz{uuid=\"00000000-0000-0000-0000-000000000000\"} 345000000 @12\n"},
	{"tests/fixtures/dcgm/nvidia_gpu_exporter_output__h100__load.prom", 406, 138, 268, 0,
	 "nvidia_smi_clocks_current_graphics_clock_hz{uuid=\"00000000-0000-0000-0000-000000000000\"} 1980000000 @12\n"},
	{"tests/fixtures/dcgm/handwritten_mig_h100.prom", 43, 23, 16, 4,
	 "DCGM_FI_DEV_FB_USED{gpu=\"0\",UUID=\"GPU-00000000-0000-0000-0000-000000000000\",pci_bus_id=\"00000000:00:09.0\","
	 "device=\"nvidia0\",modelName=\"NVIDIA H100 80GB HBM3\",hostname=\"h100-mig-node\",DCGM_FI_DRIVER_VERSION="
	 "\"590.48.01\",GPU_I_PROFILE=\"3g.40gb\",GPU_I_ID=\"2\"} 11091 @22\n"},
};

static void test_fixtures(void **state)
{
	size_t i;
	(void)state;
	for (i = 0; i < GL_ARRAY_LEN(fixture_cases); i++) {
		const struct fixture_case *c = &fixture_cases[i];
		struct gl_strbuf b = GL_STRBUF_INIT;
		struct gl_promtext_handler h = {dump_sample, NULL, &b};
		struct gl_promtext_stats st;
		size_t len;
		char *buf = gl_test_read_file(c->path, &len);

		assert_int_equal(gl_promtext_parse(buf, len, NULL, &h, &st, NULL), 0);
		if (st.lines != c->lines || st.samples != c->samples || st.meta != c->meta ||
		    st.comments != c->comments || st.bad_lines || st.no_value || st.openmetrics)
			fail_msg("%s: lines %zu samples %zu meta %zu comments %zu bad %zu no_value %zu", c->path,
				 st.lines, st.samples, st.meta, st.comments, st.bad_lines, st.no_value);
		if (!strstr(gl_strbuf_cstr(&b), c->want_line))
			fail_msg("%s: missing sample\n%s", c->path, c->want_line);
		gl_strbuf_fini(&b);
		free(buf);
	}
}

/* The real T4 scrape's last series: 17 labels including the k8s ones. */
static int check_last(void *ctx, const struct gl_promtext_sample *s)
{
	if (s->line == 116) {
		assert_int_equal(s->nlabels, 15);
		assert_true(gl_str_eq(s->labels[14].name, "pod"));
		assert_true(gl_str_eq(s->labels[14].value, "ray-1111111"));
		assert_true(s->value == 0.000003);
		*(int *)ctx = 1;
	}
	return 0;
}

static void test_fixture_last_line(void **state)
{
	size_t len;
	char *buf = gl_test_read_file("tests/fixtures/dcgm/datadog_dcgm_fixture_metrics.prom", &len);
	int seen = 0;
	struct gl_promtext_handler h = {check_last, NULL, &seen};
	(void)state;
	assert_int_equal(gl_promtext_parse(buf, len, NULL, &h, NULL, NULL), 0);
	assert_true(seen);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_table),
		cmocka_unit_test(test_nul_byte),
		cmocka_unit_test(test_name_lengths),
		cmocka_unit_test(test_utf8_long_scrape),
		cmocka_unit_test(test_line_ascii_steps),
		cmocka_unit_test(test_float_table),
		cmocka_unit_test(test_float_exact_vs_strtod),
		cmocka_unit_test(test_label_bound),
		cmocka_unit_test(test_bad_list_bounded),
		cmocka_unit_test(test_callback_stops),
		cmocka_unit_test(test_fixtures),
		cmocka_unit_test(test_fixture_last_line),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
