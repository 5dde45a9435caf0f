/* Slurm hostlist expansion (see include/gl/hostlist.h).
 *
 * Two passes over the text: the first checks the syntax and counts the hosts,
 * the second calls cb. So a bad or oversized list is refused before cb has
 * seen any host, and the caller never has to undo half an expansion.
 */
#include "gl/hostlist.h"

#include <stdio.h>
#include <string.h>

#define HOST_MAX 255     /* longest host name we build (DNS name limit) */
#define GROUPS_MAX 16    /* bracket groups per host expression: bounds the recursion */
#define NUM_DIGITS_MAX 18

struct hl_ctx {
	const char *s;   /* the whole list, for messages */
	size_t n;
	gl_hostlist_cb cb;
	void *ud;
	struct gl_err *err;
	char buf[HOST_MAX + 1];
};

static int syntax(struct hl_ctx *c, const char *why)
{
	int shown = c->n > 96 ? 96 : (int)c->n;
	return gl_err_set(c->err, GL_EINVAL, "hostlist: %s in '%.*s'%s", why, shown, c->s,
			  c->n > 96 ? "..." : "");
}

static int parse_num(const char *p, size_t n, uint64_t *out)
{
	uint64_t v = 0;

	if (n == 0 || n > NUM_DIGITS_MAX)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -1;
		v = v * 10 + (uint64_t)(p[i] - '0');
	}
	*out = v;
	return 0;
}

/* One range "lo" or "lo-hi" inside brackets. width is lo's length: "01-04"
 * prints 01..04, "1-10" prints 1..10 (a minimum width pads nothing there). */
struct hl_range {
	uint64_t lo, hi;
	int width;
};

static int parse_range(struct hl_ctx *c, const char *p, size_t n, struct hl_range *r)
{
	const char *dash = memchr(p, '-', n);
	size_t lon = dash ? (size_t)(dash - p) : n;

	if (parse_num(p, lon, &r->lo) < 0)
		return syntax(c, "bad range");
	r->hi = r->lo;
	if (dash && parse_num(dash + 1, n - lon - 1, &r->hi) < 0)
		return syntax(c, "bad range");
	if (r->hi < r->lo)
		return syntax(c, "reversed range");
	r->width = (int)lon;
	return 0;
}

static int ndigits(uint64_t v)
{
	int d = 1;
	while (v >= 10)
		v /= 10, d++;
	return d;
}

/* Pass 1 for one host expression p[0..n): hosts it yields (saturating past
 * the cap) and the longest name it can build. */
static int check_expr(struct hl_ctx *c, const char *p, size_t n, uint64_t *count)
{
	size_t i = 0, maxlen = 0;
	uint64_t total = 1;
	int groups = 0;

	if (n == 0)
		return syntax(c, "empty host name");
	while (i < n) {
		const char *close;
		uint64_t gcount = 0;
		size_t gmax = 0, j;

		if (p[i] == ']')
			return syntax(c, "unbalanced ']'");
		if (p[i] != '[') {
			maxlen++;
			i++;
			continue;
		}
		close = memchr(p + i, ']', n - i);
		if (!close)
			return syntax(c, "unbalanced '['");
		if (++groups > GROUPS_MAX)
			return syntax(c, "too many bracket groups");
		j = i + 1;
		if (p + j == close)
			return syntax(c, "empty brackets");
		while (p + j <= close) {
			const char *e = memchr(p + j, ',', (size_t)(close - (p + j)));
			struct hl_range r;
			size_t rl;
			int rc;

			if (!e)
				e = close;
			rl = (size_t)(e - (p + j));
			if (memchr(p + j, '[', rl))
				return syntax(c, "nested '['");
			rc = parse_range(c, p + j, rl, &r);
			if (rc < 0)
				return rc;
			gcount += r.hi - r.lo + 1;
			if (gcount > GL_HOSTLIST_MAX_HOSTS || r.hi - r.lo >= GL_HOSTLIST_MAX_HOSTS)
				gcount = GL_HOSTLIST_MAX_HOSTS + 1;
			{
				size_t w = (size_t)ndigits(r.hi);
				if ((size_t)r.width > w)
					w = (size_t)r.width;
				if (w > gmax)
					gmax = w;
			}
			j = (size_t)(e - p) + 1;
		}
		total *= gcount; /* both factors are <= cap + 1, so no overflow */
		if (total > GL_HOSTLIST_MAX_HOSTS)
			total = GL_HOSTLIST_MAX_HOSTS + 1;
		maxlen += gmax;
		i = (size_t)(close - p) + 1;
	}
	if (maxlen > HOST_MAX)
		return syntax(c, "host name too long");
	*count = total;
	return 0;
}

/* Pass 2: p[0..n) is known good; buf[0..len) holds what is built so far. */
static int emit(struct hl_ctx *c, const char *p, size_t n, size_t len)
{
	const char *open = memchr(p, '[', n);
	size_t lit = open ? (size_t)(open - p) : n;
	const char *close, *q;

	memcpy(c->buf + len, p, lit);
	len += lit;
	if (!open) {
		c->buf[len] = '\0';
		return c->cb(c->buf, c->ud);
	}
	close = memchr(open, ']', n - lit);
	for (q = open + 1; q < close;) {
		const char *e = memchr(q, ',', (size_t)(close - q));
		struct hl_range r;

		if (!e)
			e = close;
		if (parse_range(c, q, (size_t)(e - q), &r) < 0)
			return -GL_EINVAL; /* cannot happen after pass 1 */
		for (uint64_t v = r.lo;; v++) {
			char num[NUM_DIGITS_MAX + 2];
			int k = snprintf(num, sizeof num, "%0*llu", r.width, (unsigned long long)v);
			int rc;

			memcpy(c->buf + len, num, (size_t)k);
			rc = emit(c, close + 1, n - (size_t)(close + 1 - p), len + (size_t)k);
			if (rc != 0)
				return rc;
			if (v == r.hi)
				break;
		}
		q = e + 1;
	}
	return 0;
}

/* Calls fn on each top-level comma-separated expression (commas inside
 * brackets separate ranges, not hosts). */
static int each_expr(struct hl_ctx *c, int pass, uint64_t *total)
{
	size_t i = 0, start = 0;
	int depth = 0;

	for (;; i++) {
		if (i < c->n && c->s[i] == '[')
			depth++;
		else if (i < c->n && c->s[i] == ']')
			depth--;
		if (depth < 0)
			return syntax(c, "unbalanced ']'");
		if (depth > 1)
			return syntax(c, "nested '['");
		if (i == c->n || (c->s[i] == ',' && depth == 0)) {
			int rc;
			if (pass == 1) {
				uint64_t cnt = 0;
				rc = check_expr(c, c->s + start, i - start, &cnt);
				if (rc < 0)
					return rc;
				*total += cnt;
				if (*total > GL_HOSTLIST_MAX_HOSTS)
					return gl_err_set(c->err, GL_ERANGE,
							  "hostlist: more than %d hosts", GL_HOSTLIST_MAX_HOSTS);
			} else {
				rc = emit(c, c->s + start, i - start, 0);
				if (rc != 0)
					return rc;
			}
			if (i == c->n)
				break;
			start = i + 1;
		}
	}
	return 0;
}

int gl_hostlist_expand(const char *s, size_t n, gl_hostlist_cb cb, void *ud, struct gl_err *err)
{
	struct hl_ctx c = {.s = s, .n = n, .cb = cb, .ud = ud, .err = err};
	uint64_t total = 0;
	int rc;

	if (n == 0 || (n == 13 && memcmp(s, "None assigned", 13) == 0))
		return 0;
	rc = each_expr(&c, 1, &total);
	if (rc < 0)
		return rc;
	return each_expr(&c, 2, &total);
}
