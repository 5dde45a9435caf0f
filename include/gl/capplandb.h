/* gpuledger — the stored capacity plan (sql/039_capacity_plan.sql) and the
 * fleet a plan is checked against, read from the database (store). The
 * checks themselves are gl_capplan_check (include/gl/capplan.h).
 *
 * Ownership: gl_capplandb_list() returns an array the caller frees with
 * free(); gl_capplandb_fleet() fills a struct freed with
 * gl_capplan_fleet_fini(). The config and the plans passed in are borrowed
 * (canonicalised in place where said).
 */
#ifndef GL_CAPPLANDB_H
#define GL_CAPPLANDB_H

#include "gl/capplan.h"
#include "gl/common.h"
#include "gl/config.h"
#include "gl/window.h"

#include <stddef.h>
#include <stdint.h>

struct gl_store;

/* Clusters known (stored, or named by a source in cfg), canonical models
 * known (inventory, jobs, rates, aliases) and the GPUs present per cluster
 * and model in the last whole hour before now_s. */
int gl_capplandb_fleet(struct gl_store *st, const struct gl_config *cfg, int64_t now_s, struct gl_capplan_fleet *f,
		       struct gl_err *err) GL_MUSTCHECK;

/* Peak demand and queue-days per cluster and GPU model over the whole days
 * of window (hourly allocated + pending GPUs, the day's largest hour; the
 * minutes with GPUs waiting, of the day, its last 3 hours and last hour),
 * and the GPUs available in the window's last hour (present less down and
 * planned down; NaN without an inventory). cluster NULL: all. Keys are every
 * cluster/model with demand or inventory; d is freed with
 * gl_capplan_demand_fini (also on failure). */
int gl_capplandb_demand(struct gl_store *st, const struct gl_window *window, const char *cluster, int64_t now_s,
			struct gl_capplan_demand *d, struct gl_err *err) GL_MUSTCHECK;

/* Rewrites each entry's gpu_model to its canonical model (gl_gpu_model). */
int gl_capplandb_canon(struct gl_store *st, struct gl_capplan_change *plan, size_t n, struct gl_err *err) GL_MUSTCHECK;

/* The stored plan ("config", "api", or NULL for both), by date. */
int gl_capplandb_list(struct gl_store *st, const char *source, struct gl_capplan_change **out, size_t *n,
		      struct gl_err *err) GL_MUSTCHECK;

/* Checks extra (canonicalised in place) together with the stored plan of
 * the other source (or both, when source is NULL) against the fleet: on a
 * bad entry of extra, -GL_EINVAL with *bad its index and *field the field
 * (gl_capplan_check); a stored entry found bad names itself in err. */
int gl_capplandb_check(struct gl_store *st, const struct gl_config *cfg, int64_t now_s, const char *source,
		       struct gl_capplan_change *extra, size_t n, size_t *bad, const char **field,
		       struct gl_err *err) GL_MUSTCHECK;

/* Replaces the plan of source ("config" or "api") with plan[0..n)
 * (canonicalised in place), checked as gl_capplandb_check does, in one
 * transaction holding an advisory lock (two posts at once cannot both pass
 * a check the other invalidates), with a capacity.plan audit row by actor. */
int gl_capplandb_replace(struct gl_store *st, const struct gl_config *cfg, int64_t now_s, const char *source,
			 struct gl_capplan_change *plan, size_t n, const char *actor, size_t *bad, const char **field,
			 struct gl_err *err) GL_MUSTCHECK;

/* The daemon's start: cfg->capacity_plan becomes the stored 'config' plan;
 * errors name "file:line: capacity_plan[i].field: why". */
int gl_capplandb_load_config(struct gl_store *st, const struct gl_config *cfg, const char *actor, int64_t now_s,
			     struct gl_err *err) GL_MUSTCHECK;

#endif
