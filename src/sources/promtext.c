/* Prometheus text format parser (see include/gl/promtext.h).
 *
 * One pass, line by line. Lines are found with memchr (vectorised in libc);
 * within a line the hot spot is label values, scanned eight bytes at a time.
 * Nothing is allocated per sample: the label array lives on the stack and the
 * scratch buffer for decoded escapes is allocated once per parse, and only if
 * some line has an escape.
 */
#include "gl/promtext.h"
#include "gl/utf8.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Character classes: 1 label-name char, 2 metric-name char, 4 digit, 8 blank. */
enum { C_LNAME = 1, C_MNAME = 2, C_DIGIT = 4, C_BLANK = 8 };
static const unsigned char k_class[256] = {
	0, 0, 0, 0, 0, 0, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 2, 0, 0, 0, 0, 0,
	0, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
	3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 0, 0, 0, 0, 3,
	0, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
	3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 0, 0, 0, 0, 0,
};
#define CLS(c) (k_class[(unsigned char)(c)])

struct parser {
	const struct gl_promtext_handler *h;
	struct gl_promtext_stats *st;
	int om;
	size_t max_line;
	char *scratch; /* max_line bytes, allocated on the first escape */
	size_t scratch_len;
};

static void note_bad(struct gl_promtext_stats *st, size_t line, const char *reason)
{
	if (st->nbad < GL_PROMTEXT_MAX_BAD) {
		st->bad[st->nbad].line = line;
		st->bad[st->nbad].reason = reason;
		st->nbad++;
	}
}

static inline const char *skip_blank(const char *p, const char *e)
{
	while (p < e && (CLS(*p) & C_BLANK))
		p++;
	return p;
}

/* p past its run of bytes of class c (one bit): four bytes a step while
 * four remain. Names are most of a dcgm-exporter line's bytes. */
static inline const char *skip_class(const char *p, const char *e, unsigned char c)
{
	while (e - p >= 4 && (CLS(p[0]) & CLS(p[1]) & CLS(p[2]) & CLS(p[3]) & c))
		p += 4;
	while (p < e && (CLS(*p) & c))
		p++;
	return p;
}

/* The end of the line at p (its '\n', or NULL when it runs to e) and, in
 * *ascii, whether every byte before it is ASCII: one pass finds both, and
 * only a line with other bytes is checked for UTF-8 (a scrape's lines are
 * nearly always all ASCII). */
static const char *line_end(const char *p, const char *e, int *ascii)
{
	unsigned hi = 0;
#if defined(__SSE2__)
	const __m128i vnl = _mm_set1_epi8('\n');
	__m128i seen = _mm_setzero_si128();
	for (; e - p >= 16; p += 16) {
		const __m128i b = _mm_loadu_si128((const __m128i *)(const void *)p);
		unsigned m = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(b, vnl));
		if (m) {
			/* the bytes of the next line in this block are not this line's */
			unsigned before = (1u << __builtin_ctz(m)) - 1;
			*ascii = !(_mm_movemask_epi8(seen) | ((unsigned)_mm_movemask_epi8(b) & before));
			return p + __builtin_ctz(m);
		}
		seen = _mm_or_si128(seen, b);
	}
	hi = (unsigned)_mm_movemask_epi8(seen);
#endif
	for (; p < e; p++) {
		if (*p == '\n') {
			*ascii = !hi;
			return p;
		}
		hi |= (unsigned char)*p & 0x80u;
	}
	*ascii = !hi;
	return NULL;
}

/* ---- numbers ------------------------------------------------------------ */

static const double k_pow10[] = {
	1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

static int lower_eq(const char *s, size_t n, const char *lit)
{
	size_t i;
	for (i = 0; i < n; i++) {
		char c = s[i];
		if (c >= 'A' && c <= 'Z')
			c = (char)(c + 32);
		if (c != lit[i] || lit[i] == '\0')
			return 0;
	}
	return lit[i] == '\0';
}

/* Go's special(): [+-]inf, [+-]infinity, nan (no sign), any case. */
static int parse_special(const char *s, size_t n, double *out)
{
	int neg = 0;
	if (n && (s[0] == '+' || s[0] == '-')) {
		neg = s[0] == '-';
		s++;
		n--;
	} else if (lower_eq(s, n, "nan")) {
		*out = NAN;
		return 0;
	}
	if (lower_eq(s, n, "inf") || lower_eq(s, n, "infinity")) {
		*out = neg ? -INFINITY : INFINITY;
		return 0;
	}
	return -GL_EINVAL;
}

/* strtod for what the fast path declines. The character filter keeps out
 * what strtod accepts and Go does not ("nan(...)", leading blanks, locale
 * digits); the 'p' check matches Go's rule that hex mantissas need one. */
static int parse_float_slow(const char *s, size_t n, double *out)
{
	char buf[128], *end;
	size_t i;
	int hex = 0, has_p = 0;
	double v;

	if (n == 0 || n >= sizeof buf)
		return -GL_EINVAL;
	if (parse_special(s, n, out) == 0)
		return 0;
	for (i = 0; i < n; i++) {
		char c = s[i];
		if (c == 'x' || c == 'X')
			hex = 1;
		else if (c == 'p' || c == 'P')
			has_p = 1;
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') ||
		      c == 'x' || c == 'X' || c == 'p' || c == 'P' || c == '.' || c == '+' || c == '-'))
			return -GL_EINVAL;
	}
	if (hex && !has_p)
		return -GL_EINVAL;
	memcpy(buf, s, n);
	buf[n] = '\0';
	errno = 0;
	v = strtod(buf, &end);
	if (end != buf + n)
		return -GL_EINVAL;
	/* Go reports overflow as an error; underflow to zero or a subnormal is fine. */
	if (errno == ERANGE && isinf(v))
		return -GL_EINVAL;
	*out = v;
	return 0;
}

/* Clinger's fast path: a mantissa below 2^53 and a power of ten up to 1e22
 * are both exact doubles, so one IEEE multiply or divide rounds correctly.
 * That covers every integer and short decimal DCGM prints. */
int gl_promtext_parse_float(const char *s, size_t n, double *out)
{
	const char *p = s, *e = s + n, *d;
	uint64_t m = 0;
	int neg = 0, ndig = 0, frac = 0, ex = 0;

	if (p < e && (*p == '+' || *p == '-')) {
		neg = *p == '-';
		p++;
	}
	d = p;
	while (p < e && (unsigned)(*p - '0') < 10) {
		m = m * 10 + (uint64_t)(*p - '0');
		p++;
	}
	ndig = (int)(p - d);
	if (p < e && *p == '.') {
		const char *f = ++p;
		while (p < e && (unsigned)(*p - '0') < 10) {
			m = m * 10 + (uint64_t)(*p - '0');
			p++;
		}
		frac = (int)(p - f);
		ndig += frac;
	}
	if (ndig == 0 || ndig > 19)
		return parse_float_slow(s, n, out);
	if (p < e && (*p == 'e' || *p == 'E')) {
		int eneg = 0, edig = 0;
		p++;
		if (p < e && (*p == '+' || *p == '-')) {
			eneg = *p == '-';
			p++;
		}
		while (p < e && (unsigned)(*p - '0') < 10) {
			if (ex < 10000)
				ex = ex * 10 + (*p - '0');
			p++;
			edig++;
		}
		if (!edig)
			return -GL_EINVAL;
		if (eneg)
			ex = -ex;
	}
	if (p != e)
		return parse_float_slow(s, n, out);
	ex -= frac;
	if (m == 0) {
		*out = neg ? -0.0 : 0.0;
		return 0;
	}
	if (m > (UINT64_C(1) << 53) || ex < -22 || ex > 22)
		return parse_float_slow(s, n, out);
	{
		double v = (double)m;
		v = ex < 0 ? v / k_pow10[-ex] : v * k_pow10[ex];
		*out = neg ? -v : v;
	}
	return 0;
}

static int parse_i64(const char *s, size_t n, int64_t *out)
{
	const char *p = s, *e = s + n;
	uint64_t v = 0, lim;
	int neg = 0;

	if (p < e && (*p == '+' || *p == '-')) {
		neg = *p == '-';
		p++;
	}
	if (p == e)
		return -GL_EINVAL;
	lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (; p < e; p++) {
		unsigned d = (unsigned)(*p - '0');
		if (d > 9 || v > (lim - d) / 10)
			return -GL_EINVAL;
		v = v * 10 + d;
	}
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	return 0;
}

/* OpenMetrics timestamps are seconds, possibly fractional. Decimal forms are
 * converted without going through a double so milliseconds stay exact;
 * digits past the millisecond are truncated toward zero, as Prometheus does. */
static int parse_om_ts(const char *s, size_t n, int64_t *out_ms)
{
	const char *dot = memchr(s, '.', n);
	size_t ilen = dot ? (size_t)(dot - s) : n;
	int64_t sec, ms = 0;
	int i, neg = n && s[0] == '-';
	double v;

	if (parse_i64(s, ilen, &sec) == 0 && ilen > (size_t)(s[0] == '-' || s[0] == '+')) {
		if (dot) {
			const char *f = dot + 1, *e = s + n;
			if (f == e)
				goto slow;
			for (i = 0; i < 3; i++) {
				ms *= 10;
				if (f < e) {
					if ((unsigned)(*f - '0') > 9)
						goto slow;
					ms += *f++ - '0';
				}
			}
			for (; f < e; f++)
				if ((unsigned)(*f - '0') > 9)
					goto slow;
		}
		if (sec > INT64_MAX / 1000 - 1 || sec < INT64_MIN / 1000 + 1)
			return -GL_EINVAL;
		*out_ms = sec * 1000 + (neg ? -ms : ms);
		return 0;
	}
slow:
	if (gl_promtext_parse_float(s, n, &v) != 0 || !isfinite(v))
		return -GL_EINVAL;
	v *= 1000.0;
	if (!(v > -9.2e18 && v < 9.2e18))
		return -GL_EINVAL;
	*out_ms = (int64_t)v;
	return 0;
}

/* ---- escapes ------------------------------------------------------------ */

static char *scratch_get(struct parser *ps, size_t n)
{
	char *r;
	if (!ps->scratch)
		ps->scratch = gl_xmalloc(ps->max_line);
	/* n never exceeds the line, and decoded text is never longer than raw */
	r = ps->scratch + ps->scratch_len;
	ps->scratch_len += n;
	return r;
}

/* Decodes [p, e) (raw, between the quotes or to the end of a HELP line).
 * \\ \n (and \" when quote_esc) are decoded; other escapes are kept verbatim,
 * as Prometheus' own scraper does. */
static struct gl_str unescape(struct parser *ps, const char *p, const char *e, int quote_esc)
{
	char *out = scratch_get(ps, (size_t)(e - p)), *o = out;
	while (p < e) {
		if (*p == '\\' && p + 1 < e) {
			char c = p[1];
			if (c == '\\' || (c == '"' && quote_esc)) {
				*o++ = c;
				p += 2;
				continue;
			}
			if (c == 'n') {
				*o++ = '\n';
				p += 2;
				continue;
			}
		}
		*o++ = *p++;
	}
	return (struct gl_str){out, (size_t)(o - out)};
}

/* First '"' or '\\' in [p, e), or e. Eight bytes at a time where possible:
 * the classic "has zero byte" test on x^'"' and x^'\\'; its lowest set bit
 * is exact even though higher bits may be false positives. */
static inline const char *find_quote_or_bs(const char *p, const char *e)
{
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	const uint64_t ones = UINT64_C(0x0101010101010101), highs = UINT64_C(0x8080808080808080);
	const uint64_t q = ones * '"', bs = ones * '\\';
	while (e - p >= 8) {
		uint64_t x, a, b, hit;
		memcpy(&x, p, 8);
		a = x ^ q;
		b = x ^ bs;
		hit = ((a - ones) & ~a & highs) | ((b - ones) & ~b & highs);
		if (hit)
			return p + (__builtin_ctzll(hit) >> 3);
		p += 8;
	}
#endif
	while (p < e && *p != '"' && *p != '\\')
		p++;
	return p;
}

/* ---- lines -------------------------------------------------------------- */

/* Returns 0 (good, callback made), 1 with *why set (bad line), or the
 * callback's non-zero return (*why left NULL, so even a callback returning 1
 * stops the parse). */
static int parse_sample(struct parser *ps, const char *p, const char *e, size_t lineno,
			const char **why)
{
	struct gl_promtext_label labels[GL_PROMTEXT_MAX_LABELS];
	struct gl_promtext_sample s;
	const char *t;
	size_t nl = 0;

	s.name.p = p;
	if (!(CLS(*p) & C_MNAME) || (CLS(*p) & C_DIGIT)) {
		*why = "bad metric name";
		return 1;
	}
	p = skip_class(p, e, C_MNAME);
	s.name.len = (size_t)(p - s.name.p);
	t = p;
	p = skip_blank(p, e);
	if (p < e && *p == '{') {
		p++;
		for (;;) {
			const char *vs, *q;
			p = skip_blank(p, e);
			if (p < e && *p == '}')
				break;
			if (p == e || !(CLS(*p) & C_LNAME) || (CLS(*p) & C_DIGIT)) {
				*why = "bad label name";
				return 1;
			}
			if (nl == GL_PROMTEXT_MAX_LABELS) {
				*why = "too many labels";
				return 1;
			}
			labels[nl].name.p = p;
			p = skip_class(p, e, C_LNAME);
			labels[nl].name.len = (size_t)(p - labels[nl].name.p);
			p = skip_blank(p, e);
			if (p == e || *p != '=') {
				*why = "expected '=' after label name";
				return 1;
			}
			p = skip_blank(p + 1, e);
			if (p == e || *p != '"') {
				*why = "expected '\"' to open label value";
				return 1;
			}
			vs = ++p;
			q = find_quote_or_bs(p, e);
			if (q < e && *q == '\\') {
				/* slow path: find the real closing quote, then decode */
				while (q < e && *q != '"')
					q += (*q == '\\' && q + 1 < e) ? 2 : 1;
				if (q >= e) {
					*why = "unterminated label value";
					return 1;
				}
				labels[nl].value = unescape(ps, vs, q, 1);
			} else {
				if (q == e) {
					*why = "unterminated label value";
					return 1;
				}
				labels[nl].value.p = vs;
				labels[nl].value.len = (size_t)(q - vs);
			}
			nl++;
			p = skip_blank(q + 1, e);
			if (p < e && *p == ',') {
				p++;
				continue;
			}
			if (p < e && *p == '}')
				break;
			*why = "expected ',' or '}' after label value";
			return 1;
		}
		p = skip_blank(p + 1, e);
	} else if (p == t && p < e) {
		*why = "bad metric name";
		return 1;
	}

	if (p == e) {
		*why = "missing value";
		return 1;
	}
	t = p;
	while (p < e && !(CLS(*p) & C_BLANK))
		p++;
	s.value_raw.p = t;
	s.value_raw.len = (size_t)(p - t);
	s.has_ts = 0;
	s.ts_ms = 0;
	if (gl_promtext_parse_float(t, (size_t)(p - t), &s.value) == 0) {
		s.has_value = 1;
		p = skip_blank(p, e);
		if (p < e && !(ps->om && *p == '#')) {
			t = p;
			while (p < e && !(CLS(*p) & C_BLANK))
				p++;
			if ((ps->om ? parse_om_ts(t, (size_t)(p - t), &s.ts_ms)
				    : parse_i64(t, (size_t)(p - t), &s.ts_ms)) != 0) {
				*why = "bad timestamp";
				return 1;
			}
			s.has_ts = 1;
			p = skip_blank(p, e);
			/* OpenMetrics exemplars (" # {...} v [ts]") are not kept */
			if (p < e && !(ps->om && *p == '#')) {
				*why = "trailing characters after timestamp";
				return 1;
			}
		}
	} else {
		/* dcgm-exporter prints errors in place of values: hand the line on
		 * so the consumer sees which series went blank. */
		while (e > t && (CLS(e[-1]) & C_BLANK))
			e--;
		s.value_raw.len = (size_t)(e - t);
		s.value = NAN;
		s.has_value = 0;
		ps->st->no_value++;
		note_bad(ps->st, lineno, "value is not a number");
	}
	s.labels = labels;
	s.nlabels = nl;
	s.line = lineno;
	if (s.has_value)
		ps->st->samples++;
	return ps->h && ps->h->on_sample ? ps->h->on_sample(ps->h->ctx, &s) : 0;
}

static int is_type_name(const char *p, size_t n, int om)
{
	static const char *const t004[] = {"counter", "gauge", "histogram", "summary", "untyped"};
	static const char *const tom[] = {"unknown", "gaugehistogram", "stateset", "info"};
	size_t i;
	for (i = 0; i < GL_ARRAY_LEN(t004); i++)
		if (gl_str_eq((struct gl_str){p, n}, t004[i]))
			return 1;
	if (om)
		for (i = 0; i < GL_ARRAY_LEN(tom); i++)
			if (gl_str_eq((struct gl_str){p, n}, tom[i]))
				return 1;
	return 0;
}

/* p is just past '#'. Returns 0, 1 (bad: *why set), 2 (# EOF) or the
 * callback's return. */
static int parse_comment(struct parser *ps, const char *p, const char *e, size_t lineno,
			 const char **why)
{
	struct gl_promtext_meta m;
	const char *w;
	size_t wl;

	p = skip_blank(p, e);
	w = p;
	while (p < e && !(CLS(*p) & C_BLANK))
		p++;
	wl = (size_t)(p - w);
	if (ps->om && wl == 3 && memcmp(w, "EOF", 3) == 0 && skip_blank(p, e) == e)
		return 2;
	if (wl == 4 && memcmp(w, "HELP", 4) == 0)
		m.kind = GL_PROMTEXT_HELP;
	else if (wl == 4 && memcmp(w, "TYPE", 4) == 0)
		m.kind = GL_PROMTEXT_TYPE;
	else if (ps->om && wl == 4 && memcmp(w, "UNIT", 4) == 0)
		m.kind = GL_PROMTEXT_UNIT;
	else {
		ps->st->comments++;
		return 0;
	}
	if (p == e || !(CLS(*p) & C_BLANK)) {
		*why = "HELP/TYPE without a metric name";
		return 1;
	}
	p = skip_blank(p, e);
	m.metric.p = p;
	if (p == e || !(CLS(*p) & C_MNAME) || (CLS(*p) & C_DIGIT)) {
		*why = "HELP/TYPE: bad metric name";
		return 1;
	}
	p = skip_class(p, e, C_MNAME);
	m.metric.len = (size_t)(p - m.metric.p);
	if (p < e && !(CLS(*p) & C_BLANK)) {
		*why = "HELP/TYPE: bad metric name";
		return 1;
	}
	p = skip_blank(p, e);
	if (m.kind == GL_PROMTEXT_HELP) {
		if (memchr(p, '\\', (size_t)(e - p)))
			m.text = unescape(ps, p, e, ps->om);
		else
			m.text = (struct gl_str){p, (size_t)(e - p)};
	} else {
		while (e > p && (CLS(e[-1]) & C_BLANK))
			e--;
		m.text = (struct gl_str){p, (size_t)(e - p)};
		if (m.kind == GL_PROMTEXT_TYPE && !is_type_name(p, (size_t)(e - p), ps->om)) {
			*why = "TYPE: unknown metric type";
			return 1;
		}
	}
	m.line = lineno;
	ps->st->meta++;
	return ps->h && ps->h->on_meta ? ps->h->on_meta(ps->h->ctx, &m) : 0;
}

static int ends_with_eof(const char *buf, size_t len)
{
	const char *e = buf + len;
	while (e > buf && (e[-1] == '\n' || e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t'))
		e--;
	if (e - buf < 5 || memcmp(e - 5, "# EOF", 5) != 0)
		return 0;
	return e - buf == 5 || e[-6] == '\n';
}

int gl_promtext_parse(const char *buf, size_t len, const struct gl_promtext_opts *opts,
		      const struct gl_promtext_handler *h, struct gl_promtext_stats *stats,
		      struct gl_err *err)
{
	struct gl_promtext_stats local;
	struct parser ps;
	const char *p = buf, *end = buf + len;
	size_t lineno = 0;
	int rc = 0;

	if (!stats)
		stats = &local;
	memset(stats, 0, sizeof *stats);
	memset(&ps, 0, sizeof ps);
	ps.h = h;
	ps.st = stats;
	ps.max_line = opts && opts->max_line ? opts->max_line : GL_PROMTEXT_MAX_LINE;
	if (opts && opts->format == GL_PROMTEXT_OPENMETRICS)
		ps.om = 1;
	else if (!opts || opts->format == GL_PROMTEXT_AUTO)
		ps.om = len && ends_with_eof(buf, len);
	stats->openmetrics = ps.om;
	while (p < end) {
		int ascii, r;
		const char *nl = line_end(p, end, &ascii);
		const char *e = nl ? nl : end, *why = NULL;
		const char *q;

		lineno++;
		stats->lines++;
		if (e > p && e[-1] == '\r')
			e--;
		if ((size_t)(e - p) > ps.max_line) {
			why = "line too long";
			r = 1;
		} else if (!ascii && gl_utf8_validate(p, (size_t)(e - p), NULL) < 0) {
			/* PostgreSQL would refuse the whole scrape for one label value */
			why = "not valid UTF-8";
			r = 1;
		} else {
			q = skip_blank(p, e);
			ps.scratch_len = 0;
			if (q == e)
				r = 0;
			else if (*q == '#')
				r = parse_comment(&ps, q + 1, e, lineno, &why);
			else
				r = parse_sample(&ps, q, e, lineno, &why);
		}
		if (r == 1 && why) {
			stats->bad_lines++;
			note_bad(stats, lineno, why);
		} else if (r == 2) {
			stats->saw_eof = 1;
			break;
		} else if (r != 0) {
			rc = r;
			if (err && err->code)
				gl_err_prefix(err, "line %zu: ", lineno);
			else
				gl_err_set(err, r < 0 ? -r : GL_EINVAL, "line %zu: stopped by callback", lineno);
			goto out;
		}
		p = nl ? nl + 1 : end;
	}
	if (stats->bad_lines && !stats->samples && !stats->no_value && !stats->meta && !stats->saw_eof)
		rc = gl_err_set(err, GL_EFORMAT, "not Prometheus text format: %zu bad lines, line %zu: %s",
				stats->bad_lines, stats->bad[0].line, stats->bad[0].reason);
out:
	free(ps.scratch);
	return rc;
}
