/* gpuledger — Kubernetes ingestion: one PodList snapshot, taken at a known
 * time, into `jobs` (one row per GPU pod, job_key "pod:<uid>"), one
 * transaction per batch; closing the pods that vanished and moving the
 * watermark happen together in the final transaction. docs/ingest.md
 * ("Kubernetes") explains last_seen_at, vanished pods and old snapshots.
 *
 * Ownership:
 * - struct gl_kube_ingest_opts is caller-owned; its strings are borrowed for
 *   the duration of the call only.
 * - gl_kube_ingest_doc() TAKES OWNERSHIP of doc (malloc'd) and frees it as
 *   soon as it is parsed, so the text and the row batches never peak
 *   together. doc may be NULL only when len is 0.
 * - struct gl_kube_ingest_result is caller-owned storage that the ingest
 *   functions fill (even on failure); release it with
 *   gl_kube_ingest_result_fini() (no-op on a zeroed or finalised result).
 */
#ifndef GL_KUBE_INGEST_H
#define GL_KUBE_INGEST_H

#include "gl/common.h"
#include "gl/config.h"
#include "gl/ingest.h"

#include <stddef.h>
#include <stdint.h>

struct gl_store;

#define GL_KUBE_INGEST_SOURCE "kube" /* ingest_state / ingest_runs source name */

struct gl_kube_ingest_opts {
	const char *cluster;       /* booked under this kubernetes cluster (created if new) */
	const char *input_name;    /* file name or command line, for messages and ingest_runs */
	int64_t at_s;              /* when the snapshot was taken (required, not GL_TIME_NONE) */
	int64_t batch_rows;        /* pods per transaction; <= 0: 50000 */
	int64_t max_skip_reasons;  /* problems kept in ingest_runs.skip_reasons */
	/* label keys copied into the tags; NULL = parser defaults, "" = none */
	const char *team_label, *project_label, *cost_center_label;
	size_t max_doc_bytes;      /* 0 = GL_KUBE_MAX_DOC_BYTES_DEFAULT */
};

struct gl_kube_ingest_result {
	/* lines_read = items in the document, ignored = pods requesting no GPU,
	 * skipped = pods dropped for a missing/bad key field (problems are the
	 * reasons, each naming its JSON path), inserted/updated/unchanged = the
	 * merge of the GPU pods; updated also counts the vanished pods closed. */
	struct gl_ingest_stats st;
	int64_t pods;              /* GPU pods in the snapshot */
	int64_t pending, running;  /* of those: not yet started / started and not ended */
	int64_t vanished;          /* open pods absent from the snapshot, closed now */
	int64_t watermark_prev_s;  /* the cluster's kube watermark before this run (GL_TIME_NONE: first) */
	int64_t run_id;            /* ingest_runs row, 0 when none was written */
};

void gl_kube_ingest_result_fini(struct gl_kube_ingest_result *res);

/* Ingests the PodList in doc (see Ownership). Errors: -GL_EFORMAT / -GL_EINVAL
 * / -GL_ERANGE from the parser (not a PodList, not JSON, too big or deep:
 * nothing written to jobs), -GL_EINVAL for a snapshot older than the cluster's
 * watermark (refused: newer state is never rewritten), -GL_EDB. A failure is
 * recorded as a 'failed' run; pods skipped for bad fields are not failures
 * (status 'partial', res->st.skipped > 0). */
int gl_kube_ingest_doc(struct gl_store *st, const struct gl_kube_ingest_opts *o, char *doc, size_t len,
		       struct gl_kube_ingest_result *res, struct gl_err *err) GL_MUSTCHECK;

/* Reads path (refusing files over the size cap before reading them) and
 * ingests it as above. */
int gl_kube_ingest_file(struct gl_store *st, const struct gl_kube_ingest_opts *o, const char *path,
			struct gl_kube_ingest_result *res, struct gl_err *err) GL_MUSTCHECK;

/* Records a run that produced no document (the command failed) as 'failed'
 * with why, touching nothing else: the last known state stays in force. */
int gl_kube_ingest_record_failure(struct gl_store *st, const char *cluster, const char *input_name, const char *why,
				  struct gl_err *err) GL_MUSTCHECK;

/* The daemon's kube source: src is a struct gl_config_kube_source. */
int gl_kube_ingest_source_run(struct gl_store *st, const struct gl_config *cfg, const void *src, int64_t now_s, char *summary,
		       size_t n, struct gl_err *err) GL_MUSTCHECK;

#endif
