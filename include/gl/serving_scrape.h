/* gpuledger — the daemon's serving source (src/ingest/serving_scrape.c):
 * scrapes the inference servers' /metrics of one group and writes them
 * through gl_serving_ingest.
 *
 * Ownership: nothing is allocated for the caller; the session is borrowed.
 */
#ifndef GL_SERVING_SCRAPE_H
#define GL_SERVING_SCRAPE_H

#include "gl/common.h"
#include "gl/config.h"

#include <stddef.h>
#include <stdint.h>

struct gl_store;

/* src is the first sources.serving[] entry of a cluster and interval; a
 * round scrapes every entry of that group. */
int gl_serving_scrape_source_run(struct gl_store *st, const struct gl_config *cfg, const void *src, int64_t now_s,
			  char *summary, size_t n, struct gl_err *err) GL_MUSTCHECK;

#endif
