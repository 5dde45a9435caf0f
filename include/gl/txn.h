/* gpuledger — transaction statements for the code that drives a batch
 * (ingest/): BEGIN, COMMIT and ROLLBACK on the caller's store session, so that
 * no SQL text lives outside store/. The batch's own statements are the
 * store modules' (store/jobs, store/ingest, store/dcgmstore, ...).
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

#endif
