/* gpuledger — leases (sql/055): which of several `gpuledger serve`
 * instances on one database runs each periodic job, with a fencing token
 * checked at the commit of every ingest batch (docs/scale.md, "Several
 * daemons").
 *
 * A lease is a row (name, holder, token, expiry); expiry is the database's
 * clock. gl_lease_take takes a free or expired lease, or keeps one this
 * holder has, and sets the session's fence to its token: from then on a
 * transaction of that session that writes an ingest run or a watermark
 * commits only while the token is still the lease's. A keeper thread
 * renews this process's leases on a connection of its own, so a long run
 * keeps its lease, and a process that dies (or is paused) loses it after
 * its ttl.
 *
 * Ownership: gl_lease_keeper_start returns a keeper that
 * gl_lease_keeper_stop stops, releases (its leases expire at once, for the
 * next instance to take) and frees. The holder and instance strings are
 * copied.
 */
#ifndef GL_LEASE_H
#define GL_LEASE_H

#include "gl/common.h"

#include <stddef.h>
#include <stdint.h>

struct gl_store;

#define GL_LEASE_NAME_MAX 160
#define GL_LEASE_INSTANCE_MAX 128
#define GL_LEASE_HOLDER_MAX 200
/* no lease is shorter: a renewal every third of it must fit a loaded host */
#define GL_LEASE_MIN_TTL_S 3

/* This process's names: instance (what /metrics, /v1/ingest/runs and the
 * log call it) is configured, or "host:pid:start" when configured is "";
 * holder (the lease rows' owner) is instance plus pid, start and a random
 * part, unique to this process even when two share a configured name (a
 * restarted instance must never pass for its paused predecessor). */
void gl_lease_identity(const char *configured, int64_t start_s, char *instance, size_t in, char *holder, size_t hn);

/* Takes, keeps or renews lease name for ttl_s seconds. Held: *token > 0
 * and the session's fence is set to it. Not held: *token = 0, the fence is
 * cleared, and who (may be NULL) gets the holding instance. */
int gl_lease_take(struct gl_store *st, const char *name, const char *holder, const char *instance, int64_t ttl_s,
		  int64_t *token, char *who, size_t whon, struct gl_err *err) GL_MUSTCHECK;
/* Clears the session's fence (after the job's run). */
int gl_lease_unfence(struct gl_store *st, struct gl_err *err) GL_MUSTCHECK;
/* Extends every lease of holder by its own ttl; *n (may be NULL) gets how many. */
int gl_lease_renew_all(struct gl_store *st, const char *holder, int *n, struct gl_err *err) GL_MUSTCHECK;
/* Lets every lease of holder expire now (the token stays: the next holder
 * gets a greater one). */
int gl_lease_release_all(struct gl_store *st, const char *holder, struct gl_err *err) GL_MUSTCHECK;

/* The keeper: renews holder's leases every period_ms on a connection of
 * its own to dsn (reconnecting after a failure or a failover). */
struct gl_lease_keeper;
int gl_lease_keeper_start(const char *dsn, const char *holder, int64_t period_ms, struct gl_lease_keeper **out,
			  struct gl_err *err) GL_MUSTCHECK;
void gl_lease_keeper_stop(struct gl_lease_keeper *k);

#endif
