/* gpuledger — scheduler node inventory: pure parsers for what Slurm and
 * Kubernetes say about their nodes.
 *
 *   gl_scontrol_parse_nodes()    `scontrol show node -o` (one node a line)
 *   gl_slurm_events_parse_sacctmgr()   `sacctmgr -P show event ...` (node down/drain
 *                                periods and cluster registrations)
 *   gl_slurm_events_parse_reservations() `sacctmgr -P show reservation ...` or
 *                                `scontrol show reservation [-o]`
 *   gl_kube_nodes_parse()        `kubectl get nodes -o json`
 *
 * No I/O, no clock, no libpq: the caller reads the text and says when it was
 * taken. docs/capacity.md has the state table and the GPU counting rules.
 *
 * Ownership: struct gl_nodeobs_snapshot is caller-owned storage (zero it, or use
 * GL_NODEOBS_SNAPSHOT_INIT); the parsers APPEND to it (so the outputs of one
 * poll go into one snapshot) and everything in it is heap memory released by
 * gl_nodeobs_snapshot_fini() (no-op on a zeroed or finalised snapshot). Nothing
 * points into the caller's text.
 */
#ifndef GL_NODEOBS_H
#define GL_NODEOBS_H

#include "gl/common.h"

#include <stddef.h>
#include <stdint.h>

#define GL_NODEOBS_MODEL_MAX 64
#define GL_NODEOBS_MAX_MODELS 8      /* GPU models on one node; more is an input error */
#define GL_NODEOBS_MAX_PROBLEMS 200  /* kept messages; the rest are counted */

/* What a node's state means for capacity (docs/capacity.md, "State table"). */
enum gl_nodeobs_avail {
	GL_NODEOBS_AVAIL_UP = 0,       /* usable: idle, allocated, mixed, draining, not responding yet */
	GL_NODEOBS_AVAIL_DOWN,         /* DOWN, FAIL(ED), INVAL; Kubernetes Ready != True */
	GL_NODEOBS_AVAIL_DRAINED,      /* DRAIN(ED) with nothing running; Kubernetes cordoned */
	GL_NODEOBS_AVAIL_POWERED_DOWN, /* POWERED_DOWN, POWERING_UP, FUTURE: planned down */
	GL_NODEOBS_AVAIL_RESERVED,     /* a reservation without MAINT (reservation source only) */
	GL_NODEOBS_AVAIL_MAINT,        /* a MAINT reservation, or a Slurm event carrying MAINT */
	GL_NODEOBS_AVAIL__COUNT
};
/* "up", "down", "drained", "powered_down", "reserved", "maint" */
const char *gl_nodeobs_avail_name(enum gl_nodeobs_avail a);

/* GPUs of one model on a node. Physical GPUs: MIG instances are folded into
 * their parent GPU (mig_instances keeps how many there were). */
struct gl_nodeobs_gpus {
	char model[GL_NODEOBS_MODEL_MAX]; /* "a100", "NVIDIA-A100-SXM4-80GB"; "" = untyped */
	int64_t gpus;
	int64_t mig_instances;         /* 0 when not partitioned */
	int64_t memory_mib;            /* per GPU (GPU feature discovery's gpu.memory); 0 unknown */
	int replicas;                  /* Kubernetes time-slicing/MPS replicas per GPU (nvidia.com/gpu.replicas); 0 none */
};

/* One node as its scheduler saw it at the snapshot instant. */
struct gl_nodeobs_obs {
	char *name;
	char *partitions;       /* Slurm "a100,debug" verbatim (first = primary); NULL none/Kubernetes */
	struct gl_nodeobs_gpus gpus[GL_NODEOBS_MAX_MODELS];
	size_t ngpu_models;
	int64_t alloc_gpus;     /* AllocTRES GPUs now; -1 unknown */
	enum gl_nodeobs_avail avail;
	char *state_raw;        /* "MIXED+DRAIN", "Ready=False,unschedulable" */
	char *unknown_flags;    /* flags not in the table, '+'-joined verbatim; NULL none */
	char *reason;           /* NULL none */
	char *reason_user;      /* "root" from "[root@2026-...]"; NULL none */
	int64_t reason_s;       /* the reason's time; GL_TIME_NONE */
	int64_t created_s;      /* Kubernetes creationTimestamp; GL_TIME_NONE */
	int64_t state_since_s;  /* best evidence of when the current state began; GL_TIME_NONE */
};

/* A `sacctmgr show event` row. */
struct gl_nodeobs_slurm_event {
	int is_cluster;         /* a cluster registration (no NodeName) */
	char *node;             /* node events; NULL for cluster events */
	char *cluster_nodes;    /* hostlist of a cluster event; NULL otherwise */
	int64_t start_s, end_s; /* end GL_TIME_NONE = still open ("Unknown") */
	int64_t state_raw;      /* StateRaw, -1 when absent */
	char *state;            /* State verbatim ("DOWN", "DRAIN"); NULL absent */
	char *reason, *user;    /* NULL absent */
	int64_t gpus_total;     /* from TRES (gres/gpu), 0 none */
	enum gl_nodeobs_avail avail; /* node events: DOWN / DRAINED / POWERED_DOWN / MAINT (sreport skips MAINT rows) */
};

/* A reservation (either tool's form). */
struct gl_nodeobs_slurm_resv {
	char *name;
	int64_t start_s, end_s; /* end GL_TIME_NONE = open */
	char *flags;            /* verbatim "MAINT,SPEC_NODES" */
	int maint, ignore_jobs;
	char *nodes;            /* hostlist; NULL none */
	char *tres;             /* verbatim "cpu=8"; NULL none */
	struct gl_nodeobs_gpus gpus[GL_NODEOBS_MAX_MODELS]; /* GPUs in the reservation's TRES */
	size_t ngpu_models;
	int64_t gpus_total;     /* gres/gpu in TRES: 0 in Slurm 22.05, whose reservation TRES is cpu only */
};

struct gl_nodeobs_snapshot {
	struct gl_nodeobs_obs *nodes;
	size_t nnodes, cap_nodes;
	struct gl_nodeobs_slurm_event *events;
	size_t nevents, cap_events;
	struct gl_nodeobs_slurm_resv *resvs;
	size_t nresvs, cap_resvs;
	size_t lines;           /* input lines / items seen, all parsers together */
	char **problems;        /* "scontrol line 3: Gres: bad count"; lines/items skipped or fields ignored */
	size_t nproblems;
	size_t problems_dropped;
	size_t skipped;         /* records dropped (each has a problem) */
	size_t unknown_flags;   /* nodes with state flags not in the table (kept, warned) */
};
#define GL_NODEOBS_SNAPSHOT_INIT {0}

void gl_nodeobs_snapshot_fini(struct gl_nodeobs_snapshot *s);

/* Each returns 0 (bad records are skipped into problems), or -GL_EFORMAT when
 * the input is not that tool's output at all (no NodeName= line, no header,
 * not a NodeList). */
int gl_scontrol_parse_nodes(const char *text, size_t len, struct gl_nodeobs_snapshot *s, struct gl_err *err) GL_MUSTCHECK;
int gl_slurm_events_parse_sacctmgr(const char *text, size_t len, struct gl_nodeobs_snapshot *s, struct gl_err *err) GL_MUSTCHECK;
int gl_slurm_events_parse_reservations(const char *text, size_t len, struct gl_nodeobs_snapshot *s,
				struct gl_err *err) GL_MUSTCHECK;
int gl_kube_nodes_parse(const char *json, size_t len, struct gl_nodeobs_snapshot *s, struct gl_err *err) GL_MUSTCHECK;

/* Exported for tests and the other parsers. */
/* Slurm state string ("MIXED+DRAIN", "DOWN*", "IDLE+POWERED_DOWN") -> avail;
 * flags not in the table are '+'-joined into unknown (may be NULL). */
enum gl_nodeobs_avail gl_nodeobs_state_classify(const char *s, size_t n, char *unknown, size_t unknown_n);
/* StateRaw of an event (node_states.h bits) -> avail, as the 22.05 rollup reads it. */
enum gl_nodeobs_avail gl_nodeobs_state_raw_classify(int64_t raw);
/* Gres "gpu:a100:4(S:0-1),gpu:v100:2,shard:8" -> GPUs per model. -GL_EINVAL with a message. */
int gl_nodeobs_parse_gres(const char *s, size_t n, struct gl_nodeobs_gpus *out, size_t *nout, struct gl_err *err) GL_MUSTCHECK;
/* TRES "cpu=8,gres/gpu=4,gres/gpu:a100=4" -> GPUs per model (typed entries;
 * an untyped remainder as model ""), total into *total. */
int gl_nodeobs_parse_tres_models(const char *s, size_t n, struct gl_nodeobs_gpus *out, size_t *nout, int64_t *total,
			       struct gl_err *err) GL_MUSTCHECK;
/* MIG profile "1g.10gb" -> compute slices (1), 0 when not a MIG profile name. */
int gl_nodeobs_mig_profile_slices(const char *s, size_t n);

#endif
