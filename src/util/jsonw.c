/* Streaming JSON writer (see include/gl/jsonw.h). */
#include "gl/jsonw.h"
#include "gl/log.h"
#include "gl/timeutil.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gl_jsonw_init(struct gl_jsonw *w, struct gl_strbuf *out)
{
	memset(w, 0, sizeof *w);
	w->out = out;
}

/* The separator and the name before a member. */
static void member(struct gl_jsonw *w, const char *key)
{
	if (w->depth > 0) {
		if (w->any[w->depth - 1])
			gl_strbuf_putc(w->out, ',');
		w->any[w->depth - 1] = 1;
	}
	if (key) {
		gl_strbuf_putc(w->out, '"');
		gl_strbuf_put_json_str(w->out, key, strlen(key));
		gl_strbuf_puts(w->out, "\":");
	}
}

static void open_level(struct gl_jsonw *w, const char *key, char open, char close)
{
	member(w, key);
	if (w->depth == GL_JSONW_MAX_DEPTH) {
		/* a writer's caller nests by its own fixed shape: a fault of ours */
		gl_log(GL_LOG_ERROR, "jsonw: nesting deeper than %d", GL_JSONW_MAX_DEPTH);
		abort();
	}
	gl_strbuf_putc(w->out, open);
	w->open[w->depth] = (unsigned char)close;
	w->any[w->depth] = 0;
	w->depth++;
}

void gl_jsonw_object(struct gl_jsonw *w, const char *key)
{
	open_level(w, key, '{', '}');
}

void gl_jsonw_array(struct gl_jsonw *w, const char *key)
{
	open_level(w, key, '[', ']');
}

void gl_jsonw_end(struct gl_jsonw *w)
{
	if (w->depth == 0) {
		gl_log(GL_LOG_ERROR, "jsonw: end without an open object or array");
		abort();
	}
	w->depth--;
	gl_strbuf_putc(w->out, (char)w->open[w->depth]);
}

void gl_jsonw_str(struct gl_jsonw *w, const char *key, const char *s)
{
	member(w, key);
	if (!s) {
		gl_strbuf_puts(w->out, "null");
		return;
	}
	gl_strbuf_putc(w->out, '"');
	gl_strbuf_put_json_str(w->out, s, strlen(s));
	gl_strbuf_putc(w->out, '"');
}

void gl_jsonw_i64(struct gl_jsonw *w, const char *key, int64_t v)
{
	member(w, key);
	gl_strbuf_put_i64(w->out, (long long)v);
}

/* cJSON's test for "the 15-digit text reads back as the same double" */
static int same_double(double a, double b)
{
	double m = fabs(a) > fabs(b) ? fabs(a) : fabs(b);
	return fabs(a - b) <= m * DBL_EPSILON;
}

void gl_jsonw_num(struct gl_jsonw *w, const char *key, double v)
{
	char buf[32];
	member(w, key);
	if (isnan(v) || isinf(v)) {
		gl_strbuf_puts(w->out, "null");
		return;
	}
	snprintf(buf, sizeof buf, "%1.15g", v);
	if (!same_double(strtod(buf, NULL), v))
		snprintf(buf, sizeof buf, "%1.17g", v);
	gl_strbuf_puts(w->out, buf);
}

void gl_jsonw_bool(struct gl_jsonw *w, const char *key, int v)
{
	member(w, key);
	gl_strbuf_puts(w->out, v ? "true" : "false");
}

void gl_jsonw_null(struct gl_jsonw *w, const char *key)
{
	member(w, key);
	gl_strbuf_puts(w->out, "null");
}

void gl_jsonw_time(struct gl_jsonw *w, const char *key, int64_t t)
{
	char buf[32];
	if (t == GL_TIME_NONE) {
		gl_jsonw_null(w, key);
		return;
	}
	gl_timeutil_format(t, buf, sizeof buf);
	gl_jsonw_str(w, key, buf);
}
