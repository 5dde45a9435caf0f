/* Placeholders in command templates (see include/gl/tmpl.h). */
#include "gl/tmpl.h"

#include "gl/strbuf.h"

#include <stdio.h>
#include <string.h>

/* The length of the placeholder at p ("{name}"), 0 when p starts none:
 * only a name of letters, digits and '_' makes one, so literal braces in
 * a command (a JSON body: {"a":1}) stay text. */
static size_t placeholder_len(const char *p)
{
	size_t i = 1;
	if (*p != '{')
		return 0;
	while ((p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z') || (p[i] >= '0' && p[i] <= '9') ||
	       p[i] == '_')
		i++;
	return i > 1 && p[i] == '}' ? i + 1 : 0;
}

int gl_tmpl_check(const char *s, const char *const *names, char *bad, size_t nbad)
{
	for (const char *p = s; p && *p; p++) {
		size_t n = placeholder_len(p), i;
		if (!n)
			continue;
		for (i = 0; names[i]; i++)
			if (strlen(names[i]) == n - 2 && !strncmp(p + 1, names[i], n - 2))
				break;
		if (!names[i]) {
			snprintf(bad, nbad, "%.*s", (int)n, p);
			return -1;
		}
		p += n - 1;
	}
	return 0;
}

char *gl_tmpl_expand(const char *s, const struct gl_tmpl_var *vars, size_t nvars)
{
	struct gl_strbuf b = GL_STRBUF_INIT;
	for (const char *p = s; *p;) {
		size_t n = placeholder_len(p), k = nvars;
		if (n)
			for (k = 0; k < nvars; k++)
				if (strlen(vars[k].name) == n - 2 && !strncmp(vars[k].name, p + 1, n - 2))
					break;
		if (k < nvars) {
			gl_strbuf_puts(&b, vars[k].value ? vars[k].value : "");
			p += n;
			continue;
		}
		gl_strbuf_putc(&b, *p++);
	}
	return gl_strbuf_steal(&b);
}
