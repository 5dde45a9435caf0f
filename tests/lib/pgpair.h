/* gpuledger test support: a real PostgreSQL primary and a streaming hot
 * standby made by pg_basebackup -R, on loopback TCP ports of their own, in
 * a temporary directory (as the postgres OS user when run as root, as `db
 * init` does), with scram passwords. For the read-replica and failover
 * tests (docs/scale.md).
 *
 * Ownership: the struct is the caller's; gl_test_pgpair_stop stops both
 * servers (any left) and removes the directory.
 */
#ifndef GL_PGPAIR_H
#define GL_PGPAIR_H

#include <libpq-fe.h>

struct gl_test_pgpair {
	char dir[256];
	char data[2][300];   /* [0] primary, [1] standby */
	int port[2];
	char password[40];   /* of the superuser and of the app role */
	char su[2][512];     /* superuser DSN of each server */
	char app[2][512];    /* the app role's DSN of each server (database gpuledger) */
	char app_rw[768];    /* both hosts, target_session_attrs=read-write (the daemon's database.dsn) */
	char app_read[768];  /* both hosts, standby first, target_session_attrs=prefer-standby (read_dsn) */
};

/* Starts the primary, makes the app role and database, takes the standby
 * with pg_basebackup -R and starts it. sync: the primary then waits for the
 * standby to apply each commit (synchronous_standby_names '*',
 * synchronous_commit remote_apply), set on the primary alone so a promoted
 * standby does not wait for a standby it lacks. 0 or -1 (said on stderr). */
int gl_test_pgpair_start(struct gl_test_pgpair *p, int sync);
/* Waits until the standby has replayed everything the primary had written
 * when called (at most bound_s). 0 or -1. */
int gl_test_pgpair_catch_up(struct gl_test_pgpair *p, int bound_s);
/* SIGKILL to server i's postmaster and its children (a crash). */
void gl_test_pgpair_kill(struct gl_test_pgpair *p, int i);
/* pg_ctl promote -w of server i. 0 or -1. */
int gl_test_pgpair_promote(struct gl_test_pgpair *p, int i);
void gl_test_pgpair_stop(struct gl_test_pgpair *p);

#endif
