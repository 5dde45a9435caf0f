/* gpuledger — training runs: which jobs a person thinks of as one piece of
 * work (docs/runs.md), and a run's figures from its jobs' own. Pure: no
 * I/O, no clock, no libpq; the store hands in the jobs and the ledger's
 * per-job figures, the grouping rules come from the config (runs[]).
 *
 * A job always shares its run with its other requeue attempts and het
 * components (one Slurm job id). Beyond that the rules, in priority order,
 * decide: the first rule in force at the job's submit time (start time
 * without one) whose field the job has puts it in the run of that field's
 * value; a job no rule groups is a run of its own.
 *
 * Ownership: struct gl_runs owns its runs, their keys and the member index
 * arrays; jobs and rules are borrowed for the duration of each call and
 * must outlive gl_runs_group's result only through job indexes.
 */
#ifndef GL_RUNS_H
#define GL_RUNS_H

#include "gl/common.h"

#include <stddef.h>
#include <stdint.h>

enum gl_runs_by {
	GL_RUNS_BY_ARRAY,      /* Slurm ArrayJobID */
	GL_RUNS_BY_NAME_USER,  /* job name + user */
	GL_RUNS_BY_COMMENT,    /* Slurm --comment */
	GL_RUNS_BY_WCKEY,      /* Slurm --wckey */
	GL_RUNS_BY_TAG,        /* a run=<id> word in the job name or comment */
	GL_RUNS_BY_KUBE_OWNER, /* the training operator's job, else the pod's controller */
	GL_RUNS_BY_LABEL,      /* a pod label's value (label:<key>) */
};

/* The names runs[].by takes, for messages. */
#define GL_RUNS_BY_NAMES "array, name_user, comment, wckey, tag, kube_owner or label:<key>"

struct gl_runs_rule {
	const char *cluster;   /* "" or NULL: any cluster */
	enum gl_runs_by by;
	const char *label;     /* GL_RUNS_BY_LABEL: the key */
	int64_t from_s, to_s;  /* [from, to); GL_TIME_NONE: open */
};

/* by as runs[].by spells it; *label points into by for label:<key>.
 * -GL_EINVAL for anything else (an empty label key too). */
int gl_runs_by_parse(const char *by, enum gl_runs_by *out, const char **label) GL_MUSTCHECK;

/* The pod labels the grouping reads, in the order gl_runs_job.labels holds
 * them: the training operators' own (kube_owner), then each label rule's
 * key. *keys is the caller's to free (the strings are borrowed from the
 * rules or static). */
void gl_runs_label_keys(const struct gl_runs_rule *rules, size_t n_rules, const char ***keys, size_t *n_keys);

/* One allocation row (a Slurm attempt or het component, a pod) with the
 * ledger's figures for it inside the window. Strings NULL when absent. */
struct gl_runs_job {
	int64_t job_pk;
	const char *cluster, *job_key, *job_id, *name, *user_name, *account, *partition, *namespace_, *wckey, *comment;
	const char *state;
	int64_t array_job_id, het_job_id, het_offset; /* -1: none */
	int64_t submit_s, start_s, end_s;              /* GL_TIME_NONE: unknown / open */
	int64_t queue_wait_s;                          /* -1: not started */
	const char *owner_kind, *owner_name;           /* a pod's controller */
	const char *const *labels;                     /* gl_runs_label_keys' order, NULL when absent */
	/* from the ledger (gl_accounting_chargeback's line of this job) */
	int64_t gpu_s, cost_micros, unpriced_s, unobserved_s;
	double busy_s, idle_s, observed_s;
};

struct gl_runs_run {
	char *key;           /* "<cluster>/<kind>/<value>" */
	char id[17];         /* 16 hex digits of the key's FNV-1a 64 */
	const char *kind;    /* static: "job", "pod", "array", "name_user", ... */
	size_t *members;     /* indexes into the jobs, by submit time */
	size_t n_members;
	size_t first;        /* the member the run's owner fields are read from */
	int64_t first_submit_s, last_end_s; /* last_end_s GL_TIME_NONE while a member is open */
	int64_t attempts, jobs;
	int64_t gpu_s, cost_micros, failed_cost_micros, failed_gpu_s, unpriced_s, unobserved_s, queue_s;
	double busy_s, idle_s, observed_s;
	const char *state;   /* borrowed from a member: RUNNING, PENDING or the last attempt's */
};

struct gl_runs {
	struct gl_runs_run *runs;
	size_t n;
};

/* 1 when the job's attempt is one a run paid for without result: the
 * report's failed states (gl_jobstats_state_failed) and the attempts the
 * scheduler ended to run again (REQUEUED, PREEMPTED). */
int gl_runs_attempt_failed(const char *state);

/* The run key of one job under the rules (buf, NUL-terminated, cut at n);
 * *kind is static. */
void gl_runs_key(const struct gl_runs_job *j, const struct gl_runs_rule *rules, size_t n_rules, char *buf, size_t n,
		 const char **kind);

/* Groups the jobs into runs (most recent first submit first) and sums
 * their figures. */
void gl_runs_group(const struct gl_runs_job *jobs, size_t n_jobs, const struct gl_runs_rule *rules, size_t n_rules,
		   struct gl_runs *out);
void gl_runs_fini(struct gl_runs *r);

/* A run's id: 16 hex digits of its key's FNV-1a 64. */
void gl_runs_run_id(const char *key, char id[17]);

/* What the rules group by, as 16 hex digits (FNV-1a 64 of every field of
 * every rule, in order): a month's runs built under other rules are not
 * this configuration's (sql/131). */
void gl_runs_rules_sig(const struct gl_runs_rule *rules, size_t n_rules, char sig[17]);

#endif
