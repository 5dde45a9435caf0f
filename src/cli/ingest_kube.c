/* `gpuledger ingest kube`: one-shot ingest of a saved PodList snapshot. */
#include "gl/cli.h"
#include "gl/kube_ingest.h"
#include "gl/log.h"
#include "gl/store.h"
#include "gl/timeutil.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>

static const char usage_ingest_kube[] =
	"usage: gpuledger [--config FILE] ingest kube --cluster NAME --file F [--at TIME]\n"
	"Ingests a PodList snapshot (`kubectl get pods -A -o json` output) taken at TIME\n"
	"(RFC 3339, e.g. 2026-10-01T12:00:00Z; default: the file's modification time).\n"
	"Every pod requesting GPUs becomes a job keyed by its UID; open pods of the cluster\n"
	"that the snapshot no longer lists are closed at the last time they were seen.\n"
	"A snapshot older than one already ingested for the cluster is refused.\n"
	"Label keys for team/project/cost centre come from the sources.kube entry of the\n"
	"same cluster when the config has one.\n"
	"Pods with a missing or bad uid/creationTimestamp are reported by JSON path and skipped.\n"
	"Exit status 0 when every pod was ingested, 1 on failure, 2 on usage errors,\n"
	"4 when pods were skipped.\n";

int gl_cli_ingest_kube(struct gl_config *cfg, int argc, char **argv)
{
	const char *cluster = NULL, *file = NULL, *at = NULL;
	const struct gl_cli_opt opts[] = {{"cluster", &cluster}, {"file", &file}, {"at", &at}, {NULL, NULL}};
	struct gl_kube_ingest_opts o = {0};
	struct gl_kube_ingest_result res = {0};
	struct gl_err err = {0};
	struct gl_store *store = NULL;
	int rc;

	if ((rc = gl_cli_parse_opts(argc, argv, "ingest kube", usage_ingest_kube, opts)) >= 0)
		return rc;
	if (!cluster || !*cluster || !file)
		return gl_cli_usage_error(usage_ingest_kube, "ingest kube: --cluster and --file are required");
	if (at) {
		if (gl_timeutil_parse(at, strlen(at), &o.at_s) != 0)
			return gl_cli_usage_error(usage_ingest_kube,
						  "ingest kube: --at '%s': not an RFC 3339 time (2026-10-01T12:00:00Z)", at);
	} else {
		/* kubectl ... > file: the file was written when the list was taken */
		struct stat sb;
		if (stat(file, &sb) != 0) {
			gl_err_set(&err, GL_EIO, "%s: %s", file, strerror(errno));
			return gl_cli_fail(&err);
		}
		o.at_s = (int64_t)sb.st_mtime;
	}
	if ((rc = gl_cli_at_not_future(usage_ingest_kube, "ingest kube", at ? "--at" : "the file's modification time",
				       o.at_s, (int64_t)time(NULL))) >= 0)
		return rc;
	o.cluster = cluster;
	o.input_name = file;
	o.batch_rows = cfg->ingest_batch_rows;
	o.max_skip_reasons = cfg->ingest_max_skip_reasons;
	for (size_t i = 0; i < cfg->n_kube; i++) {
		if (!strcmp(cfg->kube[i].cluster, cluster)) {
			o.team_label = cfg->kube[i].label_team;
			o.project_label = cfg->kube[i].label_project;
			o.cost_center_label = cfg->kube[i].label_cost_center;
		}
	}
	if (gl_store_open(cfg, &store, &err) || gl_kube_ingest_file(store, &o, file, &res, &err)) {
		rc = gl_cli_fail(&err);
		goto out;
	}
	gl_log(GL_LOG_INFO, "ingest kube %s (%s): %lld items, %lld GPU pods (%lld running, %lld pending), "
			    "%lld inserted, %lld updated, %lld unchanged, %lld vanished, %lld skipped, %lld without GPUs",
	       file, cluster, (long long)res.st.lines_read, (long long)res.pods, (long long)res.running,
	       (long long)res.pending, (long long)res.st.inserted, (long long)res.st.updated,
	       (long long)res.st.unchanged, (long long)res.vanished, (long long)res.st.skipped,
	       (long long)res.st.ignored);
	rc = gl_cli_ingest_result(
		(const struct gl_cli_count[]){{"items", res.st.lines_read}, {"pods", res.pods},
					      {"running", res.running}, {"pending", res.pending},
					      {"inserted", res.st.inserted}, {"updated", res.st.updated},
					      {"unchanged", res.st.unchanged}, {"vanished", res.vanished},
					      {"skipped", res.st.skipped}, {"ignored", res.st.ignored}, {NULL, 0}},
		res.st.skipped != 0);
out:
	gl_kube_ingest_result_fini(&res);
	gl_store_close(store);
	return rc;
}
