/* Schema migrations (see include/gl/migrate.h). */
#include "gl/migrate.h"
#include "gl/db.h"
#include "gl/log.h"

#include <stdio.h>
#include <stdlib.h>

#define MIGRATE_LOCK_KEY 0x676c6d6967 /* "glmig": serialises concurrent migrators */

int gl_migrate_current(struct gl_store *st, int *version, struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	PGresult *r = NULL;
	int rc;
	*version = 0;
	if ((rc = gl_db_query(c, "SELECT to_regclass('schema_migrations') IS NOT NULL", 0, NULL, &r, err)))
		goto out;
	if (PQgetvalue(r, 0, 0)[0] != 't')
		goto out;
	PQclear(r);
	r = NULL;
	if ((rc = gl_db_query(c, "SELECT coalesce(max(version), 0) FROM schema_migrations", 0, NULL, &r, err)))
		goto out;
	*version = atoi(PQgetvalue(r, 0, 0));
out:
	PQclear(r);
	return rc;
}

int gl_migrate_run(struct gl_store *st, int *applied, struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	PGresult *r = NULL;
	int rc, locked = 0;
	char lock_sql[96];

	*applied = 0;
	snprintf(lock_sql, sizeof lock_sql, "SELECT pg_advisory_lock(%lld)", (long long)MIGRATE_LOCK_KEY);
	if ((rc = gl_db_exec(c, lock_sql, err)))
		goto out;
	locked = 1;
	if ((rc = gl_db_exec(c,
			     "CREATE TABLE IF NOT EXISTS schema_migrations ("
			     " version integer PRIMARY KEY, name text NOT NULL,"
			     " applied_at timestamptz NOT NULL DEFAULT now())",
			     err)))
		goto out;
	for (const struct gl_migration *m = gl_migrations; m->version; m++) {
		char ver[16];
		snprintf(ver, sizeof ver, "%d", m->version);
		if ((rc = gl_db_query(c, "SELECT 1 FROM schema_migrations WHERE version = $1", 1,
				      (const char *[]){ver}, &r, err)))
			goto out;
		int done = PQntuples(r) > 0;
		PQclear(r);
		r = NULL;
		if (done)
			continue;
		/* one transaction per migration: a failure leaves nothing half-applied */
		if ((rc = gl_db_exec(c, "BEGIN", err)))
			goto out;
		if ((rc = gl_db_exec(c, m->sql, err)) ||
		    (rc = gl_db_query(c, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", 2,
				      (const char *[]){ver, m->name}, NULL, err))) {
			gl_err_prefix(err, "migration %s: ", m->name);
			PQclear(PQexec(c, "ROLLBACK"));
			goto out;
		}
		if ((rc = gl_db_exec(c, "COMMIT", err))) {
			gl_err_prefix(err, "migration %s: ", m->name);
			goto out;
		}
		gl_log(GL_LOG_INFO, "migrate: applied %s", m->name);
		(*applied)++;
	}
out:
	PQclear(r);
	if (locked) {
		snprintf(lock_sql, sizeof lock_sql, "SELECT pg_advisory_unlock(%lld)", (long long)MIGRATE_LOCK_KEY);
		PQclear(PQexec(c, lock_sql));
	}
	return rc;
}
