/* Unit tests for the node inventory parsers (src/sources/{nodeobs,scontrol,
 * slurm_events,kube_nodes}.c) over real outputs: the slurm-testbed-nodes run
 * (scontrol nodes in every state it went through, sacctmgr events and
 * reservations), the hb-jobinfo and rug-slurm-jobinfo `scontrol show -o
 * nodes` dumps, the Alibaba PAI 2020 machine inventory turned into a
 * NodeList, and the hand-written Kubernetes node documents. Run from the
 * repo root; tests/fixtures/nodes/README.md names the sources. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/nodeobs.h"
#include "gl/strbuf.h"
#include "gl/timeutil.h"
#include "lib/testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIX "tests/fixtures/nodes/"

static int64_t t(const char *s)
{
	int64_t v;
	assert_int_equal(gl_timeutil_parse(s, strlen(s), &v), 0);
	return v;
}

static const struct gl_nodeobs_obs *node(const struct gl_nodeobs_snapshot *s, const char *name)
{
	for (size_t i = 0; i < s->nnodes; i++)
		if (!strcmp(s->nodes[i].name, name))
			return &s->nodes[i];
	return NULL;
}

/* ---- the state table ---- */

static void test_state_table(void **state)
{
	static const struct {
		const char *in;
		enum gl_nodeobs_avail want;
		const char *unknown;
	} cases[] = {
		{"IDLE", GL_NODEOBS_AVAIL_UP, ""},
		{"MIXED", GL_NODEOBS_AVAIL_UP, ""},
		{"ALLOCATED", GL_NODEOBS_AVAIL_UP, ""},
		{"DOWN", GL_NODEOBS_AVAIL_DOWN, ""},
		{"DOWN*", GL_NODEOBS_AVAIL_DOWN, ""},
		{"DOWN*+DRAIN", GL_NODEOBS_AVAIL_DOWN, ""},
		{"IDLE+DRAIN", GL_NODEOBS_AVAIL_DRAINED, ""},       /* drained: nothing runs */
		{"MIXED+DRAIN", GL_NODEOBS_AVAIL_UP, ""},           /* draining: jobs still run */
		{"ALLOCATED+DRAIN", GL_NODEOBS_AVAIL_UP, ""},
		{"DRAINED", GL_NODEOBS_AVAIL_DRAINED, ""},
		{"DRAINING", GL_NODEOBS_AVAIL_UP, ""},
		{"IDLE+MAINTENANCE+RESERVED+PLANNED", GL_NODEOBS_AVAIL_UP, ""}, /* reservations come from their own source */
		{"IDLE+PLANNED", GL_NODEOBS_AVAIL_UP, ""},
		{"IDLE*", GL_NODEOBS_AVAIL_UP, ""},                 /* not responding is not down (yet) */
		{"IDLE+NOT_RESPONDING", GL_NODEOBS_AVAIL_UP, ""},
		{"IDLE+POWERED_DOWN", GL_NODEOBS_AVAIL_POWERED_DOWN, ""},
		{"IDLE~", GL_NODEOBS_AVAIL_POWERED_DOWN, ""},
		{"IDLE+CLOUD+POWERED_DOWN", GL_NODEOBS_AVAIL_POWERED_DOWN, ""},
		{"IDLE+POWERING_UP", GL_NODEOBS_AVAIL_POWERED_DOWN, ""},
		{"IDLE+POWERING_DOWN", GL_NODEOBS_AVAIL_UP, ""},
		{"FUTURE", GL_NODEOBS_AVAIL_POWERED_DOWN, ""},
		{"IDLE+FAIL", GL_NODEOBS_AVAIL_DOWN, ""},
		{"MIXED+FAIL", GL_NODEOBS_AVAIL_UP, ""},
		{"IDLE+INVAL", GL_NODEOBS_AVAIL_DOWN, ""},
		{"UNKNOWN", GL_NODEOBS_AVAIL_UP, ""},
		{"IDLE+COMPLETING", GL_NODEOBS_AVAIL_UP, ""},
		{"IDLE+REBOOT_REQUESTED", GL_NODEOBS_AVAIL_UP, ""},
		{"IDLE+SOMETHING_NEW", GL_NODEOBS_AVAIL_UP, "SOMETHING_NEW"},    /* kept, not unavailable */
		{"DOWN+SOMETHING_NEW+X2", GL_NODEOBS_AVAIL_DOWN, "SOMETHING_NEW+X2"},
		{"idle+drain", GL_NODEOBS_AVAIL_DRAINED, ""},
	};
	for (size_t i = 0; i < GL_ARRAY_LEN(cases); i++) {
		char unk[128];
		enum gl_nodeobs_avail a = gl_nodeobs_state_classify(cases[i].in, strlen(cases[i].in), unk, sizeof unk);
		if (a != cases[i].want || strcmp(unk, cases[i].unknown))
			fail_msg("%s: got %s '%s', want %s '%s'", cases[i].in, gl_nodeobs_avail_name(a), unk,
				 gl_nodeobs_avail_name(cases[i].want), cases[i].unknown);
	}
}

static void test_state_raw(void **state)
{
	assert_int_equal(gl_nodeobs_state_raw_classify(1), GL_NODEOBS_AVAIL_DOWN);
	assert_int_equal(gl_nodeobs_state_raw_classify(514), GL_NODEOBS_AVAIL_DRAINED);     /* IDLE+DRAIN, the testbed event */
	assert_int_equal(gl_nodeobs_state_raw_classify(1 | 0x8000), GL_NODEOBS_AVAIL_MAINT); /* skipped by the rollup */
	assert_int_equal(gl_nodeobs_state_raw_classify(6), GL_NODEOBS_AVAIL_POWERED_DOWN);  /* FUTURE */
	assert_int_equal(gl_nodeobs_state_raw_classify(2 | 0x80 | 0x1000), GL_NODEOBS_AVAIL_POWERED_DOWN);
	assert_int_equal(gl_nodeobs_state_raw_classify(2 | 0x1000), GL_NODEOBS_AVAIL_DOWN); /* powered down, not cloud */
}

/* ---- Gres and TRES ---- */

static void test_gres(void **state)
{
	static const struct {
		const char *in;
		int rc;
		size_t n;
		const char *model0;
		int64_t gpus0, mig0;
		const char *model1;
		int64_t gpus1;
	} cases[] = {
		{"gpu:a100:4", 0, 1, "a100", 4, 0, NULL, 0},
		{"gpu:a100:4(S:0-1)", 0, 1, "a100", 4, 0, NULL, 0},
		{"gpu:a100:2(S:0),gpu:v100:2(S:1)", 0, 2, "a100", 2, 0, "v100", 2},
		{"gpu:a100:4(IDX:0,2-3),shard:8", 0, 1, "a100", 4, 0, NULL, 0},
		{"gpu:4", 0, 1, "", 4, 0, NULL, 0},
		{"gpu:tesla:1,mps:100", 0, 1, "tesla", 1, 0, NULL, 0},
		{"(null)", 0, 0, NULL, 0, 0, NULL, 0},
		{"", 0, 0, NULL, 0, 0, NULL, 0},
		{"gpu:1g.10gb:14", 0, 1, "mig", 2, 14, NULL, 0},             /* 14 one-slice instances = 2 GPUs */
		{"gpu:a100_3g.40gb:4,gpu:a100:2", 0, 1, "a100", 4, 4, NULL, 0}, /* 4 x 3 slices = 2 GPUs, + 2 whole */
		{"gpu:a100:x", -GL_EINVAL, 0, NULL, 0, 0, NULL, 0},
	};
	for (size_t i = 0; i < GL_ARRAY_LEN(cases); i++) {
		struct gl_nodeobs_gpus g[GL_NODEOBS_MAX_MODELS];
		size_t n = 99;
		struct gl_err err = {0};
		int rc = gl_nodeobs_parse_gres(cases[i].in, strlen(cases[i].in), g, &n, &err);
		if (rc != cases[i].rc)
			fail_msg("%s: rc %d (%s)", cases[i].in, rc, err.msg);
		if (rc)
			continue;
		assert_int_equal(n, cases[i].n);
		if (n >= 1) {
			assert_string_equal(g[0].model, cases[i].model0);
			assert_int_equal(g[0].gpus, cases[i].gpus0);
			assert_int_equal(g[0].mig_instances, cases[i].mig0);
		}
		if (n >= 2) {
			assert_string_equal(g[1].model, cases[i].model1);
			assert_int_equal(g[1].gpus, cases[i].gpus1);
		}
	}
}

static void test_tres(void **state)
{
	struct gl_nodeobs_gpus g[GL_NODEOBS_MAX_MODELS];
	size_t n;
	int64_t total;
	struct gl_err err = {0};
	const char *s = "cpu=8,mem=16000M,billing=8,gres/gpu=4,gres/gpu:a100=4";
	assert_int_equal(gl_nodeobs_parse_tres_models(s, strlen(s), g, &n, &total, &err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(g[0].model, "a100");
	assert_int_equal(g[0].gpus, 4);
	assert_int_equal(total, 4);
	/* an untyped remainder keeps its own (empty) model */
	s = "cpu=8,gres/gpu=6,gres/gpu:a100=4";
	assert_int_equal(gl_nodeobs_parse_tres_models(s, strlen(s), g, &n, &total, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(g[1].model, "");
	assert_int_equal(g[1].gpus, 2);
	assert_int_equal(total, 6);
	/* gres/gpumem is not a GPU count */
	s = "cpu=8,gres/gpumem=40G,gres/gpu=1";
	assert_int_equal(gl_nodeobs_parse_tres_models(s, strlen(s), g, &n, &total, &err), 0);
	assert_int_equal(total, 1);
	s = "cpu=8,gres/gpu=x";
	assert_int_not_equal(gl_nodeobs_parse_tres_models(s, strlen(s), g, &n, &total, &err), 0);
}

/* ---- scontrol show node -o ---- */

static void test_scontrol_testbed(void **state)
{
	struct gl_nodeobs_snapshot s = GL_NODEOBS_SNAPSHOT_INIT;
	struct gl_err err = {0};
	size_t len;
	char *txt = gl_test_read_file(FIX "testbed/start_scontrol_show_node.txt", &len);
	const struct gl_nodeobs_obs *o;
	assert_int_equal(gl_scontrol_parse_nodes(txt, len, &s, &err), 0);
	assert_int_equal(s.nnodes, 4);
	assert_int_equal(s.nproblems, 0);
	o = node(&s, "gpu01");
	assert_non_null(o);
	assert_string_equal(o->partitions, "a100");
	assert_int_equal(o->ngpu_models, 1);
	assert_string_equal(o->gpus[0].model, "a100");
	assert_int_equal(o->gpus[0].gpus, 4);
	assert_int_equal(o->alloc_gpus, 0);
	assert_int_equal(o->avail, GL_NODEOBS_AVAIL_UP);
	assert_string_equal(o->state_raw, "IDLE");
	assert_null(o->reason);
	o = node(&s, "gpu04");
	assert_string_equal(o->gpus[0].model, "v100");
	assert_int_equal(o->gpus[0].gpus, 2);
	gl_nodeobs_snapshot_fini(&s);
	free(txt);
}

/* every state the testbed run went through (node_snapshots.txt) */
static void test_scontrol_states(void **state)
{
	struct gl_nodeobs_snapshot s = GL_NODEOBS_SNAPSHOT_INIT;
	struct gl_err err = {0};
	size_t len, down = 0, drained = 0, draining = 0, maint = 0;
	char *txt = gl_test_read_file(FIX "testbed/node_snapshots_scontrol.txt", &len);
	assert_int_equal(gl_scontrol_parse_nodes(txt, len, &s, &err), 0);
	assert_int_equal(s.nnodes, 23);
	assert_int_equal(s.skipped, 0);
	assert_int_equal(s.unknown_flags, 0);
	for (size_t i = 0; i < s.nnodes; i++) {
		const struct gl_nodeobs_obs *o = &s.nodes[i];
		if (!strcmp(o->state_raw, "DOWN")) {
			down++;
			assert_int_equal(o->avail, GL_NODEOBS_AVAIL_DOWN);
			assert_string_equal(o->name, "gpu04");
			assert_string_equal(o->reason, "maint test");
			assert_string_equal(o->reason_user, "root");
			assert_int_equal(o->reason_s, t("2026-11-22T17:59:21Z"));
			assert_int_equal(o->state_since_s, t("2026-11-22T17:59:21Z"));
		} else if (!strcmp(o->state_raw, "IDLE+DRAIN")) {
			drained++;
			assert_int_equal(o->avail, GL_NODEOBS_AVAIL_DRAINED);
			assert_string_equal(o->reason, "drain test");
		} else if (!strcmp(o->state_raw, "MIXED+DRAIN")) {
			draining++;
			assert_int_equal(o->avail, GL_NODEOBS_AVAIL_UP);
			assert_true(o->alloc_gpus == 4 || o->alloc_gpus == 3); /* AllocTRES gres/gpu */
		} else if (strstr(o->state_raw, "MAINTENANCE")) {
			maint++;
			assert_int_equal(o->avail, GL_NODEOBS_AVAIL_UP);
		} else {
			assert_int_equal(o->avail, GL_NODEOBS_AVAIL_UP);
		}
	}
	assert_int_equal(down, 1);
	assert_int_equal(drained, 1);
	assert_int_equal(draining, 2);
	assert_int_equal(maint, 2);
	gl_nodeobs_snapshot_fini(&s);
	free(txt);
}

static void test_scontrol_bad_lines(void **state)
{
	static const char txt[] =
		"NodeName=a1 Gres=gpu:a100:4 State=IDLE Partitions=p1,p2\n"
		"\n"
		"NodeName=a2 Gres=gpu:a100:x State=IDLE\n"
		"garbage here\n"
		"NodeName=a3 Gres=gpu:2 State=IDLE+WEIRD Reason=broken fan=loud [admin@2026-01-02T03:04:05]\n";
	struct gl_nodeobs_snapshot s = GL_NODEOBS_SNAPSHOT_INIT;
	struct gl_err err = {0};
	assert_int_equal(gl_scontrol_parse_nodes(txt, sizeof txt - 1, &s, &err), 0);
	assert_int_equal(s.nnodes, 2);
	assert_int_equal(s.skipped, 2);
	assert_string_equal(s.problems[0], "scontrol line 3: Gres: bad count in 'gpu:a100:x'");
	assert_string_equal(s.problems[1], "scontrol line 4: not a NodeName= line (did you pass -o?)");
	assert_string_equal(s.problems[2], "scontrol line 5: node a3: unknown state flags 'WEIRD' kept verbatim");
	assert_string_equal(node(&s, "a1")->partitions, "p1,p2");
	/* the reason is free text, '=' included */
	assert_string_equal(node(&s, "a3")->reason, "broken fan=loud");
	assert_string_equal(node(&s, "a3")->reason_user, "admin");
	assert_string_equal(node(&s, "a3")->unknown_flags, "WEIRD");
	assert_int_equal(node(&s, "a3")->gpus[0].gpus, 2);
	gl_nodeobs_snapshot_fini(&s);
	/* not UTF-8: that node only (the store would refuse the snapshot) */
	{
		static const char lat[] = "NodeName=b1 Gres=gpu:2 State=IDLE\n"
					  "NodeName=b2 Gres=gpu:2 State=DRAIN Reason=caf\xe9 [root@2026-01-02T03:04:05]\n";
		assert_int_equal(gl_scontrol_parse_nodes(lat, sizeof lat - 1, &s, &err), 0);
		assert_int_equal(s.nnodes, 1);
		assert_int_equal(s.skipped, 1);
		assert_string_equal(s.nodes[0].name, "b1");
		assert_string_equal(s.problems[0], "scontrol line 2: not valid UTF-8 (byte 46)");
		gl_nodeobs_snapshot_fini(&s);
	}
	/* not scontrol output at all */
	assert_int_equal(gl_scontrol_parse_nodes("{\"items\":[]}\n", 13, &s, &err), -GL_EFORMAT);
	gl_nodeobs_snapshot_fini(&s);
}

/* The real hb-jobinfo / rug-slurm-jobinfo dumps (NodeName + CfgTRES only):
 * the GPU total is recomputed here from the text. */
static void check_real(const char *path, size_t want_gpu_nodes)
{
	struct gl_nodeobs_snapshot s = GL_NODEOBS_SNAPSHOT_INIT;
	struct gl_err err = {0};
	size_t len, gpu_nodes = 0;
	int64_t gpus = 0, want_gpus = 0;
	char *txt = gl_test_read_file(path, &len), *p;
	size_t want_nodes = 0;
	for (p = strstr(txt, "NodeName="); p; p = strstr(p + 1, "NodeName="))
		want_nodes++;
	assert_int_equal(gl_scontrol_parse_nodes(txt, len, &s, &err), 0);
	assert_int_equal(s.nnodes, want_nodes);
	assert_int_equal(s.skipped, 0);
	for (size_t i = 0; i < s.nnodes; i++) {
		if (s.nodes[i].ngpu_models)
			gpu_nodes++;
		for (size_t m = 0; m < s.nodes[i].ngpu_models; m++)
			gpus += s.nodes[i].gpus[m].gpus;
	}
	for (p = strstr(txt, "gres/gpu="); p; p = strstr(p + 1, "gres/gpu="))
		want_gpus += atoll(p + 9);
	assert_int_equal(gpu_nodes, want_gpu_nodes);
	assert_int_equal(gpus, want_gpus);
	gl_nodeobs_snapshot_fini(&s);
	free(txt);
}

static void test_scontrol_real(void **state)
{
	check_real(FIX "real/hb-jobinfo_scontrol.txt", 40);
	check_real(FIX "real/rug-slurm-jobinfo_scontrol.txt", 0);
}

/* ---- sacctmgr show event / reservations ---- */

static void test_events_testbed(void **state)
{
	struct gl_nodeobs_snapshot s = GL_NODEOBS_SNAPSHOT_INIT;
	struct gl_err err = {0};
	size_t len;
	char *txt = gl_test_read_file(FIX "testbed/sacctmgr_events.txt", &len);
	const struct gl_nodeobs_slurm_event *e;
	assert_int_equal(gl_slurm_events_parse_sacctmgr(txt, len, &s, &err), 0);
	assert_int_equal(s.nevents, 3);
	{
		/* the testbed's events with the drain reason made Latin-1: that
		 * event only (the store would refuse the snapshot) */
		struct gl_nodeobs_snapshot s2 = GL_NODEOBS_SNAPSHOT_INIT;
		char *lat = gl_xstrdup(txt), *r = strstr(lat, "|drain test|");
		assert_non_null(r);
		r[3] = (char)0xe9; /* "dr\xe9in" */
		assert_int_equal(gl_slurm_events_parse_sacctmgr(lat, len, &s2, &err), 0);
		assert_int_equal(s2.nevents, 2);
		assert_int_equal(s2.skipped, 1);
		assert_non_null(strstr(s2.problems[0], "line 3: not valid UTF-8 (byte "));
		gl_nodeobs_snapshot_fini(&s2);
		free(lat);
	}
	e = &s.events[0];
	assert_true(e->is_cluster);
	assert_string_equal(e->cluster_nodes, "gpu[01-04]");
	assert_int_equal(e->start_s, t("2026-11-22T17:58:52Z"));
	assert_int_equal(e->end_s, GL_TIME_NONE);
	assert_int_equal(e->gpus_total, 12);
	e = &s.events[1];
	assert_false(e->is_cluster);
	assert_string_equal(e->node, "gpu01");
	assert_int_equal(e->state_raw, 514);
	assert_int_equal(e->avail, GL_NODEOBS_AVAIL_DRAINED);
	assert_int_equal(e->start_s, t("2026-11-22T17:59:43Z"));
	assert_int_equal(e->end_s, t("2026-11-22T18:01:25Z"));
	assert_string_equal(e->reason, "drain test");
	assert_string_equal(e->user, "slurm(64030)");
	assert_int_equal(e->gpus_total, 4);
	e = &s.events[2];
	assert_string_equal(e->node, "gpu04");
	assert_int_equal(e->avail, GL_NODEOBS_AVAIL_DOWN);
	assert_int_equal(e->end_s - e->start_s, 119);
	gl_nodeobs_snapshot_fini(&s);
	free(txt);
	/* 22.05's answer to `show event all` is an error text, not a table */
	assert_int_equal(gl_slurm_events_parse_sacctmgr(" Unknown event type: 'all'\n", 27, &s, &err), -GL_EFORMAT);
	gl_nodeobs_snapshot_fini(&s);
}

static void test_reservations(void **state)
{
	struct gl_nodeobs_snapshot s = GL_NODEOBS_SNAPSHOT_INIT;
	struct gl_err err = {0};
	size_t len;
	char *txt = gl_test_read_file(FIX "testbed/sacctmgr_reservations.txt", &len);
	static const char one_line[] =
		"ReservationName=big StartTime=2026-11-22T20:00:00 EndTime=2026-11-22T22:00:00 Duration=02:00:00 "
		"Nodes=gpu[01-02] NodeCnt=2 CoreCnt=16 Features=(null) PartitionName=a100 Flags=SPEC_NODES "
		"TRES=cpu=16,gres/gpu=6,gres/gpu:a100=6 Users=alice Groups=(null) Accounts=(null) Licenses=(null) "
		"State=INACTIVE BurstBuffer=(null) Watts=n/a MaxStartDelay=(null)\n";
	assert_int_equal(gl_slurm_events_parse_reservations(txt, len, &s, &err), 0);
	free(txt);
	txt = gl_test_read_file(FIX "testbed/scontrol_show_reservation.txt", &len);
	assert_int_equal(gl_slurm_events_parse_reservations(txt, len, &s, &err), 0);
	free(txt);
	assert_int_equal(gl_slurm_events_parse_reservations(one_line, sizeof one_line - 1, &s, &err), 0);
	assert_int_equal(gl_slurm_events_parse_reservations("No reservations in the system\n", 30, &s, &err), 0);
	assert_int_equal(s.nresvs, 3);
	/* sacctmgr and scontrol forms of the testbed's maintenance reservation agree */
	for (int i = 0; i < 2; i++) {
		const struct gl_nodeobs_slurm_resv *r = &s.resvs[i];
		assert_string_equal(r->name, "maint_gpu03");
		assert_int_equal(r->start_s, t("2026-11-22T18:01:14Z"));
		assert_int_equal(r->end_s, t("2026-11-22T18:03:14Z"));
		assert_string_equal(r->nodes, "gpu03");
		assert_string_equal(r->tres, "cpu=8");
		assert_true(r->maint);
		assert_int_equal(r->gpus_total, 0); /* 22.05: a reservation's TRES is cpu only */
	}
	assert_false(s.resvs[2].maint);
	assert_int_equal(s.resvs[2].gpus_total, 6);
	assert_string_equal(s.resvs[2].nodes, "gpu[01-02]");
	gl_nodeobs_snapshot_fini(&s);
}

/* ---- kubectl get nodes -o json ---- */

static void test_kube_nodes(void **state)
{
	struct gl_nodeobs_snapshot s = GL_NODEOBS_SNAPSHOT_INIT;
	struct gl_err err = {0};
	size_t len;
	char *txt = gl_test_read_file(FIX "kube/t0_2026-11-01T00.json", &len);
	const struct gl_nodeobs_obs *o;
	assert_int_equal(gl_kube_nodes_parse(txt, len, &s, &err), 0);
	free(txt);
	assert_int_equal(s.nnodes, 3);
	/* the nvidia.com/gpu=present:NoSchedule dedication taint is not a drain */
	for (size_t i = 0; i < s.nnodes; i++)
		assert_int_equal(s.nodes[i].avail, GL_NODEOBS_AVAIL_UP);
	o = node(&s, "gpu-n1");
	assert_string_equal(o->gpus[0].model, "NVIDIA-A100-SXM4-80GB");
	assert_int_equal(o->gpus[0].gpus, 8);
	assert_int_equal(o->gpus[0].memory_mib, 81920);
	assert_int_equal(o->created_s, t("2026-10-01T00:00:00Z"));
	gl_nodeobs_snapshot_fini(&s);

	txt = gl_test_read_file(FIX "kube/t2_2026-11-01T12.json", &len);
	assert_int_equal(gl_kube_nodes_parse(txt, len, &s, &err), 0);
	free(txt);
	o = node(&s, "gpu-n1");
	assert_int_equal(o->avail, GL_NODEOBS_AVAIL_DOWN);
	assert_int_equal(o->state_since_s, t("2026-11-01T10:00:00Z"));
	assert_non_null(strstr(o->reason, "NodeStatusUnknown"));
	o = node(&s, "gpu-n2");
	assert_int_equal(o->avail, GL_NODEOBS_AVAIL_DRAINED);
	assert_int_equal(o->state_since_s, t("2026-11-01T05:30:00Z"));
	assert_non_null(strstr(o->state_raw, "unschedulable"));
	o = node(&s, "gpu-n4");
	assert_string_equal(o->gpus[0].model, "NVIDIA-H100-80GB-HBM3");
	assert_int_equal(o->gpus[0].gpus, 2); /* physical, from 14 MIG instances and gpu.count */
	assert_int_equal(o->gpus[0].mig_instances, 14);
	assert_null(node(&s, "gpu-n3"));
	gl_nodeobs_snapshot_fini(&s);
}

static void test_kube_nodes_bad(void **state)
{
	struct gl_nodeobs_snapshot s = GL_NODEOBS_SNAPSHOT_INIT;
	struct gl_err err = {0};
	static const char no_name[] =
		"{\"kind\":\"NodeList\",\"items\":[{\"metadata\":{}},{\"metadata\":{\"name\":\"ok\"},"
		"\"status\":{\"capacity\":{\"nvidia.com/gpu\":\"4\"},\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}]}";
	static const char single[] =
		"{\"kind\":\"NodeList\",\"items\":[{\"metadata\":{\"name\":\"m\",\"labels\":{\"nvidia.com/gpu.product\":"
		"\"NVIDIA-A100-SXM4-40GB-MIG-1g.5gb\",\"nvidia.com/mig.strategy\":\"single\"}},"
		"\"status\":{\"capacity\":{\"nvidia.com/gpu\":\"56\"}}}]}";
	assert_int_equal(gl_kube_nodes_parse(no_name, sizeof no_name - 1, &s, &err), 0);
	assert_int_equal(s.nnodes, 1);
	assert_int_equal(s.skipped, 1);
	assert_string_equal(s.problems[0], "kubectl nodes items[0].metadata.name: missing");
	assert_int_equal(s.nodes[0].gpus[0].gpus, 4);
	assert_string_equal(s.nodes[0].gpus[0].model, "");
	assert_int_equal(s.nodes[0].gpus[0].memory_mib, 0); /* not reported: unknown, not 0 MiB */
	gl_nodeobs_snapshot_fini(&s);
	{
		/* a raw Latin-1 byte in a label: that node only */
		static const char lat[] =
			"{\"kind\":\"NodeList\",\"items\":[{\"metadata\":{\"name\":\"bad\",\"labels\":{\"rack\":\"caf\xe9\"}}},"
			"{\"metadata\":{\"name\":\"ok\"},\"status\":{\"capacity\":{\"nvidia.com/gpu\":\"4\"}}}]}";
		assert_int_equal(gl_kube_nodes_parse(lat, sizeof lat - 1, &s, &err), 0);
		assert_int_equal(s.nnodes, 1);
		assert_string_equal(s.nodes[0].name, "ok");
		assert_int_equal(s.skipped, 1);
		assert_string_equal(s.problems[0], "kubectl nodes items[0].metadata.labels.rack: not valid UTF-8");
	}
	gl_nodeobs_snapshot_fini(&s);
	/* mig.strategy=single: 56 one-slice instances are 8 A100s */
	assert_int_equal(gl_kube_nodes_parse(single, sizeof single - 1, &s, &err), 0);
	assert_string_equal(s.nodes[0].gpus[0].model, "NVIDIA-A100-SXM4-40GB");
	assert_int_equal(s.nodes[0].gpus[0].gpus, 8);
	assert_int_equal(s.nodes[0].gpus[0].mig_instances, 56);
	gl_nodeobs_snapshot_fini(&s);
	/* a gpu.memory label that is not a MiB count is reported, not guessed */
	{
		static const char badmem[] =
			"{\"kind\":\"NodeList\",\"items\":[{\"metadata\":{\"name\":\"b\",\"labels\":{\"nvidia.com/gpu.memory\":"
			"\"80GB\"}},\"status\":{\"capacity\":{\"nvidia.com/gpu\":\"2\"}}}]}";
		assert_int_equal(gl_kube_nodes_parse(badmem, sizeof badmem - 1, &s, &err), 0);
		assert_int_equal(s.nodes[0].gpus[0].memory_mib, 0);
		assert_string_equal(s.problems[0], "kubectl nodes items[0].metadata.labels.nvidia.com/gpu.memory: '80GB' ignored");
		gl_nodeobs_snapshot_fini(&s);
	}
	assert_int_equal(gl_kube_nodes_parse("{\"kind\":\"PodList\",\"items\":[]}", 30, &s, &err), -GL_EFORMAT);
	assert_int_equal(gl_kube_nodes_parse("not json", 8, &s, &err), -GL_EFORMAT);
	gl_nodeobs_snapshot_fini(&s);
}

/* The Alibaba PAI 2020 machine inventory (1,897 machines, CC-BY-4.0) as a
 * NodeList: GPUs per model recomputed from the CSV here. */
static void test_kube_pai_inventory(void **state)
{
	size_t len, items = 0;
	char *csv = gl_test_read_file(FIX "real/pai_v2020_machine_spec.csv", &len), *save = NULL;
	struct gl_strbuf doc = GL_STRBUF_INIT;
	struct gl_nodeobs_snapshot s = GL_NODEOBS_SNAPSHOT_INIT;
	struct gl_err err = {0};
	int64_t want_gpus = 0, got_gpus = 0, want_p100 = 0, got_p100 = 0;
	gl_strbuf_puts(&doc, "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[");
	for (char *line = strtok_r(csv, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[64], type[32];
		int cpu, mem, gpu;
		if (sscanf(line, "%63[^,],%31[^,],%d,%d,%d", name, type, &cpu, &mem, &gpu) != 5)
			continue; /* header */
		gl_strbuf_printf(&doc,
				 "%s{\"metadata\":{\"name\":\"%s\",\"creationTimestamp\":\"2020-07-01T00:00:00Z\","
				 "\"labels\":{\"nvidia.com/gpu.product\":\"%s\"}},\"status\":{\"capacity\":{\"cpu\":\"%d\","
				 "\"nvidia.com/gpu\":\"%d\"},\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
				 items++ ? "," : "", name, type, cpu, gpu);
		want_gpus += gpu;
		if (!strcmp(type, "P100"))
			want_p100 += gpu;
	}
	gl_strbuf_puts(&doc, "]}");
	assert_int_equal(gl_kube_nodes_parse(doc.p, doc.len, &s, &err), 0);
	assert_int_equal(s.nnodes, items);
	assert_int_equal(items, 1897);
	for (size_t i = 0; i < s.nnodes; i++)
		for (size_t m = 0; m < s.nodes[i].ngpu_models; m++) {
			got_gpus += s.nodes[i].gpus[m].gpus;
			if (!strcmp(s.nodes[i].gpus[m].model, "P100"))
				got_p100 += s.nodes[i].gpus[m].gpus;
		}
	assert_int_equal(got_gpus, want_gpus);
	assert_int_equal(want_gpus, 6742); /* the trace README's figure */
	assert_int_equal(got_p100, want_p100);
	gl_nodeobs_snapshot_fini(&s);
	gl_strbuf_fini(&doc);
	free(csv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_state_table),
		cmocka_unit_test(test_state_raw),
		cmocka_unit_test(test_gres),
		cmocka_unit_test(test_tres),
		cmocka_unit_test(test_scontrol_testbed),
		cmocka_unit_test(test_scontrol_states),
		cmocka_unit_test(test_scontrol_bad_lines),
		cmocka_unit_test(test_scontrol_real),
		cmocka_unit_test(test_events_testbed),
		cmocka_unit_test(test_reservations),
		cmocka_unit_test(test_kube_nodes),
		cmocka_unit_test(test_kube_nodes_bad),
		cmocka_unit_test(test_kube_pai_inventory),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
