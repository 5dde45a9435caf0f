/* Periodic sacct runs (see include/gl/sacct_poll.h). */
#include "gl/sacct_poll.h"
#include "gl/ingest.h"
#include "gl/jobs.h"
#include "gl/log.h"
#include "gl/proc.h"
#include "gl/redact.h"
#include "gl/sacct.h"
#include "gl/sacct_ingest.h"
#include "gl/strbuf.h"
#include "gl/timeutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct feed_ctx {
	struct gl_sacct_ingest *in;
	struct gl_err err;
	int failed;
};

static int on_out(const char *buf, size_t n, void *ud)
{
	struct feed_ctx *f = ud;
	if (gl_sacct_ingest_feed(f->in, buf, n, &f->err)) {
		f->failed = 1;
		return -GL_EDB;
	}
	return 0;
}

static void fmt_sacct_time(int64_t t, char *buf, size_t n)
{
	/* sacct wants local time without a zone; we run it with TZ=UTC */
	char tmp[32];
	gl_timeutil_format(t, tmp, sizeof tmp);
	tmp[strlen(tmp) - 1] = '\0'; /* drop the Z */
	snprintf(buf, n, "%s", tmp);
}

static int run_chunk(struct gl_store *db, const struct gl_config *cfg, const struct gl_config_sacct_source *src,
		     int64_t from, int64_t to, int final_wm, struct gl_sacct_poll_result *res, struct gl_err *err)
{
	char s_from[32], s_to[32];
	const char *argv[64];
	char *extra = NULL, *save = NULL;
	size_t k = 0;
	struct gl_strbuf cmdline = GL_STRBUF_INIT;
	struct gl_sacct_ingest_opts o = {0};
	struct gl_ingest_stats st;
	struct feed_ctx f = {0};
	struct gl_proc_opts po = {0};
	struct gl_proc_result pr;
	const char *env[] = {"TZ=UTC", "SLURM_TIME_FORMAT=standard", NULL};
	char how[64], msg[1200];
	int rc, ok;

	gl_ingest_stats_init(&st, 0);
	fmt_sacct_time(from, s_from, sizeof s_from);
	fmt_sacct_time(to, s_to, sizeof s_to);
	argv[k++] = src->command;
	argv[k++] = "--allusers";
	argv[k++] = "--parsable2";
	argv[k++] = "--noheader";
	argv[k++] = "--allocations";
	argv[k++] = "--duplicates";
	argv[k++] = "--clusters";
	argv[k++] = src->cluster;
	argv[k++] = "--starttime";
	argv[k++] = s_from;
	argv[k++] = "--endtime";
	argv[k++] = s_to;
	argv[k++] = "--delimiter";
	argv[k++] = src->delimiter;
	argv[k++] = "--format";
	argv[k++] = GL_SACCT_DEFAULT_FIELDS;
	extra = gl_xstrdup(src->extra_args);
	for (char *t = strtok_r(extra, " \t", &save); t && k < GL_ARRAY_LEN(argv) - 1; t = strtok_r(NULL, " \t", &save))
		argv[k++] = t;
	argv[k] = NULL;
	{
		/* as logged and stored: extra_args may carry a credential */
		struct gl_strbuf raw = GL_STRBUF_INIT;
		for (size_t i = 0; i < k; i++) {
			if (i)
				gl_strbuf_putc(&raw, ' ');
			gl_strbuf_puts(&raw, argv[i]);
		}
		gl_redact_secrets(gl_strbuf_cstr(&raw), &cmdline);
		gl_strbuf_fini(&raw);
	}

	o.cluster = src->cluster;
	o.input_name = cmdline.p;
	o.fields = GL_SACCT_DEFAULT_FIELDS;
	o.delimiter = src->delimiter;
	o.batch_rows = cfg->ingest_batch_rows;
	o.max_skip_reasons = cfg->ingest_max_skip_reasons;
	o.watermark_s = final_wm ? to : GL_TIME_NONE;
	if ((rc = gl_sacct_ingest_begin(db, &o, &f.in, err)))
		goto out;
	po.env = env;
	po.timeout_s = (int)src->timeout_s;
	po.on_stdout = on_out;
	po.ud = &f;
	rc = gl_proc_run(argv, &po, &pr, err);
	if (f.failed) {
		*err = f.err;
		rc = -GL_EDB;
	}
	ok = rc == 0 && pr.exited && pr.status == 0;
	if (rc == 0 && !ok) {
		gl_proc_describe(&pr, how, sizeof how);
		snprintf(msg, sizeof msg, "sacct %s: %s%s%s", src->cluster, how, pr.stderr_bytes ? ": " : "",
			 pr.stderr_excerpt);
		rc = gl_err_set(err, GL_EIO, "%s", msg);
	}
	if (gl_proc_stopping()) {
		/* whatever sacct got to: the stop cancels our statements, so a
		 * last flush would only be cancelled in turn (or wait on the lock
		 * that held the batch) */
		struct gl_err e2 = {0};
		if (!rc)
			rc = gl_err_set(err, GL_EIO, "sacct %s: stopped (the daemon is stopping)", src->cluster);
		if (gl_sacct_ingest_abandon(f.in, err->msg, &st, &e2))
			gl_log(GL_LOG_WARN, "sacct %s: could not record the stopped run: %s", src->cluster, e2.msg);
	} else {
		struct gl_err e2 = {0};
		int frc = gl_sacct_ingest_finish(f.in, ok, rc ? err->msg : NULL, &st, &e2);
		if (!rc && frc) {
			*err = e2;
			rc = frc;
		}
	}
	res->lines += st.lines_read;
	res->inserted += st.inserted;
	res->updated += st.updated;
	res->unchanged += st.unchanged;
	res->skipped += st.skipped;
	res->chunks++;
out:
	gl_sacct_ingest_free(f.in);
	gl_ingest_stats_fini(&st);
	gl_strbuf_fini(&cmdline);
	free(extra);
	return rc;
}

int gl_sacct_poll_run(struct gl_store *db, const struct gl_config *cfg, const struct gl_config_sacct_source *src,
		      int64_t now_s, struct gl_sacct_poll_result *res, struct gl_err *err)
{
	int cluster_id, rc;
	int64_t wm, from;

	memset(res, 0, sizeof *res);
	if ((rc = gl_jobs_cluster_ensure(db, src->cluster, "slurm", &cluster_id, err)))
		return rc;
	if ((rc = gl_ingest_watermark_get(db, "sacct", cluster_id, &wm, err)))
		return rc;
	from = wm == GL_TIME_NONE ? now_s - src->lookback_s : wm - src->overlap_s;
	res->watermark_s = wm;
	/* day-sized chunks: sacct refuses very wide ranges; each chunk commits
	 * its own watermark so progress survives a crash between chunks */
	while (from < now_s) {
		int64_t to = from + src->chunk_s < now_s ? from + src->chunk_s : now_s;
		/* the daemon is stopping: what is committed stays, the rest waits
		 * for the next start (the watermark says where to resume) */
		if (gl_proc_stopping())
			return gl_err_set(err, GL_EIO, "sacct: stopped before %lld (the daemon is stopping)",
					  (long long)from);
		if ((rc = run_chunk(db, cfg, src, from, to, 1, res, err)))
			return rc;
		res->watermark_s = to;
		from = to;
	}
	return 0;
}

int gl_sacct_poll_source_run(struct gl_store *db, const struct gl_config *cfg, const void *src, int64_t now_s, char *summary,
			size_t n, struct gl_err *err)
{
	struct gl_sacct_poll_result res;
	int rc = gl_sacct_poll_run(db, cfg, src, now_s, &res, err);
	if (!rc)
		snprintf(summary, n, "%d chunks, %lld lines, %lld inserted, %lld updated, %lld unchanged, %lld skipped",
			 res.chunks, (long long)res.lines, (long long)res.inserted, (long long)res.updated,
			 (long long)res.unchanged, (long long)res.skipped);
	return rc;
}
