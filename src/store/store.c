/* The store handle (see include/gl/store.h). */
#include "gl/store.h"
#include "db_int.h"

#include <poll.h>
#include <stdio.h>
#include <string.h>

int gl_store_open(const struct gl_config *cfg, struct gl_store **out, struct gl_err *err)
{
	PGconn *c = NULL;
	int rc = gl_db_connect(cfg, &c, err);
	*out = rc ? NULL : gl_db_store(c);
	return rc;
}

int gl_store_open_superuser(const struct gl_config *cfg, struct gl_store **out, struct gl_err *err)
{
	PGconn *c = NULL;
	int rc = gl_db_connect_superuser(cfg, &c, err);
	*out = rc ? NULL : gl_db_store(c);
	return rc;
}

void gl_store_close(struct gl_store *st)
{
	PQfinish(gl_db_conn(st));
}

int gl_store_ping(struct gl_store *st, struct gl_err *err)
{
	return gl_db_query(gl_db_conn(st), "SELECT 1", 0, NULL, NULL, err);
}

int gl_store_revive(struct gl_store *st, struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	return PQstatus(c) == CONNECTION_OK ? 0 : gl_db_reset(c, err);
}

int gl_store_up(struct gl_store *st)
{
	return PQstatus(gl_db_conn(st)) == CONNECTION_OK;
}

int gl_store_rollback_open(struct gl_store *st, struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	PGTransactionStatusType t = PQtransactionStatus(c);
	int rc;
	if (t != PQTRANS_INTRANS && t != PQTRANS_INERROR)
		return 0;
	rc = gl_db_exec(c, "ROLLBACK", err);
	return rc ? rc : 1;
}

int gl_store_statement_timeout(struct gl_store *st, const char *timeout, struct gl_err *err)
{
	char sql[64];
	/* SET takes no parameters: the value is ours, never a user's */
	snprintf(sql, sizeof sql, "SET statement_timeout = '%s'", timeout);
	return gl_db_exec(gl_db_conn(st), sql, err);
}

/* 1 when the server behind an idle cached connection has gone (a restart):
 * libpq only notices on the next query, which would fail that request. An
 * idle session is sent nothing unasked but the server's goodbye (FATAL on
 * shutdown) and EOF, so a readable socket means it is gone. */
static int conn_lost(PGconn *c)
{
	struct pollfd p = {.fd = PQsocket(c), .events = POLLIN};
	if (PQstatus(c) != CONNECTION_OK || p.fd < 0)
		return 1;
	if (PQtransactionStatus(c) != PQTRANS_IDLE)
		return 0;
	return poll(&p, 1, 0) > 0;
}

int gl_store_thread(pthread_key_t key, const char *dsn, int64_t stmt_ms, struct gl_store **out, int *freshp,
		    struct gl_err *err)
{
	PGconn *c = gl_db_conn(pthread_getspecific(key));
	int rc, fresh = 0;
	if (c && conn_lost(c)) {
		struct gl_err rerr = {0};
		if (gl_db_reset(c, &rerr)) {
			PQfinish(c);
			c = NULL;
			pthread_setspecific(key, NULL);
		} else {
			fresh = 1;
		}
	}
	if (!c) {
		if ((rc = gl_db_connect_dsn(dsn, &c, err)))
			return rc;
		pthread_setspecific(key, gl_db_store(c));
		fresh = 1;
	}
	/* a new session starts from the server's defaults: no statement of a
	 * request may run past its bound */
	if (fresh && stmt_ms > 0 && (rc = gl_db_set_statement_timeout(c, stmt_ms, err)))
		return rc;
	if (freshp)
		*freshp = fresh;
	*out = gl_db_store(c);
	return 0;
}

void gl_store_thread_close(void *p)
{
	gl_store_close(p);
}

int gl_store_dsn_check(const char *dsn, struct gl_err *err)
{
	char *why = NULL;
	PQconninfoOption *o = PQconninfoParse(dsn, &why);
	int rc = 0;
	if (!o)
		rc = gl_err_set(err, GL_ECONFIG, "%s", why ? strtok(why, "\n") : "not a connection string");
	PQconninfoFree(o);
	PQfreemem(why);
	return rc;
}
