/* `gpuledger ingest nvidia-smi`: one node's nvidia-smi capture. */
#include "gl/cli.h"
#include "gl/dcgm_attrib.h"
#include "gl/log.h"
#include "gl/nvsmi_ingest.h"
#include "gl/store.h"
#include "gl/timeutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char usage_ingest_nvsmi[] =
	"usage: gpuledger [--config FILE] ingest nvidia-smi --cluster NAME --node N --file F [--fields LIST]\n"
	"                 [--at TIME] [--utc-offset +HH:MM] [--apps F --pids F] [--max-gap S]\n"
	"Ingests a capture of node N taken by nvidia-smi (F may be - for stdin):\n"
	"  nvidia-smi --query-gpu=timestamp,uuid,utilization.gpu,... --format=csv[,noheader][,nounits] [-l S]\n"
	"  nvidia-smi -q -x [-l S]\n"
	"into the fleet inventory and the per-GPU rollups, one round per second of its samples, oldest\n"
	"first; a sample at or before a GPU's last ingested one is not applied again.\n"
	"--fields: the --query-gpu list of a noheader capture.\n"
	"--at: the time of a capture of one sample per GPU (RFC 3339), instead of its own.\n"
	"--utc-offset: the capturing host's local time minus UTC (nvidia-smi prints local time;\n"
	"  default +00:00, a capture taken with TZ=UTC).\n"
	"--apps / --pids: the node's nvidia-smi --query-compute-apps=timestamp,gpu_uuid,pid,... capture and\n"
	"  its Slurm processes (scontrol listpids, or grep -H . /proc/[0-9]*/cgroup): a GPU running a job's\n"
	"  processes is attributed to that job.\n"
	"--max-gap: a sample stands for the time since the GPU's previous one, at most S seconds\n"
	"  (default: 2 x the cluster's sources.dcgm interval, else 60).\n"
	"Exit status 0 when every line was used, 1 on failure, 2 on a usage error, 4 when lines were\n"
	"skipped (each reported as file:line: reason).\n";

/* "+02:00", "-05:30", "0": seconds east of UTC; -1 on a bad value. */
static int parse_offset(const char *s, int64_t *out)
{
	int sign = 1, h = 0, m = 0;
	char c = 0;
	if (!strcmp(s, "0") || !strcmp(s, "Z")) {
		*out = 0;
		return 0;
	}
	if (*s == '+' || *s == '-')
		sign = *s++ == '-' ? -1 : 1;
	else
		return -1;
	if (sscanf(s, "%2d:%2d%c", &h, &m, &c) != 2 || h > 14 || m > 59)
		return -1;
	*out = sign * (int64_t)(h * 3600 + m * 60);
	return 0;
}

static int read_side(const char *path, const char *what, struct gl_nvsmi_ingest_input *in, char **buf,
		     struct gl_err *err)
{
	size_t len = 0;
	if (!path)
		return 0;
	if (!(*buf = gl_cli_read_file(path, 0, &len, err)))
		return gl_err_prefix(err, "%s: ", what);
	*in = (struct gl_nvsmi_ingest_input){*buf, len, path};
	return 0;
}

int gl_cli_ingest_nvsmi(struct gl_config *cfg, int argc, char **argv)
{
	const char *cluster = NULL, *node = NULL, *file = NULL, *fields = NULL, *at = NULL, *off = NULL, *apps = NULL,
		   *pids = NULL, *gap = NULL;
	const struct gl_cli_opt opts[] = {
		{"cluster", &cluster}, {"node", &node}, {"file", &file}, {"fields", &fields}, {"at", &at},
		{"utc-offset", &off},  {"apps", &apps}, {"pids", &pids}, {"max-gap", &gap},  {NULL, NULL},
	};
	struct gl_nvsmi_ingest_opts o;
	struct gl_nvsmi_ingest_input ai = {0}, pi = {0};
	struct gl_nvsmi_ingest_result res;
	struct gl_err err = {0};
	struct gl_store *store = NULL;
	char *buf = NULL, *abuf = NULL, *pbuf = NULL;
	size_t len = 0;
	int rc;

	if ((rc = gl_cli_parse_opts(argc, argv, "ingest nvidia-smi", usage_ingest_nvsmi, opts)) >= 0)
		return rc;
	if (!cluster || !node || !file)
		return gl_cli_usage_error(usage_ingest_nvsmi, "ingest nvidia-smi: --cluster, --node and --file are required");
	if (!apps != !pids)
		return gl_cli_usage_error(usage_ingest_nvsmi,
					  "ingest nvidia-smi: --apps and --pids go together (GPU processes and their jobs)");
	memset(&o, 0, sizeof o);
	o.at_s = GL_TIME_NONE;
	if (at && gl_timeutil_parse(at, strlen(at), &o.at_s) != 0)
		return gl_cli_usage_error(usage_ingest_nvsmi, "ingest nvidia-smi: --at: '%s' is not an RFC 3339 time", at);
	if (at && (rc = gl_cli_at_not_future(usage_ingest_nvsmi, "ingest nvidia-smi", "--at", o.at_s,
					     (int64_t)time(NULL))) >= 0)
		return rc;
	if (off && parse_offset(off, &o.utc_offset_s))
		return gl_cli_usage_error(usage_ingest_nvsmi, "ingest nvidia-smi: --utc-offset: '%s' is not +HH:MM or -HH:MM",
					  off);
	if (gl_dcgm_ingest_opts_init(&o.dcgm, cfg, cluster, &err))
		return gl_cli_fail(&err);
	if (gap) {
		char *end;
		long long g = strtoll(gap, &end, 10);
		if (*end || end == gap || g < 1)
			return gl_cli_usage_error(usage_ingest_nvsmi, "ingest nvidia-smi: --max-gap: '%s' is not a positive integer",
						  gap);
		o.dcgm.max_gap_s = g;
	}
	o.dcgm.input_name = file;
	o.dcgm.run_source = "nvidia-smi";
	o.node = node;
	o.fields = fields;
	if (!(buf = gl_cli_read_file(file, 1, &len, &err)) || read_side(apps, "--apps", &ai, &abuf, &err) ||
	    read_side(pids, "--pids", &pi, &pbuf, &err) || gl_store_open(cfg, &store, &err) ||
	    gl_nvsmi_ingest(store, &o, buf, len, &ai, &pi, &res, &err)) {
		rc = gl_cli_fail(&err);
		goto out;
	}
	gl_log(GL_LOG_INFO,
	       "ingest nvidia-smi %s (%s/%s): %lld rounds, %lld GPU samples, %lld applied, %lld stale, %lld labelled by "
	       "job, %lld unattributed, %lld problems",
	       file, cluster, node, (long long)res.rounds, (long long)res.samples, (long long)res.dcgm.applied,
	       (long long)res.dcgm.stale, (long long)res.labelled, (long long)res.dcgm.unattributed,
	       (long long)res.problems);
	rc = gl_cli_ingest_result(
		(const struct gl_cli_count[]){{"rounds", res.rounds},
					      {"samples", res.samples},
					      {"gpus", res.dcgm.gpus},
					      {"new_gpus", res.dcgm.new_gpus},
					      {"applied", res.dcgm.applied},
					      {"stale", res.dcgm.stale},
					      {"hpc_job", res.dcgm.attributed[GL_DCGM_ATTRIB_HPC_JOB]},
					      {"node_exclusive", res.dcgm.attributed[GL_DCGM_ATTRIB_NODE_EXCLUSIVE]},
					      {"node_estimated", res.dcgm.attributed[GL_DCGM_ATTRIB_NODE_ESTIMATED]},
					      {"unattributed", res.dcgm.unattributed},
					      {"waiting", res.dcgm.waiting},
					      {"labelled", res.labelled},
					      {"problems", res.problems},
					      {NULL, 0}},
		res.problems != 0);
out:
	free(buf);
	free(abuf);
	free(pbuf);
	gl_store_close(store);
	return rc;
}
