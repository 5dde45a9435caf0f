/* PostgreSQL array literals (see include/gl/pgarray.h). */
#include "gl/pgarray.h"

void gl_pgarray_add_text(struct gl_strbuf *b, const char *s)
{
	gl_strbuf_putc(b, b->len ? ',' : '{');
	if (!s) {
		gl_strbuf_puts(b, "NULL");
		return;
	}
	gl_strbuf_putc(b, '"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			gl_strbuf_putc(b, '\\');
		gl_strbuf_putc(b, *s);
	}
	gl_strbuf_putc(b, '"');
}

void gl_pgarray_add_i64(struct gl_strbuf *b, int64_t v)
{
	gl_strbuf_putc(b, b->len ? ',' : '{');
	gl_strbuf_put_i64(b, v);
}

const char *gl_pgarray_end(struct gl_strbuf *b)
{
	if (!b->len)
		gl_strbuf_putc(b, '{');
	gl_strbuf_putc(b, '}');
	return b->p;
}

const char *gl_pgarray_texts(struct gl_strbuf *b, const char *const *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		gl_pgarray_add_text(b, v[i]);
	return gl_pgarray_end(b);
}
