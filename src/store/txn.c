/* Transaction statements (see include/gl/txn.h). */
#include "gl/txn.h"
#include "db_int.h"

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
