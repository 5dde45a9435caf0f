/* gpuledger — schema migrations: sql/NNN_name.sql embedded at build time,
 * applied in order, each in its own transaction, recorded in schema_migrations.
 *
 * Ownership: gl_migrations is a static table; nothing is allocated for the caller.
 */
#ifndef GL_MIGRATE_H
#define GL_MIGRATE_H

#include "gl/common.h"
#include "gl/config.h"


struct gl_store;

struct gl_migrate_script {
	int version;
	const char *name;
	const char *sql;
};
/* Terminated by version 0. */
extern const struct gl_migrate_script gl_migrations[];

/* Applies what is missing. *applied = number applied now (0 on a second run).
 * Concurrent migrators serialise on an advisory lock. */
int gl_migrate_run(struct gl_store *st, int *applied, struct gl_err *err) GL_MUSTCHECK;
/* Latest applied version (0 when none). */
int gl_migrate_current(struct gl_store *st, int *version, struct gl_err *err) GL_MUSTCHECK;
/* 1 when c's database lacks a migration this build has, or c cannot tell
 * (a role without SELECT on schema_migrations). */
int gl_migrate_pending(struct gl_store *st);

/* What gl_migrate_database did. */
struct gl_migrate_summary {
	int applied, version;
	char owner[64]; /* the role that ran them and owns the schema */
	char app[64];   /* the service's role; equal to owner when one role does both */
	int converted;  /* embedded: an older single-role database was handed to the owner role */
	int hardened;   /* embedded: the audit log was handed to gpuledger_audit now */
	int dblink_moved;  /* embedded: dblink moved into schema gl_dblink now (sql/143) */
	int dblink_public; /* external: dblink is where every role may call it, so unused */
};
/* The whole of `gpuledger migrate` (and serve's start-up migration), in
 * docs/security.md "Two roles": on the embedded cluster the owner role is
 * made sure of and handed an older database (gl_db_owner_takeover); with
 * a migrate DSN, both DSNs must reach the same database (checked before
 * anything changes); the migrations run as the owner role
 * (gl_db_connect_owner); the service's role (the embedded one, or
 * database.dsn's when a migrate DSN is set) is then granted what it uses
 * (gl_app_grant); on the embedded cluster the audit log is hardened. */
int gl_migrate_database(const struct gl_config *cfg, struct gl_migrate_summary *s, struct gl_err *err) GL_MUSTCHECK;

#endif
