/* `gpuledger forecast backtest`: any CSV time series through the forecaster
 * (src/domain/forecast.c), scored on a test period beside the baselines.
 * Rows are summed into step buckets (slots with no rows are 0: the inputs
 * are counts and GPU-hours); with --key-col, one series per key, scored
 * each and pooled. Every test block of `horizon` slots is forecast from the
 * history before it only (rolling origin), each method on its own. */
#include "gl/cli.h"
#include "gl/forecast.h"
#include "gl/timeutil.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage_forecast[] =
	"usage: gpuledger forecast backtest --file SERIES.csv --time-col C --value-col C\n"
	"         --step hour|day|week --horizon H --test-from TIME [--key-col C]\n"
	"         [--method auto|naive|snaive_day|snaive_week|median_day|median_week|hw|hw_log|combo|\n"
	"                  median_pool|ses|ensemble]\n"
	"         [--origins N] [--format text|json]\n"
	"Sums the CSV's rows into step buckets (one series per --key-col value), forecasts every\n"
	"block of H slots from --test-from on from the history before it, and prints MAE, RMSE,\n"
	"MASE (scaled by the training-period daily seasonal-naive MAE), WAPE, sMAPE, 80/95 %\n"
	"interval coverage and the scaled pinball loss of the 80 % interval for each method,\n"
	"the baselines beside the chosen one (auto). docs/forecast.md explains the methods.\n";

struct csv_series {
	char *key;
	double *y; /* nslots */
};

struct csv_data {
	int64_t t0, step_s;
	size_t nslots;
	struct csv_series *s;
	size_t ns;
};

static void csv_data_fini(struct csv_data *d)
{
	for (size_t i = 0; i < d->ns; i++) {
		free(d->s[i].key);
		free(d->s[i].y);
	}
	free(d->s);
	memset(d, 0, sizeof *d);
}

/* Splits one CSV line in place (RFC 4180 quotes; no newlines inside
 * fields). Returns the field count, at most max. */
static int split_csv(char *line, char **f, int max)
{
	int n = 0;
	char *p = line;
	while (n < max) {
		char *w = p;
		f[n++] = p;
		if (*p == '"') {
			p++;
			for (;;) {
				if (!*p)
					break;
				if (*p == '"' && p[1] == '"') {
					*w++ = '"';
					p += 2;
				} else if (*p == '"') {
					p++;
					break;
				} else
					*w++ = *p++;
			}
			while (*p && *p != ',')
				p++;
		} else {
			while (*p && *p != ',')
				*w++ = *p++;
		}
		int more = *p == ',';
		*w = '\0';
		if (!more)
			break;
		p++;
	}
	return n;
}

static int64_t bucket_of(int64_t t, int64_t step_s)
{
	/* weeks start on Monday: 1970-01-01 was a Thursday */
	int64_t off = step_s == 7 * 86400 ? 4 * 86400 : 0;
	int64_t b = (t - off) / step_s;
	if ((t - off) % step_s < 0)
		b--;
	return b * step_s + off;
}

struct row {
	int64_t t;
	double v;
	size_t key;
};

static int read_series(const char *path, const char *tcol, const char *vcol, const char *kcol, int64_t step_s,
		       struct csv_data *d, struct gl_err *err)
{
	size_t len, nrows = 0, caprows = 0, lineno = 0;
	char *buf = gl_cli_read_file(path, 1, &len, err), *p, *save = NULL;
	struct row *rows = NULL;
	char *f[256];
	int ti = -1, vi = -1, ki = -1, nf, rc = 0;
	int64_t tmin = INT64_MAX, tmax = INT64_MIN;

	memset(d, 0, sizeof *d);
	if (!buf)
		return -GL_EIO;
	for (p = strtok_r(buf, "\n", &save); p; p = strtok_r(NULL, "\n", &save)) {
		size_t l = strlen(p);
		lineno++;
		if (l && p[l - 1] == '\r')
			p[--l] = '\0';
		if (!l)
			continue;
		nf = split_csv(p, f, 256);
		if (ti < 0) {
			for (int i = 0; i < nf; i++) {
				if (!strcmp(f[i], tcol))
					ti = i;
				if (!strcmp(f[i], vcol))
					vi = i;
				if (kcol && !strcmp(f[i], kcol))
					ki = i;
			}
			if (ti < 0 || vi < 0 || (kcol && ki < 0)) {
				rc = gl_err_set(err, GL_EINVAL, "%s:%zu: no column '%s' in the header", path, lineno,
						ti < 0 ? tcol : vi < 0 ? vcol : kcol);
				goto out;
			}
			continue;
		}
		if (nf <= ti || nf <= vi || (ki >= 0 && nf <= ki)) {
			rc = gl_err_set(err, GL_EINVAL, "%s:%zu: %d fields, too few", path, lineno, nf);
			goto out;
		}
		struct row r;
		char *end;
		if (gl_timeutil_parse(f[ti], strlen(f[ti]), &r.t)) {
			rc = gl_err_set(err, GL_EINVAL, "%s:%zu: %s: bad time '%s'", path, lineno, tcol, f[ti]);
			goto out;
		}
		r.v = strtod(f[vi], &end);
		if (end == f[vi] || *end || !isfinite(r.v)) {
			rc = gl_err_set(err, GL_EINVAL, "%s:%zu: %s: bad number '%s'", path, lineno, vcol, f[vi]);
			goto out;
		}
		r.key = 0;
		if (ki >= 0) {
			size_t k;
			for (k = 0; k < d->ns && strcmp(d->s[k].key, f[ki]); k++)
				;
			if (k == d->ns) {
				d->s = gl_xrealloc(d->s, sizeof *d->s * (d->ns + 1));
				d->s[d->ns++] = (struct csv_series){gl_xstrdup(f[ki]), NULL};
			}
			r.key = k;
		}
		if (nrows == caprows) {
			caprows = caprows ? 2 * caprows : 4096;
			rows = gl_xrealloc(rows, sizeof *rows * caprows);
		}
		rows[nrows++] = r;
		if (r.t < tmin)
			tmin = r.t;
		if (r.t > tmax)
			tmax = r.t;
	}
	if (!nrows) {
		rc = gl_err_set(err, GL_EINVAL, "%s: no data rows", path);
		goto out;
	}
	if (!d->ns) {
		d->s = gl_xcalloc(1, sizeof *d->s);
		d->s[0].key = gl_xstrdup("all");
		d->ns = 1;
	}
	d->step_s = step_s;
	/* slot 0 starts a day (a week for weekly steps), so seasonal phases
	 * and the weekday are known; slots before the first row are missing */
	d->t0 = bucket_of(tmin, step_s < 86400 ? 86400 : step_s);
	d->nslots = (size_t)((bucket_of(tmax, step_s) - d->t0) / step_s) + 1;
	if (d->nslots > 10u * 1000 * 1000) {
		rc = gl_err_set(err, GL_ERANGE, "%s: %zu slots, too many for --step", path, d->nslots);
		goto out;
	}
	for (size_t k = 0; k < d->ns; k++) {
		d->s[k].y = gl_xcalloc(d->nslots, sizeof(double));
		for (int64_t t = d->t0; t < bucket_of(tmin, step_s); t += step_s)
			d->s[k].y[(t - d->t0) / step_s] = NAN;
	}
	for (size_t i = 0; i < nrows; i++)
		d->s[rows[i].key].y[(bucket_of(rows[i].t, step_s) - d->t0) / step_s] += rows[i].v;
out:
	free(rows);
	free(buf);
	if (rc)
		csv_data_fini(d);
	return rc;
}

/* One method's test-period forecasts for one series. */
struct bt {
	double *f, *lo80, *hi80, *lo95, *hi95; /* ntest each */
	int ok;
	int chosen[GL_FORECAST_METHOD_COUNT]; /* auto: how often each was chosen */
	int fallbacks;
};

#define NROWS (GL_FORECAST_METHOD_COUNT + 1) /* row 0: auto */

static int backtest_series(const double *y, size_t n, size_t test0, const struct gl_forecast_opts *base,
			   struct bt *bt, struct gl_err *err)
{
	size_t ntest = n - test0, H = (size_t)base->horizon;
	for (int r = 0; r < NROWS; r++) {
		struct gl_forecast_opts o = *base;
		o.method = r == 0 ? (base->method == GL_FORECAST_AUTO ? GL_FORECAST_AUTO : base->method) : r - 1;
		bt[r].f = gl_xcalloc(5 * (ntest ? ntest : 1), sizeof(double));
		bt[r].lo80 = bt[r].f + ntest;
		bt[r].hi80 = bt[r].lo80 + ntest;
		bt[r].lo95 = bt[r].hi80 + ntest;
		bt[r].hi95 = bt[r].lo95 + ntest;
		bt[r].ok = 1;
		for (size_t org = test0; org < n; org += H) {
			struct gl_forecast_result res;
			struct gl_err e2 = {0};
			if (gl_forecast_fit(y, org, &o, &res, &e2)) {
				if (r == 0)
					return gl_err_set(err, GL_EINVAL, "%s", e2.msg);
				bt[r].ok = 0;
				break;
			}
			if (r > 0 && res.method != r - 1) /* the method could not run (fallback) */
				bt[r].ok = 0;
			if (res.method >= 0)
				bt[r].chosen[res.method]++;
			bt[r].fallbacks += res.fallback;
			for (size_t h = 0; h < H && org + h < n; h++) {
				size_t i = org - test0 + h;
				bt[r].f[i] = res.point[h];
				bt[r].lo80[i] = res.lo80[h];
				bt[r].hi80[i] = res.hi80[h];
				bt[r].lo95[i] = res.lo95[h];
				bt[r].hi95[i] = res.hi95[h];
			}
			gl_forecast_result_fini(&res);
			if (!bt[r].ok)
				break;
		}
	}
	return 0;
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void add_num(cJSON *o, const char *k, double v)
{
	if (isfinite(v))
		cJSON_AddNumberToObject(o, k, v);
	else
		cJSON_AddNullToObject(o, k);
}

static cJSON *metrics_json(const struct gl_forecast_metrics *m)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "n", (double)m->n);
	add_num(o, "mae", m->mae);
	add_num(o, "rmse", m->rmse);
	add_num(o, "mase", m->mase);
	add_num(o, "wape", m->wape);
	add_num(o, "smape", m->smape);
	add_num(o, "coverage80", m->coverage80);
	add_num(o, "coverage95", m->coverage95);
	add_num(o, "pinball80", m->pinball80);
	return o;
}

static void print_row(const char *series, const char *name, const struct gl_forecast_metrics *m, const char *extra)
{
	printf("%-12s %-12s %6ld %10.2f %10.2f %7.3f %7.1f%% %7.1f%% %6.1f%% %6.1f%% %8.3f  %s\n", series, name, m->n,
	       m->mae, m->rmse, m->mase, 100 * m->wape, 100 * m->smape, 100 * m->coverage80, 100 * m->coverage95,
	       m->pinball80, extra);
}

static int cmd_backtest(int argc, char **argv)
{
	const char *file = NULL, *tcol = NULL, *vcol = NULL, *kcol = NULL, *step = NULL, *horizon = NULL,
		   *test_from = NULL, *method = "auto", *origins = NULL, *format = "text";
	const struct gl_cli_opt opts[] = {
		{"file", &file}, {"time-col", &tcol}, {"value-col", &vcol}, {"key-col", &kcol},
		{"step", &step}, {"horizon", &horizon}, {"test-from", &test_from}, {"method", &method},
		{"origins", &origins}, {"format", &format}, {NULL, NULL},
	};
	struct gl_forecast_opts fo = {0};
	struct csv_data d = {0};
	struct gl_err err = {0};
	struct bt *all = NULL;
	cJSON *root = NULL;
	int rc, json;
	int64_t test_s, step_s;
	size_t test0, ntest;
	char *end;

	if ((rc = gl_cli_parse_opts(argc, argv, "forecast backtest", usage_forecast, opts)) >= 0)
		return rc;
	rc = 0;
	if (!file || !tcol || !vcol || !step || !horizon || !test_from)
		return gl_cli_usage_error(usage_forecast, "forecast backtest: --file, --time-col, --value-col, --step, "
							  "--horizon and --test-from are required");
	if (!strcmp(step, "hour"))
		step_s = 3600, fo.slots_per_day = 24, fo.slots_per_week = 168;
	else if (!strcmp(step, "day"))
		step_s = 86400, fo.slots_per_day = 1, fo.slots_per_week = 7;
	else if (!strcmp(step, "week"))
		step_s = 7 * 86400, fo.slots_per_day = 1, fo.slots_per_week = 1;
	else
		return gl_cli_usage_error(usage_forecast, "forecast backtest: --step: '%s' is not hour, day or week", step);
	fo.horizon = (int)strtol(horizon, &end, 10);
	if (*end || fo.horizon < 1 || fo.horizon > 10000)
		return gl_cli_usage_error(usage_forecast, "forecast backtest: --horizon: '%s' is not 1..10000", horizon);
	if (origins) {
		fo.origins = (int)strtol(origins, &end, 10);
		if (*end || fo.origins < 1 || fo.origins > 1000)
			return gl_cli_usage_error(usage_forecast, "forecast backtest: --origins: '%s' is not 1..1000",
						  origins);
	}
	fo.method = gl_forecast_method_parse(method);
	if (fo.method == -2)
		return gl_cli_usage_error(usage_forecast, "forecast backtest: --method: unknown method '%s'", method);
	if (gl_timeutil_parse(test_from, strlen(test_from), &test_s))
		return gl_cli_usage_error(usage_forecast, "forecast backtest: --test-from: bad time '%s'", test_from);
	if (strcmp(format, "text") && strcmp(format, "json"))
		return gl_cli_usage_error(usage_forecast, "forecast backtest: --format: '%s' is not text or json", format);
	json = !strcmp(format, "json");

	if (read_series(file, tcol, vcol, kcol, step_s, &d, &err))
		return gl_cli_fail(&err);
	if (test_s <= d.t0 || bucket_of(test_s, step_s) > d.t0 + (int64_t)(d.nslots - 1) * step_s) {
		gl_err_set(&err, GL_EINVAL, "%s: --test-from %s is not inside the series", file, test_from);
		rc = gl_cli_fail(&err);
		goto out;
	}
	test0 = (size_t)((bucket_of(test_s, step_s) - d.t0) / step_s);
	fo.first_weekday = gl_timeutil_weekday(d.t0);
	ntest = d.nslots - test0;

	all = gl_xcalloc(d.ns * NROWS, sizeof *all);
	for (size_t k = 0; k < d.ns; k++)
		if (backtest_series(d.s[k].y, d.nslots, test0, &fo, all + k * NROWS, &err)) {
			gl_err_prefix(&err, "%s: series %s: ", file, d.s[k].key);
			rc = gl_cli_fail(&err);
			goto out;
		}

	if (json) {
		root = cJSON_CreateObject();
		cJSON_AddStringToObject(root, "file", file);
		cJSON_AddStringToObject(root, "step", step);
		cJSON_AddNumberToObject(root, "horizon", fo.horizon);
		cJSON_AddNumberToObject(root, "train_slots", (double)test0);
		cJSON_AddNumberToObject(root, "test_slots", (double)ntest);
	} else {
		printf("# %s: %zu series, %zu training + %zu test slots of one %s, horizon %d\n", file, d.ns, test0, ntest,
		       step, fo.horizon);
		printf("%-12s %-12s %6s %10s %10s %7s %8s %8s %7s %7s %8s\n", "series", "method", "n", "MAE", "RMSE",
		       "MASE", "WAPE", "sMAPE", "cov80", "cov95", "pinball");
	}
	cJSON *jser = json ? cJSON_AddArrayToObject(root, "series") : NULL;
	cJSON *jpool = json ? cJSON_AddArrayToObject(root, "pooled") : NULL;
	double *ya = gl_xmalloc(sizeof(double) * d.ns * (ntest ? ntest : 1) * 6);
	double *mases = gl_xmalloc(sizeof(double) * d.ns);
	/* row 0 is what was asked: the selection, or one method by name */
	char asked[64];
	snprintf(asked, sizeof asked, "%s (asked)",
		 fo.method == GL_FORECAST_AUTO ? "auto" : gl_forecast_method_name(fo.method));
	for (int r = 0; r < NROWS; r++) {
		const char *name = r == 0 ? (fo.method == GL_FORECAST_AUTO ? "auto" : asked) : gl_forecast_method_name(r - 1);
		size_t npool = 0, nm = 0;
		int pool_ok = 1;
		double *fa = ya + d.ns * ntest, *l8 = fa + d.ns * ntest, *h8 = l8 + d.ns * ntest,
		       *l9 = h8 + d.ns * ntest, *h9 = l9 + d.ns * ntest;
		for (size_t k = 0; k < d.ns; k++) {
			struct bt *b = &all[k * NROWS + (size_t)r];
			struct gl_forecast_metrics m;
			char extra[256] = "";
			double scale = gl_forecast_mase_scale(d.s[k].y, test0, fo.slots_per_day);
			if (!b->ok) {
				pool_ok = 0;
				continue;
			}
			gl_forecast_metrics_compute(d.s[k].y + test0, b->f, b->lo80, b->hi80, b->lo95, b->hi95, ntest,
						    scale, &m);
			if (isfinite(m.mase))
				mases[nm++] = m.mase;
			memcpy(ya + npool, d.s[k].y + test0, sizeof(double) * ntest);
			memcpy(fa + npool, b->f, sizeof(double) * ntest);
			memcpy(l8 + npool, b->lo80, sizeof(double) * ntest);
			memcpy(h8 + npool, b->hi80, sizeof(double) * ntest);
			memcpy(l9 + npool, b->lo95, sizeof(double) * ntest);
			memcpy(h9 + npool, b->hi95, sizeof(double) * ntest);
			npool += ntest;
			if (r == 0) {
				size_t off = 0;
				off += (size_t)snprintf(extra, sizeof extra, "chose");
				for (int m2 = 0; m2 < GL_FORECAST_METHOD_COUNT && off < sizeof extra; m2++)
					if (b->chosen[m2])
						off += (size_t)snprintf(extra + off, sizeof extra - off, " %s:%d",
									 gl_forecast_method_name(m2), b->chosen[m2]);
				if (b->fallbacks && off < sizeof extra)
					snprintf(extra + off, sizeof extra - off, " (fallback %d)", b->fallbacks);
			}
			if (json) {
				cJSON *o = metrics_json(&m);
				cJSON_AddStringToObject(o, "series", d.s[k].key);
				cJSON_AddStringToObject(o, "method", name);
				cJSON_AddNumberToObject(o, "scale", scale);
				cJSON_AddItemToArray(jser, o);
			} else if (d.ns == 1 || r == 0) {
				print_row(d.s[k].key, name, &m, extra);
			}
		}
		if (d.ns > 1 && pool_ok) {
			struct gl_forecast_metrics m;
			double med = NAN;
			/* pooled WAPE and coverage; MASE is per series, so its median */
			gl_forecast_metrics_compute(ya, fa, l8, h8, l9, h9, npool, 0, &m);
			if (nm) {
				gl_qsort(mases, nm, sizeof(double), cmp_dbl);
				med = nm % 2 ? mases[nm / 2] : 0.5 * (mases[nm / 2 - 1] + mases[nm / 2]);
			}
			m.mase = med;
			if (json) {
				cJSON *o = metrics_json(&m);
				cJSON_AddStringToObject(o, "method", name);
				cJSON_AddItemToArray(jpool, o);
			} else {
				print_row("ALL", name, &m, "(MASE: median over series; pinball: n/a pooled)");
			}
		}
	}
	free(ya);
	free(mases);
	if (json) {
		char *s = cJSON_PrintUnformatted(root);
		puts(s);
		free(s);
	}
out:
	if (all)
		for (size_t i = 0; i < d.ns * NROWS; i++)
			free(all[i].f);
	free(all);
	cJSON_Delete(root);
	csv_data_fini(&d);
	return rc;
}

int gl_cli_forecast(struct gl_config *cfg, int argc, char **argv)
{
	(void)cfg;
	if (argc >= 2 && !strcmp(argv[1], "backtest"))
		return cmd_backtest(argc - 1, argv + 1);
	if (gl_cli_wants_help(argc, argv)) {
		fputs(usage_forecast, stdout);
		return 0;
	}
	return gl_cli_usage_error(usage_forecast, "forecast: expected 'backtest'");
}
