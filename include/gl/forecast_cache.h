/* gpuledger — the forecast answers: the JSON bodies of /v1/forecast and
 * /v1/capacity/forecast computed from a request's parameters as given, and
 * a small cache of them (64 slots, least recently used out) that the routes
 * read and the daemon's "forecast" source keeps warm, so a dashboard asking
 * again is served without refitting.
 *
 * Ownership: the cache is process-wide and locked inside; every body handed
 * out is appended to the caller's strbuf. The config and store handle are
 * borrowed.
 */
#ifndef GL_FORECAST_CACHE_H
#define GL_FORECAST_CACHE_H

#include "gl/audit.h"
#include "gl/common.h"
#include "gl/config.h"
#include "gl/strbuf.h"

#include <stddef.h>
#include <stdint.h>

struct gl_store;

/* The request as given (strings, so the daemon can recompute it). */
struct gl_forecast_cache_req {
	char kind; /* 'f' /v1/forecast, 'c' /v1/capacity/forecast (cluster in aggregate, risk in level) */
	char metric[32], step[16], horizon[16], level[16], aggregate[256], window[128], exclude[GL_AUDIT_FIELD_MAX];
	char plan[GL_AUDIT_FIELD_MAX]; /* /v1/capacity/forecast's what-if */
	/* /v1/forecast's filter as gl_filter_format writes it, a scoped
	 * token's scope already in it: part of the cache key, so a token is
	 * never served an answer computed for another's rows */
	char filter[GL_AUDIT_FIELD_MAX];
};

/* Opens the store only when an answer must be computed (ctx: the caller's). */
typedef int (*gl_forecast_cache_store_fn)(void *ctx, struct gl_store **st, struct gl_err *err);

/* Appends q's answer to body: the cached one while fresh (5 minutes), else
 * computed now and cached. On error *bad_param says a parameter was wrong
 * (*param names it, err says why: a 400); else computing failed (*param
 * may name the parameter that made it fail). */
int gl_forecast_cache_answer(const struct gl_forecast_cache_req *q, const struct gl_config *cfg, int64_t now_s,
			     gl_forecast_cache_store_fn get_store, void *ctx, struct gl_strbuf *body, const char **param,
			     int *bad_param, struct gl_err *err) GL_MUSTCHECK;
/* The dimensions /v1/forecast's filter may name: /v1/chargeback's (for a
 * route, which must not include the libpq-bound accounting header). */
const char *const *gl_forecast_cache_filter_dims(void);
/* Drops the cached answers of one kind ('c': /v1/capacity/forecast), e.g.
 * when the plan they drew changed. */
void gl_forecast_cache_drop(char kind);
/* The daemon's "forecast" source: recomputes the answers asked for in the
 * last day, so they stay warm, and drops the rest (src unused). */
int gl_forecast_cache_refresh(struct gl_store *st, const struct gl_config *cfg, const void *src, int64_t now_s,
			      char *summary, size_t n, struct gl_err *err);

#endif
