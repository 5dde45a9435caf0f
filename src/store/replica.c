/* A standby's replay lag (see include/gl/replica.h). */
#include "gl/replica.h"
#include "db_int.h"

#include <stdlib.h>
#include <string.h>

/* Caught up means everything the WAL receiver got has been replayed: the
 * last replayed commit may be old only because the primary has been quiet.
 * A standby whose receiver is gone (its primary died) has nothing more to
 * replay and reads as caught up: the lag is that of what it was sent. The
 * recovery functions raise an error on a primary, hence the CASEs. */
static const char status_sql[] =
	"SELECT r, coalesce(p, false), CASE WHEN NOT r OR (rcv IS NOT NULL AND rcv = rpl AND NOT p) THEN 0"
	"  ELSE greatest(extract(epoch FROM now() - ts), 0) END,"
	" coalesce(pg_wal_lsn_diff(rcv, rpl), 0)::bigint,"
	" extract(epoch FROM CASE WHEN NOT r OR (rcv IS NOT NULL AND rcv = rpl AND NOT p) THEN now()"
	"  ELSE coalesce(ts, '-infinity') END)"
	" FROM (SELECT pg_is_in_recovery() AS r) x,"
	" LATERAL (SELECT CASE WHEN r THEN pg_last_wal_receive_lsn() END AS rcv,"
	"  CASE WHEN r THEN pg_last_wal_replay_lsn() END AS rpl,"
	"  CASE WHEN r THEN pg_is_wal_replay_paused() END AS p,"
	"  CASE WHEN r THEN pg_last_xact_replay_timestamp() END AS ts) y";

int gl_replica_status(struct gl_store *store, struct gl_replica_status *st, struct gl_err *err)
{
	PGconn *c = gl_db_conn(store);
	PGresult *r = NULL;
	int rc;
	memset(st, 0, sizeof *st);
	if ((rc = gl_db_query(c, status_sql, 0, NULL, &r, err)))
		return rc;
	st->standby = PQgetvalue(r, 0, 0)[0] == 't';
	st->paused = PQgetvalue(r, 0, 1)[0] == 't';
	st->lag_s = atof(PQgetvalue(r, 0, 2));
	st->behind_bytes = atoll(PQgetvalue(r, 0, 3));
	st->data_through_s = atof(PQgetvalue(r, 0, 4));
	PQclear(r);
	return 0;
}
