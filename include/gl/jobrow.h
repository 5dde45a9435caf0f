/* gpuledger — the scheduler-neutral job row that every source (sacct, kube)
 * produces and store/jobs writes into the `jobs` table.
 *
 * Ownership: every char* is NUL-terminated and owned by whoever filled the
 * struct (usually slices copied into a per-batch arena or stack buffers); the
 * store only reads them during gl_jobs_batch_add(). NULL means SQL NULL.
 */
#ifndef GL_JOBROW_H
#define GL_JOBROW_H

#include <stdint.h>

#define GL_JOBROW_HELD_AS_BILLED INT64_MIN

struct gl_jobrow {
	const char *job_key;       /* natural key, unique per cluster (DBIndex, JobIDRaw@submit, pod UID) */
	const char *job_id;        /* display id: "7_3", "14+0", pod name */
	const char *job_id_raw;
	int64_t array_job_id;      /* -1 none */
	int64_t array_task_id;     /* -1 none */
	int64_t het_job_id;        /* -1 none */
	int64_t het_offset;        /* -1 none */
	const char *name;
	const char *user_name;
	int64_t uid;               /* -1 none */
	const char *group_name;
	const char *account;       /* Slurm account; NULL for kube */
	const char *partition;
	const char *qos;
	const char *wckey;
	const char *namespace_;    /* kube namespace; NULL for Slurm */
	const char *state;         /* normalised first token: "COMPLETED", or verbatim when unknown */
	int state_known;           /* 0 when state is not in the known list */
	int64_t state_by_uid;      /* -1 none */
	const char *exit_code;
	int64_t submit_s, eligible_s, start_s, end_s; /* GL_TIME_NONE = NULL */
	int64_t elapsed_s;         /* -1 none */
	int64_t suspended_s;       /* -1 none */
	int64_t timelimit_s;       /* -1 none/unlimited */
	int64_t nnodes, ncpus;     /* -1 none */
	int64_t req_mem_mb;        /* -1 none */
	int64_t gpu_micro;         /* allocated GPUs billed x 1,000,000 (MIG: instances; shares exact) */
	int64_t req_gpu_micro;     /* requested GPUs x 1,000,000 (pending demand) */
	int64_t phys_micro;        /* physical GPU capacity held x 1,000,000 (a 1g slice: 1/7);
	                            * GL_JOBROW_HELD_AS_BILLED: as gpu_micro (stored NULL) */
	const char *gpu_type;      /* "a100", "1g.10gb", NULL when untyped/mixed */
	const char *gpu_share;     /* kube sharing scheme ("whole", "hami", "runai"...); NULL: not a pod */
	const char *gpu_uuids_json; /* JSON array of bound GPU UUIDs; NULL none */
	const char *gpu_group;     /* run:ai GPU group; NULL none */
	const char *gpu_note;      /* why (part of) the GPUs is not billed; NULL when all is */
	const char *req_tres;
	const char *alloc_tres;
	const char *node_list;     /* compressed hostlist / node name as the source gave it */
	const char *nodes_json;    /* JSON array of expanded node names, e.g. ["gpu01","gpu02"]; NULL none */
	const char *tags_json;     /* JSON object of ownership tags/labels; NULL = {} */
	int64_t last_seen_s;       /* kube: last time the source saw it (vanished-pod end); else GL_TIME_NONE */
	int64_t array_tasks;       /* pending array meta row: tasks it stands for; 0 = not one (NULL) */
	int array_tasks_partial;   /* 1: its range list was cut, array_tasks is a lower bound */
};

#endif
