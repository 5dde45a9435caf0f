/* Unit tests for the demo fleet simulator's model (src/sim/simfleet.c) and
 * its trace slices (src/sim/simtrace.c), on the real slices the simulator
 * ships (scripts/demo/traces, README there): deterministic for a seed, no
 * GPU held twice, attempts ordered in time, requeues as new attempts, the
 * speed-up compressing runtimes and utilisation read from the traces. Run
 * from the repo root. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/simfleet.h"
#include "gl/simload.h"
#include "gl/simshow.h"
#include "lib/testlib.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DAY 86400
#define T0 1789171200 /* 2026-09-12T00:00:00Z */

static struct gl_simtrace_traces g_tr;

static int load(void **state)
{
	struct gl_err err = {0};
	(void)state;
	if (gl_simload_traces("scripts/demo/traces", &g_tr, &err)) {
		fprintf(stderr, "%s (run from the repo root)\n", err.msg);
		return -1;
	}
	return 0;
}

static int unload(void **state)
{
	(void)state;
	gl_simtrace_fini(&g_tr);
	return 0;
}

static struct gl_simfleet_fleet *fleet(uint64_t seed, int gpus)
{
	struct gl_simfleet_params p;
	struct gl_simfleet_fleet *f = NULL;
	struct gl_err err = {0};
	gl_simfleet_params_default(&p);
	p.seed = seed;
	p.gpus = gpus;
	p.start_s = T0;
	assert_int_equal(gl_simfleet_new(&p, &g_tr, &f, &err), 0);
	return f;
}

/* the slices as README.md counts them */
static void test_traces(void **state)
{
	struct gl_simtrace_traces t = {0};
	struct gl_err err = {0};
	const char bad[] = "# h\n10\t8\t600\tPass\tvc\tu\t1,2,3,4\n10\t8\t600\tMaybe\tvc\tu\t1,2,3,4\n";
	(void)state;
	assert_int_equal(g_tr.njobs, 4157);
	assert_int_equal(g_tr.npods, 1152);
	assert_int_equal(g_tr.nseries, 128);
	/* the first Philly row: 8 GPUs, each with its 4 minutes */
	assert_int_equal(g_tr.jobs[0].gpus, 8);
	assert_int_equal(g_tr.jobs[0].util_ngpus, 8);
	assert_int_equal(g_tr.util[0], 72);
	assert_int_equal(g_tr.util[3], 22);
	/* a bad line is an error naming file:line, nothing skipped quietly */
	assert_int_not_equal(gl_simtrace_parse_philly(&t, "x.tsv", bad, sizeof bad - 1, &err), 0);
	assert_non_null(strstr(err.msg, "x.tsv:3: status"));
	gl_simtrace_fini(&t);
}

static void sacct_all(const struct gl_simfleet_fleet *f, struct gl_strbuf *out)
{
	const char *argv[] = {"sacct", "-a", "-P", "-n", "-X", "-D", "-S", "2026-09-01", "-E", "now", "--format",
			      "JobID,DBIndex,State,Submit,Start,End,NodeList,AllocTRES"};
	struct gl_strbuf e = GL_STRBUF_INIT;
	assert_int_equal(gl_simshow_command(f, (int)GL_ARRAY_LEN(argv), argv, out, &e), 0);
	gl_strbuf_fini(&e);
}

static void test_deterministic(void **state)
{
	struct gl_simfleet_fleet *a = fleet(7, 256), *b = fleet(7, 256), *c = fleet(8, 256);
	struct gl_strbuf sa = GL_STRBUF_INIT, sb = GL_STRBUF_INIT, sc = GL_STRBUF_INIT;
	(void)state;
	/* the same calls in other steps: the model's state depends on the
	 * times asked for, never on how often */
	gl_simfleet_advance(a, T0 + 10 * DAY);
	for (int64_t t = T0; t <= T0 + 10 * DAY; t += 3 * 3600 + 17)
		gl_simfleet_advance(b, t);
	gl_simfleet_advance(b, T0 + 10 * DAY);
	gl_simfleet_advance(c, T0 + 10 * DAY);
	sacct_all(a, &sa);
	sacct_all(b, &sb);
	sacct_all(c, &sc);
	assert_true(sa.len > 1000);
	assert_string_equal(gl_strbuf_cstr(&sa), gl_strbuf_cstr(&sb));
	assert_string_not_equal(gl_strbuf_cstr(&sa), gl_strbuf_cstr(&sc));
	gl_strbuf_fini(&sa);
	gl_strbuf_fini(&sb);
	gl_strbuf_fini(&sc);
	gl_simfleet_free(a);
	gl_simfleet_free(b);
	gl_simfleet_free(c);
}

/* Every GPU slot names a running job that holds it, each running job holds
 * exactly its GPUs on up-or-draining nodes of its partition, and every
 * attempt's times are in order. */
static void check_invariants(const struct gl_simfleet_fleet *f)
{
	size_t running = 0;
	for (int i = 0; i < f->nnodes; i++) {
		const struct gl_simfleet_node *n = &f->nodes[i];
		for (int k = 0; k < n->ngpus; k++) {
			const struct gl_simfleet_job *j;
			int held = 0;
			if (n->slot[k] < 0)
				continue;
			j = &f->jobs[n->slot[k]];
			assert_int_equal(j->state, GL_SIMFLEET_RUNNING);
			assert_int_not_equal(n->avail, GL_SIMFLEET_DOWN);
			assert_int_equal(j->cluster, n->cluster);
			assert_int_equal(j->part, n->part);
			for (int m = 0; m < j->nnodes; m++)
				if (j->node[m] == i && (j->mask[m] >> k & 1))
					held = 1;
			assert_true(held);
		}
	}
	for (size_t i = 0; i < f->njobs; i++) {
		const struct gl_simfleet_job *j = &f->jobs[i];
		int gpus = 0;
		assert_true(j->submit_s <= f->now_s);
		if (j->start_s != GL_SIMFLEET_NONE)
			assert_true(j->start_s >= j->submit_s);
		if (j->end_s != GL_SIMFLEET_NONE)
			assert_true(j->end_s >= (j->start_s != GL_SIMFLEET_NONE ? j->start_s : j->submit_s));
		if (j->state != GL_SIMFLEET_RUNNING)
			continue;
		running++;
		for (int m = 0; m < j->nnodes; m++)
			gpus += __builtin_popcount(j->mask[m]);
		assert_int_equal(gpus, j->gpus);
	}
	assert_true(running > 0);
}

static void test_invariants_and_requeues(void **state)
{
	struct gl_simfleet_fleet *f = fleet(28, 256);
	size_t requeued = 0, followed = 0;
	(void)state;
	for (int64_t t = T0 + 3600; t <= T0 + 30 * DAY; t += 7 * 3600)
		gl_simfleet_advance(f, t), check_invariants(f);
	gl_simfleet_set_speed(f, T0 + 30 * DAY, 60);
	for (int64_t t = T0 + 30 * DAY; t <= T0 + 30 * DAY + 7200; t += 61)
		gl_simfleet_advance(f, t), check_invariants(f);
	assert_true(f->faults > 0);
	/* a lost attempt is followed by the next attempt of the same job */
	for (size_t i = 0; i < f->njobs; i++) {
		const struct gl_simfleet_job *j = &f->jobs[i];
		if (j->state != GL_SIMFLEET_REQUEUED)
			continue;
		requeued++;
		for (size_t k = i + 1; k < f->njobs; k++) {
			const struct gl_simfleet_job *n = &f->jobs[k];
			if (n->trace == j->trace && n->attempt == j->attempt + 1 && n->submit_s == j->end_s &&
			    n->cluster == j->cluster && n->dbindex != j->dbindex &&
			    (f->cl[j->cluster].kind == GL_SIMFLEET_KUBE ? n->id != j->id : n->id == j->id)) {
				followed++;
				break;
			}
		}
	}
	assert_true(requeued > 0);
	assert_int_equal(followed, requeued);
	gl_simfleet_free(f);
}

/* At speed S a Slurm job runs its trace runtime (cut at max_runtime) / S. */
static void test_speed(void **state)
{
	struct gl_simfleet_fleet *f = fleet(3, 256);
	int64_t at = T0 + 14 * DAY;
	size_t checked = 0;
	double busy = 0;
	(void)state;
	gl_simfleet_advance(f, at);
	/* the offered load is 0.8: a fortnight's allocation is a real share of it */
	for (size_t i = 0; i < f->njobs; i++) {
		const struct gl_simfleet_job *j = &f->jobs[i];
		if (j->start_s != GL_SIMFLEET_NONE)
			busy += (double)j->gpus * (double)((j->end_s != GL_SIMFLEET_NONE ? j->end_s : at) - j->start_s);
	}
	busy /= (double)(f->cl[0].gpus + f->cl[1].gpus) * 14 * DAY;
	assert_true(busy > 0.4 && busy < 0.95);
	gl_simfleet_set_speed(f, at, 60);
	gl_simfleet_advance(f, at + 3 * 3600);
	for (size_t i = 0; i < f->njobs; i++) {
		const struct gl_simfleet_job *j = &f->jobs[i];
		int64_t rt;
		if (j->submit_s < at || j->end_s == GL_SIMFLEET_NONE || j->start_s == GL_SIMFLEET_NONE ||
		    (j->state != GL_SIMFLEET_COMPLETED && j->state != GL_SIMFLEET_FAILED))
			continue;
		rt = f->cl[j->cluster].kind == GL_SIMFLEET_SLURM ? g_tr.jobs[j->trace].runtime_s
							   : g_tr.pods[j->trace].duration_s;
		if (rt > f->p.max_runtime_s)
			rt = f->p.max_runtime_s;
		assert_int_equal(j->end_s - j->start_s, llround((double)rt / 60));
		checked++;
	}
	assert_true(checked > 100);
	gl_simfleet_free(f);
}

/* A Slurm job's GPUs show its Philly job's per-minute utilisation; a pod's
 * its GenAI series. */
static void test_util_from_traces(void **state)
{
	struct gl_simfleet_fleet *f = fleet(5, 256);
	int slurm = 0, kube = 0, idle_jobs = 0;
	(void)state;
	gl_simfleet_advance(f, T0 + 5 * DAY);
	for (size_t i = 0; i < f->nactive; i++) {
		const struct gl_simfleet_job *j = &f->jobs[f->active[i]];
		int all_zero = 1;
		if (j->state != GL_SIMFLEET_RUNNING)
			continue;
		for (int k = 0; k < j->gpus; k++) {
			int u = gl_simfleet_util(f, j, k, f->now_s);
			if (f->cl[j->cluster].kind == GL_SIMFLEET_SLURM) {
				const struct gl_simtrace_pjob *pj = &g_tr.jobs[j->profile];
				int64_t minute = (f->now_s - j->start_s) / 60 % GL_SIMTRACE_UTIL_MINUTES;
				assert_int_equal(u, g_tr.util[(size_t)(pj->util_first + k % pj->util_ngpus) *
								      GL_SIMTRACE_UTIL_MINUTES +
							      (size_t)minute]);
				slurm++;
			} else {
				const struct gl_simtrace_duty *d = &g_tr.series[j->profile];
				int found = 0;
				for (int v = 0; v < d->n && !found; v++)
					found = g_tr.duty[d->first + v] == u;
				assert_true(found);
				kube++;
			}
			all_zero &= u == 0;
		}
		idle_jobs += all_zero;
	}
	assert_true(slurm > 0 && kube > 0);
	/* the traces' idle GPUs make idle jobs: hook and waste candidates */
	assert_true(idle_jobs > 0);
	gl_simfleet_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_traces),
		cmocka_unit_test(test_deterministic),
		cmocka_unit_test(test_invariants_and_requeues),
		cmocka_unit_test(test_speed),
		cmocka_unit_test(test_util_from_traces),
	};
	return cmocka_run_group_tests(tests, load, unload);
}
