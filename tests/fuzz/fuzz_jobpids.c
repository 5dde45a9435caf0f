/* libFuzzer harness: which Slurm job a process belongs to
 * (src/sources/jobpids.c), from `scontrol listpids` output or
 * /proc/PID/cgroup lines. The input is an exact-size heap copy so reads past
 * its end are caught. Invariants, not just "no crash": the entries are
 * sorted by pid with each pid once, each job is a non-empty decimal id
 * within its bound, gl_jobpids_find finds every entry again and no pid
 * between two entries, the counts agree with the lines read, and refused
 * text leaves nothing behind but the reason. tests/fuzz/run.sh builds and
 * runs it. */
#include "gl/jobpids.h"

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct gl_jobpids *p)
{
	if (p->n > p->lines || p->bad > p->lines || (p->bad > 0) != (p->first_bad > 0) || p->first_bad > p->lines)
		abort();
	for (size_t i = 0; i < p->n; i++) {
		const struct gl_jobpids_entry *e = &p->v[i];
		size_t len = strnlen(e->job, GL_JOBPIDS_JOB_MAX);
		if (e->pid < 0 || (i && e->pid <= p->v[i - 1].pid) || !len || len == GL_JOBPIDS_JOB_MAX)
			abort();
		for (size_t k = 0; k < len; k++)
			if (!isdigit((unsigned char)e->job[k]))
				abort();
		if (gl_jobpids_find(p, e->pid) != e->job)
			abort();
		/* a pid between two entries is nobody's */
		if (i && e->pid - p->v[i - 1].pid > 1 && gl_jobpids_find(p, e->pid - 1))
			abort();
	}
	if (p->n && p->v[0].pid > 0 && gl_jobpids_find(p, p->v[0].pid - 1))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gl_jobpids p;
	struct gl_err err = {0, ""};
	char *buf = malloc(size ? size : 1);
	int rc;
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	rc = gl_jobpids_parse(buf, size, &p, &err);
	if (rc == 0)
		check(&p);
	else if (rc != -GL_EFORMAT || p.v || p.n || !err.msg[0])
		abort(); /* refused: nothing but the reason */
	gl_jobpids_fini(&p);
	free(buf);
	return 0;
}
