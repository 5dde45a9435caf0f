/* Transaction statements (see include/gl/txn.h). */
#include "gl/txn.h"
#include "db_int.h"
#include "plancache_int.h"

int gl_txn_begin(struct gl_store *store, struct gl_err *err)
{
	PGconn *c = gl_db_conn(store);
	return gl_db_exec(c, "BEGIN", err);
}

int gl_txn_commit(struct gl_store *store, struct gl_err *err)
{
	PGconn *c = gl_db_conn(store);
	return gl_db_exec(c, "COMMIT", err);
}

void gl_txn_rollback(struct gl_store *store)
{
	PGconn *c = gl_db_conn(store);
	PQclear(PQexec(c, "ROLLBACK"));
}

int gl_txn_read_begin(struct gl_store *store, struct gl_err *err)
{
	PGconn *c = gl_db_conn(store);
	int rc = gl_db_exec(c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", err);
	gl_plancache_read_txn(c, !rc);
	return rc;
}

void gl_txn_read_end(struct gl_store *store)
{
	PGconn *c = gl_db_conn(store);
	gl_plancache_read_txn(c, 0);
	switch (PQtransactionStatus(c)) {
	case PQTRANS_INTRANS:
		/* nothing was written: a failed COMMIT loses nothing, and the
		 * next statement finds the session as it is */
		PQclear(PQexec(c, "COMMIT"));
		break;
	case PQTRANS_INERROR:
		PQclear(PQexec(c, "ROLLBACK"));
		break;
	default:
		break;
	}
}
