/* gpuledger — the daemon's audit anchors (docs/security.md, "Anchors are
 * always checked"). At start and every audit.anchor_interval_s the daemon
 * checks the audit chain's tail against the last anchor of
 * audit.anchor_file (the row of that anchor's sequence number must still
 * have its hash, and every row after it must follow from it); only when
 * that holds does it append the current head there and publish it through
 * audit.anchor_command. A mismatch (a recomputed chain, a truncated table,
 * deleted rows) is logged as an error and shown on /metrics
 * (gpuledger_audit_anchor_mismatch 1, gl_health_anchor_report); no anchor
 * is written over it, so the broken chain never gets a fresh anchor that
 * would make it pass. An anchor is written every interval even when
 * nothing changed: a missing line then means the daemon was down, not that
 * the log was quiet.
 *
 * Ownership: borrows the connection and the config; the state is the
 * caller's (both limiters GL_LOG_LIMITER_INIT).
 */
#ifndef GL_ANCHOR_H
#define GL_ANCHOR_H

#include "gl/audit.h"
#include "gl/common.h"
#include "gl/config.h"
#include "gl/log.h"

struct gl_store;

struct gl_anchor_state {
	struct gl_log_limiter lim;     /* write and publish failures */
	struct gl_log_limiter check;   /* mismatches, logged at most every 10 min while they last */
};

/* One check, then (when it holds) one anchor and its publication. last: the
 * one at a stop (not cancelled; it waits at most 5 s for the database). A
 * config without audit.anchor_file does nothing. */
void gl_anchor_tick(struct gl_store *store, const struct gl_config *cfg, struct gl_anchor_state *st, int64_t now_s, int last);

/* The check alone: *checked 0 when the file has no anchor yet (or does not
 * exist: the daemon's first start); else v says whether the tail holds.
 * -GL_EIO/-GL_EINVAL when the file cannot be read or holds no anchor line
 * although it is not empty. */
int gl_anchor_check(struct gl_store *store, const char *path, int *checked, struct gl_audit_verify *v,
		    struct gl_err *err) GL_MUSTCHECK;

#endif
