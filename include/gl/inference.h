/* gpuledger — cost per inference request and per token. Pure (domain): the
 * store hands over the ledger's lines of the serving jobs (GPU time, cost,
 * busy and idle, one per job and step, as /v1/chargeback computes them)
 * and the serving usage (requests, tokens, latency buckets per job,
 * endpoint and model and step); this module puts both into groups and
 * derives the per-request figures. Rules (docs/serving.md, "Cost per
 * request"):
 * - By endpoint or model: a job's line is shared over the (endpoint, model)
 *   pairs it served by their requests in the step, equally when none had
 *   any (gl_cost_share: integers stay exact and add up). By a job dimension
 *   (team, project, namespace, cluster, gpu_model...) a job's line and its
 *   usage go to the job's value.
 * - Idle inside the allocation costs the line's cost x idle / allocated,
 *   rounded half up, per job (jobs differ in price; jobstats' rule).
 * - cost per 1,000 requests = cost x 1,000 / requests, per 1M prompt
 *   (generated) tokens = cost x 1,000,000 / tokens, micro-units rounded
 *   half up, from the group's exact cost in micro-units; null when the
 *   divisor is 0 (never a division by zero). Tokens per GPU-second and the
 *   busy share are ratios, null when their divisor is 0.
 * - Latency quantiles from the group's summed bucket counts
 *   (histogram_quantile of sum by (le)).
 * - Usage no job is known for stays out of every group (its requests would
 *   make a request look cheaper than it was) and is listed apart.
 *
 * Ownership: struct gl_inference owns every group, key and array; gl_inference_fini()
 * frees them. Strings passed in are copied.
 */
#ifndef GL_INFERENCE_H
#define GL_INFERENCE_H

#include "gl/common.h"
#include "gl/cost.h"
#include "gl/servemetrics.h"

#include <stddef.h>
#include <stdint.h>

enum gl_inference_agg { GL_INFERENCE_BY_ENDPOINT = 0, GL_INFERENCE_BY_MODEL, GL_INFERENCE_BY_JOB_DIM };

/* One serving job's ledger line in one step. */
struct gl_inference_cost {
	int64_t job_pk;
	const char *dim;          /* the job's value of the aggregate (GL_INFERENCE_BY_JOB_DIM) */
	gl_cost_i128 alloc_us;         /* micro-GPU-seconds allocated (billed) */
	int64_t alloc_s, unpriced_s, cost_micros;
	double busy_s, idle_s, observed_s; /* exporter-observed GPU-seconds */
};

struct gl_inference_group {
	char *key;
	int64_t v[GL_SERVEMETRICS__NCTR];
	int64_t gpu_s, unpriced_s, cost_micros, idle_micros;
	double busy_s, idle_s, observed_s;
	size_t nle, cap_le;
	double *le, *cum;         /* latency bucket counts summed by le */
	/* derived by gl_inference_finish */
	int have_per_1k_requests, have_per_1m_prompt, have_per_1m_generated;
	int64_t per_1k_requests_micros, per_1m_prompt_micros, per_1m_generated_micros;
	double tokens_per_gpu_s, generated_per_gpu_s; /* NaN when gpu_s is 0 */
	double busy_share, idle_share;                /* NaN without exporter data */
	double p50_s, p99_s;                          /* NaN without latency buckets */
};

/* Usage that no job is known for, per endpoint and model. */
struct gl_inference_unattributed {
	char *endpoint, *model;
	int64_t v[GL_SERVEMETRICS__NCTR];
};

/* Internal: an open-addressing index over an array's items (slot = item
 * index + 1, 0 empty), so that finding a key is not a scan. */
struct gl_inference_index {
	size_t *slot;
	size_t cap;
};

struct gl_inference_step {
	int64_t start_s, end_s;
	struct gl_inference_group *groups;
	size_t n, cap;
	struct gl_inference_index gix; /* groups by key, until gl_inference_finish sorts them */
	struct gl_inference_unattributed *un;
	size_t n_un, cap_un;
	struct gl_inference_group total;
};

struct gl_inference_pair;
struct gl_inference_line;
struct gl_inference_use;

struct gl_inference {
	enum gl_inference_agg agg;
	struct gl_inference_step *steps;
	size_t n_steps;
	struct gl_inference_step window;  /* the steps summed */
	/* inputs, kept until gl_inference_finish */
	struct gl_inference_pair *pairs;
	size_t n_pairs, cap_pairs;
	struct gl_inference_line *lines;
	size_t n_lines, cap_lines;
	struct gl_inference_use *uses;
	size_t n_uses, cap_uses;
	struct gl_inference_index uix; /* uses by key, until gl_inference_finish sorts them */
};

void gl_inference_init(struct gl_inference *x, enum gl_inference_agg agg, size_t n_steps);
void gl_inference_fini(struct gl_inference *x);
/* A (job, endpoint, model) the job served (serving_jobs). */
void gl_inference_add_pair(struct gl_inference *x, int64_t job_pk, const char *endpoint, const char *model);
void gl_inference_add_cost(struct gl_inference *x, size_t step, const struct gl_inference_cost *c);
/* Usage of (job, endpoint, model) in a step; job_pk 0: no job known. Adds
 * to a row added before with the same key. */
void gl_inference_add_usage(struct gl_inference *x, size_t step, int64_t job_pk, const char *endpoint, const char *model,
		      const int64_t v[GL_SERVEMETRICS__NCTR]);
/* Latency bucket count (le, cumulative) of that usage. */
void gl_inference_add_bucket(struct gl_inference *x, size_t step, int64_t job_pk, const char *endpoint, const char *model,
		       double le, double count);
/* Both at once: usage v and the latency counts cum[i] of bounds le[i]
 * (n of them; a series' bounds, so rows of one key usually share them). */
void gl_inference_add_row(struct gl_inference *x, size_t step, int64_t job_pk, const char *endpoint, const char *model,
		    const int64_t v[GL_SERVEMETRICS__NCTR], const double *le, const double *cum, size_t n);
/* Groups every step, sums the window and derives the figures. */
int gl_inference_finish(struct gl_inference *x) GL_MUSTCHECK;

/* a x num / den rounded half up; a, num >= 0, den > 0 */
int64_t gl_inference_per(int64_t a, int64_t num, int64_t den);

#endif
