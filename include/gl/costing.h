/* gpuledger — the cost model in the database: rates, owner rules, idle
 * owners and workload type rules loaded from YAML (struct gl_config), replacing what the previous
 * load put there, in one transaction.
 *
 * Ownership: borrows the connection and the config.
 */
#ifndef GL_COSTING_H
#define GL_COSTING_H

#include "gl/common.h"
#include "gl/config.h"
#include "gl/settings.h"


struct gl_store;

struct gl_costing_summary {
	int rates, owners, idle_owners; /* rows now loaded */
	int workload_types;             /* workload type rules now loaded */
	int changed;                    /* 1 when the loaded set differs from the previous one */
	int stale_days;                 /* built days of the rollup the change made stale */
};

/* Validates everything first (errors name "rates[2].per_gpu_hour: ..."), then
 * replaces the config-sourced rows. actor is recorded with the change. A
 * load equal to what is there changes nothing (rolled back); a change
 * marks stale only the built days of the rollup it alters (prices: the
 * days a price differs on; owner and workload type rules: from the first time the rules in
 * force differ, since a job keeps the owner of its start; aliases, or a
 * model's first or last rate: every day). */
int gl_costing_load(struct gl_store *st, const struct gl_config *cfg, const char *actor, struct gl_costing_summary *sum,
		    struct gl_err *err) GL_MUSTCHECK;

#endif
