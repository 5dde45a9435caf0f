/* The API filter syntax (see include/gl/filter.h). */
#include "gl/filter.h"
#include "gl/strbuf.h"

#include <stdlib.h>
#include <string.h>

void gl_filter_fini(struct gl_filter *f)
{
	for (size_t i = 0; i < f->n; i++) {
		free(f->c[i].dim);
		for (size_t j = 0; j < f->c[i].n_values; j++)
			free(f->c[i].values[j]);
	}
	memset(f, 0, sizeof *f);
}

int gl_filter_parse(const char *s, const char *const *dims, struct gl_filter *f, struct gl_err *err)
{
	const char *p = s;
	int rc = 0;
	memset(f, 0, sizeof *f);
	while (*p) {
		struct gl_filter_clause *c;
		const char *colon = strchr(p, ':');
		size_t dl;
		int known = 0;
		if (f->n == GL_FILTER_MAX_CLAUSES) {
			rc = gl_err_set(err, GL_EINVAL, "more than %d clauses", GL_FILTER_MAX_CLAUSES);
			goto out;
		}
		if (!colon) {
			rc = gl_err_set(err, GL_EINVAL, "expected dimension:value at '%s'", p);
			goto out;
		}
		dl = (size_t)(colon - p);
		for (size_t i = 0; dims[i]; i++)
			if (strlen(dims[i]) == dl && !strncmp(dims[i], p, dl))
				known = 1;
		if (!known) {
			rc = gl_err_set(err, GL_EINVAL, "unknown dimension '%.*s'", (int)dl, p);
			goto out;
		}
		/* clauses are ANDed: team:"a"+team:"b" (meant as either) matched
		 * nothing and answered an empty 200; the values go in one clause */
		for (size_t i = 0; i < f->n; i++)
			if (strlen(f->c[i].dim) == dl && !strncmp(f->c[i].dim, p, dl)) {
				rc = gl_err_set(err, GL_EINVAL, "'%.*s' given twice (list its values in one clause: %.*s:\"a\",\"b\")",
						(int)dl, p, (int)dl, p);
				goto out;
			}
		c = &f->c[f->n++];
		c->dim = gl_xstrndup(p, dl);
		p = colon + 1;
		for (;;) {
			struct gl_strbuf v = GL_STRBUF_INIT;
			if (c->n_values == GL_FILTER_MAX_VALUES) {
				rc = gl_err_set(err, GL_EINVAL, "more than %d values for '%s'", GL_FILTER_MAX_VALUES, c->dim);
				goto out;
			}
			if (*p == '"') {
				for (p++; *p && *p != '"'; p++) {
					if (*p == '\\' && (p[1] == '"' || p[1] == '\\'))
						p++;
					gl_strbuf_putc(&v, *p);
				}
				if (*p != '"') {
					gl_strbuf_fini(&v);
					rc = gl_err_set(err, GL_EINVAL, "unterminated quote in '%s' values", c->dim);
					goto out;
				}
				p++;
			} else {
				while (*p && *p != ',' && *p != '+' && *p != '"' && *p != ':')
					gl_strbuf_putc(&v, *p++);
				if (v.len == 0) {
					gl_strbuf_fini(&v);
					rc = gl_err_set(err, GL_EINVAL, "empty value for '%s'", c->dim);
					goto out;
				}
			}
			c->values[c->n_values++] = gl_strbuf_steal(&v);
			if (*p == ',') {
				p++;
				continue;
			}
			break;
		}
		if (*p == '+') {
			p++;
			if (!*p) {
				rc = gl_err_set(err, GL_EINVAL, "dangling '+'");
				goto out;
			}
		} else if (*p) {
			rc = gl_err_set(err, GL_EINVAL, "unexpected '%c' after '%s' values", *p, c->dim);
			goto out;
		}
	}
out:
	if (rc)
		gl_filter_fini(f);
	return rc;
}

int gl_filter_restrict(struct gl_filter *f, const char *dim, const char *const *vals, size_t n, struct gl_err *err)
{
	struct gl_filter_clause *c;
	for (size_t i = 0; i < f->n; i++) {
		if (strcmp(f->c[i].dim, dim))
			continue;
		for (size_t v = 0; v < f->c[i].n_values; v++) {
			size_t k = 0;
			while (k < n && strcmp(vals[k], f->c[i].values[v]))
				k++;
			if (k == n)
				return gl_err_set(err, GL_EPERM, "%s:\"%s\" is outside the token's scope", dim,
						  f->c[i].values[v]);
		}
		return 0;
	}
	if (f->n == GL_FILTER_MAX_CLAUSES || n > GL_FILTER_MAX_VALUES)
		return gl_err_set(err, GL_ERANGE, "at most %d clauses with the token's scope", GL_FILTER_MAX_CLAUSES);
	c = &f->c[f->n++];
	memset(c, 0, sizeof *c);
	c->dim = gl_xstrdup(dim);
	for (size_t k = 0; k < n; k++)
		c->values[c->n_values++] = gl_xstrdup(vals[k]);
	return 0;
}

void gl_filter_format(const struct gl_filter *f, struct gl_strbuf *o)
{
	for (size_t i = 0; i < f->n; i++) {
		if (i)
			gl_strbuf_putc(o, '+');
		gl_strbuf_printf(o, "%s:", f->c[i].dim);
		for (size_t k = 0; k < f->c[i].n_values; k++) {
			if (k)
				gl_strbuf_putc(o, ',');
			gl_strbuf_putc(o, '"');
			for (const char *p = f->c[i].values[k]; *p; p++) {
				if (*p == '"' || *p == '\\')
					gl_strbuf_putc(o, '\\');
				gl_strbuf_putc(o, *p);
			}
			gl_strbuf_putc(o, '"');
		}
	}
}
