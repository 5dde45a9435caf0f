/* Reading the report templates and layout (see include/gl/report_style.h). */
#include "gl/report_style.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define MAX_FILE (1 << 20)

static int read_text(const char *dir, const char *name, char **out, struct gl_err *err)
{
	char path[4096];
	FILE *f;
	long len;
	int rc = 0;
	snprintf(path, sizeof path, "%s/%s", dir, name);
	*out = NULL;
	if (!(f = fopen(path, "rb")))
		return gl_err_set(err, errno == ENOENT ? GL_ENOTFOUND : GL_EIO, "%s: %s (reports.template_dir)", path,
				  strerror(errno));
	if (fseek(f, 0, SEEK_END) || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
		rc = gl_err_set(err, GL_EIO, "%s: %s", path, strerror(errno));
		goto out;
	}
	if (len > MAX_FILE) {
		rc = gl_err_set(err, GL_EINVAL, "%s: larger than %d bytes", path, MAX_FILE);
		goto out;
	}
	*out = gl_xcalloc(1, (size_t)len + 1);
	if (fread(*out, 1, (size_t)len, f) != (size_t)len) {
		rc = gl_err_set(err, GL_EIO, "%s: short read", path);
		free(*out);
		*out = NULL;
		goto out;
	}
	if (strlen(*out) != (size_t)len) {
		rc = gl_err_set(err, GL_EINVAL, "%s: contains a NUL byte", path);
		free(*out);
		*out = NULL;
	}
out:
	fclose(f);
	return rc;
}

/* {{title}}, {{css}} and exactly one {{body}}; any other {{...}} is a typo
 * that would otherwise reach finance as text. */
static int check_template(const char *dir, const char *t, struct gl_err *err)
{
	int line = 1, bodies = 0;
	for (const char *p = t; *p; p++) {
		if (*p == '\n')
			line++;
		if (p[0] != '{' || p[1] != '{')
			continue;
		if (!strncmp(p, "{{body}}", 8))
			bodies++;
		else if (strncmp(p, "{{title}}", 9) && strncmp(p, "{{css}}", 7)) {
			const char *e = strstr(p, "}}");
			int n = e && e - p < 40 ? (int)(e - p) + 2 : 12;
			return gl_err_set(err, GL_EINVAL,
					  "%s/showback.html:%d: unknown placeholder '%.*s' (known: {{title}}, {{css}}, "
					  "{{body}})",
					  dir, line, n, p);
		}
		if (bodies > 1)
			return gl_err_set(err, GL_EINVAL, "%s/showback.html:%d: a second {{body}}", dir, line);
	}
	if (!bodies)
		return gl_err_set(err, GL_EINVAL, "%s/showback.html: no {{body}} placeholder", dir);
	return 0;
}

struct lkey {
	const char *name;
	size_t off; /* into struct gl_report_pdf_layout; font is the one string */
	double lo, hi;
};
#define LOFF(f) offsetof(struct gl_report_pdf_layout, f)
static const struct lkey lkeys[] = {
	{"font", LOFF(font), 0, 0},
	{"page_width", LOFF(page_width), 200, 3000},
	{"page_height", LOFF(page_height), 200, 3000},
	{"margin", LOFF(margin), 0, 200},
	{"footer", LOFF(footer), 0, 100},
	{"title_size", LOFF(title_size), 4, 72},
	{"heading_size", LOFF(heading_size), 4, 72},
	{"text_size", LOFF(text_size), 4, 72},
	{"table_size", LOFF(table_size), 4, 72},
	{"small_size", LOFF(small_size), 4, 72},
	{"row_padding", LOFF(row_padding), 0, 20},
	{"min_column_width", LOFF(min_column_width), 10, 300},
	{"name_column_width", LOFF(name_column_width), 20, 400},
	{"chart_height", LOFF(chart_height), 40, 600},
};
#define NLKEYS (sizeof lkeys / sizeof lkeys[0])

static int set_key(const char *path, size_t line, const char *k, const char *v, struct gl_report_pdf_layout *l,
		   unsigned *seen, struct gl_err *err)
{
	char *end;
	double d;
	for (size_t i = 0; i < NLKEYS; i++) {
		if (strcmp(lkeys[i].name, k))
			continue;
		if (*seen & (1u << i))
			return gl_err_set(err, GL_EINVAL, "%s:%zu: '%s' given twice", path, line, k);
		*seen |= 1u << i;
		if (lkeys[i].off == LOFF(font)) {
			if (!*v || strlen(v) >= sizeof l->font)
				return gl_err_set(err, GL_EINVAL, "%s:%zu: font: a family name of 1 to %zu bytes", path,
						  line, sizeof l->font - 1);
			snprintf(l->font, sizeof l->font, "%s", v);
			return 0;
		}
		errno = 0;
		d = strtod(v, &end);
		if (!*v || *end || errno)
			return gl_err_set(err, GL_EINVAL, "%s:%zu: %s: '%s' is not a number of points", path, line, k, v);
		if (d < lkeys[i].lo || d > lkeys[i].hi)
			return gl_err_set(err, GL_EINVAL, "%s:%zu: %s: %g is outside %g..%g pt", path, line, k, d,
					  lkeys[i].lo, lkeys[i].hi);
		*(double *)(void *)((char *)l + lkeys[i].off) = d;
		return 0;
	}
	return gl_err_set(err, GL_EINVAL, "%s:%zu: unknown key '%s'", path, line, k);
}

/* One flat mapping of scalars, every key present once. */
static int parse_layout(const char *path, const char *text, struct gl_report_pdf_layout *l, struct gl_err *err)
{
	yaml_parser_t ps;
	yaml_event_t ev;
	char *key = NULL;
	size_t key_line = 0;
	unsigned seen = 0;
	int rc = 0, depth = 0, done = 0;
	memset(l, 0, sizeof *l);
	if (!yaml_parser_initialize(&ps))
		return gl_err_set(err, GL_ENOMEM, "%s: YAML parser", path);
	yaml_parser_set_input_string(&ps, (const unsigned char *)text, strlen(text));
	while (!done && !rc) {
		if (!yaml_parser_parse(&ps, &ev)) {
			rc = gl_err_set(err, GL_EINVAL, "%s:%zu: YAML: %s", path, ps.problem_mark.line + 1,
					ps.problem ? ps.problem : "syntax error");
			break;
		}
		switch (ev.type) {
		case YAML_STREAM_END_EVENT:
			done = 1;
			break;
		case YAML_MAPPING_START_EVENT:
		case YAML_SEQUENCE_START_EVENT:
		case YAML_ALIAS_EVENT:
			if (depth++ || ev.type != YAML_MAPPING_START_EVENT)
				rc = gl_err_set(err, GL_EINVAL, "%s:%zu: %s%s%s", path, ev.start_mark.line + 1,
						key ? "'" : "", key ? key : "the file must be one mapping of key: value",
						key ? "' must be a single value" : "");
			break;
		case YAML_SCALAR_EVENT: {
			const char *v = (const char *)ev.data.scalar.value;
			if (!depth)
				rc = gl_err_set(err, GL_EINVAL, "%s:%zu: the file must be one mapping of key: value", path,
						ev.start_mark.line + 1);
			else if (!key) {
				key = gl_xstrdup(v);
				key_line = ev.start_mark.line + 1;
			} else {
				rc = set_key(path, key_line, key, v, l, &seen, err);
				free(key);
				key = NULL;
			}
			break;
		}
		default:
			break;
		}
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&ps);
	free(key);
	for (size_t i = 0; !rc && i < NLKEYS; i++)
		if (!(seen & (1u << i)))
			rc = gl_err_set(err, GL_EINVAL, "%s: '%s' missing", path, lkeys[i].name);
	if (!rc && 2 * l->margin + 4 * l->min_column_width > l->page_width)
		rc = gl_err_set(err, GL_EINVAL, "%s: margins and min_column_width leave room for fewer than 4 columns",
				path);
	return rc;
}

int gl_report_style_load(const char *dir, const char *thousands, const char *decimal, struct gl_report_style *st,
			 struct gl_err *err)
{
	char *layout = NULL, path[4096];
	int rc;
	memset(st, 0, sizeof *st);
	if ((rc = gl_report_seps_check(thousands, decimal, err)))
		return rc;
	snprintf(st->thousands, sizeof st->thousands, "%s", thousands);
	snprintf(st->decimal, sizeof st->decimal, "%s", decimal);
	if ((rc = read_text(dir, "showback.html", &st->html, err)) || (rc = check_template(dir, st->html, err)) ||
	    (rc = read_text(dir, "showback.css", &st->css, err)) ||
	    (rc = read_text(dir, "pdf-layout.yaml", &layout, err)))
		goto out;
	snprintf(path, sizeof path, "%s/pdf-layout.yaml", dir);
	rc = parse_layout(path, layout, &st->pdf, err);
out:
	free(layout);
	if (rc)
		gl_report_style_fini(st);
	return rc;
}

void gl_report_style_fini(struct gl_report_style *st)
{
	free(st->html);
	free(st->css);
	st->html = st->css = NULL;
}
