/* The daemon's node inventory sources (sources.slurm_nodes[],
 * sources.kube_nodes[]): run the scheduler's own tools, parse, apply. Any
 * failure applies nothing, so the last known state stays in force; the
 * scheduler (gl_daemon_tick) reports it through gl_health_report, and it is
 * a failed ingest_runs row. */
#include "gl/config.h"
#include "gl/nodes_poll.h"
#include "gl/ingest.h"
#include "gl/jobs.h"
#include "gl/log.h"
#include "gl/nodeobs.h"
#include "gl/nodes_ingest.h"
#include "gl/proc.h"
#include "gl/redact.h"
#include "gl/strbuf.h"
#include "gl/timeutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_OUTPUT ((size_t)512 << 20)

struct capture {
	struct gl_strbuf out;
	int too_big;
};

static int on_out(const char *buf, size_t n, void *ud)
{
	struct capture *c = ud;
	if (c->out.len + n > MAX_OUTPUT) {
		c->too_big = 1;
		return 1;
	}
	gl_strbuf_append(&c->out, buf, n);
	return 0;
}

/* Runs argv and hands back its stdout; a non-zero exit, a timeout or an
 * oversized answer is an error naming the command. */
static int run_capture(const char *const *argv, int64_t timeout_s, struct gl_strbuf *out, struct gl_err *err)
{
	static const char *const env[] = {"TZ=UTC", "SLURM_TIME_FORMAT=standard", NULL};
	struct capture cap = {GL_STRBUF_INIT, 0};
	struct gl_proc_opts po = {0};
	struct gl_proc_result pr;
	char how[64];
	int rc;
	po.env = env;
	po.timeout_s = (int)timeout_s;
	po.on_stdout = on_out;
	po.ud = &cap;
	rc = gl_proc_run(argv, &po, &pr, err);
	if (cap.too_big)
		rc = gl_err_set(err, GL_ERANGE, "%s: output larger than %zu bytes", argv[0], MAX_OUTPUT);
	else if (rc == 0 && !(pr.exited && pr.status == 0)) {
		gl_proc_describe(&pr, how, sizeof how);
		rc = gl_err_set(err, GL_EIO, "%s: %s%s%s", argv[0], how, pr.stderr_bytes ? ": " : "", pr.stderr_excerpt);
	}
	if (rc)
		gl_strbuf_fini(&cap.out);
	else
		*out = cap.out;
	return rc;
}

/* Runs argv and parses its stdout into s with parse. */
static int run_parse(const char *const *argv, int64_t timeout_s,
		     int (*parse)(const char *, size_t, struct gl_nodeobs_snapshot *, struct gl_err *),
		     struct gl_nodeobs_snapshot *s, struct gl_err *err)
{
	struct gl_strbuf out = GL_STRBUF_INIT;
	int rc = run_capture(argv, timeout_s, &out, err);
	if (rc == 0)
		rc = parse(gl_strbuf_cstr(&out), out.len, s, err);
	gl_strbuf_fini(&out);
	return rc;
}

static void fmt_slurm_time(int64_t t, char *buf, size_t n)
{
	gl_timeutil_format(t, buf, n);
	buf[strcspn(buf, "Z")] = '\0';
}

/* A snapshot that could not be read (the command failed, timed out or
 * printed something unparsable; the file is missing) is a failed run in
 * ingest_runs, as docs/capacity.md and the kube pod source have it: it was
 * only on /metrics, so /v1/ingest/runs and the report's partial-data notes
 * never showed the outage. Nothing else is written. */
static void record_failure(struct gl_store *db, const char *cluster, const char *kind, const char *run_source,
			   const char *input, const struct gl_err *why)
{
	struct gl_ingest_stats st;
	struct gl_err e2 = {0};
	int64_t run_id;
	int cluster_id;

	gl_ingest_stats_init(&st, 0);
	if (gl_jobs_cluster_ensure(db, cluster, kind, &cluster_id, &e2) ||
	    gl_ingest_run_begin(db, run_source, cluster_id, input, &run_id, &e2) ||
	    gl_ingest_run_update(db, run_id, &st, "failed", why->msg, &e2))
		gl_log(GL_LOG_WARN, "%s %s: could not record the failed run: %s", run_source, cluster, e2.msg);
	else
		gl_ingest_run_audit(db, run_id);
	gl_ingest_stats_fini(&st);
}

static void summarize(char *summary, size_t n, const struct gl_nodes_ingest_counts *k, const struct gl_nodeobs_snapshot *s)
{
	snprintf(summary, n,
		 "%lld nodes (%lld with GPUs, %lld GPUs), GPU spans +%lld/-%lld, state spans +%lld/-%lld, %lld events, "
		 "%lld reservation rows, %zu problems",
		 (long long)k->nodes, (long long)k->gpu_nodes, (long long)k->gpus, (long long)k->gpu_spans_opened,
		 (long long)k->gpu_spans_closed, (long long)k->state_spans_opened, (long long)k->state_spans_closed,
		 (long long)k->events, (long long)k->reservations, s->nproblems + s->problems_dropped);
}

int gl_nodes_poll_slurm_source_run(struct gl_store *db, const struct gl_config *cfg, const void *vsrc, int64_t now_s,
			      char *summary, size_t summary_len, struct gl_err *err)
{
	const struct gl_config_slurm_nodes_source *src = vsrc;
	struct gl_nodeobs_snapshot s = GL_NODEOBS_SNAPSHOT_INIT;
	struct gl_nodes_ingest_opts o = {0};
	struct gl_nodes_ingest_counts k;
	char start[32], end[32], startarg[48], endarg[48], clarg[300];
	/* the command a failure names in ingest_runs: the one that failed (every
	 * failure said scontrol show node -o, also when sacctmgr had failed) */
	const char *input = "scontrol show node -o";
	int rc, read = 0;

	(void)cfg;
	{
		const char *argv[] = {src->scontrol, "show", "node", "-o", NULL};
		if ((rc = run_parse(argv, src->timeout_s, gl_scontrol_parse_nodes, &s, err)))
			goto out;
	}
	if (src->sacctmgr[0]) {
		fmt_slurm_time(now_s - src->events_lookback_s, start, sizeof start);
		fmt_slurm_time(now_s, end, sizeof end);
		snprintf(startarg, sizeof startarg, "start=%s", start);
		snprintf(endarg, sizeof endarg, "end=%s", end);
		snprintf(clarg, sizeof clarg, "clusters=%s", src->cluster);
		input = "sacctmgr -P show event";
		{
			const char *argv[] = {src->sacctmgr, "-P", "show", "event", "events=node,cluster", clarg, startarg,
					      endarg,
					      "format=Cluster,Event,NodeName,ClusterNodes,Start,End,State,StateRaw,Reason,User,TRES",
					      NULL};
			if ((rc = run_parse(argv, src->timeout_s, gl_slurm_events_parse_sacctmgr, &s, err)))
				goto out;
		}
	}
	if (src->reservations) {
		const char *argv[] = {src->scontrol, "show", "reservation", "-o", NULL};
		input = "scontrol show reservation -o";
		if ((rc = run_parse(argv, src->timeout_s, gl_slurm_events_parse_reservations, &s, err)))
			goto out;
	}
	o.cluster = src->cluster;
	o.kind = "slurm";
	o.source = "scontrol";
	o.run_source = "slurm-nodes";
	o.input_name = "scontrol show node -o";
	o.at_s = now_s;
	o.events_complete = src->sacctmgr[0] != '\0';
	read = 1; /* from here gl_nodes_ingest records its own run */
	if ((rc = gl_nodes_ingest(db, &o, &s, &k, err)))
		goto out;
	summarize(summary, summary_len, &k, &s);
out:
	if (rc && !read && !gl_proc_stopping()) /* a stop is no outage */
		record_failure(db, src->cluster, "slurm", "slurm-nodes", input, err);
	gl_nodeobs_snapshot_fini(&s);
	return rc;
}

int gl_nodes_poll_kube_source_run(struct gl_store *db, const struct gl_config *cfg, const void *vsrc, int64_t now_s,
			     char *summary, size_t summary_len, struct gl_err *err)
{
	const struct gl_config_kube_nodes_source *src = vsrc;
	struct gl_nodeobs_snapshot s = GL_NODEOBS_SNAPSHOT_INIT;
	struct gl_strbuf out = GL_STRBUF_INIT, shown = GL_STRBUF_INIT;
	struct gl_nodes_ingest_opts o = {0};
	struct gl_nodes_ingest_counts k;
	int64_t at = now_s;
	int rc, read = 0;

	(void)cfg;
	if (src->command[0]) {
		char *cmd = gl_xstrdup(src->command), *save = NULL;
		const char *argv[64];
		size_t n = 0;
		for (char *t = strtok_r(cmd, " \t", &save); t && n < GL_ARRAY_LEN(argv) - 1; t = strtok_r(NULL, " \t", &save))
			argv[n++] = t;
		argv[n] = NULL;
		rc = n ? run_capture(argv, src->timeout_s, &out, err) : gl_err_set(err, GL_ECONFIG, "empty command");
		free(cmd);
		if (rc)
			goto out;
	} else {
		FILE *f = fopen(src->file, "rb");
		struct stat sb;
		char buf[65536];
		size_t r;
		if (!f) {
			rc = gl_err_set(err, GL_EIO, "%s: %s", src->file, strerror(errno));
			goto out;
		}
		/* the file is as old as its last write, not as our read */
		if (fstat(fileno(f), &sb) == 0 && sb.st_mtime <= now_s)
			at = (int64_t)sb.st_mtime;
		while ((r = fread(buf, 1, sizeof buf, f)) > 0)
			gl_strbuf_append(&out, buf, r);
		fclose(f);
	}
	if ((rc = gl_kube_nodes_parse(gl_strbuf_cstr(&out), out.len, &s, err)))
		goto out;
	o.cluster = src->cluster;
	o.kind = "kubernetes";
	o.source = "kube";
	o.run_source = "kube-nodes";
	/* as logged and stored: the command may carry a credential */
	gl_redact_secrets(src->command[0] ? src->command : src->file, &shown);
	o.input_name = gl_strbuf_cstr(&shown);
	o.at_s = at;
	read = 1;
	if ((rc = gl_nodes_ingest(db, &o, &s, &k, err)))
		goto out;
	summarize(summary, summary_len, &k, &s);
out:
	if (rc && !read && !gl_proc_stopping())
		record_failure(db, src->cluster, "kubernetes", "kube-nodes", src->command[0] ? src->command : src->file,
			       err);
	gl_strbuf_fini(&out);
	gl_strbuf_fini(&shown);
	gl_nodeobs_snapshot_fini(&s);
	return rc;
}
