/* gpuledger fleet simulator — the model: a Slurm cluster and a Kubernetes
 * cluster with node inventory, jobs and pods that arrive, wait, run, fail
 * and are requeued by the distributions of real traces (gl_simtrace_traces), and
 * nodes that go down or are drained now and then.
 *
 * Time is wall-clock seconds (the daemon polls the simulator with its own
 * clock). The speed-up compresses the trace: at speed S a job that ran
 * R seconds in the trace runs R/S seconds and arrivals come S times as
 * often, so the GPUs held at any moment (arrival rate x duration) are those
 * of the trace's load; only the number of jobs per hour grows with S.
 * History is made at speed 1, the live part at the demo's speed.
 *
 * Pure: no I/O, no clock (every call takes the time), deterministic for a
 * seed and the same calls. Ownership: the fleet owns its arrays and keeps a
 * pointer to the traces, which must outlive it; gl_simfleet_free(NULL) is a
 * no-op.
 */
#ifndef GL_SIMFLEET_H
#define GL_SIMFLEET_H
#include "gl/simtrace.h"
#include <stddef.h>
#include <stdint.h>

#define GL_SIMFLEET_NONE INT64_MIN
#define GL_SIMFLEET_MAX_GPUS_PER_NODE 8
#define GL_SIMFLEET_MAX_JOB_NODES 16

enum gl_simfleet_kind { GL_SIMFLEET_SLURM = 0, GL_SIMFLEET_KUBE = 1 };

enum gl_simfleet_state {
	GL_SIMFLEET_PENDING = 0,
	GL_SIMFLEET_RUNNING,
	GL_SIMFLEET_COMPLETED, /* Slurm COMPLETED, pod Succeeded */
	GL_SIMFLEET_FAILED,    /* Slurm FAILED, pod Failed */
	GL_SIMFLEET_REQUEUED,  /* Slurm attempt ended by a node failure; pod lost with its node */
	GL_SIMFLEET_CANCELLED, /* waited past the limit: cancelled while pending / pod deleted */
};

enum gl_simfleet_avail { GL_SIMFLEET_UP = 0, GL_SIMFLEET_DOWN, GL_SIMFLEET_DRAIN };

/* A GPU model as each source names it. */
struct gl_simfleet_model {
	const char *gres;    /* Slurm GRES type / rate model: a100 */
	const char *product; /* dcgm-exporter modelName: NVIDIA A100-SXM4-80GB */
	const char *label;   /* nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB */
	int fb_mib;
	int idle_w, max_w;
};
extern const struct gl_simfleet_model gl_sim_models[];
extern const size_t gl_sim_nmodels;

struct gl_simfleet_part {           /* Slurm partition / Kubernetes node pool */
	char name[16];
	int model;             /* gl_sim_models index */
	int first_node, nnodes, gpus_per_node;
	int max_job_gpus;
	double rate_per_trace_s; /* mean arrivals per trace second at weekly-profile 1 */
};

struct gl_simfleet_cluster_def {
	char name[32];
	int kind;
	struct gl_simfleet_part part[4];
	int nparts;
	int first_node, nnodes, gpus;
	double rate_per_trace_s; /* the partitions' sum */
	double next_arrival_s;
};

struct gl_simfleet_node {
	char name[32];
	int cluster, part;
	int ngpus;
	int32_t slot[GL_SIMFLEET_MAX_GPUS_PER_NODE]; /* job index per GPU, -1 free */
	int avail;                                /* enum gl_simfleet_avail */
	int64_t avail_since_s, avail_until_s;     /* the current down/drain */
	int64_t next_fault_s;
	char reason[40];
	/* the exporter's energy counter (mJ) and when it was last advanced */
	double energy_mj[GL_SIMFLEET_MAX_GPUS_PER_NODE];
	int64_t energy_at_s[GL_SIMFLEET_MAX_GPUS_PER_NODE];
};

struct gl_simfleet_job {
	uint32_t id;       /* Slurm JobIDRaw / pod serial */
	uint32_t dbindex;  /* one per attempt */
	int16_t cluster, part, attempt, nnodes;
	int32_t trace;     /* row of its trace (Philly job / openb pod) */
	int32_t profile;   /* utilisation: Philly job row / GenAI duty series */
	int32_t gpus;
	int32_t owner;     /* Kubernetes: index in gl_sim_namespaces */
	int state, outcome;
	int64_t submit_s, start_s, end_s, planned_end_s;
	int64_t run_s;     /* wall seconds it runs once started */
	int64_t deadline_s; /* pending past this is cancelled */
	int16_t node[GL_SIMFLEET_MAX_JOB_NODES];
	uint8_t mask[GL_SIMFLEET_MAX_JOB_NODES]; /* its GPUs on each node */
};

struct gl_simfleet_nodeevent {      /* a down or drain, for sacctmgr and node conditions */
	int32_t node;
	int kind;              /* GL_SIMFLEET_DOWN / GL_SIMFLEET_DRAIN */
	int64_t start_s, end_s; /* end GL_SIMFLEET_NONE while open */
	char reason[40];
};

/* Kubernetes namespaces the pods are spread over, with their pod labels. */
struct gl_simfleet_namespace {
	const char *name, *team, *project, *cost_center;
};
extern const struct gl_simfleet_namespace gl_sim_namespaces[];
extern const size_t gl_sim_nnamespaces;

struct gl_simfleet_params {
	uint64_t seed;
	int gpus;              /* fleet size, split over the two clusters (>= 48) */
	double load;           /* offered load: GPUs asked / GPUs, e.g. 0.8 */
	const char *slurm_name, *kube_name;
	int64_t start_s;       /* cluster registration: the first second of the model */
	int64_t max_runtime_s; /* trace runtimes are cut here (trace seconds) */
	int64_t max_wait_s;    /* pending longer is cancelled (trace seconds) */
	int64_t node_mtbf_s;   /* mean trace seconds between a node's faults; 0 = none */
};
/* Defaults: 256 GPUs, load 0.8, clusters sim-slurm and sim-k8s, runtimes
 * cut at 3 days, pending cancelled after 2 days, a node fault per node every
 * 20 trace days. */
void gl_simfleet_params_default(struct gl_simfleet_params *p);

struct gl_simfleet_fleet {
	struct gl_simfleet_params p;
	const struct gl_simtrace_traces *tr;
	struct gl_simfleet_cluster_def cl[2];
	int ncl;
	struct gl_simfleet_node *nodes;
	int nnodes;
	struct gl_simfleet_job *jobs;
	size_t njobs, jobs_cap;
	int32_t *active; /* pending and running jobs, in submit order */
	size_t nactive, active_cap;
	struct gl_simfleet_nodeevent *events;
	size_t nevents, events_cap;
	double week_profile[2][168]; /* arrivals by hour of the week, mean 1 */
	uint64_t rng;
	int64_t now_s;
	double trace_s;  /* trace clock: advances speed x wall */
	double speed;
	uint32_t next_id, next_dbindex;
	uint64_t jobs_started, requeues, faults;
};

/* A fleet at p->start_s with every node up and no job. Fails (GL_EINVAL)
 * when the traces hold no job or no pod that fits, or gpus is too small. */
int gl_simfleet_new(const struct gl_simfleet_params *p, const struct gl_simtrace_traces *tr, struct gl_simfleet_fleet **out,
		    struct gl_err *err) GL_MUSTCHECK;
void gl_simfleet_free(struct gl_simfleet_fleet *f);
/* Runs the model up to to_s (never backwards). */
void gl_simfleet_advance(struct gl_simfleet_fleet *f, int64_t to_s);
/* Advances to at_s, then compresses the trace by speed from there: what is
 * left of running jobs, downs and pending deadlines is rescaled. */
void gl_simfleet_set_speed(struct gl_simfleet_fleet *f, int64_t at_s, double speed);

/* The GPU utilisation (percent) job j shows on its k-th GPU at t_s, from
 * its real trace (Philly minutes after start; GenAI duty cycle). */
int gl_simfleet_util(const struct gl_simfleet_fleet *f, const struct gl_simfleet_job *j, int k, int64_t t_s);
/* The cluster index of a name, -1 when none. */
int gl_simfleet_cluster(const struct gl_simfleet_fleet *f, const char *name);

#endif
