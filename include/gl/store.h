/* gpuledger — the database as code outside src/store/ holds it: an opaque
 * session handle, so nothing outside src/store/ names libpq. Route handlers
 * get theirs from the server (gl_req_store, include/gl/server.h), commands
 * open one; both pass it to the store functions that fill typed rows.
 *
 * A handle is a connection under another name: src/store/ reaches the
 * PGconn with gl_db_conn() (src/store/db_int.h, its private header).
 *
 * Ownership: gl_store_open() returns a handle the caller closes with
 * gl_store_close() (NULL is a no-op); a request's handle is the server's.
 */
#ifndef GL_STORE_H
#define GL_STORE_H

#include "gl/common.h"
#include "gl/config.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

struct gl_store;

/* The configured database as the service role (database.dsn or the
 * embedded cluster), or as the embedded cluster's superuser (-GL_ECONFIG
 * with an external DSN: we hold no superuser there). */
int gl_store_open(const struct gl_config *cfg, struct gl_store **out, struct gl_err *err) GL_MUSTCHECK;
int gl_store_open_superuser(const struct gl_config *cfg, struct gl_store **out, struct gl_err *err) GL_MUSTCHECK;
void gl_store_close(struct gl_store *st);

/* 0 when the database answers a trivial statement. */
int gl_store_ping(struct gl_store *st, struct gl_err *err) GL_MUSTCHECK;
/* Reconnects a session whose connection broke (a restarted server, a
 * failover): a long-lived session calls it before each unit of work. 0
 * when the session is up (again, with its settings: gl_db_reset), else
 * -GL_EDB with err set. */
int gl_store_revive(struct gl_store *st, struct gl_err *err) GL_MUSTCHECK;
/* 1 while the session's connection is up. */
int gl_store_up(struct gl_store *st);
/* Rolls back the transaction a failed unit of work left open (a cancel
 * lands anywhere): 1 when there was one, 0 when none; negative (err set)
 * when the rollback failed. */
int gl_store_rollback_open(struct gl_store *st, struct gl_err *err);
/* A thread's own session to dsn, kept under key (created with
 * gl_store_thread_close as its destructor, or a destructor that calls it):
 * opened on first use, reopened when the server behind an idle one has
 * gone (a restart), so a request never fails on a dead cached session. A
 * new session gets statement_timeout stmt_ms again (0: the server's). *fresh
 * (may be NULL): 1 when the session is new. The handle stays the key's. */
int gl_store_thread(pthread_key_t key, const char *dsn, int64_t stmt_ms, struct gl_store **out, int *fresh,
		    struct gl_err *err) GL_MUSTCHECK;
/* The key's destructor: closes the thread's session (p: a struct gl_store). */
void gl_store_thread_close(void *p);
/* 0 when dsn parses as a connection string, else -GL_ECONFIG with the
 * reason in err (no connection is made). */
int gl_store_dsn_check(const char *dsn, struct gl_err *err) GL_MUSTCHECK;
/* A statement timeout for the rest of the session ("5s"). */
int gl_store_statement_timeout(struct gl_store *st, const char *timeout, struct gl_err *err) GL_MUSTCHECK;

#endif
