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

enum gl_bounds {
	GL_BOUNDS_CLUSTER,   /* cluster names */
	GL_BOUNDS_NODE,      /* node and host names */
	GL_BOUNDS_USER,      /* users and groups */
	GL_BOUNDS_ACCOUNT,   /* Slurm accounts, partitions, QoS, WCKeys */
	GL_BOUNDS_NAMESPACE, /* Kubernetes namespaces */
	GL_BOUNDS_OBJECT,    /* Kubernetes object names: pods, their owners, containers; owner kinds */
	GL_BOUNDS_LABEL,     /* label keys and values (owners: team, project, cost centre) */
	GL_BOUNDS_JOB_ID,    /* scheduler job ids (JobID, JobIDRaw, hpc_job) */
	GL_BOUNDS_JOB_NAME,  /* job names */
	GL_BOUNDS_NAME,      /* policy names, owners (team) a client names */
	GL_BOUNDS_GPU_MODEL, /* GPU model and type names, MIG profiles */
	GL_BOUNDS_UUID,      /* pod uids, GPU UUIDs */
	GL_BOUNDS_TEXT,      /* other short text kept with a record: states, exit codes, reasons, TRES */
	GL_BOUNDS_NODE_LIST, /* Slurm hostlists (NodeList, reservation and event node lists) */
	GL_BOUNDS__COUNT
};

/* The largest length in bytes a value of kind k may have. */
size_t gl_bounds_max(enum gl_bounds k);
/* What k bounds, for messages and the docs ("pod and owner names"). */
const char *gl_bounds_what(enum gl_bounds k);
/* 0 when len bytes fit k; else -1 with why = "31457280 bytes, over the
 * 253-byte bound of Kubernetes object names" (NUL-terminated, cut to n). */
int gl_bounds_check(enum gl_bounds k, size_t len, char *why, size_t n);

#endif
