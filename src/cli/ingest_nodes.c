/* `gpuledger ingest slurm-nodes` and `gpuledger ingest kube-nodes`: one
 * saved scheduler node snapshot (plus Slurm events and reservations) into the
 * inventory tables. */
#include "gl/cli.h"
#include "gl/log.h"
#include "gl/nodeobs.h"
#include "gl/nodes_ingest.h"
#include "gl/store.h"
#include "gl/timeutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char usage_slurm_nodes[] =
	"usage: gpuledger [--config FILE] ingest slurm-nodes --cluster NAME --nodes F [--events F]\n"
	"                 [--reservations F] [--at TIME]\n"
	"Applies a saved `scontrol show node -o` (--nodes), with the node event history of\n"
	"`sacctmgr -P show event events=node,cluster start=... format=Cluster,Event,NodeName,ClusterNodes,\n"
	"Start,End,State,StateRaw,Reason,User,TRES` (--events) and the reservations of\n"
	"`sacctmgr -P show reservation ...` or `scontrol show reservation` (--reservations).\n"
	"--at is when the dump was taken (RFC 3339, default now); with --events the event\n"
	"history is taken as complete up to it. Exit 0 ok, 1 failure, 4 when lines were skipped.\n";

static const char usage_kube_nodes[] =
	"usage: gpuledger [--config FILE] ingest kube-nodes --cluster NAME --file F [--at TIME]\n"
	"Applies a saved `kubectl get nodes -o json` taken at --at (RFC 3339, default now).\n"
	"Exit 0 ok, 1 failure, 4 when nodes were skipped.\n";

static int parse_file(const char *path, int (*fn)(const char *, size_t, struct gl_nodeobs_snapshot *, struct gl_err *),
		      struct gl_nodeobs_snapshot *s, struct gl_err *err)
{
	size_t len = 0;
	char *buf = gl_cli_read_file(path, 0, &len, err);
	int rc;
	if (!buf)
		return -GL_EIO;
	rc = fn(buf, len, s, err);
	if (rc)
		gl_err_prefix(err, "%s: ", path);
	free(buf);
	return rc;
}

static int parse_at(const char *at, int64_t *out)
{
	if (!at) {
		*out = (int64_t)time(NULL);
		return 0;
	}
	return gl_timeutil_parse(at, strlen(at), out);
}

static int report(struct gl_config *cfg, const struct gl_nodes_ingest_opts *o, const struct gl_nodeobs_snapshot *s)
{
	struct gl_err err = {0};
	struct gl_nodes_ingest_counts n;
	struct gl_store *store = NULL;
	int rc;
	for (size_t i = 0; i < s->nproblems; i++)
		gl_log(GL_LOG_WARN, "%s", s->problems[i]);
	if (s->problems_dropped)
		gl_log(GL_LOG_WARN, "... and %zu more problems", s->problems_dropped);
	if (gl_store_open(cfg, &store, &err) || gl_nodes_ingest(store, o, s, &n, &err)) {
		rc = gl_cli_fail(&err);
		goto out;
	}
	gl_log(GL_LOG_INFO,
	       "ingest %s %s (%s): %lld nodes (%lld with GPUs, %lld GPUs), GPU spans +%lld/-%lld, state spans +%lld/-%lld, "
	       "%lld events, %lld reservation rows, %zu skipped",
	       o->run_source, o->input_name, o->cluster, (long long)n.nodes, (long long)n.gpu_nodes, (long long)n.gpus,
	       (long long)n.gpu_spans_opened, (long long)n.gpu_spans_closed, (long long)n.state_spans_opened,
	       (long long)n.state_spans_closed, (long long)n.events, (long long)n.reservations, s->skipped);
	rc = gl_cli_ingest_result(
		(const struct gl_cli_count[]){{"nodes", n.nodes}, {"gpu_nodes", n.gpu_nodes}, {"gpus", n.gpus},
					      {"events", n.events}, {"reservation_rows", n.reservations},
					      {"skipped", (long long)s->skipped},
					      {"problems", (long long)(s->nproblems + s->problems_dropped)}, {NULL, 0}},
		s->skipped != 0);
out:
	gl_store_close(store);
	return rc;
}

int gl_cli_ingest_slurm_nodes(struct gl_config *cfg, int argc, char **argv)
{
	const char *cluster = NULL, *nodes = NULL, *events = NULL, *resv = NULL, *at = NULL;
	const struct gl_cli_opt opts[] = {
		{"cluster", &cluster}, {"nodes", &nodes}, {"events", &events}, {"reservations", &resv}, {"at", &at},
		{NULL, NULL},
	};
	struct gl_nodeobs_snapshot s = GL_NODEOBS_SNAPSHOT_INIT;
	struct gl_nodes_ingest_opts o = {0};
	struct gl_err err = {0};
	int rc;

	if ((rc = gl_cli_parse_opts(argc, argv, "ingest slurm-nodes", usage_slurm_nodes, opts)) >= 0)
		return rc;
	if (!cluster || !nodes)
		return gl_cli_usage_error(usage_slurm_nodes, "ingest slurm-nodes: --cluster and --nodes are required");
	o.cluster = cluster;
	o.kind = "slurm";
	o.source = "scontrol";
	o.run_source = "slurm-nodes";
	o.input_name = nodes;
	o.events_complete = events != NULL;
	if (parse_at(at, &o.at_s))
		return gl_cli_usage_error(usage_slurm_nodes, "ingest slurm-nodes: --at: bad time '%s'", at);
	if ((rc = gl_cli_at_not_future(usage_slurm_nodes, "ingest slurm-nodes", "--at", o.at_s, (int64_t)time(NULL))) >= 0)
		return rc;
	if (parse_file(nodes, gl_scontrol_parse_nodes, &s, &err) ||
	    (events && parse_file(events, gl_slurm_events_parse_sacctmgr, &s, &err)) ||
	    (resv && parse_file(resv, gl_slurm_events_parse_reservations, &s, &err))) {
		rc = gl_cli_fail(&err);
		goto out;
	}
	rc = report(cfg, &o, &s);
out:
	gl_nodeobs_snapshot_fini(&s);
	return rc;
}

int gl_cli_ingest_kube_nodes(struct gl_config *cfg, int argc, char **argv)
{
	const char *cluster = NULL, *file = NULL, *at = NULL;
	const struct gl_cli_opt opts[] = {{"cluster", &cluster}, {"file", &file}, {"at", &at}, {NULL, NULL}};
	struct gl_nodeobs_snapshot s = GL_NODEOBS_SNAPSHOT_INIT;
	struct gl_nodes_ingest_opts o = {0};
	struct gl_err err = {0};
	int rc;

	if ((rc = gl_cli_parse_opts(argc, argv, "ingest kube-nodes", usage_kube_nodes, opts)) >= 0)
		return rc;
	if (!cluster || !file)
		return gl_cli_usage_error(usage_kube_nodes, "ingest kube-nodes: --cluster and --file are required");
	o.cluster = cluster;
	o.kind = "kubernetes";
	o.source = "kube";
	o.run_source = "kube-nodes";
	o.input_name = file;
	if (parse_at(at, &o.at_s))
		return gl_cli_usage_error(usage_kube_nodes, "ingest kube-nodes: --at: bad time '%s'", at);
	if ((rc = gl_cli_at_not_future(usage_kube_nodes, "ingest kube-nodes", "--at", o.at_s, (int64_t)time(NULL))) >= 0)
		return rc;
	if (parse_file(file, gl_kube_nodes_parse, &s, &err)) {
		rc = gl_cli_fail(&err);
		goto out;
	}
	rc = report(cfg, &o, &s);
out:
	gl_nodeobs_snapshot_fini(&s);
	return rc;
}
