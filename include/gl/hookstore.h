/* gpuledger — the idle hook's database side (docs/hook.md): what a run
 * reads (the running GPU jobs, their exporter rollups, owners, rates and
 * stages, in one read-only snapshot), the run lock, and what it writes
 * (a stage's state, its hook_actions row and audit row in one transaction;
 * actions recorded from outside; the list of actions). The hook decides
 * and acts on these typed rows; it never sees a query or a result.
 *
 * Probes and keys carry a tag of the caller's (an index into its own job
 * array) that the rows answering them carry back.
 *
 * Ownership: every list (struct gl_hookstore_*_list) is filled by one call
 * and released with its _fini (a zeroed or finalised list is a no-op); its
 * strings belong to it. Inputs are borrowed for the call.
 */
#ifndef GL_HOOKSTORE_H
#define GL_HOOKSTORE_H

#include "gl/common.h"
#include "gl/idlerule.h"
#include "gl/jobstats.h"

#include <stddef.h>
#include <stdint.h>

struct gl_store;

/* ---- the run lock ---- */
/* pg_try_advisory_lock key of hook runs ("glhook"). */
#define GL_HOOKSTORE_LOCK_KEY 0x676c686f6f6bLL

/* *locked = 1 when this session got it; 0 when another run holds it. */
int gl_hookstore_try_lock(struct gl_store *st, int *locked, struct gl_err *err) GL_MUSTCHECK;
/* Releases it; a failure is ignored (the session's end releases it too). */
void gl_hookstore_unlock(struct gl_store *st);

/* 1 while the connection is usable (a failed statement may have lost it). */
int gl_hookstore_connected(struct gl_store *st);

/* ---- the read phase: one REPEATABLE READ READ ONLY snapshot ---- */
int gl_hookstore_read_begin(struct gl_store *st, struct gl_err *err) GL_MUSTCHECK;
int gl_hookstore_read_end(struct gl_store *st, struct gl_err *err) GL_MUSTCHECK; /* COMMIT */
void gl_hookstore_read_abort(struct gl_store *st);                              /* ROLLBACK, errors ignored */

/* A running GPU job (end unknown, started by now, with GPUs). Strings
 * never NULL ("" when unknown). labels: the pod labels as "key=value". */
struct gl_hookstore_job {
	int64_t job_pk, start_s, gpu_micro; /* billed micro-GPUs (GL_ACCOUNTING_JOB_GPUS_SQL) */
	int cluster_id;
	char *cluster, *kind, *job_id, *name, *user, *account, *partition, *qos, *ns;
	char **labels;
	size_t nlabels;
};
struct gl_hookstore_job_list {
	struct gl_hookstore_job *v;
	size_t n;
};
/* In cluster_id, job_pk order. */
int gl_hookstore_running_jobs(struct gl_store *st, int64_t now_s, struct gl_hookstore_job_list *out,
			      struct gl_err *err) GL_MUSTCHECK;
void gl_hookstore_job_list_fini(struct gl_hookstore_job_list *l);

/* A question about one job over [a, b) (what a and b mean is the query's). */
struct gl_hookstore_probe {
	int64_t job_pk;
	int64_t a, b;
	size_t tag;
};
/* The tags answered (each at most once, any order). */
struct gl_hookstore_tag_list {
	size_t *v;
	size_t n;
};
void gl_hookstore_tag_list_fini(struct gl_hookstore_tag_list *l);

/* Jobs with a busy GPU-bucket in [a, now) (b unused): one probe of the
 * busy index each. lo_s: the smallest a, so the day partitions are pruned. */
int gl_hookstore_recent_busy(struct gl_store *st, const struct gl_hookstore_probe *p, size_t n, int64_t now_s, int64_t lo_s,
			     struct gl_hookstore_tag_list *out, struct gl_err *err) GL_MUSTCHECK;
/* Jobs with a busy GPU-bucket in [a, b) (the fixed rule's "busy before"). */
int gl_hookstore_busy_between(struct gl_store *st, const struct gl_hookstore_probe *p, size_t n,
			      struct gl_hookstore_tag_list *out, struct gl_err *err) GL_MUSTCHECK;

/* One GPU-bucket of a job: the rollup as the idle rule reads it. */
struct gl_hookstore_bucket {
	size_t tag;
	int64_t gpu_id;
	struct gl_idlerule_obs obs;    /* util_max_pct unknown (-1): rollups keep no GPU_UTIL */
	int64_t last_sample_s;     /* the GPU's last sample in the bucket; 0: none */
	int estimated;             /* attributed to the job by a node-level estimate */
};
struct gl_hookstore_bucket_list {
	struct gl_hookstore_bucket *v;
	size_t n;
};
/* Each job's GPU-buckets after a (b unused) and before now, ordered by tag,
 * GPU and bucket. lo_s: the smallest a (partition pruning). */
int gl_hookstore_buckets(struct gl_store *st, const struct gl_hookstore_probe *p, size_t n, int64_t now_s, int64_t lo_s,
			 struct gl_hookstore_bucket_list *out, struct gl_err *err) GL_MUSTCHECK;
void gl_hookstore_bucket_list_fini(struct gl_hookstore_bucket_list *l);

/* A job named by its key. */
struct gl_hookstore_key {
	int cluster_id;
	int64_t job_pk;
	size_t tag;
};

/* The team owning each job at its start ("__unallocated__" when none). */
struct gl_hookstore_owner {
	size_t tag;
	char *team;
};
struct gl_hookstore_owner_list {
	struct gl_hookstore_owner *v;
	size_t n;
};
int gl_hookstore_owners(struct gl_store *st, const struct gl_hookstore_key *k, size_t n, struct gl_hookstore_owner_list *out,
			struct gl_err *err) GL_MUSTCHECK;
void gl_hookstore_owner_list_fini(struct gl_hookstore_owner_list *l);

/* The rates of each job's rate model (its GPU model, else "*") in force at
 * some time of [from_s, to_s), ordered by tag and start. */
struct gl_hookstore_rate {
	size_t tag;
	struct gl_jobstats_rate rate; /* INT64_MIN / INT64_MAX for open ends */
};
struct gl_hookstore_rate_list {
	struct gl_hookstore_rate *v;
	size_t n;
};
int gl_hookstore_rates(struct gl_store *st, const struct gl_hookstore_key *k, size_t n, int64_t from_s, int64_t to_s,
		       struct gl_hookstore_rate_list *out, struct gl_err *err) GL_MUSTCHECK;
void gl_hookstore_rate_list_fini(struct gl_hookstore_rate_list *l);

/* The stages recorded for each job (hook_stages); names that do not parse
 * are left out. */
struct gl_hookstore_stage {
	size_t tag;
	enum gl_idlerule_stage stage;
	int done;                  /* 0: it failed (retried by the next run) */
};
struct gl_hookstore_stage_list {
	struct gl_hookstore_stage *v;
	size_t n;
};
int gl_hookstore_stages(struct gl_store *st, const struct gl_hookstore_key *k, size_t n, struct gl_hookstore_stage_list *out,
			struct gl_err *err) GL_MUSTCHECK;
void gl_hookstore_stage_list_fini(struct gl_hookstore_stage_list *l);

/* ---- writing ---- */

/* One stage the hook ran (or refused to run) on one job. argv is the
 * command as kept (credentials already blanked), NULL-terminated. */
struct gl_hookstore_action {
	int cluster_id;
	int64_t job_pk;
	const char *cluster, *job_id, *owner, *policy, *stage;
	const char *const *argv;
	int have_status, status;   /* the exit status, when it exited */
	int ok;
	const char *stderr_text;   /* what it wrote, or why it failed; kept as the error when not ok */
	const char *actor;
	int64_t idle_s, idle_gpu_s;
	int64_t cost_micros;       /* < 0: not priced (NULL) */
};
/* In one transaction: the stage's state (done or failed, attempts counted),
 * the hook_actions row and the audit row (audit_action, object,
 * audit_detail: a JSON object). Nothing is written when it fails. */
int gl_hookstore_action_record(struct gl_store *st, const struct gl_hookstore_action *a, const char *audit_action,
			       const char *object, const char *audit_detail, struct gl_err *err) GL_MUSTCHECK;

/* An action taken elsewhere (POST /v1/hook/actions). owner NULL: unknown;
 * argv as kept, NULL-terminated. */
struct gl_hookstore_external {
	const char *cluster, *job_id, *owner, *policy, *stage;
	const char *const *argv;
	int have_status, status;
	int ok;
	const char *actor;
};
struct gl_hookstore_recorded {
	int64_t action_id;
	int64_t at_s;
	int job_known;             /* the job was found (its latest attempt) */
};
/* In one transaction: the hook_actions row (joined to the job when its
 * cluster and id name one: the running attempt first), the job's stage
 * marked done when ok, and the audit row. */
int gl_hookstore_external_record(struct gl_store *st, const struct gl_hookstore_external *a, const char *object,
				 const char *audit_detail, struct gl_hookstore_recorded *out,
				 struct gl_err *err) GL_MUSTCHECK;

/* ---- the list of actions ---- */
struct gl_hookstore_listed {
	int64_t at_s;
	char *cluster, *job_id, *owner; /* owner NULL: not known */
	char *policy, *stage;
	char *command;             /* argv joined by spaces */
	char *argv_json;           /* argv as a JSON array */
	int have_status, status;
	int ok;
	char *source, *actor, *stderr_text;
};
struct gl_hookstore_listed_list {
	struct gl_hookstore_listed *v;
	size_t n;
};
/* Actions in [from_s, to_s), newest first, at most limit. */
int gl_hookstore_actions(struct gl_store *st, int64_t from_s, int64_t to_s, long limit, struct gl_hookstore_listed_list *out,
			 struct gl_err *err) GL_MUSTCHECK;
void gl_hookstore_listed_list_fini(struct gl_hookstore_listed_list *l);

#endif
