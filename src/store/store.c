/* The store handle (see include/gl/store.h). */
#include "gl/store.h"
#include "gl/db.h"

#include <stdio.h>

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
