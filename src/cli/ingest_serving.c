/* `gpuledger ingest serving`: one-shot ingest of a saved inference-server
 * scrape. */
#include "gl/cli.h"
#include "gl/log.h"
#include "gl/serving_ingest.h"
#include "gl/store.h"
#include "gl/timeutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char usage_ingest_serving[] =
	"usage: gpuledger [--config FILE] ingest serving --file F --at TIME --endpoint NAME [--cluster C]\n"
	"                 [--pod NAMESPACE/NAME | --job ID | --job-name NAME] [--model M] [--instance I]\n"
	"Ingests a saved /metrics scrape of an inference server (vLLM, TGI, Triton, SGLang;\n"
	"F may be - for stdin) taken at TIME (RFC 3339): the rise of its request, token and\n"
	"latency counters since the endpoint's previous scrape, in the ingest.bucket_s bucket of\n"
	"TIME, tied to the pod or Slurm job it runs on (docs/serving.md).\n"
	"--cluster: the cluster of that pod or job (default: the sources.serving entry of the\n"
	"endpoint). --pod, --job (Slurm job id) or --job-name say where it runs; without them,\n"
	"the endpoint's sources.serving entry does, else the scrape's own pod/namespace labels.\n"
	"--model names the model of servers that label none (TGI). --instance names the\n"
	"process stream (default pod:NS/NAME, job:ID or the endpoint): scrapes of one stream\n"
	"are counted against each other.\n"
	"A scrape at or before the stream's last ingested one counts nothing again.\n"
	"Exit status 0 when every line was used, 1 on failure, 4 when lines were skipped or a\n"
	"counter went backwards without a restart (flagged, counted 0).\n";

/* The sources.serving entry of an endpoint, if the config has one. */
static const struct gl_config_serving_source *entry_of(const struct gl_config *cfg, const char *endpoint)
{
	for (size_t i = 0; i < cfg->n_serving; i++)
		if (!strcmp(cfg->serving[i].endpoint, endpoint))
			return &cfg->serving[i];
	return NULL;
}

/* Where it runs: the options, else the config entry; its stream name. */
static int where_of(const char *pod, const char *job, const char *job_name, const struct gl_config_serving_source *e,
		    struct gl_servingdb_where *w, char *ns_buf, size_t n)
{
	const char *slash;
	memset(w, 0, sizeof *w);
	if ((pod != NULL) + (job != NULL) + (job_name != NULL) > 1)
		return -1;
	if (!pod && !job && !job_name && e) {
		pod = e->pod[0] ? e->pod : NULL;
		job = e->job[0] ? e->job : NULL;
		job_name = e->job_name[0] ? e->job_name : NULL;
		if (e->selector[0]) {
			w->kind = "selector";
			w->ns = e->namespace_;
			w->name = e->selector;
			return 0;
		}
	}
	if (pod) {
		if (!(slash = strchr(pod, '/')) || slash == pod || !slash[1] || (size_t)(slash - pod) >= n)
			return -2;
		snprintf(ns_buf, n, "%.*s", (int)(slash - pod), pod);
		w->kind = "pod";
		w->ns = ns_buf;
		w->name = slash + 1;
	} else if (job) {
		w->kind = "job";
		w->name = job;
	} else if (job_name) {
		w->kind = "job_name";
		w->name = job_name;
	}
	return 0;
}

static int report(const char *file, const char *endpoint, const struct gl_serving_ingest_result *res)
{
	gl_log(GL_LOG_INFO, "ingest serving %s (%s): %lld series, %lld counted, %lld levels set, %lld resets, %lld stale, "
			    "%lld flagged, %lld unattributed, %lld claimed, %lld bad lines",
	       file, endpoint, (long long)res->series, (long long)res->counted, (long long)res->baseline,
	       (long long)res->resets, (long long)res->stale, (long long)res->flagged, (long long)res->unattributed,
	       (long long)res->claimed_rows, (long long)res->bad_lines);
	return gl_cli_ingest_result(
		(const struct gl_cli_count[]){{"series", res->series},
					      {"counted", res->counted},
					      {"baseline", res->baseline},
					      {"resets", res->resets},
					      {"new_processes", res->new_processes},
					      {"stale", res->stale},
					      {"duplicates", res->duplicates},
					      {"flagged", res->flagged},
					      {"unattributed", res->unattributed},
					      {"usage_rows", res->usage_rows},
					      {"claimed_rows", res->claimed_rows},
					      {"new_jobs", res->new_jobs},
					      {"bad_lines", res->bad_lines},
					      {"bad_values", res->bad_values},
					      {NULL, 0}},
		res->bad_lines || res->bad_values || res->flagged);
}

int gl_cli_ingest_serving(struct gl_config *cfg, int argc, char **argv)
{
	const char *file = NULL, *at = NULL, *endpoint = NULL, *cluster = NULL, *pod = NULL, *job = NULL,
		   *job_name = NULL, *model = NULL, *instance = NULL;
	const struct gl_cli_opt opts[] = {
		{"file", &file},	 {"at", &at},		{"endpoint", &endpoint}, {"cluster", &cluster},
		{"pod", &pod},		 {"job", &job},		{"job-name", &job_name}, {"model", &model},
		{"instance", &instance}, {NULL, NULL},
	};
	const struct gl_config_serving_source *e;
	struct gl_serving_ingest_opts o;
	struct gl_serving_ingest_result res;
	struct gl_serving_ingest_scrape_in in;
	struct gl_serving_ingest_batch *b = NULL;
	struct gl_err err = {0};
	struct gl_store *store = NULL;
	char ns[256], inst[600];
	char *buf = NULL;
	size_t len = 0;
	int64_t at_s;
	int rc, wrc;

	if ((rc = gl_cli_parse_opts(argc, argv, "ingest serving", usage_ingest_serving, opts)) >= 0)
		return rc;
	if (!file || !at || !endpoint)
		return gl_cli_usage_error(usage_ingest_serving, "ingest serving: --file, --at and --endpoint are required");
	if (gl_timeutil_parse(at, strlen(at), &at_s) != 0)
		return gl_cli_usage_error(usage_ingest_serving, "ingest serving: --at: '%s' is not an RFC 3339 time", at);
	if ((rc = gl_cli_at_not_future(usage_ingest_serving, "ingest serving", "--at", at_s, (int64_t)time(NULL))) >= 0)
		return rc;
	e = entry_of(cfg, endpoint);
	if (!cluster && !(cluster = e ? e->cluster : NULL))
		return gl_cli_usage_error(usage_ingest_serving,
					  "ingest serving: --cluster is needed: no sources.serving entry names endpoint '%s'",
					  endpoint);
	memset(&in, 0, sizeof in);
	wrc = where_of(pod, job, job_name, e, &in.where, ns, sizeof ns);
	if (wrc == -1)
		return gl_cli_usage_error(usage_ingest_serving, "ingest serving: give at most one of --pod, --job and --job-name");
	if (wrc == -2)
		return gl_cli_usage_error(usage_ingest_serving, "ingest serving: --pod: '%s' is not NAMESPACE/NAME", pod);
	if (instance)
		snprintf(inst, sizeof inst, "%s", instance);
	else if (in.where.kind && !strcmp(in.where.kind, "pod"))
		snprintf(inst, sizeof inst, "pod:%s/%s", in.where.ns, in.where.name);
	else if (in.where.kind && !strcmp(in.where.kind, "job"))
		snprintf(inst, sizeof inst, "job:%s", in.where.name);
	else
		snprintf(inst, sizeof inst, "endpoint");
	in.endpoint = endpoint;
	in.cluster = cluster;
	in.instance = inst;
	in.default_model = model ? model : e && e->model[0] ? e->model : NULL;
	in.input = file;

	gl_serving_ingest_opts_init(&o, cfg, cluster);
	o.input_name = file;
	if (!(buf = gl_cli_read_file(file, 1, &len, &err))) {
		rc = gl_cli_fail(&err);
		goto out;
	}
	b = gl_serving_ingest_batch_new(at_s, o.bucket_s, o.max_skip_reasons);
	if (gl_serving_ingest_batch_add(b, &in, buf, len, &err)) {
		rc = gl_cli_fail(&err);
		goto out;
	}
	if (gl_store_open(cfg, &store, &err) || gl_serving_ingest(store, &o, b, &res, &err)) {
		rc = gl_cli_fail(&err);
		goto out;
	}
	rc = report(file, endpoint, &res);
out:
	free(buf);
	gl_serving_ingest_batch_free(b);
	gl_store_close(store);
	return rc;
}
