/* gpuledger — transaction statements for the code that drives a batch
 * (ingest/): BEGIN, COMMIT and ROLLBACK on the caller's store session, so that
 * no SQL text lives outside store/. The batch's own statements are the
 * store modules' (store/jobs, store/ingest, store/dcgmstore, ...). And the
 * read transaction the API opens around a read-only request on a central
 * database of shards (gl_txn_read_begin).
 *
 * Ownership: nothing is allocated; the session is borrowed.
 */
#ifndef GL_TXN_H
#define GL_TXN_H

#include "gl/common.h"

struct gl_store;

int gl_txn_begin(struct gl_store *st, struct gl_err *err) GL_MUSTCHECK;
int gl_txn_commit(struct gl_store *st, struct gl_err *err) GL_MUSTCHECK;
/* Ends the open transaction, failed or not, with nothing kept; its own
 * failure (a connection already gone) is ignored: there is nothing to undo. */
void gl_txn_rollback(struct gl_store *st);

/* A read-only request's statements in one transaction, one snapshot
 * (REPEATABLE READ READ ONLY): on a central database of shards
 * (docs/scale.md) postgres_fdw then opens one remote transaction on each
 * shard for the whole request, not one for each statement. A store module
 * that opens a transaction of its own reads in this one when it is open
 * (showback's jobs). */
int gl_txn_read_begin(struct gl_store *st, struct gl_err *err) GL_MUSTCHECK;
/* Ends it: committed when sound, rolled back when a statement failed in
 * it, and nothing when none is open (the session was reset meanwhile). */
void gl_txn_read_end(struct gl_store *st);

#endif
