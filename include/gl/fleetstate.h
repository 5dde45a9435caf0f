/* gpuledger — one probe of the shards for the whole process (docs/scale.md,
 * "Routing and pushdown").
 *
 * On a central database of shards, which shards answer is the process's
 * knowledge, not each API thread's: one prober thread, started on first
 * use, probes them every period (gl_shard_route on its own session, which
 * also refreshes the central's copy of their clusters and model names) and
 * publishes the route. An API thread reads the last published route and
 * never connects to a shard to learn it, so a request made while a shard is
 * down answers at once with the named clusters instead of waiting on the
 * shard's connect timeout.
 *
 * Ownership: gl_fleetstate_new's object is freed by gl_fleetstate_free
 * (which stops and joins the prober); the route gl_fleetstate_get copies
 * is the caller's (gl_shard_route_fini).
 */
#ifndef GL_FLEETSTATE_H
#define GL_FLEETSTATE_H

#include "gl/common.h"
#include "gl/shard.h"

#include <stdint.h>

struct gl_fleetstate;

/* The prober's session goes to dsn (copied) with statement timeout
 * stmt_ms; it probes every period_s once started. */
struct gl_fleetstate *gl_fleetstate_new(const char *dsn, int64_t stmt_ms, int period_s);
void gl_fleetstate_free(struct gl_fleetstate *f);
/* The last published route: when its generation differs from *gen, copied
 * into *rt and *gen updated (else *rt is left as it is). Before the first
 * probe has succeeded, starts the prober if need be and waits for its
 * attempt: its error (-GL_EDB) when it failed. */
int gl_fleetstate_get(struct gl_fleetstate *f, uint64_t *gen, struct gl_shard_route *rt, struct gl_err *err) GL_MUSTCHECK;
/* Probes made and failed so far (for /metrics). */
void gl_fleetstate_counts(struct gl_fleetstate *f, uint64_t *probes, uint64_t *failed);

#endif
