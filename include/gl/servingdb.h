/* gpuledger — the serving tables (sql/052): endpoints, series and their
 * counter state, per-bucket and per-day usage, the jobs that serve; and
 * the reads behind /v1/inference, whose GPU time and cost come from the
 * ledger (gl_accounting_chargeback over the serving jobs).
 *
 * A scrape round is two calls in one transaction the caller owns:
 * gl_servingdb_load (endpoints and series made when new, their state, the
 * job each runs on at the round's time), then, after the domain computed
 * the increases into the rows, gl_servingdb_write (usage by COPY into a
 * staging table and one upsert per table, the claim of rows scraped before
 * their job was known, serving_jobs, the state).
 *
 * Ownership: struct gl_servingdb_batch owns its rows and every string and
 * array in them (copied by gl_servingdb_batch_add); free it with
 * gl_servingdb_batch_free (NULL is a no-op).
 */
#ifndef GL_SERVINGDB_H
#define GL_SERVINGDB_H

#include "gl/accounting.h"
#include "gl/common.h"
#include "gl/inference.h"
#include "gl/servemetrics.h"
#include "gl/tokens.h"
#include "gl/window.h"

#include <stdint.h>

struct gl_store;

#define GL_SERVINGDB_NCTR GL_SERVEMETRICS__NCTR

/* Where a series runs, as its source says; kind NULL: nothing said (the
 * row stays unattributed). */
struct gl_servingdb_where {
	const char *kind;  /* "pod" (ns, name), "job" (Slurm job id in name), "job_name" (name), "selector" (ns, name = k=v,...) */
	const char *ns, *name;
};

struct gl_servingdb_row {
	/* identity (copied in) */
	char *endpoint, *cluster, *instance, *model_name, *family;
	size_t nle;
	double *le;                 /* nle latency bucket bounds, +Inf last */
	struct gl_servingdb_where where;
	double cur[GL_SERVINGDB_NCTR + GL_SERVEMETRICS_MAX_LE]; /* the scrape's values, NaN absent */
	double start_s;             /* NaN unknown */
	/* filled by gl_servingdb_load */
	int64_t series_id, endpoint_id;
	int cluster_id;
	int have_state;
	int64_t state_at_s, state_job_pk;
	double state_start_s;
	double hw[GL_SERVINGDB_NCTR + GL_SERVEMETRICS_MAX_LE]; /* NaN: never seen */
	int64_t endpoint_prev_s;    /* GL_TIME_NONE: never scraped */
	int64_t job_pk, job_start_s; /* 0 / GL_TIME_NONE: no job found */
	char why_unattributed[160];
	/* set by the caller before gl_servingdb_write */
	int apply;                  /* 1: write the state (and usage when counted) */
	int counted;                /* 1: inc holds increases to add */
	int64_t inc[GL_SERVINGDB_NCTR + GL_SERVEMETRICS_MAX_LE];
};

struct gl_servingdb_batch {
	int64_t at_s, bucket_s;
	struct gl_servingdb_row *rows;
	size_t n, cap;
};

struct gl_servingdb_batch *gl_servingdb_batch_new(int64_t at_s, int64_t bucket_s);
void gl_servingdb_batch_free(struct gl_servingdb_batch *b);
/* Copies one series of a scrape: endpoint, cluster, instance and where as
 * the source gives them. Returns the row. */
struct gl_servingdb_row *gl_servingdb_batch_add(struct gl_servingdb_batch *b, const char *endpoint, const char *cluster,
						const char *instance, const struct gl_servemetrics_series *x,
						const struct gl_servingdb_where *where);

/* Outside the round's transaction (their DDL locks serving_usage only
 * briefly): the partitions of at_s's day and the next. */
int gl_servingdb_partitions(struct gl_store *st, int64_t at_s, struct gl_err *err) GL_MUSTCHECK;
/* The cluster named name, made with kind when missing. */
int gl_servingdb_cluster_id(struct gl_store *st, const char *name, const char *kind, int *id,
			    struct gl_err *err) GL_MUSTCHECK;
/* The kind of cluster a series' where suggests: "slurm" for Slurm jobs,
 * else "kubernetes". */
const char *gl_servingdb_cluster_kind(const char *where_kind);

/* Inside the caller's transaction: clusters (made when missing, kind
 * 'kubernetes' for pod and selector rows, else 'slurm'), endpoints and
 * series made when new, their state locked (FOR UPDATE) and read, the job
 * of every row at the batch's time. */
int gl_servingdb_load(struct gl_store *st, struct gl_servingdb_batch *b, struct gl_err *err) GL_MUSTCHECK;

struct gl_servingdb_written {
	int64_t usage_rows, claimed_rows, new_jobs;
};
/* Inside the same transaction: usage of the counted rows, the claim of
 * earlier rows of a series that had no job and now has one (up to
 * claim_s back, from the job's start), serving_jobs, the state of the
 * applied rows, the endpoints' last scrape. */
int gl_servingdb_write(struct gl_store *st, struct gl_servingdb_batch *b, int64_t claim_s,
		       struct gl_servingdb_written *w, struct gl_err *err) GL_MUSTCHECK;

/* The query of /v1/inference. */
struct gl_servingdb_query {
	const struct gl_window *steps;
	size_t n_steps;
	int64_t now_s;
	enum gl_inference_agg agg;
	const char *dim;            /* GL_INFERENCE_BY_JOB_DIM: team, project, cost_center, cluster, namespace or gpu_model */
	/* an owner-scoped token's scope (borrowed; n_scope 0: every job): only
	 * the serving jobs inside it (by the owner at the job's start, as
	 * /v1/jobs), their cost and the requests they served; requests no
	 * job is known for are no scope's and are left out */
	const struct gl_tokens_scope *scope;
	size_t n_scope;
};

/* Fills x (gl_inference_init'ed with the query's agg and steps) from the ledger
 * and the serving usage, and finishes it (gl_inference_finish). meta gets the
 * ledger's unpriced models. */
int gl_servingdb_inference(struct gl_store *st, const struct gl_servingdb_query *q, struct gl_inference *x, struct gl_accounting_meta *meta,
			   struct gl_err *err) GL_MUSTCHECK;

/* 1 when dim is a job dimension /v1/inference groups by. */
int gl_servingdb_job_dim(const char *dim);

#endif
