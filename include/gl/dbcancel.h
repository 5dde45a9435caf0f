/* gpuledger — cancelling the database work in flight when the daemon stops.
 *
 * A thread blocked in libpq (a statement waiting on a lock another session
 * holds, a long query, a COPY) cannot look at a stop flag: only a cancel
 * request sent to the server ends the wait. Work that a stop may cut short
 * registers its connection for its duration (gl_dbcancel_begin/end); the
 * stop (gl_dbcancel_request, from the signal handler) wakes a watcher
 * thread that sends PQcancel for every registered connection of the
 * groups stopped, and again
 * every GL_DBCANCEL_RETRY_MS for as long as one stays registered: the first
 * request may reach the server between two statements, where it is
 * ignored, and the work may start another one before it notices the stop.
 * A cancelled statement fails (SQLSTATE 57014) and its transaction rolls
 * back like any failed one.
 *
 * PQcancel is sent from a short-lived thread the watcher starts, not from
 * the signal handler nor the watcher itself: libpq 15's PQcancel has no
 * timeout, and a server that takes the cancel connection and never
 * answers would hold whoever called it for ever. The watcher only waits
 * on its own lock, so registering and ending work never waits on a cancel
 * request; the cancel key is shared by the slot and its sender and freed
 * by whichever lets go of it last. A cancel request still unanswered after
 * GL_DBCANCEL_GIVEUP_MS means the server does not act on it: the watcher
 * then shuts the work's connection down (shutdown(2) on its socket), which
 * ends the owner's wait in libpq with a connection error; what it had not
 * committed dies with the backend, as after a crash. The stop is then
 * bounded by the give-up, not by the server.
 *
 * Ownership: all state is process-wide and internal, except the slots: a
 * slot is the caller's (stack or thread storage, zeroed before its first
 * begin: `struct gl_dbcancel_slot s = {0}`), and the connection is
 * borrowed from begin to end. A slot must be ended before its storage goes
 * away and before its connection is reset or closed (a reset gets a new
 * backend, which the old cancel key would not reach).
 */
#ifndef GL_DBCANCEL_H
#define GL_DBCANCEL_H

#include "gl/common.h"

#include <stdint.h>

#define GL_DBCANCEL_RETRY_MS 1000
/* a cancel request unanswered this long: the connection is shut down */
#define GL_DBCANCEL_GIVEUP_MS 5000

/* What a stop request covers: the daemon's scheduled work is cancelled as
 * soon as the signal comes; HTTP requests only when the server itself
 * stops, so the ones that finish meanwhile are still answered. */
enum gl_dbcancel_group {
	GL_DBCANCEL_WORK = 1,     /* ingest, rollup, forecast refresh, reports, budgets */
	GL_DBCANCEL_REQUESTS = 2, /* HTTP requests */
	GL_DBCANCEL_AUDIT = 4,    /* the audit writer's drain, once its grace at stop is over */
};

struct gl_dbcancel_key; /* internal: the cancel key, shared with a sender thread */

struct gl_dbcancel_slot {
	struct gl_dbcancel_key *key; /* NULL when libpq could not make one (no connection) */
	char what[96];            /* for the log: "sacct:testgpu", "GET /v1/jobs" */
	int backend_pid;
	int sock;                 /* the connection's socket, for the give-up; -1 if none */
	int group;                /* enum gl_dbcancel_group */
	int active;               /* between begin and end */
	int n_sent;               /* cancel requests sent for this registration (none without a key) */
	int no_key_warned;        /* the stop found no key to send: logged once */
	int shut;                 /* the give-up shut its connection down */
	int64_t last_sent_ms;
	int64_t hold_until_ms;    /* gl_dbcancel_defer: no cancel before */
	struct gl_dbcancel_slot *prev, *next;
};

/* Starts the watcher thread (idempotent). -GL_EIO when it cannot. */
int gl_dbcancel_start(struct gl_err *err) GL_MUSTCHECK;
/* Joins the watcher; every slot must have ended. Safe without a start.
 * Does not wait for a cancel request in flight (its thread is detached and
 * ends with the process if the server never answers). */
void gl_dbcancel_stop(void);

/* The stop, for the groups given (a mask of enum gl_dbcancel_group):
 * cancel their work registered now and what registers later.
 * Async-signal-safe (an atomic or and a write to a pipe); without a
 * started watcher it only records the request. */
void gl_dbcancel_request(unsigned groups);
/* 1 once gl_dbcancel_request() was called for any of groups. */
int gl_dbcancel_requested(unsigned groups);

/* Registers the current work of st's session (include/gl/store.h), of
 * group, under what (copied). Once a stop is requested for its group it is
 * cancelled within the watcher's next round. */
struct gl_store;
void gl_dbcancel_begin(struct gl_dbcancel_slot *s, struct gl_store *st, int group, const char *what);
/* 1 when the stop has sent a cancel request for the calling thread's work
 * in progress (its slot begun): a statement that failed with SQLSTATE 57014
 * was then cut by the stop, not by a statement_timeout. 0 for work without
 * a cancel key (nothing could be sent). */
int gl_dbcancel_sent(void);
/* Unregisters (no-op on a slot not begun); after it the watcher no longer
 * touches the slot or its connection. */
void gl_dbcancel_end(struct gl_dbcancel_slot *s);
/* For work that has noticed the stop by itself and only records how it
 * ended (an ingest run's row): waits out a cancel request being sent for
 * the calling thread's slot (at most GL_DBCANCEL_GIVEUP_MS), then holds off
 * the next one for GL_DBCANCEL_RETRY_MS, so the record is written unless it
 * too waits that long. No-op when the thread has no slot begun. */
void gl_dbcancel_defer(void);
/* The same with the next cancel held off for ms instead (an audit row
 * written after its fact gets the audit's stop grace, docs/security.md). */
void gl_dbcancel_defer_ms(int ms);

#endif
