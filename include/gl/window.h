/* gpuledger — time windows and steps for the API (OpenCost vocabulary).
 * Pure: `now` is a parameter. Ownership: no allocation; outputs are the caller's.
 *
 * window: "2026-10" (a month), "2026-10-05" (a day), an RFC3339 pair
 * "A,B" (also dates), "7d" / "24h" / "90m" (ending now), "today",
 * "yesterday", "week" (last 7 days), "month" / "thismonth" (month to date),
 * "lastmonth", "lastweek" (the previous Monday-to-Monday week, UTC).
 * Every window is [start, end) in UTC seconds.
 * In "A,B", fractional seconds are compared as given (B must be after A),
 * then the window grows to whole seconds: start rounded down, end up
 * ("...00.5Z,...00.7Z" is the one second from :00 to :01). A leap second
 * (:60) is refused: these are POSIX seconds. A window must lie within
 * 0001-01-01T00:00:00Z .. 9999-12-31T23:59:59Z (PostgreSQL has no year 0;
 * RFC 3339 no year 10000), so "0000-01" and "9999-12" are refused.
 */
#ifndef GL_WINDOW_H
#define GL_WINDOW_H

#include "gl/common.h"

#include <stddef.h>
#include <stdint.h>

struct gl_window {
	int64_t start_s, end_s;
};

enum gl_window_step { GL_WINDOW_STEP_NONE = 0, GL_WINDOW_STEP_HOUR, GL_WINDOW_STEP_DAY, GL_WINDOW_STEP_WEEK, GL_WINDOW_STEP_MONTH };

/* Errors (-GL_EINVAL) say what is wrong without the parameter name
 * ("end before start"); the caller adds "window: ". */
int gl_window_parse(const char *s, int64_t now_s, struct gl_window *w, struct gl_err *err) GL_MUSTCHECK;
int gl_window_step_parse(const char *s, enum gl_window_step *out, struct gl_err *err) GL_MUSTCHECK;
const char *gl_window_step_name(enum gl_window_step s);

/* Splits w into steps aligned to UTC boundaries (weeks start on Monday); the
 * first and last steps are clipped to w. GL_WINDOW_STEP_NONE gives w itself.
 * Returns -GL_ERANGE when more than max steps would be needed. */
int gl_window_split(const struct gl_window *w, enum gl_window_step step, struct gl_window *out, size_t max, size_t *n,
		    struct gl_err *err) GL_MUSTCHECK;

/* Start of the UTC month containing t, and of the month after it. */
int64_t gl_window_month_start(int64_t t);
int64_t gl_window_month_next(int64_t month_start);

#endif
