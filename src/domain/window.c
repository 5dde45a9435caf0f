/* Windows and steps (see include/gl/window.h). */
#include "gl/window.h"
#include "gl/timeutil.h"

#include <stdlib.h>
#include <string.h>

static int64_t day_floor(int64_t t)
{
	return (t >= 0 ? t / 86400 : -((-t + 86399) / 86400)) * 86400;
}

int64_t gl_window_month_start(int64_t t)
{
	int64_t y;
	unsigned m, d;
	gl_timeutil_civil_from_days(day_floor(t) / 86400, &y, &m, &d);
	return gl_timeutil_days_from_civil(y, m, 1) * 86400;
}

int64_t gl_window_month_next(int64_t ms)
{
	int64_t y;
	unsigned m, d;
	gl_timeutil_civil_from_days(ms / 86400, &y, &m, &d);
	if (++m > 12) {
		m = 1;
		y++;
	}
	return gl_timeutil_days_from_civil(y, m, 1) * 86400;
}

static int64_t week_floor(int64_t t)
{
	int64_t day = day_floor(t) / 86400;
	/* 1970-01-01 was a Thursday: Monday-based weekday */
	int64_t wd = ((day % 7) + 7 + 3) % 7;
	return (day - wd) * 86400;
}

static int parse_month(const char *s, size_t n, int64_t *out)
{
	char buf[16];
	if (n != 7 || s[4] != '-')
		return -GL_EINVAL;
	memcpy(buf, s, 7);
	memcpy(buf + 7, "-01", 4);
	return gl_timeutil_parse(buf, 10, out);
}

/* One end of an "A,B" pair: *floor_s is the whole second (gl_timeutil_parse's
 * reading, which drops a fraction), *frac the fraction in units of 1e-18 s
 * (0 for a date or a month). A leap second is refused here with its own message: POSIX
 * seconds have none, and reading 23:59:60 as the next minute's :00 made
 * "...23:59:60Z,...00:00:00Z" an empty window reported as "end before
 * start". */
static int parse_end(const char *which, const char *s, size_t n, int64_t *floor_s, int64_t *frac, struct gl_err *err)
{
	*frac = 0;
	if (n >= 19 && (s[10] == 'T' || s[10] == 't' || s[10] == ' ') && s[16] == ':' && s[17] == '6' && s[18] == '0')
		return gl_err_set(err, GL_EINVAL,
				  "%s '%.*s' is a leap second (:60): times here are POSIX seconds, which have none; "
				  "write :59 or the next minute's :00",
				  which, (int)n, s);
	if (gl_timeutil_parse(s, n, floor_s) && parse_month(s, n, floor_s))
		return gl_err_set(err, GL_EINVAL, "bad %s '%.*s' (RFC3339 time or date%s)", which, (int)n, s,
				  memchr(s, ' ', n) ? "; a '+' in a URL query is a space: write %2B" : "");
	if (n > 20 && (s[19] == '.' || s[19] == ',')) {
		int64_t scale = 100000000000000000LL; /* 18 digits, to compare two fractions */
		for (size_t i = 20; i < n && s[i] >= '0' && s[i] <= '9'; i++, scale /= 10)
			*frac += (s[i] - '0') * scale;
	}
	return 0;
}

/* A window is echoed back in RFC 3339, whose years have 4 digits, and
 * handed to PostgreSQL, which has no year 0 (its years run 1 BC, AD 1:
 * "0000-01-01T00:00:00Z" as a timestamptz is "date/time field value out of
 * range", and the audit routes, which pass the window as text, answered
 * 500 where the others answered 200). So a window starts on or after
 * 0001-01-01T00:00:00Z and ends (exclusively) by year 9999's last second
 * ("9999-12" would end at 10000-01-01T00:00:00Z); outside, every route
 * answers 400 naming window. */
#define WINDOW_MIN_S (-62135596800LL) /* 0001-01-01T00:00:00Z */
#define WINDOW_MAX_END_S 253402300799LL /* 9999-12-31T23:59:59Z */

/* A date-shaped window that names no day ("2026-11-31", "2026-13") is
 * a calendar mistake, not an unknown window kind: say which part is wrong.
 * 0 when s does not look like a date or month at all. */
static int calendar_error(const char *s, size_t n, struct gl_err *err)
{
	static const char *const names[] = {"January", "February", "March",     "April",   "May",      "June",
					    "July",    "August",   "September", "October", "November", "December"};
	int y = 0, m = 0, d = 0;
	for (size_t i = 0; i < n; i++)
		if ((i == 4 || i == 7) ? s[i] != '-' : (s[i] < '0' || s[i] > '9'))
			return 0;
	if (n != 7 && n != 10)
		return 0;
	y = atoi(s);
	m = (s[5] - '0') * 10 + (s[6] - '0');
	if (m < 1 || m > 12)
		return gl_err_set(err, GL_EINVAL, "'%s' has no month %02d (months are 01 to 12)", s, m);
	if (n == 10) {
		int ny = m == 12 ? y + 1 : y, nm = m == 12 ? 1 : m + 1;
		int64_t days = gl_timeutil_days_from_civil(ny, (unsigned)nm, 1) - gl_timeutil_days_from_civil(y, (unsigned)m, 1);
		d = (s[8] - '0') * 10 + (s[9] - '0');
		if (d < 1 || d > days)
			return gl_err_set(err, GL_EINVAL, "the day %s does not exist: %s %04d has %lld days", s, names[m - 1],
					  y, (long long)days);
	}
	return 0;
}

static int parse_window(const char *s, int64_t now_s, struct gl_window *w, struct gl_err *err)
{
	size_t n = strlen(s);
	const char *comma = strchr(s, ',');

	if (n == 0)
		return gl_err_set(err, GL_EINVAL, "empty");
	if (comma) {
		int64_t a, b;
		int64_t fa, fb;
		size_t na = (size_t)(comma - s), nb = n - na - 1;
		int rc;
		if ((rc = parse_end("start", s, na, &a, &fa, err)) || (rc = parse_end("end", comma + 1, nb, &b, &fb, err)))
			return rc;
		/* compared before rounding, so .7 to .5 is refused and .5 to .7 is not */
		if (b < a || (b == a && fb <= fa))
			return gl_err_set(err, GL_EINVAL, "end before start");
		/* GPU-time is whole seconds: the window grows to the seconds the
		 * asked interval touches (start rounded down, end up) */
		w->start_s = a;
		w->end_s = b + (fb > 0);
		return 0;
	}
	if (!strcmp(s, "today")) {
		w->start_s = day_floor(now_s);
		w->end_s = w->start_s + 86400;
	} else if (!strcmp(s, "yesterday")) {
		w->end_s = day_floor(now_s);
		w->start_s = w->end_s - 86400;
	} else if (!strcmp(s, "week")) {
		w->end_s = now_s;
		w->start_s = now_s - 7 * 86400;
	} else if (!strcmp(s, "lastweek")) {
		w->end_s = week_floor(now_s);
		w->start_s = w->end_s - 7 * 86400;
	} else if (!strcmp(s, "month") || !strcmp(s, "thismonth")) {
		w->start_s = gl_window_month_start(now_s);
		w->end_s = gl_window_month_next(w->start_s);
	} else if (!strcmp(s, "lastmonth")) {
		w->end_s = gl_window_month_start(now_s);
		w->start_s = gl_window_month_start(w->end_s - 1);
	} else if (n >= 2 && (s[n - 1] == 'd' || s[n - 1] == 'h' || s[n - 1] == 'm') && s[0] >= '0' && s[0] <= '9') {
		char *end;
		long long k = strtoll(s, &end, 10);
		int64_t unit = s[n - 1] == 'd' ? 86400 : s[n - 1] == 'h' ? 3600 : 60;
		if (end != s + n - 1 || k <= 0 || k > 3660LL * 86400 / unit)
			return gl_err_set(err, GL_EINVAL, "bad duration '%s' (e.g. 7d, 24h, 90m)", s);
		w->end_s = now_s;
		w->start_s = now_s - k * unit;
	} else if (n == 7 && parse_month(s, n, &w->start_s) == 0) {
		w->end_s = gl_window_month_next(w->start_s);
	} else if (n == 10 && gl_timeutil_parse(s, n, &w->start_s) == 0) {
		w->end_s = w->start_s + 86400;
	} else if (calendar_error(s, n, err)) {
		return -GL_EINVAL;
	} else {
		return gl_err_set(err, GL_EINVAL,
				  "unknown window '%s' (use 2026-10, 2026-10-05, A,B in RFC3339, 7d, 24h, today, "
				  "yesterday, week, lastweek, month, lastmonth)",
				  s);
	}
	return 0;
}

int gl_window_parse(const char *s, int64_t now_s, struct gl_window *w, struct gl_err *err)
{
	struct gl_window v;
	int rc = parse_window(s, now_s, &v, err);
	if (rc)
		return rc;
	if (v.start_s < WINDOW_MIN_S)
		return gl_err_set(err, GL_EINVAL,
				  "starts before 0001-01-01T00:00:00Z (there is no year 0: the year before 0001 is 1 BC)");
	if (v.end_s > WINDOW_MAX_END_S)
		return gl_err_set(err, GL_EINVAL,
				  "ends after 9999-12-31T23:59:59Z (RFC 3339 years have 4 digits; '%s' would end in year "
				  "10000 or later)",
				  s);
	*w = v;
	return 0;
}

int gl_window_step_parse(const char *s, enum gl_window_step *out, struct gl_err *err)
{
	static const char *const names[] = {"none", "hour", "day", "week", "month"};
	for (size_t i = 0; i < GL_ARRAY_LEN(names); i++)
		if (!strcmp(s, names[i])) {
			*out = (enum gl_window_step)i;
			return 0;
		}
	return gl_err_set(err, GL_EINVAL, "unknown step '%s' (hour, day, week, month)", s);
}

const char *gl_window_step_name(enum gl_window_step s)
{
	static const char *const names[] = {"none", "hour", "day", "week", "month"};
	return (size_t)s < GL_ARRAY_LEN(names) ? names[s] : "none";
}

static int64_t step_next(enum gl_window_step step, int64_t t)
{
	switch (step) {
	case GL_WINDOW_STEP_HOUR: return (t >= 0 ? t / 3600 : -((-t + 3599) / 3600)) * 3600 + 3600;
	case GL_WINDOW_STEP_DAY: return day_floor(t) + 86400;
	case GL_WINDOW_STEP_WEEK: return week_floor(t) + 7 * 86400;
	case GL_WINDOW_STEP_MONTH: return gl_window_month_next(gl_window_month_start(t));
	default: return INT64_MAX;
	}
}

int gl_window_split(const struct gl_window *w, enum gl_window_step step, struct gl_window *out, size_t max, size_t *n,
		    struct gl_err *err)
{
	int64_t t = w->start_s;
	*n = 0;
	while (t < w->end_s) {
		int64_t e = step_next(step, t);
		if (e > w->end_s)
			e = w->end_s;
		if (*n == max)
			return gl_err_set(err, GL_ERANGE, "more than %zu steps", max);
		out[*n].start_s = t;
		out[*n].end_s = e;
		(*n)++;
		t = e;
	}
	return 0;
}
