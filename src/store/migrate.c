/* Schema migrations (see include/gl/migrate.h). */
#include "gl/migrate.h"
#include "gl/audit.h"
#include "gl/shard.h"
#include "db_int.h"
#include "gl/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	for (const struct gl_migrate_script *m = gl_migrations; m->version; m++) {
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

int gl_migrate_pending(struct gl_store *st)
{
	struct gl_err err = {0};
	int version = 0, latest = 0;
	for (const struct gl_migrate_script *m = gl_migrations; m->version; m++)
		latest = m->version > latest ? m->version : latest;
	if (gl_migrate_current(st, &version, &err))
		return 1;
	return version < latest;
}

/* Who a connection is, and which database on which server: two DSNs that
 * should meet in one database are compared by this. */
static int whoami(PGconn *c, char role[64], char where[256], struct gl_err *err)
{
	PGresult *r = NULL;
	int rc = gl_db_query(c,
			     "SELECT current_user, current_database() || ' (oid ' || d.oid || ', server up since '"
			     " || pg_postmaster_start_time() || ')' FROM pg_database d WHERE d.datname = current_database()",
			     0, NULL, &r, err);
	if (!rc && PQntuples(r) != 1)
		rc = gl_err_set(err, GL_EDB, "cannot tell which database this is");
	if (!rc) {
		snprintf(role, 64, "%s", PQgetvalue(r, 0, 0));
		if (where)
			snprintf(where, 256, "%s", PQgetvalue(r, 0, 1));
	}
	PQclear(r);
	return rc;
}

/* The service's role: the embedded one; with an external database, the
 * role database.dsn connects as, when a migrate DSN names another. */
static int app_role(const struct gl_config *cfg, PGconn *own, struct gl_migrate_summary *s, struct gl_err *err)
{
	char own_at[256], app_at[256];
	PGconn *app = NULL;
	int rc;
	if ((rc = whoami(own, s->owner, own_at, err)))
		return rc;
	snprintf(s->app, sizeof s->app, "%s", gl_db_is_external(cfg) ? s->owner : GL_DB_ROLE);
	if (!gl_db_is_external(cfg) || !gl_config_migrate_dsn(cfg))
		return 0;
	if ((rc = gl_db_connect(cfg, &app, err)) || (rc = whoami(app, s->app, app_at, err))) {
		gl_err_prefix(err, "the service's role (database.dsn), to grant it what it uses: ");
		goto out;
	}
	if (strcmp(own_at, app_at))
		rc = gl_err_set(err, GL_ECONFIG,
				"the migrate DSN reaches database %s, database.dsn reaches %s: they must name the same "
				"database",
				own_at, app_at);
out:
	PQfinish(app);
	return rc;
}

/* On the embedded cluster we hold the superuser, so the audit log is bound
 * right after migrating: the roles keep only SELECT and INSERT on it
 * (docs/security.md); and dblink goes where only the owner reaches it. An
 * external server needs `audit harden` run once with a superuser DSN. */
static int harden_embedded(const struct gl_config *cfg, struct gl_migrate_summary *s, struct gl_err *err)
{
	PGconn *su = NULL;
	int yes = 0, rc;
	if (gl_db_is_external(cfg))
		return 0;
	if ((rc = gl_db_connect_superuser(cfg, &su, err)) || (rc = gl_audit_hardened(gl_db_store(su), &yes, err)))
		goto out;
	if (!yes && !(rc = gl_audit_harden(gl_db_store(su), err)))
		s->hardened = 1;
	if (!rc)
		rc = gl_shard_dblink_private(gl_db_store(su), &s->dblink_moved, err);
out:
	PQfinish(su);
	return rc;
}

int gl_migrate_database(const struct gl_config *cfg, struct gl_migrate_summary *s, struct gl_err *err)
{
	PGconn *own = NULL;
	PGresult *r = NULL;
	int rc;
	memset(s, 0, sizeof *s);
	if (!gl_db_is_external(cfg) && (rc = gl_db_owner_takeover(cfg, &s->converted, err)))
		goto out;
	/* the two DSNs checked before anything is changed */
	if ((rc = gl_db_connect_owner(cfg, &own, err)) || (rc = app_role(cfg, own, s, err)) ||
	    (rc = gl_migrate_run(gl_db_store(own), &s->applied, err)) ||
	    (rc = gl_migrate_current(gl_db_store(own), &s->version, err)))
		goto out;
	if (strcmp(s->app, s->owner) &&
	    (rc = gl_db_query(own, "SELECT gl_app_grant($1)", 1, (const char *[]){s->app}, &r, err))) {
		gl_err_prefix(err, "migrate: granting the service's role %s: ", s->app);
		goto out;
	}
	if (!(rc = harden_embedded(cfg, s, err)) && gl_db_is_external(cfg))
		rc = gl_shard_dblink_public(gl_db_store(own), &s->dblink_public, err);
out:
	PQclear(r);
	PQfinish(own);
	return rc;
}
