/* gpuledger — the daemon's dcgm-exporter source: scrapes every target of a
 * sources.dcgm[] entry concurrently with libcurl (multi interface: at most
 * max_parallel in flight, a per-target timeout, gzip, a body size cap),
 * reports each target's health under its URL, and ingests every good scrape
 * of the round in one transaction (gl_dcgm_ingest) at the round's time.
 *
 * curl_global_init() must have run before (main() does it).
 *
 * Ownership: targets from gl_dcgm_scrape_targets_load() are freed with
 * gl_dcgm_scrape_targets_free(). A fetch's body belongs to the fetch; on_done may
 * consume it and gl_dcgm_scrape_fetch_all() frees whatever is left.
 */
#ifndef GL_DCGM_SCRAPE_H
#define GL_DCGM_SCRAPE_H

#include "gl/common.h"
#include "gl/config.h"
#include "gl/strbuf.h"

#include <stddef.h>
#include <stdint.h>

#define GL_DCGM_SCRAPE_MAX_BODY (64u << 20) /* a scrape larger than this is refused */

struct gl_dcgm_scrape_target {
	char *url;
	char *node; /* NULL: the Hostname label names the node */
};

/* targets (whitespace/comma separated URLs, each optionally followed by
 * "node=NAME") plus targets_file (one "URL [NODE]" or "URL node=NAME" per
 * line, # comments), duplicates dropped. Zero targets is not an error
 * here. */
int gl_dcgm_scrape_targets_load(const struct gl_config_dcgm_source *src, struct gl_dcgm_scrape_target **out, size_t *n,
			 struct gl_err *err) GL_MUSTCHECK;
void gl_dcgm_scrape_targets_free(struct gl_dcgm_scrape_target *t, size_t n);
/* The targets string alone, appended to *out (*n used, *cap allocated): a
 * "node=NAME" token names the node of the URL before it. -GL_ECONFIG for a
 * node= without a URL before it, a second one, or an empty name. */
int gl_dcgm_scrape_targets_parse(const char *targets, struct gl_dcgm_scrape_target **out, size_t *n, size_t *cap,
			  struct gl_err *err) GL_MUSTCHECK;

struct gl_dcgm_scrape_fetch {
	const char *url;         /* borrowed */
	void *ud;                /* the caller's */
	/* results */
	int ok;                  /* HTTP 200 and a complete body within the limits */
	long http_status;        /* 0 when no response */
	char error[320];         /* why not ok */
	double duration_s;
	struct gl_strbuf body;
};

struct gl_dcgm_scrape_fetch_opts {
	int64_t timeout_ms;      /* whole transfer, per target */
	size_t max_parallel;
	size_t max_body;         /* 0: GL_DCGM_SCRAPE_MAX_BODY */
};

/* Fetches every f[i].url; calls on_done (may be NULL) once per fetch as it
 * completes, in completion order, from the calling thread. Returns 0 once
 * all are done (failures are in the fetches), or -GL_EIO when libcurl itself
 * could not run. */
int gl_dcgm_scrape_fetch_all(struct gl_dcgm_scrape_fetch *f, size_t n, const struct gl_dcgm_scrape_fetch_opts *o,
		      void (*on_done)(struct gl_dcgm_scrape_fetch *f, void *ud), void *ud, struct gl_err *err) GL_MUSTCHECK;

/* The daemon's dcgm-exporter source: src is a struct gl_config_dcgm_source. */
struct gl_store;
int gl_dcgm_scrape_source_run(struct gl_store *st, const struct gl_config *cfg, const void *src, int64_t now_s, char *summary,
		       size_t n, struct gl_err *err) GL_MUSTCHECK;

#endif
