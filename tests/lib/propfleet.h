/* A seeded generator of random fleets for property tests: clusters (some
 * with a node inventory, one without any capacity data), jobs with whole
 * GPUs and whole seconds (so every allocation is an exact integer an
 * oracle can sum), owners by account, and random queries (window, step,
 * aggregate, shareIdle). gl_prop_load writes a fleet into a migrated
 * database as the sources would have left it; gl_prop_alloc is the oracle
 * of allocated GPU-seconds. Properties of other areas (observed time,
 * scoped tokens) add fields to struct gl_prop_fleet and their own checks
 * over the same fleets and queries.
 *
 * Ownership: a fleet owns its arrays (gl_prop_fleet_fini). */
#ifndef GL_TEST_PROPFLEET_H
#define GL_TEST_PROPFLEET_H

#include <stddef.h>
#include <stdint.h>

#define GL_PROP_MAX_CLUSTERS 4
#define GL_PROP_ACCOUNTS 6 /* acct0..acct5; acct0..acct3 belong to teams t0..t3, the rest to nobody */

struct gl_prop_cluster {
	char name[16];
	int nodes, gpus_per_node; /* 0 nodes: no capacity data */
	char model[16];           /* the GPU type of its nodes and jobs */
};

struct gl_prop_job {
	int cluster;      /* index into clusters */
	int64_t start_s, end_s;
	int gpus;
	int account, user;
};

struct gl_prop_fleet {
	uint64_t seed;
	struct gl_prop_cluster clusters[GL_PROP_MAX_CLUSTERS];
	int n_clusters;
	struct gl_prop_job *jobs;
	size_t n_jobs;
};

/* xorshift64*: the same seed, the same fleet and queries */
uint64_t gl_prop_rand(uint64_t *s);
/* A fleet of n_jobs jobs in [lo_s, hi_s) (end clipped to hi_s). */
void gl_prop_fleet_make(struct gl_prop_fleet *f, uint64_t seed, size_t n_jobs, int64_t lo_s, int64_t hi_s);
void gl_prop_fleet_fini(struct gl_prop_fleet *f);
/* Clusters, node inventory and jobs into the database at dsn: 0 or -1. */
int gl_prop_load(const struct gl_prop_fleet *f, const char *dsn);
/* The owners and rates of the fleet, as a gpuledger YAML configuration. */
const char *gl_prop_config(void);
/* The team of an account ("__unallocated__" for acct4, acct5). */
const char *gl_prop_team(int account);

/* The value of dimension dim ("team", "cluster", "account", "user",
 * "gpu_model") for job j, into buf. */
const char *gl_prop_dim(const struct gl_prop_fleet *f, const struct gl_prop_job *j, const char *dim, char *buf,
			size_t n);
/* Allocated GPU-seconds of job j in [a, b). */
int64_t gl_prop_alloc(const struct gl_prop_job *j, int64_t a, int64_t b);

/* A random query: a path for /v1/chargeback (without format), and what it
 * asks. */
struct gl_prop_query {
	char path[512];
	char window[64];
	const char *step;        /* "none", "day", "hour" */
	const char *dims[2];
	int n_dims;
	const char *share;       /* "none", "proportional", "proportional_fleet", "owner" */
	int by_model;            /* shareIdleBy=model */
	int month;               /* the window is the month 2026-10 (the report's) */
};
void gl_prop_query_make(uint64_t *rng, struct gl_prop_query *q);

/* A random token scope over the owner dimensions the fleet has (team,
 * account, user): one or two dimensions, one or two values each, as
 * --scope arguments and as the admin filter that means the same. */
struct gl_prop_scope {
	const char *dims[2];
	char values[2][2][16];
	int n_values[2];
	int n_dims;
	char args[4][48];       /* "team=t0", ... */
	int n_args;
	char filter[256];       /* URL-encoded: team:%22t0%22,%22t1%22%2Baccount:%22acct2%22 */
};
void gl_prop_scope_make(uint64_t *rng, struct gl_prop_scope *sc);
/* 1 when job j is inside the scope (OR within a dimension, AND across). */
int gl_prop_in_scope(const struct gl_prop_fleet *f, const struct gl_prop_job *j, const struct gl_prop_scope *sc);

#endif
