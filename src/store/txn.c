/* Transaction statements (see include/gl/txn.h). */
#include "gl/txn.h"
#include "gl/db.h"

int gl_txn_begin(PGconn *c, struct gl_err *err)
{
	return gl_db_exec(c, "BEGIN", err);
}

int gl_txn_commit(PGconn *c, struct gl_err *err)
{
	return gl_db_exec(c, "COMMIT", err);
}

void gl_txn_rollback(PGconn *c)
{
	PQclear(PQexec(c, "ROLLBACK"));
}
