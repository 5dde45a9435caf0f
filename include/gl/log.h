/* gpuledger — logging to stderr with levels and rate limiting of repeats.
 *
 * Ownership: no allocation; gl_log_limiter is caller-owned state (static or
 * embedded in a longer-lived struct). Thread-safe: one write(2) per line.
 */
#ifndef GL_LOG_H
#define GL_LOG_H

#include "gl/common.h"

#include <stdint.h>

enum gl_log_level { GL_LOG_DEBUG = 0, GL_LOG_INFO, GL_LOG_WARN, GL_LOG_ERROR };

void gl_log_set_level(enum gl_log_level lvl);
enum gl_log_level gl_log_get_level(void);
/* Parses "debug|info|warn|error"; returns 0 or -GL_EINVAL. */
int gl_log_parse_level(const char *s, enum gl_log_level *out) GL_MUSTCHECK;
/* Redirects output to fd (default 2). For tests. */
void gl_log_set_fd(int fd);

void gl_log(enum gl_log_level lvl, const char *fmt, ...) GL_PRINTF(2, 3);

/* Rate limiting for a repeating failure: the first failure is logged, then at
 * most one line per interval_s with the count suppressed in between; the
 * first success after failures logs one "recovered" line. */
struct gl_log_limiter {
	int64_t interval_s;
	int64_t last_logged_s;
	uint64_t suppressed;
	uint64_t failures; /* consecutive */
};
#define GL_LOG_LIMITER_INIT(sec) {(sec), INT64_MIN, 0, 0}

/* now_s is a parameter so callers (and tests) control time. */
void gl_log_fail(struct gl_log_limiter *lim, int64_t now_s, enum gl_log_level lvl, const char *fmt, ...)
	GL_PRINTF(4, 5);
/* Logs "<what>: recovered after N failures" once if failures were seen. */
void gl_log_ok(struct gl_log_limiter *lim, const char *what);

#endif
