/* Bounded keys (issue 24 item 8): a value over its byte bound
 * (include/gl/bounds.h, docs/ingest.md "Bounded keys") costs its record,
 * never the batch. A 30 MB pod name failed a whole Kubernetes snapshot's
 * COPY ("index row requires 360112 bytes", 0 of 125 pods written); here it
 * sits in a real 128-item PodList beside a name holding \u0000 (which cJSON
 * would have cut), and each other source gets an oversized value in a real
 * fixture: the rest lands, the skip names the line or JSON path and the
 * bound, exit 4. Also: an scontrol node line cut before State= and CfgTRES=
 * (it was read as an up node with its Gres GPUs). The real binary. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char g_dsn[512], g_fields[1024];

static const char *tmp_path(const char *name)
{
	static char buf[4][PATH_MAX];
	static int k;
	k = (k + 1) % 4;
	snprintf(buf[k], sizeof buf[k], "%s/bounds-%d-%s", getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp",
		 (int)getpid(), name);
	return buf[k];
}

static void write_file(const char *path, const char *text, size_t len)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	fclose(f);
}

/* text with the first from replaced by to (malloc'd). */
static char *replace_once(const char *text, const char *from, const char *to)
{
	const char *at = strstr(text, from);
	size_t a, n;
	char *r;
	assert_non_null(at);
	a = (size_t)(at - text);
	n = strlen(text) - strlen(from) + strlen(to);
	r = malloc(n + 1);
	memcpy(r, text, a);
	memcpy(r + a, to, strlen(to));
	strcpy(r + a + strlen(to), at + strlen(from));
	return r;
}

static char *repeat(char c, size_t n)
{
	char *s = malloc(n + 1);
	memset(s, c, n);
	s[n] = '\0';
	return s;
}

static void has(const char *hay, const char *needle)
{
	if (!strstr(hay, needle))
		fail_msg("'%s' not in: %.2000s", needle, hay);
}

static long long q(const char *sql)
{
	return gl_test_qint_dsn(g_dsn, sql);
}

static void test_kube_30mb_name_and_nul(void **state)
{
	struct gl_test_out o;
	const char *fx = gl_test_fixture("tests/fixtures/kube/openb-at-10326485.json");
	char *doc = gl_test_read_file(fx, NULL), *big = repeat('a', 30u << 20), *text, *text2;
	cJSON *root = cJSON_Parse(doc), *items = cJSON_GetObjectItem(root, "items");
	long long good;
	(void)state;
	assert_int_equal(cJSON_GetArraySize(items), 128);
	/* items 2 and 4 request GPUs (items 3 and 5 do not) */
	cJSON_SetValuestring(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetArrayItem(items, 2), "metadata"), "name"),
			     big);
	text = cJSON_PrintUnformatted(root);
	text2 = replace_once(text, "\"openb-pod-0004\"", "\"openb-pod\\u0000-0004\"");
	write_file(tmp_path("pods.json"), text2, strlen(text2));
	free(doc);
	free(big);
	free(text);
	free(text2);
	cJSON_Delete(root);

	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "ingest", "kube", "--cluster", "kgood", "--file", fx, "--at",
				     "2023-01-02T00:00:00Z", NULL),
			 0);
	assert_int_equal(o.status, 0);
	gl_test_out_fini(&o);
	good = q("SELECT count(*) FROM jobs j JOIN clusters c USING (cluster_id) WHERE c.name = 'kgood'");
	assert_int_equal(good, 125);

	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "ingest", "kube", "--cluster", "khostile", "--file",
				     tmp_path("pods.json"), "--at", "2023-01-02T00:00:00Z", NULL),
			 0);
	if (o.status != 4)
		fail_msg("exit %d: %s", o.status, o.err);
	has(o.err, "items[2].metadata.name: 31457280 bytes, over the 253-byte bound of Kubernetes object names and kinds");
	has(o.err, "items[4].metadata.name: holds \\u0000");
	gl_test_out_fini(&o);
	assert_int_equal(q("SELECT count(*) FROM jobs j JOIN clusters c USING (cluster_id) WHERE c.name = 'khostile'"),
			 good - 2);
	/* nothing cut: no pod named openb-pod (the \u0000 one), none long */
	assert_int_equal(q("SELECT count(*) FROM jobs WHERE name = 'openb-pod' OR length(name) > 253"), 0);
	assert_int_equal(q("SELECT skipped FROM ingest_runs r JOIN clusters c USING (cluster_id) WHERE c.name = 'khostile'"),
			 2);
	unlink(tmp_path("pods.json"));
}

static void test_sacct_long_job_name(void **state)
{
	struct gl_test_out o;
	char *doc = gl_test_read_file(gl_test_fixture("tests/fixtures/sacct/testbed/sacct_alloc.txt"), NULL);
	char *name = repeat('x', 2000), *to = malloc(2100), *text;
	long long lines = 0;
	(void)state;
	for (const char *p = doc; *p; p++)
		lines += *p == '\n';
	/* job 2's JobName "gpu1" */
	snprintf(to, 2100, "|%s|3|", name);
	text = replace_once(doc, "|gpu1|3|", to);
	{
		/* and a pending array meta row whose range no Slurm makes (it
		 * was counted as 2,147,483,647 pending tasks): line lines + 1 */
		char *first = strndup(doc, strcspn(doc, "\n")), *arr = replace_once(first, "1|1|", "77_[0-4294967296]|77|");
		size_t n = strlen(text);
		text = realloc(text, n + strlen(arr) + 2);
		sprintf(text + n, "%s\n", arr);
		free(first);
		free(arr);
	}
	write_file(tmp_path("sacct.txt"), text, strlen(text));
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "ingest", "sacct", "--cluster", "testgpu", "--file",
				     tmp_path("sacct.txt"), "--fields", g_fields, NULL),
			 0);
	if (o.status != 4)
		fail_msg("exit %d: %s", o.status, o.err);
	has(o.err, "sacct.txt:2: JobName: 2000 bytes, over the 1024-byte bound of job names");
	{
		char want[160];
		snprintf(want, sizeof want, "sacct.txt:%lld: JobID: bad job id (an array task id over 4000000", lines + 1);
		has(o.err, want);
	}
	gl_test_out_fini(&o);
	assert_int_equal(q("SELECT count(*) FROM jobs j JOIN clusters c USING (cluster_id) WHERE c.name = 'testgpu'"),
			 lines - 1);
	assert_int_equal(q("SELECT count(*) FROM jobs j JOIN clusters c USING (cluster_id) WHERE c.name = 'testgpu'"
			   " AND job_id = '2'"),
			 0);
	free(doc);
	free(name);
	free(to);
	free(text);
	unlink(tmp_path("sacct.txt"));
}

static void test_slurm_nodes_long_name_cut_line_long_reason(void **state)
{
	struct gl_test_out o;
	char *nodes = gl_test_read_file(gl_test_fixture("tests/fixtures/nodes/testbed/start_scontrol_show_node.txt"), NULL);
	char *events = gl_test_read_file(gl_test_fixture("tests/fixtures/nodes/testbed/sacctmgr_events.txt"), NULL);
	char *name = repeat('n', 300), *reason = repeat('r', 5000), *to = malloc(5100), *t1, *t2, *cut, *ev;
	(void)state;
	/* gpu01 gets a 300-byte name; gpu03's line is cut after its Gres */
	snprintf(to, 5100, "NodeName=%s ", name);
	t1 = replace_once(nodes, "NodeName=gpu01 ", to);
	cut = strstr(t1, "NodeName=gpu03 ");
	assert_non_null(cut);
	{
		char *nl = strchr(cut, '\n'), *real = strstr(cut, " NodeAddr=");
		assert_true(real && nl && real < nl);
		memmove(real, nl, strlen(nl) + 1);
	}
	t2 = t1;
	write_file(tmp_path("nodes.txt"), t2, strlen(t2));
	snprintf(to, 5100, "|%s|", reason);
	ev = replace_once(events, "|drain test|", to);
	write_file(tmp_path("events.txt"), ev, strlen(ev));
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "ingest", "slurm-nodes", "--cluster", "sn", "--nodes",
				     tmp_path("nodes.txt"), "--events", tmp_path("events.txt"), "--at", "2026-11-22T17:59:00Z",
				     NULL),
			 0);
	if (o.status != 4)
		fail_msg("exit %d: %s", o.status, o.err);
	has(o.err, "scontrol line 1: NodeName: 300 bytes, over the 255-byte bound of node and host names");
	has(o.err, "scontrol line 3: node gpu03: neither State= nor CfgTRES= (a line cut short?)");
	has(o.err, "events line 3: Reason: 5000 bytes, over the 4096-byte bound of states, exit codes, reasons and TRES");
	gl_test_out_fini(&o);
	{
		PGconn *c = PQconnectdb(g_dsn);
		assert_string_equal(gl_test_qstr(c, "SELECT string_agg(DISTINCT node, ',' ORDER BY node) FROM node_state_spans s"
						    " JOIN clusters c USING (cluster_id) WHERE c.name = 'sn'"),
				    "gpu02,gpu04");
		PQfinish(c);
	}
	free(nodes);
	free(events);
	free(name);
	free(reason);
	free(to);
	free(t1);
	free(ev);
	unlink(tmp_path("nodes.txt"));
	unlink(tmp_path("events.txt"));
}

static void test_dcgm_long_hostname(void **state)
{
	struct gl_test_out o;
	char *prom = gl_test_read_file(gl_test_fixture("tests/fixtures/dcgm/handwritten_slurm_hpc_job.prom"), NULL);
	char *host = repeat('h', 300), *to = malloc(400), *text;
	(void)state;
	snprintf(to, 400, "Hostname=\"%s\"", host);
	text = replace_once(prom, "Hostname=\"gpu-node-07\"", to);
	write_file(tmp_path("scrape.prom"), text, strlen(text));
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "ingest", "dcgm", "--cluster", "dc", "--file",
				     tmp_path("scrape.prom"), "--at", "2026-11-22T16:05:00Z", NULL),
			 0);
	if (o.status != 4)
		fail_msg("exit %d: %s", o.status, o.err);
	has(o.err, "scrape.prom:6: label Hostname: 300 bytes, over the 255-byte bound of node and host names");
	gl_test_out_fini(&o);
	/* the node's two GPUs are still seen through their other lines */
	assert_int_equal(q("SELECT count(*) FROM gpus g JOIN clusters c USING (cluster_id) WHERE c.name = 'dc'"), 2);
	assert_int_equal(q("SELECT count(*) FROM nodes WHERE length(name) > 255"), 0);
	free(prom);
	free(host);
	free(to);
	free(text);
	unlink(tmp_path("scrape.prom"));
}

static void test_kube_nodes_long_name_and_model(void **state)
{
	struct gl_test_out o;
	char *doc = gl_test_read_file(gl_test_fixture("tests/fixtures/nodes/kube/t0_2026-11-01T00.json"), NULL);
	char *name = repeat('k', 300), *model = repeat('M', 100), *to = malloc(400), *t1, *t2;
	(void)state;
	snprintf(to, 400, "\"%s\"", name);
	t1 = replace_once(doc, "\"gpu-n1\"", to);
	snprintf(to, 400, "\"%s\"", model);
	t2 = replace_once(t1, "\"Tesla-T4\"", to);
	write_file(tmp_path("knodes.json"), t2, strlen(t2));
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "ingest", "kube-nodes", "--cluster", "kn", "--file",
				     tmp_path("knodes.json"), "--at", "2026-11-01T00:00:00Z", NULL),
			 0);
	if (o.status != 4)
		fail_msg("exit %d: %s", o.status, o.err);
	has(o.err, "items[0].metadata.name: 300 bytes, over the 255-byte bound of node and host names");
	has(o.err, "items[2].metadata.labels.nvidia.com/gpu.product: 100 bytes, over the 63-byte bound of GPU model names");
	gl_test_out_fini(&o);
	assert_true(q("SELECT count(DISTINCT node) FROM node_state_spans s JOIN clusters c USING (cluster_id)"
		      " WHERE c.name = 'kn'") >= 1);
	assert_int_equal(q("SELECT count(*) FROM node_state_spans s JOIN clusters c USING (cluster_id)"
			   " WHERE c.name = 'kn' AND node IN ('gpu-n1', 'gpu-n3')"),
			 0);
	free(doc);
	free(name);
	free(model);
	free(to);
	free(t1);
	free(t2);
	unlink(tmp_path("knodes.json"));
}

static int setup(void **state)
{
	if (gl_test_db_fresh("gl_test_bounds_ingest", g_dsn, sizeof g_dsn) || gl_test_sacct_fields(g_fields, sizeof g_fields))
		return -1;
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kube_30mb_name_and_nul),
		cmocka_unit_test(test_sacct_long_job_name),
		cmocka_unit_test(test_slurm_nodes_long_name_cut_line_long_reason),
		cmocka_unit_test(test_dcgm_long_hostname),
		cmocka_unit_test(test_kube_nodes_long_name_and_model),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
