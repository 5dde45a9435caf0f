/* `gpuledger ingest sacct`: one-shot ingest of a saved sacct output. */
#include "gl/cli.h"
#include "gl/ingest.h"
#include "gl/log.h"
#include "gl/sacct.h"
#include "gl/sacct_ingest.h"
#include "gl/store.h"
#include "gl/timeutil.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static const char usage_ingest_sacct[] =
	"usage: gpuledger [--config FILE] ingest sacct --cluster NAME --file F [--delimiter C] [--fields LIST]\n"
	"       [--at TIME]\n"
	"Ingests a saved sacct output (--parsable or --parsable2). Without --fields, a header\n"
	"line is used when present, else the recommended field list:\n  " GL_SACCT_DEFAULT_FIELDS "\n"
	"Times are read as UTC: sacct prints the local time of where it runs, so save it with\n"
	"  TZ=UTC SLURM_TIME_FORMAT=standard sacct ...\n"
	"--at: when the sacct ran (RFC 3339; default: the file's modification time): the jobs it\n"
	"shows running are billed up to then, later time is unobserved until a later input says.\n"
	"Malformed lines are reported as file:line and skipped; the rest is ingested.\n"
	"Exit status 0 when every line was ingested, 1 on failure, 4 when lines were skipped.\n";

/* When the saved output was taken: --at, else the file's modification
 * time (sacct ... > file writes it as it runs). -1 when known, else the
 * exit status of the refusal. */
static int capture_time(const char *file, const char *at, int64_t *seen_s)
{
	struct gl_err err = {0};
	if (at) {
		if (gl_timeutil_parse(at, strlen(at), seen_s) != 0)
			return gl_cli_usage_error(usage_ingest_sacct,
						  "ingest sacct: --at '%s': not an RFC 3339 time (2026-10-01T12:00:00Z)", at);
	} else {
		struct stat sb;
		if (stat(file, &sb) != 0) {
			gl_err_set(&err, GL_EIO, "%s: %s", file, strerror(errno));
			return gl_cli_fail(&err);
		}
		*seen_s = (int64_t)sb.st_mtime;
	}
	return gl_cli_at_not_future(usage_ingest_sacct, "ingest sacct", at ? "--at" : "the file's modification time",
				    *seen_s, (int64_t)time(NULL));
}

int gl_cli_ingest_sacct(struct gl_config *cfg, int argc, char **argv)
{
	const char *cluster = NULL, *file = NULL, *delim = NULL, *fields = NULL, *at = NULL;
	const struct gl_cli_opt opts[] = {
		{"cluster", &cluster}, {"file", &file}, {"delimiter", &delim}, {"fields", &fields}, {"at", &at}, {NULL, NULL},
	};
	struct gl_sacct_ingest_opts o = {0};
	struct gl_ingest_stats st;
	struct gl_err err = {0};
	struct gl_store *store = NULL;
	int rc;

	if ((rc = gl_cli_parse_opts(argc, argv, "ingest sacct", usage_ingest_sacct, opts)) >= 0)
		return rc;
	if (!cluster || !file)
		return gl_cli_usage_error(usage_ingest_sacct, "ingest sacct: --cluster and --file are required");
	{
		/* a layout that cannot work is the caller's mistake: say so before connecting */
		struct gl_sacct_layout lay;
		if (gl_sacct_layout_init(&lay, fields, delim, &err))
			return gl_cli_usage_error(usage_ingest_sacct, "ingest sacct: --%s", err.msg);
		gl_sacct_layout_fini(&lay);
	}
	if ((rc = capture_time(file, at, &o.seen_s)) >= 0)
		return rc;
	gl_ingest_stats_init(&st, 0);
	o.cluster = cluster;
	o.input_name = file;
	o.fields = fields;
	o.delimiter = delim;
	o.batch_rows = cfg->ingest_batch_rows;
	o.max_skip_reasons = cfg->ingest_max_skip_reasons;
	o.watermark_s = GL_TIME_NONE;
	if (gl_store_open(cfg, &store, &err) || gl_sacct_ingest_file(store, &o, file, &st, &err)) {
		rc = gl_cli_fail(&err);
		goto out;
	}
	gl_log(GL_LOG_INFO, "ingest sacct %s (%s): %lld lines, %lld inserted, %lld updated, %lld unchanged, "
			    "%lld skipped, %lld ignored (steps/header)",
	       file, cluster, (long long)st.lines_read, (long long)st.inserted, (long long)st.updated,
	       (long long)st.unchanged, (long long)st.skipped, (long long)st.ignored);
	rc = gl_cli_ingest_result(
		(const struct gl_cli_count[]){{"lines", st.lines_read}, {"inserted", st.inserted},
					      {"updated", st.updated}, {"unchanged", st.unchanged},
					      {"skipped", st.skipped}, {"ignored", st.ignored}, {NULL, 0}},
		st.skipped != 0);
out:
	gl_ingest_stats_fini(&st);
	gl_store_close(store);
	return rc;
}
