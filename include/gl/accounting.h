/* gpuledger — accounting queries: the raw sums behind chargeback, read from
 * jobs (allocation), rates (cost), owners (gl_owner at the job's start),
 * gl_job_usage (exporter busy/idle) and gl_capacity (fleet capacity).
 *
 * Ownership: fills a caller-initialised struct gl_chargeback (gl_chargeback_init with the
 * number of steps); struct gl_accounting_meta owns nothing beyond its arrays.
 */
#ifndef GL_ACCOUNTING_H
#define GL_ACCOUNTING_H

#include "gl/capacity.h"
#include "gl/chargeback.h"
#include "gl/common.h"
#include "gl/filter.h"
#include "gl/strbuf.h"
#include "gl/window.h"

struct gl_config;
struct gl_store;

/* Dimensions the API can aggregate and filter by, NULL-terminated. */
extern const char *const gl_accounting_dims[];

struct gl_accounting_query {
	const struct gl_window *steps;
	size_t n_steps;
	int64_t now_s;
	const char *dims[GL_CHARGEBACK_MAX_DIMS];
	size_t n_dims;
	const struct gl_filter *filter;  /* may be NULL */
	const char *const *scope_teams;  /* token owner scope: only these teams (NULL = all) */
	size_t n_scope_teams;
	int lines_only;                  /* 1: skip fleet idle (capacity); steps' idle stays unknown */
	int scoped;                      /* 1: for a token's scope (in filter): the models of the fleet's idle
					  * capacity stay out of meta's unpriced_models, which then names
					  * only the lines' own */
	/* Only these jobs (NULL: all), with no fleet idle: the serving jobs of
	 * /v1/inference, a token's jobs in /v1/runs. Lines keyed by the
	 * dimension "job" (the job's job_pk), with or without a jobs list, may
	 * also be keyed by team, project, cost_center, cluster, namespace and
	 * gpu_model, which built days keep per job (usage_daily_job, every
	 * job since sql/092), and take no filter. */
	const int64_t *jobs;
	size_t n_jobs;
	int unobserved_include;          /* 1: the unobserved time of open jobs also in the firm figures
					  * (sreport's semantics); it is reported apart either way */
	/* how node capacity past a stale inventory counts in the fleet idle
	 * (gl_capstore_query); gl_accounting_query_init sets no horizon (sreport's
	 * semantics), the API and the report set inventory.absent_grace_s */
	struct gl_capacity_observed cap;
};

/* Ownership: the lists are the meta's; gl_accounting_meta_fini() frees them. A
 * meta must be zeroed ({0}) before its first gl_accounting_chargeback
 * (src/store/accounting_int.h), which
 * empties a filled one before filling it again. */
struct gl_accounting_meta {
	char **unpriced_models;          /* GPU models with no rate in the window, each once, whole */
	size_t n_unpriced;
	int capacity_source;             /* 1 when gl_capacity exists in this database */
};
void gl_accounting_meta_fini(struct gl_accounting_meta *meta);

/* The common query: steps, dimensions and now; everything else zero. */
void gl_accounting_query_init(struct gl_accounting_query *q, const struct gl_window *steps, size_t n_steps,
			const char *const *dims, size_t n_dims, int64_t now_s);
/* gl_accounting_chargeback, then the apportioning (gl_chargeback_finish): the whole of
 * what /v1/chargeback computes, for every reader of it (the route, forecast
 * history, reports, budgets). cb as gl_chargeback_init() made it for q. */
int gl_accounting_chargeback_finished(struct gl_store *st, const struct gl_accounting_query *q, struct gl_chargeback *cb,
				struct gl_accounting_meta *meta, struct gl_err *err) GL_MUSTCHECK;

/* The allocation of gl_accounting_chargeback_finished's lines alone
 * (alloc_us and alloc_s, unobs_us, implausible_us; priced, cost and
 * exporter usage 0, no idle), equal to that of its lines to the
 * micro-GPU-second, for steps shorter than a day (every step read live
 * from the jobs, as the chargeback reads such steps) and dimensions of a
 * job's own row: user, account, cluster, partition, qos, namespace,
 * gpu_model (no owner to resolve, no rate, no exporter usage: the hourly
 * demand of a month, gl_capplandb_demand). q: one that
 * gl_accounting_alloc_serves (else GL_EINVAL). cb as gl_chargeback_init()
 * made it for q. */
int gl_accounting_alloc_serves(const struct gl_accounting_query *q);
int gl_accounting_alloc_finished(struct gl_store *st, const struct gl_accounting_query *q, struct gl_chargeback *cb,
				 struct gl_err *err) GL_MUSTCHECK;

/* How much of [start_s, min(end_s, now_s)) the capacity data covers:
 * the days (gl_accounting_capacity_days, under the same filter) and the
 * clusters whose GPU jobs ran in it while no capacity data (scheduler
 * inventory or exporter GPUs) covers any of it, sorted: their idle is
 * unknown even where the other clusters' days are known. Only the filter's
 * cluster clause narrows those. The idle of the window is known only when
 * known == days and n_missing == 0. Ownership: missing is the cover's,
 * freed by gl_accounting_cover_fini() (also after a failure). */
struct gl_accounting_cover {
	int64_t known, days;
	char **missing;
	size_t n_missing;
};
int gl_accounting_capacity_cover(struct gl_store *st, int64_t start_s, int64_t end_s, int64_t now_s, const struct gl_filter *filter,
			   struct gl_accounting_cover *cov, struct gl_err *err) GL_MUSTCHECK;
void gl_accounting_cover_fini(struct gl_accounting_cover *cov);

/* Appends ", ev0 AS (...) ... cells AS (...)": the allocation per step of
 * intervals without a row per interval and step. src has the columns keys
 * (a comma list), g (micro-GPUs) and [p0, p1) (timestamptz, clipped to the
 * steps' span); steps has n (ordinal in time), a and b (timestamptz), and
 * a CTE win has starts, the steps' starts in that order. cells gets keys,
 * n, gact and si: a step's allocated micro-GPU-seconds are
 * (b - a) x gact - si, exact when the times are whole seconds. one_step:
 * steps has a single step (n 1), and the cells are the sums of the
 * intervals, without events. */
void gl_accounting_event_cells(struct gl_strbuf *sql, const char *keys, const char *src, const char *steps, int one_step);

/* Builds up to max_days stale past days, most recent first, a few days a
 * transaction. helper_cfg (may be NULL: one connection): the configuration
 * a second connection is opened with, only when two days or more are
 * stale, to build half of them at the same time (one that cannot be opened
 * leaves them to st); it is closed before this returns. *built counts the
 * days, *helped (may be NULL) is 1 when the second connection built some. */
int gl_accounting_build_stale(struct gl_store *st, const struct gl_config *helper_cfg, int64_t now_s, int max_days,
			      int *built, int *helped, struct gl_err *err) GL_MUSTCHECK;

/* For src/store/idle.c: the unallocated idle of [start_s, end_s) up to
 * now_s per capacity key (cluster, partition, canonical model), summed
 * over the window from the query chargeback's idle is a grouping of (its
 * steps cut where a rate starts or ends, allocation from the live pieces
 * and the built days, settled so a cluster's idle is its capacity less
 * unavailable less all its allocation), priced at the rate in force while
 * it was idle: *n rows (struct gl_idle_fleet, include/gl/idle.h: reported,
 * unavailable, allocated, idle, over and unobserved GPU-seconds, the last
 * being capacity past the inventory's horizon, apart from reported_s
 * unless cap includes it; idle_micros null without a rate), most idle
 * first; none when the window lies after now. The caller frees *rows and
 * *text (the strings the rows point to) with free(). */
struct gl_idle_fleet;
int gl_accounting_fleet_idle(struct gl_store *st, int64_t start_s, int64_t end_s, int64_t now_s,
			     const struct gl_capacity_observed *cap, struct gl_idle_fleet **rows, size_t *n, char **text,
			     struct gl_err *err) GL_MUSTCHECK;

/* The canonical GPU model of x (sql/024): gpu_model_canon's name for it,
 * else gl_gpu_model()'s derivation; canon is the table's model column as
 * the query reads it. */
#define GL_ACCOUNTING_GPU_MODEL_CANON_OR_SQL(canon, x) "coalesce(" canon ", gl_gpu_model(" x "))"
/* The same as an SQL expression evaluating x twice: the index probe written
 * out, since PostgreSQL does not inline gl_gpu_model() and a call per job
 * row costs several times the probe. */
#define GL_ACCOUNTING_GPU_MODEL_SQL(x) \
	GL_ACCOUNTING_GPU_MODEL_CANON_OR_SQL("(SELECT gmc.model FROM gpu_model_canon gmc WHERE gmc.raw = lower(" x "))", x)
/* The same by a join, for a query that reads every job of a month: a hash
 * join on the few canonical names instead of a probe per row (~5 us each).
 * GL_ACCOUNTING_GPU_MODEL_JOIN_SQL(a, x) joins gpu_model_canon as a;
 * GL_ACCOUNTING_GPU_MODEL_OF_SQL(a, x) is then the model. */
#define GL_ACCOUNTING_GPU_MODEL_JOIN_SQL(a, x) "LEFT JOIN gpu_model_canon " a " ON " a ".raw = lower(" x ")"
#define GL_ACCOUNTING_GPU_MODEL_OF_SQL(a, x) GL_ACCOUNTING_GPU_MODEL_CANON_OR_SQL(a ".model", x)

/* The GPU model a job is priced and grouped by: the scheduler's type, else
 * the model of its first node (sql/021), canonical (sql/024: the same name
 * capacity and rates are keyed by). j: the jobs alias. */
#define GL_ACCOUNTING_JOB_RAW_MODEL_SQL(j) "coalesce(" j ".gpu_type, " j ".node_gpu_model)"
#define GL_ACCOUNTING_JOB_MODEL_SQL(j) GL_ACCOUNTING_GPU_MODEL_SQL(GL_ACCOUNTING_JOB_RAW_MODEL_SQL(j))

/* A job's allocation in the books, micro-GPUs (GL_GPU_MICRO = one GPU; j:
 * the jobs alias). Every accounting query reads it through one of these:
 * GL_ACCOUNTING_JOB_GPUS_SQL is what the job is billed, GPU-seconds and cost per owner
 * in the unit its rate applies to (GPUs of its model, instances of its MIG
 * profile); GL_ACCOUNTING_JOB_HELD_SQL the physical capacity it holds (allocated
 * capacity, idle, conservation: a 1g MIG slice holds 1/7 of a GPU, the pods
 * sharing a GPU never more than it). For a Slurm job the two are equal.
 * gpu_milli (sql/047) only says which jobs have GPUs: its value is never
 * read for an amount. */
#define GL_ACCOUNTING_JOB_GPUS_SQL(j) j ".gpu_micro"
#define GL_ACCOUNTING_JOB_HELD_SQL(j) "coalesce(" j ".phys_micro, " j ".gpu_micro)"

/* A job's run kind (sql/093) and its tags with it as 'run_kind': what
 * gl_workload_type takes, so that a rule on run_kind matches. */
#define GL_ACCOUNTING_JOB_RUN_KIND_SQL(j) "gl_job_run_kind(" j ".namespace, " j ".tags, " j ".array_job_id, " j ".het_job_id)"
#define GL_ACCOUNTING_JOB_RULE_TAGS_SQL(j) "(coalesce(" j ".tags, '{}') || jsonb_build_object('run_kind', " GL_ACCOUNTING_JOB_RUN_KIND_SQL(j) "))"

/* The factor that keeps a job's exporter-observed time in a window (u, a
 * gl_job_usage row) within its allocated GPU-seconds there (a, an SQL
 * expression): usage is booked by bucket start, so a window that cuts a
 * bucket could otherwise show more busy + idle time than was allocated. */
#define GL_ACCOUNTING_USAGE_SCALE_SQL(u, a) \
	"(CASE WHEN " u ".observed_gpu_s > (" a ") THEN (" a ") / " u ".observed_gpu_s ELSE 1 END)"

/* The last moment a source saw the open job j (an alias of jobs) open, NULL
 * when none did: its own last_seen_at (a snapshot or sacct file that listed
 * it) or its source's watermark for its cluster (every poll or snapshot
 * series ingested in full lists every job still open: kube closes the pods
 * a snapshot no longer lists, sacct -S..-E reports every job running in
 * its window). Time after it is unobserved (docs/ingest.md). */
#define GL_ACCOUNTING_JOB_SEEN_SQL(j)                                                                   \
	GL_ACCOUNTING_JOB_SEEN_OF_SQL(j, "(SELECT ist.watermark FROM ingest_state ist WHERE" GL_ACCOUNTING_JOB_SEEN_ON_SQL(j, "ist") ")")

/* The same as a join (at most one row: ingest_state's key): after a FROM
 * item, GL_ACCOUNTING_JOB_SEEN_JOIN_SQL(j, w), then
 * GL_ACCOUNTING_JOB_SEEN_OF_SQL(j, w ".watermark"). A query over every open
 * job reads the watermark once a job this way, where the subquery ran once
 * each place the expression is written (three in a live lines query). */
#define GL_ACCOUNTING_JOB_SEEN_ON_SQL(j, w)                                                             \
	" " w ".cluster_id = " j ".cluster_id"                                                            \
	" AND " w ".source = CASE WHEN left(" j ".job_key, 4) = 'pod:' THEN 'kube' ELSE 'sacct' END"
#define GL_ACCOUNTING_JOB_SEEN_JOIN_SQL(j, w) " LEFT JOIN ingest_state " w " ON" GL_ACCOUNTING_JOB_SEEN_ON_SQL(j, w)
#define GL_ACCOUNTING_JOB_SEEN_OF_SQL(j, watermark) "greatest(" j ".last_seen_at, " watermark ")"

/* SQL expression of a dimension over the jobs CTE, or NULL when unknown. */
const char *gl_accounting_dim_sql(const char *dim);

#endif
