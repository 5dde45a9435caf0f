/* The idle-GPU shutdown hook (see include/gl/hook.h, docs/hook.md). */
#include "gl/hook.h"
#include "gl/bounds.h"
#include "gl/jsonscan.h"
#include "gl/accounting.h"
#include "gl/audit.h"
#include "gl/db.h"
#include "gl/hookpolicy.h"
#include "gl/idlerule.h"
#include "gl/log.h"
#include "gl/proc.h"
#include "gl/redact.h"
#include "gl/strbuf.h"
#include "gl/timeutil.h"
#include "gl/utf8.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

/* Running GPU jobs (jobs_running_idx). */
static const char jobs_sql[] =
	"SELECT j.job_pk, j.cluster_id, c.name, c.kind, j.job_id, coalesce(j.name, ''), coalesce(j.user_name, ''),"
	" coalesce(j.account, ''), coalesce(j.partition, ''), coalesce(j.qos, ''), coalesce(j.namespace, ''),"
	" coalesce(j.tags->'labels', '{}')::text, extract(epoch FROM j.start_at)::bigint, j.gpu_milli"
	" FROM jobs j JOIN clusters c USING (cluster_id)"
	" WHERE j.end_at IS NULL AND j.start_at IS NOT NULL AND j.gpu_milli > 0 AND j.start_at <= to_timestamp($1)"
	" ORDER BY j.cluster_id, j.job_pk";

/* Each job's GPU-buckets since its look-back start, from the per-job index
 * of gpu_usage_jobs and the primary key of gpu_usage. $5, the earliest
 * look-back start, is a constant so the planner prunes the day partitions
 * (the per-row bounds alone leave a month of partitions in the plan). */
static const char buckets_sql[] =
	"SELECT x.i, u.gpu_id, extract(epoch FROM u.bucket)::bigint, g.bucket_s, u.samples, u.busy_samples,"
	" u.nodata_samples, g.engine_samples, g.active_sum, coalesce(g.fb_used_max_mib, -1), coalesce(g.power_max_w, -1),"
	" u.attribution, coalesce(extract(epoch FROM g.last_sample_at)::bigint, 0)"
	" FROM unnest($1::bigint[], $2::bigint[], $3::integer[]) AS x(job_pk, f, i)"
	" JOIN gpu_usage_jobs u ON u.job_pk = x.job_pk AND u.bucket > to_timestamp(x.f)"
	"  AND u.bucket < to_timestamp($4) AND u.bucket > to_timestamp($5)"
	" JOIN gpu_usage g ON g.gpu_id = u.gpu_id AND g.bucket = u.bucket"
	"  AND g.bucket < to_timestamp($4) AND g.bucket > to_timestamp($5)"
	" ORDER BY x.i, u.gpu_id, u.bucket";

/* Jobs busy (for the ingest) in [since, now): one probe of the busy index each. */
static const char recent_busy_sql[] =
	"SELECT x.i FROM unnest($1::bigint[], $2::bigint[], $3::integer[]) AS x(job_pk, since, i)"
	" WHERE EXISTS (SELECT 1 FROM gpu_usage_jobs u WHERE u.job_pk = x.job_pk AND u.busy_samples > 0"
	"  AND u.bucket >= to_timestamp(x.since) AND u.bucket < to_timestamp($4) AND u.bucket >= to_timestamp($5))";

/* Fixed rule: was the job busy before its look-back window (busy index)? */
static const char busy_before_sql[] =
	"SELECT x.i FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::integer[]) AS x(job_pk, a, b, i)"
	" WHERE EXISTS (SELECT 1 FROM gpu_usage_jobs u WHERE u.job_pk = x.job_pk AND u.busy_samples > 0"
	"  AND u.bucket >= to_timestamp(x.a) AND u.bucket < to_timestamp(x.b))";

/* Owner at the job's start, for reported jobs. */
static const char owner_sql[] =
	"SELECT x.i, coalesce(ow.team, '__unallocated__')"
	" FROM unnest($1::integer[], $2::bigint[], $3::integer[]) AS x(cid, job_pk, i)"
	" JOIN jobs jb ON jb.cluster_id = x.cid AND jb.job_pk = x.job_pk JOIN clusters c ON c.cluster_id = jb.cluster_id"
	" LEFT JOIN LATERAL gl_owner(c.name, jb.account, jb.user_name, jb.partition, jb.qos, jb.wckey, jb.namespace,"
	"  jb.tags, jb.start_at) ow ON true";

/* The rates of each reported job's rate model (its GPU model, else "*")
 * in force at some time of [$4, $5), the look-back: its idle time is priced
 * across them, as chargeback and /v1/idle price across a rate change. */
static const char rates_sql[] =
	"SELECT x.i, CASE WHEN isfinite(r.valid_from) THEN (extract(epoch FROM r.valid_from) * 1000000)::bigint END,"
	" CASE WHEN isfinite(r.valid_to) THEN (extract(epoch FROM r.valid_to) * 1000000)::bigint END,"
	" r.micros_per_gpu_hour"
	" FROM unnest($1::integer[], $2::bigint[], $3::integer[]) AS x(cid, job_pk, i)"
	" JOIN jobs jb ON jb.cluster_id = x.cid AND jb.job_pk = x.job_pk"
	" JOIN rates r ON r.gpu_model = CASE WHEN EXISTS (SELECT 1 FROM rates q"
	"  WHERE q.gpu_model = " GL_JOB_MODEL_SQL("jb") ") THEN " GL_JOB_MODEL_SQL("jb") " ELSE '*' END"
	" AND r.valid_to > to_timestamp($4) AND r.valid_from < to_timestamp($5)"
	" ORDER BY x.i, r.valid_from";

static const char stages_sql[] =
	"SELECT x.i, s.stage, s.status FROM unnest($1::integer[], $2::bigint[], $3::integer[]) AS x(cid, job_pk, i)"
	" JOIN hook_stages s ON s.cluster_id = x.cid AND s.job_pk = x.job_pk";

enum jclass { J_NONE = 0, J_CANDIDATE, J_NODATA, J_SPARED };

struct hjob {
	int64_t job_pk, start_s, gpu_milli;
	int cluster_id;
	const char *cluster, *kind, *job_id, *name, *user, *account, *partition, *qos, *ns; /* in the jobs result */
	char **labels;
	size_t nlabels;
	int pol;                 /* policy index, -1: none in scope */
	int spared;
	char why[200];
	int estimated, busy_before;
	int recent_busy;         /* busy in the last min(t1, max_data_age): settled, not read */
	int64_t last_sample_s;
	struct gl_idle_gpu_eval *gpus;
	size_t ngpus, gcap;
	struct gl_idle_job_eval ev;
	enum jclass cls;
	char owner[128];
	struct gl_idle_span *isp; /* the idle spans of all its GPUs, priced once the rates are known */
	size_t nisp, iscap;
	int64_t idle_cost;       /* micro-units; -1: no rate of its model in the look-back */
	unsigned done, failed;   /* bit per stage */
	enum gl_idle_stage next; /* stage to run now; NONE = nothing */
};

struct allow {
	struct gl_hookpolicy_list users, accounts, namespaces, jobs;
};

static void allow_fini(struct allow *a)
{
	gl_hookpolicy_list_fini(&a->users);
	gl_hookpolicy_list_fini(&a->accounts);
	gl_hookpolicy_list_fini(&a->namespaces);
	gl_hookpolicy_list_fini(&a->jobs);
}

static void list_add(struct gl_hookpolicy_list *l, const char *s, size_t n)
{
	l->v = gl_xrealloc(l->v, (l->n + 2) * sizeof *l->v);
	l->v[l->n++] = gl_xstrndup(s, n);
	l->v[l->n] = NULL;
}

/* user:NAME, account:NAME, namespace:NAME, job:CLUSTER/ID; # comments */
static int allow_read(const char *path, struct allow *a, struct gl_err *err)
{
	FILE *f;
	char line[1024];
	int ln = 0;
	memset(a, 0, sizeof *a);
	if (!path || !*path)
		return 0;
	if (!(f = fopen(path, "r")))
		return gl_err_set(err, GL_EIO, "%s: cannot open allow-list: %s", path, strerror(errno));
	while (fgets(line, sizeof line, f)) {
		char *p = line, *e;
		ln++;
		if ((e = strchr(p, '#')))
			*e = '\0';
		while (*p == ' ' || *p == '\t')
			p++;
		e = p + strlen(p);
		while (e > p && (e[-1] == '\n' || e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t'))
			*--e = '\0';
		if (!*p)
			continue;
		if (!strncmp(p, "user:", 5))
			list_add(&a->users, p + 5, strlen(p + 5));
		else if (!strncmp(p, "account:", 8))
			list_add(&a->accounts, p + 8, strlen(p + 8));
		else if (!strncmp(p, "namespace:", 10))
			list_add(&a->namespaces, p + 10, strlen(p + 10));
		else if (!strncmp(p, "job:", 4) && strchr(p + 4, '/'))
			list_add(&a->jobs, p + 4, strlen(p + 4));
		else {
			fclose(f);
			allow_fini(a);
			return gl_err_set(err, GL_EINVAL, "%s:%d: expected user:, account:, namespace: or job:CLUSTER/ID", path,
					  ln);
		}
	}
	fclose(f);
	return 0;
}

static int in(const struct gl_hookpolicy_list *l, const char *s)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->v[i], s))
			return 1;
	return 0;
}

static int allowed(const struct allow *a, const struct hjob *j, char *why, size_t n)
{
	char key[512];
	snprintf(key, sizeof key, "%s/%s", j->cluster, j->job_id);
	if (in(&a->jobs, key))
		return snprintf(why, n, "allow-list: job:%s", key), 1;
	if (*j->user && in(&a->users, j->user))
		return snprintf(why, n, "allow-list: user:%s", j->user), 1;
	if (*j->account && in(&a->accounts, j->account))
		return snprintf(why, n, "allow-list: account:%s", j->account), 1;
	if (*j->ns && in(&a->namespaces, j->ns))
		return snprintf(why, n, "allow-list: namespace:%s", j->ns), 1;
	return 0;
}

static void parse_labels(struct hjob *j, const char *json)
{
	cJSON *o = cJSON_Parse(json), *it;
	cJSON_ArrayForEach(it, o)
	{
		if (!cJSON_IsString(it) || !it->string)
			continue;
		j->labels = gl_xrealloc(j->labels, (j->nlabels + 1) * sizeof *j->labels);
		j->labels[j->nlabels] = gl_xmalloc(strlen(it->string) + strlen(it->valuestring) + 2);
		sprintf(j->labels[j->nlabels], "%s=%s", it->string, it->valuestring);
		j->nlabels++;
	}
	cJSON_Delete(o);
}

/* ---- PostgreSQL array parameters ---- */
static void arr_add_i64(struct gl_strbuf *b, int64_t v)
{
	gl_strbuf_putc(b, b->len ? ',' : '{');
	gl_strbuf_put_i64(b, v);
}

static const char *arr_end(struct gl_strbuf *b)
{
	if (!b->len)
		gl_strbuf_putc(b, '{');
	gl_strbuf_putc(b, '}');
	return b->p;
}

static int64_t lookback_s(const struct gl_hookpolicy *p)
{
	/* the action threshold, the data lag allowed, and a bucket or two */
	return p->rule.t3_s + p->rule.max_data_age_s + 900;
}

static const char *stage_label(enum gl_idle_stage s)
{
	return gl_idle_stage_name(s);
}

static const char *class_reason(const struct hjob *j)
{
	return j->why;
}

/* ---- report ---- */
static void fmt_i64(char *b, size_t n, int64_t v)
{
	snprintf(b, n, "%lld", (long long)v);
}

static cJSON *job_json(const struct hjob *j, const struct gl_hookpolicy *pols)
{
	cJSON *o = cJSON_CreateObject();
	const struct gl_hookpolicy *p = &pols[j->pol];
	cJSON_AddStringToObject(o, "cluster", j->cluster);
	cJSON_AddStringToObject(o, "job_id", j->job_id);
	cJSON_AddStringToObject(o, "job_name", j->name);
	cJSON_AddStringToObject(o, "user", j->user);
	cJSON_AddStringToObject(o, "account", j->account);
	cJSON_AddStringToObject(o, "namespace", j->ns);
	cJSON_AddStringToObject(o, "owner", j->owner);
	cJSON_AddNumberToObject(o, "gpus", (double)j->gpu_milli / 1000.0);
	cJSON_AddNumberToObject(o, "idle_gpus", (double)j->ev.idle_gpus);
	cJSON_AddNumberToObject(o, "idle_minutes", (double)(j->ev.idle_s / 60));
	cJSON_AddNumberToObject(o, "idle_gpu_seconds", (double)j->ev.idle_gpu_s);
	if (j->idle_cost >= 0)
		cJSON_AddNumberToObject(o, "idle_cost_micros", (double)j->idle_cost);
	else
		cJSON_AddNullToObject(o, "idle_cost_micros");
	cJSON_AddStringToObject(o, "rule", gl_idlerule_kind_name(p->rule.kind));
	cJSON_AddStringToObject(o, "stage", stage_label(j->ev.stage));
	cJSON_AddStringToObject(o, "policy", p->name);
	if (j->cls == J_CANDIDATE) {
		cJSON_AddStringToObject(o, "next_stage", stage_label(j->next));
		/* a stage that failed in an earlier run is retried, and said so */
		cJSON_AddBoolToObject(o, "retry", j->next != GL_IDLE_STAGE_NONE && (j->failed & (1u << j->next)) != 0);
		cJSON *d = cJSON_AddArrayToObject(o, "done_stages");
		for (int s = GL_IDLE_STAGE_WARN1; s <= GL_IDLE_STAGE_ACT; s++)
			if (j->done & (1u << s))
				cJSON_AddItemToArray(d, cJSON_CreateString(gl_idle_stage_name((enum gl_idle_stage)s)));
	} else {
		cJSON_AddStringToObject(o, "reason", class_reason(j));
	}
	return o;
}

/* ---- running the commands ---- */
struct runctx {
	PGconn *c;
	const struct gl_config *cfg;
	const char *actor;
	int64_t now_s;
	cJSON *actions;
	int failures;
};

static void argv_text(const char *const *argv, struct gl_strbuf *b)
{
	/* a PostgreSQL text[] literal: every element quoted and escaped */
	gl_strbuf_putc(b, '{');
	for (size_t i = 0; argv[i]; i++) {
		if (i)
			gl_strbuf_putc(b, ',');
		gl_strbuf_putc(b, '"');
		for (const char *p = argv[i]; *p; p++) {
			if (*p == '"' || *p == '\\')
				gl_strbuf_putc(b, '\\');
			gl_strbuf_putc(b, *p);
		}
		gl_strbuf_putc(b, '"');
	}
	gl_strbuf_putc(b, '}');
}

static void argv_display(const char *const *argv, struct gl_strbuf *b)
{
	for (size_t i = 0; argv[i]; i++) {
		if (i)
			gl_strbuf_putc(b, ' ');
		gl_strbuf_puts(b, argv[i]);
	}
}

/* Runs one stage of one job: the command (if any), then in one transaction
 * the stage state, the hook_actions row and the audit row. The command runs
 * as the template made it; what is kept of it (hook_actions.argv and
 * .stderr, hook_stages.error, the audit row, the log line, the report) is
 * blanked by gl_redact_argv / gl_redact_secrets: a template may carry a
 * credential (kubectl --token, curl -u), and those are read by every
 * viewer of /v1/hook/actions and kept for good in the audit chain. A retry
 * expands the template again; nothing reads a stored argv to run it. */
static int run_stage(struct runctx *rc, const struct gl_hookpolicy *p, struct hjob *j, enum gl_idle_stage st,
		     struct gl_err *err)
{
	const struct gl_hookpolicy_list *tmpl =
		st == GL_IDLE_STAGE_ACT ? (!strcmp(j->kind, "kubernetes") ? &p->kube_argv : &p->slurm_argv) : &p->warn_argv;
	char idle_min[24], gpus[32], gpu_hours[32], cost[32], at[32], status_s[16], idle_s[24], igs[24], cost_s[24],
		cid[16], jpk[24];
	int64_t cost_micros = j->idle_cost > 0 ? j->idle_cost : 0;
	struct gl_proc_result res;
	struct gl_proc_opts po = {0};
	struct gl_strbuf argv_lit = GL_STRBUF_INIT, disp = GL_STRBUF_INIT, detail = GL_STRBUF_INIT, errb = GL_STRBUF_INIT;
	struct gl_err perr = {0};
	char **argv = NULL, **shown = NULL;
	int ok = 1, have_status = 0, status = 0, r = 0;
	const char *stderr_txt = "";
	char action[32], object[256], clean[GL_AUDIT_FIELD_MAX], refused[300];
	int dash;
	cJSON *row;

	fmt_i64(idle_min, sizeof idle_min, j->ev.idle_s / 60);
	snprintf(gpus, sizeof gpus, "%g", (double)j->gpu_milli / 1000.0);
	snprintf(gpu_hours, sizeof gpu_hours, "%.2f", (double)j->ev.idle_gpu_s / 3600.0);
	/* the currency's decimals, half up, as the reports and budget alerts
	 * write money: cutting at two decimals truncated USD and gave JPY two
	 * decimals it does not have */
	gl_money_format(cost_micros, gl_money_minor(rc->cfg->currency), cost, sizeof cost);
	{
		/* warnings name when the action will come: t3 minus the idle time so far */
		int64_t act_at = rc->now_s + (p->rule.t3_s > j->ev.idle_s ? p->rule.t3_s - j->ev.idle_s : 0);
		gl_time_format(act_at, at, sizeof at);
	}
	{
		const struct gl_tmpl_var vars[] = {
			{"job_id", j->job_id},      {"cluster", j->cluster},	  {"user", j->user},
			{"account", j->account},    {"owner", j->owner},	  {"namespace", j->ns},
			{"pod", j->job_id},	    {"job_name", j->name},	  {"partition", j->partition},
			{"policy", p->name},	    {"stage", gl_idle_stage_name(st)}, {"idle_minutes", idle_min},
			{"gpus", gpus},		    {"gpu_hours", gpu_hours},	  {"cost", cost},
			{"currency", rc->cfg->currency}, {"action_at", at},
		};
		argv = gl_hookpolicy_expand(tmpl, vars, GL_ARRAY_LEN(vars));
	}
	if (argv[0] && (dash = gl_hookpolicy_dash_arg(tmpl, argv)) >= 0) {
		/* recorded and retried like any failure: visible, never run */
		ok = 0;
		snprintf(refused, sizeof refused,
			 "not run: argument %d ('%.60s') would start with '-' from job data in '%.60s': an option to %.60s",
			 dash, argv[dash], tmpl->v[dash], argv[0]);
		gl_redact_secrets(refused, &errb);
		gl_audit_clean(gl_strbuf_cstr(&errb), clean, sizeof clean);
		stderr_txt = clean;
	} else if (argv[0]) {
		po.timeout_s = (int)rc->cfg->hook_command_timeout_s;
		if (gl_proc_run((const char *const *)argv, &po, &res, &perr)) {
			ok = 0;
			stderr_txt = perr.msg;
		} else {
			ok = res.exited && res.status == 0 && !res.timed_out;
			have_status = res.exited && !res.timed_out;
			status = res.status;
			stderr_txt = res.stderr_excerpt;
			if (res.timed_out)
				stderr_txt = "timed out";
		}
		/* a command's stderr is whatever bytes it wrote, and the 1 KiB
		 * excerpt may end inside a character: PostgreSQL refuses invalid
		 * UTF-8 in text and json, which would abort the whole run with the
		 * failure unrecorded. One cleaned copy serves every use below. */
		for (char *q = res.stderr_excerpt; stderr_txt == res.stderr_excerpt && *q; q++)
			if (*q == '\n' || *q == '\r' || *q == '\t')
				*q = ' ';
		/* a tool's error often repeats its arguments */
		gl_redact_secrets(stderr_txt, &errb);
		gl_audit_clean(gl_strbuf_cstr(&errb), clean, sizeof clean);
		stderr_txt = clean;
	}
	shown = gl_redact_argv((const char *const *)argv);
	argv_text((const char *const *)shown, &argv_lit);
	argv_display((const char *const *)shown, &disp);
	snprintf(status_s, sizeof status_s, "%d", status);
	fmt_i64(idle_s, sizeof idle_s, j->ev.idle_s);
	fmt_i64(igs, sizeof igs, j->ev.idle_gpu_s);
	fmt_i64(cost_s, sizeof cost_s, cost_micros);
	snprintf(cid, sizeof cid, "%d", j->cluster_id);
	fmt_i64(jpk, sizeof jpk, j->job_pk);

	{
		cJSON *d = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(d, "argv");
		char *txt;
		for (size_t i = 0; shown[i]; i++)
			cJSON_AddItemToArray(a, cJSON_CreateString(shown[i]));
		cJSON_AddStringToObject(d, "policy", p->name);
		cJSON_AddStringToObject(d, "stage", gl_idle_stage_name(st));
		if (have_status)
			cJSON_AddNumberToObject(d, "exit_status", status);
		else if (argv[0])
			cJSON_AddNullToObject(d, "exit_status");
		cJSON_AddStringToObject(d, "stderr", stderr_txt);
		cJSON_AddNumberToObject(d, "idle_minutes", (double)(j->ev.idle_s / 60));
		cJSON_AddNumberToObject(d, "idle_gpu_seconds", (double)j->ev.idle_gpu_s);
		txt = cJSON_PrintUnformatted(d);
		gl_strbuf_puts(&detail, txt);
		free(txt);
		cJSON_Delete(d);
	}
	snprintf(action, sizeof action, "hook.%s", st == GL_IDLE_STAGE_ACT ? "act" : "warn");
	snprintf(object, sizeof object, "job:%s/%s", j->cluster, j->job_id);

	if ((r = gl_db_exec(rc->c, "BEGIN", err)))
		goto out;
	{
		PGresult *q = NULL;
		const char *pr[] = {cid, jpk, gl_idle_stage_name(st), p->name, ok ? "done" : "failed",
				    have_status ? status_s : NULL, ok ? NULL : stderr_txt};
		r = gl_db_query(rc->c,
				"INSERT INTO hook_stages (cluster_id, job_pk, stage, policy, status, attempts, exit_status, error)"
				" VALUES ($1, $2, $3, $4, $5, 1, $6, $7) ON CONFLICT (cluster_id, job_pk, stage) DO UPDATE SET"
				" status = EXCLUDED.status, attempts = hook_stages.attempts + 1, last_at = now(),"
				" exit_status = EXCLUDED.exit_status, error = EXCLUDED.error, policy = EXCLUDED.policy",
				7, pr, &q, err);
		PQclear(q);
		if (r)
			goto rollback;
	}
	{
		PGresult *q = NULL;
		const char *pr[] = {cid, j->cluster, jpk, j->job_id, j->owner, p->name, gl_idle_stage_name(st), argv_lit.p,
				    have_status ? status_s : NULL, ok ? "true" : "false", stderr_txt, rc->actor, idle_s, igs,
				    j->idle_cost >= 0 ? cost_s : NULL};
		r = gl_db_query(rc->c,
				"INSERT INTO hook_actions (cluster_id, cluster, job_pk, job_id, owner, policy, stage, argv,"
				" exit_status, ok, stderr, source, actor, idle_s, idle_gpu_s, cost_micros)"
				" VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 'hook', $12, $13, $14, $15)",
				15, pr, &q, err);
		PQclear(q);
		if (r)
			goto rollback;
	}
	if ((r = gl_audit_append(rc->c, rc->actor, NULL, action, object, ok ? "ok" : "error", detail.p, err)))
		goto rollback;
	if ((r = gl_db_exec(rc->c, "COMMIT", err)))
		goto out;
	j->done |= ok ? 1u << st : 0;
	if (!ok)
		rc->failures++;
	row = cJSON_CreateObject();
	cJSON_AddStringToObject(row, "cluster", j->cluster);
	cJSON_AddStringToObject(row, "job_id", j->job_id);
	cJSON_AddStringToObject(row, "owner", j->owner);
	cJSON_AddStringToObject(row, "policy", p->name);
	cJSON_AddStringToObject(row, "stage", gl_idle_stage_name(st));
	cJSON_AddStringToObject(row, "command", disp.p ? disp.p : "");
	if (have_status)
		cJSON_AddNumberToObject(row, "exit_status", status);
	else
		cJSON_AddNullToObject(row, "exit_status");
	cJSON_AddBoolToObject(row, "ok", ok);
	if (!ok)
		cJSON_AddStringToObject(row, "error", stderr_txt);
	cJSON_AddItemToArray(rc->actions, row);
	if (!ok)
		gl_log(GL_LOG_WARN, "hook: %s %s/%s failed (%s): %s", gl_idle_stage_name(st), j->cluster, j->job_id,
		       disp.p ? disp.p : "", stderr_txt);
	goto out;
rollback:
	{
		struct gl_err e2 = {0};
		(void)!gl_db_exec(rc->c, "ROLLBACK", &e2);
	}
out:
	gl_hookpolicy_argv_free(argv);
	gl_redact_argv_free(shown);
	gl_strbuf_fini(&argv_lit);
	gl_strbuf_fini(&disp);
	gl_strbuf_fini(&detail);
	gl_strbuf_fini(&errb);
	return r;
}

/* ---- the run ---- */

static enum gl_idle_stage next_stage(const struct gl_hookpolicy *p, const struct hjob *j)
{
	/* one stage per run, in order: a job gets its warning(s) before the
	 * action, each in an earlier run than the next */
	static const enum gl_idle_stage order[] = {GL_IDLE_STAGE_WARN1, GL_IDLE_STAGE_WARN2, GL_IDLE_STAGE_ACT};
	for (size_t i = 0; i < GL_ARRAY_LEN(order); i++) {
		enum gl_idle_stage s = order[i];
		if (s == GL_IDLE_STAGE_WARN2 && !p->rule.t2_s)
			continue;
		if (s > j->ev.stage)
			return GL_IDLE_STAGE_NONE;
		if (!(j->done & (1u << s)))
			return s;
	}
	return GL_IDLE_STAGE_NONE;
}

static void decision_row(struct gl_strbuf *sb, const struct hjob *j, const struct gl_hookpolicy *pols, int dry)
{
	cJSON *o = job_json(j, pols);
	char *t;
	cJSON_AddBoolToObject(o, "dry_run", dry);
	t = cJSON_PrintUnformatted(o);
	gl_strbuf_puts(sb, t);
	free(t);
	cJSON_Delete(o);
}

/* The run's own audit row: what it was asked, what it found, how it ended
 * (error: why it stopped early, NULL when it did not). Built with cJSON: the
 * policy name is the operator's text. */
static int run_row(PGconn *c, const char *actor, const struct gl_hook_opts *o, int act, const cJSON *root, int breaker,
		   int exit_code, const char *error, struct gl_err *err)
{
	cJSON *d = cJSON_CreateObject();
	char *txt;
	int rc;
	cJSON_AddStringToObject(d, "mode", act ? "act" : "dry-run");
	if (o->policy) {
		char clean[GL_AUDIT_FIELD_MAX];
		gl_audit_clean(o->policy, clean, sizeof clean);
		cJSON_AddStringToObject(d, "policy", clean);
	} else {
		cJSON_AddNullToObject(d, "policy");
	}
	cJSON_AddNumberToObject(d, "candidates", cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(root, "candidates")));
	cJSON_AddNumberToObject(d, "no_data", cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(root, "no_data")));
	cJSON_AddNumberToObject(d, "spared", cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(root, "spared")));
	cJSON_AddNumberToObject(d, "actions", cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(root, "actions")));
	cJSON_AddBoolToObject(d, "breaker", breaker);
	cJSON_AddNumberToObject(d, "exit_code", exit_code);
	if (error) {
		char clean[GL_AUDIT_FIELD_MAX];
		gl_audit_clean(error, clean, sizeof clean);
		cJSON_AddStringToObject(d, "error", clean);
	}
	txt = cJSON_PrintUnformatted(d);
	rc = gl_audit_append(c, actor, NULL, "hook.run", NULL, exit_code == GL_HOOK_EXIT_ERROR ? "error" : "ok", txt, err);
	free(txt);
	cJSON_Delete(d);
	return rc;
}

static void untripped_breaker(cJSON *root, int actions_due, int64_t max_actions)
{
	cJSON *b = cJSON_AddObjectToObject(root, "breaker");
	cJSON_AddBoolToObject(b, "tripped", 0);
	cJSON_AddNumberToObject(b, "actions_due", actions_due);
	cJSON_AddNumberToObject(b, "max_actions_per_run", (double)max_actions);
}

int gl_hook_run(PGconn *c, const struct gl_config *cfg, const struct gl_hook_opts *o, int64_t now_s, cJSON **report,
		int *exit_code, struct gl_err *err)
{
	struct gl_hookpolicy *pols = NULL;
	size_t npols = 0, njobs = 0;
	struct allow *allows = NULL;
	struct hjob *jobs = NULL;
	PGresult *jr = NULL, *br = NULL, *q = NULL;
	struct gl_strbuf a1 = GL_STRBUF_INIT, a2 = GL_STRBUF_INIT, a3 = GL_STRBUF_INIT, a4 = GL_STRBUF_INIT;
	char now_txt[24], now_iso[32], lock_sql[96];
	int64_t min_since = now_s, min_from = now_s;
	int rc = 0, in_txn = 0, locked = 0, lock_fd = -1, act = o->act, acts_planned = 0, breaker = 0, run_audited = 0;
	const char *actor = o->actor ? o->actor : gl_audit_process_actor();
	cJSON *root = NULL, *cand, *nod, *spa, *acts, *errs;
	struct runctx rx;
	size_t ncand = 0;

	*report = NULL;
	*exit_code = GL_HOOK_EXIT_ERROR;
	if ((rc = gl_hookpolicy_compile(cfg, &pols, &npols, err)))
		goto out;
	if (o->policy) {
		size_t k;
		for (k = 0; k < npols && strcmp(pols[k].name, o->policy); k++)
			;
		if (k == npols) {
			rc = gl_err_set(err, GL_EINVAL, "--policy: no policy named '%s' in %s", o->policy, cfg->path);
			*exit_code = GL_HOOK_EXIT_USAGE;
			goto out;
		}
	}
	if (act && !cfg->hook_act) {
		rc = gl_err_set(err, GL_EINVAL, "--act: hook.act is false in %s; refusing to act", cfg->path);
		goto out;
	}
	allows = gl_xcalloc(npols ? npols : 1, sizeof *allows);
	for (size_t i = 0; i < npols; i++)
		if ((rc = allow_read(pols[i].allow_list_file, &allows[i], err)))
			goto out;

	root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "mode", act ? "act" : "dry-run");
	gl_time_format(now_s, now_iso, sizeof now_iso);
	cJSON_AddStringToObject(root, "now", now_iso);
	cand = cJSON_AddArrayToObject(root, "candidates");
	nod = cJSON_AddArrayToObject(root, "no_data");
	spa = cJSON_AddArrayToObject(root, "spared");
	acts = cJSON_AddArrayToObject(root, "actions");
	errs = cJSON_AddArrayToObject(root, "errors");
	if (!npols) {
		/* nothing to judge, but the report keeps its documented shape and
		 * the run its hook.run row */
		untripped_breaker(root, 0, cfg->hook_max_actions_per_run);
		*exit_code = GL_HOOK_EXIT_OK;
		goto done;
	}

	if (act) {
		/* overlapping cron runs: the second one leaves at once */
		if (cfg->hook_lock_file[0]) {
			lock_fd = open(cfg->hook_lock_file, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
			if (lock_fd < 0) {
				rc = gl_err_set(err, GL_EIO, "hook.lock_file %s: %s", cfg->hook_lock_file, strerror(errno));
				goto out;
			}
			if (flock(lock_fd, LOCK_EX | LOCK_NB)) {
				cJSON_AddStringToObject(root, "skipped", "another hook run holds hook.lock_file");
				goto skipped;
			}
		}
		snprintf(lock_sql, sizeof lock_sql, "SELECT pg_try_advisory_lock(%lld)", (long long)GL_HOOK_LOCK_KEY);
		if ((rc = gl_db_query(c, lock_sql, 0, NULL, &q, err)))
			goto out;
		locked = PQgetvalue(q, 0, 0)[0] == 't';
		PQclear(q);
		q = NULL;
		if (!locked) {
			cJSON_AddStringToObject(root, "skipped", "another hook run holds the database lock");
			goto skipped;
		}
	}

	fmt_i64(now_txt, sizeof now_txt, now_s);
	/* the read phase: one snapshot; JIT compiles these short queries for
	 * longer than they run, and the sorts fit in memory */
	if ((rc = gl_db_exec(c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", err)))
		goto out;
	in_txn = 1;
	if ((rc = gl_db_exec(c, "SET LOCAL jit = off; SET LOCAL work_mem = '64MB'", err)) ||
	    (rc = gl_db_query(c, jobs_sql, 1, (const char *[]){now_txt}, &jr, err)))
		goto out;
	njobs = (size_t)PQntuples(jr);
	jobs = gl_xcalloc(njobs ? njobs : 1, sizeof *jobs);
	for (size_t i = 0; i < njobs; i++) {
		struct hjob *j = &jobs[i];
		int r = (int)i;
		j->job_pk = atoll(PQgetvalue(jr, r, 0));
		j->cluster_id = atoi(PQgetvalue(jr, r, 1));
		j->cluster = PQgetvalue(jr, r, 2);
		j->kind = PQgetvalue(jr, r, 3);
		j->job_id = PQgetvalue(jr, r, 4);
		j->name = PQgetvalue(jr, r, 5);
		j->user = PQgetvalue(jr, r, 6);
		j->account = PQgetvalue(jr, r, 7);
		j->partition = PQgetvalue(jr, r, 8);
		j->qos = PQgetvalue(jr, r, 9);
		j->ns = PQgetvalue(jr, r, 10);
		if (strcmp(PQgetvalue(jr, r, 11), "{}"))
			parse_labels(j, PQgetvalue(jr, r, 11));
		j->start_s = atoll(PQgetvalue(jr, r, 12));
		j->gpu_milli = atoll(PQgetvalue(jr, r, 13));
		j->pol = -1;
		j->idle_cost = -1;
		snprintf(j->owner, sizeof j->owner, "__unallocated__");
		{
			struct gl_hookpolicy_job hj = {j->cluster, j->kind, j->partition, j->qos, j->account, j->user, j->ns,
						       (const char *const *)j->labels, j->nlabels};
			/* the first policy whose scope holds the job judges it */
			for (size_t k = 0; k < npols; k++)
				if (gl_hookpolicy_in_scope(&pols[k], &hj)) {
					j->pol = (int)k;
					break;
				}
			if (j->pol < 0 || (o->policy && strcmp(pols[j->pol].name, o->policy))) {
				j->pol = -1;
				continue;
			}
			if (gl_hookpolicy_excluded(&pols[j->pol], &hj, j->why, sizeof j->why) ||
			    allowed(&allows[j->pol], j, j->why, sizeof j->why))
				j->spared = 1;
			else if (now_s - j->start_s < pols[j->pol].min_age_s) {
				j->spared = 1;
				snprintf(j->why, sizeof j->why, "min_age_min: started %lld min ago",
					 (long long)((now_s - j->start_s) / 60));
			}
		}
		{
			const struct gl_hookpolicy *p = &pols[j->pol];
			/* busy in the last min(t1, max_data_age): no rule can reach a
			 * stage and the data is fresh, so one probe of the busy index
			 * settles most jobs. A multi-GPU job with gpu_fraction < 1 may
			 * be idle on enough other GPUs: it is always read in full. */
			int64_t w = p->rule.t1_s < p->rule.max_data_age_s ? p->rule.t1_s : p->rule.max_data_age_s;
			if (j->gpu_milli <= 1000 || p->rule.gpu_fraction >= 1) {
				arr_add_i64(&a1, j->job_pk);
				arr_add_i64(&a2, now_s - w);
				arr_add_i64(&a3, (int64_t)i);
				if (now_s - w < min_since)
					min_since = now_s - w;
			}
		}
	}
	if (a1.len) {
		char lo[24];
		fmt_i64(lo, sizeof lo, min_since);
		if ((rc = gl_db_query(c, recent_busy_sql, 5,
				      (const char *[]){arr_end(&a1), arr_end(&a2), arr_end(&a3), now_txt, lo}, &q, err)))
			goto out;
		for (int r = 0; r < PQntuples(q); r++)
			jobs[atoll(PQgetvalue(q, r, 0))].recent_busy = 1;
		PQclear(q);
		q = NULL;
	}
	gl_strbuf_reset(&a1);
	gl_strbuf_reset(&a2);
	gl_strbuf_reset(&a3);
	for (size_t i = 0; i < njobs; i++) {
		struct hjob *j = &jobs[i];
		const struct gl_hookpolicy *p;
		int64_t from, s0;
		if (j->pol < 0 || j->recent_busy)
			continue;
		p = &pols[j->pol];
		from = now_s - lookback_s(p);
		s0 = j->start_s + p->rule.grace_s;
		if (from < s0)
			from = s0;
		/* the bucket holding `from` starts up to one bucket earlier */
		arr_add_i64(&a1, j->job_pk);
		arr_add_i64(&a2, from - cfg->bucket_s);
		arr_add_i64(&a3, (int64_t)i);
		if (from - cfg->bucket_s < min_from)
			min_from = from - cfg->bucket_s;
	}
	{
		char lo[24];
		fmt_i64(lo, sizeof lo, min_from);
		if ((rc = gl_db_query(c, buckets_sql, 5, (const char *[]){arr_end(&a1), arr_end(&a2), arr_end(&a3), now_txt, lo},
				      &br, err)))
			goto out;
	}
	/* the rows come per job and GPU in bucket order: evaluate GPU by GPU */
	{
		int n = PQntuples(br), r = 0;
		struct gl_idle_span *sp = NULL;
		size_t spcap = 0;
		while (r < n) {
			size_t ji = (size_t)atoll(PQgetvalue(br, r, 0));
			const char *gpu = PQgetvalue(br, r, 1);
			struct hjob *j = &jobs[ji];
			const struct gl_hookpolicy *p = &pols[j->pol];
			size_t ns = 0;
			int64_t last = 0;
			while (r < n && (size_t)atoll(PQgetvalue(br, r, 0)) == ji && !strcmp(PQgetvalue(br, r, 1), gpu)) {
				int eng = atoi(PQgetvalue(br, r, 7));
				struct gl_idle_obs ob = {
					atoll(PQgetvalue(br, r, 2)), atoll(PQgetvalue(br, r, 3)), atoi(PQgetvalue(br, r, 4)),
					atoi(PQgetvalue(br, r, 5)), atoi(PQgetvalue(br, r, 6)),
					eng > 0 ? atof(PQgetvalue(br, r, 8)) / eng : -1, -1, atof(PQgetvalue(br, r, 9)),
					atof(PQgetvalue(br, r, 10))};
				if (ns == spcap) {
					spcap = spcap ? spcap * 2 : 64;
					sp = gl_xrealloc(sp, spcap * sizeof *sp);
				}
				sp[ns] = (struct gl_idle_span){ob.start_s, ob.dur_s, gl_idle_classify(&ob, &p->signal)};
				if (sp[ns].state != GL_IDLE_NODATA && atoll(PQgetvalue(br, r, 12)) > last)
					last = atoll(PQgetvalue(br, r, 12));
				if (!strcmp(PQgetvalue(br, r, 11), "node-estimated"))
					j->estimated = 1;
				ns++;
				r++;
			}
			if (j->ngpus == j->gcap) {
				j->gcap = j->gcap ? j->gcap * 2 : 4;
				j->gpus = gl_xrealloc(j->gpus, j->gcap * sizeof *j->gpus);
			}
			gl_idlerule_eval_gpu(&p->rule, sp, ns, j->start_s, now_s, &j->gpus[j->ngpus]);
			for (size_t k = 0; k < ns; k++) {
				if (sp[k].state != GL_IDLE_IDLE)
					continue;
				if (j->nisp == j->iscap) {
					j->iscap = j->iscap ? j->iscap * 2 : 64;
					j->isp = gl_xrealloc(j->isp, j->iscap * sizeof *j->isp);
				}
				j->isp[j->nisp++] = sp[k];
			}
			/* staleness from the last sample itself, not the bucket's end */
			j->gpus[j->ngpus].stale = !last || last < now_s - p->rule.max_data_age_s;
			if (last > j->last_sample_s)
				j->last_sample_s = last;
			j->ngpus++;
		}
		free(sp);
	}
	/* fixed: busy before the look-back window means not idle since start */
	gl_strbuf_reset(&a1);
	gl_strbuf_reset(&a2);
	gl_strbuf_reset(&a3);
	gl_strbuf_reset(&a4);
	for (size_t i = 0; i < njobs; i++) {
		struct hjob *j = &jobs[i];
		const struct gl_hookpolicy *p;
		int64_t s0, from;
		if (j->pol < 0)
			continue;
		p = &pols[j->pol];
		s0 = j->start_s + p->rule.grace_s;
		from = now_s - lookback_s(p);
		if (p->rule.kind != GL_IDLERULE_FIXED || s0 >= from || !j->ngpus || j->recent_busy)
			continue;
		arr_add_i64(&a1, j->job_pk);
		arr_add_i64(&a2, s0);
		arr_add_i64(&a3, from);
		arr_add_i64(&a4, (int64_t)i);
	}
	if (a1.len) {
		if ((rc = gl_db_query(c, busy_before_sql, 4, (const char *[]){arr_end(&a1), arr_end(&a2), arr_end(&a3), arr_end(&a4)},
				      &q, err)))
			goto out;
		for (int r = 0; r < PQntuples(q); r++)
			jobs[atoll(PQgetvalue(q, r, 0))].busy_before = 1;
		PQclear(q);
		q = NULL;
	}
	/* decide */
	gl_strbuf_reset(&a1);
	gl_strbuf_reset(&a2);
	gl_strbuf_reset(&a3);
	for (size_t i = 0; i < njobs; i++) {
		struct hjob *j = &jobs[i];
		const struct gl_hookpolicy *p;
		size_t expected;
		if (j->pol < 0 || j->recent_busy)
			continue;
		p = &pols[j->pol];
		if (j->busy_before)
			for (size_t g = 0; g < j->ngpus; g++) {
				j->gpus[g].idle_s = 0;
				j->gpus[g].stage = GL_IDLE_STAGE_NONE;
			}
		expected = (size_t)((j->gpu_milli + 999) / 1000);
		gl_idlerule_eval_job(&p->rule, j->gpus, j->ngpus, expected > j->ngpus ? expected : 0, &j->ev);
		if (j->estimated && !j->ev.no_data) {
			/* a node-level estimate may name the wrong job: never act on it */
			j->ev.no_data = 1;
			j->ev.stage = GL_IDLE_STAGE_NONE;
		}
		if (j->ev.no_data) {
			j->cls = J_NODATA;
			if (!j->ngpus)
				snprintf(j->why, sizeof j->why, "no exporter data for the job in the last %lld min",
					 (long long)(lookback_s(p) / 60));
			else if (j->estimated)
				snprintf(j->why, sizeof j->why, "GPU attribution is only estimated (node-level)");
			else if (j->ngpus < expected)
				snprintf(j->why, sizeof j->why, "exporter sees %zu of %zu GPUs", j->ngpus, expected);
			else
				snprintf(j->why, sizeof j->why, "last exporter sample %lld s old (hook.max_data_age_s %lld)",
					 (long long)(now_s - j->last_sample_s), (long long)p->rule.max_data_age_s);
		} else if (j->ev.stage >= GL_IDLE_STAGE_WARN1) {
			j->cls = j->spared ? J_SPARED : J_CANDIDATE;
		} else {
			continue;
		}
		arr_add_i64(&a1, j->cluster_id);
		arr_add_i64(&a2, j->job_pk);
		arr_add_i64(&a3, (int64_t)i);
	}
	if (a1.len) {
		if ((rc = gl_db_query(c, owner_sql, 3, (const char *[]){arr_end(&a1), arr_end(&a2), arr_end(&a3)},
				      &q, err)))
			goto out;
		for (int r = 0; r < PQntuples(q); r++) {
			struct hjob *j = &jobs[atoll(PQgetvalue(q, r, 0))];
			snprintf(j->owner, sizeof j->owner, "%s", PQgetvalue(q, r, 1));
		}
		PQclear(q);
		q = NULL;
		{
			char lo[24];
			fmt_i64(lo, sizeof lo, min_from);
			if ((rc = gl_db_query(c, rates_sql, 5, (const char *[]){a1.p, a2.p, a3.p, lo, now_txt}, &q, err)))
				goto out;
		}
		for (int r = 0, n = PQntuples(q); r < n;) {
			size_t ji = (size_t)atoll(PQgetvalue(q, r, 0)), nr = 0;
			struct hjob *j = &jobs[ji];
			struct gl_jobstats_rate rt[64];
			gl_i128 num;
			for (; r < n && (size_t)atoll(PQgetvalue(q, r, 0)) == ji; r++) {
				if (nr == GL_ARRAY_LEN(rt))
					continue; /* 64 rate changes inside one look-back: the rest unpriced */
				rt[nr].from_us = PQgetisnull(q, r, 1) ? INT64_MIN : atoll(PQgetvalue(q, r, 1));
				rt[nr].to_us = PQgetisnull(q, r, 2) ? INT64_MAX : atoll(PQgetvalue(q, r, 2));
				rt[nr++].micros_per_gpu_hour = atoll(PQgetvalue(q, r, 3));
			}
			num = gl_idlerule_idle_cost_num(&pols[j->pol].rule, j->isp, j->nisp, j->start_s, now_s, rt, nr);
			j->idle_cost = (int64_t)((num + GL_MILLI_GPU_SECONDS_PER_GPU_HOUR / 2) / GL_MILLI_GPU_SECONDS_PER_GPU_HOUR);
		}
		PQclear(q);
		q = NULL;
		if ((rc = gl_db_query(c, stages_sql, 3, (const char *[]){a1.p, a2.p, a3.p}, &q, err)))
			goto out;
		for (int r = 0; r < PQntuples(q); r++) {
			struct hjob *j = &jobs[atoll(PQgetvalue(q, r, 0))];
			enum gl_idle_stage s;
			if (gl_idle_stage_parse(PQgetvalue(q, r, 1), &s))
				continue;
			if (!strcmp(PQgetvalue(q, r, 2), "done"))
				j->done |= 1u << s;
			else
				j->failed |= 1u << s;
		}
		PQclear(q);
		q = NULL;
	}
	if ((rc = gl_db_exec(c, "COMMIT", err)))
		goto out;
	in_txn = 0;
	for (size_t i = 0; i < njobs; i++) {
		struct hjob *j = &jobs[i];
		if (j->cls != J_CANDIDATE)
			continue;
		j->next = next_stage(&pols[j->pol], j);
		acts_planned += j->next == GL_IDLE_STAGE_ACT;
		ncand++;
	}
	/* circuit breaker: a bug or bad data that makes half the fleet idle must
	 * not cancel half the fleet */
	if (acts_planned > cfg->hook_max_actions_per_run) {
		char why[200];
		breaker = 1;
		snprintf(why, sizeof why, "%d actions due, hook.max_actions_per_run is %lld: acting on none", acts_planned,
			 (long long)cfg->hook_max_actions_per_run);
		cJSON *b = cJSON_AddObjectToObject(root, "breaker");
		cJSON_AddBoolToObject(b, "tripped", 1);
		cJSON_AddNumberToObject(b, "actions_due", acts_planned);
		cJSON_AddNumberToObject(b, "max_actions_per_run", (double)cfg->hook_max_actions_per_run);
		cJSON_AddStringToObject(b, "reason", why);
		cJSON_AddItemToArray(errs, cJSON_CreateString(why));
		gl_log(GL_LOG_WARN, "hook: circuit breaker: %s", why);
	} else {
		untripped_breaker(root, acts_planned, cfg->hook_max_actions_per_run);
	}

	/* decisions (audited before anything is run, so a crash leaves them) */
	if (o->audit) {
		struct gl_audit_entry *ents = NULL;
		struct gl_strbuf *det = NULL;
		char (*objs)[256] = NULL;
		size_t ne = 0, cap = 0;
		for (size_t i = 0; i < njobs; i++) {
			struct hjob *j = &jobs[i];
			if (j->cls == J_NONE)
				continue;
			if (ne == cap) {
				cap = cap ? cap * 2 : 64;
				ents = gl_xrealloc(ents, cap * sizeof *ents);
				det = gl_xrealloc(det, cap * sizeof *det);
				objs = gl_xrealloc(objs, cap * sizeof *objs);
			}
			gl_strbuf_init(&det[ne]);
			decision_row(&det[ne], j, pols, !act);
			snprintf(objs[ne], sizeof objs[ne], "job:%s/%s", j->cluster, j->job_id);
			ents[ne] = (struct gl_audit_entry){0, actor, NULL,
							   j->cls == J_CANDIDATE ? "hook.candidate"
							   : j->cls == J_SPARED  ? "hook.spared"
										 : "hook.no_data",
							   objs[ne], "ok", det[ne].p};
			ne++;
		}
		if (ne) {
			/* the run's own row names the mode and counts */
			rc = gl_audit_append_batch(c, ents, ne, NULL, err);
		}
		for (size_t i = 0; i < ne; i++)
			gl_strbuf_fini(&det[i]);
		free(ents);
		free(det);
		free(objs);
		if (rc)
			goto out;
	}

	rx = (struct runctx){c, cfg, actor, now_s, acts, 0};
	for (size_t i = 0; i < njobs; i++) {
		struct hjob *j = &jobs[i];
		if (j->cls != J_CANDIDATE || !act || j->next == GL_IDLE_STAGE_NONE)
			continue;
		if (j->next == GL_IDLE_STAGE_ACT && breaker)
			continue;
		if ((rc = run_stage(&rx, &pols[j->pol], j, j->next, err))) {
			/* the stage is not recorded, so the next run retries it; the
			 * other jobs still get their turn unless the connection is gone */
			if (PQstatus(c) != CONNECTION_OK)
				goto out;
			cJSON_AddItemToArray(errs, cJSON_CreateString(err->msg));
			gl_log(GL_LOG_WARN, "hook: %s/%s: %s", j->cluster, j->job_id, err->msg);
			rx.failures++;
			rc = 0;
		}
	}
	for (size_t i = 0; i < njobs; i++) {
		struct hjob *j = &jobs[i];
		cJSON *arr = j->cls == J_CANDIDATE ? cand : j->cls == J_NODATA ? nod : j->cls == J_SPARED ? spa : NULL;
		if (arr)
			cJSON_AddItemToArray(arr, job_json(j, pols));
	}
	if (act && !breaker && rx.failures == 0)
		*exit_code = GL_HOOK_EXIT_OK;
	else if (act)
		*exit_code = GL_HOOK_EXIT_ERROR;
	else
		*exit_code = ncand ? GL_HOOK_EXIT_CANDIDATES : GL_HOOK_EXIT_OK;
	if (rx.failures) {
		char m[120];
		snprintf(m, sizeof m, "%d command(s) failed; they are retried by the next run", rx.failures);
		cJSON_AddItemToArray(errs, cJSON_CreateString(m));
	}
	goto done;
skipped:
	*exit_code = GL_HOOK_EXIT_OK;
done:
	if (o->audit) {
		/* one row per run: what it was asked and what it found */
		run_audited = 1;
		if ((rc = run_row(c, actor, o, act, root, breaker, *exit_code, NULL, err)))
			goto out;
	}
	cJSON_AddNumberToObject(root, "exit_code", *exit_code);
	*report = root;
	root = NULL;
out:
	if (in_txn) {
		struct gl_err e2 = {0};
		(void)!gl_db_exec(c, "ROLLBACK", &e2);
	}
	if (rc && root && o->audit && !run_audited) {
		/* a run that started and stopped on an error is audited too: it
		 * may have run commands before it stopped */
		struct gl_err e2 = {0};
		if (run_row(c, actor, o, act, root, breaker, GL_HOOK_EXIT_ERROR, err ? err->msg : "", &e2))
			gl_log(GL_LOG_WARN, "hook: could not audit the failed run: %s", e2.msg);
	}
	if (locked) {
		struct gl_err e2 = {0};
		PGresult *u = NULL;
		snprintf(lock_sql, sizeof lock_sql, "SELECT pg_advisory_unlock(%lld)", (long long)GL_HOOK_LOCK_KEY);
		(void)!gl_db_query(c, lock_sql, 0, NULL, &u, &e2);
		PQclear(u);
	}
	if (lock_fd >= 0)
		close(lock_fd);
	for (size_t i = 0; jobs && i < njobs; i++) {
		for (size_t k = 0; k < jobs[i].nlabels; k++)
			free(jobs[i].labels[k]);
		free(jobs[i].labels);
		free(jobs[i].gpus);
		free(jobs[i].isp);
	}
	free(jobs);
	for (size_t i = 0; allows && i < npols; i++)
		allow_fini(&allows[i]);
	free(allows);
	gl_hookpolicy_free(pols, npols);
	PQclear(jr);
	PQclear(br);
	PQclear(q);
	gl_strbuf_fini(&a1);
	gl_strbuf_fini(&a2);
	gl_strbuf_fini(&a3);
	gl_strbuf_fini(&a4);
	cJSON_Delete(root);
	if (rc && *exit_code != GL_HOOK_EXIT_USAGE)
		*exit_code = GL_HOOK_EXIT_ERROR;
	return rc;
}

/* ---- actions recorded from outside, and the list ---- */

/* 1 when name is one of the configured hook.policies */
static int policy_configured(const struct gl_config *cfg, const char *name)
{
	for (size_t i = 0; cfg && i < cfg->n_hook_policies; i++)
		if (!strcmp(cfg->hook_policies[i].name, name))
			return 1;
	return 0;
}

static int first_nul(const char *path, void *ud)
{
	snprintf(ud, 208, "%s", path);
	return 1;
}

/* What a client writes reaches hook_actions and an audit row: bounded
 * (include/gl/bounds.h), 400 naming the field. A hook token wrote a
 * 900 kB audit row through policy. */
static int record_fits(const char *cluster, const char *job_id, const char *policy, const char *owner,
		       const char **param, struct gl_err *err)
{
	const struct {
		const char *name, *v;
		enum gl_bound k;
	} b[] = {{"cluster", cluster, GL_BOUND_CLUSTER}, {"job_id", job_id, GL_BOUND_JOB_ID},
		 {"policy", policy, GL_BOUND_NAME}, {"owner", owner, GL_BOUND_NAME}};
	char why[160];
	for (size_t i = 0; i < GL_ARRAY_LEN(b); i++)
		if (b[i].v && gl_bound_check(b[i].k, strlen(b[i].v), why, sizeof why)) {
			*param = b[i].name;
			return gl_err_set(err, GL_EINVAL, "%s: %s", b[i].name, why);
		}
	return 0;
}

int gl_hook_record(PGconn *c, const struct gl_config *cfg, const char *body, size_t len, const char *actor,
		   int64_t now_s, cJSON **out, const char **param, struct gl_err *err)
{
	static const char *const fields[] = {"cluster", "job_id", "policy", "stage", "ok", "exit_status", "command", "owner"};
	cJSON *in = NULL, *f, *argv_j;
	const char *cluster, *end = NULL, *job_id, *policy, *stage, *owner = NULL;
	struct gl_strbuf argv_lit = GL_STRBUF_INIT, detail = GL_STRBUF_INIT;
	PGresult *q = NULL;
	char status_s[16], object[256];
	int rc = 0, ok, have_status = 0;
	enum gl_idle_stage st;
	char *txt;

	*out = NULL;
	*param = NULL;
	/* PostgreSQL refuses text that is not UTF-8: that is the client's
	 * mistake (400), not a database failure (5xx) */
	if (gl_utf8_validate(body, len, NULL)) {
		*param = "body";
		rc = gl_err_set(err, GL_EINVAL, "body: not valid UTF-8");
		goto out;
	}
	in = cJSON_ParseWithLengthOpts(body, len, &end, 0);
	if (!cJSON_IsObject(in)) {
		*param = "body";
		rc = gl_err_set(err, GL_EINVAL, "body: expected a JSON object");
		goto out;
	}
	/* What is not read must not pass as recorded: text after the object
	 * (two bodies glued), a misspelt field ("exit_code": its status was
	 * stored as unknown) or a repeated one (only the first was read). */
	while ((size_t)(end - body) < len && (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r'))
		end++;
	if ((size_t)(end - body) < len) {
		*param = "body";
		rc = gl_err_set(err, GL_EINVAL, "body: data after the JSON object at byte %zu", (size_t)(end - body));
		goto out;
	}
	{
		/* cJSON ends a string at \u0000: "a\u0000b" would be recorded as "a" */
		char where[208] = "";
		if (gl_jsonscan_nul(body, len, first_nul, where)) {
			size_t k = 0;
			/* the field the path starts in: "command[1]" is command's */
			while (k < GL_ARRAY_LEN(fields) && (strncmp(where, fields[k], strlen(fields[k])) ||
							    !strchr("[.", where[strlen(fields[k])])))
				k++;
			*param = k < GL_ARRAY_LEN(fields) ? fields[k] : "body";
			rc = gl_err_set(err, GL_EINVAL, "%s%s: holds \\u0000 (a NUL, which would cut the text there)",
					k < GL_ARRAY_LEN(fields) ? "" : "body: ", where);
			goto out;
		}
	}
	for (cJSON *a = in->child; a; a = a->next) {
		size_t k = 0;
		while (k < GL_ARRAY_LEN(fields) && strcmp(a->string, fields[k]))
			k++;
		if (k == GL_ARRAY_LEN(fields)) {
			*param = "body";
			rc = gl_err_set(err, GL_EINVAL, "body: unknown field '%s' (%s, %s, %s, %s, %s, %s, %s or %s)",
					a->string, fields[0], fields[1], fields[2], fields[3], fields[4], fields[5],
					fields[6], fields[7]);
			goto out;
		}
		for (cJSON *b = in->child; b != a; b = b->next)
			if (!strcmp(b->string, a->string)) {
				*param = fields[k];
				rc = gl_err_set(err, GL_EINVAL, "%s: given more than once", fields[k]);
				goto out;
			}
	}
#define STR(name, dst, required)                                                                                     \
	f = cJSON_GetObjectItemCaseSensitive(in, name);                                                               \
	if (f && !cJSON_IsString(f)) {                                                                                \
		*param = name;                                                                                        \
		rc = gl_err_set(err, GL_EINVAL, "%s: expected a string", name);                                        \
		goto out;                                                                                             \
	}                                                                                                             \
	dst = f ? f->valuestring : NULL;                                                                              \
	if (required && (!dst || !*dst)) {                                                                            \
		*param = name;                                                                                        \
		rc = gl_err_set(err, GL_EINVAL, "%s: required", name);                                                 \
		goto out;                                                                                             \
	}
	STR("cluster", cluster, 1)
	STR("job_id", job_id, 1)
	STR("policy", policy, 1)
	STR("stage", stage, 1)
	STR("owner", owner, 0)
#undef STR
	if ((rc = record_fits(cluster, job_id, policy, owner, param, err)))
		goto out;
	/* not known is NULL, as the list shows it (null), never "" */
	if (owner && !*owner)
		owner = NULL;
	if (gl_idle_stage_parse(stage, &st) || st == GL_IDLE_STAGE_NONE) {
		*param = "stage";
		rc = gl_err_set(err, GL_EINVAL, "stage: '%s' is not warn1, warn2 or act", stage);
		goto out;
	}
	f = cJSON_GetObjectItemCaseSensitive(in, "ok");
	if (!cJSON_IsBool(f)) {
		*param = "ok";
		rc = gl_err_set(err, GL_EINVAL, "ok: required, true or false");
		goto out;
	}
	ok = cJSON_IsTrue(f);
	f = cJSON_GetObjectItemCaseSensitive(in, "exit_status");
	if (f && !cJSON_IsNull(f)) {
		/* range first: converting a double outside int is undefined */
		if (!cJSON_IsNumber(f) || !(f->valuedouble >= INT_MIN && f->valuedouble <= INT_MAX) ||
		    f->valuedouble != (int)f->valuedouble) {
			*param = "exit_status";
			rc = gl_err_set(err, GL_EINVAL, "exit_status: expected an integer");
			goto out;
		}
		have_status = 1;
		snprintf(status_s, sizeof status_s, "%d", (int)f->valuedouble);
	}
	argv_j = cJSON_GetObjectItemCaseSensitive(in, "command");
	{
		/* a command as one string or as argv; stored as argv, blanked
		 * (a controller's command may carry a credential, as the hook's
		 * own may): the row and the audit row keep only what is shown */
		size_t n = 0;
		char **argv = NULL;
		if (cJSON_IsString(argv_j)) {
			argv = gl_xcalloc(2, sizeof *argv);
			argv[n++] = gl_xstrdup(argv_j->valuestring);
		} else if (cJSON_IsArray(argv_j)) {
			cJSON *e;
			argv = gl_xcalloc((size_t)cJSON_GetArraySize(argv_j) + 1, sizeof *argv);
			cJSON_ArrayForEach(e, argv_j)
			{
				if (!cJSON_IsString(e)) {
					gl_hookpolicy_argv_free(argv);
					*param = "command";
					rc = gl_err_set(err, GL_EINVAL, "command: expected a string or an array of strings");
					goto out;
				}
				argv[n++] = gl_xstrdup(e->valuestring);
			}
		} else if (argv_j && !cJSON_IsNull(argv_j)) {
			*param = "command";
			rc = gl_err_set(err, GL_EINVAL, "command: expected a string or an array of strings");
			goto out;
		} else {
			argv = gl_xcalloc(1, sizeof *argv);
		}
		{
			/* the command line as a whole is one bounded text */
			size_t total = 0;
			char why[160];
			for (size_t i = 0; i < n; i++)
				total += strlen(argv[i]) + 1;
			if (gl_bound_check(GL_BOUND_TEXT, total, why, sizeof why)) {
				gl_hookpolicy_argv_free(argv);
				*param = "command";
				rc = gl_err_set(err, GL_EINVAL, "command: %s", why);
				goto out;
			}
		}
		{
			/* one string is an argv of one element, as stored: blanked
			 * alike here and by `db redact` (a second pass changes
			 * nothing) */
			char **shown = gl_redact_argv((const char *const *)argv);
			if (cJSON_IsString(argv_j)) {
				cJSON_SetValuestring(argv_j, shown[0]);
			} else if (cJSON_IsArray(argv_j)) {
				cJSON *e = argv_j->child;
				for (size_t i = 0; e && shown[i]; i++, e = e->next)
					cJSON_SetValuestring(e, shown[i]);
			}
			argv_text((const char *const *)shown, &argv_lit);
			gl_redact_argv_free(shown);
		}
		gl_hookpolicy_argv_free(argv);
	}
	{
		cJSON *d = cJSON_Duplicate(in, 1);
		cJSON_AddStringToObject(d, "source", "api");
		txt = cJSON_PrintUnformatted(d);
		gl_strbuf_puts(&detail, txt);
		free(txt);
		cJSON_Delete(d);
	}
	snprintf(object, sizeof object, "job:%s/%s", cluster, job_id);
	if ((rc = gl_db_exec(c, "BEGIN", err)))
		goto out;
	{
		const char *pr[] = {cluster, job_id, owner, policy, gl_idle_stage_name(st), argv_lit.p, have_status ? status_s : NULL,
				    ok ? "true" : "false", actor};
		/* the job, when known: the running attempt of that id first */
		rc = gl_db_query(c,
				 "WITH j AS (SELECT jb.cluster_id, jb.job_pk FROM jobs jb JOIN clusters cl USING (cluster_id)"
				 "  WHERE cl.name = $1 AND jb.job_id = $2 ORDER BY (jb.end_at IS NULL) DESC, jb.start_at DESC NULLS LAST LIMIT 1)"
				 " INSERT INTO hook_actions (cluster_id, cluster, job_pk, job_id, owner, policy, stage, argv,"
				 " exit_status, ok, source, actor)"
				 " SELECT (SELECT cluster_id FROM j), $1, (SELECT job_pk FROM j), $2, $3, $4, $5, $6::text[], $7::integer,"
				 " $8::boolean, 'api', $9"
				 " RETURNING action_id, extract(epoch FROM at)::bigint, cluster_id, job_pk",
				 9, pr, &q, err);
		if (rc)
			goto rollback;
	}
	if (ok && !PQgetisnull(q, 0, 2) && !PQgetisnull(q, 0, 3)) {
		PGresult *u = NULL;
		const char *pr[] = {PQgetvalue(q, 0, 2), PQgetvalue(q, 0, 3), gl_idle_stage_name(st), policy,
				    have_status ? status_s : NULL};
		/* done elsewhere: the hook must not repeat it */
		rc = gl_db_query(c,
				 "INSERT INTO hook_stages (cluster_id, job_pk, stage, policy, status, attempts, exit_status)"
				 " VALUES ($1, $2, $3, $4, 'done', 1, $5) ON CONFLICT (cluster_id, job_pk, stage) DO UPDATE SET"
				 " status = 'done', attempts = hook_stages.attempts + 1, last_at = now(), exit_status = EXCLUDED.exit_status,"
				 " error = NULL",
				 5, pr, &u, err);
		PQclear(u);
		if (rc)
			goto rollback;
	}
	if ((rc = gl_audit_append(c, actor, NULL, "hook.record", object, ok ? "ok" : "error", detail.p, err)))
		goto rollback;
	if ((rc = gl_db_exec(c, "COMMIT", err)))
		goto out;
	*out = cJSON_CreateObject();
	cJSON_AddNumberToObject(*out, "action_id", atof(PQgetvalue(q, 0, 0)));
	{
		char at[32];
		gl_time_format(atoll(PQgetvalue(q, 0, 1)), at, sizeof at);
		cJSON_AddStringToObject(*out, "at", at);
	}
	cJSON_AddBoolToObject(*out, "job_known", !PQgetisnull(q, 0, 3));
	cJSON_AddBoolToObject(*out, "policy_known", policy_configured(cfg, policy));
	(void)now_s;
	goto out;
rollback:
	{
		struct gl_err e2 = {0};
		(void)!gl_db_exec(c, "ROLLBACK", &e2);
	}
out:
	PQclear(q);
	cJSON_Delete(in);
	gl_strbuf_fini(&argv_lit);
	gl_strbuf_fini(&detail);
	return rc;
}

int gl_hook_actions_list(PGconn *c, const struct gl_config *cfg, int64_t from_s, int64_t to_s, long limit,
			 cJSON **out, struct gl_err *err)
{
	char a[24], b[24], l[24];
	PGresult *q = NULL;
	cJSON *root, *arr;
	int rc;

	*out = NULL;
	fmt_i64(a, sizeof a, from_s);
	fmt_i64(b, sizeof b, to_s);
	snprintf(l, sizeof l, "%ld", limit);
	if ((rc = gl_db_query(c,
			      "SELECT extract(epoch FROM at)::bigint, cluster, job_id, nullif(owner, ''), policy, stage,"
			      " array_to_string(argv, ' '), array_to_json(argv)::text, exit_status, ok, source, actor,"
			      " coalesce(stderr, '')"
			      " FROM hook_actions WHERE at >= to_timestamp($1) AND at < to_timestamp($2)"
			      " ORDER BY at DESC, action_id DESC LIMIT $3",
			      3, (const char *[]){a, b, l}, &q, err)))
		return rc;
	root = cJSON_CreateObject();
	arr = cJSON_AddArrayToObject(root, "actions");
	for (int r = 0; r < PQntuples(q); r++) {
		cJSON *o = cJSON_CreateObject();
		char at[32];
		gl_time_format(atoll(PQgetvalue(q, r, 0)), at, sizeof at);
		cJSON_AddStringToObject(o, "at", at);
		cJSON_AddStringToObject(o, "cluster", PQgetvalue(q, r, 1));
		cJSON_AddStringToObject(o, "job_id", PQgetvalue(q, r, 2));
		if (PQgetisnull(q, r, 3))
			cJSON_AddNullToObject(o, "owner");
		else
			cJSON_AddStringToObject(o, "owner", PQgetvalue(q, r, 3));
		cJSON_AddStringToObject(o, "policy", PQgetvalue(q, r, 4));
		cJSON_AddBoolToObject(o, "policy_known", policy_configured(cfg, PQgetvalue(q, r, 4)));
		cJSON_AddStringToObject(o, "stage", PQgetvalue(q, r, 5));
		cJSON_AddStringToObject(o, "command", PQgetvalue(q, r, 6));
		cJSON_AddItemToObject(o, "argv", cJSON_Parse(PQgetvalue(q, r, 7)));
		if (PQgetisnull(q, r, 8))
			cJSON_AddNullToObject(o, "exit_status");
		else
			cJSON_AddNumberToObject(o, "exit_status", atoi(PQgetvalue(q, r, 8)));
		cJSON_AddBoolToObject(o, "ok", PQgetvalue(q, r, 9)[0] == 't');
		cJSON_AddStringToObject(o, "source", PQgetvalue(q, r, 10));
		cJSON_AddStringToObject(o, "actor", PQgetvalue(q, r, 11));
		cJSON_AddStringToObject(o, "stderr", PQgetvalue(q, r, 12));
		cJSON_AddItemToArray(arr, o);
	}
	PQclear(q);
	*out = root;
	return 0;
}
