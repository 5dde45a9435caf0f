/* gpuledger — which Slurm job a process belongs to, from what a node says:
 *
 *   `scontrol listpids`   "PID JOBID STEPID LOCALID GLOBALID" then one line
 *                         per process of every job step on the node
 *                         (slurm src/scontrol/info_job.c; STEPID is a number,
 *                         "batch", "extern" or "interactive")
 *   /proc/PID/cgroup      as `grep -H . /proc/[0-9]*\/cgroup` prints them:
 *                         "/proc/1234/cgroup:0::/system.slice/slurmstepd.scope/job_567/step_0/user/task_0"
 *                         (cgroup v2), "...:4:memory:/slurm/uid_1000/job_567/step_0/task_0" (v1);
 *                         the job is the "job_<id>" component of the path
 *
 * Told apart by the first non-blank line. Pure: no I/O, no libpq.
 *
 * Ownership: struct gl_jobpids is caller-owned storage; gl_jobpids_parse()
 * fills it with heap memory released by gl_jobpids_fini() (a no-op on a
 * zeroed one). Nothing points into the input.
 */
#ifndef GL_JOBPIDS_H
#define GL_JOBPIDS_H

#include "gl/common.h"

#include <stddef.h>
#include <stdint.h>

#define GL_JOBPIDS_JOB_MAX 32

struct gl_jobpids_entry {
	int64_t pid;
	char job[GL_JOBPIDS_JOB_MAX]; /* the Slurm job id, as hpc_job labels name it */
};

struct gl_jobpids {
	struct gl_jobpids_entry *v;  /* sorted by pid, one entry per pid */
	size_t n, cap;
	size_t lines;         /* input lines */
	size_t bad;           /* lines not understood, skipped */
	size_t first_bad;     /* 1-based line of the first of them, 0 none */
};

/* 0, or -GL_EFORMAT when the text is neither (nothing is kept). */
int gl_jobpids_parse(const char *text, size_t len, struct gl_jobpids *out, struct gl_err *err) GL_MUSTCHECK;
/* The job of pid, or NULL. */
const char *gl_jobpids_find(const struct gl_jobpids *p, int64_t pid);
void gl_jobpids_fini(struct gl_jobpids *p);

#endif
