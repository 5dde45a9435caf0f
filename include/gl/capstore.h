/* gpuledger — capacity and allocation per step read from the database:
 * capacity from gl_capacity() (sql/010_capacity.sql), allocation from
 * `jobs`, each row settled by the domain's gl_capacity_settle (capacity.h).
 *
 * Ownership: gl_capstore_query() returns an array the caller frees with
 * free(); rows hold no pointers. The store handle is borrowed.
 */
#ifndef GL_CAPSTORE_H
#define GL_CAPSTORE_H

#include "gl/capacity.h"

struct gl_store;

/* Rows for each step x cluster x key (only those with capacity or
 * allocation), ordered by step, cluster, key, settled. cluster may be NULL
 * (all). now_s ends running jobs. */
int gl_capstore_query(struct gl_store *st, const struct gl_window *steps, size_t nsteps, enum gl_capacity_aggregate agg,
		      const char *cluster, int64_t now_s, const struct gl_capacity_observed *obs, struct gl_capacity_row **rows,
		      size_t *nrows, struct gl_err *err) GL_MUSTCHECK;

#endif
