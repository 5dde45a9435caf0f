/* CSV output (see include/gl/csv.h). */
#include "gl/csv.h"

#include <string.h>

/* Returns 1 when the field starts a record. */
static int sep(struct gl_strbuf *o)
{
	if (o->len && o->p[o->len - 1] != '\n') {
		gl_strbuf_putc(o, ',');
		return 0;
	}
	return 1;
}

void gl_csv_field(struct gl_strbuf *o, const char *s)
{
	int quote = strpbrk(s, ",\"\r\n") != NULL;
	int guard = s[0] == '=' || s[0] == '+' || s[0] == '-' || s[0] == '@' || s[0] == '\t' || s[0] == '\r';
	/* an empty first field would leave nothing to tell the next one apart */
	if (sep(o) && !*s)
		quote = 1;
	if (guard)
		quote = 1;
	if (quote)
		gl_strbuf_putc(o, '"');
	if (guard)
		gl_strbuf_putc(o, '\'');
	for (; *s; s++) {
		if (*s == '"')
			gl_strbuf_putc(o, '"');
		gl_strbuf_putc(o, *s);
	}
	if (quote)
		gl_strbuf_putc(o, '"');
}

void gl_csv_raw(struct gl_strbuf *o, const char *s)
{
	if (sep(o) && !*s)
		gl_strbuf_puts(o, "\"\"");
	gl_strbuf_puts(o, s);
}

void gl_csv_end(struct gl_strbuf *o)
{
	gl_strbuf_puts(o, "\r\n");
}
