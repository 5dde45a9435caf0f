/* gpuledger — which job a GPU sample belongs to (docs/ingest.md,
 * "dcgm-exporter"). Pure: no I/O, no libpq; the jobs running at the sample
 * time are an input.
 *
 * Best source first, per GPU:
 *   1. hpc_job labels: the jobs whose job id (display, raw, or het leader id)
 *      is a label and whose node list holds the GPU's node; the GPU is split
 *      equally between them (dcgm-exporter repeats a sample per job sharing
 *      the GPU: split, never summed).
 *   2. pod labels: the jobs of that namespace whose name (or job id) is the
 *      pod; split equally likewise.
 *   3. node: on a node where no GPU carries hpc_job or pod labels (a labelled
 *      node says which GPUs are free), the jobs with GPUs running there. One
 *      job holding at least every GPU of the node: share 1, 'node-exclusive'.
 *      Otherwise each job gets its per-node allocation (held_micro / nodes)
 *      over max(sum of allocations, GPUs on the node) of every GPU of the
 *      node, 'node-estimated': the GPU-seconds per job are exact, which GPU
 *      was whose is not known.
 * A label that matches no job falls through to the next source. MIG parents
 * (skip = 1) get nothing: their time is in their instances.
 *
 * Ownership: inputs are borrowed; gl_dcgm_attrib_assign() returns a malloc'd
 * array the caller free()s.
 */
#ifndef GL_DCGM_ATTRIB_H
#define GL_DCGM_ATTRIB_H

#include "gl/common.h"
#include "gl/dcgm.h"

#include <stddef.h>
#include <stdint.h>

enum gl_dcgm_attrib_kind {
	GL_DCGM_ATTRIB_HPC_JOB = 0,
	GL_DCGM_ATTRIB_POD,
	GL_DCGM_ATTRIB_NODE_EXCLUSIVE,
	GL_DCGM_ATTRIB_NODE_ESTIMATED,
};
/* "hpc_job", "pod", "node-exclusive", "node-estimated" (the stored names). */
const char *gl_dcgm_attrib_kind_name(enum gl_dcgm_attrib_kind k);

/* A job running at the sample time. Strings never NULL ("" when unknown). */
struct gl_dcgm_attrib_job {
	int64_t job_pk;
	const char *job_id;     /* display id: "7_3", "14+0", pod name */
	const char *job_id_raw; /* what SLURM_JOB_ID (hence hpc_job) holds for array tasks */
	const char *het_job_id; /* het leader id: hpc_job of every component */
	const char *ns;         /* Kubernetes namespace */
	const char *name;       /* Kubernetes pod name / job name */
	int64_t held_micro;     /* physical GPUs held x 1,000,000, all nodes */
	int64_t start_s;        /* copied to its shares */
	const char *const *nodes;
	size_t nnodes;
};

struct gl_dcgm_attrib_gpu {
	const char *node;
	const char *const *jobs; /* hpc_job label values */
	size_t njobs;
	const struct gl_dcgm_pod *pods;
	size_t npods;
	int skip;                /* MIG parent: never attributed, not counted on its node */
};

struct gl_dcgm_attrib_share {
	size_t gpu;              /* index into the gpus array */
	int64_t job_pk;
	double share;            /* (0, 1]; the shares of one GPU add up to at most 1 */
	enum gl_dcgm_attrib_kind kind;
	int64_t job_start_s;     /* the job's start_s: its share never covers time before it */
};

/* Shares for every GPU, grouped by GPU in input order. *out is NULL when
 * *nout is 0. */
void gl_dcgm_attrib_assign(const struct gl_dcgm_attrib_gpu *gpus, size_t ngpus, const struct gl_dcgm_attrib_job *jobs,
		       size_t njobs, struct gl_dcgm_attrib_share **out, size_t *nout);

#endif
