/* UTC time helpers (see include/gl/timeutil.h). */
#include "gl/timeutil.h"

#include <stdio.h>

int64_t gl_timeutil_days_from_civil(int64_t y, unsigned m, unsigned d)
{
	y -= m <= 2;
	const int64_t era = (y >= 0 ? y : y - 399) / 400;
	const unsigned yoe = (unsigned)(y - era * 400);
	const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

int gl_timeutil_weekday(int64_t t)
{
	int64_t day = t / 86400 - (t % 86400 < 0);
	return (int)(((day + 3) % 7 + 7) % 7); /* 1970-01-01 was a Thursday */
}

void gl_timeutil_civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
	z += 719468;
	const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	const unsigned doe = (unsigned)(z - era * 146097);
	const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	const unsigned mp = (5 * doy + 2) / 153;
	*d = doy - (153 * mp + 2) / 5 + 1;
	*m = mp < 10 ? mp + 3 : mp - 9;
	*y = (int64_t)yoe + era * 400 + (*m <= 2);
}

static int digits(const char *s, size_t n, size_t at, size_t count, int64_t *v)
{
	int64_t x = 0;
	if (at + count > n)
		return -1;
	for (size_t i = 0; i < count; i++) {
		char c = s[at + i];
		if (c < '0' || c > '9')
			return -1;
		x = x * 10 + (c - '0');
	}
	*v = x;
	return 0;
}

static const unsigned char mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

int gl_timeutil_parse(const char *s, size_t n, int64_t *out)
{
	int64_t y, mo, d, h = 0, mi = 0, sec = 0, oh, om;
	size_t i = 10;
	int64_t off = 0;

	if (digits(s, n, 0, 4, &y) || n < 10 || s[4] != '-' || digits(s, n, 5, 2, &mo) || s[7] != '-' ||
	    digits(s, n, 8, 2, &d))
		return gl_err_set(NULL, GL_EINVAL, "bad date");
	if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1])
		return -GL_EINVAL;
	if (mo == 2 && d == 29 && !((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
		return -GL_EINVAL;
	if (n > 10) {
		if (s[10] != 'T' && s[10] != 't' && s[10] != ' ')
			return -GL_EINVAL;
		if (digits(s, n, 11, 2, &h) || n < 16 || s[13] != ':' || digits(s, n, 14, 2, &mi))
			return -GL_EINVAL;
		i = 16;
		if (i < n && s[i] == ':') {
			if (digits(s, n, 17, 2, &sec))
				return -GL_EINVAL;
			i = 19;
			if (i < n && (s[i] == '.' || s[i] == ',')) {
				i++;
				size_t st = i;
				while (i < n && s[i] >= '0' && s[i] <= '9')
					i++;
				if (i == st)
					return -GL_EINVAL;
			}
		}
		if (h > 23 || mi > 59 || sec > 60)
			return -GL_EINVAL;
		if (i < n) {
			if ((s[i] == 'Z' || s[i] == 'z') && i + 1 == n) {
				i++;
			} else if ((s[i] == '+' || s[i] == '-') && i + 6 == n && s[i + 3] == ':' &&
				   !digits(s, n, i + 1, 2, &oh) && !digits(s, n, i + 4, 2, &om) && oh < 24 && om < 60) {
				off = (oh * 3600 + om * 60) * (s[i] == '+' ? 1 : -1);
				i = n;
			} else {
				return -GL_EINVAL;
			}
		}
	}
	if (i != n)
		return -GL_EINVAL;
	*out = gl_timeutil_days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 + h * 3600 + mi * 60 + sec - off;
	return 0;
}

void gl_timeutil_format_day(int64_t t, char *buf, size_t n)
{
	char full[32];
	gl_timeutil_format(t, full, sizeof full);
	snprintf(buf, n, "%.10s", full);
}

static void put2(char *p, unsigned v)
{
	p[0] = (char)('0' + v / 10);
	p[1] = (char)('0' + v % 10);
}

void gl_timeutil_format(int64_t t, char *buf, size_t n)
{
	int64_t days = t >= 0 ? t / 86400 : -((-t + 86399) / 86400);
	int64_t rem = t - days * 86400, y;
	unsigned m, d;
	gl_timeutil_civil_from_days(days, &y, &m, &d);
	/* digits by hand for the years of four: a list of 250,000 runs formats
	 * half a million times, and snprintf was a tenth of its writing */
	if (y >= 0 && y <= 9999 && n >= 21) {
		put2(buf, (unsigned)(y / 100));
		put2(buf + 2, (unsigned)(y % 100));
		buf[4] = '-';
		put2(buf + 5, m);
		buf[7] = '-';
		put2(buf + 8, d);
		buf[10] = 'T';
		put2(buf + 11, (unsigned)(rem / 3600));
		buf[13] = ':';
		put2(buf + 14, (unsigned)(rem % 3600 / 60));
		buf[16] = ':';
		put2(buf + 17, (unsigned)(rem % 60));
		buf[19] = 'Z';
		buf[20] = '\0';
		return;
	}
	snprintf(buf, n, "%04lld-%02u-%02uT%02lld:%02lld:%02lldZ", (long long)y, m, d, (long long)(rem / 3600),
		 (long long)(rem % 3600 / 60), (long long)(rem % 60));
}
