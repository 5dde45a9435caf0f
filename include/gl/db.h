/* gpuledger — database access: the embedded PostgreSQL cluster (db
 * init/start/stop/status) and connections.
 *
 * No libpq here: code outside src/store/ holds a session as the opaque
 * struct gl_store (include/gl/store.h); the connection helpers on the
 * PGconn itself are src/store/'s own (src/store/db_int.h).
 *
 * Ownership: nothing here allocates for the caller; paths and DSNs go to
 * caller-owned buffers.
 */
#ifndef GL_DB_H
#define GL_DB_H

#include "gl/common.h"
#include "gl/config.h"

#include <limits.h>
#include <stdint.h>

struct gl_db_paths {
	char configured[PATH_MAX]; /* absolute database.embedded_dir */
	char base[PATH_MAX];    /* where the cluster lives: configured, or GL_DB_RELOCATE_ROOT/<hash> */
	char datadir[PATH_MAX]; /* base/pg */
	char sockdir[PATH_MAX]; /* base/run, or a short /run or /tmp path when that is too long for a socket */
	char logfile[PATH_MAX]; /* base/log/postgresql.log */
	char passfile[PATH_MAX]; /* base/pgpass: the roles' generated passwords (libpq passfile, 0600) */
	int relocated;          /* 1: configured is not reachable by the cluster's OS user */
};

#define GL_DB_EMBEDDED_PORT 5432 /* only names the socket file: TCP is off */
#define GL_DB_NAME "gpuledger"
/* The application role: what serve, ingest, hook, report, token ... connect
 * as; it owns nothing (docs/security.md, "Two roles"). */
#define GL_DB_ROLE "gpuledger"
/* The owner role: owns the database and the schema, runs the migrations. */
#define GL_DB_OWNER "gpuledger_owner"
/* Run as root, the cluster runs as this OS user (initdb refuses root). */
#define GL_DB_OS_USER "postgres"
#define GL_DB_SUPERUSER "postgres"
/* Where a root-run cluster lives when database.embedded_dir is not
 * reachable by GL_DB_OS_USER (a clone in root's 0700 home). */
#define GL_DB_RELOCATE_ROOT "/var/lib/gpuledger"

/* 1 when an external DSN is configured (GPULEDGER_DSN or database.dsn). */
int gl_db_is_external(const struct gl_config *cfg);
/* The embedded cluster's paths. As root, a configured directory that the
 * cluster's OS user cannot reach (a parent without search permission for
 * it) and that holds no cluster yet moves the whole cluster to
 * GL_DB_RELOCATE_ROOT/<16 hex digits of a hash of the configured path>;
 * one already there stays there (p->relocated says which). */
int gl_db_paths(const struct gl_config *cfg, struct gl_db_paths *p, struct gl_err *err) GL_MUSTCHECK;
/* The DSN to use: external if configured, else the embedded socket as the
 * application role with its passfile. */
int gl_db_dsn(const struct gl_config *cfg, char *buf, size_t n, struct gl_err *err) GL_MUSTCHECK;
/* The DSN migrations run through: the embedded socket as the owner role;
 * with an external database the migrate DSN (GPULEDGER_MIGRATE_DSN,
 * database.migrate_dsn), else the DSN itself. A migrate DSN without an
 * external DSN is -GL_ECONFIG: the embedded cluster has its owner role. */
int gl_db_owner_dsn(const struct gl_config *cfg, char *buf, size_t n, struct gl_err *err) GL_MUSTCHECK;

/* Embedded cluster control (docs/security.md, "The embedded cluster").
 * init is idempotent (an initialised cluster is left alone): initdb with
 * scram-sha-256 for every local connection and generated passwords in
 * p->passfile. start also creates the owner and application roles (LOGIN,
 * not superusers) and the database, owned by the owner role, when
 * missing, sets the roles' passwords from the passfile, makes base and the socket directory 0700 for the
 * cluster's OS user, and upgrades a cluster made with trust (older
 * gpuledger): passwords generated, pg_hba.conf rewritten, reloaded. */
int gl_db_init(const struct gl_config *cfg, struct gl_err *err) GL_MUSTCHECK;
int gl_db_start(const struct gl_config *cfg, struct gl_err *err) GL_MUSTCHECK;
int gl_db_stop(const struct gl_config *cfg, struct gl_err *err) GL_MUSTCHECK;
/* *running = 1 when the server answers on its socket. */
int gl_db_status(const struct gl_config *cfg, int *running, struct gl_err *err) GL_MUSTCHECK;

/* Embedded cluster only, through the superuser: the owner and application
 * roles exist with the passfile's passwords (a passfile from before the
 * owner role gets its line), and the owner role, not the application
 * role, owns the database and everything in it. A database an older
 * gpuledger made (owned by the application role) is handed over with
 * REASSIGN OWNED (*converted = 1, a WARN line); the application role's
 * privileges are then gl_app_grant's (migrate). Idempotent. */
int gl_db_owner_takeover(const struct gl_config *cfg, int *converted, struct gl_err *err) GL_MUSTCHECK;

/* A CLI command (not the daemon) calls this once, before any connection:
 * every connection made afterwards through gl_db_connect*() (src/store/) registers
 * with the stop watcher (gl/dbcancel.h, group GL_DBCANCEL_WORK) until
 * PQfinish, so a SIGTERM/SIGINT that requests the stop cancels whatever
 * statement it runs. */
void gl_db_cancel_on_stop(void);

/* The SQLSTATE of the calling thread's last failed statement ("" when
 * none since gl_db_clear_sqlstate): "57014" for a statement_timeout (or a
 * cancel). */
const char *gl_db_last_sqlstate(void);
void gl_db_clear_sqlstate(void);
/* The daemon's sessions (call once at start, before any thread connects):
 * every connection made or reset from then on sets gpuledger.instance
 * (ingest_runs.instance, sql/055) and idle_in_transaction_session_timeout
 * to idle_in_txn_timeout_s (0 = none). */
void gl_db_set_session(const char *instance, int64_t idle_in_txn_timeout_s);
/* The SQLSTATE of a commit refused by sql/055's fence (another instance
 * holds the lease): gl_db_sqlstate_code maps it to GL_EBUSY. */
#define GL_DB_SQLSTATE_FENCED "GLF01"
/* GL_EDB for a SQLSTATE that says the database is unavailable now (none at
 * all, classes 08 53 57 40 58, 55P03): a retry may succeed. GL_EBUSY for
 * GL_DB_SQLSTATE_FENCED. GL_EINTERNAL for any other failed statement. */
int gl_db_sqlstate_code(const char *state);

/* One field of a binary COPY row: len bytes at p in network order, len -1
 * for NULL. Borrowed from the row message: valid during the callback. */
struct gl_db_field {
	const char *p;
	int32_t len;
};
typedef int (*gl_db_row_fn)(void *ctx, const struct gl_db_field *f, int n, struct gl_err *err);
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
