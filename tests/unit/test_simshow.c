/* Unit tests for what the simulated fleet shows (src/sim/simshow.c): the
 * answers to the exact argv the daemon runs (src/ingest/sacct_poll.c,
 * nodes_poll.c, docs/config.md's kubectl commands) read back by the
 * project's own parsers of the real tools' output, and compared with the
 * model's state: sacct's -S/-E window (jobs active in it), --delimiter,
 * --format, --parsable vs --parsable2, --noheader, --duplicates,
 * --allocations; scontrol nodes; sacctmgr events in start=/end=; kubectl
 * pods and nodes; each node's dcgm-exporter text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/dcgm.h"
#include "gl/kube.h"
#include "gl/nodeobs.h"
#include "gl/sacct.h"
#include "gl/simfleet.h"
#include "gl/simload.h"
#include "gl/simshow.h"
#include "gl/timeutil.h"
#include "lib/testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DAY 86400
#define T0 1789171200 /* 2026-09-12T00:00:00Z */

static struct gl_simtrace_traces g_tr;
static struct gl_simfleet_fleet *g_f;

static int setup(void **state)
{
	struct gl_simfleet_params p;
	struct gl_err err = {0};
	(void)state;
	if (gl_simload_traces("scripts/demo/traces", &g_tr, &err)) {
		fprintf(stderr, "%s (run from the repo root)\n", err.msg);
		return -1;
	}
	gl_simfleet_params_default(&p);
	p.start_s = T0;
	p.node_mtbf_s = 5 * DAY; /* downs and drains in every window */
	if (gl_simfleet_new(&p, &g_tr, &g_f, &err))
		return -1;
	gl_simfleet_advance(g_f, T0 + 20 * DAY);
	gl_simfleet_set_speed(g_f, T0 + 20 * DAY, 60);
	gl_simfleet_advance(g_f, T0 + 20 * DAY + 1800);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	gl_simfleet_free(g_f);
	gl_simtrace_fini(&g_tr);
	return 0;
}

static int run(struct gl_strbuf *out, struct gl_strbuf *err, const char *const *argv)
{
	int argc = 0;
	while (argv[argc])
		argc++;
	gl_strbuf_reset(out);
	gl_strbuf_reset(err);
	return gl_simshow_command(g_f, argc, argv, out, err);
}

static void fmt(int64_t t, char *buf)
{
	gl_timeutil_format(t, buf, 32);
	buf[strlen(buf) - 1] = '\0';
}

/* Jobs of the model sacct must list for [from, to]: submitted by `to` and
 * not ended before `from`; only last attempts without duplicates. */
static size_t expected_rows(int64_t from, int64_t to, int duplicates)
{
	size_t n = 0;
	for (size_t i = 0; i < g_f->njobs; i++) {
		const struct gl_simfleet_job *j = &g_f->jobs[i];
		if (g_f->cl[j->cluster].kind != GL_SIMFLEET_SLURM || j->submit_s > to ||
		    (j->end_s != GL_SIMFLEET_NONE && j->end_s < from) || (!duplicates && j->state == GL_SIMFLEET_REQUEUED))
			continue;
		n++;
	}
	return n;
}

/* The daemon's argv (sacct_poll.c run_chunk), one chunk of the last day and
 * delimiters of one and of three bytes. */
static void test_sacct_daemon_argv(void **state)
{
	static const char *const delims[] = {"|", "\xe2\x98\x83"};
	struct gl_strbuf out = GL_STRBUF_INIT, err = GL_STRBUF_INIT;
	int64_t from = g_f->now_s - DAY, to = g_f->now_s - 600;
	char s_from[32], s_to[32];
	(void)state;
	fmt(from, s_from);
	fmt(to, s_to);
	for (size_t d = 0; d < GL_ARRAY_LEN(delims); d++) {
		const char *argv[] = {"var/sim/bin/sacct", "--allusers", "--parsable2", "--noheader", "--allocations",
				      "--duplicates", "--clusters", "sim-slurm", "--starttime", s_from, "--endtime",
				      s_to, "--delimiter", delims[d], "--format", GL_SACCT_DEFAULT_FIELDS, NULL};
		struct gl_sacct_layout lay;
		struct gl_err e = {0};
		size_t rows = 0, requeued = 0, running = 0;
		assert_int_equal(run(&out, &err, argv), 0);
		assert_int_equal(err.len, 0);
		assert_int_equal(gl_sacct_layout_init(&lay, GL_SACCT_DEFAULT_FIELDS, delims[d], &e), 0);
		for (char *line = out.p, *nl; line && *line; line = nl + 1) {
			struct gl_sacct_rec r;
			nl = strchr(line, '\n');
			assert_non_null(nl);
			if (gl_sacct_parse_line(&lay, line, (size_t)(nl - line), &r, &e))
				fail_msg("line %zu: %s", rows + 1, e.msg);
			assert_int_equal(r.kind, GL_SACCT_ALLOCATION);
			assert_true(r.submit_s <= to);
			assert_true(r.end_s == GL_TIME_NONE || r.end_s >= from);
			assert_true(r.db_index > 0);
			if (r.start_s != GL_TIME_NONE)
				assert_true(r.gpus_alloc > 0 && r.gpu_type[0]);
			requeued += r.state == GL_SACCT_JS_REQUEUED;
			running += r.state == GL_SACCT_JS_RUNNING;
			rows++;
		}
		gl_sacct_layout_fini(&lay);
		assert_int_equal(rows, expected_rows(from, to, 1));
		assert_true(running > 0);
		(void)requeued;
	}
	gl_strbuf_fini(&out);
	gl_strbuf_fini(&err);
}

static void test_sacct_options(void **state)
{
	struct gl_strbuf out = GL_STRBUF_INIT, err = GL_STRBUF_INIT;
	const char *p1[] = {"sacct", "-a", "-p", "-X", "-D", "-S", "2026-09-12", "-E", "now", "-o", "JobID,State", NULL};
	const char *no_dup[] = {"sacct", "-a", "-P", "-n", "-X", "-S", "2026-09-12", "-E", "now", "-o", "State", NULL};
	const char *steps[] = {"sacct", "-a", "-P", "-n", "-S", "2026-09-12", "-E", "now", "-o", "JobID", NULL};
	const char *bad_field[] = {"sacct", "-P", "--format", "JobID,Bogus", NULL};
	const char *bad_opt[] = {"sacct", "--bogus", NULL};
	const char *other[] = {"sacct", "-a", "-P", "-n", "-M", "elsewhere", "-S", "2026-09-12", NULL};
	const char *table[] = {"sacct", "-a", "-X", "-S", "2026-09-12", "-o", "JobID%6,State", NULL};
	size_t lines = 0, batch = 0, ext = 0, alloc = 0;
	(void)state;

	/* --parsable: a header, then every line ends with the delimiter */
	assert_int_equal(run(&out, &err, p1), 0);
	assert_memory_equal(out.p, "JobID|State|\n", 13);
	for (char *l = out.p, *nl; *l; l = nl + 1, lines++) {
		nl = strchr(l, '\n');
		assert_int_equal(nl[-1], '|');
	}
	assert_int_equal(lines - 1, expected_rows(T0, g_f->now_s, 1));
	/* without --duplicates a requeued attempt is not listed */
	assert_int_equal(run(&out, &err, no_dup), 0);
	assert_null(strstr(out.p, "REQUEUED"));
	assert_int_equal(run(&out, &err, p1), 0);
	assert_non_null(strstr(out.p, "REQUEUED"));
	/* without --allocations each started job has its batch and extern steps */
	assert_int_equal(run(&out, &err, steps), 0);
	for (char *l = out.p, *nl; *l; l = nl + 1) {
		nl = strchr(l, '\n');
		batch += nl - l > 6 && !strncmp(nl - 6, ".batch", 6);
		ext += nl - l > 7 && !strncmp(nl - 7, ".extern", 7);
		alloc += !memchr(l, '.', (size_t)(nl - l));
	}
	assert_true(batch > 0 && batch == ext && batch < alloc);
	/* errors as sacct gives them, exit 1 */
	assert_int_equal(run(&out, &err, bad_field), 1);
	assert_non_null(strstr(err.p, "Invalid field requested: \"Bogus\""));
	assert_int_equal(run(&out, &err, bad_opt), 1);
	assert_non_null(strstr(err.p, "unrecognized option '--bogus'"));
	/* another cluster: nothing */
	assert_int_equal(run(&out, &err, other), 0);
	assert_int_equal(out.len, 0);
	/* no -p/-P: sacct's table, %N widths, '+' for a cut value */
	assert_int_equal(run(&out, &err, table), 0);
	assert_memory_equal(out.p, " JobID      State\n------ ----------\n", 36);
	gl_strbuf_fini(&out);
	gl_strbuf_fini(&err);
}

static void test_scontrol(void **state)
{
	struct gl_strbuf out = GL_STRBUF_INIT, err = GL_STRBUF_INIT;
	const char *nodes[] = {"var/sim/bin/scontrol", "show", "node", "-o", NULL};
	const char *resv[] = {"scontrol", "show", "reservation", "-o", NULL};
	const char *bad[] = {"scontrol", "show", "partition", NULL};
	struct gl_nodeobs_snapshot s = GL_NODEOBS_SNAPSHOT_INIT;
	struct gl_err e = {0};
	(void)state;
	assert_int_equal(run(&out, &err, nodes), 0);
	assert_int_equal(gl_scontrol_parse_nodes(out.p, out.len, &s, &e), 0);
	assert_int_equal(s.nnodes, (size_t)g_f->cl[0].nnodes);
	assert_int_equal(s.nproblems, 0);
	for (size_t i = 0; i < s.nnodes; i++) {
		const struct gl_simfleet_node *n = &g_f->nodes[g_f->cl[0].first_node + (int)i];
		int used = 0;
		for (int k = 0; k < n->ngpus; k++)
			used += n->slot[k] >= 0;
		assert_string_equal(s.nodes[i].name, n->name);
		assert_int_equal(s.nodes[i].ngpu_models, 1);
		assert_int_equal(s.nodes[i].gpus[0].gpus, n->ngpus);
		assert_int_equal(s.nodes[i].alloc_gpus, used);
		assert_int_equal(s.nodes[i].avail == GL_NODEOBS_AVAIL_DOWN, n->avail == GL_SIMFLEET_DOWN);
		/* a draining node (jobs still on it) is up until they end */
		assert_int_equal(s.nodes[i].avail == GL_NODEOBS_AVAIL_DRAINED, n->avail == GL_SIMFLEET_DRAIN && used == 0);
	}
	assert_int_equal(run(&out, &err, resv), 0);
	assert_int_equal(gl_slurm_events_parse_reservations(out.p, out.len, &s, &e), 0);
	assert_int_equal(s.nresvs, 0);
	assert_int_equal(run(&out, &err, bad), 1);
	gl_nodeobs_snapshot_fini(&s);
	gl_strbuf_fini(&out);
	gl_strbuf_fini(&err);
}

/* nodes_poll.c's argv; every node event overlapping [start, end] plus the
 * cluster's registration, with the model's times. */
static void test_sacctmgr_events(void **state)
{
	struct gl_strbuf out = GL_STRBUF_INIT, err = GL_STRBUF_INIT;
	int64_t from = g_f->now_s - 5 * DAY, to = g_f->now_s;
	char s[32], e[32], sa[48], ea[48];
	struct gl_nodeobs_snapshot snap = GL_NODEOBS_SNAPSHOT_INIT;
	struct gl_err er = {0};
	size_t want = 0, nodes = 0;
	(void)state;
	fmt(from, s);
	fmt(to, e);
	snprintf(sa, sizeof sa, "start=%s", s);
	snprintf(ea, sizeof ea, "end=%s", e);
	{
		const char *argv[] = {"sacctmgr", "-P", "show", "event", "events=node,cluster", "clusters=sim-slurm",
				      sa, ea, "format=Cluster,Event,NodeName,ClusterNodes,Start,End,State,StateRaw,"
					      "Reason,User,TRES", NULL};
		assert_int_equal(run(&out, &err, argv), 0);
	}
	assert_int_equal(gl_slurm_events_parse_sacctmgr(out.p, out.len, &snap, &er), 0);
	for (size_t i = 0; i < g_f->nevents; i++) {
		const struct gl_simfleet_nodeevent *ev = &g_f->events[i];
		if (g_f->nodes[ev->node].cluster == 0 && ev->start_s <= to &&
		    (ev->end_s == GL_SIMFLEET_NONE || ev->end_s >= from))
			want++;
	}
	assert_true(want > 0);
	assert_int_equal(snap.nproblems, 0);
	assert_int_equal(snap.nevents, want + 1);
	for (size_t i = 0; i < snap.nevents; i++) {
		const struct gl_nodeobs_slurm_event *ev = &snap.events[i];
		if (ev->is_cluster) {
			assert_int_equal(ev->start_s, T0);
			assert_int_equal(ev->gpus_total, g_f->cl[0].gpus);
			continue;
		}
		nodes++;
		assert_true(ev->start_s <= to && (ev->end_s == GL_TIME_NONE || ev->end_s >= from));
		assert_true(ev->avail == GL_NODEOBS_AVAIL_DOWN || ev->avail == GL_NODEOBS_AVAIL_DRAINED);
	}
	assert_int_equal(nodes, want);
	gl_nodeobs_snapshot_fini(&snap);
	gl_strbuf_fini(&out);
	gl_strbuf_fini(&err);
}

static void test_kubectl(void **state)
{
	struct gl_strbuf out = GL_STRBUF_INIT, err = GL_STRBUF_INIT;
	const char *pods[] = {"var/sim/bin/kubectl", "get", "pods", "-A", "-o", "json", NULL};
	const char *ns[] = {"kubectl", "get", "pods", "-n", "llm-serving", "-o", "json", NULL};
	const char *nodes[] = {"var/sim/bin/kubectl", "get", "nodes", "-o", "json", NULL};
	const char *yaml[] = {"kubectl", "get", "pods", "-A", "-o", "yaml", NULL};
	struct gl_kube_result r = {0};
	struct gl_nodeobs_snapshot s = GL_NODEOBS_SNAPSHOT_INIT;
	struct gl_err e = {0};
	size_t want = 0, running = 0, ns_want = 0;
	(void)state;
	assert_int_equal(run(&out, &err, pods), 0);
	assert_int_equal(gl_kube_parse(out.p, out.len, NULL, &r, &e), 0);
	for (size_t i = 0; i < g_f->njobs; i++) {
		const struct gl_simfleet_job *j = &g_f->jobs[i];
		if (g_f->cl[j->cluster].kind != GL_SIMFLEET_KUBE || j->state == GL_SIMFLEET_CANCELLED ||
		    (j->end_s != GL_SIMFLEET_NONE && j->end_s < g_f->now_s - GL_SIMSHOW_POD_TTL_S))
			continue;
		want++;
		running += j->state == GL_SIMFLEET_RUNNING;
		ns_want += !strcmp(gl_sim_namespaces[j->owner].name, "llm-serving");
	}
	assert_int_equal(r.nproblems, 0);
	assert_int_equal(r.npods, want);
	assert_true(running > 0);
	for (size_t i = 0; i < r.npods; i++) {
		assert_true(r.pods[i].gpu.gpu_micro >= 1000000 && r.pods[i].gpu.gpu_micro % 1000000 == 0);
		assert_non_null(strstr(r.pods[i].tags_json, "\"team\""));
	}
	gl_kube_result_fini(&r);
	assert_int_equal(run(&out, &err, ns), 0);
	assert_int_equal(gl_kube_parse(out.p, out.len, NULL, &r, &e), 0);
	assert_int_equal(r.npods, ns_want);
	gl_kube_result_fini(&r);
	assert_int_equal(run(&out, &err, nodes), 0);
	assert_int_equal(gl_kube_nodes_parse(out.p, out.len, &s, &e), 0);
	assert_int_equal(s.nnodes, (size_t)g_f->cl[1].nnodes);
	for (size_t i = 0; i < s.nnodes; i++) {
		assert_int_equal(s.nodes[i].gpus[0].gpus, g_f->nodes[g_f->cl[1].first_node + (int)i].ngpus);
		assert_int_equal(s.nodes[i].created_s, T0);
	}
	assert_int_equal(run(&out, &err, yaml), 1);
	gl_nodeobs_snapshot_fini(&s);
	gl_strbuf_fini(&out);
	gl_strbuf_fini(&err);
}

/* Each node's exporter text parses as dcgm-exporter's; its GPUs carry the
 * running jobs' labels (hpc_job on Slurm, pod labels on Kubernetes) and
 * the utilisation the model gives them. */
static void test_metrics(void **state)
{
	struct gl_strbuf out = GL_STRBUF_INIT;
	size_t labelled = 0;
	(void)state;
	assert_int_equal(gl_simshow_metrics(g_f, "no-such-node", &out), -1);
	for (int i = 0; i < g_f->nnodes; i++) {
		struct gl_simfleet_node *n = &g_f->nodes[i];
		struct gl_dcgm_scrape sc;
		struct gl_err e = {0};
		char host[64];
		gl_strbuf_reset(&out);
		assert_int_equal(gl_simshow_metrics(g_f, n->name, &out), 0);
		assert_int_equal(gl_dcgm_scrape_parse(&sc, out.p, out.len, NULL, &e), 0);
		assert_int_equal(sc.ngpus, (size_t)n->ngpus);
		assert_int_equal(sc.stats.blank + sc.stats.no_uuid + sc.stats.not_dcgm, 0);
		gl_simshow_exporter_host(g_f, i, host, sizeof host);
		for (size_t k = 0; k < sc.ngpus; k++) {
			const struct gl_dcgm_gpu *g = &sc.gpus[k];
			int32_t ji = n->slot[g->gpu_index];
			assert_string_equal(g->hostname, host);
			assert_true(gl_dcgm_reading_has(&g->r, GL_DCGM_ENGINE_ACTIVE));
			if (ji < 0) {
				assert_int_equal(g->njobs, 0);
				assert_true(g->r.v[GL_DCGM_ENGINE_ACTIVE] < 0.01);
				continue;
			}
			labelled++;
			assert_int_equal((int)g->r.v[GL_DCGM_GPU_UTIL],
					 gl_simfleet_util(g_f, &g_f->jobs[ji], g->gpu_index, g_f->now_s));
			if (g_f->cl[n->cluster].kind == GL_SIMFLEET_SLURM) {
				char id[16];
				snprintf(id, sizeof id, "%u", g_f->jobs[ji].id);
				assert_int_equal(g->njobs, 1);
				assert_string_equal(g->jobs[0], id);
			} else {
				assert_int_equal(g->npods, 1);
				assert_string_equal(g->pods[0].ns, gl_sim_namespaces[g_f->jobs[ji].owner].name);
			}
		}
		gl_dcgm_scrape_fini(&sc);
	}
	assert_true(labelled > 0);
	gl_strbuf_fini(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sacct_daemon_argv), cmocka_unit_test(test_sacct_options),
		cmocka_unit_test(test_scontrol),          cmocka_unit_test(test_sacctmgr_events),
		cmocka_unit_test(test_kubectl),           cmocka_unit_test(test_metrics),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
