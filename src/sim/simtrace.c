/* Trace slices for the fleet simulator (see include/gl/simtrace.h). */
#include "gl/simtrace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_COLS 8

struct line_iter {
	const char *p, *end, *name;
	int lineno;
};

/* Next data line split at tabs into col[] (NUL-terminated copies in buf);
 * 0 at the end, 1 with *ncol set. */
static int next_line(struct line_iter *it, char *buf, size_t bufn, char **col, int *ncol)
{
	while (it->p < it->end) {
		const char *nl = memchr(it->p, '\n', (size_t)(it->end - it->p));
		size_t len = nl ? (size_t)(nl - it->p) : (size_t)(it->end - it->p);
		const char *s = it->p;
		it->p = nl ? nl + 1 : it->end;
		it->lineno++;
		if (len == 0 || s[0] == '#')
			continue;
		if (len >= bufn)
			len = bufn - 1;
		memcpy(buf, s, len);
		buf[len] = '\0';
		*ncol = 0;
		for (char *c = buf; *ncol < MAX_COLS;) {
			col[(*ncol)++] = c;
			c = strchr(c, '\t');
			if (!c)
				break;
			*c++ = '\0';
		}
		return 1;
	}
	return 0;
}

static int parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
	char *e;
	long long v;
	errno = 0;
	v = strtoll(s, &e, 10);
	if (errno || e == s || *e || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static void copy_name(char *dst, size_t n, const char *s)
{
	snprintf(dst, n, "%s", s);
}

/* "72,45,76,22;71,93,53,9" -> values appended to t->util; GPUs in *ngpus */
static int parse_util(struct gl_simtrace_traces *t, const char *s, int32_t *ngpus)
{
	size_t cap = t->nutil + strlen(s) / 2 + 8;
	int k = 0;
	t->util = gl_xrealloc(t->util, cap);
	*ngpus = 0;
	while (*s) {
		char *e;
		long v = strtol(s, &e, 10);
		if (e == s || v < 0 || v > 100)
			return -1;
		t->util[t->nutil++] = (uint8_t)v;
		k++;
		s = e;
		if (*s == ',' || *s == ';' || *s == '\0') {
			if (*s != ',') {
				if (k != GL_SIMTRACE_UTIL_MINUTES)
					/* a GPU with fewer samples repeats its last one */
					for (; k < GL_SIMTRACE_UTIL_MINUTES; k++)
						t->util[t->nutil++] = (uint8_t)v;
				(*ngpus)++;
				k = 0;
			}
			if (*s)
				s++;
		} else
			return -1;
		if (t->nutil + GL_SIMTRACE_UTIL_MINUTES >= cap) {
			cap *= 2;
			t->util = gl_xrealloc(t->util, cap);
		}
	}
	return *ngpus > 0 ? 0 : -1;
}

int gl_simtrace_parse_philly(struct gl_simtrace_traces *t, const char *name, const char *buf, size_t n,
			     struct gl_err *err)
{
	struct line_iter it = {buf, buf + n, name, 0};
	char line[8192], *col[MAX_COLS];
	int ncol;
	size_t cap = t->njobs;

	while (next_line(&it, line, sizeof line, col, &ncol)) {
		struct gl_simtrace_pjob j = {0};
		int64_t v;
		if (ncol != 7)
			return gl_err_set(err, GL_EINVAL, "%s:%d: %d columns, want 7", name, it.lineno, ncol);
		if (parse_i64(col[0], 0, 604799, &v))
			return gl_err_set(err, GL_EINVAL, "%s:%d: submit_week_s: bad value", name, it.lineno);
		j.week_s = (int32_t)v;
		if (parse_i64(col[1], 1, 4096, &v))
			return gl_err_set(err, GL_EINVAL, "%s:%d: gpus: bad value", name, it.lineno);
		j.gpus = (int32_t)v;
		if (parse_i64(col[2], 1, 400LL * 86400, &j.runtime_s))
			return gl_err_set(err, GL_EINVAL, "%s:%d: runtime_s: bad value", name, it.lineno);
		if (strcmp(col[3], "Pass") && strcmp(col[3], "Failed"))
			return gl_err_set(err, GL_EINVAL, "%s:%d: status: want Pass or Failed", name, it.lineno);
		j.failed = col[3][0] == 'F';
		copy_name(j.vc, sizeof j.vc, col[4]);
		copy_name(j.user, sizeof j.user, col[5]);
		j.util_first = (int32_t)(t->nutil / GL_SIMTRACE_UTIL_MINUTES);
		if (parse_util(t, col[6], &j.util_ngpus))
			return gl_err_set(err, GL_EINVAL, "%s:%d: gpu_util_pct: bad value", name, it.lineno);
		if (t->njobs == cap) {
			cap = cap ? cap * 2 : 1024;
			t->jobs = gl_xrealloc(t->jobs, cap * sizeof *t->jobs);
		}
		t->jobs[t->njobs++] = j;
	}
	return 0;
}

int gl_simtrace_parse_pods(struct gl_simtrace_traces *t, const char *name, const char *buf, size_t n, struct gl_err *err)
{
	struct line_iter it = {buf, buf + n, name, 0};
	char line[512], *col[MAX_COLS];
	int ncol;
	size_t cap = t->npods;

	while (next_line(&it, line, sizeof line, col, &ncol)) {
		struct gl_simtrace_pod p = {0};
		int64_t v;
		if (ncol != 5)
			return gl_err_set(err, GL_EINVAL, "%s:%d: %d columns, want 5", name, it.lineno, ncol);
		if (parse_i64(col[0], 0, 604799, &v))
			return gl_err_set(err, GL_EINVAL, "%s:%d: creation_week_s: bad value", name, it.lineno);
		p.week_s = (int32_t)v;
		if (parse_i64(col[1], 1, 64, &v))
			return gl_err_set(err, GL_EINVAL, "%s:%d: num_gpu: bad value", name, it.lineno);
		p.gpus = (int32_t)v;
		if (parse_i64(col[2], 1, 400LL * 86400, &p.duration_s))
			return gl_err_set(err, GL_EINVAL, "%s:%d: duration_s: bad value", name, it.lineno);
		if (!strcmp(col[3], "Failed"))
			p.failed = 1;
		else if (!strcmp(col[3], "Running"))
			p.censored = 1;
		else if (strcmp(col[3], "Succeeded"))
			return gl_err_set(err, GL_EINVAL, "%s:%d: phase: want Running, Failed or Succeeded", name,
					  it.lineno);
		copy_name(p.qos, sizeof p.qos, col[4]);
		if (t->npods == cap) {
			cap = cap ? cap * 2 : 1024;
			t->pods = gl_xrealloc(t->pods, cap * sizeof *t->pods);
		}
		t->pods[t->npods++] = p;
	}
	return 0;
}

int gl_simtrace_parse_duty(struct gl_simtrace_traces *t, const char *name, const char *buf, size_t n, struct gl_err *err)
{
	struct line_iter it = {buf, buf + n, name, 0};
	char line[16384];
	char *col[MAX_COLS];
	int ncol;
	size_t cap = t->nseries;

	t->duty_step_s = 114;
	while (next_line(&it, line, sizeof line, col, &ncol)) {
		struct gl_simtrace_duty d = {0};
		size_t vcap;
		if (ncol != 2)
			return gl_err_set(err, GL_EINVAL, "%s:%d: %d columns, want 2", name, it.lineno, ncol);
		copy_name(d.name, sizeof d.name, col[0]);
		d.first = (int32_t)t->nduty;
		vcap = t->nduty + strlen(col[1]) / 2 + 2;
		t->duty = gl_xrealloc(t->duty, vcap);
		for (char *s = col[1]; *s;) {
			char *e;
			long v = strtol(s, &e, 10);
			if (e == s || v < 0 || v > 100 || (*e && *e != ','))
				return gl_err_set(err, GL_EINVAL, "%s:%d: duty cycle: bad value", name, it.lineno);
			t->duty[t->nduty++] = (uint8_t)v;
			s = *e ? e + 1 : e;
		}
		d.n = (int32_t)(t->nduty - (size_t)d.first);
		if (d.n == 0)
			return gl_err_set(err, GL_EINVAL, "%s:%d: no values", name, it.lineno);
		if (t->nseries == cap) {
			cap = cap ? cap * 2 : 64;
			t->series = gl_xrealloc(t->series, cap * sizeof *t->series);
		}
		t->series[t->nseries++] = d;
	}
	return 0;
}

void gl_simtrace_fini(struct gl_simtrace_traces *t)
{
	free(t->jobs);
	free(t->util);
	free(t->pods);
	free(t->series);
	free(t->duty);
	memset(t, 0, sizeof *t);
}
