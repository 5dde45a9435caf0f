/* Configuration loading (see include/gl/config.h). */
#include "gl/config.h"
#include "gl/hostlist.h"
#include "gl/chargeback.h"
#include "gl/cost.h"
#include "gl/hookpolicy.h"
#include "gl/log.h"
#include "gl/settings.h"
#include "gl/timeutil.h"
#include "gl/tmpl.h"
#include "gl/workload.h"
#include "gl/runs.h"
#include "gl/report.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#define CFG_MAX_BYTES (4u << 20) /* libyaml has no nesting limit: bound the input */
#define CFG_MAX_DEPTH 32

/* ---- a tiny YAML tree that remembers line numbers ---- */
enum ynode_type { Y_SCALAR, Y_MAP, Y_SEQ };
struct ynode {
	enum ynode_type type;
	int line;
	char *scalar;            /* Y_SCALAR */
	int plain_null;          /* unquoted "", "~" or "null" */
	struct ynode **kids;     /* Y_MAP: key,value,key,value...; Y_SEQ: items */
	size_t n, cap;
};

static void ynode_free(struct ynode *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->n; i++)
		ynode_free(n->kids[i]);
	free(n->kids);
	free(n->scalar);
	free(n);
}

static void ynode_push(struct ynode *p, struct ynode *k)
{
	if (p->n == p->cap) {
		p->cap = p->cap ? p->cap * 2 : 8;
		p->kids = gl_xrealloc(p->kids, p->cap * sizeof *p->kids);
	}
	p->kids[p->n++] = k;
}

static int yaml_build(yaml_parser_t *ps, const char *name, struct ynode **root, struct gl_err *err)
{
	struct ynode *stack[CFG_MAX_DEPTH + 1];
	int depth = 0, rc = 0, done = 0;
	yaml_event_t ev;

	*root = NULL;
	while (!done) {
		struct ynode *n = NULL;
		if (!yaml_parser_parse(ps, &ev)) {
			rc = gl_err_set(err, GL_ECONFIG, "%s:%zu: YAML: %s", name,
					ps->problem_mark.line + 1, ps->problem ? ps->problem : "syntax error");
			goto out;
		}
		switch (ev.type) {
		case YAML_STREAM_END_EVENT:
			done = 1;
			break;
		case YAML_ALIAS_EVENT:
			rc = gl_err_set(err, GL_ECONFIG, "%s:%zu: YAML aliases are not supported", name,
					ev.start_mark.line + 1);
			yaml_event_delete(&ev);
			goto out;
		case YAML_SCALAR_EVENT:
			n = gl_xcalloc(1, sizeof *n);
			n->type = Y_SCALAR;
			n->line = (int)ev.start_mark.line + 1;
			n->scalar = gl_xstrndup((const char *)ev.data.scalar.value, ev.data.scalar.length);
			n->plain_null = ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
					(!strcmp(n->scalar, "") || !strcmp(n->scalar, "~") || !strcmp(n->scalar, "null"));
			break;
		case YAML_MAPPING_START_EVENT:
		case YAML_SEQUENCE_START_EVENT:
			n = gl_xcalloc(1, sizeof *n);
			n->type = ev.type == YAML_MAPPING_START_EVENT ? Y_MAP : Y_SEQ;
			n->line = (int)ev.start_mark.line + 1;
			break;
		case YAML_MAPPING_END_EVENT:
		case YAML_SEQUENCE_END_EVENT:
			depth--;
			break;
		default:
			break;
		}
		if (n) {
			if (depth == 0) {
				if (*root) {
					ynode_free(n);
					rc = gl_err_set(err, GL_ECONFIG, "%s:%zu: only one YAML document is allowed",
							name, ev.start_mark.line + 1);
					yaml_event_delete(&ev);
					goto out;
				}
				*root = n;
			} else {
				ynode_push(stack[depth - 1], n);
			}
			if (n->type != Y_SCALAR) {
				if (depth >= CFG_MAX_DEPTH) {
					rc = gl_err_set(err, GL_ECONFIG, "%s:%d: nested too deeply", name, n->line);
					yaml_event_delete(&ev);
					goto out;
				}
				stack[depth++] = n;
			}
		}
		yaml_event_delete(&ev);
	}
out:
	if (rc) {
		ynode_free(*root);
		*root = NULL;
	}
	return rc;
}

/* ---- the key table ---- */
#define OFF(f) offsetof(struct gl_config, f)
#define SOFF(f) offsetof(struct gl_config_sacct_source, f)

static const struct gl_config_key sacct_keys[] = {
	{"cluster", GL_CONFIG_STR, SOFF(cluster), NULL, 1, 0, 0, "cluster name the jobs are booked under", NULL, 0, 0},
	{"command", GL_CONFIG_STR, SOFF(command), "sacct", 0, 0, 0, "sacct binary (path or name on PATH)", NULL, 0, 0},
	{"extra_args", GL_CONFIG_STR, SOFF(extra_args), "", 0, 0, 0, "extra sacct arguments, whitespace-separated (no shell)", NULL, 0, 0},
	{"delimiter", GL_CONFIG_STR, SOFF(delimiter), "|", 0, 0, 0, "field delimiter passed to sacct --delimiter", NULL, 0, 0},
	{"interval_s", GL_CONFIG_INT, SOFF(interval_s), "300", 0, 5, 86400, "seconds between runs", NULL, 0, 0},
	{"overlap_s", GL_CONFIG_INT, SOFF(overlap_s), "3600", 0, 0, 30 * 86400, "re-read this much before the watermark (late updates)", NULL, 0, 0},
	{"chunk_s", GL_CONFIG_INT, SOFF(chunk_s), "86400", 0, 60, 31 * 86400, "sacct -S/-E window per call (sacct refuses very wide ranges)", NULL, 0, 0},
	{"lookback_s", GL_CONFIG_INT, SOFF(lookback_s), "86400", 0, 0, 3650LL * 86400, "first run starts this far back", NULL, 0, 0},
	{"timeout_s", GL_CONFIG_INT, SOFF(timeout_s), "120", 0, 1, 3600, "kill a sacct call that runs longer", NULL, 0, 0},
	{NULL, 0, 0, NULL, 0, 0, 0, NULL, NULL, 0, 0},
};

#define KOFF(f) offsetof(struct gl_config_kube_source, f)
static const struct gl_config_key kube_keys[] = {
	{"cluster", GL_CONFIG_STR, KOFF(cluster), NULL, 1, 0, 0, "cluster name the pods are booked under", NULL, 0, 0},
	{"command", GL_CONFIG_STR, KOFF(command), "", 0, 0, 0, "command printing a PodList (argv split on whitespace, no shell)", NULL, 0, 0},
	{"file", GL_CONFIG_STR, KOFF(file), "", 0, 0, 0, "PodList JSON file refreshed by another process", NULL, 0, 0},
	{"interval_s", GL_CONFIG_INT, KOFF(interval_s), "60", 0, 5, 86400, "seconds between runs", NULL, 0, 0},
	{"timeout_s", GL_CONFIG_INT, KOFF(timeout_s), "60", 0, 1, 3600, "kill the command after this long", NULL, 0, 0},
	{"label_team", GL_CONFIG_STR, KOFF(label_team), "team", 0, 0, 0, "pod label holding the team", NULL, 0, 0},
	{"label_project", GL_CONFIG_STR, KOFF(label_project), "project", 0, 0, 0, "pod label holding the project", NULL, 0, 0},
	{"label_cost_center", GL_CONFIG_STR, KOFF(label_cost_center), "cost-center", 0, 0, 0, "pod label holding the cost centre", NULL, 0, 0},
	{NULL, 0, 0, NULL, 0, 0, 0, NULL, NULL, 0, 0},
};

#define DOFF(f) offsetof(struct gl_config_dcgm_source, f)
static const struct gl_config_key dcgm_keys[] = {
	{"cluster", GL_CONFIG_STR, DOFF(cluster), NULL, 1, 0, 0, "cluster the GPUs belong to", NULL, 0, 0},
	{"targets", GL_CONFIG_STR, DOFF(targets), "", 0, 0, 0,
	 "exporter /metrics URLs, whitespace- or comma-separated, each optionally followed by node=NAME", NULL, 0, 0},
	{"targets_file", GL_CONFIG_STR, DOFF(targets_file), "", 0, 0, 0,
	 "file with one URL (and optionally its node) per line, re-read every run", NULL, 0, 0},
	{"interval_s", GL_CONFIG_INT, DOFF(interval_s), "30", 0, 1, 3600, "scrape interval", NULL, 0, 0},
	{"timeout_s", GL_CONFIG_INT, DOFF(timeout_s), "10", 0, 1, 600, "per-target timeout", NULL, 0, 0},
	{"max_parallel", GL_CONFIG_INT, DOFF(max_parallel), "64", 0, 1, 4096, "concurrent scrapes", NULL, 0, 0},
	{NULL, 0, 0, NULL, 0, 0, 0, NULL, NULL, 0, 0},
};

#define SVOFF(f) offsetof(struct gl_config_serving_source, f)
static const struct gl_config_key serving_keys[] = {
	{"(line)", GL_CONFIG_LINE, SVOFF(line), NULL, 0, 0, 0, NULL, NULL, 0, 0},
	{"endpoint", GL_CONFIG_STR, SVOFF(endpoint), NULL, 1, 0, 0, "name of the inference endpoint (what /v1/inference lists)", NULL, 0, 0},
	{"cluster", GL_CONFIG_STR, SVOFF(cluster), NULL, 1, 0, 0, "cluster its pods or job run in", NULL, 0, 0},
	{"targets", GL_CONFIG_STR, SVOFF(targets), NULL, 1, 0, 0, "the server's /metrics URLs (one per replica), whitespace- or comma-separated", NULL, 0, 0},
	{"model", GL_CONFIG_STR, SVOFF(model), "", 0, 0, 0, "model name for servers that label none (TGI); empty = the scrape's", NULL, 0, 0},
	{"pod", GL_CONFIG_STR, SVOFF(pod), "", 0, 0, 0, "NAMESPACE/NAME of the pod it runs on", NULL, 0, 0},
	{"namespace", GL_CONFIG_STR, SVOFF(namespace_), "", 0, 0, 0, "with selector: namespace of its pods", NULL, 0, 0},
	{"selector", GL_CONFIG_STR, SVOFF(selector), "", 0, 0, 0, "label selector k=v,k2=v2 of its pods (one running pod per target)", NULL, 0, 0},
	{"job", GL_CONFIG_STR, SVOFF(job), "", 0, 0, 0, "Slurm job id it runs in", NULL, 0, 0},
	{"job_name", GL_CONFIG_STR, SVOFF(job_name), "", 0, 0, 0, "Slurm job name it runs in (the running job of that name)", NULL, 0, 0},
	{"interval_s", GL_CONFIG_INT, SVOFF(interval_s), "30", 0, 1, 3600, "scrape interval", NULL, 0, 0},
	{"timeout_s", GL_CONFIG_INT, SVOFF(timeout_s), "10", 0, 1, 600, "per-target timeout", NULL, 0, 0},
	{"max_parallel", GL_CONFIG_INT, SVOFF(max_parallel), "64", 0, 1, 4096, "concurrent scrapes of a round", NULL, 0, 0},
	{NULL, 0, 0, NULL, 0, 0, 0, NULL, NULL, 0, 0},
};

#define SNOFF(f) offsetof(struct gl_config_slurm_nodes_source, f)
static const struct gl_config_key slurm_nodes_keys[] = {
	{"cluster", GL_CONFIG_STR, SNOFF(cluster), NULL, 1, 0, 0, "cluster the nodes belong to", NULL, 0, 0},
	{"scontrol", GL_CONFIG_STR, SNOFF(scontrol), "scontrol", 0, 0, 0, "scontrol binary (path or name on PATH)", NULL, 0, 0},
	{"sacctmgr", GL_CONFIG_STR, SNOFF(sacctmgr), "sacctmgr", 0, 0, 0, "sacctmgr binary for the node event history; empty = none", NULL, 0, 0},
	{"events_lookback_s", GL_CONFIG_INT, SNOFF(events_lookback_s), "86400", 0, 60, 3650LL * 86400, "node events re-read by each run", NULL, 0, 0},
	{"reservations", GL_CONFIG_BOOL, SNOFF(reservations), "true", 0, 0, 0, "also read scontrol show reservation", NULL, 0, 0},
	{"interval_s", GL_CONFIG_INT, SNOFF(interval_s), "300", 0, 5, 86400, "seconds between runs", NULL, 0, 0},
	{"timeout_s", GL_CONFIG_INT, SNOFF(timeout_s), "60", 0, 1, 3600, "kill a command that runs longer", NULL, 0, 0},
	{NULL, 0, 0, NULL, 0, 0, 0, NULL, NULL, 0, 0},
};

#define KNOFF(f) offsetof(struct gl_config_kube_nodes_source, f)
static const struct gl_config_key kube_nodes_keys[] = {
	{"cluster", GL_CONFIG_STR, KNOFF(cluster), NULL, 1, 0, 0, "cluster the nodes belong to", NULL, 0, 0},
	{"command", GL_CONFIG_STR, KNOFF(command), "", 0, 0, 0, "command printing a NodeList (argv split on whitespace, no shell)", NULL, 0, 0},
	{"file", GL_CONFIG_STR, KNOFF(file), "", 0, 0, 0, "NodeList JSON file refreshed by another process", NULL, 0, 0},
	{"interval_s", GL_CONFIG_INT, KNOFF(interval_s), "60", 0, 5, 86400, "seconds between runs", NULL, 0, 0},
	{"timeout_s", GL_CONFIG_INT, KNOFF(timeout_s), "60", 0, 1, 3600, "kill the command after this long", NULL, 0, 0},
	{NULL, 0, 0, NULL, 0, 0, 0, NULL, NULL, 0, 0},
};

#define NSOFF(f) offsetof(struct gl_config_nvsmi_source, f)
static const struct gl_config_key nvidia_smi_keys[] = {
	{"cluster", GL_CONFIG_STR, NSOFF(cluster), NULL, 1, 0, 0, "cluster the node belongs to", NULL, 0, 0},
	{"node", GL_CONFIG_STR, NSOFF(node), NULL, 1, 0, 0, "the node the captures are taken on", NULL, 0, 0},
	{"command", GL_CONFIG_STR, NSOFF(command), "", 0, 0, 0,
	 "command printing nvidia-smi --query-gpu CSV or -q -x XML (argv split on whitespace, no shell)", NULL, 0, 0},
	{"file", GL_CONFIG_STR, NSOFF(file), "", 0, 0, 0, "capture file a node-side cron refreshes", NULL, 0, 0},
	{"fields", GL_CONFIG_STR, NSOFF(fields), "", 0, 0, 0, "the --query-gpu list of a noheader capture", NULL, 0, 0},
	{"apps_command", GL_CONFIG_STR, NSOFF(apps_command), "", 0, 0, 0,
	 "command printing nvidia-smi --query-compute-apps CSV (with pids_*: GPU use per Slurm job)", NULL, 0, 0},
	{"apps_file", GL_CONFIG_STR, NSOFF(apps_file), "", 0, 0, 0, "the same, a file", NULL, 0, 0},
	{"pids_command", GL_CONFIG_STR, NSOFF(pids_command), "", 0, 0, 0,
	 "command printing the node's Slurm processes (scontrol listpids, or /proc/PID/cgroup lines)", NULL, 0, 0},
	{"pids_file", GL_CONFIG_STR, NSOFF(pids_file), "", 0, 0, 0, "the same, a file", NULL, 0, 0},
	{"utc_offset_s", GL_CONFIG_INT, NSOFF(utc_offset_s), "0", 0, -50400, 50400,
	 "the node's local time minus UTC, for captures not taken with TZ=UTC", NULL, 0, 0},
	{"interval_s", GL_CONFIG_INT, NSOFF(interval_s), "30", 0, 1, 3600, "seconds between runs", NULL, 0, 0},
	{"timeout_s", GL_CONFIG_INT, NSOFF(timeout_s), "20", 0, 1, 600, "kill a command that runs longer", NULL, 0, 0},
	{NULL, 0, 0, NULL, 0, 0, 0, NULL, NULL, 0, 0},
};

#define ROFF(f) offsetof(struct gl_config_rate, f)
static const struct gl_config_key rate_keys[] = {
	{"model", GL_CONFIG_STR, ROFF(model), NULL, 1, 0, 0, "GPU model/type as jobs name it, or * for any unpriced model", NULL, 0, 0},
	{"currency", GL_CONFIG_STR, ROFF(currency), "", 0, 0, 0, "ISO 4217 code; empty = the reporting currency", NULL, 0, 0},
	{"per_gpu_hour", GL_CONFIG_STR, ROFF(per_gpu_hour), NULL, 1, 0, 0, "price of one GPU-hour, decimal (at most 6 decimals)", NULL, 0, 0},
	{"from", GL_CONFIG_STR, ROFF(from), "", 0, 0, 0, "effective from (RFC3339 or date); empty = always", NULL, 0, 0},
	{"to", GL_CONFIG_STR, ROFF(to), "", 0, 0, 0, "effective until (exclusive); empty = open", NULL, 0, 0},
	{NULL, 0, 0, NULL, 0, 0, 0, NULL, NULL, 0, 0},
};

#define OWOFF(f) offsetof(struct gl_config_owner, f)
static const struct gl_config_key owner_keys[] = {
	{"cluster", GL_CONFIG_STR, OWOFF(cluster), "", 0, 0, 0, "cluster the rule applies to; empty = any", NULL, 0, 0},
	{"match", GL_CONFIG_STR, OWOFF(match), NULL, 1, 0, 0, "account, user, partition, qos, wckey, namespace or label:<key>", NULL, 0, 0},
	{"value", GL_CONFIG_STR, OWOFF(value), NULL, 1, 0, 0, "value to match exactly, or *", NULL, 0, 0},
	{"team", GL_CONFIG_STR, OWOFF(team), NULL, 1, 0, 0, "owning team", NULL, 0, 0},
	{"project", GL_CONFIG_STR, OWOFF(project), "", 0, 0, 0, "project", NULL, 0, 0},
	{"cost_center", GL_CONFIG_STR, OWOFF(cost_center), "", 0, 0, 0, "cost centre", NULL, 0, 0},
	{"from", GL_CONFIG_STR, OWOFF(from), "", 0, 0, 0, "effective from (the job's start time is what counts)", NULL, 0, 0},
	{"to", GL_CONFIG_STR, OWOFF(to), "", 0, 0, 0, "effective until (exclusive)", NULL, 0, 0},
	{NULL, 0, 0, NULL, 0, 0, 0, NULL, NULL, 0, 0},
};

#define WLOFF(f) offsetof(struct gl_config_workload, f)
static const struct gl_config_key workload_keys[] = {
	{"cluster", GL_CONFIG_STR, WLOFF(cluster), "", 0, 0, 0, "cluster the rule applies to; empty = any", NULL, 0, 0},
	{"match", GL_CONFIG_STR, WLOFF(match), NULL, 1, 0, 0,
	 "account, user, partition, qos, wckey, namespace, label:<key>, endpoint or run_kind", NULL, 0, 0},
	{"value", GL_CONFIG_STR, WLOFF(value), NULL, 1, 0, 0, "value to match exactly, or *", NULL, 0, 0},
	{"type", GL_CONFIG_STR, WLOFF(type), NULL, 1, 0, 0, "workload type (training, inference, interactive, ...)", NULL, 0, 0},
	{"from", GL_CONFIG_STR, WLOFF(from), "", 0, 0, 0, "effective from (the job's start time is what counts)", NULL, 0, 0},
	{"to", GL_CONFIG_STR, WLOFF(to), "", 0, 0, 0, "effective until (exclusive)", NULL, 0, 0},
	{NULL, 0, 0, NULL, 0, 0, 0, NULL, NULL, 0, 0},
};

#define IOOFF(f) offsetof(struct gl_config_idle_owner, f)
static const struct gl_config_key idle_owner_keys[] = {
	{"cluster", GL_CONFIG_STR, IOOFF(cluster), NULL, 1, 0, 0, "cluster of the dedicated hardware", NULL, 0, 0},
	{"partition", GL_CONFIG_STR, IOOFF(partition), "", 0, 0, 0, "partition; empty = the whole cluster", NULL, 0, 0},
	{"team", GL_CONFIG_STR, IOOFF(team), NULL, 1, 0, 0, "team that pays for its idle time under shareIdle=owner", NULL, 0, 0},
	{NULL, 0, 0, NULL, 0, 0, 0, NULL, NULL, 0, 0},
};

#define RUOFF(f) offsetof(struct gl_config_run, f)
static const struct gl_config_key run_keys[] = {
	{"cluster", GL_CONFIG_STR, RUOFF(cluster), "", 0, 0, 0, "cluster the rule applies to; empty = any", NULL, 0, 0},
	{"by", GL_CONFIG_STR, RUOFF(by), NULL, 1, 0, 0, "what groups jobs into a run: " GL_RUNS_BY_NAMES, NULL, 0, 0},
	{"from", GL_CONFIG_STR, RUOFF(from), "", 0, 0, 0, "effective from (the job's submit time is what counts)", NULL, 0, 0},
	{"to", GL_CONFIG_STR, RUOFF(to), "", 0, 0, 0, "effective until (exclusive)", NULL, 0, 0},
	{NULL, 0, 0, NULL, 0, 0, 0, NULL, NULL, 0, 0},
};

#define GMOFF(f) offsetof(struct gl_config_gpu_model, f)
static const struct gl_config_key gpu_model_keys[] = {
	{"match", GL_CONFIG_STR, GMOFF(match), NULL, 1, 0, 0, "a GPU model name as a source writes it (any case)", NULL, 0, 0},
	{"model", GL_CONFIG_STR, GMOFF(model), NULL, 1, 0, 0, "the canonical model it means (as rates and Slurm name it)", NULL, 0, 0},
	{NULL, 0, 0, NULL, 0, 0, 0, NULL, NULL, 0, 0},
};

#define BOFF(f) offsetof(struct gl_config_budget, f)
static const struct gl_config_key budget_keys[] = {
	{"owner", GL_CONFIG_STR, BOFF(owner), NULL, 1, 0, 0, "owner the budget is for (a value of aggregate)", NULL, 0, 0},
	{"aggregate", GL_CONFIG_STR, BOFF(aggregate), "team", 0, 0, 0, "team, project, cost_center, account, user or workload_type", NULL, 0, 0},
	{"amount", GL_CONFIG_STR, BOFF(amount), NULL, 1, 0, 0, "budget per calendar month, decimal", NULL, 0, 0},
	{"currency", GL_CONFIG_STR, BOFF(currency), "", 0, 0, 0, "ISO 4217 code; must equal currency; empty = currency", NULL, 0, 0},
	{"from", GL_CONFIG_STR, BOFF(from), "", 0, 0, 0, "effective from (RFC3339 or date); empty = always", NULL, 0, 0},
	{"to", GL_CONFIG_STR, BOFF(to), "", 0, 0, 0, "effective until (exclusive); empty = open", NULL, 0, 0},
	{NULL, 0, 0, NULL, 0, 0, 0, NULL, NULL, 0, 0},
};

#define HPOFF(f) offsetof(struct gl_hookpolicy_cfg, f)
static const struct gl_config_key hook_policy_keys[] = {
	{"(line)", GL_CONFIG_LINE, HPOFF(line), NULL, 0, 0, 0, NULL, NULL, 0, 0},
	{"name", GL_CONFIG_STR, HPOFF(name), NULL, 1, 0, 0, "policy name (--policy, audit rows, state)", NULL, 0, 0},
	{"scope.clusters", GL_CONFIG_STR, HPOFF(clusters), "", 0, 0, 0, "clusters, comma-separated", NULL, 0, 0},
	{"scope.partitions", GL_CONFIG_STR, HPOFF(partitions), "", 0, 0, 0, "Slurm partitions", NULL, 0, 0},
	{"scope.qos", GL_CONFIG_STR, HPOFF(qos), "", 0, 0, 0, "Slurm QoS", NULL, 0, 0},
	{"scope.accounts", GL_CONFIG_STR, HPOFF(accounts), "", 0, 0, 0, "Slurm accounts", NULL, 0, 0},
	{"scope.namespaces", GL_CONFIG_STR, HPOFF(namespaces), "", 0, 0, 0, "Kubernetes namespaces", NULL, 0, 0},
	{"scope.labels", GL_CONFIG_STR, HPOFF(labels), "", 0, 0, 0, "pod label selector k=v,k2=v2", NULL, 0, 0},
	{"exclude.users", GL_CONFIG_STR, HPOFF(ex_users), "", 0, 0, 0, "users never acted on", NULL, 0, 0},
	{"exclude.accounts", GL_CONFIG_STR, HPOFF(ex_accounts), "", 0, 0, 0, "accounts never acted on", NULL, 0, 0},
	{"exclude.qos", GL_CONFIG_STR, HPOFF(ex_qos), "", 0, 0, 0, "QoS never acted on", NULL, 0, 0},
	{"exclude.partitions", GL_CONFIG_STR, HPOFF(ex_partitions), "", 0, 0, 0, "partitions never acted on", NULL, 0, 0},
	{"exclude.namespaces", GL_CONFIG_STR, HPOFF(ex_namespaces), "", 0, 0, 0, "namespaces never acted on", NULL, 0, 0},
	{"exclude.label", GL_CONFIG_STR, HPOFF(ex_label), "gpuledger.io/keep=true", 0, 0, 0, "pods with this label k=v are spared", NULL, 0, 0},
	{"exclude.allow_list_file", GL_CONFIG_STR, HPOFF(allow_list_file), "", 0, 0, 0, "file of user:, account:, namespace:, job:CLUSTER/ID lines", NULL, 0, 0},
	{"min_age_min", GL_CONFIG_INT, HPOFF(min_age_min), "0", 0, 0, 525600, "jobs younger than this are not considered", NULL, 0, 0},
	{"grace_min", GL_CONFIG_INT, HPOFF(grace_min), "0", 0, 0, 525600, "minutes after start that never count as idle", NULL, 0, 0},
	{"signal.engine_active_threshold", GL_CONFIG_STR, HPOFF(engine_active_threshold), "0.01", 0, 0, 0, "busy when mean engine activity reaches this ratio", NULL, 0, 0},
	{"signal.util_threshold_pct", GL_CONFIG_INT, HPOFF(util_threshold_pct), "0", 0, 0, 100, "without engine activity: busy when GPU_UTIL is above this", NULL, 0, 0},
	{"signal.memory_counts_as_busy", GL_CONFIG_BOOL, HPOFF(memory_counts_as_busy), "false", 0, 0, 0, "framebuffer in use counts as busy", NULL, 0, 0},
	{"signal.fb_used_busy_mib", GL_CONFIG_INT, HPOFF(fb_used_busy_mib), "1024", 0, 0, 1LL << 30, "framebuffer threshold", NULL, 0, 0},
	{"signal.power_busy_watts", GL_CONFIG_INT, HPOFF(power_busy_watts), "0", 0, 0, 100000, "busy when power reaches this; 0 = off", NULL, 0, 0},
	{"rule.kind", GL_CONFIG_STR, HPOFF(rule), NULL, 1, 0, 0, "fixed | sliding | reset", NULL, 0, 0},
	{"rule.t1_min", GL_CONFIG_INT, HPOFF(t1_min), NULL, 1, 1, 525600, "first warning (sliding: idle run that warns)", NULL, 0, 0},
	{"rule.t2_min", GL_CONFIG_INT, HPOFF(t2_min), "0", 0, 0, 525600, "second warning; 0 = none", NULL, 0, 0},
	{"rule.t3_min", GL_CONFIG_INT, HPOFF(t3_min), NULL, 1, 1, 525600, "action (sliding: the window W)", NULL, 0, 0},
	{"rule.gpu_fraction", GL_CONFIG_STR, HPOFF(gpu_fraction), "1", 0, 0, 0, "share of a job's GPUs that must be idle", NULL, 0, 0},
	{"warn_command", GL_CONFIG_STR, HPOFF(warn_command), "", 0, 0, 0, "warning command template", NULL, 0, 0},
	{"slurm_command", GL_CONFIG_STR, HPOFF(slurm_command), "", 0, 0, 0, "action on Slurm jobs; \"\" = hook.slurm_command", NULL, 0, 0},
	{"kube_command", GL_CONFIG_STR, HPOFF(kube_command), "", 0, 0, 0, "action on pods; \"\" = hook.kube_command", NULL, 0, 0},
	{"allow_shell", GL_CONFIG_BOOL, HPOFF(allow_shell), "false", 0, 0, 0,
	 "let this policy's own commands hand placeholders to a shell (sh -c, ssh ...; warned at every start)", NULL, 0, 0},
	{NULL, 0, 0, NULL, 0, 0, 0, NULL, NULL, 0, 0},
};

#define CPOFF(f) offsetof(struct gl_config_capacity_plan, f)
static const struct gl_config_key capacity_plan_keys[] = {
	{"(line)", GL_CONFIG_LINE, CPOFF(line), NULL, 0, 0, 0, NULL, NULL, 0, 0},
	{"cluster", GL_CONFIG_STR, CPOFF(cluster), NULL, 1, 0, 0, "cluster the GPUs are (or will be) in", NULL, 0, 0},
	{"gpu_model", GL_CONFIG_STR, CPOFF(gpu_model), NULL, 1, 0, 0, "GPU model, as inventory, jobs or rates name it", NULL, 0, 0},
	{"action", GL_CONFIG_STR, CPOFF(action), NULL, 1, 0, 0, "add | retire", NULL, 0, 0},
	{"gpus", GL_CONFIG_INT, CPOFF(gpus), NULL, 1, 1, 1000000, "how many GPUs are added or retired", NULL, 0, 0},
	{"date", GL_CONFIG_STR, CPOFF(date), NULL, 1, 0, 0, "YYYY-MM-DD: in service (or gone) from 00:00 UTC that day", NULL, 0, 0},
	{"note", GL_CONFIG_STR, CPOFF(note), "", 0, 0, 0, "free text shown with the plan (a purchase order, a reason)", NULL, 0, 0},
	{NULL, 0, 0, NULL, 0, 0, 0, NULL, NULL, 0, 0},
};

static const struct gl_config_key top_keys[] = {
	{"database.dsn", GL_CONFIG_STR, OFF(db_dsn), "", 0, 0, 0,
	 "libpq connection string of an external PostgreSQL; empty = the embedded cluster (GPULEDGER_DSN overrides)", NULL, 0, 0},
	{"database.migrate_dsn", GL_CONFIG_STR, OFF(db_migrate_dsn), "", 0, 0, 0,
	 "the schema owner's connection string for migrate, with an external database; empty = database.dsn"
	 " (GPULEDGER_MIGRATE_DSN overrides)", NULL, 0, 0},
	{"database.embedded_dir", GL_CONFIG_STR, OFF(db_embedded_dir), "var", 0, 0, 0,
	 "directory of the embedded cluster (pg/ data, run/ socket), relative to the working directory", NULL, 0, 0},
	{"database.pg_bindir", GL_CONFIG_STR, OFF(db_pg_bindir), "/usr/lib/postgresql/15/bin", 0, 0, 0,
	 "where initdb, pg_ctl and postgres live", NULL, 0, 0},
	{"database.read_dsn", GL_CONFIG_STR, OFF(db_read_dsn), "", 0, 0, 0,
	 "libpq connection string for read-only routes (hot standbys: several hosts and "
	 "target_session_attrs=prefer-standby); empty = database.dsn", NULL, 0, 0},
	{"database.max_replica_lag_s", GL_CONFIG_INT, OFF(db_max_replica_lag_s), "30", 0, 0, 86400,
	 "a standby further behind than this (replay lag): the read goes to the primary, as a response header says", NULL,
	 0, 0},
	{"server.instance_name", GL_CONFIG_STR, OFF(instance_name), "", 0, 0, 0,
	 "this instance's name in /metrics, /v1/ingest/runs and the log; empty = host:pid:start", NULL, 0, 0},
	{"server.lease_ttl_s", GL_CONFIG_INT, OFF(lease_ttl_s), "15", 0, 3, 3600,
	 "a job's lease (at most its interval): an instance that dies holding it gives it up after this long", NULL, 0, 0},
	{"server.listen", GL_CONFIG_STR, OFF(listen), "127.0.0.1:8080", 0, 0, 0, "ADDR:PORT to serve on (port 0 = any free port)", NULL, 0, 0},
	{"server.threads", GL_CONFIG_INT, OFF(http_threads), "2", 0, 2, 256,
	 "threads that read and answer connections (/healthz, static files, refusals); they never wait on a query", NULL, 0, 0},
	{"server.workers", GL_CONFIG_INT, OFF(http_workers), "4", 0, 1, 256,
	 "threads that run API requests (the main pool; one database connection each)", NULL, 0, 0},
	{"server.heavy_workers", GL_CONFIG_INT, OFF(http_heavy_workers), "2", 0, 1, 64,
	 "threads that run heavy requests (the heavy pool; one database connection each)", NULL, 0, 0},
	{"server.heavy_queue", GL_CONFIG_INT, OFF(http_heavy_queue), "8", 0, 0, 10000,
	 "heavy requests that may wait for a heavy worker; more get 503 with Retry-After", NULL, 0, 0},
	{"server.heavy_per_token", GL_CONFIG_INT, OFF(http_heavy_per_token), "4", 0, 1, 10000,
	 "heavy requests one token may have running or waiting; more get 429 with Retry-After", NULL, 0, 0},
	{"server.heavy_window_days", GL_CONFIG_INT, OFF(http_heavy_window_days), "31", 0, 1, 3660,
	 "a windowed request over a longer window is heavy", NULL, 0, 0},
	{"server.heavy_steps", GL_CONFIG_INT, OFF(http_heavy_steps), "100", 0, 1, 100000,
	 "a windowed request cut into more steps than this is heavy", NULL, 0, 0},
	{"server.max_answer_lines", GL_CONFIG_INT, OFF(http_max_answer_lines), "250000", 0, 0, 100000000,
	 "most lines (steps x groups) one /v1/chargeback answer may hold (0 = no bound); more get 400 naming step", NULL, 0,
	 0},
	{"server.statement_timeout_s", GL_CONFIG_INT, OFF(http_statement_timeout_s), "60", 0, 1, 86400,
	 "longest a statement of an API request may run (503 naming this key when exceeded)", NULL, 0, 0},
	{"server.connection_timeout_s", GL_CONFIG_INT, OFF(http_conn_timeout_s), "30", 0, 1, 3600, "idle connection timeout", NULL, 0, 0},
	{"server.header_timeout_s", GL_CONFIG_INT, OFF(http_header_timeout_s), "10", 0, 1, 3600,
	 "a request's line and headers must arrive within this long of its first byte (activity does not extend it)", NULL, 0, 0},
	{"server.body_timeout_s", GL_CONFIG_INT, OFF(http_body_timeout_s), "30", 0, 1, 3600,
	 "a request's body must arrive within this long of its headers (activity does not extend it)", NULL, 0, 0},
	{"server.max_connections", GL_CONFIG_INT, OFF(http_max_conns), "512", 0, 16, 100000, "total concurrent connections", NULL, 0, 0},
	{"server.max_connections_per_ip", GL_CONFIG_INT, OFF(http_max_conns_per_ip), "16", 0, 1, 100000,
	 "concurrent connections per client address (IPv6: per /64) once a quarter of max_connections are open", NULL, 0, 0},
	{"server.reserved_connections", GL_CONFIG_INT, OFF(http_reserved_conns), "32", 0, 1, 10000,
	 "the last connections of max_connections, kept for /healthz and /metrics", NULL, 0, 0},
	{"server.max_body_bytes", GL_CONFIG_INT, OFF(http_max_body_bytes), "1048576", 0, 0, 1LL << 30, "request body cap (413 above it)", NULL, 0, 0},
	{"server.web_dir", GL_CONFIG_STR, OFF(web_dir), "web", 0, 0, 0, "static dashboard files served at /", NULL, 0, 0},
	{"server.rate_limit_per_ip", GL_CONFIG_INT, OFF(http_rate_per_ip), "100", 0, 0, 1000000,
	 "requests per second per client address (token bucket; 429 above it); 0 = off", NULL, 0, 0},
	{"server.rate_limit_burst", GL_CONFIG_INT, OFF(http_rate_burst), "200", 0, 1, 1000000,
	 "requests one address may send at once before rate_limit_per_ip applies", NULL, 0, 0},
	{"server.auth_outage_grace_s", GL_CONFIG_INT, OFF(auth_outage_grace_s), "600", 0, 0, 86400,
	 "while the database is unreachable, a token it verified less than this long ago is still accepted; 0 = off",
	 NULL, 0, 0},
	{"log.level", GL_CONFIG_STR, OFF(log_level), "info", 0, 0, 0, "debug | info | warn | error", NULL, 0, 0},
	{"ingest.batch_rows", GL_CONFIG_INT, OFF(ingest_batch_rows), "50000", 0, 1, 10000000, "rows per transaction (batch + watermark commit together)", NULL, 0, 0},
	{"ingest.max_skip_reasons", GL_CONFIG_INT, OFF(ingest_max_skip_reasons), "20", 0, 0, 10000, "skipped-line reasons kept per ingest run", NULL, 0, 0},
	{"ingest.bucket_s", GL_CONFIG_INT, OFF(bucket_s), "300", 0, 60, 3600, "GPU usage rollup bucket", NULL, 0, 0},
	{"idle.engine_active_threshold", GL_CONFIG_STR, OFF(idle_engine_active_threshold), "0.01", 0, 0, 0,
	 "a sample is idle when DCGM_FI_PROF_GR_ENGINE_ACTIVE is below this ratio", NULL, 0, 0},
	{"idle.use_gpu_util_fallback", GL_CONFIG_BOOL, OFF(idle_use_gpu_util_fallback), "true", 0, 0, 0,
	 "without PROF_GR_ENGINE_ACTIVE, idle means DCGM_FI_DEV_GPU_UTIL == 0", NULL, 0, 0},
	{"idle.memory_counts_as_busy", GL_CONFIG_BOOL, OFF(idle_memory_counts_as_busy), "false", 0, 0, 0,
	 "framebuffer use above fb_used_busy_mib makes a sample busy", NULL, 0, 0},
	{"idle.fb_used_busy_mib", GL_CONFIG_INT, OFF(idle_fb_used_busy_mib), "1024", 0, 0, 1LL << 30,
	 "framebuffer threshold for memory_counts_as_busy", NULL, 0, 0},
	{"idle.power_busy_watts", GL_CONFIG_INT, OFF(idle_power_busy_watts), "0", 0, 0, 100000,
	 "power draw above this makes a sample busy (0 = off)", NULL, 0, 0},
	{"idle.held_memory_mib", GL_CONFIG_INT, OFF(idle_held_memory_mib), "1024", 0, 0, 1LL << 30,
	 "idle time with at least this much framebuffer used is allocated-but-idle (memory held, no kernels); 0 = off",
	 NULL, 0, 0},
	{"inventory.absent_grace_s", GL_CONFIG_INT, OFF(inventory_absent_grace_s), "900", 0, 0, 30 * 86400,
	 "a GPU that stops reporting for this long is marked absent; node capacity is firm up to a node's last"
	 " snapshot plus this, unobserved after", NULL, 0, 0},
	{"retention.raw_days", GL_CONFIG_INT, OFF(retention_raw_days), "7", 0, 1, 3650,
	 "reserved: no raw per-sample table is kept (docs/scale.md); rollups are retention.usage_days", NULL, 0, 0},
	{"retention.usage_days", GL_CONFIG_INT, OFF(retention_usage_days), "0", 0, 0, 36500,
	 "day partitions of gpu_usage and gpu_usage_jobs older than this are dropped once rolled up; 0 = kept", NULL, 0, 0},
	{"retention.ingest_runs_days", GL_CONFIG_INT, OFF(retention_ingest_runs_days), "400", 0, 0, 36500,
	 "monthly ingest_runs partitions that ended longer ago than this are dropped; 0 = kept", NULL, 0, 0},
	{"audit.anchor_file", GL_CONFIG_STR, OFF(audit_anchor_file), "", 0, 0, 0,
	 "the daemon appends the audit chain head here every anchor_interval_s; \"\" = off", NULL, 0, 0},
	{"audit.anchor_interval_s", GL_CONFIG_INT, OFF(audit_anchor_interval_s), "3600", 0, 1, 7 * 86400,
	 "seconds between anchors (written even when nothing changed); the daemon checks the chain against the last one as often",
	 NULL, 0, 0},
	{"audit.anchor_command", GL_CONFIG_STR, OFF(audit_anchor_command), "", 0, 0, 0,
	 "command run with each anchor, to publish it off the machine (no shell; {line} {seq} {hash} {at} {file})", NULL, 0, 0},
	{"audit.allow_shell", GL_CONFIG_BOOL, OFF(audit_allow_shell), "false", 0, 0, 0,
	 "let anchor_command hand placeholders to a shell (warned at every start)", NULL, 0, 0},
	{"audit.requests", GL_CONFIG_BOOL, OFF(audit_requests), "true", 0, 0, 0,
	 "one audit row per API request; false only as a benchmarking aid", NULL, 0, 0},
	{"api.max_window_days", GL_CONFIG_INT, OFF(api_max_window_days), "400", 0, 1, 3660,
	 "longest window an API request may ask for (400 above it)", NULL, 0, 0},
	{"currency", GL_CONFIG_STR, OFF(currency), "USD", 0, 0, 0, "reporting currency; every rate must use it", NULL, 0, 0},
	{"reports.dir", GL_CONFIG_STR, OFF(reports_dir), "", 0, 0, 0,
	 "where the daemon writes each month's showback report set; \"\" = no scheduled reports", NULL, 0, 0},
	{"reports.schedule", GL_CONFIG_STR, OFF(reports_schedule), "02:00", 0, 0, 0,
	 "HH:MM UTC on the 1st when the previous month's report set is made", NULL, 0, 0},
	{"reports.aggregate", GL_CONFIG_STR, OFF(reports_aggregate), "team", 0, 0, 0,
	 "owner dimension of scheduled reports", NULL, 0, 0},
	{"reports.formats", GL_CONFIG_STR, OFF(reports_formats), "csv,html,pdf", 0, 0, 0,
	 "formats of scheduled reports (comma list)", NULL, 0, 0},
	{"reports.share_idle", GL_CONFIG_STR, OFF(reports_share_idle), "none", 0, 0, 0,
	 "shareIdle of scheduled reports: " GL_CHARGEBACK_SHARE_NAMES, NULL, 0, 0},
	{"reports.template_dir", GL_CONFIG_STR, OFF(reports_template_dir), "reports", 0, 0, 0,
	 "HTML template, CSS and PDF layout of the reports, read at each rendering (relative to the working directory)",
	 NULL, 0, 0},
	{"reports.thousands_separator", GL_CONFIG_STR, OFF(reports_thousands_separator), ",", 0, 0, 0,
	 "between digit groups in HTML and PDF reports (\"\" for none); the CSV has none", NULL, 0, 0},
	{"reports.decimal_separator", GL_CONFIG_STR, OFF(reports_decimal_separator), ".", 0, 0, 0,
	 "before the fraction in HTML and PDF reports; the CSV keeps \".\"", NULL, 0, 0},
	{"budgets", GL_CONFIG_LIST, OFF(budgets), NULL, 0, 0, 0, "monthly budgets per owner", budget_keys,
	 sizeof(struct gl_config_budget), OFF(n_budgets)},
	{"budget_alerts.thresholds", GL_CONFIG_STR, OFF(budget_thresholds), "50,75,90,100", 0, 0, 0,
	 "percentages of a budget whose crossing alerts, once per month each", NULL, 0, 0},
	{"budget_alerts.command", GL_CONFIG_STR, OFF(budget_alert_command), "", 0, 0, 0,
	 "command run per alert (no shell; {owner} {month} {threshold} {spend} {budget} {currency} {pct})", NULL, 0, 0},
	{"budget_alerts.interval_s", GL_CONFIG_INT, OFF(budget_interval_s), "300", 0, 10, 86400,
	 "seconds between budget checks", NULL, 0, 0},
	{"budget_alerts.allow_shell", GL_CONFIG_BOOL, OFF(budget_allow_shell), "false", 0, 0, 0,
	 "let command hand placeholders to a shell (warned at every start)", NULL, 0, 0},
	{"rates", GL_CONFIG_LIST, OFF(rates), NULL, 0, 0, 0, "effective-dated prices per GPU-hour per GPU model", rate_keys,
	 sizeof(struct gl_config_rate), OFF(n_rates)},
	{"owners", GL_CONFIG_LIST, OFF(owners), NULL, 0, 0, 0, "ownership rules, first match wins", owner_keys,
	 sizeof(struct gl_config_owner), OFF(n_owners)},
	{"idle_owners", GL_CONFIG_LIST, OFF(idle_owners), NULL, 0, 0, 0, "dedicated hardware whose idle time a team pays for",
	 idle_owner_keys, sizeof(struct gl_config_idle_owner), OFF(n_idle_owners)},
	{"workload_types", GL_CONFIG_LIST, OFF(workload_types), NULL, 0, 0, 0, "workload type rules, first match wins",
	 workload_keys, sizeof(struct gl_config_workload), OFF(n_workload_types)},
	{"runs", GL_CONFIG_LIST, OFF(runs), NULL, 0, 0, 0, "how jobs group into training runs, first match wins", run_keys,
	 sizeof(struct gl_config_run), OFF(n_runs)},
	{"gpu_models", GL_CONFIG_LIST, OFF(gpu_models), NULL, 0, 0, 0, "GPU model aliases the canonical rule cannot derive",
	 gpu_model_keys, sizeof(struct gl_config_gpu_model), OFF(n_gpu_models)},
	{"sources.sacct", GL_CONFIG_LIST, OFF(sacct), NULL, 0, 0, 0, "Slurm clusters polled with sacct", sacct_keys,
	 sizeof(struct gl_config_sacct_source), OFF(n_sacct)},
	{"sources.kube", GL_CONFIG_LIST, OFF(kube), NULL, 0, 0, 0, "Kubernetes clusters whose GPU pods are read", kube_keys,
	 sizeof(struct gl_config_kube_source), OFF(n_kube)},
	{"sources.dcgm", GL_CONFIG_LIST, OFF(dcgm), NULL, 0, 0, 0, "dcgm-exporter targets scraped for GPU activity", dcgm_keys,
	 sizeof(struct gl_config_dcgm_source), OFF(n_dcgm)},
	{"sources.slurm_nodes", GL_CONFIG_LIST, OFF(slurm_nodes), NULL, 0, 0, 0, "Slurm node inventory, states and events",
	 slurm_nodes_keys, sizeof(struct gl_config_slurm_nodes_source), OFF(n_slurm_nodes)},
	{"sources.kube_nodes", GL_CONFIG_LIST, OFF(kube_nodes), NULL, 0, 0, 0, "Kubernetes node inventory and states",
	 kube_nodes_keys, sizeof(struct gl_config_kube_nodes_source), OFF(n_kube_nodes)},
	{"sources.serving", GL_CONFIG_LIST, OFF(serving), NULL, 0, 0, 0, "inference endpoints whose /metrics are scraped",
	 serving_keys, sizeof(struct gl_config_serving_source), OFF(n_serving)},
	{"sources.nvidia_smi", GL_CONFIG_LIST, OFF(nvidia_smi), NULL, 0, 0, 0,
	 "nodes read through nvidia-smi (no GPU exporter)", nvidia_smi_keys, sizeof(struct gl_config_nvsmi_source),
	 OFF(n_nvidia_smi)},
	{"hook.act", GL_CONFIG_BOOL, OFF(hook_act), "false", 0, 0, 0, "the idle hook may act (also needs --act)", NULL, 0, 0},
	{"hook.max_actions_per_run", GL_CONFIG_INT, OFF(hook_max_actions_per_run), "10", 0, 0, 100000,
	 "circuit breaker: more candidates than this to act on, and none is acted on", NULL, 0, 0},
	{"hook.max_data_age_s", GL_CONFIG_INT, OFF(hook_max_data_age_s), "900", 0, 0, 86400,
	 "a GPU whose last exporter sample is older is unknown (never acted on)", NULL, 0, 0},
	{"hook.lock_file", GL_CONFIG_STR, OFF(hook_lock_file), "", 0, 0, 0, "flock(2) file besides the database lock", NULL, 0, 0},
	{"hook.command_timeout_s", GL_CONFIG_INT, OFF(hook_command_timeout_s), "30", 0, 1, 3600, "kill a warn/act command after this", NULL, 0, 0},
	{"hook.slurm_command", GL_CONFIG_STR, OFF(hook_slurm_command), "scancel {job_id}", 0, 0, 0, "default action on Slurm jobs", NULL, 0, 0},
	{"hook.kube_command", GL_CONFIG_STR, OFF(hook_kube_command), "kubectl delete pod --namespace {namespace} {pod}", 0, 0, 0,
	 "default action on pods", NULL, 0, 0},
	{"hook.allow_shell", GL_CONFIG_BOOL, OFF(hook_allow_shell), "false", 0, 0, 0,
	 "let hook.slurm_command and hook.kube_command hand placeholders to a shell (warned at every start)", NULL, 0, 0},
	{"hook.policies", GL_CONFIG_LIST, OFF(hook_policies), NULL, 0, 0, 0, "idle-GPU policies", hook_policy_keys,
	 sizeof(struct gl_hookpolicy_cfg), OFF(n_hook_policies)},
	{"capacity_plan", GL_CONFIG_LIST, OFF(capacity_plan), NULL, 0, 0, 0,
	 "planned GPU additions and retirements per cluster and model (the capacity forecast uses them)",
	 capacity_plan_keys, sizeof(struct gl_config_capacity_plan), OFF(n_capacity_plan)},
	{"procurement.lead_days", GL_CONFIG_INT, OFF(procurement_lead_days), "90", 0, 0, 3650,
	 "days from ordering GPUs to having them in service (the purchase recommendation's order-by dates)", NULL, 0, 0},
	{NULL, 0, 0, NULL, 0, 0, 0, NULL, NULL, 0, 0},
};

const struct gl_config_key *gl_config_keys(void)
{
	return top_keys;
}

static void walk(const struct gl_config_key *t, const char *prefix,
		 void (*cb)(const char *, const struct gl_config_key *, void *), void *ud)
{
	char path[256];
	for (; t->name; t++) {
		if (t->type == GL_CONFIG_LINE)
			continue;
		snprintf(path, sizeof path, "%s%s", prefix, t->name);
		cb(path, t, ud);
		if (t->type == GL_CONFIG_LIST) {
			char sub[256];
			snprintf(sub, sizeof sub, "%s[].", path);
			walk(t->sub, sub, cb, ud);
		}
	}
}

void gl_config_walk_keys(void (*cb)(const char *, const struct gl_config_key *, void *), void *ud)
{
	walk(top_keys, "", cb, ud);
}

/* ---- applying the tree to the struct ---- */
static int set_value(void *base, const struct gl_config_key *k, const char *text, const char *name, int line,
		     const char *path, struct gl_err *err)
{
	char *p = (char *)base + k->offset;
	switch (k->type) {
	case GL_CONFIG_STR: {
		char **dst = (char **)p;
		free(*dst);
		*dst = gl_xstrdup(text);
		return 0;
	}
	case GL_CONFIG_INT: {
		char *end;
		long long v;
		errno = 0;
		v = strtoll(text, &end, 10);
		if (errno || end == text || *end != '\0')
			return gl_err_set(err, GL_ECONFIG, "%s:%d: %s: expected an integer, got '%s'", name, line, path, text);
		if (v < k->min || v > k->max)
			return gl_err_set(err, GL_ECONFIG, "%s:%d: %s: %lld is out of range [%lld, %lld]", name, line,
					  path, v, (long long)k->min, (long long)k->max);
		*(int64_t *)p = v;
		return 0;
	}
	case GL_CONFIG_BOOL: {
		int v;
		if (!strcasecmp(text, "true") || !strcasecmp(text, "yes") || !strcmp(text, "1"))
			v = 1;
		else if (!strcasecmp(text, "false") || !strcasecmp(text, "no") || !strcmp(text, "0"))
			v = 0;
		else
			return gl_err_set(err, GL_ECONFIG, "%s:%d: %s: expected true or false, got '%s'", name, line, path, text);
		*(int *)p = v;
		return 0;
	}
	case GL_CONFIG_LIST:
	case GL_CONFIG_LINE:
		break;
	}
	return gl_err_set(err, GL_ECONFIG, "%s:%d: %s: internal: bad key type", name, line, path);
}

static int apply_defaults(void *base, const struct gl_config_key *t, struct gl_err *err)
{
	for (; t->name; t++) {
		if (t->type == GL_CONFIG_LIST || t->type == GL_CONFIG_LINE || !t->def)
			continue;
		int rc = set_value(base, t, t->def, "(defaults)", 0, t->name, err);
		if (rc)
			return rc;
	}
	return 0;
}

/* Where each value came from: the line of every scalar set from the file
 * and of every list element, by full path ("rates[2].from", "rates[2]"),
 * so that the checks made after loading still name file:line. */
struct cfg_lines {
	char (*path)[160];
	int *line;
	size_t n, cap;
};

static void lines_add(struct cfg_lines *l, const char *path, int line)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 64;
		l->path = gl_xrealloc(l->path, l->cap * sizeof *l->path);
		l->line = gl_xrealloc(l->line, l->cap * sizeof *l->line);
	}
	snprintf(l->path[l->n], sizeof l->path[l->n], "%s", path);
	l->line[l->n++] = line;
}

static void lines_fini(struct cfg_lines *l)
{
	free(l->path);
	free(l->line);
}

static int apply_map(void *base, const struct gl_config_key *t, const struct ynode *map, const char *prefix,
		     const char *disp, const char *name, unsigned char *seen, struct cfg_lines *lines,
		     struct gl_err *err);

static int apply_list(void *base, const struct gl_config_key *k, const struct ynode *seq, const char *path,
		      const char *dpath, const char *name, struct cfg_lines *lines, struct gl_err *err)
{
	char **arr = (char **)((char *)base + k->offset);
	size_t *count = (size_t *)((char *)base + k->count_offset);
	size_t nsub = 0;
	int rc = 0;

	if (seq->type != Y_SEQ)
		return gl_err_set(err, GL_ECONFIG, "%s:%d: %s: expected a list", name, seq->line, path);
	unsigned char *seen;

	while (k->sub[nsub].name)
		nsub++;
	*arr = gl_xcalloc(seq->n ? seq->n : 1, k->elem_size);
	*count = seq->n;
	/* a flag per key of the table, however many it has */
	seen = gl_xcalloc(nsub + 1, 1);
	for (size_t i = 0; i < seq->n; i++) {
		void *elem = *arr + i * k->elem_size;
		char ipath[256];
		memset(seen, 0, nsub + 1);
		snprintf(ipath, sizeof ipath, "%s[%zu]", dpath, i);
		lines_add(lines, ipath, seq->kids[i]->line);
		snprintf(ipath, sizeof ipath, "%s[%zu].", dpath, i);
		if ((rc = apply_defaults(elem, k->sub, err)))
			goto out;
		for (size_t j = 0; j < nsub; j++)
			if (k->sub[j].type == GL_CONFIG_LINE)
				*(int *)((char *)elem + k->sub[j].offset) = seq->kids[i]->line;
		if (seq->kids[i]->type != Y_MAP) {
			rc = gl_err_set(err, GL_ECONFIG, "%s:%d: %s[%zu]: expected a mapping", name, seq->kids[i]->line,
					path, i);
			goto out;
		}
		if ((rc = apply_map(elem, k->sub, seq->kids[i], "", ipath, name, seen, lines, err)))
			goto out;
		for (size_t j = 0; j < nsub; j++)
			if (k->sub[j].required && !seen[j]) {
				rc = gl_err_set(err, GL_ECONFIG, "%s:%d: %s%s: required key missing", name,
						seq->kids[i]->line, ipath, k->sub[j].name);
				goto out;
			}
	}
out:
	free(seen);
	return rc;
}

/* Matches dotted table names against nested maps: "database.dsn" is found at
 * database: {dsn: ...}. */
static int apply_map(void *base, const struct gl_config_key *t, const struct ynode *map, const char *prefix,
		     const char *disp, const char *name, unsigned char *seen, struct cfg_lines *lines,
		     struct gl_err *err)
{
	for (size_t i = 0; i + 1 < map->n; i += 2) {
		const struct ynode *key = map->kids[i], *val = map->kids[i + 1];
		char path[256], dpath[256];
		int found = 0, rc;

		if (key->type != Y_SCALAR)
			return gl_err_set(err, GL_ECONFIG, "%s:%d: keys must be plain strings", name, key->line);
		snprintf(path, sizeof path, "%s%s", prefix, key->scalar);
		snprintf(dpath, sizeof dpath, "%s%s", disp, key->scalar);
		/* a duplicate key is almost always a mistake in a config file */
		for (size_t j = 0; j < i; j += 2)
			if (!strcmp(map->kids[j]->scalar, key->scalar))
				return gl_err_set(err, GL_ECONFIG, "%s:%d: %s: duplicate key (first at line %d)", name,
						  key->line, path, map->kids[j]->line);
		for (size_t j = 0; t[j].name; j++) {
			size_t plen = strlen(path);
			if (t[j].type == GL_CONFIG_LINE)
				continue;
			if (!strcmp(t[j].name, path)) {
				found = 1;
				seen[j] = 1;
				if (t[j].type == GL_CONFIG_LIST) {
					if (val->type == Y_SCALAR && val->plain_null)
						break;
					if ((rc = apply_list(base, &t[j], val, path, dpath, name, lines, err)))
						return rc;
				} else {
					if (val->type != Y_SCALAR)
						return gl_err_set(err, GL_ECONFIG, "%s:%d: %s: expected a single value", name,
								  val->line, path);
					if (t[j].required && val->plain_null)
						return gl_err_set(err, GL_ECONFIG, "%s:%d: %s: must not be empty", name,
								  val->line, path);
					if ((rc = set_value(base, &t[j], val->scalar, name, val->line, dpath, err)))
						return rc;
					lines_add(lines, dpath, val->line);
				}
				break;
			}
			if (!strncmp(t[j].name, path, plen) && t[j].name[plen] == '.') {
				found = 2;
			}
		}
		if (found == 2) {
			char sub[256], dsub[256];
			if (val->type == Y_SCALAR && val->plain_null)
				continue;
			if (val->type != Y_MAP)
				return gl_err_set(err, GL_ECONFIG, "%s:%d: %s: expected a mapping", name, val->line, path);
			snprintf(sub, sizeof sub, "%s.", path);
			snprintf(dsub, sizeof dsub, "%s.", dpath);
			if ((rc = apply_map(base, t, val, sub, dsub, name, seen, lines, err)))
				return rc;
		} else if (!found) {
			return gl_err_set(err, GL_ECONFIG, "%s:%d: unknown key '%s'", name, key->line, path);
		}
	}
	return 0;
}

/* Shared with the server, so check-config refuses what serve would. */
int gl_config_parse_listen(const char *s, struct sockaddr_storage *ss, socklen_t *len, struct gl_err *err)
{
	char host[256];
	const char *colon = strrchr(s, ':');
	char *end;
	long port;

	if (!s || !colon || colon == s || (size_t)(colon - s) >= sizeof host)
		return gl_err_set(err, GL_ECONFIG, "server.listen: '%s' is not ADDR:PORT", s ? s : "");
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = '\0';
	port = strtol(colon + 1, &end, 10);
	if (*end || end == colon + 1 || port < 0 || port > 65535)
		return gl_err_set(err, GL_ECONFIG, "server.listen: bad port in '%s'", s);
	memset(ss, 0, sizeof *ss);
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
		host[strlen(host) - 1] = '\0';
		if (inet_pton(AF_INET6, host + 1, &a6->sin6_addr) != 1)
			return gl_err_set(err, GL_ECONFIG, "server.listen: bad IPv6 address in '%s'", s);
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)port);
		*len = sizeof *a6;
	} else {
		struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
		if (!strcmp(host, "localhost"))
			snprintf(host, sizeof host, "127.0.0.1");
		if (inet_pton(AF_INET, host, &a4->sin_addr) != 1)
			return gl_err_set(err, GL_ECONFIG, "server.listen: bad IPv4 address in '%s'", s);
		a4->sin_family = AF_INET;
		a4->sin_port = htons((uint16_t)port);
		*len = sizeof *a4;
	}
	return 0;
}

/* An error about path: "file:line: path: ..." with the line the value (or,
 * for a key left out, its list element) came from; "file: path: ..." for
 * a default. */
static int GL_PRINTF(5, 6) cfg_fail(struct gl_err *err, const char *name, const struct cfg_lines *l, const char *path,
				    const char *fmt, ...)
{
	char p[256], msg[512];
	int line = 0;
	va_list ap;
	snprintf(p, sizeof p, "%s", path);
	for (;;) {
		for (size_t i = l->n; i-- > 0 && !line;)
			if (!strcmp(l->path[i], p))
				line = l->line[i];
		char *dot = strrchr(p, '.');
		if (line || !dot)
			break;
		*dot = '\0';
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (line)
		return gl_err_set(err, GL_ECONFIG, "%s:%d: %s: %s", name, line, path, msg);
	return gl_err_set(err, GL_ECONFIG, "%s: %s: %s", name, path, msg);
}

/* 1 when every comma-separated item of list is one of ok[0..n). */
static int list_within(const char *list, const char *const *ok, size_t n)
{
	const char *p = list;
	if (!*p)
		return 0;
	for (;;) {
		size_t k = strcspn(p, ","), j;
		for (j = 0; j < n; j++)
			if (strlen(ok[j]) == k && !strncmp(p, ok[j], k))
				break;
		if (j == n)
			return 0;
		if (!p[k])
			return 1;
		p += k + 1;
	}
}

/* from/to of a rate, owner rule or budget: "" or an RFC3339 time or date. */
static int check_bound(const char *s, int64_t *out, const char *name, const struct cfg_lines *l, const char *path,
		       struct gl_err *err)
{
	*out = GL_TIME_NONE;
	if (*s && gl_timeutil_parse(s, strlen(s), out))
		return cfg_fail(err, name, l, path, "'%s' is not an RFC3339 time or date", s);
	return 0;
}

/* An owner named like a synthetic row of the chargeback and showback output
 * would be read as that row (a team "__unallocated__" merged into it). */
static int check_owner_name(const char *v, const char *key, const char *name, const struct cfg_lines *l,
			    const char *item, struct gl_err *err)
{
	char p[96];
	if (!gl_chargeback_name_reserved(v))
		return 0;
	snprintf(p, sizeof p, "%s.%s", item, key);
	return cfg_fail(err, name, l, p, "'%s' is reserved for the synthetic rows of chargeback and reports (__idle__, __unallocated__)", v);
}

static int check_span(const char *from, const char *to, int64_t *f, int64_t *t, const char *name,
		      const struct cfg_lines *l, const char *item, struct gl_err *err)
{
	char p[192];
	int rc;
	snprintf(p, sizeof p, "%s.from", item);
	if ((rc = check_bound(from, f, name, l, p, err)))
		return rc;
	snprintf(p, sizeof p, "%s.to", item);
	if ((rc = check_bound(to, t, name, l, p, err)))
		return rc;
	if (*f != GL_TIME_NONE && *t != GL_TIME_NONE && *t <= *f)
		return cfg_fail(err, name, l, p, "'to' is not after 'from'");
	return 0;
}

/* workload_types[]: each error names the rule's key and its file:line. */
static int check_runs(const struct gl_config *cfg, const char *name, const struct cfg_lines *l, struct gl_err *err)
{
	char item[64], p[96];
	int64_t f, t;
	int rc;
	for (size_t i = 0; i < cfg->n_runs; i++) {
		enum gl_runs_by by;
		const char *label;
		snprintf(item, sizeof item, "runs[%zu]", i);
		snprintf(p, sizeof p, "%s.by", item);
		if (gl_runs_by_parse(cfg->runs[i].by, &by, &label))
			return cfg_fail(err, name, l, p, "'%s' is not %s", cfg->runs[i].by, GL_RUNS_BY_NAMES);
		if ((rc = check_span(cfg->runs[i].from, cfg->runs[i].to, &f, &t, name, l, item, err)))
			return rc;
	}
	return 0;
}

static int check_workload_types(const struct gl_config *cfg, const char *name, const struct cfg_lines *l,
				struct gl_err *err)
{
	char item[64], p[96];
	int64_t f, t;
	int rc;
	for (size_t i = 0; i < cfg->n_workload_types; i++) {
		const struct gl_config_workload *w = &cfg->workload_types[i];
		struct gl_err e = {0};
		snprintf(item, sizeof item, "workload_types[%zu]", i);
		snprintf(p, sizeof p, "%s.match", item);
		if (!gl_workload_match_valid(w->match))
			return cfg_fail(err, name, l, p,
					"unknown match field '%s' (account, user, partition, qos, wckey, namespace, label:<key>,"
					" endpoint or run_kind)",
					w->match);
		snprintf(p, sizeof p, "%s.type", item);
		if (gl_workload_name_check(w->type, &e))
			return cfg_fail(err, name, l, p, "%s", e.msg);
		if ((rc = check_span(w->from, w->to, &f, &t, name, l, item, err)))
			return rc;
	}
	return 0;
}

/* A source's cluster names every row it writes: "" made a cluster with no
 * name in chargeback, the inventory and /metrics. */
static int check_cluster(const char *cluster, const char *kind, size_t i, const char *name, const struct cfg_lines *l,
			 struct gl_err *err)
{
	char p[96];
	if (cluster && *cluster)
		return 0;
	snprintf(p, sizeof p, "sources.%s[%zu].cluster", kind, i);
	return cfg_fail(err, name, l, p, "must not be empty");
}

/* The scrapers speak http and https only: another scheme (or a bare
 * host) would pass check-config and fail every scrape. */
static int check_urls(const char *targets, const char *name, const struct cfg_lines *l, const char *item,
		      struct gl_err *err)
{
	for (const char *u = targets; *u;) {
		size_t n = strcspn(u += strspn(u, " \t\r\n,"), " \t\r\n,");
		if (n && strncasecmp(u, "http://", 7) && strncasecmp(u, "https://", 8))
			return cfg_fail(err, name, l, item, "'%.*s' is not an http:// or https:// URL", n > 200 ? 200 : (int)n,
					u);
		u += n;
	}
	return 0;
}

/* sources.serving[]: targets, and at most one way of saying where the
 * endpoint runs, each well formed. */
static int check_serving(const struct gl_config *cfg, const char *name, const struct cfg_lines *l, struct gl_err *err)
{
	char item[96];
	int rc;
	for (size_t i = 0; i < cfg->n_serving; i++) {
		const struct gl_config_serving_source *v = &cfg->serving[i];
		const char *slash = strchr(v->pod, '/');
		int ways = (v->pod[0] != 0) + (v->selector[0] != 0) + (v->job[0] != 0) + (v->job_name[0] != 0);
		if ((rc = check_cluster(v->cluster, "serving", i, name, l, err)))
			return rc;
		snprintf(item, sizeof item, "sources.serving[%zu].endpoint", i);
		if (!v->endpoint[0])
			return cfg_fail(err, name, l, item, "must not be empty");
		snprintf(item, sizeof item, "sources.serving[%zu].targets", i);
		if (!v->targets[v->targets ? strspn(v->targets, " \t\r\n,") : 0])
			return cfg_fail(err, name, l, item, "must name at least one URL");
		if ((rc = check_urls(v->targets, name, l, item, err)))
			return rc;
		snprintf(item, sizeof item, "sources.serving[%zu]", i);
		if (ways > 1)
			return cfg_fail(err, name, l, item, "give at most one of pod, selector, job and job_name");
		snprintf(item, sizeof item, "sources.serving[%zu].pod", i);
		if (v->pod[0] && (!slash || slash == v->pod || !slash[1] || strchr(slash + 1, '/')))
			return cfg_fail(err, name, l, item, "'%s' is not NAMESPACE/NAME", v->pod);
		snprintf(item, sizeof item, "sources.serving[%zu].%s", i, v->selector[0] ? "namespace" : "selector");
		if ((v->selector[0] != 0) != (v->namespace_[0] != 0))
			return cfg_fail(err, name, l, item, "namespace and selector go together");
		snprintf(item, sizeof item, "sources.serving[%zu].selector", i);
		for (const char *p = v->selector; *p;) {
			size_t n = strcspn(p, ","), e = strcspn(p, "=");
			if (e == 0 || e >= n)
				return cfg_fail(err, name, l, item, "'%s' is not k=v,k2=v2", v->selector);
			p += n + (p[n] == ',');
		}
	}
	return 0;
}

/* A price or budget: item.<key> parses as money and item.currency is the
 * reporting currency. */
static int check_money(const char *amount, const char *key, const char *currency, const struct gl_config *cfg,
		       const char *name, const struct cfg_lines *l, const char *item, struct gl_err *err)
{
	char p[192];
	int64_t v;
	struct gl_err e = {0};
	snprintf(p, sizeof p, "%s.%s", item, key);
	if (gl_cost_parse(amount, &v, &e))
		return cfg_fail(err, name, l, p, "%s", e.msg);
	snprintf(p, sizeof p, "%s.currency", item);
	if (strcmp(currency, cfg->currency) != 0)
		return cfg_fail(err, name, l, p, "'%s' is not the reporting currency '%s'", currency, cfg->currency);
	return 0;
}

const char *const gl_config_anchor_placeholders[] = {"line", "seq", "hash", "at", "file", NULL};

/* ---- command templates that would hand a placeholder to a shell ---- */

struct shell_tmpl {
	char path[96];      /* "hook.policies[2].warn_command" */
	const char *text;
	int allow;          /* the allow_shell that covers it */
	char allow_key[96];
	int blank_split;    /* budget_alerts.command: split on blanks, quotes are text */
};

/* Every command template that takes placeholders; *n of them (free()). A
 * policy's inherited command is hook.slurm_command's (checked once, there). */
static struct shell_tmpl *shell_templates(const struct gl_config *cfg, size_t *n)
{
	struct shell_tmpl *t = gl_xcalloc(4 + 3 * cfg->n_hook_policies, sizeof *t);
	size_t k = 0;
#define ADD(txt, al, blank, ...)                                                                \
	do {                                                                                   \
		snprintf(t[k].path, sizeof t[k].path, __VA_ARGS__);                            \
		t[k].text = (txt);                                                             \
		t[k].allow = (al);                                                             \
		t[k].blank_split = (blank);                                                    \
		k++;                                                                           \
	} while (0)
	ADD(cfg->hook_slurm_command, cfg->hook_allow_shell, 0, "hook.slurm_command");
	ADD(cfg->hook_kube_command, cfg->hook_allow_shell, 0, "hook.kube_command");
	for (size_t i = 0; i < k; i++)
		snprintf(t[i].allow_key, sizeof t[i].allow_key, "hook.allow_shell");
	ADD(cfg->budget_alert_command, cfg->budget_allow_shell, 1, "budget_alerts.command");
	snprintf(t[k - 1].allow_key, sizeof t[k - 1].allow_key, "budget_alerts.allow_shell");
	ADD(cfg->audit_anchor_command, cfg->audit_allow_shell, 0, "audit.anchor_command");
	snprintf(t[k - 1].allow_key, sizeof t[k - 1].allow_key, "audit.allow_shell");
	for (size_t i = 0; i < cfg->n_hook_policies; i++) {
		const struct gl_hookpolicy_cfg *p = &cfg->hook_policies[i];
		const char *own[] = {p->warn_command, p->slurm_command, p->kube_command};
		const char *key[] = {"warn_command", "slurm_command", "kube_command"};
		for (size_t j = 0; j < 3; j++) {
			ADD(own[j], p->allow_shell, 0, "hook.policies[%zu].%s", i, key[j]);
			snprintf(t[k - 1].allow_key, sizeof t[k - 1].allow_key, "hook.policies[%zu].allow_shell", i);
		}
	}
#undef ADD
	*n = k;
	return t;
}

/* 1 with why when t hands a placeholder to a shell; 0 when not, or when it
 * cannot be split (an open quote is reported where it is compiled). */
static int shell_tmpl_refused(const struct shell_tmpl *t, char *why, size_t nwhy)
{
	char **w = NULL;
	size_t n = 0;
	int found = 0;
	struct gl_err e = {0};
	if (!t->text || !*t->text)
		return 0;
	if (t->blank_split) {
		char *copy = gl_xstrdup(t->text), *save = NULL;
		w = gl_xcalloc(strlen(t->text) / 2 + 2, sizeof *w);
		for (char *tok = strtok_r(copy, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save))
			w[n++] = gl_xstrdup(tok);
		free(copy);
	} else if (gl_tmpl_split(t->text, &w, &n, &e)) {
		return 0;
	}
	found = gl_tmpl_shell_check((const char *const *)w, n, why, nwhy) != 0;
	gl_tmpl_words_free(w);
	return found;
}

/* A template that would run a placeholder's value (a job named
 * "x; touch f", "$(...)") as shell code is refused, naming file:line and
 * the safe way, unless its allow_shell says otherwise. */
static int check_shell_templates(const struct gl_config *cfg, const char *name, const struct cfg_lines *l,
				 struct gl_err *err)
{
	size_t n;
	struct shell_tmpl *t = shell_templates(cfg, &n);
	char why[256];
	int rc = 0;
	for (size_t i = 0; i < n && !rc; i++)
		if (!t[i].allow && shell_tmpl_refused(&t[i], why, sizeof why))
			rc = cfg_fail(err, name, l, t[i].path,
				      "%s: a value there (a job named 'x; touch f' or '$(...)') would run as shell code;"
				      " pass placeholders as arguments of their own to a script (/usr/local/bin/notify"
				      " {job_name}, or sh -c '... \"$1\"' sh {job_name}), or set %s: true to accept the risk",
				      why, t[i].allow_key);
	free(t);
	return rc;
}

void gl_config_warn_shell(const struct gl_config *cfg)
{
	size_t n;
	struct shell_tmpl *t = shell_templates(cfg, &n);
	char why[256];
	for (size_t i = 0; i < n; i++)
		if (t[i].allow && shell_tmpl_refused(&t[i], why, sizeof why))
			gl_log(GL_LOG_WARN,
			       "%s: %s %s: a value there (a job name, a user) can run shell code; allowed by %s: true",
			       cfg->path, t[i].path, why, t[i].allow_key);
	free(t);
}

/* Everything but the scheduled reports' fields (check_semantics). */
static int count_host(const char *host, void *ud)
{
	(void)host;
	++*(size_t *)ud;
	return 0;
}

/* sources.nvidia_smi[].node is a Slurm hostlist; several nodes need their
 * name in the command or file, or every node would read the same capture. */
static int check_nvsmi_nodes(const struct gl_config_nvsmi_source *ns, const char *item, const char *name,
			     const struct cfg_lines *l, struct gl_err *err)
{
	struct gl_err e = {0};
	size_t hosts = 0;
	char p[128], why[300];
	snprintf(p, sizeof p, "%s.node", item);
	if (gl_hostlist_expand(ns->node, strlen(ns->node), count_host, &hosts, &e)) {
		snprintf(why, sizeof why, "'%s' is not a Slurm hostlist: %s", ns->node, e.msg);
		return cfg_fail(err, name, l, p, "%s", why);
	}
	if (hosts > 1 && !strstr(ns->command, "{node}") && !strstr(ns->file, "{node}")) {
		snprintf(why, sizeof why, "'%s' names %zu nodes: put {node} in command or file", ns->node, hosts);
		return cfg_fail(err, name, l, p, "%s", why);
	}
	return 0;
}

/* The scalar settings: non-empty strings, server limits, listen, currency,
 * log level, report schedule, idle threshold, budget alerts, audit anchor,
 * shell templates. */
static int check_settings(const struct gl_config *cfg, const char *name, const struct cfg_lines *l, struct gl_err *err)
{
	/* strings that must not be empty: "listen:" with no value would
	 * otherwise become "", and embedded_dir "" the current directory */
	static const struct {
		const char *path;
		size_t off;
	} nonempty[] = {
		{"server.listen", offsetof(struct gl_config, listen)},
		{"database.embedded_dir", offsetof(struct gl_config, db_embedded_dir)},
		{"database.pg_bindir", offsetof(struct gl_config, db_pg_bindir)},
		{"log.level", offsetof(struct gl_config, log_level)},
		{"reports.schedule", offsetof(struct gl_config, reports_schedule)},
		{"currency", offsetof(struct gl_config, currency)},
		{"idle.engine_active_threshold", offsetof(struct gl_config, idle_engine_active_threshold)},
	};
	struct gl_err e = {0};
	struct sockaddr_storage ss;
	socklen_t sl;
	enum gl_log_level lvl;
	int64_t at;
	int rc;

	for (size_t i = 0; i < GL_ARRAY_LEN(nonempty); i++) {
		const char *v = *(char *const *)((const char *)cfg + nonempty[i].off);
		if (!v || !*v)
			return cfg_fail(err, name, l, nonempty[i].path, "must not be empty");
	}
	if (cfg->http_reserved_conns > cfg->http_max_conns / 2)
		return cfg_fail(err, name, l, "server.reserved_connections", "%lld is more than half of server.max_connections (%lld)",
				(long long)cfg->http_reserved_conns, (long long)cfg->http_max_conns);
	if (gl_config_parse_listen(cfg->listen, &ss, &sl, &e))
		return cfg_fail(err, name, l, "server.listen", "'%s' is not ADDR:PORT (an IPv4 address, [IPv6] or localhost, and a port 0..65535)",
				cfg->listen);
	if (gl_cost_minor(cfg->currency) < 0)
		return cfg_fail(err, name, l, "currency", "'%s' is not an ISO 4217 currency code (USD, EUR, JPY, ...)",
				cfg->currency);
	if (gl_log_parse_level(cfg->log_level, &lvl))
		return cfg_fail(err, name, l, "log.level", "'%s' is not debug, info, warn or error", cfg->log_level);
	if (gl_settings_schedule_parse(cfg->reports_schedule, &at, &e))
		return cfg_fail(err, name, l, "reports.schedule", "'%s' is not HH:MM", cfg->reports_schedule);
	{
		char *end;
		double th = strtod(cfg->idle_engine_active_threshold, &end);
		if (*end || end == cfg->idle_engine_active_threshold || th < 0 || th > 1)
			return cfg_fail(err, name, l, "idle.engine_active_threshold", "'%s' is not a ratio in [0, 1]",
					cfg->idle_engine_active_threshold);
	}
	{
		int th[GL_SETTINGS_MAX_THRESHOLDS];
		size_t nt;
		if (gl_settings_thresholds_parse(cfg->budget_thresholds, th, GL_SETTINGS_MAX_THRESHOLDS, &nt, &e))
			return cfg_fail(err, name, l, "budget_alerts.thresholds", "'%s' is not an ascending comma list of 1..1000 (at most %d)",
					cfg->budget_thresholds, GL_SETTINGS_MAX_THRESHOLDS);
	}
	{
		/* a misspelt {placeholder} would reach the command literally */
		char bad[64];
		if (gl_settings_alert_command_check(cfg->budget_alert_command, bad, sizeof bad))
			return cfg_fail(err, name, l, "budget_alerts.command",
					"unknown placeholder %s (owner, month, threshold, spend, budget, currency, pct)", bad);
	}
	{
		char bad[64];
		if (gl_tmpl_check(cfg->audit_anchor_command, gl_config_anchor_placeholders, bad, sizeof bad))
			return cfg_fail(err, name, l, "audit.anchor_command", "unknown placeholder %s (line, seq, hash, at, file)",
					bad);
		if (*cfg->audit_anchor_command && !*cfg->audit_anchor_file)
			return cfg_fail(err, name, l, "audit.anchor_command",
					"needs audit.anchor_file (the anchors it publishes are written there)");
	}
	if ((rc = check_shell_templates(cfg, name, l, err)))
		return rc;
	return 0;
}

/* sources.*[]: clusters, commands or files, nvidia-smi pairs. */
static int check_sources(const struct gl_config *cfg, const char *name, const struct cfg_lines *l, struct gl_err *err)
{
	char item[160], p[192];
	int rc;

	for (size_t i = 0; i < cfg->n_sacct; i++)
		if ((rc = check_cluster(cfg->sacct[i].cluster, "sacct", i, name, l, err)))
			return rc;
	for (size_t i = 0; i < cfg->n_kube; i++)
		if ((rc = check_cluster(cfg->kube[i].cluster, "kube", i, name, l, err)))
			return rc;
	for (size_t i = 0; i < cfg->n_dcgm; i++)
		if ((rc = check_cluster(cfg->dcgm[i].cluster, "dcgm", i, name, l, err)))
			return rc;
	for (size_t i = 0; i < cfg->n_slurm_nodes; i++)
		if ((rc = check_cluster(cfg->slurm_nodes[i].cluster, "slurm_nodes", i, name, l, err)))
			return rc;
	for (size_t i = 0; i < cfg->n_kube_nodes; i++)
		if ((rc = check_cluster(cfg->kube_nodes[i].cluster, "kube_nodes", i, name, l, err)))
			return rc;
	for (size_t i = 0; i < cfg->n_sacct; i++) {
		const struct gl_config_sacct_source *sc = &cfg->sacct[i];
		snprintf(item, sizeof item, "sources.sacct[%zu]", i);
		snprintf(p, sizeof p, "%s.command", item);
		if (!*sc->command)
			return cfg_fail(err, name, l, p, "must not be empty");
		snprintf(p, sizeof p, "%s.delimiter", item);
		if (!*sc->delimiter)
			return cfg_fail(err, name, l, p, "must not be empty");
		snprintf(p, sizeof p, "%s.cluster", item);
		for (size_t j = 0; j < i; j++)
			if (!strcmp(sc->cluster, cfg->sacct[j].cluster))
				return cfg_fail(err, name, l, p, "'%s' is listed twice", sc->cluster);
	}
	for (size_t i = 0; i < cfg->n_kube; i++) {
		snprintf(item, sizeof item, "sources.kube[%zu]", i);
		if ((cfg->kube[i].command[0] != '\0') == (cfg->kube[i].file[0] != '\0'))
			return cfg_fail(err, name, l, item, "give exactly one of command and file");
	}
	for (size_t i = 0; i < cfg->n_kube_nodes; i++) {
		snprintf(item, sizeof item, "sources.kube_nodes[%zu]", i);
		if ((cfg->kube_nodes[i].command[0] != '\0') == (cfg->kube_nodes[i].file[0] != '\0'))
			return cfg_fail(err, name, l, item, "give exactly one of command and file");
	}
	for (size_t i = 0; i < cfg->n_nvidia_smi; i++) {
		const struct gl_config_nvsmi_source *ns = &cfg->nvidia_smi[i];
		snprintf(item, sizeof item, "sources.nvidia_smi[%zu]", i);
		if ((rc = check_cluster(ns->cluster, "nvidia_smi", i, name, l, err)))
			return rc;
		if (!*ns->node) {
			snprintf(p, sizeof p, "%s.node", item);
			return cfg_fail(err, name, l, p, "must not be empty");
		}
		if ((rc = check_nvsmi_nodes(ns, item, name, l, err)))
			return rc;
		if ((ns->command[0] != '\0') == (ns->file[0] != '\0'))
			return cfg_fail(err, name, l, item, "give exactly one of command and file");
		if (ns->apps_command[0] && ns->apps_file[0])
			return cfg_fail(err, name, l, item, "give at most one of apps_command and apps_file");
		if (ns->pids_command[0] && ns->pids_file[0])
			return cfg_fail(err, name, l, item, "give at most one of pids_command and pids_file");
		/* processes without their jobs (or jobs without processes) attribute nothing */
		if (!(ns->apps_command[0] || ns->apps_file[0]) != !(ns->pids_command[0] || ns->pids_file[0]))
			return cfg_fail(err, name, l, item, "apps_* and pids_* go together (GPU processes and their jobs)");
	}
	return 0;
}

/* sources.dcgm[]: targets (or a targets file), http(s) URLs, node=NAME after one. */
static int check_dcgm_targets(const struct gl_config *cfg, const char *name, const struct cfg_lines *l, struct gl_err *err)
{
	char item[160];

	for (size_t i = 0; i < cfg->n_dcgm; i++) {
		int url_before = 0;
		snprintf(item, sizeof item, "sources.dcgm[%zu]", i);
		if (!cfg->dcgm[i].targets[0] && !cfg->dcgm[i].targets_file[0])
			return cfg_fail(err, name, l, item, "give targets or targets_file");
		/* the scraper speaks http and https only: another scheme (or a
		 * bare host) passed check-config and failed every scrape; a
		 * node=NAME names the node of the URL before it */
		snprintf(item, sizeof item, "sources.dcgm[%zu].targets", i);
		for (const char *u = cfg->dcgm[i].targets; *u;) {
			size_t n = strcspn(u += strspn(u, " \t\r\n,"), " \t\r\n,");
			if (n >= 5 && !strncmp(u, "node=", 5)) {
				if (!url_before || n == 5)
					return cfg_fail(err, name, l, item, "'%.*s': %s", n > 200 ? 200 : (int)n, u,
							n == 5 ? "empty node name" : "node=NAME must follow a URL, once");
				url_before = 0;
			} else if (n && strncasecmp(u, "http://", 7) && strncasecmp(u, "https://", 8)) {
				return cfg_fail(err, name, l, item, "'%.*s' is not an http:// or https:// URL",
						n > 200 ? 200 : (int)n, u);
			} else if (n) {
				url_before = 1;
			}
			u += n;
		}
	}
	return 0;
}

/* gpu_models[] aliases and rates[], as gl_costing_load checks them before a load. */
static int check_rates(const struct gl_config *cfg, const char *name, const struct cfg_lines *l, struct gl_err *err)
{
	int64_t f, t;
	char item[160];
	int rc;

	/* GPU model aliases: one name means one model (sql/024) */
	for (size_t i = 0; i < cfg->n_gpu_models; i++) {
		const struct gl_config_gpu_model *g = &cfg->gpu_models[i];
		snprintf(item, sizeof item, "gpu_models[%zu].%s", i, *g->match ? "model" : "match");
		if (!*g->match || !*g->model)
			return cfg_fail(err, name, l, item, "must not be empty");
		for (size_t j = 0; j < i; j++)
			if (!strcasecmp(cfg->gpu_models[j].match, g->match)) {
				snprintf(item, sizeof item, "gpu_models[%zu].match", i);
				return cfg_fail(err, name, l, item, "'%s' is already mapped by gpu_models[%zu]", g->match,
						j);
			}
	}
	/* the cost model, as gl_costing_load checks it before a load */
	for (size_t i = 0; i < cfg->n_rates; i++) {
		const struct gl_config_rate *rt = &cfg->rates[i];
		snprintf(item, sizeof item, "rates[%zu]", i);
		if ((rc = check_money(rt->per_gpu_hour, "per_gpu_hour", rt->currency, cfg, name, l, item, err)) ||
		    (rc = check_span(rt->from, rt->to, &f, &t, name, l, item, err)))
			return rc;
		for (size_t j = 0; j < i; j++) {
			/* two prices for one model at one time would make cost ambiguous */
			const struct gl_config_rate *o = &cfg->rates[j];
			int64_t of = GL_TIME_NONE, ot = GL_TIME_NONE;
			if (strcasecmp(o->model, rt->model) != 0)
				continue;
			if ((*o->from && gl_timeutil_parse(o->from, strlen(o->from), &of)) ||
			    (*o->to && gl_timeutil_parse(o->to, strlen(o->to), &ot)))
				continue; /* reported for rates[j] already */
			if ((t == GL_TIME_NONE || of == GL_TIME_NONE || of < t) &&
			    (ot == GL_TIME_NONE || f == GL_TIME_NONE || f < ot))
				return cfg_fail(err, name, l, item, "model '%s' overlaps rates[%zu] in time", rt->model, j);
		}
	}
	return 0;
}

/* owners[] and idle_owners[]. */
static int check_owners(const struct gl_config *cfg, const char *name, const struct cfg_lines *l, struct gl_err *err)
{
	int64_t f, t;
	char item[160], p[192];
	int rc;

	for (size_t i = 0; i < cfg->n_owners; i++) {
		const struct gl_config_owner *o = &cfg->owners[i];
		snprintf(item, sizeof item, "owners[%zu]", i);
		snprintf(p, sizeof p, "%s.match", item);
		if (!gl_settings_match_valid(o->match))
			return cfg_fail(err, name, l, p, "'%s' is not account, user, partition, qos, wckey, namespace or label:<key>",
					o->match);
		if ((rc = check_span(o->from, o->to, &f, &t, name, l, item, err)))
			return rc;
		if ((rc = check_owner_name(o->team, "team", name, l, item, err)) ||
		    (rc = check_owner_name(o->project, "project", name, l, item, err)) ||
		    (rc = check_owner_name(o->cost_center, "cost_center", name, l, item, err)))
			return rc;
	}
	if ((rc = check_workload_types(cfg, name, l, err)))
		return rc;
	if ((rc = check_runs(cfg, name, l, err)))
		return rc;
	for (size_t i = 0; i < cfg->n_idle_owners; i++) {
		snprintf(item, sizeof item, "idle_owners[%zu]", i);
		if ((rc = check_owner_name(cfg->idle_owners[i].team, "team", name, l, item, err)))
			return rc;
	}
	return 0;
}

/* budgets[]: amounts, owners, aggregates, no two of one owner at one time. */
static int check_budgets(const struct gl_config *cfg, const char *name, const struct cfg_lines *l, struct gl_err *err)
{
	struct gl_err e = {0};
	int64_t f, t;
	char item[160], p[192];
	int rc;

	for (size_t i = 0; i < cfg->n_budgets; i++) {
		const struct gl_config_budget *b = &cfg->budgets[i];
		snprintf(item, sizeof item, "budgets[%zu]", i);
		if ((rc = check_money(b->amount, "amount", b->currency, cfg, name, l, item, err)) ||
		    (rc = check_owner_name(b->owner, "owner", name, l, item, err)))
			return rc;
		{
			/* pct_used and the alert thresholds are shares of it */
			int64_t v = 0;
			snprintf(p, sizeof p, "%s.amount", item);
			if (gl_cost_parse(b->amount, &v, &e) == 0 && v <= 0)
				return cfg_fail(err, name, l, p, "'%s' must be more than 0", b->amount);
		}
		snprintf(p, sizeof p, "%s.aggregate", item);
		if (!gl_settings_aggregate_ok(b->aggregate))
			return cfg_fail(err, name, l, p, "'%s' is not team, project, cost_center, account, user or workload_type", b->aggregate);
		if ((rc = check_span(b->from, b->to, &f, &t, name, l, item, err)))
			return rc;
		for (size_t j = 0; j < i; j++) {
			/* two budgets of one owner in one month: /v1/budgets listed
			 * both and the alerts (one per owner, month and threshold)
			 * went to whichever was checked first */
			const struct gl_config_budget *o = &cfg->budgets[j];
			int64_t of = GL_TIME_NONE, ot = GL_TIME_NONE;
			if (strcmp(o->owner, b->owner) != 0 || strcmp(o->aggregate, b->aggregate) != 0)
				continue;
			if ((*o->from && gl_timeutil_parse(o->from, strlen(o->from), &of)) ||
			    (*o->to && gl_timeutil_parse(o->to, strlen(o->to), &ot)))
				continue; /* reported for budgets[j] already */
			if ((t == GL_TIME_NONE || of == GL_TIME_NONE || of < t) &&
			    (ot == GL_TIME_NONE || f == GL_TIME_NONE || f < ot))
				return cfg_fail(err, name, l, item, "owner '%s' (aggregate %s) overlaps budgets[%zu] in time",
						b->owner, b->aggregate, j);
		}
	}
	return 0;
}

/* Everything else, in this order: the first error is the one reported. */
static int check_rest(const struct gl_config *cfg, const char *name, const struct cfg_lines *l, struct gl_err *err)
{
	int rc;

	if ((rc = check_settings(cfg, name, l, err)) || (rc = check_sources(cfg, name, l, err)) ||
	    (rc = check_dcgm_targets(cfg, name, l, err)) || (rc = check_serving(cfg, name, l, err)) ||
	    (rc = check_rates(cfg, name, l, err)) || (rc = check_owners(cfg, name, l, err)) ||
	    (rc = check_budgets(cfg, name, l, err)))
		return rc;
	return 0;
}

/* capacity_plan[]: the form of each entry (what needs the database, known
 * clusters and models and retirements, is checked when the daemon loads it). */
static int check_capacity_plan(const struct gl_config *cfg, const char *name, const struct cfg_lines *l,
			       struct gl_err *err)
{
	for (size_t i = 0; i < cfg->n_capacity_plan; i++) {
		const struct gl_config_capacity_plan *c = &cfg->capacity_plan[i];
		char p[96];
		int64_t d;
		snprintf(p, sizeof p, "capacity_plan[%zu].action", i);
		if (strcmp(c->action, "add") && strcmp(c->action, "retire"))
			return cfg_fail(err, name, l, p, "'%s' is not add or retire", c->action);
		snprintf(p, sizeof p, "capacity_plan[%zu].date", i);
		if (strlen(c->date) != 10 || gl_timeutil_parse(c->date, 10, &d) || d % 86400)
			return cfg_fail(err, name, l, p, "'%s' is not a date YYYY-MM-DD", c->date);
		snprintf(p, sizeof p, "capacity_plan[%zu].cluster", i);
		if (!*c->cluster)
			return cfg_fail(err, name, l, p, "empty");
		snprintf(p, sizeof p, "capacity_plan[%zu].gpu_model", i);
		if (!*c->gpu_model)
			return cfg_fail(err, name, l, p, "empty");
	}
	return 0;
}

/* What the daemon and the commands would otherwise only find out later
 * (and some never, failing quietly): checked here so that check-config and
 * serve agree, every error naming file:line. */
static int check_semantics(const struct gl_config *cfg, const char *name, const struct cfg_lines *l,
			   struct gl_err *err)
{
	struct gl_err e = {0};
	enum gl_chargeback_share_idle sh;
	int rc;

	if (!gl_settings_aggregate_ok(cfg->reports_aggregate))
		return cfg_fail(err, name, l, "reports.aggregate", "'%s' is not team, project, cost_center, account, user or workload_type",
				cfg->reports_aggregate);
	if (gl_chargeback_share_parse(cfg->reports_share_idle, &sh))
		return cfg_fail(err, name, l, "reports.share_idle", "'%s' is not " GL_CHARGEBACK_SHARE_NAMES,
				cfg->reports_share_idle);
	if (gl_report_seps_check(cfg->reports_thousands_separator, cfg->reports_decimal_separator, &e))
		return cfg_fail(err, name, l, "reports.thousands_separator", "%s", e.msg);
	if (!list_within(cfg->reports_formats, gl_settings_report_ext, 4))
		return cfg_fail(err, name, l, "reports.formats", "'%s' is not a comma list of csv, html, pdf and zip",
				cfg->reports_formats);
	if ((rc = check_capacity_plan(cfg, name, l, err)))
		return rc;
	return check_rest(cfg, name, l, err);
}

/* Rates and budgets without a currency of their own are in the reporting
 * currency. Done once the whole file is read: the top-level currency: may
 * come after the lists (a list item's default could not see it, and a
 * fixed "USD" refused every such rate under currency: EUR). */
static void inherit_currency(struct gl_config *cfg)
{
	for (size_t i = 0; i < cfg->n_rates; i++)
		if (!cfg->rates[i].currency || !*cfg->rates[i].currency) {
			free(cfg->rates[i].currency);
			cfg->rates[i].currency = gl_xstrdup(cfg->currency);
		}
	for (size_t i = 0; i < cfg->n_budgets; i++)
		if (!cfg->budgets[i].currency || !*cfg->budgets[i].currency) {
			free(cfg->budgets[i].currency);
			cfg->budgets[i].currency = gl_xstrdup(cfg->currency);
		}
}

int gl_config_load_buf(struct gl_config *cfg, const char *name, const char *buf, size_t len, struct gl_err *err)
{
	yaml_parser_t ps;
	struct ynode *root = NULL;
	unsigned char *seen = NULL;
	struct cfg_lines lines = {0};
	size_t nkeys = 0;
	int rc, have_parser = 0;

	/* a flag per key of the table, however many it has */
	while (top_keys[nkeys].name)
		nkeys++;
	seen = gl_xcalloc(nkeys + 1, 1);
	memset(cfg, 0, sizeof *cfg);
	cfg->path = gl_xstrdup(name ? name : "(defaults)");
	if ((rc = apply_defaults(cfg, top_keys, err)))
		goto out;
	if (!buf)
		goto out;
	if (len > CFG_MAX_BYTES) {
		rc = gl_err_set(err, GL_ECONFIG, "%s: larger than %u bytes", name, CFG_MAX_BYTES);
		goto out;
	}
	if (!yaml_parser_initialize(&ps))
		gl_oom(sizeof ps);
	have_parser = 1;
	yaml_parser_set_input_string(&ps, (const unsigned char *)buf, len);
	if ((rc = yaml_build(&ps, name, &root, err)))
		goto out;
	if (!root || (root->type == Y_SCALAR && root->plain_null))
		goto out; /* an empty file is all defaults */
	if (root->type != Y_MAP) {
		rc = gl_err_set(err, GL_ECONFIG, "%s:%d: the top level must be a mapping", name, root->line);
		goto out;
	}
	rc = apply_map(cfg, top_keys, root, "", "", name, seen, &lines, err);
	if (!rc) {
		inherit_currency(cfg);
		rc = check_semantics(cfg, name, &lines, err);
	}
	if (!rc) {
		{
			/* an invalid policy stops everything: nothing may act on it */
			struct gl_hookpolicy *pol = NULL;
			size_t npol = 0;
			rc = gl_config_hookpolicies(cfg, &pol, &npol, err);
			gl_hookpolicy_free(pol, npol);
		}
	}
out:
	if (have_parser)
		yaml_parser_delete(&ps);
	ynode_free(root);
	lines_fini(&lines);
	free(seen);
	if (rc)
		gl_config_fini(cfg);
	return rc;
}

int gl_config_load(struct gl_config *cfg, const char *path, struct gl_err *err)
{
	FILE *f = NULL;
	char *buf = NULL;
	size_t len = 0;
	int rc;

	if (!path)
		return gl_config_load_buf(cfg, NULL, NULL, 0, err);
	memset(cfg, 0, sizeof *cfg);
	f = fopen(path, "rb");
	if (!f) {
		rc = gl_err_set(err, GL_ECONFIG, "%s: cannot open config: %s", path, strerror(errno));
		goto out;
	}
	buf = gl_xmalloc(CFG_MAX_BYTES + 1);
	len = fread(buf, 1, CFG_MAX_BYTES + 1, f);
	if (ferror(f)) {
		rc = gl_err_set(err, GL_ECONFIG, "%s: read error: %s", path, strerror(errno));
		goto out;
	}
	rc = gl_config_load_buf(cfg, path, buf, len, err);
out:
	if (f)
		fclose(f);
	free(buf);
	return rc;
}

static void fini_table(void *base, const struct gl_config_key *t)
{
	for (; t->name; t++) {
		char *p = (char *)base + t->offset;
		if (t->type == GL_CONFIG_STR) {
			free(*(char **)p);
			*(char **)p = NULL;
		} else if (t->type == GL_CONFIG_LIST) {
			char *arr = *(char **)p;
			size_t n = *(size_t *)((char *)base + t->count_offset);
			for (size_t i = 0; arr && i < n; i++)
				fini_table(arr + i * t->elem_size, t->sub);
			free(arr);
			*(char **)p = NULL;
			*(size_t *)((char *)base + t->count_offset) = 0;
		}
	}
}

void gl_config_fini(struct gl_config *cfg)
{
	if (!cfg)
		return;
	fini_table(cfg, top_keys);
	free(cfg->path);
	cfg->path = NULL;
}

const char *gl_config_external_dsn(const struct gl_config *cfg)
{
	const char *env = getenv("GPULEDGER_DSN");
	if (env && *env)
		return env;
	if (cfg->db_dsn && *cfg->db_dsn)
		return cfg->db_dsn;
	return NULL;
}

const char *gl_config_migrate_dsn(const struct gl_config *cfg)
{
	const char *env = getenv("GPULEDGER_MIGRATE_DSN");
	if (env && *env)
		return env;
	if (cfg->db_migrate_dsn && *cfg->db_migrate_dsn)
		return cfg->db_migrate_dsn;
	return NULL;
}

int gl_config_hookpolicies(const struct gl_config *cfg, struct gl_hookpolicy **out, size_t *n, struct gl_err *err)
{
	const struct gl_hookpolicy_defaults d = {cfg->path, cfg->hook_slurm_command, cfg->hook_kube_command,
						 cfg->hook_max_data_age_s};
	return gl_hookpolicy_compile(cfg->hook_policies, cfg->n_hook_policies, &d, out, n, err);
}

void gl_config_run_rules(const struct gl_config *cfg, struct gl_runs_rule **rules, size_t *n)
{
	*rules = gl_xcalloc(cfg->n_runs + 1, sizeof **rules);
	*n = 0;
	for (size_t i = 0; i < cfg->n_runs; i++) {
		const struct gl_config_run *c = &cfg->runs[i];
		struct gl_runs_rule *r = &(*rules)[*n];
		r->cluster = c->cluster;
		r->from_s = r->to_s = GL_TIME_NONE;
		if (gl_runs_by_parse(c->by, &r->by, &r->label) ||
		    (*c->from && gl_timeutil_parse(c->from, strlen(c->from), &r->from_s)) ||
		    (*c->to && gl_timeutil_parse(c->to, strlen(c->to), &r->to_s)))
			continue; /* refused at load: not reached */
		++*n;
	}
}
