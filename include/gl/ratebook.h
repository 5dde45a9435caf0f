/* gpuledger — the cost model as it stands in the database, for reading:
 * every rate and every owner rule (`gpuledger rates list`).
 *
 * Ownership: gl_ratebook_read() fills a caller-owned struct gl_ratebook
 * that gl_ratebook_fini() empties (also after a failure).
 */
#ifndef GL_RATEBOOK_H
#define GL_RATEBOOK_H

#include "gl/common.h"
#include "gl/store.h"

#include <stdint.h>

struct gl_ratebook_rate {
	char *gpu_model, *currency;
	int64_t micros_per_gpu_hour;
	char *valid_from, *valid_to; /* timestamptz as the database prints it ("-infinity" too) */
};

struct gl_ratebook_owner {
	int64_t priority;
	char *cluster;               /* "*" for any */
	char *match_field, *match_value, *team, *project, *cost_center; /* project, cost_center "" when none */
};

struct gl_ratebook {
	struct gl_ratebook_rate *rates; /* by model, then from */
	size_t n_rates;
	struct gl_ratebook_owner *owners; /* by priority, then rule id */
	size_t n_owners;
	char *text[2];
};

int gl_ratebook_read(struct gl_store *st, struct gl_ratebook *rb, struct gl_err *err) GL_MUSTCHECK;
void gl_ratebook_fini(struct gl_ratebook *rb);

#endif
