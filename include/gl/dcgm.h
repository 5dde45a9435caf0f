/* gpuledger — GPU exporter samples → per-GPU readings, and the per-GPU
 * bucket rollup with the busy/idle predicate.
 *
 * Three exporters map onto the same readings, in DCGM's units, through one
 * table each (src/sources/dcgm.c; docs/ingest.md, "GPU exporters"):
 * dcgm-exporter (DCGM_FI_*), nvidia_gpu_exporter (nvidia_smi_*: ratios x 100,
 * bytes / 2^20, its uuid label given back nvidia-smi's "GPU-" prefix) and the
 * AMD Device Metrics Exporter (gpu_* or amd_gpu_*: a GPU is its board's
 * serial_number, else gpu_uuid; in a partitioned mode (CPX/DPX/QPX) each
 * partition is a GPU instance like a MIG slice, gi_id = gpu_partition_id,
 * gi_profile = the mode, and the physical readings the exporter gives on
 * partition 0 only (activity, power, energy) go to the whole GPU, the zeros
 * of the other partitions being dropped, never read).
 *
 * Pure: no I/O, no clock, no libpq. Times are parameters.
 *
 * Ownership: struct gl_dcgm_scrape is caller-owned storage, set up by
 * gl_dcgm_scrape_init() (or gl_dcgm_scrape_parse()) and released by
 * gl_dcgm_scrape_fini(), which frees the gpus array and EVERY string reachable
 * from it (they live in an arena owned by the scrape): copy what must outlive
 * it. Nothing points into the scrape text, so the caller's buffer may go as
 * soon as parsing returns. struct gl_dcgm_bucket and struct gl_dcgm_idle_policy
 * hold no pointers; they are plain values.
 *
 * Identity: a GPU is (hostname, UUID, GPU_I_ID): MIG instances share the
 * parent's UUID and differ by GPU_I_ID (-1 for a whole GPU). Samples without
 * a UUID label (DataDog's dummy PROF_* lines, foreign metrics) are counted and
 * dropped.
 *
 * Attribution: dcgm-exporter repeats a sample once per Slurm job (hpc_job)
 * or pod sharing the GPU. Those repeats add to the GPU's job / pod sets and
 * never to its values: the first usable value of a metric wins.
 */
#ifndef GL_DCGM_H
#define GL_DCGM_H

#include "gl/common.h"
#include "gl/promtext.h"

#include <stddef.h>
#include <stdint.h>

/* The metrics kept per GPU. Units in the comments are DCGM's. */
enum gl_dcgm_metric {
	GL_DCGM_ENGINE_ACTIVE = 0, /* DCGM_FI_PROF_GR_ENGINE_ACTIVE, ratio 0..1 */
	GL_DCGM_GPU_UTIL,          /* DCGM_FI_DEV_GPU_UTIL, % (not reported for MIG) */
	GL_DCGM_FB_USED_MIB,       /* DCGM_FI_DEV_FB_USED */
	GL_DCGM_FB_FREE_MIB,       /* DCGM_FI_DEV_FB_FREE */
	GL_DCGM_POWER_W,           /* DCGM_FI_DEV_POWER_USAGE */
	GL_DCGM_ENERGY_MJ,         /* DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, counter since boot */
	GL_DCGM_MEM_COPY_UTIL,     /* DCGM_FI_DEV_MEM_COPY_UTIL, % */
	GL_DCGM_TENSOR_ACTIVE,     /* DCGM_FI_PROF_PIPE_TENSOR_ACTIVE, ratio */
	GL_DCGM_DRAM_ACTIVE,       /* DCGM_FI_PROF_DRAM_ACTIVE, ratio */
	GL_DCGM_XID_ERRORS,        /* DCGM_FI_DEV_XID_ERRORS, last XID seen */
	GL_DCGM__NMETRICS
};
/* The exporter's metric name ("DCGM_FI_DEV_GPU_UTIL"). */
const char *gl_dcgm_metric_name(enum gl_dcgm_metric m);
/* Maps a metric name to the enum; -GL_ENOTFOUND for metrics not kept. */
int gl_dcgm_metric_lookup(struct gl_str name, enum gl_dcgm_metric *out);

/* One GPU at one instant. v[m] is meaningful only when have has bit (1u << m). */
struct gl_dcgm_reading {
	double v[GL_DCGM__NMETRICS];
	uint32_t have;
};
static inline int gl_dcgm_reading_has(const struct gl_dcgm_reading *r, enum gl_dcgm_metric m)
{
	return (r->have >> m) & 1u;
}

/* 1 when v is a DCGM "blank" sentinel (int32 2147483632..35, int64
 * 9223372036854775792..95, fp64 2^47 + 0..3), a NaN or an infinity. */
int gl_dcgm_value_is_blank(double v);

struct gl_dcgm_pod {
	const char *ns, *pod, *container; /* "" when the label is absent */
};

struct gl_dcgm_gpu {
	/* identity; strings are never NULL ("" when absent) */
	/* label values are cut at a NUL byte, should one occur */
	const char *hostname;   /* opts->node when given, else Hostname/hostname */
	const char *uuid;       /* UUID/uuid */
	int gi_id;              /* GPU_I_ID, -1 for a whole GPU */
	const char *gi_profile; /* GPU_I_PROFILE ("1g.10gb"), "" for a whole GPU */
	int gpu_index;          /* gpu label, -1 when absent */
	const char *model;      /* modelName */
	const char *device;     /* "nvidia0" */
	const char *pci_bus_id;
	const char *driver_version; /* DCGM_FI_DRIVER_VERSION, driver_version */
	const char *source;     /* "dcgm", "nvidia_smi" or "amd": the exporter that first named it */
	/* attribution: sets, in first-seen order */
	const char **jobs;      /* hpc_job values */
	size_t njobs;
	struct gl_dcgm_pod *pods; /* exported_* preferred over the plain labels */
	size_t npods;
	struct gl_dcgm_reading r;
	size_t samples;   /* samples mapped to this GPU, repeats included */
	size_t blank;     /* of which sentinel or non-numeric values */
	size_t conflicts; /* repeats whose value differed from the first */
};

struct gl_dcgm_opts {
	/* Overrides the Hostname label: in Kubernetes that label is the exporter
	 * pod's name, not the node's. NULL: use the label. */
	const char *node;
};

struct gl_dcgm_stats {
	size_t samples;     /* samples offered */
	size_t mapped;      /* attached to a GPU */
	size_t no_uuid;     /* dropped: no UUID label (AMD: no serial_number/gpu_uuid, or no gpu_id) */
	size_t not_dcgm;    /* dropped: not a DCGM_FI_, nvidia_smi_ or AMD (amd_)gpu_ metric */
	size_t blank;       /* kept metric with a sentinel / non-numeric value */
	size_t conflicts;   /* a repeat (per job / pod) disagreed with the first value */
	size_t bad_ident;   /* dropped: GPU_I_ID or gpu_partition_id not an integer, NUL byte in UUID/hostname */
	size_t not_per_partition; /* AMD physical readings on a partition other than 0: not read */
};

struct gl_dcgm_scrape {
	struct gl_dcgm_gpu *gpus; /* ngpus entries, in first-seen order */
	size_t ngpus;
	struct gl_dcgm_stats stats;
	struct gl_promtext_stats parse; /* filled by gl_dcgm_scrape_parse() */
	/* samples dropped because a label kept is over its bound
	 * (include/gl/bounds.h); the first one's line and why */
	size_t too_long, too_long_line;
	char too_long_reason[200];
	/* private */
	struct gl_dcgm_opts opts;
	size_t label_fit; /* the smallest bound of a kept label: shorter values need no lookup */
	size_t cap;
	uint64_t *index; /* open addressing: hash high half | gpu index + 1; 0 = empty */
	size_t index_cap;
	struct gl_dcgm_arena *arena;
};

void gl_dcgm_scrape_init(struct gl_dcgm_scrape *s, const struct gl_dcgm_opts *opts);
/* Frees everything the scrape owns; s may be NULL. Leaves s re-initialisable. */
void gl_dcgm_scrape_fini(struct gl_dcgm_scrape *s);
/* Maps one sample (from a gl_promtext callback). Dropped samples are counted,
 * not errors: returns 0 always, int for the callback signature's sake.
 * A value of a new-family metric outside its range (a percentage above 100,
 * a negative count, AMD's all-ones "not available") is blank, as DCGM's
 * sentinels are. */
int gl_dcgm_scrape_add(struct gl_dcgm_scrape *s, const struct gl_promtext_sample *smp);
/* init + gl_promtext_parse + add for every sample. On error (only
 * -GL_EFORMAT: not Prometheus text at all) the scrape is still valid and must
 * be finalised. */
int gl_dcgm_scrape_parse(struct gl_dcgm_scrape *s, const char *buf, size_t len,
			 const struct gl_dcgm_opts *opts, struct gl_err *err) GL_MUSTCHECK;
/* Why the scrape gives the store nothing, as one sentence for the error
 * line ("no GPU exporter samples ...", "... no Hostname label ... --node"),
 * written into buf; NULL when some GPU has both a UUID and a host. */
const char *gl_dcgm_scrape_why_empty(const struct gl_dcgm_scrape *s, char *buf, size_t n);
/* The GPU with this key, or NULL. hostname is the effective one (after opts->node). */
const struct gl_dcgm_gpu *gl_dcgm_scrape_find(const struct gl_dcgm_scrape *s, const char *hostname,
					      const char *uuid, int gi_id);

/* ---- busy / idle ---------------------------------------------------------- */

/* Activity signal: PROF_GR_ENGINE_ACTIVE >= engine_active_threshold is busy,
 * below is idle; when it is missing and use_gpu_util_fallback is set,
 * GPU_UTIL > 0 is busy and == 0 idle. The other two are extra BUSY reasons
 * only: memory or power alone can make a reading busy, never idle, because
 * low memory says nothing about compute. A reading with neither an activity
 * signal nor an extra busy reason is "no data". */
struct gl_dcgm_idle_policy {
	double engine_active_threshold; /* 0.01: idle GPUs read 0.00006, not 0 */
	int use_gpu_util_fallback;      /* 1 */
	int memory_counts_as_busy;      /* 0; 1: FB_USED > fb_used_busy_mib is busy */
	double fb_used_busy_mib;        /* 0 */
	double power_busy_watts;        /* <= 0: off; else POWER_USAGE >= it is busy */
};
#define GL_DCGM_IDLE_POLICY_DEFAULT {0.01, 1, 0, 0.0, 0.0}

/* The reading's duty cycle in [0, 1]: the share of its sample period with a
 * kernel running (docs/ingest.md, "Busy share"). PROF_GR_ENGINE_ACTIVE is
 * that ratio (below engine_active_threshold: 0, an idle GPU's noise);
 * without it GPU_UTIL / 100 (nvidia-smi's utilization.gpu, AMD's
 * gpu_gfx_activity land there too); memory or power above their optional
 * thresholds make it 1. -GL_ENOTFOUND when the reading has no usable signal
 * (*duty untouched). */
int gl_dcgm_reading_duty(const struct gl_dcgm_idle_policy *pol, const struct gl_dcgm_reading *r,
			 double *duty) GL_MUSTCHECK;
/* *busy = 1 when the duty is above 0, else 0; returns 0, or -GL_ENOTFOUND
 * when the reading has no usable signal under the policy (*busy untouched). */
int gl_dcgm_reading_is_busy(const struct gl_dcgm_idle_policy *pol, const struct gl_dcgm_reading *r,
			    int *busy) GL_MUSTCHECK;

/* ---- bucket rollup -------------------------------------------------------- */

#define GL_DCGM_BUCKET_S 300

/* One GPU over [start_s, start_s + len_s). Readings must come in time order. */
struct gl_dcgm_bucket {
	int64_t start_s, len_s;
	uint32_t samples;        /* readings added */
	uint32_t busy_samples;
	uint32_t nodata_samples; /* readings without a usable signal */
	double engine_sum;       /* PROF_GR_ENGINE_ACTIVE, for the mean */
	uint32_t engine_n;
	double util_sum;         /* GPU_UTIL, for the mean */
	uint32_t util_n;
	double fb_used_max_mib;  /* -1 when never seen */
	double power_max_w;      /* -1 when never seen */
	double energy_mj;        /* energy used in the bucket, reset-aware */
	uint32_t energy_resets;  /* counter went backwards (reboot, driver reload) */
	double xid_last;         /* last XID_ERRORS value, 0 when none seen */
	/* carried between consecutive buckets of one GPU */
	int64_t last_t_s;        /* GL_TIME_NONE before the first reading */
	double energy_last_mj;   /* < 0: no previous counter value */
};

/* start_s is aligned down to len_s (<= 0: GL_DCGM_BUCKET_S). */
void gl_dcgm_bucket_init(struct gl_dcgm_bucket *b, int64_t t_s, int64_t len_s);
/* Starts the bucket after prev (whatever t_s falls in) carrying prev's last
 * counter value and time, so energy spent between two buckets' readings is
 * counted once, in the later bucket. */
void gl_dcgm_bucket_next(struct gl_dcgm_bucket *b, const struct gl_dcgm_bucket *prev, int64_t t_s);
/* Adds a reading taken at t_s. -GL_ERANGE when t_s is outside the bucket,
 * -GL_EINVAL when not after the previous reading (a repeated scrape would
 * count twice). */
int gl_dcgm_bucket_add(struct gl_dcgm_bucket *b, const struct gl_dcgm_idle_policy *pol, int64_t t_s,
		       const struct gl_dcgm_reading *r) GL_MUSTCHECK;
/* *idle = 1 when every reading with a signal was idle; -GL_ENOTFOUND when
 * none had one. */
int gl_dcgm_bucket_is_idle(const struct gl_dcgm_bucket *b, int *idle) GL_MUSTCHECK;
/* Mean PROF_GR_ENGINE_ACTIVE; -GL_ENOTFOUND when there was none. */
int gl_dcgm_bucket_engine_mean(const struct gl_dcgm_bucket *b, double *mean) GL_MUSTCHECK;

#endif
