/* The daemon's source scheduler (see include/gl/daemon.h). */
#include "gl/daemon.h"
#include "gl/dcgm_scrape.h"
#include "gl/kube_ingest.h"
#include "gl/nodes_poll.h"
#include "gl/nvsmi_ingest.h"
#include "gl/sacct_poll.h"
#include "gl/serving_scrape.h"
#include "gl/accounting.h"
#include "gl/budget.h"
#include "gl/dbcancel.h"
#include "gl/forecast_cache.h"
#include "gl/health.h"
#include "gl/ledgermetrics.h"
#include "gl/redact.h"
#include "gl/report_sched.h"
#include "gl/retention.h"
#include "gl/rundb.h"
#include "gl/store.h"

#include <time.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void add(struct gl_daemon_source **arr, size_t *n, size_t *cap, const char *kind, const char *cluster,
		int64_t interval_s, gl_daemon_source_run_fn run, const void *src)
{
	struct gl_daemon_source *s;
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 8;
		*arr = gl_xrealloc(*arr, *cap * sizeof **arr);
	}
	s = &(*arr)[(*n)++];
	memset(s, 0, sizeof *s);
	snprintf(s->name, sizeof s->name, "%s:%s", kind, cluster);
	s->interval_s = interval_s;
	s->run = run;
	s->src = src;
	s->next_s = 0; /* run at once on start */
	s->lim = (struct gl_log_limiter)GL_LOG_LIMITER_INIT(600);
	s->leased = 1;
}

/* Rebuilds stale past days of usage_daily, at most a month per run so one
 * slow run never starves the other sources; on two connections, so on two
 * cores of the database (without the second, when it cannot be opened, on
 * one). */
static int rollup_run(struct gl_store *st, const struct gl_config *cfg, const void *src, int64_t now_s, char *summary,
		      size_t n, struct gl_err *err)
{
	int built = 0, helped = 0, rc;
	rc = gl_accounting_build_stale(st, cfg, now_s, 31, &built, &helped, err);
	if (!rc)
		snprintf(summary, n, "%d days rebuilt%s", built,
			 built > 1 && !helped ? " (one connection: no second one)" : "");
	return rc;
}

/* The runs of the months whose days are all built, and of the month in
 * progress so far (/v1/runs). A task of
 * its own: a month costs one grouping of all its jobs (~12 s at 1 M jobs),
 * which would hold back the next days' rollup, and a month one late job
 * unbuilds is built again at most once an interval. */
static int runs_run(struct gl_store *st, const struct gl_config *cfg, const void *src, int64_t now_s, char *summary,
		    size_t n, struct gl_err *err)
{
	struct gl_runs_rule *rules;
	size_t n_rules;
	int months = 0, rc;
	gl_config_run_rules(cfg, &rules, &n_rules);
	rc = gl_rundb_build_months(st, rules, n_rules, now_s, &months, err);
	free(rules);
	if (!rc)
		snprintf(summary, n, "%d months of runs built", months);
	return rc;
}

/* Partitions the next days and months write to, then retention: whole
 * partitions past the configured horizons go (docs/scale.md). */
static int partitions_run(struct gl_store *st, const struct gl_config *cfg, const void *src, int64_t now_s, char *summary,
			  size_t n, struct gl_err *err)
{
	struct gl_retention_policy pol = {cfg->retention_usage_days, cfg->retention_ingest_runs_days};
	struct gl_retention_result res = {0};
	int64_t sets = 0;
	int rc = gl_retention_ahead(st, now_s, &res.made, err);
	if (!rc)
		rc = gl_retention_drop(st, &pol, now_s, &res, err);
	if (!rc)
		rc = gl_retention_open_sets(st, &sets, err);
	if (!rc)
		snprintf(summary, n,
			 "%d made ahead, %d dropped (~%lld rows)%s%s; %d past the horizon kept: not rolled up; "
			 "%lld unused open-job sets deleted%s",
			 res.made, res.dropped, (long long)res.est_rows, res.dropped ? ": " : "",
			 res.dropped ? gl_strbuf_cstr(&res.names) : "", res.kept_unbuilt, (long long)(sets < 0 ? 0 : sets),
			 sets < 0 ? " (a writer in flight: next run)" : "");
	gl_retention_result_fini(&res);
	return rc;
}

static int budget_run(struct gl_store *st, const struct gl_config *cfg, const void *src, int64_t now_s, char *summary,
		      size_t n, struct gl_err *err)
{
	int fired = 0, rc = gl_budget_check(st, cfg, now_s, &fired, err);
	/* without a command an alert is only recorded and audited: "sent"
	 * would tell an operator someone was notified */
	if (!rc)
		snprintf(summary, n, *cfg->budget_alert_command ? "%d alerts sent" : "%d alerts recorded (no budget_alerts.command)",
			 fired);
	return rc;
}

size_t gl_daemon_sources(const struct gl_config *cfg, struct gl_daemon_source **out)
{
	struct gl_daemon_source *arr = NULL;
	size_t n = 0, cap = 0;
	for (size_t i = 0; i < cfg->n_sacct; i++)
		add(&arr, &n, &cap, "sacct", cfg->sacct[i].cluster, cfg->sacct[i].interval_s, gl_sacct_poll_source_run,
		    &cfg->sacct[i]);
	for (size_t i = 0; i < cfg->n_kube; i++)
		add(&arr, &n, &cap, "kube", cfg->kube[i].cluster, cfg->kube[i].interval_s, gl_kube_ingest_source_run,
		    &cfg->kube[i]);
	for (size_t i = 0; i < cfg->n_dcgm; i++)
		add(&arr, &n, &cap, "dcgm", cfg->dcgm[i].cluster, cfg->dcgm[i].interval_s, gl_dcgm_scrape_source_run,
		    &cfg->dcgm[i]);
	for (size_t i = 0; i < cfg->n_nvidia_smi; i++) {
		/* one source a node: its name carries the node too */
		char who[256];
		snprintf(who, sizeof who, "%s/%s", cfg->nvidia_smi[i].cluster, cfg->nvidia_smi[i].node);
		add(&arr, &n, &cap, "nvidia-smi", who, cfg->nvidia_smi[i].interval_s, gl_nvsmi_ingest_source_run,
		    &cfg->nvidia_smi[i]);
	}
	for (size_t i = 0; i < cfg->n_slurm_nodes; i++)
		add(&arr, &n, &cap, "slurm-nodes", cfg->slurm_nodes[i].cluster, cfg->slurm_nodes[i].interval_s,
		    gl_nodes_poll_slurm_source_run, &cfg->slurm_nodes[i]);
	for (size_t i = 0; i < cfg->n_kube_nodes; i++)
		add(&arr, &n, &cap, "kube-nodes", cfg->kube_nodes[i].cluster, cfg->kube_nodes[i].interval_s,
		    gl_nodes_poll_kube_source_run, &cfg->kube_nodes[i]);
	/* serving endpoints: one source per cluster and interval, whose
	 * rounds scrape all of that group's targets at once */
	for (size_t i = 0; i < cfg->n_serving; i++) {
		size_t j = 0;
		while (j < i && (strcmp(cfg->serving[j].cluster, cfg->serving[i].cluster) ||
				 cfg->serving[j].interval_s != cfg->serving[i].interval_s))
			j++;
		if (j == i)
			add(&arr, &n, &cap, "serving", cfg->serving[i].cluster, cfg->serving[i].interval_s,
			    gl_serving_scrape_source_run, &cfg->serving[i]);
	}
	/* the daily aggregates follow whatever the sources above changed */
	add(&arr, &n, &cap, "rollup", "all", 60, rollup_run, NULL);
	add(&arr, &n, &cap, "runs", "months", GL_RUNDB_EVERY_S, runs_run, NULL);
	/* time partitions ahead of the writes, retention behind them */
	add(&arr, &n, &cap, "partitions", "all", 3600, partitions_run, NULL);
	/* forecasts asked for recently are refitted on fresh data */
	add(&arr, &n, &cap, "forecast", "cache", 300, gl_forecast_cache_refresh, NULL);
	/* the cache is this process's memory: every instance keeps its own */
	arr[n - 1].leased = 0;
	/* the previous month's report set on the 1st; budget alerts */
	add(&arr, &n, &cap, "reports", "all", 300, gl_report_sched_run, NULL);
	if (cfg->n_budgets)
		add(&arr, &n, &cap, "budgets", "all", cfg->budget_interval_s, budget_run, NULL);
	/* the month's figures /metrics serves, so a scrape runs no accounting */
	add(&arr, &n, &cap, "metrics", "ledger", GL_LEDGERMETRICS_INTERVAL_S, gl_ledgermetrics_refresh, NULL);
	/* like the forecast cache: each instance serves its own /metrics */
	arr[n - 1].leased = 0;
	/* further sources register here */
	*out = arr;
	return n;
}

int64_t gl_daemon_lease_ttl(const struct gl_daemon_self *self, int64_t interval_s)
{
	int64_t ttl = self->lease_ttl_s < interval_s ? self->lease_ttl_s : interval_s;
	return ttl < GL_LEASE_MIN_TTL_S ? GL_LEASE_MIN_TTL_S : ttl;
}

int gl_daemon_lease(struct gl_store *st, const struct gl_daemon_self *self, struct gl_daemon_source *s, int64_t now_s)
{
	struct gl_err err = {0};
	char who[GL_LEASE_INSTANCE_MAX];
	int64_t ttl, token = 0, retry;
	if (!self || !s->leased)
		return 1;
	ttl = gl_daemon_lease_ttl(self, s->interval_s);
	if (gl_lease_take(st, s->name, self->holder, self->instance, ttl, &token, who, sizeof who, &err)) {
		gl_log_fail(&s->lim, now_s, GL_LOG_ERROR, "%s: lease: %s", s->name, err.msg);
		s->token = 0;
		return 0;
	}
	gl_health_lease(s->name, token > 0, token > 0 ? self->instance : who);
	if (token > 0) {
		if (token != s->token)
			gl_log(GL_LOG_INFO, "%s: runs on this instance (%s, lease token %lld)", s->name, self->instance,
			       (long long)token);
		s->token = token;
		s->holder_seen[0] = '\0';
		return 1;
	}
	if (s->token || strcmp(who, s->holder_seen))
		gl_log(GL_LOG_INFO, "%s: runs on instance %s; this one takes over if its lease lapses", s->name,
		       who[0] ? who : "(none)");
	s->token = 0;
	snprintf(s->holder_seen, sizeof s->holder_seen, "%s", who);
	/* asked again at half the ttl: a dead holder's job moves here within
	 * a ttl and a half of its last renewal */
	retry = ttl / 2 > 1 ? ttl / 2 : 1;
	s->next_s = now_s + (retry < s->interval_s ? retry : s->interval_s);
	return 0;
}

void gl_daemon_tick(struct gl_store *st, const struct gl_config *cfg, const struct gl_daemon_self *self,
		    struct gl_daemon_source *s, size_t n, int64_t now_s, volatile int *stop)
{
	for (size_t i = 0; i < n && !(stop && *stop); i++) {
		char summary[512] = "";
		struct gl_err err = {0};
		struct gl_dbcancel_slot slot = {0};
		if (now_s < s[i].next_s)
			continue;
		s[i].next_s = now_s + s[i].interval_s;
		if (gl_store_revive(st, &err)) {
			gl_log_fail(&s[i].lim, now_s, GL_LOG_ERROR, "%s: %s", s[i].name, err.msg);
			continue;
		}
		if (!gl_daemon_lease(st, self, &s[i], now_s))
			continue;
		struct timespec t0, t1;
		const char *colon = strchr(s[i].name, ':');
		char kind[16];
		int rc;
		snprintf(kind, sizeof kind, "%.*s", colon ? (int)(colon - s[i].name) : 15, s[i].name);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		/* a stop cancels the source's statement in flight (one waiting on
		 * a lock would otherwise hold the stop for as long as the lock) */
		gl_dbcancel_begin(&slot, st, GL_DBCANCEL_WORK, s[i].name);
		rc = s[i].run(st, cfg, s[i].src, now_s, summary, sizeof summary, &err);
		gl_dbcancel_end(&slot);
		if (rc == -GL_EBUSY && self && s[i].leased)
			/* the fence refused a commit: the lease moved on while this
			 * run was under way (a pause, a stall); the next try finds
			 * out who holds it */
			s[i].token = 0;
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (rc) {
			/* failed mid-transaction (a cancel lands anywhere): the next
			 * source, and the stop's last audit anchor, start clean */
			struct gl_err rb = {0};
			int open = gl_store_rollback_open(st, &rb);
			if (open)
				gl_log(GL_LOG_WARN, "%s: left a transaction open; rolled back", s[i].name);
			if (open < 0)
				gl_log(GL_LOG_WARN, "%s: %s", s[i].name, rb.msg);
		}
		if (self && s[i].leased && gl_store_up(st)) {
			/* the next job (or the forecast refresh) writes under its own fence, or none */
			struct gl_err uf = {0};
			if (gl_lease_unfence(st, &uf))
				gl_log(GL_LOG_WARN, "%s: %s", s[i].name, uf.msg);
		}
		/* the whole-source entry; sources with many targets add their own */
		gl_health_report(kind, colon ? colon + 1 : "", "", rc == 0, now_s, rc ? err.msg : NULL,
				 (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
		if (rc) {
			/* the message may quote a command line, a URL or a
			 * command's stderr, built anywhere below: the log is read
			 * by more people than the database, so it is blanked as
			 * ingest_runs.error is */
			struct gl_strbuf why = GL_STRBUF_INIT;
			gl_redact_secrets(err.msg, &why);
			if (gl_dbcancel_requested(GL_DBCANCEL_WORK))
				/* not a fault of the source: the watermark still
				 * says where the next start resumes */
				gl_log(GL_LOG_INFO, "%s: cut short by the stop: %s", s[i].name, gl_strbuf_cstr(&why));
			else
				gl_log_fail(&s[i].lim, now_s, GL_LOG_ERROR, "%s: %s", s[i].name, gl_strbuf_cstr(&why));
			gl_strbuf_fini(&why);
			continue;
		}
		gl_log_ok(&s[i].lim, s[i].name);
		if (!strcmp(summary, s[i].last) && now_s - s[i].last_logged_s < GL_DAEMON_REPEAT_S) {
			s[i].repeats++;
			gl_log(GL_LOG_DEBUG, "%s: %s", s[i].name, summary);
		} else if (!strcmp(summary, s[i].last) && s[i].repeats) {
			gl_log(GL_LOG_INFO, "%s: %s (the same %llu more times in the last %lld min)", s[i].name, summary,
			       (unsigned long long)s[i].repeats, (long long)(now_s - s[i].last_logged_s) / 60);
			s[i].repeats = 0;
			s[i].last_logged_s = now_s;
		} else {
			gl_log(GL_LOG_INFO, "%s: %s", s[i].name, summary);
			snprintf(s[i].last, sizeof s[i].last, "%s", summary);
			s[i].repeats = 0;
			s[i].last_logged_s = now_s;
		}
	}
}
