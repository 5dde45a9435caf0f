/* The idle-GPU shutdown hook (see include/gl/hook.h, docs/hook.md).
 *
 * A run reads (store/hookstore: the running GPU jobs and their rollups in
 * one snapshot), decides (domain/hookpolicy for scope and exclusions,
 * domain/idlerule for the window rules), then acts (the commands, each
 * stage recorded by the store). The run's state is one struct run; each
 * phase is a function of it. */
#include "gl/hook.h"
#include "gl/audit.h"
#include "gl/bounds.h"
#include "gl/cost.h"
#include "gl/hookpolicy.h"
#include "gl/hookstore.h"
#include "gl/idlerule.h"
#include "gl/jsonscan.h"
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

enum jclass { J_NONE = 0, J_CANDIDATE, J_NODATA, J_SPARED };

/* A running job as the run judges it. */
struct hjob {
	const struct gl_hookstore_job *row; /* in the run's job list */
	int pol;                 /* policy index, -1: none in scope */
	int spared;
	char why[200];
	int estimated, busy_before;
	int recent_busy;         /* busy in the last min(t1, max_data_age): settled, not read */
	int64_t last_sample_s;
	struct gl_idlerule_gpu_eval *gpus;
	size_t ngpus, gcap;
	struct gl_idlerule_job_eval ev;
	enum jclass cls;
	char owner[128];
	struct gl_idlerule_span *isp; /* the idle spans of all its GPUs, priced once the rates are known */
	size_t nisp, iscap;
	int64_t idle_cost;       /* micro-units; -1: no rate of its model in the look-back */
	unsigned done, failed;   /* bit per stage */
	enum gl_idlerule_stage next; /* stage to run now; NONE = nothing */
};

struct allow {
	struct gl_hookpolicy_list users, accounts, namespaces, jobs;
};

/* One run: what it was asked, what it read and decided, its report. */
struct run {
	struct gl_store *c;
	const struct gl_config *cfg;
	const struct gl_hook_opts *o;
	int64_t now_s;
	const char *actor;
	struct gl_hookpolicy *pols;
	size_t npols;
	struct allow *allows;    /* one per policy */
	struct gl_hookstore_job_list rows;
	struct hjob *jobs;       /* one per row */
	size_t njobs;
	int64_t min_from;        /* the earliest bucket read: the rates are looked up from there */
	cJSON *root, *cand, *nod, *spa, *acts, *errs;
	int breaker;             /* more actions due than hook.max_actions_per_run */
	int acts_planned;
	int failures;            /* commands that failed (or could not be recorded) */
	size_t ncand;
	int lock_fd, locked;     /* hook.lock_file, the database lock */
};

/* ---- the allow-list ---- */

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

static int allowed(const struct allow *a, const struct gl_hookstore_job *j, char *why, size_t n)
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

static int64_t lookback_s(const struct gl_hookpolicy *p)
{
	/* the action threshold, the data lag allowed, and a bucket or two */
	return p->rule.t3_s + p->rule.max_data_age_s + 900;
}

static void fmt_i64(char *b, size_t n, int64_t v)
{
	snprintf(b, n, "%lld", (long long)v);
}

/* ---- the report ---- */

static cJSON *job_json(const struct hjob *j, const struct gl_hookpolicy *pols)
{
	cJSON *o = cJSON_CreateObject();
	const struct gl_hookpolicy *p = &pols[j->pol];
	const struct gl_hookstore_job *r = j->row;
	cJSON_AddStringToObject(o, "cluster", r->cluster);
	cJSON_AddStringToObject(o, "job_id", r->job_id);
	cJSON_AddStringToObject(o, "job_name", r->name);
	cJSON_AddStringToObject(o, "user", r->user);
	cJSON_AddStringToObject(o, "account", r->account);
	cJSON_AddStringToObject(o, "namespace", r->ns);
	cJSON_AddStringToObject(o, "owner", j->owner);
	cJSON_AddNumberToObject(o, "gpus", (double)r->gpu_micro / (double)GL_GPU_MICRO);
	cJSON_AddNumberToObject(o, "idle_gpus", (double)j->ev.idle_gpus);
	cJSON_AddNumberToObject(o, "idle_minutes", (double)(j->ev.idle_s / 60));
	cJSON_AddNumberToObject(o, "idle_gpu_seconds", (double)j->ev.idle_gpu_s);
	if (j->idle_cost >= 0)
		cJSON_AddNumberToObject(o, "idle_cost_micros", (double)j->idle_cost);
	else
		cJSON_AddNullToObject(o, "idle_cost_micros");
	cJSON_AddStringToObject(o, "rule", gl_idlerule_kind_name(p->rule.kind));
	cJSON_AddStringToObject(o, "stage", gl_idlerule_stage_name(j->ev.stage));
	cJSON_AddStringToObject(o, "policy", p->name);
	if (j->cls == J_CANDIDATE) {
		cJSON_AddStringToObject(o, "next_stage", gl_idlerule_stage_name(j->next));
		/* a stage that failed in an earlier run is retried, and said so */
		cJSON_AddBoolToObject(o, "retry", j->next != GL_IDLERULE_STAGE_NONE && (j->failed & (1u << j->next)) != 0);
		cJSON *d = cJSON_AddArrayToObject(o, "done_stages");
		for (int s = GL_IDLERULE_STAGE_WARN1; s <= GL_IDLERULE_STAGE_ACT; s++)
			if (j->done & (1u << s))
				cJSON_AddItemToArray(d, cJSON_CreateString(gl_idlerule_stage_name((enum gl_idlerule_stage)s)));
	} else {
		cJSON_AddStringToObject(o, "reason", j->why);
	}
	return o;
}

/* ---- acting: one stage of one job ---- */

/* A command as run and as kept. */
struct cmd {
	char **argv;             /* as the template made it: what runs */
	char **shown;            /* credentials blanked: what is kept and shown */
	struct gl_strbuf disp;   /* shown, joined by spaces */
	int ok, have_status, status;
	const char *stderr_txt;  /* cleaned: valid UTF-8, no control characters, credentials blanked */
	char clean[GL_AUDIT_FIELD_MAX];
};

static void cmd_fini(struct cmd *m)
{
	gl_hookpolicy_argv_free(m->argv);
	gl_redact_argv_free(m->shown);
	gl_strbuf_fini(&m->disp);
}

static const struct gl_hookpolicy_list *stage_template(const struct gl_hookpolicy *p, const struct hjob *j,
						       enum gl_idlerule_stage st)
{
	if (st != GL_IDLERULE_STAGE_ACT)
		return &p->warn_argv;
	return !strcmp(j->row->kind, "kubernetes") ? &p->kube_argv : &p->slurm_argv;
}

/* The template with the job's values in place. */
static char **expand(const struct run *R, const struct gl_hookpolicy *p, const struct hjob *j, enum gl_idlerule_stage st)
{
	const struct gl_hookstore_job *r = j->row;
	char idle_min[24], gpus[32], gpu_hours[32], cost[32], at[32];
	int64_t cost_micros = j->idle_cost > 0 ? j->idle_cost : 0;
	/* warnings name when the action will come: t3 minus the idle time so far */
	int64_t act_at = R->now_s + (p->rule.t3_s > j->ev.idle_s ? p->rule.t3_s - j->ev.idle_s : 0);

	fmt_i64(idle_min, sizeof idle_min, j->ev.idle_s / 60);
	snprintf(gpus, sizeof gpus, "%g", (double)r->gpu_micro / (double)GL_GPU_MICRO);
	snprintf(gpu_hours, sizeof gpu_hours, "%.2f", (double)j->ev.idle_gpu_s / 3600.0);
	/* the currency's decimals, half up, as the reports and budget alerts
	 * write money: cutting at two decimals truncated USD and gave JPY two
	 * decimals it does not have */
	gl_cost_format(cost_micros, gl_cost_minor(R->cfg->currency), cost, sizeof cost);
	gl_timeutil_format(act_at, at, sizeof at);
	const struct gl_tmpl_var vars[] = {
		{"job_id", r->job_id},		 {"cluster", r->cluster},	  {"user", r->user},
		{"account", r->account},	 {"owner", j->owner},		  {"namespace", r->ns},
		{"pod", r->job_id},		 {"job_name", r->name},		  {"partition", r->partition},
		{"policy", p->name},		 {"stage", gl_idlerule_stage_name(st)}, {"idle_minutes", idle_min},
		{"gpus", gpus},			 {"gpu_hours", gpu_hours},	  {"cost", cost},
		{"currency", R->cfg->currency}, {"action_at", at},
	};
	return gl_hookpolicy_expand(stage_template(p, j, st), vars, GL_ARRAY_LEN(vars));
}

/* Keeps what a failure says: blanked (a tool's error often repeats its
 * arguments) and cleaned for the audit row and the database. */
static void keep_stderr(struct cmd *m, const char *text)
{
	struct gl_strbuf errb = GL_STRBUF_INIT;
	gl_redact_secrets(text, &errb);
	gl_audit_clean(gl_strbuf_cstr(&errb), m->clean, sizeof m->clean);
	gl_strbuf_fini(&errb);
	m->stderr_txt = m->clean;
}

/* Runs m->argv, unless an argument from job data would be an option: that
 * one is recorded and retried like any failure, visible, never run. */
static void execute(const struct run *R, const struct gl_hookpolicy_list *tmpl, struct cmd *m)
{
	struct gl_proc_result res;
	struct gl_proc_opts po = {0};
	struct gl_err perr = {0};
	int dash;

	m->ok = 1;
	m->stderr_txt = "";
	if (!m->argv[0])
		return;
	if ((dash = gl_hookpolicy_dash_arg(tmpl, m->argv)) >= 0) {
		char refused[300];
		m->ok = 0;
		snprintf(refused, sizeof refused,
			 "not run: argument %d ('%.60s') would start with '-' from job data in '%.60s': an option to %.60s",
			 dash, m->argv[dash], tmpl->v[dash], m->argv[0]);
		keep_stderr(m, refused);
		return;
	}
	po.timeout_s = (int)R->cfg->hook_command_timeout_s;
	if (gl_proc_run((const char *const *)m->argv, &po, &res, &perr)) {
		m->ok = 0;
		keep_stderr(m, perr.msg);
		return;
	}
	m->ok = res.exited && res.status == 0 && !res.timed_out;
	m->have_status = res.exited && !res.timed_out;
	m->status = res.status;
	if (res.timed_out) {
		keep_stderr(m, "timed out");
		return;
	}
	/* a command's stderr is whatever bytes it wrote, and the 1 KiB
	 * excerpt may end inside a character: PostgreSQL refuses invalid
	 * UTF-8 in text and json, which would abort the whole run with the
	 * failure unrecorded. One cleaned copy serves every use below. */
	for (char *q = res.stderr_excerpt; *q; q++)
		if (*q == '\n' || *q == '\r' || *q == '\t')
			*q = ' ';
	keep_stderr(m, res.stderr_excerpt);
}

/* The audit row's detail of a stage: what ran, how it ended. */
static char *stage_detail(const struct gl_hookpolicy *p, const struct hjob *j, enum gl_idlerule_stage st,
			  const struct cmd *m)
{
	cJSON *d = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(d, "argv");
	char *txt;
	for (size_t i = 0; m->shown[i]; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(m->shown[i]));
	cJSON_AddStringToObject(d, "policy", p->name);
	cJSON_AddStringToObject(d, "stage", gl_idlerule_stage_name(st));
	if (m->have_status)
		cJSON_AddNumberToObject(d, "exit_status", m->status);
	else if (m->argv[0])
		cJSON_AddNullToObject(d, "exit_status");
	cJSON_AddStringToObject(d, "stderr", m->stderr_txt);
	cJSON_AddNumberToObject(d, "idle_minutes", (double)(j->ev.idle_s / 60));
	cJSON_AddNumberToObject(d, "idle_gpu_seconds", (double)j->ev.idle_gpu_s);
	txt = cJSON_PrintUnformatted(d);
	cJSON_Delete(d);
	return txt;
}

/* The stage's state, hook_actions row and audit row, in one transaction. */
static int record_stage(const struct run *R, const struct gl_hookpolicy *p, const struct hjob *j,
			enum gl_idlerule_stage st, const struct cmd *m, struct gl_err *err)
{
	const struct gl_hookstore_job *r = j->row;
	struct gl_hookstore_action a = {r->cluster_id, r->job_pk, r->cluster, r->job_id, j->owner, p->name,
					gl_idlerule_stage_name(st), (const char *const *)m->shown, m->have_status,
					m->status, m->ok, m->stderr_txt, R->actor, j->ev.idle_s, j->ev.idle_gpu_s,
					j->idle_cost >= 0 ? j->idle_cost : -1};
	char action[32], object[256], *detail = stage_detail(p, j, st, m);
	int rc;
	snprintf(action, sizeof action, "hook.%s", st == GL_IDLERULE_STAGE_ACT ? "act" : "warn");
	snprintf(object, sizeof object, "job:%s/%s", r->cluster, r->job_id);
	rc = gl_hookstore_action_record(R->c, &a, action, object, detail, err);
	free(detail);
	return rc;
}

static void report_action(struct run *R, const struct gl_hookpolicy *p, const struct hjob *j, enum gl_idlerule_stage st,
			  const struct cmd *m)
{
	cJSON *row = cJSON_CreateObject();
	const char *disp = m->disp.p ? m->disp.p : "";
	cJSON_AddStringToObject(row, "cluster", j->row->cluster);
	cJSON_AddStringToObject(row, "job_id", j->row->job_id);
	cJSON_AddStringToObject(row, "owner", j->owner);
	cJSON_AddStringToObject(row, "policy", p->name);
	cJSON_AddStringToObject(row, "stage", gl_idlerule_stage_name(st));
	cJSON_AddStringToObject(row, "command", disp);
	if (m->have_status)
		cJSON_AddNumberToObject(row, "exit_status", m->status);
	else
		cJSON_AddNullToObject(row, "exit_status");
	cJSON_AddBoolToObject(row, "ok", m->ok);
	if (!m->ok)
		cJSON_AddStringToObject(row, "error", m->stderr_txt);
	cJSON_AddItemToArray(R->acts, row);
	if (!m->ok)
		gl_log(GL_LOG_WARN, "hook: %s %s/%s failed (%s): %s", gl_idlerule_stage_name(st), j->row->cluster,
		       j->row->job_id, disp, m->stderr_txt);
}

/* Runs one stage of one job: the command (if any), then the record. The
 * command runs as the template made it; what is kept of it (hook_actions
 * argv and stderr, hook_stages.error, the audit row, the log line, the
 * report) is blanked by gl_redact_argv / gl_redact_secrets: a template may
 * carry a credential (kubectl --token, curl -u), and those are read by every
 * viewer of /v1/hook/actions and kept for good in the audit chain. A retry
 * expands the template again; nothing reads a stored argv to run it. */
static int run_stage(struct run *R, const struct gl_hookpolicy *p, struct hjob *j, enum gl_idlerule_stage st,
		     struct gl_err *err)
{
	struct cmd m = {0};
	int rc;

	m.argv = expand(R, p, j, st);
	execute(R, stage_template(p, j, st), &m);
	m.shown = gl_redact_argv((const char *const *)m.argv);
	for (size_t i = 0; m.shown[i]; i++) {
		if (i)
			gl_strbuf_putc(&m.disp, ' ');
		gl_strbuf_puts(&m.disp, m.shown[i]);
	}
	if (!(rc = record_stage(R, p, j, st, &m, err))) {
		j->done |= m.ok ? 1u << st : 0;
		if (!m.ok)
			R->failures++;
		report_action(R, p, j, st, &m);
	}
	cmd_fini(&m);
	return rc;
}

/* ---- reading and deciding ---- */

/* The policy judging each job (the first whose scope holds it), and
 * whether an exclusion, the allow-list or its age spares it. */
static void scope(struct run *R)
{
	for (size_t i = 0; i < R->njobs; i++) {
		struct hjob *j = &R->jobs[i];
		const struct gl_hookstore_job *r = j->row;
		struct gl_hookpolicy_job hj = {r->cluster, r->kind, r->partition, r->qos, r->account, r->user, r->ns,
					       (const char *const *)r->labels, r->nlabels};
		j->pol = -1;
		j->idle_cost = -1;
		snprintf(j->owner, sizeof j->owner, "__unallocated__");
		for (size_t k = 0; k < R->npols; k++)
			if (gl_hookpolicy_in_scope(&R->pols[k], &hj)) {
				j->pol = (int)k;
				break;
			}
		if (j->pol < 0 || (R->o->policy && strcmp(R->pols[j->pol].name, R->o->policy))) {
			j->pol = -1;
			continue;
		}
		if (gl_hookpolicy_excluded(&R->pols[j->pol], &hj, j->why, sizeof j->why) ||
		    allowed(&R->allows[j->pol], r, j->why, sizeof j->why))
			j->spared = 1;
		else if (R->now_s - r->start_s < R->pols[j->pol].min_age_s) {
			j->spared = 1;
			snprintf(j->why, sizeof j->why, "min_age_min: started %lld min ago",
				 (long long)((R->now_s - r->start_s) / 60));
		}
	}
}

/* Busy in the last min(t1, max_data_age): no rule can reach a stage and the
 * data is fresh, so one probe of the busy index settles most jobs. A
 * multi-GPU job with gpu_fraction < 1 may be idle on enough other GPUs: it
 * is always read in full. */
static int probe_recent(struct run *R, struct gl_err *err)
{
	struct gl_hookstore_probe *pr = gl_xcalloc(R->njobs ? R->njobs : 1, sizeof *pr);
	struct gl_hookstore_tag_list hits = {0};
	size_t n = 0;
	int64_t lo = R->now_s;
	int rc;
	for (size_t i = 0; i < R->njobs; i++) {
		const struct hjob *j = &R->jobs[i];
		const struct gl_hookpolicy *p;
		int64_t w;
		if (j->pol < 0)
			continue;
		p = &R->pols[j->pol];
		w = p->rule.t1_s < p->rule.max_data_age_s ? p->rule.t1_s : p->rule.max_data_age_s;
		if (j->row->gpu_micro > GL_GPU_MICRO && p->rule.gpu_fraction < 1)
			continue;
		pr[n++] = (struct gl_hookstore_probe){j->row->job_pk, R->now_s - w, 0, i};
		if (R->now_s - w < lo)
			lo = R->now_s - w;
	}
	rc = gl_hookstore_recent_busy(R->c, pr, n, R->now_s, lo, &hits, err);
	for (size_t k = 0; k < hits.n; k++)
		R->jobs[hits.v[k]].recent_busy = 1;
	gl_hookstore_tag_list_fini(&hits);
	free(pr);
	return rc;
}

/* One GPU of a job: its spans judged by the rule, its idle spans kept for
 * pricing, its staleness from the last sample itself (not the bucket's end). */
static void eval_gpu(const struct run *R, struct hjob *j, const struct gl_hookpolicy *p, const struct gl_idlerule_span *sp,
		     size_t ns, int64_t last)
{
	if (j->ngpus == j->gcap) {
		j->gcap = j->gcap ? j->gcap * 2 : 4;
		j->gpus = gl_xrealloc(j->gpus, j->gcap * sizeof *j->gpus);
	}
	gl_idlerule_eval_gpu(&p->rule, sp, ns, j->row->start_s, R->now_s, &j->gpus[j->ngpus]);
	for (size_t k = 0; k < ns; k++) {
		if (sp[k].state != GL_IDLERULE_IDLE)
			continue;
		if (j->nisp == j->iscap) {
			j->iscap = j->iscap ? j->iscap * 2 : 64;
			j->isp = gl_xrealloc(j->isp, j->iscap * sizeof *j->isp);
		}
		j->isp[j->nisp++] = sp[k];
	}
	j->gpus[j->ngpus].stale = !last || last < R->now_s - p->rule.max_data_age_s;
	if (last > j->last_sample_s)
		j->last_sample_s = last;
	j->ngpus++;
}

/* The buckets come per job and GPU in bucket order: evaluate GPU by GPU. */
static void eval_buckets(const struct run *R, const struct gl_hookstore_bucket_list *bl)
{
	struct gl_idlerule_span *sp = NULL;
	size_t spcap = 0;
	for (size_t r = 0; r < bl->n;) {
		size_t tag = bl->v[r].tag, ns = 0;
		int64_t gpu = bl->v[r].gpu_id, last = 0;
		struct hjob *j = &R->jobs[tag];
		const struct gl_hookpolicy *p = &R->pols[j->pol];
		for (; r < bl->n && bl->v[r].tag == tag && bl->v[r].gpu_id == gpu; r++) {
			const struct gl_hookstore_bucket *b = &bl->v[r];
			if (ns == spcap) {
				spcap = spcap ? spcap * 2 : 64;
				sp = gl_xrealloc(sp, spcap * sizeof *sp);
			}
			sp[ns] = (struct gl_idlerule_span){b->obs.start_s, b->obs.dur_s, gl_idlerule_classify(&b->obs, &p->signal)};
			if (sp[ns].state != GL_IDLERULE_NODATA && b->last_sample_s > last)
				last = b->last_sample_s;
			if (b->estimated)
				j->estimated = 1;
			ns++;
		}
		eval_gpu(R, j, p, sp, ns, last);
	}
	free(sp);
}

/* The look-back of every job not settled busy, read and judged. */
static int read_buckets(struct run *R, struct gl_err *err)
{
	struct gl_hookstore_probe *pr = gl_xcalloc(R->njobs ? R->njobs : 1, sizeof *pr);
	struct gl_hookstore_bucket_list bl = {0};
	size_t n = 0;
	int rc;
	for (size_t i = 0; i < R->njobs; i++) {
		const struct hjob *j = &R->jobs[i];
		const struct gl_hookpolicy *p;
		int64_t from, s0;
		if (j->pol < 0 || j->recent_busy)
			continue;
		p = &R->pols[j->pol];
		from = R->now_s - lookback_s(p);
		s0 = j->row->start_s + p->rule.grace_s;
		if (from < s0)
			from = s0;
		/* the bucket holding `from` starts up to one bucket earlier */
		pr[n++] = (struct gl_hookstore_probe){j->row->job_pk, from - R->cfg->bucket_s, 0, i};
		if (from - R->cfg->bucket_s < R->min_from)
			R->min_from = from - R->cfg->bucket_s;
	}
	if (!(rc = gl_hookstore_buckets(R->c, pr, n, R->now_s, R->min_from, &bl, err)))
		eval_buckets(R, &bl);
	gl_hookstore_bucket_list_fini(&bl);
	free(pr);
	return rc;
}

/* fixed: busy before the look-back window means not idle since start */
static int probe_busy_before(struct run *R, struct gl_err *err)
{
	struct gl_hookstore_probe *pr = gl_xcalloc(R->njobs ? R->njobs : 1, sizeof *pr);
	struct gl_hookstore_tag_list hits = {0};
	size_t n = 0;
	int rc;
	for (size_t i = 0; i < R->njobs; i++) {
		const struct hjob *j = &R->jobs[i];
		const struct gl_hookpolicy *p;
		int64_t s0, from;
		if (j->pol < 0)
			continue;
		p = &R->pols[j->pol];
		s0 = j->row->start_s + p->rule.grace_s;
		from = R->now_s - lookback_s(p);
		if (p->rule.kind != GL_IDLERULE_FIXED || s0 >= from || !j->ngpus || j->recent_busy)
			continue;
		pr[n++] = (struct gl_hookstore_probe){j->row->job_pk, s0, from, i};
	}
	rc = gl_hookstore_busy_between(R->c, pr, n, &hits, err);
	for (size_t k = 0; k < hits.n; k++)
		R->jobs[hits.v[k]].busy_before = 1;
	gl_hookstore_tag_list_fini(&hits);
	free(pr);
	return rc;
}

/* The job's decision and class; for a job without data, why. 1 when the
 * job is reported (candidate, no data or spared). */
static int classify(const struct run *R, struct hjob *j)
{
	const struct gl_hookpolicy *p = &R->pols[j->pol];
	size_t expected = (size_t)((j->row->gpu_micro + GL_GPU_MICRO - 1) / GL_GPU_MICRO);
	if (j->busy_before)
		for (size_t g = 0; g < j->ngpus; g++) {
			j->gpus[g].idle_s = 0;
			j->gpus[g].stage = GL_IDLERULE_STAGE_NONE;
		}
	gl_idlerule_eval_job(&p->rule, j->gpus, j->ngpus, expected > j->ngpus ? expected : 0, &j->ev);
	if (j->estimated && !j->ev.no_data) {
		/* a node-level estimate may name the wrong job: never act on it */
		j->ev.no_data = 1;
		j->ev.stage = GL_IDLERULE_STAGE_NONE;
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
				 (long long)(R->now_s - j->last_sample_s), (long long)p->rule.max_data_age_s);
		return 1;
	}
	if (j->ev.stage < GL_IDLERULE_STAGE_WARN1)
		return 0;
	j->cls = j->spared ? J_SPARED : J_CANDIDATE;
	return 1;
}

/* The idle cost of each job with rates: its idle spans priced across the
 * rates in force (at most 64 rate changes inside one look-back: the rest
 * unpriced). */
static void price(struct run *R, const struct gl_hookstore_rate_list *rl)
{
	for (size_t r = 0; r < rl->n;) {
		size_t tag = rl->v[r].tag, nr = 0;
		struct hjob *j = &R->jobs[tag];
		struct gl_jobstats_rate rt[64];
		gl_cost_i128 num;
		for (; r < rl->n && rl->v[r].tag == tag; r++)
			if (nr < GL_ARRAY_LEN(rt))
				rt[nr++] = rl->v[r].rate;
		num = gl_idlerule_idle_cost_num(&R->pols[j->pol].rule, j->isp, j->nisp, j->row->start_s, R->now_s, rt, nr);
		j->idle_cost = (int64_t)((num + GL_COST_MICRO_GPU_SECONDS_PER_GPU_HOUR / 2) / GL_COST_MICRO_GPU_SECONDS_PER_GPU_HOUR);
	}
}

/* Owners, rates and recorded stages of the reported jobs. */
static int read_details(struct run *R, const struct gl_hookstore_key *keys, size_t n, struct gl_err *err)
{
	struct gl_hookstore_owner_list ol = {0};
	struct gl_hookstore_rate_list rl = {0};
	struct gl_hookstore_stage_list sl = {0};
	int rc;
	if ((rc = gl_hookstore_owners(R->c, keys, n, &ol, err)))
		goto out;
	for (size_t k = 0; k < ol.n; k++)
		snprintf(R->jobs[ol.v[k].tag].owner, sizeof R->jobs[0].owner, "%s", ol.v[k].team);
	if ((rc = gl_hookstore_rates(R->c, keys, n, R->min_from, R->now_s, &rl, err)))
		goto out;
	price(R, &rl);
	if ((rc = gl_hookstore_stages(R->c, keys, n, &sl, err)))
		goto out;
	for (size_t k = 0; k < sl.n; k++) {
		struct hjob *j = &R->jobs[sl.v[k].tag];
		if (sl.v[k].done)
			j->done |= 1u << sl.v[k].stage;
		else
			j->failed |= 1u << sl.v[k].stage;
	}
out:
	gl_hookstore_owner_list_fini(&ol);
	gl_hookstore_rate_list_fini(&rl);
	gl_hookstore_stage_list_fini(&sl);
	return rc;
}

/* Everything the decisions need, read in one snapshot, and the decisions. */
static int judge(struct run *R, struct gl_err *err)
{
	struct gl_hookstore_key *keys = NULL;
	size_t nk = 0;
	int rc;
	if ((rc = gl_hookstore_read_begin(R->c, err)))
		return rc;
	if ((rc = gl_hookstore_running_jobs(R->c, R->now_s, &R->rows, err)))
		goto out;
	R->njobs = R->rows.n;
	R->jobs = gl_xcalloc(R->njobs ? R->njobs : 1, sizeof *R->jobs);
	for (size_t i = 0; i < R->njobs; i++)
		R->jobs[i].row = &R->rows.v[i];
	scope(R);
	if ((rc = probe_recent(R, err)) || (rc = read_buckets(R, err)) || (rc = probe_busy_before(R, err)))
		goto out;
	keys = gl_xcalloc(R->njobs ? R->njobs : 1, sizeof *keys);
	for (size_t i = 0; i < R->njobs; i++) {
		struct hjob *j = &R->jobs[i];
		if (j->pol >= 0 && !j->recent_busy && classify(R, j))
			keys[nk++] = (struct gl_hookstore_key){j->row->cluster_id, j->row->job_pk, i};
	}
	if (nk && (rc = read_details(R, keys, nk, err)))
		goto out;
	rc = gl_hookstore_read_end(R->c, err);
out:
	if (rc)
		gl_hookstore_read_abort(R->c);
	free(keys);
	return rc;
}

/* ---- planning and acting ---- */

static enum gl_idlerule_stage next_stage(const struct gl_hookpolicy *p, const struct hjob *j)
{
	/* one stage per run, in order: a job gets its warning(s) before the
	 * action, each in an earlier run than the next */
	static const enum gl_idlerule_stage order[] = {GL_IDLERULE_STAGE_WARN1, GL_IDLERULE_STAGE_WARN2, GL_IDLERULE_STAGE_ACT};
	for (size_t i = 0; i < GL_ARRAY_LEN(order); i++) {
		enum gl_idlerule_stage s = order[i];
		if (s == GL_IDLERULE_STAGE_WARN2 && !p->rule.t2_s)
			continue;
		if (s > j->ev.stage)
			return GL_IDLERULE_STAGE_NONE;
		if (!(j->done & (1u << s)))
			return s;
	}
	return GL_IDLERULE_STAGE_NONE;
}

static void breaker_json(cJSON *root, int tripped, int actions_due, int64_t max_actions, const char *why)
{
	cJSON *b = cJSON_AddObjectToObject(root, "breaker");
	cJSON_AddBoolToObject(b, "tripped", tripped);
	cJSON_AddNumberToObject(b, "actions_due", actions_due);
	cJSON_AddNumberToObject(b, "max_actions_per_run", (double)max_actions);
	if (why)
		cJSON_AddStringToObject(b, "reason", why);
}

/* Each candidate's next stage; the circuit breaker: a bug or bad data that
 * makes half the fleet idle must not cancel half the fleet. */
static void plan(struct run *R)
{
	char why[200];
	for (size_t i = 0; i < R->njobs; i++) {
		struct hjob *j = &R->jobs[i];
		if (j->cls != J_CANDIDATE)
			continue;
		j->next = next_stage(&R->pols[j->pol], j);
		R->acts_planned += j->next == GL_IDLERULE_STAGE_ACT;
		R->ncand++;
	}
	if (R->acts_planned <= R->cfg->hook_max_actions_per_run) {
		breaker_json(R->root, 0, R->acts_planned, R->cfg->hook_max_actions_per_run, NULL);
		return;
	}
	R->breaker = 1;
	snprintf(why, sizeof why, "%d actions due, hook.max_actions_per_run is %lld: acting on none", R->acts_planned,
		 (long long)R->cfg->hook_max_actions_per_run);
	breaker_json(R->root, 1, R->acts_planned, R->cfg->hook_max_actions_per_run, why);
	cJSON_AddItemToArray(R->errs, cJSON_CreateString(why));
	gl_log(GL_LOG_WARN, "hook: circuit breaker: %s", why);
}

static char *decision_detail(const struct hjob *j, const struct gl_hookpolicy *pols, int dry)
{
	cJSON *o = job_json(j, pols);
	char *t;
	cJSON_AddBoolToObject(o, "dry_run", dry);
	t = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return t;
}

/* The decisions, audited before anything is run (a crash leaves them). */
static int audit_decisions(struct run *R, struct gl_err *err)
{
	struct gl_audit_entry *ents = gl_xcalloc(R->njobs ? R->njobs : 1, sizeof *ents);
	char **det = gl_xcalloc(R->njobs ? R->njobs : 1, sizeof *det);
	char (*objs)[256] = gl_xcalloc(R->njobs ? R->njobs : 1, sizeof *objs);
	size_t ne = 0;
	int rc = 0;
	for (size_t i = 0; i < R->njobs; i++) {
		const struct hjob *j = &R->jobs[i];
		if (j->cls == J_NONE)
			continue;
		det[ne] = decision_detail(j, R->pols, !R->o->act);
		snprintf(objs[ne], sizeof objs[ne], "job:%s/%s", j->row->cluster, j->row->job_id);
		ents[ne] = (struct gl_audit_entry){0, R->actor, NULL,
						   j->cls == J_CANDIDATE ? "hook.candidate"
						   : j->cls == J_SPARED  ? "hook.spared"
									 : "hook.no_data",
						   objs[ne], "ok", det[ne]};
		ne++;
	}
	/* the run's own row names the mode and counts */
	if (ne)
		rc = gl_audit_append_batch(R->c, ents, ne, NULL, err);
	for (size_t i = 0; i < ne; i++)
		free(det[i]);
	free(ents);
	free(det);
	free(objs);
	return rc;
}

/* The candidates' next stages (with --act; the action not when the breaker
 * tripped). A stage that could not be recorded is retried by the next run;
 * the other jobs still get their turn unless the connection is gone. */
static int act(struct run *R, struct gl_err *err)
{
	for (size_t i = 0; i < R->njobs && R->o->act; i++) {
		struct hjob *j = &R->jobs[i];
		int rc;
		if (j->cls != J_CANDIDATE || j->next == GL_IDLERULE_STAGE_NONE)
			continue;
		if (j->next == GL_IDLERULE_STAGE_ACT && R->breaker)
			continue;
		if (!(rc = run_stage(R, &R->pols[j->pol], j, j->next, err)))
			continue;
		if (!gl_hookstore_connected(R->c))
			return rc;
		cJSON_AddItemToArray(R->errs, cJSON_CreateString(err->msg));
		gl_log(GL_LOG_WARN, "hook: %s/%s: %s", j->row->cluster, j->row->job_id, err->msg);
		R->failures++;
	}
	return 0;
}

/* The jobs into the report's lists; the exit code. */
static void report_jobs(struct run *R, int *exit_code)
{
	for (size_t i = 0; i < R->njobs; i++) {
		const struct hjob *j = &R->jobs[i];
		cJSON *arr = j->cls == J_CANDIDATE ? R->cand : j->cls == J_NODATA ? R->nod : j->cls == J_SPARED ? R->spa : NULL;
		if (arr)
			cJSON_AddItemToArray(arr, job_json(j, R->pols));
	}
	if (R->o->act)
		*exit_code = !R->breaker && R->failures == 0 ? GL_HOOK_EXIT_OK : GL_HOOK_EXIT_ERROR;
	else
		*exit_code = R->ncand ? GL_HOOK_EXIT_CANDIDATES : GL_HOOK_EXIT_OK;
	if (R->failures) {
		char m[120];
		snprintf(m, sizeof m, "%d command(s) failed; they are retried by the next run", R->failures);
		cJSON_AddItemToArray(R->errs, cJSON_CreateString(m));
	}
}

static int judge_and_act(struct run *R, int *exit_code, struct gl_err *err)
{
	int rc;
	if ((rc = judge(R, err)))
		return rc;
	plan(R);
	if ((R->o->audit && (rc = audit_decisions(R, err))) || (rc = act(R, err)))
		return rc;
	report_jobs(R, exit_code);
	return 0;
}

/* ---- the run ---- */

/* Policies compiled, --policy and --act checked, allow-lists read. */
static int prepare(struct run *R, int *exit_code, struct gl_err *err)
{
	int rc;
	if ((rc = gl_config_hookpolicies(R->cfg, &R->pols, &R->npols, err)))
		return rc;
	if (R->o->policy) {
		size_t k;
		for (k = 0; k < R->npols && strcmp(R->pols[k].name, R->o->policy); k++)
			;
		if (k == R->npols) {
			*exit_code = GL_HOOK_EXIT_USAGE;
			return gl_err_set(err, GL_EINVAL, "--policy: no policy named '%s' in %s", R->o->policy, R->cfg->path);
		}
	}
	if (R->o->act && !R->cfg->hook_act)
		return gl_err_set(err, GL_EINVAL, "--act: hook.act is false in %s; refusing to act", R->cfg->path);
	R->allows = gl_xcalloc(R->npols ? R->npols : 1, sizeof *R->allows);
	for (size_t i = 0; i < R->npols; i++)
		if ((rc = allow_read(R->pols[i].allow_list_file, &R->allows[i], err)))
			return rc;
	return 0;
}

static void report_new(struct run *R)
{
	char now_iso[32];
	R->root = cJSON_CreateObject();
	cJSON_AddStringToObject(R->root, "mode", R->o->act ? "act" : "dry-run");
	gl_timeutil_format(R->now_s, now_iso, sizeof now_iso);
	cJSON_AddStringToObject(R->root, "now", now_iso);
	R->cand = cJSON_AddArrayToObject(R->root, "candidates");
	R->nod = cJSON_AddArrayToObject(R->root, "no_data");
	R->spa = cJSON_AddArrayToObject(R->root, "spared");
	R->acts = cJSON_AddArrayToObject(R->root, "actions");
	R->errs = cJSON_AddArrayToObject(R->root, "errors");
}

/* Overlapping cron runs: the second one leaves at once (*skip = 1, said in
 * the report). */
static int take_locks(struct run *R, int *skip, struct gl_err *err)
{
	int rc;
	*skip = 0;
	if (R->cfg->hook_lock_file[0]) {
		R->lock_fd = open(R->cfg->hook_lock_file, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		if (R->lock_fd < 0)
			return gl_err_set(err, GL_EIO, "hook.lock_file %s: %s", R->cfg->hook_lock_file, strerror(errno));
		if (flock(R->lock_fd, LOCK_EX | LOCK_NB)) {
			cJSON_AddStringToObject(R->root, "skipped", "another hook run holds hook.lock_file");
			*skip = 1;
			return 0;
		}
	}
	if ((rc = gl_hookstore_try_lock(R->c, &R->locked, err)))
		return rc;
	if (!R->locked) {
		cJSON_AddStringToObject(R->root, "skipped", "another hook run holds the database lock");
		*skip = 1;
	}
	return 0;
}

/* The run's own audit row: what it was asked, what it found, how it ended
 * (error: why it stopped early, NULL when it did not). Built with cJSON: the
 * policy name is the operator's text. */
static int run_row(const struct run *R, int exit_code, const char *error, struct gl_err *err)
{
	cJSON *d = cJSON_CreateObject();
	char *txt;
	int rc;
	cJSON_AddStringToObject(d, "mode", R->o->act ? "act" : "dry-run");
	if (R->o->policy) {
		char clean[GL_AUDIT_FIELD_MAX];
		gl_audit_clean(R->o->policy, clean, sizeof clean);
		cJSON_AddStringToObject(d, "policy", clean);
	} else {
		cJSON_AddNullToObject(d, "policy");
	}
	cJSON_AddNumberToObject(d, "candidates", cJSON_GetArraySize(R->cand));
	cJSON_AddNumberToObject(d, "no_data", cJSON_GetArraySize(R->nod));
	cJSON_AddNumberToObject(d, "spared", cJSON_GetArraySize(R->spa));
	cJSON_AddNumberToObject(d, "actions", cJSON_GetArraySize(R->acts));
	cJSON_AddBoolToObject(d, "breaker", R->breaker);
	cJSON_AddNumberToObject(d, "exit_code", exit_code);
	if (error) {
		char clean[GL_AUDIT_FIELD_MAX];
		gl_audit_clean(error, clean, sizeof clean);
		cJSON_AddStringToObject(d, "error", clean);
	}
	txt = cJSON_PrintUnformatted(d);
	rc = gl_audit_append(R->c, R->actor, NULL, "hook.run", NULL, exit_code == GL_HOOK_EXIT_ERROR ? "error" : "ok", txt,
			     err);
	free(txt);
	cJSON_Delete(d);
	return rc;
}

/* One row per run, also for a run that stopped on an error (rc): it may
 * have run commands before it stopped. */
static int audit_run(const struct run *R, int rc, int exit_code, struct gl_err *err)
{
	struct gl_err e2 = {0};
	if (!R->o->audit)
		return rc;
	if (!rc)
		return run_row(R, exit_code, NULL, err);
	if (run_row(R, GL_HOOK_EXIT_ERROR, err ? err->msg : "", &e2))
		gl_log(GL_LOG_WARN, "hook: could not audit the failed run: %s", e2.msg);
	return rc;
}

static void run_fini(struct run *R)
{
	if (R->locked)
		gl_hookstore_unlock(R->c);
	if (R->lock_fd >= 0)
		close(R->lock_fd);
	for (size_t i = 0; R->jobs && i < R->njobs; i++) {
		free(R->jobs[i].gpus);
		free(R->jobs[i].isp);
	}
	free(R->jobs);
	gl_hookstore_job_list_fini(&R->rows);
	for (size_t i = 0; R->allows && i < R->npols; i++)
		allow_fini(&R->allows[i]);
	free(R->allows);
	gl_hookpolicy_free(R->pols, R->npols);
	cJSON_Delete(R->root);
}

int gl_hook_run(struct gl_store *c, const struct gl_config *cfg, const struct gl_hook_opts *o, int64_t now_s, cJSON **report,
		int *exit_code, struct gl_err *err)
{
	struct run R = {.c = c, .cfg = cfg, .o = o, .now_s = now_s, .min_from = now_s, .lock_fd = -1};
	int rc, skip = 0;

	R.actor = o->actor ? o->actor : gl_audit_process_actor();
	*report = NULL;
	*exit_code = GL_HOOK_EXIT_ERROR;
	if ((rc = prepare(&R, exit_code, err)))
		goto out;
	report_new(&R);
	if (!R.npols) {
		/* nothing to judge, but the report keeps its documented shape and
		 * the run its hook.run row */
		breaker_json(R.root, 0, 0, cfg->hook_max_actions_per_run, NULL);
		*exit_code = GL_HOOK_EXIT_OK;
	} else if (o->act && ((rc = take_locks(&R, &skip, err)) || skip)) {
		if (!rc)
			*exit_code = GL_HOOK_EXIT_OK;
	} else {
		rc = judge_and_act(&R, exit_code, err);
	}
	if ((rc = audit_run(&R, rc, *exit_code, err)))
		goto out;
	cJSON_AddNumberToObject(R.root, "exit_code", *exit_code);
	*report = R.root;
	R.root = NULL;
out:
	run_fini(&R);
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


static const char *const record_fields[] = {"cluster", "job_id", "policy", "stage", "ok", "exit_status", "command",
					    "owner"};

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
		enum gl_bounds k;
	} b[] = {{"cluster", cluster, GL_BOUNDS_CLUSTER}, {"job_id", job_id, GL_BOUNDS_JOB_ID},
		 {"policy", policy, GL_BOUNDS_NAME}, {"owner", owner, GL_BOUNDS_NAME}};
	char why[160];
	for (size_t i = 0; i < GL_ARRAY_LEN(b); i++)
		if (b[i].v && gl_bounds_check(b[i].k, strlen(b[i].v), why, sizeof why)) {
			*param = b[i].name;
			return gl_err_set(err, GL_EINVAL, "%s: %s", b[i].name, why);
		}
	return 0;
}

/* cJSON ends a string at \u0000: "a\u0000b" would be recorded as "a" */
static int record_nul(const char *body, size_t len, const char **param, struct gl_err *err)
{
	const char *const *f = record_fields;
	char where[208] = "";
	size_t k = 0;
	if (!gl_jsonscan_nul(body, len, first_nul, where))
		return 0;
	/* the field the path starts in: "command[1]" is command's */
	while (k < GL_ARRAY_LEN(record_fields) && (strncmp(where, f[k], strlen(f[k])) || !strchr("[.", where[strlen(f[k])])))
		k++;
	*param = k < GL_ARRAY_LEN(record_fields) ? f[k] : "body";
	return gl_err_set(err, GL_EINVAL, "%s%s: holds \\u0000 (a NUL, which would cut the text there)",
			  k < GL_ARRAY_LEN(record_fields) ? "" : "body: ", where);
}

/* The body as one JSON object of known fields, each once. What is not read
 * must not pass as recorded: text after the object (two bodies glued), a
 * misspelt field ("exit_code": its status was stored as unknown) or a
 * repeated one (only the first was read). */
static int record_parse(const char *body, size_t len, cJSON **in, const char **param, struct gl_err *err)
{
	const char *end = NULL;
	int rc;
	*param = "body";
	/* PostgreSQL refuses text that is not UTF-8: that is the client's
	 * mistake (400), not a database failure (5xx) */
	if (gl_utf8_validate(body, len, NULL))
		return gl_err_set(err, GL_EINVAL, "body: not valid UTF-8");
	*in = cJSON_ParseWithLengthOpts(body, len, &end, 0);
	if (!cJSON_IsObject(*in))
		return gl_err_set(err, GL_EINVAL, "body: expected a JSON object");
	while ((size_t)(end - body) < len && (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r'))
		end++;
	if ((size_t)(end - body) < len)
		return gl_err_set(err, GL_EINVAL, "body: data after the JSON object at byte %zu", (size_t)(end - body));
	if ((rc = record_nul(body, len, param, err)))
		return rc;
	for (cJSON *a = (*in)->child; a; a = a->next) {
		const char *const *f = record_fields;
		size_t k = 0;
		while (k < GL_ARRAY_LEN(record_fields) && strcmp(a->string, f[k]))
			k++;
		if (k == GL_ARRAY_LEN(record_fields))
			return gl_err_set(err, GL_EINVAL, "body: unknown field '%s' (%s, %s, %s, %s, %s, %s, %s or %s)",
					  a->string, f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7]);
		for (cJSON *b = (*in)->child; b != a; b = b->next)
			if (!strcmp(b->string, a->string)) {
				*param = f[k];
				return gl_err_set(err, GL_EINVAL, "%s: given more than once", f[k]);
			}
	}
	*param = NULL;
	return 0;
}

static int str_field(const cJSON *in, const char *name, int required, const char **dst, const char **param,
		     struct gl_err *err)
{
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(in, name);
	if (f && !cJSON_IsString(f)) {
		*param = name;
		return gl_err_set(err, GL_EINVAL, "%s: expected a string", name);
	}
	*dst = f ? f->valuestring : NULL;
	if (required && (!*dst || !**dst)) {
		*param = name;
		return gl_err_set(err, GL_EINVAL, "%s: required", name);
	}
	return 0;
}

/* ok, exit_status and the stage */
static int record_outcome(const cJSON *in, const char *stage, struct gl_hookstore_external *a, const char **param,
			  struct gl_err *err)
{
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(in, "ok");
	enum gl_idlerule_stage st;
	if (gl_idlerule_stage_parse(stage, &st) || st == GL_IDLERULE_STAGE_NONE) {
		*param = "stage";
		return gl_err_set(err, GL_EINVAL, "stage: '%s' is not warn1, warn2 or act", stage);
	}
	a->stage = gl_idlerule_stage_name(st);
	if (!cJSON_IsBool(f)) {
		*param = "ok";
		return gl_err_set(err, GL_EINVAL, "ok: required, true or false");
	}
	a->ok = cJSON_IsTrue(f);
	f = cJSON_GetObjectItemCaseSensitive(in, "exit_status");
	if (!f || cJSON_IsNull(f))
		return 0;
	/* range first: converting a double outside int is undefined */
	if (!cJSON_IsNumber(f) || !(f->valuedouble >= INT_MIN && f->valuedouble <= INT_MAX) ||
	    f->valuedouble != (int)f->valuedouble) {
		*param = "exit_status";
		return gl_err_set(err, GL_EINVAL, "exit_status: expected an integer");
	}
	a->have_status = 1;
	a->status = (int)f->valuedouble;
	return 0;
}

/* A command as one string or as argv; *shown gets it as argv, blanked (a
 * controller's command may carry a credential, as the hook's own may), and
 * the body's copy is blanked alike: the row and the audit row keep only
 * what is shown. One string is an argv of one element, as stored: blanked
 * alike here and by `db redact` (a second pass changes nothing). */
static int record_command(cJSON *argv_j, char ***shown, const char **param, struct gl_err *err)
{
	size_t n = 0;
	char **argv;
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
				return gl_err_set(err, GL_EINVAL, "command: expected a string or an array of strings");
			}
			argv[n++] = gl_xstrdup(e->valuestring);
		}
	} else if (argv_j && !cJSON_IsNull(argv_j)) {
		*param = "command";
		return gl_err_set(err, GL_EINVAL, "command: expected a string or an array of strings");
	} else {
		argv = gl_xcalloc(1, sizeof *argv);
	}
	{
		/* the command line as a whole is one bounded text */
		size_t total = 0;
		char why[160];
		for (size_t i = 0; i < n; i++)
			total += strlen(argv[i]) + 1;
		if (gl_bounds_check(GL_BOUNDS_TEXT, total, why, sizeof why)) {
			gl_hookpolicy_argv_free(argv);
			*param = "command";
			return gl_err_set(err, GL_EINVAL, "command: %s", why);
		}
	}
	*shown = gl_redact_argv((const char *const *)argv);
	if (cJSON_IsString(argv_j)) {
		cJSON_SetValuestring(argv_j, (*shown)[0]);
	} else if (cJSON_IsArray(argv_j)) {
		cJSON *e = argv_j->child;
		for (size_t i = 0; e && (*shown)[i]; i++, e = e->next)
			cJSON_SetValuestring(e, (*shown)[i]);
	}
	gl_hookpolicy_argv_free(argv);
	return 0;
}

/* The record's fields, checked; the body's command blanked in place. */
static int record_fields_read(cJSON *in, struct gl_hookstore_external *a, char ***shown, const char **param,
			      struct gl_err *err)
{
	const char *stage;
	int rc;
	if ((rc = str_field(in, "cluster", 1, &a->cluster, param, err)) ||
	    (rc = str_field(in, "job_id", 1, &a->job_id, param, err)) ||
	    (rc = str_field(in, "policy", 1, &a->policy, param, err)) ||
	    (rc = str_field(in, "stage", 1, &stage, param, err)) ||
	    (rc = str_field(in, "owner", 0, &a->owner, param, err)) ||
	    (rc = record_fits(a->cluster, a->job_id, a->policy, a->owner, param, err)))
		return rc;
	/* not known is NULL, as the list shows it (null), never "" */
	if (a->owner && !*a->owner)
		a->owner = NULL;
	if ((rc = record_outcome(in, stage, a, param, err)))
		return rc;
	return record_command(cJSON_GetObjectItemCaseSensitive(in, "command"), shown, param, err);
}

int gl_hook_record(struct gl_store *c, const struct gl_config *cfg, const char *body, size_t len, const char *actor,
		   int64_t now_s, cJSON **out, const char **param, struct gl_err *err)
{
	struct gl_hookstore_external a = {0};
	struct gl_hookstore_recorded got;
	cJSON *in = NULL, *d = NULL;
	char **shown = NULL, *detail = NULL, object[256], at[32];
	int rc;

	*out = NULL;
	*param = NULL;
	(void)now_s;
	if ((rc = record_parse(body, len, &in, param, err)) || (rc = record_fields_read(in, &a, &shown, param, err)))
		goto out;
	a.argv = (const char *const *)shown;
	a.actor = actor;
	d = cJSON_Duplicate(in, 1);
	cJSON_AddStringToObject(d, "source", "api");
	detail = cJSON_PrintUnformatted(d);
	snprintf(object, sizeof object, "job:%s/%s", a.cluster, a.job_id);
	if ((rc = gl_hookstore_external_record(c, &a, object, detail, &got, err)))
		goto out;
	*out = cJSON_CreateObject();
	cJSON_AddNumberToObject(*out, "action_id", (double)got.action_id);
	gl_timeutil_format(got.at_s, at, sizeof at);
	cJSON_AddStringToObject(*out, "at", at);
	cJSON_AddBoolToObject(*out, "job_known", got.job_known);
	cJSON_AddBoolToObject(*out, "policy_known", policy_configured(cfg, a.policy));
out:
	gl_redact_argv_free(shown);
	free(detail);
	cJSON_Delete(d);
	cJSON_Delete(in);
	return rc;
}

static cJSON *listed_json(const struct gl_config *cfg, const struct gl_hookstore_listed *l)
{
	cJSON *o = cJSON_CreateObject();
	char at[32];
	gl_timeutil_format(l->at_s, at, sizeof at);
	cJSON_AddStringToObject(o, "at", at);
	cJSON_AddStringToObject(o, "cluster", l->cluster);
	cJSON_AddStringToObject(o, "job_id", l->job_id);
	if (!l->owner)
		cJSON_AddNullToObject(o, "owner");
	else
		cJSON_AddStringToObject(o, "owner", l->owner);
	cJSON_AddStringToObject(o, "policy", l->policy);
	cJSON_AddBoolToObject(o, "policy_known", policy_configured(cfg, l->policy));
	cJSON_AddStringToObject(o, "stage", l->stage);
	cJSON_AddStringToObject(o, "command", l->command);
	cJSON_AddItemToObject(o, "argv", cJSON_Parse(l->argv_json));
	if (!l->have_status)
		cJSON_AddNullToObject(o, "exit_status");
	else
		cJSON_AddNumberToObject(o, "exit_status", l->status);
	cJSON_AddBoolToObject(o, "ok", l->ok);
	cJSON_AddStringToObject(o, "source", l->source);
	cJSON_AddStringToObject(o, "actor", l->actor);
	cJSON_AddStringToObject(o, "stderr", l->stderr_text);
	return o;
}

int gl_hook_actions_list(struct gl_store *c, const struct gl_config *cfg, int64_t from_s, int64_t to_s, long limit,
			 cJSON **out, struct gl_err *err)
{
	struct gl_hookstore_listed_list l = {0};
	cJSON *arr;
	int rc;

	*out = NULL;
	if ((rc = gl_hookstore_actions(c, from_s, to_s, limit, &l, err)))
		return rc;
	*out = cJSON_CreateObject();
	arr = cJSON_AddArrayToObject(*out, "actions");
	for (size_t i = 0; i < l.n; i++)
		cJSON_AddItemToArray(arr, listed_json(cfg, &l.v[i]));
	gl_hookstore_listed_list_fini(&l);
	return 0;
}
