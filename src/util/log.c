/* Logging (see include/gl/log.h). */
#include "gl/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

static enum gl_log_level g_level = GL_LOG_INFO;
static int g_fd = 2;

void gl_log_set_level(enum gl_log_level lvl) { g_level = lvl; }
enum gl_log_level gl_log_get_level(void) { return g_level; }
void gl_log_set_fd(int fd) { g_fd = fd; }

int gl_log_parse_level(const char *s, enum gl_log_level *out)
{
	static const char *const names[] = {"debug", "info", "warn", "error"};
	for (size_t i = 0; i < GL_ARRAY_LEN(names); i++) {
		if (strcasecmp(s, names[i]) == 0) {
			*out = (enum gl_log_level)i;
			return 0;
		}
	}
	return -GL_EINVAL;
}

static void vlog(enum gl_log_level lvl, const char *fmt, va_list ap)
{
	static const char *const tag[] = {"DEBUG", "INFO", "WARN", "ERROR"};
	char line[2048];
	struct timespec ts;
	struct tm tm;
	size_t n;
	int k;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = strftime(line, sizeof line, "%Y-%m-%dT%H:%M:%S", &tm);
	k = snprintf(line + n, sizeof line - n, ".%03ldZ %s ", ts.tv_nsec / 1000000L, tag[lvl]);
	n += (size_t)(k > 0 ? k : 0);
	k = vsnprintf(line + n, sizeof line - n, fmt, ap);
	if (k < 0)
		k = 0;
	n = (size_t)k >= sizeof line - n ? sizeof line - 2 : n + (size_t)k;
	line[n++] = '\n';
	/* One write per line keeps lines whole across threads. */
	if (write(g_fd, line, n) < 0) {
		/* nowhere left to report it */
	}
}

void gl_log(enum gl_log_level lvl, const char *fmt, ...)
{
	va_list ap;
	if (lvl < g_level)
		return;
	va_start(ap, fmt);
	vlog(lvl, fmt, ap);
	va_end(ap);
}

void gl_log_fail(struct gl_log_limiter *lim, int64_t now_s, enum gl_log_level lvl, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	lim->failures++;
	if (lim->last_logged_s != INT64_MIN && now_s - lim->last_logged_s < lim->interval_s) {
		lim->suppressed++;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (lim->suppressed)
		gl_log(lvl, "%s (repeated %llu more times since last report)", msg,
		       (unsigned long long)lim->suppressed);
	else
		gl_log(lvl, "%s", msg);
	lim->suppressed = 0;
	lim->last_logged_s = now_s;
}

void gl_log_ok(struct gl_log_limiter *lim, const char *what)
{
	if (lim->failures)
		gl_log(GL_LOG_INFO, "%s: recovered after %llu failures", what,
		       (unsigned long long)lim->failures);
	lim->failures = 0;
	lim->suppressed = 0;
	lim->last_logged_s = INT64_MIN;
}
