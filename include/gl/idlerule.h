/* gpuledger — idle-GPU window rules of the shutdown hook (docs/hook.md).
 *
 * Pure: no I/O, no clock (now is a parameter), no libpq. A GPU's activity is
 * a time-ordered series of spans (one per exporter rollup bucket, or one per
 * raw sample), each busy, idle or without data; a rule turns a series into
 * the idle time that counts and the stage reached, and a job's GPUs into one
 * decision with gpu_fraction.
 *
 * The three rules used in the field (FORMATS.md, "Idle-GPU policies"):
 *   fixed   : every span since start + grace is idle (no busy span at all);
 *             idle time = the idle spans' length. Job Defense Shield 60/105/120.
 *   sliding : the last W = t3 seconds are covered by idle spans only; the
 *             warnings fire when the trailing idle run reaches t1 (and t2).
 *             A gap without data inside the window breaks it. JDS 240/300,
 *             gpu-pruner 30 min.
 *   reset   : idle seconds accumulate over idle spans since the last busy
 *             span; gaps without data neither add nor reset (Run:ai).
 * Unknown is not idle: spans without data never count as idle, and a GPU
 * whose last data is older than max_data_age_s makes the job "no data".
 *
 * Ownership: nothing is allocated; inputs are borrowed, outputs the caller's.
 */
#ifndef GL_IDLERULE_H
#define GL_IDLERULE_H

#include "gl/common.h"
#include "gl/jobstats.h"

#include <stddef.h>
#include <stdint.h>

enum gl_idlerule_kind { GL_IDLERULE_FIXED = 0, GL_IDLERULE_SLIDING, GL_IDLERULE_RESET };

/* Stages in escalation order; a job is "reached" a stage once. */
enum gl_idlerule_stage { GL_IDLERULE_STAGE_NONE = 0, GL_IDLERULE_STAGE_WARN1, GL_IDLERULE_STAGE_WARN2, GL_IDLERULE_STAGE_ACT };

enum gl_idlerule_state { GL_IDLERULE_NODATA = 0, GL_IDLERULE_IDLE, GL_IDLERULE_BUSY };

/* What makes a span busy (a policy's "signal"). */
struct gl_idlerule_signal {
	double engine_active_threshold; /* busy when mean engine activity >= this (ratio) */
	double util_threshold_pct;      /* fallback without engine activity: busy when GPU_UTIL > this (%) */
	int memory_counts_as_busy;
	double fb_used_busy_mib;        /* with memory_counts_as_busy: busy when fb used >= this */
	double power_busy_watts;        /* busy when power >= this; <= 0 = off */
};

/* One rollup bucket (gpu_usage x gpu_usage_jobs) or one raw sample. Unknown
 * measurements are negative. */
struct gl_idlerule_obs {
	int64_t start_s;
	int64_t dur_s;
	int samples;         /* samples in the span (1 for a raw sample) */
	int busy_samples;    /* samples the ingest predicate called busy */
	int nodata_samples;  /* samples without any activity signal */
	double engine_mean;  /* mean DCGM_FI_PROF_GR_ENGINE_ACTIVE ratio; < 0 unknown */
	double util_max_pct; /* GPU_UTIL %, < 0 unknown (raw series) */
	double fb_used_mib;  /* max framebuffer used; < 0 unknown */
	double power_w;      /* max power; < 0 unknown */
};

struct gl_idlerule_span {
	int64_t start_s, dur_s;
	enum gl_idlerule_state state;
};

struct gl_idlerule {
	enum gl_idlerule_kind kind;
	int64_t t1_s;          /* first warning (sliding: trailing idle run that warns) */
	int64_t t2_s;          /* second warning; 0 = none */
	int64_t t3_s;          /* action (sliding: the window W) */
	int64_t grace_s;       /* spans starting before start + grace are ignored */
	int64_t max_data_age_s;/* a GPU whose data ends earlier than now - this is unknown */
	double gpu_fraction;   /* (0, 1]: share of a job's GPUs that must reach a stage */
};

/* Per-GPU result. */
struct gl_idlerule_gpu_eval {
	enum gl_idlerule_stage stage;
	int64_t idle_s;        /* idle time the rule counts (the candidate's "idle minutes") */
	int64_t idle_total_s;  /* all idle span time since start + grace (waste so far) */
	int64_t last_data_s;   /* end of the last span with data; GL_TIME_NONE when none */
	int stale;             /* no data, or last data older than max_data_age_s */
};

/* Per-job decision. */
struct gl_idlerule_job_eval {
	enum gl_idlerule_stage stage;
	int64_t idle_s;        /* idle time of the GPU that decided the stage */
	int64_t idle_gpu_s;    /* sum of idle_total_s over the job's GPUs */
	size_t idle_gpus;      /* GPUs at or above the job's stage (or at WARN1 when none) */
	int no_data;           /* some GPU is stale: never acted on */
};

/* Validates a rule: 0 < t1 < t3, t2 == 0 or t1 < t2 < t3, 0 < gpu_fraction
 * <= 1, grace and data age >= 0. -GL_EINVAL with the reason in err. */
int gl_idlerule_check(const struct gl_idlerule *r, struct gl_err *err) GL_MUSTCHECK;

/* "fixed" / "sliding" / "reset"; parse returns -GL_EINVAL for others. */
const char *gl_idlerule_kind_name(enum gl_idlerule_kind k);
int gl_idlerule_kind_parse(const char *s, enum gl_idlerule_kind *out) GL_MUSTCHECK;
/* "none" / "warn1" / "warn2" / "act"; parse returns -GL_EINVAL for others. */
const char *gl_idlerule_stage_name(enum gl_idlerule_stage s);
int gl_idlerule_stage_parse(const char *s, enum gl_idlerule_stage *out) GL_MUSTCHECK;

/* The state of one observation under a signal:
 *   no data  : no samples, or all samples without a signal;
 *   busy     : any sample the ingest predicate called busy, engine mean >=
 *              threshold, GPU_UTIL above the fallback threshold (only when
 *              engine activity is unknown), memory (when it counts) or power
 *              at or above their thresholds;
 *   idle     : otherwise. */
enum gl_idlerule_state gl_idlerule_classify(const struct gl_idlerule_obs *o, const struct gl_idlerule_signal *sig);

/* One GPU: spans in time order (overlaps are not checked), job start, now. */
void gl_idlerule_eval_gpu(const struct gl_idlerule *r, const struct gl_idlerule_span *spans, size_t n,
			  int64_t job_start_s, int64_t now_s, struct gl_idlerule_gpu_eval *out);

/* A job from its GPUs' results: the highest stage s that at least
 * ceil(gpu_fraction x ngpus) GPUs reached; expected_gpus (>= ngpus, 0 =
 * ngpus) counts GPUs the exporter does not see, which are unknown. Any stale
 * or unseen GPU sets no_data and the stage to NONE. */
void gl_idlerule_eval_job(const struct gl_idlerule *r, const struct gl_idlerule_gpu_eval *gpus, size_t ngpus,
			  size_t expected_gpus, struct gl_idlerule_job_eval *out);

/* Idle cost numerator of one GPU (micro-units per GPU-hour x micro-GPUs x
 * seconds, as gl_jobstats_cost_num): the idle time gl_idlerule_eval_gpu
 * counts in idle_total_s, each span split where a rate starts or ends and
 * priced at the rate in force (rates of the job's rate model, borrowed);
 * time no rate covers adds nothing. The job's idle cost in micro-units is
 * (the sum of num over its GPUs + 1,800,000,000) / 3,600,000,000, rounded once. */
gl_cost_i128 gl_idlerule_idle_cost_num(const struct gl_idlerule *r, const struct gl_idlerule_span *spans, size_t n,
				  int64_t job_start_s, int64_t now_s, const struct gl_jobstats_rate *rates, size_t nr);

/* Idle cost in micro-units: idle_gpu_s x micros_per_gpu_hour / 3600, rounded
 * half up; 0 when the rate is unknown (< 0). */
int64_t gl_idlerule_cost_micros(int64_t idle_gpu_s, int64_t micros_per_gpu_hour);

#endif
