/* Processes of Slurm jobs on a node (see include/gl/jobpids.h). */
#include "gl/jobpids.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static void add(struct gl_jobpids *p, int64_t pid, const char *job, size_t n)
{
	if (p->n == p->cap) {
		p->cap = p->cap ? p->cap * 2 : 64;
		p->v = gl_xrealloc(p->v, p->cap * sizeof *p->v);
	}
	p->v[p->n].pid = pid;
	memcpy(p->v[p->n].job, job, n);
	p->v[p->n].job[n] = '\0';
	p->n++;
}

static int digits(const char *s, size_t n)
{
	if (!n || n > 18)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isdigit((unsigned char)s[i]))
			return 0;
	return 1;
}

/* The next whitespace-separated word of [*s, e): its start and length. */
static size_t word(const char **s, const char *e, const char **w)
{
	const char *p = *s, *q;
	while (p < e && isspace((unsigned char)*p))
		p++;
	q = p;
	while (q < e && !isspace((unsigned char)*q))
		q++;
	*w = p;
	*s = q;
	return (size_t)(q - p);
}

/* "1234 567 batch - -": pid, job, step, local id, global id. */
static int listpids_line(struct gl_jobpids *p, const char *s, const char *e)
{
	const char *f[5];
	size_t n[5];
	for (int k = 0; k < 5; k++)
		n[k] = word(&s, e, &f[k]);
	if (!digits(f[0], n[0]) || !digits(f[1], n[1]) || n[1] >= GL_JOBPIDS_JOB_MAX || !n[2] || !n[3] || !n[4])
		return -1;
	while (s < e && isspace((unsigned char)*s))
		s++;
	if (s < e)
		return -1;
	add(p, strtoll(f[0], NULL, 10), f[1], n[1]);
	return 0;
}

/* "/proc/1234/cgroup:0::/system.slice/slurmstepd.scope/job_567/step_0": a
 * line of a process outside any job (no job_ component) is not an error. */
static int cgroup_line(struct gl_jobpids *p, const char *s, const char *e)
{
	const char *a = s + 6, *b = a, *j;
	if ((size_t)(e - s) < 6 || memcmp(s, "/proc/", 6))
		return -1;
	while (b < e && isdigit((unsigned char)*b))
		b++;
	if (!digits(a, (size_t)(b - a)) || (size_t)(e - b) < 8 || memcmp(b, "/cgroup:", 8))
		return -1;
	for (j = b + 8; j + 5 <= e; j++) {
		const char *k = j + 5, *q;
		if (memcmp(j, "/job_", 5))
			continue;
		for (q = k; q < e && isdigit((unsigned char)*q); q++)
			;
		if (q > k && (q == e || *q == '/') && (size_t)(q - k) < GL_JOBPIDS_JOB_MAX) {
			add(p, strtoll(a, NULL, 10), k, (size_t)(q - k));
			return 0;
		}
	}
	return 0;
}

static int cmp_pid(const void *a, const void *b)
{
	const struct gl_jobpids_entry *x = a, *y = b;
	return (x->pid > y->pid) - (x->pid < y->pid);
}

int gl_jobpids_parse(const char *text, size_t len, struct gl_jobpids *out, struct gl_err *err)
{
	const char *s = text, *end = text + len;
	int kind = 0; /* 1 listpids, 2 cgroup */

	memset(out, 0, sizeof *out);
	while (s < end) {
		const char *e = memchr(s, '\n', (size_t)(end - s)), *t;
		size_t n;
		if (!e)
			e = end;
		n = (size_t)(e - s);
		if (n && s[n - 1] == '\r')
			n--;
		out->lines++;
		t = s;
		s = e < end ? e + 1 : end;
		while (n && isspace((unsigned char)*t)) {
			t++;
			n--;
		}
		if (!n)
			continue;
		if (!kind) {
			const char *w;
			const char *c = t;
			size_t wn = word(&c, t + n, &w);
			if (wn == 3 && !memcmp(w, "PID", 3)) {
				kind = 1;
				continue;
			}
			if (n > 6 && !memcmp(t, "/proc/", 6))
				kind = 2;
			else
				break;
		}
		if ((kind == 1 ? listpids_line(out, t, t + n) : cgroup_line(out, t, t + n)) != 0) {
			out->bad++;
			if (!out->first_bad)
				out->first_bad = out->lines;
		}
	}
	if (!kind) {
		gl_jobpids_fini(out);
		return gl_err_set(err, GL_EFORMAT,
				  "not `scontrol listpids` output (no PID JOBID header) nor /proc/PID/cgroup lines "
				  "(`grep -H . /proc/[0-9]*/cgroup`)");
	}
	/* a node running no job prints the header alone: nothing to sort, and
	 * qsort must not be handed the NULL of an empty list */
	if (out->n > 1)
		gl_qsort(out->v, out->n, sizeof *out->v, cmp_pid);
	/* a pid listed twice (a cgroup file of several hierarchies) once */
	if (out->n) {
		size_t k = 1;
		for (size_t i = 1; i < out->n; i++)
			if (out->v[i].pid != out->v[k - 1].pid)
				out->v[k++] = out->v[i];
		out->n = k;
	}
	return 0;
}

const char *gl_jobpids_find(const struct gl_jobpids *p, int64_t pid)
{
	size_t lo = 0, hi = p->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (p->v[mid].pid == pid)
			return p->v[mid].job;
		if (p->v[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

void gl_jobpids_fini(struct gl_jobpids *p)
{
	if (!p)
		return;
	free(p->v);
	memset(p, 0, sizeof *p);
}
