/* gpuledger — byte bounds of every identifier a source stores (docs/ingest.md,
 * "Bounded keys"): one table, used by every parser (sacct, scontrol, sacctmgr
 * events, kubectl pods and nodes, dcgm-exporter) and by the API for what a
 * client writes. PostgreSQL refuses an index entry over ~2.7 kB for the
 * whole COPY ("index row requires 360112 bytes" failed a whole Kubernetes
 * snapshot for one 30 MB pod name), and an unindexed 30 MB user or job
 * name only bloats every row and answer it reaches. A longer value skips
 * its record with the reason; the rest lands.
 *
 * Pure; nothing allocated.
 */
#ifndef GL_BOUNDS_H
#define GL_BOUNDS_H

#include <stddef.h>

enum gl_bound {
	GL_BOUND_CLUSTER,   /* cluster names */
	GL_BOUND_NODE,      /* node and host names */
	GL_BOUND_USER,      /* users and groups */
	GL_BOUND_ACCOUNT,   /* Slurm accounts, partitions, QoS, WCKeys */
	GL_BOUND_NAMESPACE, /* Kubernetes namespaces */
	GL_BOUND_OBJECT,    /* Kubernetes object names: pods, their owners, containers; owner kinds */
	GL_BOUND_LABEL,     /* label keys and values (owners: team, project, cost centre) */
	GL_BOUND_JOB_ID,    /* scheduler job ids (JobID, JobIDRaw, hpc_job) */
	GL_BOUND_JOB_NAME,  /* job names */
	GL_BOUND_NAME,      /* policy names, owners (team) a client names */
	GL_BOUND_GPU_MODEL, /* GPU model and type names, MIG profiles */
	GL_BOUND_UUID,      /* pod uids, GPU UUIDs */
	GL_BOUND_TEXT,      /* other short text kept with a record: states, exit codes, reasons, TRES */
	GL_BOUND_NODE_LIST, /* Slurm hostlists (NodeList, reservation and event node lists) */
	GL_BOUND__COUNT
};

/* The largest length in bytes a value of kind k may have. */
size_t gl_bound_max(enum gl_bound k);
/* What k bounds, for messages and the docs ("pod and owner names"). */
const char *gl_bound_what(enum gl_bound k);
/* 0 when len bytes fit k; else -1 with why = "31457280 bytes, over the
 * 253-byte bound of Kubernetes object names" (NUL-terminated, cut to n). */
int gl_bound_check(enum gl_bound k, size_t len, char *why, size_t n);

#endif
