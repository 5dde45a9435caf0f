/* Config loading: key table, errors with file:line, and the doc/example check. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/config.h"
#include "lib/testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_defaults(void **state)
{
	struct gl_config c;
	struct gl_err e = {0};
	assert_int_equal(gl_config_load(&c, NULL, &e), 0);
	assert_string_equal(c.listen, "127.0.0.1:8080");
	assert_int_equal(c.http_threads, 2);
	assert_string_equal(c.db_dsn, "");
	assert_int_equal(c.n_sacct, 0);
	gl_config_fini(&c);
}

static void test_values(void **state)
{
	static const char y[] = "server:\n  listen: 127.0.0.1:0\n  threads: 4\n"
				"sources:\n  sacct:\n    - cluster: a\n      interval_s: 60\n    - cluster: b\n";
	struct gl_config c;
	struct gl_err e = {0};
	assert_int_equal(gl_config_load_buf(&c, "t.yaml", y, strlen(y), &e), 0);
	assert_string_equal(c.listen, "127.0.0.1:0");
	assert_int_equal(c.http_threads, 4);
	assert_int_equal(c.n_sacct, 2);
	assert_string_equal(c.sacct[0].cluster, "a");
	assert_int_equal(c.sacct[0].interval_s, 60);
	assert_int_equal(c.sacct[1].interval_s, 300); /* default applied per element */
	assert_string_equal(c.sacct[1].command, "sacct");
	gl_config_fini(&c);
}

struct bad_case {
	const char *yaml;
	const char *want; /* substring of the error */
};

static const struct bad_case bad[] = {
	/* capacity_plan: the form of an entry (the database checks the rest) */
	{"capacity_plan:\n  - cluster: c1\n    gpu_model: h100\n    action: add\n    gpus: -64\n    date: \"2027-02-01\"\n",
	 "t.yaml:5: capacity_plan[0].gpus: -64 is out of range [1, 1000000]"},
	{"capacity_plan:\n  - cluster: c1\n    gpu_model: h100\n    action: buy\n    gpus: 64\n    date: \"2027-02-01\"\n",
	 "t.yaml:4: capacity_plan[0].action: 'buy' is not add or retire"},
	{"capacity_plan:\n  - cluster: c1\n    gpu_model: h100\n    action: add\n    gpus: 64\n    date: 2027-02-30\n",
	 "t.yaml:6: capacity_plan[0].date: '2027-02-30' is not a date YYYY-MM-DD"},
	{"capacity_plan:\n  - cluster: c1\n    action: add\n    gpus: 64\n    date: \"2027-02-01\"\n",
	 "t.yaml:2: capacity_plan[0].gpu_model: required key missing"},
	{"procurement:\n  lead_days: -1\n", "t.yaml:2: procurement.lead_days: -1 is out of range [0, 3650]"},
	{"server:\n  listn: x\n", "t.yaml:2: unknown key 'server.listn'"},
	{"server:\n  threads: many\n", "t.yaml:2: server.threads: expected an integer, got 'many'"},
	{"server:\n  threads: 1\n", "t.yaml:2: server.threads: 1 is out of range [2, 256]"},
	{"bogus: 1\n", "t.yaml:1: unknown key 'bogus'"},
	{"sources:\n  sacct:\n    - command: x\n", "t.yaml:3: sources.sacct[0].cluster: required key missing"},
	{"sources:\n  sacct:\n    - cluster: a\n      nope: 1\n", "t.yaml:4: unknown key 'nope'"},
	{"sources:\n  sacct:\n    - cluster: a\n    - cluster: a\n", "'a' is listed twice"},
	{"server: [1, 2\n", "t.yaml:"},
	{"server:\n  listen: a\n  listen: b\n", "t.yaml:3: server.listen: duplicate key (first at line 2)"},
	{"- a\n- b\n", "t.yaml:1: the top level must be a mapping"},
	{"server:\n  listen: [a]\n", "t.yaml:2: server.listen: expected a single value"},
	{"a: &x 1\nb: *x\n", "aliases are not supported"},
	/* scheduled reports: a bad value must not pass and then fail quietly */
	{"reports:\n  dir: /tmp\n  aggregate: bogus\n", "t.yaml:3: reports.aggregate: 'bogus' is not"},
	{"reports:\n  share_idle: nonsense\n", "t.yaml:2: reports.share_idle: 'nonsense' is not"},
	{"reports:\n  formats: csv,docx\n", "t.yaml:2: reports.formats: 'csv,docx' is not"},
	{"reports:\n  formats: csv,,pdf\n", "t.yaml:2: reports.formats:"},
	{"reports:\n  formats:\n", "t.yaml:2: reports.formats:"},
	/* what serve would refuse, check-config refuses too, naming file:line */
	{"server:\n  listen: nonsense\n", "t.yaml:2: server.listen: 'nonsense' is not ADDR:PORT"},
	{"server:\n  listen: \":99999\"\n", "t.yaml:2: server.listen: ':99999' is not ADDR:PORT"},
	{"server:\n  listen: 127.0.0.1:99999\n", "t.yaml:2: server.listen: '127.0.0.1:99999' is not ADDR:PORT"},
	{"server:\n  listen: \":abc\"\n", "t.yaml:2: server.listen: ':abc' is not ADDR:PORT"},
	{"server:\n  listen: 127.0.0.1:abc\n", "t.yaml:2: server.listen: '127.0.0.1:abc' is not ADDR:PORT"},
	{"server:\n  threads: 4\n  listen:\n", "t.yaml:3: server.listen: must not be empty"},
	{"database:\n  embedded_dir:\n", "t.yaml:2: database.embedded_dir: must not be empty"},
	{"rates:\n  - model: a100\n    per_gpu_hour: \"x.5\"\n", "t.yaml:3: rates[0].per_gpu_hour:"},
	{"rates:\n  - model: a100\n    per_gpu_hour: \"1.5\"\n    from: notadate\n",
	 "t.yaml:4: rates[0].from: 'notadate' is not an RFC3339 time or date"},
	{"rates:\n  - model: a100\n    per_gpu_hour: \"1.5\"\n    currency: EUR\n",
	 "t.yaml:4: rates[0].currency: 'EUR' is not the reporting currency 'USD'"},
	{"rates:\n  - model: a100\n    per_gpu_hour: \"1.5\"\n  - model: A100\n    per_gpu_hour: \"2\"\n",
	 "t.yaml:4: rates[1]: model 'A100' overlaps rates[0] in time"},
	{"owners:\n  - match: foo\n    value: x\n    team: t\n",
	 "t.yaml:2: owners[0].match: 'foo' is not account, user"},
	/* workload types: the unknown field named, the bad type, the bad date */
	{"workload_types:\n  - match: partition\n    value: gpu\n    type: batch\n  - match: runkind\n    value: x\n"
	 "    type: training\n",
	 "t.yaml:5: workload_types[1].match: unknown match field 'runkind'"},
	{"workload_types:\n  - match: qos\n    value: x\n    type: unclassified\n",
	 "t.yaml:4: workload_types[0].type: 'unclassified' is reserved"},
	{"workload_types:\n  - match: qos\n    value: x\n    type: Training\n",
	 "t.yaml:4: workload_types[0].type: 'Training': workload types are lower case"},
	{"workload_types:\n  - match: qos\n    value: x\n    type: batch\n    from: 2026-13-01\n",
	 "t.yaml:5: workload_types[0].from: '2026-13-01' is not an RFC3339 time or date"},
	{"workload_types:\n  - match: qos\n    value: x\n", "t.yaml:2: workload_types[0].type"},
	/* runs[]: the grouping rules of /v1/runs */
	{"runs:\n  - by: array\n  - by: job_name\n", "t.yaml:3: runs[1].by: 'job_name' is not array, name_user"},
	{"runs:\n  - by: \"label:\"\n", "t.yaml:2: runs[0].by: 'label:' is not array"},
	{"runs:\n  - cluster: c1\n", "t.yaml:2: runs[0].by: required key missing"},
	{"runs:\n  - by: tag\n    from: 2026-02-01\n    to: 2026-01-01\n", "t.yaml:4: runs[0].to: 'to' is not after 'from'"},
	{"runs:\n  - by: tag\n    from: soon\n", "t.yaml:3: runs[0].from: 'soon' is not an RFC3339 time or date"},
	{"owners:\n  - match: user\n    value: x\n    team: t\n    from: 2026-02-01\n    to: 2026-01-01\n",
	 "t.yaml:6: owners[0].to: 'to' is not after 'from'"},
	/* names of the chargeback/report synthetic rows cannot be owners */
	{"owners:\n  - match: user\n    value: x\n    team: __idle__\n",
	 "t.yaml:4: owners[0].team: '__idle__' is reserved"},
	{"owners:\n  - match: user\n    value: x\n    team: t\n    project: __unallocated__\n",
	 "t.yaml:5: owners[0].project: '__unallocated__' is reserved"},
	{"owners:\n  - match: user\n    value: x\n    team: t\n    cost_center: __idle__\n",
	 "t.yaml:5: owners[0].cost_center: '__idle__' is reserved"},
	{"idle_owners:\n  - cluster: c\n    team: __unallocated__\n", "t.yaml:3: idle_owners[0].team: '__unallocated__' is reserved"},
	{"budgets:\n  - owner: __idle__\n    amount: \"10\"\n", "t.yaml:2: budgets[0].owner: '__idle__' is reserved"},
	{"sources:\n  sacct:\n    - cluster: a\n      delimiter: \"\"\n", "t.yaml:4: sources.sacct[0].delimiter: must not be empty"},
	{"log:\n  level: loud\n", "t.yaml:2: log.level: 'loud' is not debug, info, warn or error"},
	{"reports:\n  schedule: \"25:00\"\n", "t.yaml:2: reports.schedule: '25:00' is not HH:MM"},
	{"budgets:\n  - owner: x\n    amount: lots\n", "t.yaml:3: budgets[0].amount:"},
	{"budgets:\n  - owner: x\n    amount: \"10\"\n    aggregate: cluster\n",
	 "t.yaml:4: budgets[0].aggregate: 'cluster' is not"},
	{"budget_alerts:\n  thresholds: 90,50\n", "t.yaml:2: budget_alerts.thresholds: '90,50' is not"},
	{"currency: usd\n", "t.yaml:1: currency: 'usd' is not an ISO 4217 currency code"},
	{"currency: EURO\n", "t.yaml:1: currency: 'EURO' is not an ISO 4217 currency code"},
	{"budget_alerts:\n  command: notify {owner} {percent}\n",
	 "t.yaml:2: budget_alerts.command: unknown placeholder {percent} (owner, month"},
	{"idle:\n  engine_active_threshold: \"2\"\n", "t.yaml:2: idle.engine_active_threshold: '2' is not a ratio"},
	{"sources:\n  kube:\n    - cluster: k\n", "t.yaml:3: sources.kube[0]: give exactly one of command and file"},
	{"sources:\n  kube:\n    - cluster: k\n      command: kubectl\n      file: /x\n",
	 "t.yaml:3: sources.kube[0]: give exactly one of command and file"},
	{"sources:\n  dcgm:\n    - cluster: d\n", "t.yaml:3: sources.dcgm[0]: give targets or targets_file"},
	/* the scraper allows http and https only: this passed check-config and
	 * then failed every scrape */
	{"sources:\n  dcgm:\n    - cluster: d\n      targets: http://a:9400/metrics, ftp://b/metrics\n",
	 "t.yaml:4: sources.dcgm[0].targets: 'ftp://b/metrics' is not an http:// or https:// URL"},
	{"sources:\n  dcgm:\n    - cluster: d\n      targets: gpu01:9400\n",
	 "sources.dcgm[0].targets: 'gpu01:9400' is not an http:// or https:// URL"},
	/* node=NAME names the node of the URL before it (exporters without a hostname label) */
	{"sources:\n  dcgm:\n    - cluster: d\n      targets: node=gpu01 http://a:9400/metrics\n",
	 "t.yaml:4: sources.dcgm[0].targets: 'node=gpu01': node=NAME must follow a URL, once"},
	{"sources:\n  dcgm:\n    - cluster: d\n      targets: http://a:9400/metrics node=gpu01 node=gpu02\n",
	 "t.yaml:4: sources.dcgm[0].targets: 'node=gpu02': node=NAME must follow a URL, once"},
	{"sources:\n  dcgm:\n    - cluster: d\n      targets: http://a:9400/metrics node=\n",
	 "t.yaml:4: sources.dcgm[0].targets: 'node=': empty node name"},
	{"sources:\n  sacct:\n    - cluster: a\n    - cluster: a\n", "t.yaml:4: sources.sacct[1].cluster: 'a' is listed twice"},
	/* one name, one model: the second alias would be ignored or win at random */
	{"gpu_models:\n  - match: NVIDIA A100-SXM4-80GB\n    model: a100_80g\n"
	 "  - match: nvidia a100-sxm4-80gb\n    model: a100\n",
	 "t.yaml:4: gpu_models[1].match: 'nvidia a100-sxm4-80gb' is already mapped by gpu_models[0]"},
	{"gpu_models:\n  - match: x\n    model: \"\"\n", "t.yaml:3: gpu_models[0].model: must not be empty"},
	{"gpu_models:\n  - model: a100\n", "gpu_models[0].match"},
	/* a source without a cluster name wrote rows under cluster '' */
	{"sources:\n  sacct:\n    - cluster: \"\"\n", "t.yaml:3: sources.sacct[0].cluster: must not be empty"},
	{"sources:\n  kube:\n    - cluster: \"\"\n      file: /x\n", "t.yaml:3: sources.kube[0].cluster: must not be empty"},
	{"sources:\n  dcgm:\n    - cluster: \"\"\n      targets: http://a:9400/metrics\n",
	 "t.yaml:3: sources.dcgm[0].cluster: must not be empty"},
	{"sources:\n  slurm_nodes:\n    - cluster: \"\"\n", "t.yaml:3: sources.slurm_nodes[0].cluster: must not be empty"},
	{"sources:\n  kube_nodes:\n    - cluster: \"\"\n      file: /x\n",
	 "t.yaml:3: sources.kube_nodes[0].cluster: must not be empty"},
	/* sources.nvidia_smi: one input a node; processes only with their jobs */
	{"sources:\n  nvidia_smi:\n    - cluster: c\n      node: n1\n",
	 "t.yaml:3: sources.nvidia_smi[0]: give exactly one of command and file"},
	{"sources:\n  nvidia_smi:\n    - cluster: c\n      node: \"\"\n      file: /x\n",
	 "t.yaml:4: sources.nvidia_smi[0].node: must not be empty"},
	{"sources:\n  nvidia_smi:\n    - cluster: c\n      node: n1\n      file: /x\n      apps_file: /a\n",
	 "t.yaml:3: sources.nvidia_smi[0]: apps_* and pids_* go together (GPU processes and their jobs)"},
	{"sources:\n  nvidia_smi:\n    - cluster: c\n      node: n1\n      file: /x\n      pids_file: /p\n"
	 "      pids_command: scontrol listpids\n      apps_file: /a\n",
	 "t.yaml:3: sources.nvidia_smi[0]: give at most one of pids_command and pids_file"},
	{"sources:\n  nvidia_smi:\n    - cluster: c\n      node: gpu[01-04]\n      file: /spool/gpu.csv\n",
	 "t.yaml:4: sources.nvidia_smi[0].node: 'gpu[01-04]' names 4 nodes: put {node} in command or file"},
	{"sources:\n  nvidia_smi:\n    - cluster: c\n      node: gpu[01-\n      file: /spool/{node}.csv\n",
	 "t.yaml:4: sources.nvidia_smi[0].node: 'gpu[01-' is not a Slurm hostlist"},
	/* two budgets of one owner at one time: both listed, alerts to either */
	{"budgets:\n  - owner: v\n    amount: \"5\"\n  - owner: v\n    amount: \"6\"\n",
	 "t.yaml:4: budgets[1]: owner 'v' (aggregate team) overlaps budgets[0] in time"},
	{"budgets:\n  - owner: v\n    amount: \"5\"\n    to: 2026-12-01\n  - owner: v\n    amount: \"6\"\n    from: 2026-11-01\n",
	 "t.yaml:5: budgets[1]: owner 'v' (aggregate team) overlaps budgets[0] in time"},
	/* a template that hands a placeholder to a shell (issue 24 item 7): a
	 * job named "x; touch f" or "$(touch f)" would run */
	{"hook:\n  policies:\n    - name: p\n      scope:\n        clusters: c\n      rule:\n        kind: fixed\n"
	 "        t1_min: 60\n        t3_min: 120\n      warn_command: /bin/sh -c \"echo idle {job_name} >> /tmp/i\"\n",
	 "t.yaml:10: hook.policies[0].warn_command: runs sh with the placeholder {job_name} inside the script"},
	{"hook:\n  slurm_command: /usr/bin/env bash -lc 'scancel {job_id}'\n",
	 "t.yaml:2: hook.slurm_command: runs bash with the placeholder {job_id}"},
	{"hook:\n  kube_command: ssh ctl kubectl delete pod {pod}\n", "t.yaml:2: hook.kube_command: runs ssh"},
	{"hook:\n  slurm_command: busybox sh -c 'scancel {job_id}'\n", "or set hook.allow_shell: true"},
	{"budget_alerts:\n  command: dash -ec notify-{owner}\n", "t.yaml:2: budget_alerts.command: runs dash"},
	/* allow_shell covers its own section only */
	{"hook:\n  allow_shell: true\n  policies:\n    - name: p\n      scope:\n        clusters: c\n      rule:\n"
	 "        kind: fixed\n        t1_min: 60\n        t3_min: 120\n      warn_command: sh -c 'x {user}'\n",
	 "t.yaml:11: hook.policies[0].warn_command:"},
	{"audit:\n  anchor_file: /tmp/a\n  anchor_command: logger {lin}\n",
	 "t.yaml:3: audit.anchor_command: unknown placeholder {lin}"},
	{"audit:\n  anchor_command: logger {line}\n", "t.yaml:2: audit.anchor_command: needs audit.anchor_file"},
	{"audit:\n  anchor_file: /tmp/a\n  anchor_command: sh -c 'echo {line} | nc host 9'\n",
	 "t.yaml:3: audit.anchor_command: runs sh"},
	/* a budget of 0: pct_used was "" (no percentage of nothing) */
	{"budgets:\n  - owner: v\n    amount: \"0.00\"\n", "t.yaml:3: budgets[0].amount: '0.00' must be more than 0"},
};

/* The same kinds of values, valid, still load (the checks are not too strict). */
static void test_semantic_ok(void **state)
{
	static const char y[] = "server:\n  listen: \"[::1]:0\"\n"
				"database:\n  embedded_dir: var\n"
				"log:\n  level: debug\n"
				"reports:\n  formats: csv,zip\n  aggregate: account\n  share_idle: owner\n  schedule: \"23:59\"\n"
				"rates:\n  - model: a100\n    per_gpu_hour: \"2.5\"\n    to: 2026-01-01\n"
				"  - model: a100\n    per_gpu_hour: \"3\"\n    from: 2026-01-01\n"
				"owners:\n  - match: label:team\n    value: x\n    team: t\n"
				"gpu_models:\n  - match: NVIDIA A100-SXM4-80GB\n    model: a100_80g\n"
				"  - match: NVIDIA A100-SXM4-40GB\n    model: a100\n"
				"budgets:\n  - owner: t\n    amount: \"100.50\"\n"
				/* the same owner in another month, or of another aggregate */
				"  - owner: u\n    amount: \"90\"\n    to: 2026-01-01\n"
				"  - owner: u\n    amount: \"95\"\n    from: 2026-01-01\n"
				"  - owner: t\n    amount: \"80\"\n    aggregate: project\n"
				"budget_alerts:\n  thresholds: 50,100\n"
				/* literal braces (a JSON body) are text, not placeholders */
				"  command: 'notify -d {\"owner\":\"{owner}\",\"pct\":{pct}}'\n"
				"sources:\n  kube:\n    - cluster: k\n      file: /x\n"
				/* placeholders as arguments of their own, or allowed */
				"hook:\n  slurm_command: ssh -o BatchMode=yes ctl scancel 1\n"
				"  kube_command: sh -c 'kubectl delete pod -n \"$1\" \"$2\"' sh {namespace} {pod}\n"
				"  policies:\n    - name: p\n      scope:\n        clusters: c\n      rule:\n"
				"        kind: fixed\n        t1_min: 60\n        t3_min: 120\n"
				"      warn_command: /bin/sh -c \"echo idle {job_name} >> /tmp/i\"\n      allow_shell: true\n"
				"audit:\n  anchor_file: /tmp/a\n  anchor_command: git -C /srv/anchors commit --allow-empty -m {line}\n";
	struct gl_config c;
	struct gl_err e = {0};
	int rc = gl_config_load_buf(&c, "t.yaml", y, strlen(y), &e);
	if (rc)
		fprintf(stderr, "%s\n", e.msg);
	assert_int_equal(rc, 0);
	gl_config_fini(&c);
}

static void test_bad(void **state)
{
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct gl_config c;
		struct gl_err e = {0};
		int rc = gl_config_load_buf(&c, "t.yaml", bad[i].yaml, strlen(bad[i].yaml), &e);
		if (rc == 0 || !strstr(e.msg, bad[i].want)) {
			fprintf(stderr, "case %zu: rc=%d msg='%s' want '%s'\n", i, rc, e.msg, bad[i].want);
			fail();
		}
	}
}

static void test_missing_file(void **state)
{
	struct gl_config c;
	struct gl_err e = {0};
	assert_int_not_equal(gl_config_load(&c, "/nonexistent/gl.yaml", &e), 0);
	assert_non_null(strstr(e.msg, "/nonexistent/gl.yaml: cannot open config"));
}

struct doc_ctx {
	const char *doc, *example;
	int missing;
	char paths[256][128];
	int n;
};

static void check_key(const char *path, const struct gl_config_key *k, void *ud)
{
	struct doc_ctx *d = ud;
	char want[160];
	const char *last = strrchr(path, '.');
	snprintf(want, sizeof want, "| `%s` |", path);
	if (!strstr(d->doc, want)) {
		fprintf(stderr, "docs/config.md lacks a row for %s\n", path);
		d->missing++;
	}
	snprintf(want, sizeof want, "%s:", last ? last + 1 : path);
	if (!strstr(d->example, want)) {
		fprintf(stderr, "gpuledger.example.yaml lacks %s\n", path);
		d->missing++;
	}
	if (d->n < 256)
		snprintf(d->paths[d->n++], sizeof d->paths[0], "%s", path);
}

static void test_doc_and_example_match_table(void **state)
{
	struct doc_ctx d = {0};
	struct gl_config c;
	struct gl_err e = {0};
	char *doc = gl_test_read_file("docs/config.md", NULL), *ex = gl_test_read_file("gpuledger.example.yaml", NULL);
	d.doc = doc;
	d.example = ex;
	gl_config_walk_keys(check_key, &d);
	assert_int_equal(d.missing, 0);
	/* every documented key exists in the table */
	for (const char *p = doc; (p = strstr(p, "\n| `")); p++) {
		char key[128];
		const char *s = p + 4, *q = strchr(s, '`');
		int found = 0;
		assert_non_null(q);
		snprintf(key, sizeof key, "%.*s", (int)(q - s), s);
		for (int i = 0; i < d.n; i++)
			found |= !strcmp(d.paths[i], key);
		if (!found)
			fprintf(stderr, "docs/config.md documents unknown key %s\n", key);
		assert_true(found);
	}
	/* the example is a valid config */
	assert_int_equal(gl_config_load(&c, "gpuledger.example.yaml", &e), 0);
	gl_config_fini(&c);
	free(doc);
	free(ex);
}

/* A rate or budget without its own currency is in the reporting currency,
 * wherever currency: stands in the file: "currency: EUR" with such a rate
 * was refused ("rates[0].currency: 'USD' is not the reporting currency
 * 'EUR'"), the list items having defaulted to USD. */
static void test_currency_inherited(void **state)
{
	static const char *const ys[] = {
		"currency: EUR\nrates:\n  - model: a100\n    per_gpu_hour: \"2.5\"\n"
		"budgets:\n  - owner: t\n    amount: \"100\"\n",
		/* the top-level key after the lists */
		"rates:\n  - model: a100\n    per_gpu_hour: \"2.5\"\n"
		"budgets:\n  - owner: t\n    amount: \"100\"\ncurrency: JPY\n",
	};
	static const char *const want[] = {"EUR", "JPY"};
	static const char other[] = "currency: EUR\nrates:\n  - model: a100\n    per_gpu_hour: \"2.5\"\n    currency: USD\n";
	static const char none[] = "rates:\n  - model: a100\n    per_gpu_hour: \"2.5\"\n";
	struct gl_config c;
	struct gl_err e = {0};
	for (size_t i = 0; i < sizeof ys / sizeof ys[0]; i++) {
		if (gl_config_load_buf(&c, "t.yaml", ys[i], strlen(ys[i]), &e))
			fail_msg("%s", e.msg);
		assert_int_equal(c.n_rates, 1);
		assert_int_equal(c.n_budgets, 1);
		assert_string_equal(c.currency, want[i]);
		assert_string_equal(c.rates[0].currency, want[i]);
		assert_string_equal(c.budgets[0].currency, want[i]);
		gl_config_fini(&c);
	}
	/* a currency of its own is still checked against the reporting one */
	assert_int_not_equal(gl_config_load_buf(&c, "t.yaml", other, strlen(other), &e), 0);
	assert_non_null(strstr(e.msg, "t.yaml:5: rates[0].currency: 'USD' is not the reporting currency 'EUR'"));
	/* no currency anywhere: USD throughout */
	memset(&e, 0, sizeof e);
	assert_int_equal(gl_config_load_buf(&c, "t.yaml", none, strlen(none), &e), 0);
	assert_string_equal(c.rates[0].currency, "USD");
	gl_config_fini(&c);
}

static void test_env_dsn(void **state)
{
	struct gl_config c;
	struct gl_err e = {0};
	static const char y[] = "database:\n  dsn: host=x\n";
	assert_int_equal(gl_config_load_buf(&c, "t.yaml", y, strlen(y), &e), 0);
	unsetenv("GPULEDGER_DSN");
	assert_string_equal(gl_config_external_dsn(&c), "host=x");
	setenv("GPULEDGER_DSN", "host=y", 1);
	assert_string_equal(gl_config_external_dsn(&c), "host=y");
	unsetenv("GPULEDGER_DSN");
	gl_config_fini(&c);
	assert_int_equal(gl_config_load(&c, NULL, &e), 0);
	assert_null(gl_config_external_dsn(&c));
	gl_config_fini(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_bad),
		cmocka_unit_test(test_semantic_ok),
		cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_doc_and_example_match_table),
		cmocka_unit_test(test_env_dsn),
		cmocka_unit_test(test_currency_inherited),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
