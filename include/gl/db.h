/* gpuledger — database access: the embedded PostgreSQL cluster (db
 * init/start/stop/status) and connections.
 *
 * Ownership: gl_db_connect() returns a PGconn the caller closes with
 * PQfinish(). Every PGresult obtained through these helpers is the caller's
 * to PQclear() unless stated otherwise.
 */
#ifndef GL_DB_H
#define GL_DB_H

#include "gl/common.h"
#include "gl/config.h"

#include <libpq-fe.h>
#include <limits.h>
#include <stdint.h>

struct gl_db_paths {
	char base[PATH_MAX];    /* absolute embedded_dir */
	char datadir[PATH_MAX]; /* base/pg */
	char sockdir[PATH_MAX]; /* base/run, or a short /tmp path when that is too long for a socket */
	char logfile[PATH_MAX]; /* base/pg.log */
};

/* The connection behind a store handle (include/gl/store.h) and the handle
 * of a connection: one object under two names, the second for code outside
 * src/store/. */
struct gl_store;
static inline PGconn *gl_db_conn(struct gl_store *st)
{
	return (PGconn *)st;
}
static inline struct gl_store *gl_db_store(PGconn *c)
{
	return (struct gl_store *)c;
}

#define GL_DB_EMBEDDED_PORT 5432 /* only names the socket file: TCP is off */
#define GL_DB_NAME "gpuledger"
#define GL_DB_ROLE "gpuledger"

/* 1 when an external DSN is configured (GPULEDGER_DSN or database.dsn). */
int gl_db_is_external(const struct gl_config *cfg);
int gl_db_paths(const struct gl_config *cfg, struct gl_db_paths *p, struct gl_err *err) GL_MUSTCHECK;
/* The DSN to use: external if configured, else the embedded socket. */
int gl_db_dsn(const struct gl_config *cfg, char *buf, size_t n, struct gl_err *err) GL_MUSTCHECK;

/* Embedded cluster control. init is idempotent (an initialised cluster is left
 * alone); start also creates the gpuledger role and database when missing. */
int gl_db_init(const struct gl_config *cfg, struct gl_err *err) GL_MUSTCHECK;
int gl_db_start(const struct gl_config *cfg, struct gl_err *err) GL_MUSTCHECK;
int gl_db_stop(const struct gl_config *cfg, struct gl_err *err) GL_MUSTCHECK;
/* *running = 1 when the server answers on its socket. */
int gl_db_status(const struct gl_config *cfg, int *running, struct gl_err *err) GL_MUSTCHECK;

int gl_db_connect(const struct gl_config *cfg, PGconn **out, struct gl_err *err) GL_MUSTCHECK;
/* The cluster superuser on the embedded cluster's gpuledger database;
 * -GL_ECONFIG with an external DSN (we hold no superuser there). */
int gl_db_connect_superuser(const struct gl_config *cfg, PGconn **out, struct gl_err *err) GL_MUSTCHECK;
int gl_db_connect_dsn(const char *dsn, PGconn **out, struct gl_err *err) GL_MUSTCHECK;
/* GL_EDB for a SQLSTATE that says the database is unavailable now (none at
 * all, classes 08 53 57 40 58, 55P03): a retry may succeed. GL_EINTERNAL
 * for any other failed statement. */
int gl_db_sqlstate_code(const char *state);

/* Runs a statement without parameters (DDL, BEGIN/COMMIT). */
int gl_db_exec(PGconn *c, const char *sql, struct gl_err *err) GL_MUSTCHECK;
/* PQexecParams with text parameters; *res set on success (PGRES_COMMAND_OK or
 * PGRES_TUPLES_OK), NULL on failure. res may be NULL to discard. */
int gl_db_query(PGconn *c, const char *sql, int nparams, const char *const *params, PGresult **res,
		struct gl_err *err) GL_MUSTCHECK;
/* Streams data through COPY ... FROM STDIN already started by copy_sql. */
int gl_db_copy_in(PGconn *c, const char *copy_sql, const char *data, size_t len, struct gl_err *err) GL_MUSTCHECK;

/* One field of a binary COPY row: len bytes at p in network order, len -1
 * for NULL. Borrowed from the row message: valid during the callback. */
struct gl_db_field {
	const char *p;
	int32_t len;
};
typedef int (*gl_db_row_fn)(void *ctx, const struct gl_db_field *f, int n, struct gl_err *err);
/* Runs copy_sql (a `COPY (...) TO STDOUT (FORMAT binary)`) and calls fn once
 * per row; a row of another width than nfields, a malformed message or a
 * non-zero fn ends it with that error (the rest of the stream is read and
 * dropped so the connection stays usable). Parameters go in beforehand
 * (COPY takes none), e.g. by set_config() in the same transaction. */
int gl_db_copy_out_binary(PGconn *c, const char *copy_sql, int nfields, gl_db_row_fn fn, void *ctx,
			  struct gl_err *err) GL_MUSTCHECK;
/* Pure: decodes one binary-COPY message (a row, optionally preceded by the
 * file header when *header is 0, which it then sets) into f[max]. Returns
 * the field count, 0 for the trailer, -2 for a header alone, -1 when
 * malformed. */
int gl_db_copy_decode(const char *p, size_t len, int *header, struct gl_db_field *f, int max);
/* Field values: int8/int4/bool by their width, timestamptz as Unix
 * microseconds (INT64_MIN / INT64_MAX for -infinity / infinity). */
int64_t gl_db_field_int(const struct gl_db_field *f);
int64_t gl_db_field_ts_us(const struct gl_db_field *f);

#endif
