/* gpuledger — the daemon's source scheduler: one tick loop, each source at
 * its own interval (Redis serverCron style). A source is a run function plus
 * its config; a failing source is logged rate-limited and retried next
 * interval without holding back the others.
 *
 * Ownership: gl_daemon_sources() returns an array the caller frees with
 * free(); its entries borrow the config, which must outlive them.
 */
#ifndef GL_DAEMON_H
#define GL_DAEMON_H

#include "gl/common.h"
#include "gl/config.h"
#include "gl/lease.h"
#include "gl/log.h"

#include <stdint.h>

struct gl_store;
typedef int (*gl_daemon_source_run_fn)(struct gl_store *st, const struct gl_config *cfg, const void *src, int64_t now_s,
				char *summary, size_t summary_len, struct gl_err *err);

struct gl_daemon_source {
	char name[160];           /* "sacct:testgpu" */
	int64_t interval_s;
	gl_daemon_source_run_fn run;
	const void *src;          /* the source's config entry */
	int64_t next_s;
	struct gl_log_limiter lim;
	/* A summary the same as the last one logged ("0 days rebuilt" every
	 * minute) goes to DEBUG; it is logged at INFO again, with its count,
	 * once GL_DAEMON_REPEAT_S have passed, so the log still shows the
	 * source alive. */
	char last[512];
	int64_t last_logged_s;
	uint64_t repeats;
	/* Several instances on one database (docs/scale.md): a leased job
	 * runs only where its lease (named as the job) is held; one that
	 * keeps per-process state (the forecast cache) runs everywhere. */
	int leased;
	int64_t token;            /* the lease's fencing token while held here, else 0 */
	char holder_seen[GL_LEASE_INSTANCE_MAX]; /* the other instance last seen holding it */
};
#define GL_DAEMON_REPEAT_S 3600

/* This instance, for the leases. */
struct gl_daemon_self {
	char instance[GL_LEASE_INSTANCE_MAX];
	char holder[GL_LEASE_HOLDER_MAX];
	int64_t lease_ttl_s;      /* server.lease_ttl_s */
};
/* How long a job's lease lasts: lease_ttl_s, at most its interval (so an
 * instance that dies holding it loses it within one interval), at least
 * GL_LEASE_MIN_TTL_S. */
int64_t gl_daemon_lease_ttl(const struct gl_daemon_self *self, int64_t interval_s);
/* 1 when this instance runs job s now: its lease is taken or kept, and
 * the session's fence set to the token (gl_lease_take); 0 when another
 * instance holds it (s->next_s is then the next try, sooner than an
 * interval so a dead holder's job moves on within its ttl and a half) or
 * the database could not be asked. A change of holder is logged once.
 * self NULL: every job runs here. */
int gl_daemon_lease(struct gl_store *st, const struct gl_daemon_self *self, struct gl_daemon_source *s, int64_t now_s);

size_t gl_daemon_sources(const struct gl_config *cfg, struct gl_daemon_source **out);
/* Runs every source due at now_s (a leased one only when this instance
 * holds its lease, gl_daemon_lease); stop (may be NULL) is polled between
 * sources. Each source's database work is registered with gl_dbcancel, so
 * a stop request cancels its statement in flight; the source then fails
 * like on any database error (its open batch rolls back) and a session
 * left inside a transaction is rolled back before the next one. */
void gl_daemon_tick(struct gl_store *st, const struct gl_config *cfg, const struct gl_daemon_self *self,
		    struct gl_daemon_source *s, size_t n, int64_t now_s, volatile int *stop);

#endif
