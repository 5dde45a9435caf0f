/* gpuledger — the daemon's sacct source: runs sacct itself per configured
 * cluster (TZ=UTC, day-sized -S/-E chunks, an overlap before the watermark)
 * and ingests its output; the watermark moves with the last batch of each
 * chunk, never when sacct fails.
 *
 * Ownership: borrows the store session and the source config.
 */
#ifndef GL_SACCT_POLL_H
#define GL_SACCT_POLL_H

#include "gl/common.h"
#include "gl/config.h"

struct gl_store;

struct gl_sacct_poll_result {
	int chunks;
	int64_t lines, inserted, updated, unchanged, skipped;
	int64_t watermark_s;
};

/* One run at time now_s. */
int gl_sacct_poll_run(struct gl_store *st, const struct gl_config *cfg, const struct gl_config_sacct_source *src,
		      int64_t now_s, struct gl_sacct_poll_result *res, struct gl_err *err) GL_MUSTCHECK;

/* The daemon's sacct source (gpuledger serve): src is a struct
 * gl_config_sacct_source; a one-line summary of the round goes to summary. */
int gl_sacct_poll_source_run(struct gl_store *st, const struct gl_config *cfg, const void *src, int64_t now_s, char *summary,
			size_t n, struct gl_err *err) GL_MUSTCHECK;

#endif
