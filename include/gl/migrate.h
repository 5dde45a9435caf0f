/* gpuledger — schema migrations: sql/NNN_name.sql embedded at build time,
 * applied in order, each in its own transaction, recorded in schema_migrations.
 *
 * Ownership: gl_migrations is a static table; nothing is allocated for the caller.
 */
#ifndef GL_MIGRATE_H
#define GL_MIGRATE_H

#include "gl/common.h"


struct gl_store;

struct gl_migration {
	int version;
	const char *name;
	const char *sql;
};
/* Terminated by version 0. */
extern const struct gl_migration gl_migrations[];

/* Applies what is missing. *applied = number applied now (0 on a second run).
 * Concurrent migrators serialise on an advisory lock. */
int gl_migrate_run(struct gl_store *st, int *applied, struct gl_err *err) GL_MUSTCHECK;
/* Latest applied version (0 when none). */
int gl_migrate_current(struct gl_store *st, int *version, struct gl_err *err) GL_MUSTCHECK;

#endif
