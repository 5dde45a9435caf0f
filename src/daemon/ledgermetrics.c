/* The ledger's figures on /metrics (see include/gl/ledgermetrics.h). */
#include "gl/ledgermetrics.h"
#include "gl/accounting.h"
#include "gl/apijson.h"
#include "gl/budget.h"
#include "gl/capstore.h"
#include "gl/chargeback.h"
#include "gl/cost.h"
#include "gl/window.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct gl_strbuf cached = GL_STRBUF_INIT;

/* one owner x cluster series */
struct series {
	const char *owner, *cluster;
	int64_t micros, gpu_s;
};

static int by_cost_desc(const void *a, const void *b)
{
	const struct series *x = a, *y = b;
	if (x->micros != y->micros)
		return x->micros < y->micros ? 1 : -1;
	if (x->gpu_s != y->gpu_s)
		return x->gpu_s < y->gpu_s ? 1 : -1;
	return strcmp(x->owner, y->owner);
}

/* Beyond GL_LEDGERMETRICS_MAX_SERIES series, keeps the costliest half and
 * sums the others per cluster into "__other__": a scrape's size stays
 * bounded by the owners' number (clusters are few), and the sums exact. */
static size_t fold_tail(struct series *s, size_t n)
{
	size_t keep, out;
	if (n <= GL_LEDGERMETRICS_MAX_SERIES)
		return n;
	gl_qsort(s, n, sizeof *s, by_cost_desc);
	keep = GL_LEDGERMETRICS_MAX_SERIES / 2;
	out = keep;
	for (size_t i = keep; i < n; i++) {
		/* read before the write below: out <= i, so s[out] may be s[i] */
		struct series x = s[i];
		size_t j = keep;
		while (j < out && strcmp(s[j].cluster, x.cluster) != 0)
			j++;
		if (j == out) {
			s[out] = (struct series){"__other__", x.cluster, 0, 0};
			out++;
		}
		s[j].micros += x.micros;
		s[j].gpu_s += x.gpu_s;
	}
	return out;
}

static void sample_i64(struct gl_strbuf *o, const char *metric, const char *const *labels, int64_t v)
{
	char buf[32];
	snprintf(buf, sizeof buf, "%lld", (long long)v);
	gl_apijson_prom_sample(o, metric, labels, buf);
}

/* currency units, exact to the micro-unit */
static void sample_money(struct gl_strbuf *o, const char *metric, const char *const *labels, int64_t micros)
{
	char buf[48];
	gl_cost_format(micros, 6, buf, sizeof buf);
	gl_apijson_prom_sample(o, metric, labels, buf);
}

static void put_owner_series(struct gl_strbuf *o, const struct gl_config *cfg, const struct gl_chargeback_step *st)
{
	const char *agg = cfg->reports_aggregate;
	struct series *s = gl_xcalloc(st->n_lines + 1, sizeof *s);
	size_t n = st->n_lines;
	for (size_t i = 0; i < n; i++)
		s[i] = (struct series){st->lines[i].key[0], st->lines[i].key[1], st->lines[i].total_micros,
				       st->lines[i].alloc_s};
	n = fold_tail(s, n);
	gl_strbuf_printf(o, "# HELP gpuledger_month_cost Cost of the GPU time allocated this month so far (UTC), in"
			    " currency units, per %s and cluster (/v1/chargeback window=month, shareIdle none).\n"
			    "# TYPE gpuledger_month_cost gauge\n", agg);
	for (size_t i = 0; i < n; i++)
		sample_money(o, "gpuledger_month_cost",
			     (const char *[]){agg, s[i].owner, "cluster", s[i].cluster, "currency", cfg->currency, NULL},
			     s[i].micros);
	gl_strbuf_printf(o, "# HELP gpuledger_month_gpu_seconds GPU-seconds allocated this month so far (UTC) per %s"
			    " and cluster.\n# TYPE gpuledger_month_gpu_seconds gauge\n", agg);
	for (size_t i = 0; i < n; i++)
		sample_i64(o, "gpuledger_month_gpu_seconds", (const char *[]){agg, s[i].owner, "cluster", s[i].cluster, NULL},
			   s[i].gpu_s);
	free(s);
}

static int put_chargeback(struct gl_store *st, const struct gl_config *cfg, const struct gl_window *month, int64_t now_s,
			  struct gl_strbuf *o, struct gl_err *err)
{
	const char *dims[] = {cfg->reports_aggregate, "cluster"};
	struct gl_accounting_query q;
	struct gl_accounting_meta meta = {0};
	struct gl_chargeback cb;
	int rc;

	gl_chargeback_init(&cb, 2, GL_CHARGEBACK_SHARE_NONE, 1);
	gl_accounting_query_init(&q, month, 1, dims, 2, now_s);
	if ((rc = gl_accounting_chargeback_finished(st, &q, &cb, &meta, err)))
		goto out;
	put_owner_series(o, cfg, &cb.steps[0]);
out:
	gl_accounting_meta_fini(&meta);
	gl_chargeback_fini(&cb);
	return rc;
}

static int put_capacity(struct gl_store *st, const struct gl_config *cfg, const struct gl_window *month, int64_t now_s,
			struct gl_strbuf *o, struct gl_err *err)
{
	static const char *const names[] = {"reported", "allocated", "idle"};
	static const char *const help[] = {"GPU-seconds of capacity the inventory reported",
					   "GPU-seconds allocated to jobs",
					   "GPU-seconds neither allocated, down nor reserved"};
	/* as /v1/capacity: the seconds that have not happened yet are no capacity */
	struct gl_window w = {month->start_s, month->end_s < now_s ? month->end_s : now_s};
	struct gl_capacity_row *rows = NULL;
	size_t n = 0;
	/* firm capacity, as /v1/capacity answers by default */
	struct gl_capacity_observed obs = {cfg->inventory_absent_grace_s, 0};
	int rc = gl_capstore_query(st, &w, 1, GL_CAPACITY_AGG_MODEL, NULL, now_s, &obs, &rows, &n, err);
	if (rc)
		return rc;
	for (size_t m = 0; m < GL_ARRAY_LEN(names); m++) {
		char metric[80];
		snprintf(metric, sizeof metric, "gpuledger_capacity_%s_gpu_seconds", names[m]);
		gl_strbuf_printf(o, "# HELP %s %s this month so far (UTC), per cluster and GPU model (/v1/capacity).\n"
				    "# TYPE %s gauge\n", metric, help[m], metric);
		for (size_t i = 0; i < n; i++) {
			const struct gl_capacity_row *r = &rows[i];
			int64_t v = m == 0 ? r->reported_gpu_seconds : m == 1 ? r->allocated_gpu_seconds : r->idle_gpu_seconds;
			sample_i64(o, metric, (const char *[]){"cluster", r->cluster, "gpu_model", r->key, NULL}, v);
		}
	}
	gl_strbuf_puts(o, "# HELP gpuledger_capacity_saturation_ratio Allocated over available (reported less down and"
			  " planned down) GPU time this month so far, per cluster and GPU model; absent when none was"
			  " available.\n# TYPE gpuledger_capacity_saturation_ratio gauge\n");
	for (size_t i = 0; i < n; i++) {
		double sat = gl_capacity_saturation(&rows[i]);
		char buf[32];
		if (sat < 0)
			continue;
		snprintf(buf, sizeof buf, "%.6f", sat);
		gl_apijson_prom_sample(o, "gpuledger_capacity_saturation_ratio",
				       (const char *[]){"cluster", rows[i].cluster, "gpu_model", rows[i].key, NULL}, buf);
	}
	free(rows);
	return 0;
}

/* one gauge per budget: spend (forecast: the month-end forecast) over the budget */
static void put_ratio(struct gl_strbuf *o, const char *metric, const char *help, const struct gl_budget_line *lines,
		      size_t n, int forecast)
{
	gl_strbuf_printf(o, "# HELP %s %s\n# TYPE %s gauge\n", metric, help, metric);
	for (size_t i = 0; i < n; i++) {
		char buf[32];
		if (lines[i].budget_micros <= 0)
			continue;
		snprintf(buf, sizeof buf, "%.6f",
			 (double)(forecast ? lines[i].forecast_micros : lines[i].spend_micros) / (double)lines[i].budget_micros);
		gl_apijson_prom_sample(o, metric, (const char *[]){"budget", lines[i].owner, "aggregate", lines[i].aggregate, NULL},
				       buf);
	}
}

static int put_budgets(struct gl_store *st, const struct gl_config *cfg, const struct gl_window *month, int64_t now_s,
		       struct gl_strbuf *o, struct gl_err *err)
{
	struct gl_budget_line *lines;
	size_t n = 0;
	int rc;
	if (!cfg->n_budgets)
		return 0;
	lines = gl_xcalloc(cfg->n_budgets, sizeof *lines);
	if ((rc = gl_budget_status(st, cfg, month->start_s, now_s, lines, cfg->n_budgets, &n, err)))
		goto out;
	put_ratio(o, "gpuledger_budget_used_ratio",
		  "Spend this month so far over the month's budget (/v1/budgets pct_used / 100).", lines, n, 0);
	put_ratio(o, "gpuledger_budget_forecast_ratio",
		  "The month-end spend forecast over the month's budget (/v1/budgets forecast_pct / 100).", lines, n, 1);
out:
	free(lines);
	return rc;
}

int gl_ledgermetrics_build(struct gl_store *st, const struct gl_config *cfg, int64_t now_s, struct gl_strbuf *o,
			   struct gl_err *err)
{
	struct gl_window month;
	int rc;
	if ((rc = gl_window_parse("month", now_s, &month, err)))
		return rc;
	if ((rc = put_chargeback(st, cfg, &month, now_s, o, err)) || (rc = put_capacity(st, cfg, &month, now_s, o, err)) ||
	    (rc = put_budgets(st, cfg, &month, now_s, o, err)))
		return rc;
	gl_strbuf_printf(o, "# HELP gpuledger_ledger_metrics_timestamp_seconds When the month's figures above were"
			    " computed (the daemon refreshes them every %d s).\n"
			    "# TYPE gpuledger_ledger_metrics_timestamp_seconds gauge\n"
			    "gpuledger_ledger_metrics_timestamp_seconds %lld\n",
			 GL_LEDGERMETRICS_INTERVAL_S, (long long)now_s);
	return 0;
}

int gl_ledgermetrics_refresh(struct gl_store *st, const struct gl_config *cfg, const void *src, int64_t now_s, char *summary,
			     size_t n, struct gl_err *err)
{
	struct gl_strbuf o = GL_STRBUF_INIT, old;
	int rc = gl_ledgermetrics_build(st, cfg, now_s, &o, err);
	if (rc) {
		gl_strbuf_fini(&o);
		return rc;
	}
	snprintf(summary, n, "%zu bytes of month-to-date metrics", o.len);
	pthread_mutex_lock(&mu);
	old = cached;
	cached = o;
	pthread_mutex_unlock(&mu);
	gl_strbuf_fini(&old);
	return 0;
}

void gl_ledgermetrics_append(struct gl_strbuf *o)
{
	pthread_mutex_lock(&mu);
	if (cached.len)
		gl_strbuf_append(o, cached.p, cached.len);
	pthread_mutex_unlock(&mu);
}
