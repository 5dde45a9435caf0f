/* gpuledger — serving ingest: inference-server scrapes (src/sources/
 * servemetrics.c) -> per-series increases (src/domain/increase.c) ->
 * the serving tables (src/store/servingdb.c), one transaction and one
 * ingest_runs row per call, all scrapes of a call taken at one time.
 * Semantics in docs/serving.md.
 *
 * Ownership: gl_serving_ingest_batch_new() returns a batch the caller frees with
 * gl_serving_ingest_batch_free() (NULL no-op); gl_serving_ingest_batch_add() copies what
 * it needs from its arguments.
 */
#ifndef GL_SERVING_INGEST_H
#define GL_SERVING_INGEST_H

#include "gl/common.h"
#include "gl/config.h"
#include "gl/servingdb.h"

#include <stdint.h>

struct gl_store;

struct gl_serving_ingest_opts {
	const char *cluster;        /* the run's cluster (ingest_runs, the watermark) */
	const char *input_name;     /* file name or "N targets" */
	int64_t bucket_s;           /* ingest.bucket_s */
	int64_t claim_s;            /* how far back rows without a job are claimed when it appears */
	int64_t max_skip_reasons;
};
void gl_serving_ingest_opts_init(struct gl_serving_ingest_opts *o, const struct gl_config *cfg, const char *cluster);

/* One scrape of one endpoint. */
struct gl_serving_ingest_scrape_in {
	const char *endpoint, *cluster;
	const char *instance;       /* the process stream: a target URL (credentials blanked), "pod:NS/NAME", ... */
	const char *default_model;  /* for servers that label no model (TGI); NULL: "" */
	struct gl_servingdb_where where; /* kind NULL: the scrape's own pod/namespace labels, if any */
	const char *input;          /* names the scrape in reasons: file or URL */
};

struct gl_serving_ingest_batch;
struct gl_serving_ingest_batch *gl_serving_ingest_batch_new(int64_t at_s, int64_t bucket_s, int64_t max_skip_reasons);
void gl_serving_ingest_batch_free(struct gl_serving_ingest_batch *b);
/* Parses one scrape and adds its series. -GL_EFORMAT (err says why and
 * where) when it is not Prometheus text or has no serving metric: nothing
 * of it is added, and the caller records the target as failed. Bad lines
 * and values are recorded as "input:line: reason". */
int gl_serving_ingest_batch_add(struct gl_serving_ingest_batch *b, const struct gl_serving_ingest_scrape_in *in, const char *text,
			 size_t len, struct gl_err *err) GL_MUSTCHECK;
/* A target that gave nothing usable (the run becomes 'partial'). */
void gl_serving_ingest_batch_fail(struct gl_serving_ingest_batch *b, const char *input, const char *why);
size_t gl_serving_ingest_batch_series(const struct gl_serving_ingest_batch *b);

struct gl_serving_ingest_result {
	int64_t series, counted, baseline, resets, new_processes, stale, duplicates;
	int64_t flagged;        /* scrapes with a counter below its level without a restart */
	int64_t unattributed;   /* series with no job at the time */
	int64_t usage_rows, claimed_rows, new_jobs;
	int64_t bad_lines, bad_values, failed_inputs;
};

int gl_serving_ingest(struct gl_store *st, const struct gl_serving_ingest_opts *o, struct gl_serving_ingest_batch *b,
		      struct gl_serving_ingest_result *res, struct gl_err *err) GL_MUSTCHECK;

#endif
