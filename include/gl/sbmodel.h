/* gpuledger — the monthly showback report's data model: what
 * gl_showback_gather (store/showback.c) fills from the database and every
 * renderer (domain/report.c for CSV and HTML, report/report_pdf.c) reads,
 * so the renderers need no store header.
 *
 * Types only. Ownership: struct gl_sbmodel owns every array and string in
 * it; gl_showback_fini() (showback.h) frees them.
 */
#ifndef GL_SBMODEL_H
#define GL_SBMODEL_H

#include "gl/chargeback.h"

#include <stddef.h>
#include <stdint.h>

#define GL_SBMODEL_TOP_JOBS 20

struct gl_sbmodel_owner {
	char *name;
	int64_t alloc_s, unpriced_s, cost_micros, idle_share_s, idle_share_micros, total_micros;
	int has_usage;             /* exporter data exists for the owner's jobs */
	int64_t busy_s, aidle_s;   /* exporter busy / allocated-idle GPU-seconds */
	int64_t busy_micros, aidle_micros; /* Σ over its observed jobs of cost x busy (idle) / allocated */
	int has_prev;
	int64_t prev_total_micros;
	int64_t failed_s, failed_micros;   /* jobs that ended FAILED, TIMEOUT, NODE_FAIL, OUT_OF_MEMORY, BOOT_FAIL */
	int has_energy;
	int64_t energy_mj;
	int has_budget;
	int64_t budget_micros;
	int64_t *daily_s;          /* allocated GPU-seconds per day of the month (n_days) */
};

struct gl_sbmodel_model {
	char *owner, *model;
	int64_t alloc_s, cost_micros, unpriced_s;
};

struct gl_sbmodel_wait {
	char *kind;                /* "partition" | "owner" */
	char *name;
	int64_t jobs, p50_s, p90_s, p99_s;
};

struct gl_sbmodel_job {
	char *job_id, *cluster, *owner, *state;
	int64_t gpu_micro, alloc_s, cost_micros;
	int64_t unpriced_s; /* of alloc_s, no rate covers it: cost_micros is only the priced part */
	int has_usage;
	int64_t idle_s, idle_micros;
};

struct gl_sbmodel_rate {
	char *model, *mig_profile, *currency, *valid_from, *valid_to;
	int64_t micros_per_gpu_hour;
};

struct gl_sbmodel_rule {
	char *cluster, *match_field, *match_value, *team, *project, *cost_center, *valid_from, *valid_to;
	int64_t priority;
};

/* The capacity page: per cluster and GPU model, the month's peak demand and
 * the outlook from the month's end (today for the month under way): a daily
 * forecast of the peak 90 days ahead from the 91 days before, against
 * capacity and the stored plan (docs/forecast.md, "Capacity planning"). */
struct gl_sbmodel_capacity {
	char *cluster, *gpu_model, *method;
	double capacity_gpus;          /* GPUs available at the outlook's start; NaN unknown */
	double peak_gpus;              /* the month's largest daily peak of demand */
	int64_t sat50_s, sat80_s;      /* first day P(saturation) reaches 50 / 80 %; 0 not within the outlook; -1 unknown */
	int64_t gpus_to_add;           /* to keep P(saturation) under 20 % through the outlook; -1 unknown */
	int64_t need_by_s, order_by_s; /* the first purchase; 0 none */
	int late;                      /* its order-by date has passed */
	int days;                      /* days the outlook answers (the history may answer fewer than 90) */
};
#define GL_SBMODEL_CAPACITY_DAYS 90

struct gl_sbmodel_fleet {
	int capacity_known;        /* some capacity data: the figures cover capacity_days_known days */
	int64_t capacity_days_known, capacity_days; /* UTC days of the month so far with capacity data / all */
	int64_t capacity_s, unavailable_s, allocated_s, unalloc_idle_s, overalloc_s;
	int usage_known;
	int64_t busy_s, aidle_s;
	int64_t cost_micros;          /* Σ owner allocation cost */
	int64_t idle_total_s, idle_total_micros; /* unallocated idle before sharing */
	int64_t idle_left_s, idle_left_micros;   /* what stays in __idle__ after sharing */
	int64_t total_s, total_micros;           /* Σ owner totals + __idle__ */
	int has_prev;
	int64_t prev_total_micros;
	int64_t failed_s, failed_micros;
	int has_energy;
	int64_t energy_mj;
};

/* What the owner's serving jobs served in the month: /v1/inference by
 * the report's aggregate for the month (docs/serving.md), one row per
 * owner with a serving job. */
struct gl_sbmodel_inference {
	char *owner;
	int64_t requests, failed, prompt_tokens, generated_tokens, gpu_s, cost_micros;
	int have_per_1k, have_per_1m_prompt, have_per_1m_generated;
	int64_t per_1k_micros, per_1m_prompt_micros, per_1m_generated_micros;
	double p50_s, p99_s;       /* NaN without latency buckets */
};

struct gl_sbmodel {
	char month[8], prev_month[8];
	char aggregate[16];
	enum gl_chargeback_share_idle share;
	char currency[8];
	int minor;                 /* the currency's minor-unit digits */
	int64_t start_s, end_s;
	int closed;                /* the month is over at now_s */
	size_t n_days;
	int64_t *day_start;
	struct gl_sbmodel_owner *owners; /* sorted by total, descending, then name */
	size_t n_owners;
	struct gl_sbmodel_model *models;
	size_t n_models;
	struct gl_sbmodel_wait *waits;
	size_t n_waits;
	struct gl_sbmodel_job top_cost[GL_SBMODEL_TOP_JOBS], top_idle[GL_SBMODEL_TOP_JOBS];
	size_t n_top_cost, n_top_idle;
	struct gl_sbmodel_rate *rates;
	size_t n_rates;
	struct gl_sbmodel_rule *rules;
	size_t n_rules;
	struct gl_sbmodel_fleet fleet;
	struct gl_sbmodel_inference *inference; /* none for account and user: serving costs go by job dimensions */
	size_t n_inference;
	char **partial;            /* human-readable gaps: ingestion failures, unpriced models, no capacity */
	size_t n_partial;
	char *unpriced_models;     /* comma-separated, "" when none */
	struct gl_sbmodel_capacity *capacity;
	size_t n_capacity;
	int64_t capacity_asof_s;   /* the outlook's first day */
	int64_t capacity_lead_days;
	int no_data;               /* set (alone) when gather failed because the month is before any data */
};

#endif
