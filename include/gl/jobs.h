/* gpuledger — writing jobs: batches of gl_jobrow rows loaded with COPY into a
 * temporary staging table and merged into `jobs` with one INSERT ... ON
 * CONFLICT, all inside the caller's transaction.
 *
 * Ownership: gl_jobs_batch_new() returns a batch the caller frees with
 * gl_jobs_batch_free() (NULL is a no-op). gl_jobs_batch_add() copies what it
 * needs from the row; the row's strings may be reused afterwards.
 */
#ifndef GL_JOBS_H
#define GL_JOBS_H

#include "gl/common.h"
#include "gl/jobrow.h"

#include <stdint.h>

struct gl_store;

struct gl_jobs_batch;

struct gl_jobs_merge_counts {
	int64_t inserted, updated, unchanged;
};

/* Rows are written for cluster_id (its id goes into each row). */
struct gl_jobs_batch *gl_jobs_batch_new(int cluster_id);
void gl_jobs_batch_free(struct gl_jobs_batch *b);
void gl_jobs_batch_add(struct gl_jobs_batch *b, const struct gl_jobrow *row);
size_t gl_jobs_batch_rows(const struct gl_jobs_batch *b);
size_t gl_jobs_batch_bytes(const struct gl_jobs_batch *b);
/* The staged COPY text (for benchmarks comparing against raw COPY). */
const char *gl_jobs_batch_copy_data(const struct gl_jobs_batch *b, size_t *len);

/* Merges the batch into jobs for cluster_id and empties it: keys not in jobs
 * yet go in by a direct COPY (bulk-insert path), the others through a staging
 * table and one INSERT ... ON CONFLICT that skips unchanged rows. Must run
 * inside a transaction the caller owns (the watermark goes in the same one),
 * holding the per-cluster ingest lock (gl_jobs_lock) so two ingesters cannot
 * both insert a new key. Later rows with the same job_key win. */
int gl_jobs_merge(struct gl_store *st, int cluster_id, struct gl_jobs_batch *b, struct gl_jobs_merge_counts *out,
		  struct gl_err *err) GL_MUSTCHECK;

/* Fresh mode: the caller checked, under gl_jobs_lock in its open
 * transaction, that cluster_id had no jobs at all. Merges then skip the
 * lookup of existing keys; the batch remembers (owns copies of) the keys it
 * inserted, so a key repeated in a later merge still takes the staging
 * merge. Valid only inside that transaction: set it back to 0 (which frees
 * the remembered keys) before the transaction ends. */
void gl_jobs_batch_set_fresh(struct gl_jobs_batch *b, int fresh);
/* In fresh mode: rows with new keys go straight into an open `COPY jobs`
 * on st as they are added (the server loads while the caller builds rows);
 * gl_jobs_merge() ends it and reports its errors. Until then st must not be
 * used for anything else. gl_jobs_batch_set_fresh(b, 0) abandons an open
 * COPY (the transaction then fails): call it before a ROLLBACK. */
void gl_jobs_batch_stream(struct gl_jobs_batch *b, struct gl_store *st);

/* Transaction-scoped advisory lock serialising ingest into one cluster. */
int gl_jobs_lock(struct gl_store *st, int cluster_id, struct gl_err *err) GL_MUSTCHECK;

/* Finds or creates the cluster; kind is "slurm" or "kubernetes". A name that
 * exists with another kind is an error once the cluster has data
 * (GL_JOBS_CLUSTER_HAS_DATA_SQL); before, it takes this kind. Called when a run starts, before
 * anything is read: the run's ingest_runs row names the cluster by id, and
 * a run that fails keeps its record. */
int gl_jobs_cluster_ensure(struct gl_store *st, const char *name, const char *kind, int *cluster_id,
		      struct gl_err *err) GL_MUSTCHECK;

/* SQL, true when cluster cid (an SQL expression) has data: jobs, exporter
 * nodes, scheduler node spans or snapshots, or a watermark (a run that read
 * it through, if it found nothing yet). A cluster only failed runs named
 * (gl_jobs_cluster_ensure's row, then nothing committed) has none, and the
 * listings of clusters leave it out (docs/ingest.md, "A new cluster"). */
#define GL_JOBS_CLUSTER_HAS_DATA_SQL(cid)                                              \
	"(EXISTS (SELECT 1 FROM jobs hd WHERE hd.cluster_id = " cid ")"            \
	" OR EXISTS (SELECT 1 FROM nodes hd WHERE hd.cluster_id = " cid ")"        \
	" OR EXISTS (SELECT 1 FROM node_gpu_spans hd WHERE hd.cluster_id = " cid ")" \
	" OR EXISTS (SELECT 1 FROM node_state_spans hd WHERE hd.cluster_id = " cid ")" \
	" OR EXISTS (SELECT 1 FROM sched_snapshots hd WHERE hd.cluster_id = " cid ")" \
	" OR EXISTS (SELECT 1 FROM ingest_state hd WHERE hd.cluster_id = " cid "))"

/* The column list of the batch rows, in COPY order (for benchmarks). */
extern const char gl_jobs_stage_columns[];

#endif
