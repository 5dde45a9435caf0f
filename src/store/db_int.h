/* gpuledger — the PGconn under a store handle, for src/store/ alone (and
 * the tests and benchmarks that drive the database directly): connecting,
 * statements, COPY. Everything else holds the opaque struct gl_store
 * (include/gl/store.h) and calls the store's typed functions.
 *
 * Ownership: gl_db_connect*() return a PGconn the caller closes with
 * PQfinish(). Every PGresult obtained through these helpers is the caller's
 * to PQclear() unless stated otherwise.
 */
#ifndef GL_DB_INT_H
#define GL_DB_INT_H

#include "gl/db.h"

#include <libpq-fe.h>
#include <stdint.h>

/* The connection behind a store handle (include/gl/store.h) and the handle
 * of a connection: one object under two names, the second the one that
 * leaves src/store/. */
struct gl_store;
static inline PGconn *gl_db_conn(struct gl_store *st)
{
	return (PGconn *)st;
}
static inline struct gl_store *gl_db_store(PGconn *c)
{
	return (struct gl_store *)c;
}

int gl_db_connect(const struct gl_config *cfg, PGconn **out, struct gl_err *err) GL_MUSTCHECK;
/* The same through gl_db_owner_dsn (migrations). */
int gl_db_connect_owner(const struct gl_config *cfg, PGconn **out, struct gl_err *err) GL_MUSTCHECK;
/* The cluster superuser on the embedded cluster's gpuledger database;
 * -GL_ECONFIG with an external DSN (we hold no superuser there). */
int gl_db_connect_superuser(const struct gl_config *cfg, PGconn **out, struct gl_err *err) GL_MUSTCHECK;
int gl_db_connect_dsn(const char *dsn, PGconn **out, struct gl_err *err) GL_MUSTCHECK;
/* PQreset, then the session settings every connection gets (a reset is a
 * new backend without them). With a DSN listing several hosts and
 * target_session_attrs=read-write, the reset finds the promoted standby
 * after a failover. */
int gl_db_reset(PGconn *c, struct gl_err *err) GL_MUSTCHECK;
/* SET statement_timeout for the session (0 = none). */
int gl_db_set_statement_timeout(PGconn *c, int64_t ms, struct gl_err *err) GL_MUSTCHECK;

/* Runs a statement without parameters (DDL, BEGIN/COMMIT). */
int gl_db_exec(PGconn *c, const char *sql, struct gl_err *err) GL_MUSTCHECK;
/* PQexecParams with text parameters; *res set on success (PGRES_COMMAND_OK or
 * PGRES_TUPLES_OK), NULL on failure. res may be NULL to discard. */
int gl_db_query(PGconn *c, const char *sql, int nparams, const char *const *params, PGresult **res,
		struct gl_err *err) GL_MUSTCHECK;
/* A failed statement's error (r, or the connection's when r is NULL) into
 * err, prefixed with what, as gl_db_query() reports it; the SQLSTATE is
 * then gl_db_last_sqlstate()'s. Returns the error code. */
int gl_db_fail(PGconn *c, PGresult *r, const char *what, struct gl_err *err);
/* Streams data through COPY ... FROM STDIN already started by copy_sql. */
int gl_db_copy_in(PGconn *c, const char *copy_sql, const char *data, size_t len, struct gl_err *err) GL_MUSTCHECK;

/* Runs copy_sql (a `COPY (...) TO STDOUT (FORMAT binary)`) and calls fn once
 * per row; a row of another width than nfields, a malformed message or a
 * non-zero fn ends it with that error (the rest of the stream is read and
 * dropped so the connection stays usable). Parameters go in beforehand
 * (COPY takes none), e.g. by set_config() in the same transaction. */
int gl_db_copy_out_binary(PGconn *c, const char *copy_sql, int nfields, gl_db_row_fn fn, void *ctx,
			  struct gl_err *err) GL_MUSTCHECK;

#endif
