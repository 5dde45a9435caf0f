/* Query results into typed rows (see include/gl/pgrow.h). */
#include "gl/pgrow.h"
#include "db_int.h"

#include <stdlib.h>
#include <string.h>

static int columns(const PGresult *r, const struct gl_pgrow_field *f, size_t nf, int *col, struct gl_err *err)
{
	for (size_t i = 0; i < nf; i++)
		if ((col[i] = PQfnumber(r, f[i].name)) < 0)
			return gl_err_set(err, GL_EINTERNAL, "query result has no column '%s'", f[i].name);
	return 0;
}

static void put(char *row, const struct gl_pgrow_field *f, const PGresult *r, int i, int c, char **text)
{
	int null = PQgetisnull(r, i, c);
	const char *v = PQgetvalue(r, i, c);
	void *m = row + f->off;

	if (f->null_off != GL_PGROW_NO_NULL)
		*(int *)(void *)(row + f->null_off) = null;
	switch (f->type) {
	case GL_PGROW_STR:
		if (null) {
			*(char **)m = NULL;
		} else {
			size_t len = (size_t)PQgetlength(r, i, c);
			memcpy(*text, v, len + 1);
			*(char **)m = *text;
			*text += len + 1;
		}
		break;
	case GL_PGROW_I64:
		*(int64_t *)m = null ? 0 : strtoll(v, NULL, 10);
		break;
	case GL_PGROW_F64:
		*(double *)m = null ? 0 : strtod(v, NULL);
		break;
	case GL_PGROW_BOOL:
		*(int *)m = !null && v[0] == 't';
		break;
	case GL_PGROW_TIME:
		*(int64_t *)m = null ? GL_TIME_NONE : strtoll(v, NULL, 10);
		break;
	}
}

int gl_pgrow_decode(const PGresult *r, const struct gl_pgrow_field *f, size_t nf, size_t size, void **rows,
		    size_t *n, char **text, struct gl_err *err)
{
	int nr = PQntuples(r), rc;
	int *col = gl_xcalloc(nf + 1, sizeof *col);
	size_t need = 1;
	char *t;

	*rows = NULL;
	*text = NULL;
	*n = 0;
	if ((rc = columns(r, f, nf, col, err))) {
		free(col);
		return rc;
	}
	/* the strings first, so the rows can point into one block that never moves */
	for (int i = 0; i < nr; i++)
		for (size_t k = 0; k < nf; k++)
			if (f[k].type == GL_PGROW_STR && !PQgetisnull(r, i, col[k]))
				need += (size_t)PQgetlength(r, i, col[k]) + 1;
	*text = t = gl_xmalloc(need);
	*rows = gl_xcalloc((size_t)nr + 1, size);
	for (int i = 0; i < nr; i++)
		for (size_t k = 0; k < nf; k++)
			put((char *)*rows + (size_t)i * size, &f[k], r, i, col[k], &t);
	*n = (size_t)nr;
	free(col);
	return 0;
}

int gl_pgrow_query(PGconn *c, const char *sql, int np, const char *const *params, const struct gl_pgrow_field *f,
		   size_t nf, size_t size, void **rows, size_t *n, char **text, struct gl_err *err)
{
	PGresult *r = NULL;
	int rc;
	*rows = NULL;
	*text = NULL;
	*n = 0;
	if ((rc = gl_db_query(c, sql, np, params, &r, err)))
		return rc;
	rc = gl_pgrow_decode(r, f, nf, size, rows, n, text, err);
	PQclear(r);
	return rc;
}

static int one(const PGresult *r, const char *name, const char **v, struct gl_err *err)
{
	int c = PQfnumber(r, name);
	if (c < 0 || PQntuples(r) < 1)
		return gl_err_set(err, GL_EINTERNAL, "query result has no %s '%s'", c < 0 ? "column" : "row for", name);
	*v = PQgetisnull(r, 0, c) ? NULL : PQgetvalue(r, 0, c);
	return 0;
}

int gl_pgrow_one_i64(const PGresult *r, const char *name, int64_t *out, struct gl_err *err)
{
	const char *v = NULL;
	int rc = one(r, name, &v, err);
	*out = v ? strtoll(v, NULL, 10) : 0;
	return rc;
}

int gl_pgrow_one_bool(const PGresult *r, const char *name, int *out, struct gl_err *err)
{
	const char *v = NULL;
	int rc = one(r, name, &v, err);
	*out = v && v[0] == 't';
	return rc;
}
