/* gpuledger — what a Kubernetes pod asks for or holds of GPUs, under every
 * sharing scheme in use: whole GPUs, MIG, NVIDIA time-slicing and MPS, HAMi,
 * Volcano vGPU and gpu-share, Alibaba gpushare/cGPU, run:ai (and KAI)
 * fractions and reservations, and the Alibaba traces' gpu-milli. The table
 * of resources and annotations and what each bills is in docs/ingest.md
 * ("Shared GPUs on Kubernetes"); this module is that table.
 *
 * Pure: no I/O, no clock, no libpq. Node facts the pod does not carry
 * (time-slicing replicas per GPU, a GPU's memory) come from the caller
 * (struct gl_kubegpu_node_gpu, e.g. from a kubectl get nodes snapshot).
 *
 * Units: GPUs are micro-GPUs (1,000,000 = one GPU). Milli-GPUs are too
 * coarse for the shares that occur: run:ai writes 1/7 of a GPU as
 * 0.14285714285714285 and time-slicing gives 1/N for any N, where a
 * milli-GPU floor loses up to 0.7 % of the GPU per pod (142 of 142.857);
 * micro-GPUs lose at most 1e-6 of a GPU per pod. Shares are rounded DOWN,
 * so the pods sharing one GPU never add up to more than it: what rounding
 * leaves is idle capacity, never billed. A year of a 100,000-GPU fleet is
 * 3.2e18 micro-GPU-seconds, inside int64; PostgreSQL sums bigint as numeric.
 *
 * Two quantities, because MIG is billed per instance: gpu_micro is what the
 * pod is billed in the unit its rate applies to (GPUs of its model; for
 * MIG, instances of gpu_type, as rates are per MIG profile), phys_micro the
 * share of physical GPUs it holds (a 1g slice is 1/7 of a GPU), which is what
 * a GPU's capacity bounds.
 *
 * Ownership: struct gl_kubegpu is caller-owned; its strings and uuids are
 * heap memory released by gl_kubegpu_fini() (a no-op on a zeroed one).
 * The pod JSON and the node table are only read during gl_kubegpu_read().
 */
#ifndef GL_KUBEGPU_H
#define GL_KUBEGPU_H

#include "gl/common.h"

#include <stddef.h>
#include <stdint.h>

#define GL_KUBEGPU_NAME_MAX 64
#define GL_KUBEGPU_MAX_UUIDS 64

enum gl_kubegpu_share {
	GL_KUBEGPU_SHARE_NONE = 0,          /* no GPU intent */
	GL_KUBEGPU_SHARE_WHOLE,             /* nvidia.com/gpu, amd.com/gpu, volcano.sh/gpu-number */
	GL_KUBEGPU_SHARE_MIG,               /* nvidia.com/mig-<profile>, or run:ai MIG annotations */
	GL_KUBEGPU_SHARE_TIMESLICE,         /* time-slicing / MPS replicas (nvidia.com/gpu.shared, or renameByDefault=false) */
	GL_KUBEGPU_SHARE_HAMI,              /* HAMi vGPU: nvidia.com/gpucores, gpumem, gpumem-percentage, vgpu */
	GL_KUBEGPU_SHARE_VOLCANO,           /* volcano.sh/vgpu-*, volcano.sh/gpu-memory */
	GL_KUBEGPU_SHARE_ALIYUN,            /* aliyun.com/gpu-mem, aliyun.com/gpu-core.percentage */
	GL_KUBEGPU_SHARE_RUNAI,             /* run:ai / KAI fraction (gpu-fraction, runai-allocated-gpus, gpu-memory) */
	GL_KUBEGPU_SHARE_RUNAI_RESERVATION, /* run:ai's pod holding a shared GPU: billed to its users */
	GL_KUBEGPU_SHARE_TRACE,             /* gpu-milli annotations (Alibaba cluster traces) */
	GL_KUBEGPU_SHARE_MIXED,             /* more than one of these in one pod */
};
/* "whole", "mig", "timeslice", "hami", "volcano", "aliyun", "runai",
 * "runai_reservation", "trace", "mixed", "none". */
const char *gl_kubegpu_share_name(enum gl_kubegpu_share s);

/* What the pod cannot say about its node. */
struct gl_kubegpu_node_gpu {
	const char *node;     /* spec.nodeName */
	int replicas;         /* nvidia.com/gpu.replicas: time-slicing/MPS replicas per GPU; <= 1 none */
	int64_t memory_mib;   /* MiB per GPU (nvidia.com/gpu.memory); 0 unknown */
	int64_t gpus;         /* physical GPUs of the node (its capacity); 0 unknown */
};

struct gl_kubegpu {
	enum gl_kubegpu_share share;
	int intent;              /* asks for or holds GPUs in some way (billed or not) */
	int64_t gpu_micro;       /* GPUs billed (MIG: instances), micro-GPUs, rounded down */
	int64_t phys_micro;      /* physical GPU capacity held, micro-GPUs; -1 unknown */
	int64_t replicas;        /* time-slicing/MPS replicas requested */
	char gpu_type[GL_KUBEGPU_NAME_MAX];  /* the MIG profile when every GPU is one, else "" */
	char gpu_model[GL_KUBEGPU_NAME_MAX]; /* a model the pod names (run:ai gputype, Alibaba card model), else "" */
	char **uuids;            /* bound GPU / MIG device UUIDs (HAMi, Volcano, run:ai), in order */
	size_t nuuids;
	char *uuids_json;        /* the same as a JSON array, NULL when none (gl_kubegpu_uuids_refresh) */
	char *group;             /* run:ai GPU group (label runai-gpu-group); NULL none */
	char *note;              /* why (part of) the GPU intent is not billed; NULL when all is */
	int overflow;            /* a request beyond int64: the pod is unusable */
};

/* Reads the GPU intent of one pod object (item) whose JSON path is `path`
 * ("items[3]"); node is the pod's node's facts or NULL. Bad fields it
 * ignores are reported through problem(ud, "items[3]....: reason"). */
struct cJSON;
void gl_kubegpu_read(const struct cJSON *item, const char *path, const struct gl_kubegpu_node_gpu *node,
		     struct gl_kubegpu *out, void (*problem)(void *ud, const char *msg), void *ud);
void gl_kubegpu_fini(struct gl_kubegpu *g);
/* Rebuilds uuids_json from uuids (after they changed). */
void gl_kubegpu_uuids_refresh(struct gl_kubegpu *g);

/* "0.14285714285714285" -> 142857: a non-negative decimal (no exponent) as
 * micro-units, rounded down. -GL_EINVAL, or -GL_ERANGE beyond 1e12. */
int gl_kubegpu_decimal_micro(const char *s, int64_t *micro) GL_MUSTCHECK;
/* A Kubernetes quantity from a JSON string or number, in milli-units. */
int gl_kubegpu_quantity(const struct cJSON *v, int64_t *milli) GL_MUSTCHECK;

#endif
