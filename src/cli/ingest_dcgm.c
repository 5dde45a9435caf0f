/* `gpuledger ingest dcgm`: one-shot ingest of a saved dcgm-exporter scrape. */
#include "gl/cli.h"
#include "gl/db.h"
#include "gl/dcgm.h"
#include "gl/dcgm_attrib.h"
#include "gl/dcgm_ingest.h"
#include "gl/log.h"
#include "gl/timeutil.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage_ingest_dcgm[] =
	"usage: gpuledger [--config FILE] ingest dcgm --cluster NAME --file F --at TIME [--node NAME]\n"
	"                 [--max-gap S]\n"
	"Ingests a saved dcgm-exporter /metrics scrape (F may be - for stdin) taken at TIME\n"
	"(RFC 3339, e.g. 2026-11-22T16:04:10Z): fleet inventory, per-GPU rollups into\n"
	"ingest.bucket_s buckets, attribution to the cluster's jobs running at TIME.\n"
	"--node overrides the Hostname label (in Kubernetes it names the exporter pod).\n"
	"--max-gap: a sample stands for the time since the GPU's previous one, at most S\n"
	"seconds (default: 2 x the cluster's sources.dcgm interval, else 60).\n"
	"A sample at or before a GPU's last ingested one is not applied again.\n"
	"Exit status 0 when every line was used, 1 on failure, 4 when lines were skipped.\n";

static int read_all(const char *path, char **out, size_t *len, struct gl_err *err)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	size_t cap = 1 << 16, n = 0;
	char *buf;
	if (!f)
		return gl_err_set(err, GL_EIO, "%s: %s", path, strerror(errno));
	buf = gl_xmalloc(cap);
	for (;;) {
		size_t k;
		if (n == cap)
			buf = gl_xrealloc(buf, cap *= 2);
		k = fread(buf + n, 1, cap - n, f);
		n += k;
		if (k == 0)
			break;
	}
	if (ferror(f)) {
		if (f != stdin)
			fclose(f);
		free(buf);
		return gl_err_set(err, GL_EIO, "%s: read error", path);
	}
	if (f != stdin)
		fclose(f);
	*out = buf;
	*len = n;
	return 0;
}

int gl_cli_ingest_dcgm(struct gl_config *cfg, int argc, char **argv)
{
	static const struct option opts[] = {
		{"cluster", required_argument, 0, 'C'}, {"file", required_argument, 0, 'f'},
		{"at", required_argument, 0, 'a'},      {"node", required_argument, 0, 'n'},
		{"max-gap", required_argument, 0, 'g'}, {"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	const char *cluster = NULL, *file = NULL, *at = NULL, *node = NULL, *gap = NULL;
	struct gl_dcgm_ingest_opts o;
	struct gl_dcgm_ingest_result res;
	struct gl_dcgm_scrape s;
	struct gl_dcgm_opts so = {0};
	struct gl_dcgm_batch *b = NULL;
	struct gl_err err = {0};
	PGconn *c = NULL;
	char *buf = NULL;
	size_t len = 0;
	int64_t at_s;
	int ch, rc = 0, prc;

	if (gl_cli_wants_help(argc, argv)) {
		fputs(usage_ingest_dcgm, stdout);
		return 0;
	}
	optind = 1;
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 'C': cluster = optarg; break;
		case 'f': file = optarg; break;
		case 'a': at = optarg; break;
		case 'n': node = optarg; break;
		case 'g': gap = optarg; break;
		default: return gl_cli_usage_error(usage_ingest_dcgm, "ingest dcgm: bad option");
		}
	}
	if (optind < argc)
		return gl_cli_usage_error(usage_ingest_dcgm, "ingest dcgm: unexpected argument '%s'", argv[optind]);
	if (!cluster || !file || !at)
		return gl_cli_usage_error(usage_ingest_dcgm, "ingest dcgm: --cluster, --file and --at are required");
	if (gl_time_parse(at, strlen(at), &at_s) != 0)
		return gl_cli_usage_error(usage_ingest_dcgm, "ingest dcgm: --at: '%s' is not an RFC 3339 time", at);
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

	if (read_all(file, &buf, &len, &err)) {
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
	b = gl_dcgm_batch_new(cfg->ingest_max_skip_reasons);
	gl_dcgm_batch_add(b, &s, file);
	gl_dcgm_scrape_fini(&s);
	if (gl_dcgm_batch_gpus(b) == 0) {
		gl_err_set(&err, GL_EFORMAT, "%s: no dcgm-exporter GPU samples (DCGM_FI_* with a UUID and a hostname)", file);
		rc = gl_cli_fail(&err);
		goto out;
	}
	if (gl_db_connect(cfg, &c, &err) || gl_dcgm_ingest(c, &o, b, at_s, &res, &err)) {
		rc = gl_cli_fail(&err);
		goto out;
	}
	gl_log(GL_LOG_INFO, "ingest dcgm %s (%s): %lld GPUs on %lld nodes, %lld new, %lld samples applied, %lld stale, "
			    "%lld unattributed, %lld marked absent, %lld bad lines",
	       file, cluster, (long long)res.gpus, (long long)res.nodes, (long long)res.new_gpus,
	       (long long)res.applied, (long long)res.stale, (long long)res.unattributed,
	       (long long)res.marked_absent, (long long)res.bad_lines);
	printf("{\"gpus\":%lld,\"nodes\":%lld,\"new_gpus\":%lld,\"applied\":%lld,\"stale\":%lld,\"duplicates\":%lld,"
	       "\"hpc_job\":%lld,\"pod\":%lld,\"node_exclusive\":%lld,\"node_estimated\":%lld,\"unattributed\":%lld,"
	       "\"marked_absent\":%lld,\"bad_lines\":%lld,\"no_host\":%lld}\n",
	       (long long)res.gpus, (long long)res.nodes, (long long)res.new_gpus, (long long)res.applied,
	       (long long)res.stale, (long long)res.duplicates, (long long)res.attributed[GL_ATTRIB_HPC_JOB],
	       (long long)res.attributed[GL_ATTRIB_POD], (long long)res.attributed[GL_ATTRIB_NODE_EXCLUSIVE],
	       (long long)res.attributed[GL_ATTRIB_NODE_ESTIMATED], (long long)res.unattributed,
	       (long long)res.marked_absent, (long long)res.bad_lines, (long long)res.no_host);
	rc = res.bad_lines || res.no_host ? GL_EXIT_SKIPPED : 0;
out:
	free(buf);
	gl_dcgm_batch_free(b);
	PQfinish(c);
	return rc;
}
