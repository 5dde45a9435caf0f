/* gpuledger — query results into typed rows, for src/store/ only: each
 * query's columns are named in its SELECT and read by those names through
 * one table of fields per row struct, never by position, so adding a
 * column to a query cannot shift what another is read as.
 *
 * Ownership: gl_pgrow_decode() allocates the rows (free()) and one block
 * holding every string they point to (free()); both the caller's.
 */
#ifndef GL_PGROW_H
#define GL_PGROW_H

#include "gl/common.h"

#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

enum gl_pgrow_type {
	GL_PGROW_STR,  /* char *, NULL for SQL NULL */
	GL_PGROW_I64,  /* int64_t (bigint, integer, a numeric without fraction) */
	GL_PGROW_F64,  /* double (as strtod reads the database's text: exactly) */
	GL_PGROW_BOOL, /* int, 1 for 't' */
	GL_PGROW_TIME, /* int64_t epoch seconds (a bigint column), GL_TIME_NONE for SQL NULL */
};

struct gl_pgrow_field {
	const char *name; /* the column's name in the result */
	enum gl_pgrow_type type;
	size_t off;       /* offsetof the member in the row struct */
	/* offsetof an int member set to 1 when the value is SQL NULL, or
	 * GL_PGROW_NO_NULL: a NULL reads as 0 (or NULL / GL_TIME_NONE) */
	size_t null_off;
};
#define GL_PGROW_NO_NULL ((size_t)-1)
/* A field of struct S: member m of type t, null flag member nm or none. */
#define GL_PGROW(S, t, m) {#m, GL_PGROW_##t, offsetof(S, m), GL_PGROW_NO_NULL}
#define GL_PGROW_N(S, t, m, nm) {#m, GL_PGROW_##t, offsetof(S, m), offsetof(S, nm)}

/* Every row of r as an array of *n structs of size bytes (n + 1
 * allocated, zeroed), each field read from the column of its name.
 * -GL_EINTERNAL naming the field when r has no such column. */
int gl_pgrow_decode(const PGresult *r, const struct gl_pgrow_field *f, size_t nf, size_t size, void **rows,
		    size_t *n, char **text, struct gl_err *err) GL_MUSTCHECK;

/* gl_db_query (params text, NULL for SQL NULL) then gl_pgrow_decode: the
 * rows of one statement, each decoded as above. */
int gl_pgrow_query(PGconn *c, const char *sql, int np, const char *const *params, const struct gl_pgrow_field *f,
		   size_t nf, size_t size, void **rows, size_t *n, char **text, struct gl_err *err) GL_MUSTCHECK;

/* One column of a one-row result by name: int64 (0 when NULL), or 1 for
 * 't'. -GL_EINTERNAL when r has no row or no such column. */
int gl_pgrow_one_i64(const PGresult *r, const char *name, int64_t *out, struct gl_err *err) GL_MUSTCHECK;
int gl_pgrow_one_bool(const PGresult *r, const char *name, int *out, struct gl_err *err) GL_MUSTCHECK;

#endif
