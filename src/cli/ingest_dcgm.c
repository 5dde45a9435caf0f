/* `gpuledger ingest dcgm`: one-shot ingest of a saved dcgm-exporter scrape. */
#include "gl/cli.h"
#include "gl/dcgm.h"
#include "gl/dcgm_attrib.h"
#include "gl/dcgm_ingest.h"
#include "gl/log.h"
#include "gl/store.h"
#include "gl/timeutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char usage_ingest_dcgm[] =
	"usage: gpuledger [--config FILE] ingest dcgm --cluster NAME --file F --at TIME [--node NAME]\n"
	"                 [--max-gap S]\n"
	"Ingests a saved GPU exporter /metrics scrape (dcgm-exporter, nvidia_gpu_exporter's\n"
	"nvidia_smi_*, the AMD Device Metrics Exporter; F may be - for stdin) taken at TIME\n"
	"(RFC 3339, e.g. 2026-11-22T16:04:10Z): fleet inventory, per-GPU rollups into\n"
	"ingest.bucket_s buckets, attribution to the cluster's jobs running at TIME.\n"
	"--node overrides the Hostname label (in Kubernetes it names the exporter pod) and\n"
	"names the node of a scrape without one (dcgm-exporter --no-hostname, nvidia_gpu_exporter).\n"
	"--max-gap: a sample stands for the time since the GPU's previous one, at most S\n"
	"seconds (default: 2 x the cluster's sources.dcgm interval, else 60).\n"
	"A sample at or before a GPU's last ingested one is not applied again.\n"
	"Exit status 0 when every line was used, 1 on failure, 4 when lines were skipped.\n";

int gl_cli_ingest_dcgm(struct gl_config *cfg, int argc, char **argv)
{
	const char *cluster = NULL, *file = NULL, *at = NULL, *node = NULL, *gap = NULL;
	const struct gl_cli_opt opts[] = {
		{"cluster", &cluster}, {"file", &file}, {"at", &at}, {"node", &node}, {"max-gap", &gap}, {NULL, NULL},
	};
	struct gl_dcgm_ingest_opts o;
	struct gl_dcgm_ingest_result res;
	struct gl_dcgm_scrape s;
	struct gl_dcgm_opts so = {0};
	struct gl_dcgm_ingest_batch *b = NULL;
	struct gl_err err = {0};
	struct gl_store *store = NULL;
	char *buf = NULL, why[400];
	const char *why_empty;
	size_t len = 0;
	int64_t at_s;
	int rc, prc;

	if ((rc = gl_cli_parse_opts(argc, argv, "ingest dcgm", usage_ingest_dcgm, opts)) >= 0)
		return rc;
	rc = 0;
	if (!cluster || !file || !at)
		return gl_cli_usage_error(usage_ingest_dcgm, "ingest dcgm: --cluster, --file and --at are required");
	if (gl_timeutil_parse(at, strlen(at), &at_s) != 0)
		return gl_cli_usage_error(usage_ingest_dcgm, "ingest dcgm: --at: '%s' is not an RFC 3339 time", at);
	if ((rc = gl_cli_at_not_future(usage_ingest_dcgm, "ingest dcgm", "--at", at_s, (int64_t)time(NULL))) >= 0)
		return rc;
	if (gl_dcgm_ingest_opts_init(&o, cfg, cluster, &err))
		return gl_cli_fail(&err);
	if (gap) {
		char *end;
		long long g = strtoll(gap, &end, 10);
		if (*end || end == gap || g < 1)
			return gl_cli_usage_error(usage_ingest_dcgm, "ingest dcgm: --max-gap: '%s' is not a positive integer", gap);
		o.max_gap_s = g;
	}
	o.input_name = file;
	so.node = node;

	if (!(buf = gl_cli_read_file(file, 1, &len, &err))) {
		rc = gl_cli_fail(&err);
		goto out;
	}
	prc = gl_dcgm_scrape_parse(&s, buf, len, &so, &err);
	free(buf);
	buf = NULL;
	if (prc) {
		gl_dcgm_scrape_fini(&s);
		gl_err_prefix(&err, "%s: ", file);
		rc = gl_cli_fail(&err);
		goto out;
	}
	for (size_t i = 0; i < s.parse.nbad; i++)
		gl_log(GL_LOG_WARN, "%s:%zu: %s (line skipped)", file, s.parse.bad[i].line, s.parse.bad[i].reason);
	if (s.too_long)
		gl_log(GL_LOG_WARN, "%s:%zu: %s (%zu samples with a label over its bound dropped)", file, s.too_long_line,
		       s.too_long_reason, s.too_long);
	b = gl_dcgm_ingest_batch_new(cfg->ingest_max_skip_reasons);
	gl_dcgm_ingest_batch_add(b, &s, file);
	why_empty = gl_dcgm_scrape_why_empty(&s, why, sizeof why);
	gl_dcgm_scrape_fini(&s);
	if (gl_dcgm_ingest_batch_gpus(b) == 0) {
		gl_err_set(&err, GL_EFORMAT, "%s: %s", file, why_empty ? why_empty : "no GPU the store can take");
		rc = gl_cli_fail(&err);
		goto out;
	}
	if (gl_store_open(cfg, &store, &err) || gl_dcgm_ingest(store, &o, b, at_s, &res, &err)) {
		rc = gl_cli_fail(&err);
		goto out;
	}
	gl_log(GL_LOG_INFO, "ingest dcgm %s (%s): %lld GPUs on %lld nodes, %lld new, %lld samples applied, %lld stale, "
			    "%lld unattributed, %lld marked absent, %lld bad lines",
	       file, cluster, (long long)res.gpus, (long long)res.nodes, (long long)res.new_gpus,
	       (long long)res.applied, (long long)res.stale, (long long)res.unattributed,
	       (long long)res.marked_absent, (long long)res.bad_lines);
	rc = gl_cli_ingest_result(
		(const struct gl_cli_count[]){{"gpus", res.gpus}, {"nodes", res.nodes}, {"new_gpus", res.new_gpus},
					      {"applied", res.applied}, {"stale", res.stale},
					      {"duplicates", res.duplicates},
					      {"hpc_job", res.attributed[GL_DCGM_ATTRIB_HPC_JOB]},
					      {"pod", res.attributed[GL_DCGM_ATTRIB_POD]},
					      {"node_exclusive", res.attributed[GL_DCGM_ATTRIB_NODE_EXCLUSIVE]},
					      {"node_estimated", res.attributed[GL_DCGM_ATTRIB_NODE_ESTIMATED]},
					      {"unattributed", res.unattributed}, {"marked_absent", res.marked_absent},
					      {"bad_lines", res.bad_lines}, {"no_host", res.no_host}, {NULL, 0}},
		res.bad_lines || res.no_host);
out:
	free(buf);
	gl_dcgm_ingest_batch_free(b);
	gl_store_close(store);
	return rc;
}
