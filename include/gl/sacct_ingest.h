/* gpuledger — sacct ingestion: streams sacct text (a file or a command's
 * stdout) through the pure parser into `jobs`, one transaction per batch,
 * the watermark in the same transaction as the last batch.
 *
 * Ownership: gl_sacct_ingest_begin() returns a handle the caller releases
 * with gl_sacct_ingest_free() (NULL no-op) after gl_sacct_ingest_finish().
 * opts strings are borrowed for the handle's lifetime.
 */
#ifndef GL_SACCT_INGEST_H
#define GL_SACCT_INGEST_H

#include "gl/common.h"
#include "gl/ingest.h"

struct gl_store;

struct gl_sacct_ingest_opts {
	const char *cluster;       /* book under this cluster; rows naming another Cluster are skipped */
	const char *input_name;    /* file name or command line, for messages and ingest_runs */
	const char *fields;        /* NULL: a header line if present, else the recommended list */
	const char *delimiter;     /* NULL: "|" */
	int64_t batch_rows;
	int64_t max_skip_reasons;
	int64_t watermark_s;       /* GL_TIME_NONE: leave the watermark alone */
	const char *source;        /* ingest_state/ingest_runs source name, default "sacct" */
	int64_t seen_s;            /* when the input was captured (a saved file's --at or mtime): the
				    * jobs it shows open were seen open then; 0: none (a poll, whose
				    * watermark says it for every open job) */
};

struct gl_sacct_ingest;

int gl_sacct_ingest_begin(struct gl_store *st, const struct gl_sacct_ingest_opts *opts, struct gl_sacct_ingest **out,
			  struct gl_err *err) GL_MUSTCHECK;
/* Feeds bytes (any chunking); complete lines are parsed, full batches committed. */
int gl_sacct_ingest_feed(struct gl_sacct_ingest *in, const char *buf, size_t n, struct gl_err *err) GL_MUSTCHECK;
/* Commits the rest. source_ok = 0 when the producer failed (the watermark is
 * then not moved and the run is 'failed' with source_error). Copies the final
 * counters into *stats when non-NULL (caller finis it). */
int gl_sacct_ingest_finish(struct gl_sacct_ingest *in, int source_ok, const char *source_error,
			   struct gl_ingest_stats *stats, struct gl_err *err) GL_MUSTCHECK;
/* Instead of finish when the daemon is stopping: writes no more rows (a
 * flush now would only wait on the database again; the rows not committed
 * are read again at the next start, the watermark not having moved) and
 * records the run as 'failed' with why. */
int gl_sacct_ingest_abandon(struct gl_sacct_ingest *in, const char *why, struct gl_ingest_stats *stats,
			    struct gl_err *err) GL_MUSTCHECK;
void gl_sacct_ingest_free(struct gl_sacct_ingest *in);

/* Whole file convenience. */
int gl_sacct_ingest_file(struct gl_store *st, const struct gl_sacct_ingest_opts *opts, const char *path,
			 struct gl_ingest_stats *stats, struct gl_err *err) GL_MUSTCHECK;

#endif
