/* gpuledger — UTC time helpers. Pure: no clock, no locale, no TZ.
 * Ownership: no allocation; output buffers are the caller's. */
#ifndef GL_TIMEUTIL_H
#define GL_TIMEUTIL_H

#include "gl/common.h"

#include <stdint.h>

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm). */
int64_t gl_timeutil_days_from_civil(int64_t y, unsigned m, unsigned d);
void gl_timeutil_civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d);
/* The UTC weekday of Unix time t: 0 Monday .. 6 Sunday (also before 1970). */
int gl_timeutil_weekday(int64_t t);

/* RFC 3339 / ISO 8601: "2026-10-01T12:00:00Z", "...+02:00", fractional
 * seconds (truncated), "2026-10-01 12:00:00" and a bare "2026-10-01" (00:00Z).
 * A time without an offset is UTC. */
int gl_timeutil_parse(const char *s, size_t n, int64_t *out_s) GL_MUSTCHECK;
/* "2026-10-01T12:00:00Z" into buf (>= 21 bytes). */
void gl_timeutil_format(int64_t t, char *buf, size_t n);
/* The UTC day of t, "2026-10-01", into buf (>= 11 bytes). */
void gl_timeutil_format_day(int64_t t, char *buf, size_t n);

#endif
