/* gpuledger — nvidia-smi captures into the books (docs/ingest.md,
 * "nvidia-smi captures"): a `--query-gpu ... --format=csv [-l S]` capture or
 * `-q -x` XML of one node is parsed (include/gl/nvsmi.h), its samples
 * grouped into rounds by their second, oldest first, and each round fed to
 * the exporters' rollup (gl_dcgm_ingest_rounds: inventory, busy share,
 * attribution, late attribution), one run for the capture. With the node's
 * `--query-compute-apps` capture (or the XML's processes) and its Slurm
 * PIDs (`scontrol listpids`, or /proc/PID/cgroup lines; include/gl/jobpids.h),
 * a GPU running a job's processes is labelled with the job, as
 * dcgm-exporter's hpc_job label does. Re-ingesting a capture changes
 * nothing (a sample at or before a GPU's last one is not applied again).
 *
 * The daemon's source (sources.nvidia_smi[]) runs a command on a schedule
 * (`ssh {node} nvidia-smi ...`) or reads the files a node-side cron writes
 * (`/spool/{node}.csv`), for one node or a Slurm hostlist of them, all of
 * them one run.
 *
 * Ownership: inputs are borrowed for the call; results are plain values.
 */
#ifndef GL_NVSMI_INGEST_H
#define GL_NVSMI_INGEST_H

#include "gl/common.h"
#include "gl/config.h"
#include "gl/dcgm_ingest.h"

#include <stddef.h>
#include <stdint.h>

struct gl_store;

struct gl_nvsmi_ingest_opts {
	struct gl_dcgm_ingest_opts dcgm; /* cluster, input name (the capture's), rollup and idle policy */
	const char *node;                /* the node the capture was taken on */
	const char *fields;              /* the --query-gpu list of a noheader capture; NULL: its header */
	int64_t utc_offset_s;            /* the capturing host's local time minus UTC */
	int64_t at_s;                    /* GL_TIME_NONE; else the time of a one-round capture */
};

/* One input beside the capture, optional: text and its name for messages. */
struct gl_nvsmi_ingest_input {
	const char *text;                /* NULL: not given */
	size_t len;
	const char *name;
};

/* One node's inputs for gl_nvsmi_ingest_nodes. failed: the reason its
 * capture could not be had (a command that failed), or NULL. */
struct gl_nvsmi_ingest_node_input {
	const char *node;
	struct gl_nvsmi_ingest_input capture, apps, pids;
	const char *failed;
};

struct gl_nvsmi_ingest_result {
	struct gl_dcgm_ingest_result dcgm;
	int64_t failed_nodes;            /* nodes whose capture was not had or refused */
	int64_t rounds;                  /* distinct sample times (seconds) */
	int64_t samples;                 /* GPU readings */
	int64_t problems;                /* bad rows and values of the inputs */
	int64_t labelled;                /* readings of a GPU running a job's processes */
};

/* Parses the capture and ingests it. -GL_EFORMAT: not nvidia-smi output,
 * a required column missing, a --query-compute-apps capture given as the
 * capture, or no sample at all; nothing is written then. Bad rows and
 * values are the run's skip reasons ("input:line: reason"). */
int gl_nvsmi_ingest(struct gl_store *st, const struct gl_nvsmi_ingest_opts *o, const char *capture, size_t len,
		    const struct gl_nvsmi_ingest_input *apps, const struct gl_nvsmi_ingest_input *pids,
		    struct gl_nvsmi_ingest_result *res, struct gl_err *err) GL_MUSTCHECK;

/* The captures of several nodes as one run, their samples in rounds by
 * second across nodes. A node whose capture is missing (failed) or refused
 * is named in the run's failures (the run is partial) and the others are
 * ingested; with one node, its refusal is the error and nothing is written.
 * -GL_EIO when no node's capture was read. */
int gl_nvsmi_ingest_nodes(struct gl_store *st, const struct gl_nvsmi_ingest_opts *o,
			  const struct gl_nvsmi_ingest_node_input *in, size_t n, struct gl_nvsmi_ingest_result *res,
			  struct gl_err *err) GL_MUSTCHECK;

/* The daemon source (struct gl_config_nvsmi_source), the gl_daemon source
 * signature. */
int gl_nvsmi_ingest_source_run(struct gl_store *st, const struct gl_config *cfg, const void *src, int64_t now_s, char *summary,
			size_t n, struct gl_err *err) GL_MUSTCHECK;

#endif
