/* gpuledger — statements planned once per session (src/store/ alone).
 *
 * On a central database of shards (docs/scale.md) planning a query over
 * the shards' foreign partitions costs more than running it: the fleet
 * idle query planned for 20 ms a request and ran in 8. A session marked
 * with gl_plancache_enable() prepares such a statement once, under a name
 * made from its text, and runs it with a generic plan from then on
 * (plan_cache_mode set for that statement alone: every other statement of
 * the session keeps its custom plans). Unmarked sessions (one database)
 * run it as gl_db_query() does.
 *
 * Inside a read transaction (gl_txn_read_begin: one snapshot for the
 * request) a marked session also keeps each answer it gave, by statement
 * and parameters, and gives it again without asking: a request reads the
 * built days twice (the chargeback's plan and the idle's), each a remote
 * query on every shard. So only statements whose answer the snapshot and
 * the parameters decide go through here (no clock_timestamp(), no
 * random()); the answers are dropped when the transaction ends.
 *
 * The mark and the names are the calling thread's, for one connection
 * (the API threads' sessions are per thread); a reset connection (a new
 * backend) is noticed by its pid and prepares again.
 */
#ifndef GL_PLANCACHE_INT_H
#define GL_PLANCACHE_INT_H

#include "db_int.h"

/* Statements kept prepared per session at most; past it, gl_db_query(). */
#define GL_PLANCACHE_MAX 64

/* Answers kept per read transaction at most; past it, asked again. */
#define GL_PLANCACHE_MEMO 16

/* Marks c (on) or unmarks it (off) for this thread. */
void gl_plancache_enable(PGconn *c, int on);
/* 1 when c is marked for this thread: a session routed to the shards
 * (gl_shard_use marks it). */
int gl_plancache_marked(PGconn *c);
/* A read transaction opened (open 1) or ended (0) on c: answers kept from
 * the open one to its end, on a marked session. */
void gl_plancache_read_txn(PGconn *c, int open);
/* gl_db_query(), with a generic plan prepared once on a marked session. */
int gl_plancache_query(PGconn *c, const char *sql, int nparams, const char *const *params, PGresult **res,
		       struct gl_err *err) GL_MUSTCHECK;
/* Keeps a copy of r as the answer of sql with params for the rest of the
 * read transaction, as if c had been asked it (r stays the caller's): for
 * answers got another way, e.g. several statements' answers asked of the
 * shards in one query. 1 when kept: a marked session in a read
 * transaction, room left. */
int gl_plancache_seed(PGconn *c, const char *sql, int nparams, const char *const *params, const PGresult *r);
/* 1 when gl_plancache_seed() on c would keep an answer (room aside). */
int gl_plancache_seeding(PGconn *c);
/* gl_db_query(), with a generic plan prepared once on any session that is
 * not marked (a marked one runs it as gl_db_query() does): for a statement
 * whose custom planning costs more than its generic plan loses. The
 * names are the calling thread's, for the last connection it used so
 * (the list starts again on another connection or a new backend). Keeps
 * no answer. */
int gl_plancache_query_generic(PGconn *c, const char *sql, int nparams, const char *const *params, PGresult **res,
			       struct gl_err *err) GL_MUSTCHECK;

#endif
