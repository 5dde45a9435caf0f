/* gpuledger — where a read was answered from: a hot standby's replay lag
 * (docs/scale.md, "Read replicas").
 *
 * Ownership: fills a caller-owned struct; nothing is allocated.
 */
#ifndef GL_REPLICA_H
#define GL_REPLICA_H

#include "gl/common.h"

#include <stdint.h>

struct gl_store;

struct gl_replica_status {
	int standby;           /* the server is in recovery (a hot standby) */
	int paused;            /* its replay is paused (pg_wal_replay_pause) */
	double lag_s;          /* 0 on a primary and on a standby that has replayed all it received;
				* else now() - pg_last_xact_replay_timestamp() */
	int64_t behind_bytes;  /* WAL received but not replayed yet */
	double data_through_s; /* what the answer includes: every commit up to this time
				* (now() when caught up, else the last replayed commit's time) */
};

/* Asks the server the session store is connected to. */
int gl_replica_status(struct gl_store *store, struct gl_replica_status *st, struct gl_err *err) GL_MUSTCHECK;

#endif
