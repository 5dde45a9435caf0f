/* Which Slurm job a process belongs to (src/sources/jobpids.c), from
 * `scontrol listpids` and /proc/PID/cgroup lines.
 *
 * Inputs are HAND-WRITTEN, in the layouts of Slurm 22.05's
 * src/scontrol/info_job.c (listpids: "%-8s %-8s %-8s %-8s %-8s" header, one
 * line per process, STEPID a number, batch or extern) and of cgroup v2 / v1
 * paths slurmd creates (job_<id>/step_<id>). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/jobpids.h"

#include <string.h>

static int parse(const char *s, struct gl_jobpids *p)
{
	struct gl_err e = {0};
	return gl_jobpids_parse(s, strlen(s), p, &e);
}

static void test_listpids(void **state)
{
	struct gl_jobpids p;
	(void)state;
	assert_int_equal(parse("PID      JOBID    STEPID   LOCALID GLOBALID\n"
			       "11345    567      0        0       0       \n"
			       "11300    567      batch    -       -       \n"
			       "11290    567      extern   -       -       \n"
			       "9001     12       0        1       1       \r\n"
			       "torn line\n",
			       &p),
			 0);
	assert_int_equal(p.n, 4);
	assert_string_equal(gl_jobpids_find(&p, 11345), "567");
	assert_string_equal(gl_jobpids_find(&p, 11290), "567");
	assert_string_equal(gl_jobpids_find(&p, 9001), "12");
	assert_null(gl_jobpids_find(&p, 11346));
	/* a line not understood is counted and named, the rest kept */
	assert_int_equal(p.bad, 1);
	assert_int_equal(p.first_bad, 6);
	gl_jobpids_fini(&p);
}

static void test_cgroup(void **state)
{
	struct gl_jobpids p;
	(void)state;
	assert_int_equal(parse("/proc/1234/cgroup:0::/system.slice/slurmstepd.scope/job_567/step_0/user/task_0\n"
			       "/proc/1/cgroup:0::/init.scope\n"
			       "/proc/2200/cgroup:4:memory:/slurm/uid_1000/job_89/step_batch/task_0\n"
			       "/proc/2200/cgroup:3:devices:/slurm/uid_1000/job_89/step_batch/task_0\n"
			       "/proc/3300/cgroup:0::/user.slice/job_x/\n",
			       &p),
			 0);
	/* a process outside any job is no error; one pid of several hierarchies once */
	assert_int_equal(p.n, 2);
	assert_int_equal(p.bad, 0);
	assert_string_equal(gl_jobpids_find(&p, 1234), "567");
	assert_string_equal(gl_jobpids_find(&p, 2200), "89");
	assert_null(gl_jobpids_find(&p, 1));
	assert_null(gl_jobpids_find(&p, 3300));
	gl_jobpids_fini(&p);
}

static void test_neither(void **state)
{
	struct gl_jobpids p;
	struct gl_err e = {0};
	(void)state;
	assert_int_equal(gl_jobpids_parse("pid,job\n1,2\n", 12, &p, &e), -GL_EFORMAT);
	assert_non_null(strstr(e.msg, "scontrol listpids"));
	assert_int_equal(p.n, 0);
	assert_null(p.v);
}

/* A node running no job: the header alone, or a line no job owns. Nothing
 * to find, and no empty list handed to qsort (UBSan: a NULL argument; found
 * by tests/fuzz/fuzz_jobpids.c). */
static void test_no_job(void **state)
{
	struct gl_jobpids p;
	struct gl_err e = {0};
	(void)state;
	assert_int_equal(parse("PID      JOBID    STEPID   LOCALID GLOBALID\n", &p), 0);
	assert_int_equal(p.n, 0);
	assert_int_equal(p.bad, 0);
	assert_null(gl_jobpids_find(&p, 1));
	gl_jobpids_fini(&p);
	assert_int_equal(parse("PID JOBID STEPID LOCALID GLOBALID\nnot a line\n", &p), 0);
	assert_int_equal(p.n, 0);
	assert_int_equal(p.bad, 1);
	assert_int_equal(p.first_bad, 2);
	gl_jobpids_fini(&p);
	assert_int_equal(gl_jobpids_parse("/proc/1/cgroup:0::/init.scope\n", 30, &p, &e), 0);
	assert_int_equal(p.n, 0);
	gl_jobpids_fini(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_listpids),
		cmocka_unit_test(test_no_job),
		cmocka_unit_test(test_cgroup),
		cmocka_unit_test(test_neither),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
