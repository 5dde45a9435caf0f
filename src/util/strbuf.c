/* Growable buffer (see include/gl/strbuf.h). */
#include "gl/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gl_strbuf_init(struct gl_strbuf *b)
{
	b->p = NULL;
	b->len = 0;
	b->cap = 0;
}

void gl_strbuf_fini(struct gl_strbuf *b)
{
	free(b->p);
	gl_strbuf_init(b);
}

void gl_strbuf_reset(struct gl_strbuf *b)
{
	b->len = 0;
	if (b->p)
		b->p[0] = '\0';
}

void gl_strbuf_reserve(struct gl_strbuf *b, size_t extra)
{
	size_t need = b->len + extra + 1, cap;
	if (need <= b->cap)
		return;
	cap = b->cap ? b->cap : 256;
	while (cap < need)
		cap *= 2;
	b->p = gl_xrealloc(b->p, cap);
	b->cap = cap;
}

void gl_strbuf_append(struct gl_strbuf *b, const void *data, size_t n)
{
	gl_strbuf_reserve(b, n);
	if (n)
		memcpy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void gl_strbuf_puts(struct gl_strbuf *b, const char *s)
{
	gl_strbuf_append(b, s, strlen(s));
}

void gl_strbuf_putc(struct gl_strbuf *b, char c)
{
	gl_strbuf_reserve(b, 1);
	b->p[b->len++] = c;
	b->p[b->len] = '\0';
}

void gl_strbuf_vprintf(struct gl_strbuf *b, const char *fmt, va_list ap)
{
	va_list ap2;
	int n;

	va_copy(ap2, ap);
	gl_strbuf_reserve(b, 64);
	n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
	if (n < 0) {
		va_end(ap2);
		return;
	}
	if ((size_t)n >= b->cap - b->len) {
		gl_strbuf_reserve(b, (size_t)n);
		vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap2);
	}
	va_end(ap2);
	b->len += (size_t)n;
}

void gl_strbuf_printf(struct gl_strbuf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	gl_strbuf_vprintf(b, fmt, ap);
	va_end(ap);
}

void gl_strbuf_put_i64(struct gl_strbuf *b, long long v)
{
	char tmp[24];
	char *e = tmp + sizeof tmp, *q = e;
	unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
	do {
		*--q = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		*--q = '-';
	gl_strbuf_append(b, q, (size_t)(e - q));
}

void gl_strbuf_put_copy_text(struct gl_strbuf *b, const char *s, size_t n)
{
	size_t i, start = 0;
	gl_strbuf_reserve(b, n);
	for (i = 0; i < n; i++) {
		char esc = 0;
		switch (s[i]) {
		case '\\': esc = '\\'; break;
		case '\t': esc = 't'; break;
		case '\n': esc = 'n'; break;
		case '\r': esc = 'r'; break;
		default: continue;
		}
		gl_strbuf_append(b, s + start, i - start);
		gl_strbuf_putc(b, '\\');
		gl_strbuf_putc(b, esc);
		start = i + 1;
	}
	gl_strbuf_append(b, s + start, n - start);
}

void gl_strbuf_put_json_str(struct gl_strbuf *b, const char *s, size_t n)
{
	size_t i, start = 0;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		char tmp[8];
		const char *rep = NULL;
		if (c == '"')
			rep = "\\\"";
		else if (c == '\\')
			rep = "\\\\";
		else if (c == '\n')
			rep = "\\n";
		else if (c == '\t')
			rep = "\\t";
		else if (c == '\r')
			rep = "\\r";
		else if (c < 0x20) {
			snprintf(tmp, sizeof tmp, "\\u%04x", c);
			rep = tmp;
		} else
			continue;
		gl_strbuf_append(b, s + start, i - start);
		gl_strbuf_puts(b, rep);
		start = i + 1;
	}
	gl_strbuf_append(b, s + start, n - start);
}

char *gl_strbuf_steal(struct gl_strbuf *b)
{
	char *p = b->p ? b->p : gl_xstrdup("");
	gl_strbuf_init(b);
	return p;
}

const char *gl_strbuf_cstr(const struct gl_strbuf *b)
{
	return b->p ? b->p : "";
}
