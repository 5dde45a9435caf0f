/* nvidia-smi CSV captures -> GPUs, readings and compute apps (see include/gl/nvsmi.h). */
#include "gl/nvsmi.h"
#include "gl/promtext.h"
#include "gl/strbuf.h"
#include "gl/timeutil.h"
#include "gl/utf8.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the result: growth, GPU index, problems --------------------------- */

static void *grow(void *p, size_t *cap, size_t n, size_t elem)
{
	if (n < *cap)
		return p;
	*cap = *cap ? *cap * 2 : 16;
	return gl_xrealloc(p, *cap * elem);
}

void gl_nvsmi_problem(struct gl_nvsmi_result *res, size_t line, const char *fmt, ...)
{
	struct gl_strbuf b = GL_STRBUF_INIT;
	va_list ap;

	if (res->nproblems >= GL_NVSMI_MAX_PROBLEMS) {
		res->problems_dropped++;
		return;
	}
	va_start(ap, fmt);
	gl_strbuf_vprintf(&b, fmt, ap);
	va_end(ap);
	res->problems = grow(res->problems, &res->cap_problems, res->nproblems, sizeof *res->problems);
	res->problems[res->nproblems].line = line;
	res->problems[res->nproblems].reason = gl_strbuf_steal(&b);
	res->nproblems++;
}

struct gl_nvsmi_sample *gl_nvsmi_sample_add(struct gl_nvsmi_result *res)
{
	struct gl_nvsmi_sample *s;
	res->samples = grow(res->samples, &res->cap_samples, res->nsamples, sizeof *res->samples);
	s = &res->samples[res->nsamples++];
	memset(s, 0, sizeof *s);
	return s;
}

struct gl_nvsmi_app *gl_nvsmi_app_add(struct gl_nvsmi_result *res)
{
	struct gl_nvsmi_app *a;
	res->apps = grow(res->apps, &res->cap_apps, res->napps, sizeof *res->apps);
	a = &res->apps[res->napps++];
	memset(a, 0, sizeof *a);
	a->used_mib = -1;
	return a;
}

static uint64_t uuid_hash(const char *s, size_t n, int gi_id)
{
	uint64_t h = UINT64_C(1469598103934665603) ^ (uint64_t)(uint32_t)gi_id;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * UINT64_C(1099511628211);
	return h ^ (h >> 29);
}

static void index_rebuild(struct gl_nvsmi_result *res)
{
	size_t cap = res->index_cap ? res->index_cap * 2 : 64;
	uint32_t *idx = gl_xcalloc(cap, sizeof *idx);

	for (size_t i = 0; i < res->ngpus; i++) {
		const struct gl_nvsmi_gpu *g = &res->gpus[i];
		size_t j = (size_t)uuid_hash(g->uuid, strlen(g->uuid), g->gi_id) & (cap - 1);
		while (idx[j])
			j = (j + 1) & (cap - 1);
		idx[j] = (uint32_t)(i + 1);
	}
	free(res->index);
	res->index = idx;
	res->index_cap = cap;
}

/* The GPU (uuid, gi_id), made when new; its index in res->gpus. */
size_t gl_nvsmi_gpu_get(struct gl_nvsmi_result *res, const char *uuid, size_t n, int gi_id)
{
	struct gl_nvsmi_gpu *g;
	size_t j;

	if (!res->index_cap)
		index_rebuild(res);
	j = (size_t)uuid_hash(uuid, n, gi_id) & (res->index_cap - 1);
	while (res->index[j]) {
		g = &res->gpus[res->index[j] - 1];
		if (g->gi_id == gi_id && strlen(g->uuid) == n && !memcmp(g->uuid, uuid, n))
			return res->index[j] - 1;
		j = (j + 1) & (res->index_cap - 1);
	}
	res->gpus = grow(res->gpus, &res->cap_gpus, res->ngpus, sizeof *res->gpus);
	g = &res->gpus[res->ngpus];
	memset(g, 0, sizeof *g);
	g->uuid = gl_xstrndup(uuid, n);
	g->gi_id = gi_id;
	g->index = g->minor = g->mig_mode = -1;
	g->memory_total_mib = -1;
	g->power_limit_w = -1;
	res->index[j] = (uint32_t)++res->ngpus;
	if (res->ngpus * 2 > res->index_cap)
		index_rebuild(res);
	return res->ngpus - 1;
}

void gl_nvsmi_result_fini(struct gl_nvsmi_result *res)
{
	if (!res)
		return;
	for (size_t i = 0; i < res->ngpus; i++) {
		struct gl_nvsmi_gpu *g = &res->gpus[i];
		free(g->uuid);
		free(g->model);
		free(g->pci_bus_id);
		free(g->driver_version);
		free(g->serial);
	}
	for (size_t i = 0; i < res->napps; i++)
		free(res->apps[i].process_name);
	for (size_t i = 0; i < res->nproblems; i++)
		free(res->problems[i].reason);
	free(res->gpus);
	free(res->samples);
	free(res->apps);
	free(res->problems);
	free(res->index);
	memset(res, 0, sizeof *res);
}

/* ---- cells --------------------------------------------------------------- */

int gl_nvsmi_unavailable(const char *s, size_t n)
{
	/* "[N/A]", "[Not Supported]", "[Unknown Error]", "[Insufficient
	 * Permissions]", "[Requested functionality has been deprecated]"...:
	 * nvidia-smi brackets every reason it could not read a value; the XML
	 * and some query fields write a bare N/A */
	return (n >= 2 && s[0] == '[' && s[n - 1] == ']') || (n == 3 && !memcmp(s, "N/A", 3));
}

int gl_nvsmi_parse_value(const char *s, size_t n, const char *unit, double *v)
{
	size_t i = 0;

	while (i < n && s[i] != ' ')
		i++;
	if (i == 0 || gl_promtext_parse_float(s, i, v) < 0 || *v != *v || *v - *v != 0)
		return -GL_EINVAL; /* also NaN and infinities: no nvidia-smi value is one */
	if (i == n)
		return 0;
	i++;
	if (!unit || n - i != strlen(unit) || memcmp(s + i, unit, n - i))
		return -GL_ERANGE;
	return 0;
}

static int two(const char *s)
{
	return s[0] >= '0' && s[0] <= '9' && s[1] >= '0' && s[1] <= '9' ? (s[0] - '0') * 10 + (s[1] - '0') : -1;
}

int gl_nvsmi_parse_time(const char *s, size_t n, int64_t *ms)
{
	int y, mo, d, h, mi, se, frac = 0;

	/* "YYYY/MM/DD HH:MM:SS" with an optional ".mmm" */
	if (n != 19 && n != 23)
		return -GL_EINVAL;
	if (s[4] != '/' || s[7] != '/' || s[10] != ' ' || s[13] != ':' || s[16] != ':')
		return -GL_EINVAL;
	y = two(s) * 100 + two(s + 2);
	mo = two(s + 5);
	d = two(s + 8);
	h = two(s + 11);
	mi = two(s + 14);
	se = two(s + 17);
	if (two(s) < 0 || two(s + 2) < 0 || mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 ||
	    mi > 59 || se < 0 || se > 59)
		return -GL_EINVAL;
	if (n == 23) {
		if (s[19] != '.' || two(s + 20) < 0 || s[22] < '0' || s[22] > '9')
			return -GL_EINVAL;
		frac = two(s + 20) * 10 + (s[22] - '0');
	}
	{
		/* a day the month does not have is not a time */
		static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
		int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
		if (d > mdays[mo - 1] || (mo == 2 && d == 29 && !leap))
			return -GL_EINVAL;
	}
	*ms = (gl_timeutil_days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 + h * 3600 + mi * 60 + se) * 1000 + frac;
	return 0;
}

/* ---- columns ------------------------------------------------------------- */

enum role {
	R_IGNORE = 0, R_TIME, R_UUID, R_INDEX, R_NAME, R_PCI, R_DRIVER, R_SERIAL, R_METRIC, R_MEMTOTAL,
	R_PLIMIT, R_MIGMODE, R_PID, R_PNAME, R_USEDMEM,
};

struct coldef {
	const char *name, *alias; /* canonical header name, --query alias */
	enum role role;
	int metric;               /* enum gl_dcgm_metric for R_METRIC */
	int prio;                 /* several columns for one metric: the highest present wins */
	const char *unit;
};

/* --query-gpu: the columns gpuledger reads (nvidia-smi --help-query-gpu);
 * every other column is read past. */
static const struct coldef k_gpu_cols[] = {
	{"timestamp", NULL, R_TIME, -1, 0, NULL},
	{"uuid", "gpu_uuid", R_UUID, -1, 0, NULL},
	{"index", NULL, R_INDEX, -1, 0, NULL},
	{"name", "gpu_name", R_NAME, -1, 0, NULL},
	{"pci.bus_id", "gpu_bus_id", R_PCI, -1, 0, NULL},
	{"driver_version", NULL, R_DRIVER, -1, 0, NULL},
	{"serial", "gpu_serial", R_SERIAL, -1, 0, NULL},
	{"utilization.gpu", NULL, R_METRIC, GL_DCGM_GPU_UTIL, 0, "%"},
	{"utilization.memory", NULL, R_METRIC, GL_DCGM_MEM_COPY_UTIL, 0, "%"},
	{"memory.used", NULL, R_METRIC, GL_DCGM_FB_USED_MIB, 0, "MiB"},
	{"memory.free", NULL, R_METRIC, GL_DCGM_FB_FREE_MIB, 0, "MiB"},
	/* Ampere and newer: power.draw is the 1 s average; older GPUs print
	 * an instant reading there (nvidia-smi --help-query-gpu) */
	{"power.draw", NULL, R_METRIC, GL_DCGM_POWER_W, 3, "W"},
	{"power.draw.average", "gpu.power.draw.average", R_METRIC, GL_DCGM_POWER_W, 2, "W"},
	{"power.draw.instant", "gpu.power.draw.instant", R_METRIC, GL_DCGM_POWER_W, 1, "W"},
	{"memory.total", NULL, R_MEMTOTAL, -1, 0, "MiB"},
	{"enforced.power.limit", "gpu.power.current_limit", R_PLIMIT, -1, 0, "W"},
	{"mig.mode.current", NULL, R_MIGMODE, -1, 0, NULL},
};

/* --query-compute-apps (nvidia-smi --help-query-compute-apps); here "name"
 * is the process's. */
static const struct coldef k_app_cols[] = {
	{"timestamp", NULL, R_TIME, -1, 0, NULL},
	{"gpu_uuid", NULL, R_UUID, -1, 0, NULL},
	{"gpu_name", NULL, R_NAME, -1, 0, NULL},
	{"gpu_bus_id", NULL, R_PCI, -1, 0, NULL},
	{"gpu_serial", NULL, R_SERIAL, -1, 0, NULL},
	{"pid", NULL, R_PID, -1, 0, NULL},
	{"process_name", "name", R_PNAME, -1, 0, NULL},
	{"used_gpu_memory", "used_memory", R_USEDMEM, -1, 0, "MiB"},
};

struct col {
	const struct coldef *def; /* NULL: read past */
};

struct span {
	const char *p;
	size_t n;
};

struct csv {
	struct gl_nvsmi_result *res;
	const struct gl_nvsmi_opts *opts;
	struct col cols[GL_NVSMI_MAX_COLUMNS];
	size_t ncols;
	int col_of[R_USEDMEM + 1]; /* first column of each role, -1 none */
	int pname_col;
	struct span header[GL_NVSMI_MAX_COLUMNS];
	size_t nheader;
	char *header_copy;         /* the header line, to know a repeat of it */
	size_t header_len;
};

static struct span trim(const char *p, size_t n)
{
	while (n && (*p == ' ' || *p == '\t')) {
		p++;
		n--;
	}
	while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
		n--;
	return (struct span){p, n};
}

/* Splits on ',' and trims; -1 when there are more than max fields. */
static long split(const char *p, size_t n, struct span *out, size_t max)
{
	size_t nf = 0, start = 0;

	for (size_t i = 0; i <= n; i++) {
		if (i < n && p[i] != ',')
			continue;
		if (nf == max)
			return -1;
		out[nf++] = trim(p + start, i - start);
		start = i + 1;
	}
	return (long)nf;
}

/* "memory.used [MiB]" -> "memory.used" */
static struct span col_name(struct span f)
{
	const char *br = memchr(f.p, '[', f.n);
	if (br)
		return trim(f.p, (size_t)(br - f.p));
	return f;
}

static int span_eq(struct span s, const char *lit)
{
	return lit && strlen(lit) == s.n && !memcmp(s.p, lit, s.n);
}

static const struct coldef *lookup(const struct coldef *t, size_t nt, struct span name)
{
	for (size_t i = 0; i < nt; i++)
		if (span_eq(name, t[i].name) || span_eq(name, t[i].alias))
			return &t[i];
	return NULL;
}

static int any_col(struct span *f, size_t nf, const char *name)
{
	for (size_t i = 0; i < nf; i++)
		if (span_eq(col_name(f[i]), name))
			return 1;
	return 0;
}

/* Names the columns; -GL_EFORMAT when a required one is missing. */
static int set_columns(struct csv *c, struct span *f, size_t nf, struct gl_err *err)
{
	static const struct { enum gl_nvsmi_kind kind; enum role role; const char *name; } req[] = {
		{GL_NVSMI_QUERY_GPU, R_TIME, "timestamp"}, {GL_NVSMI_QUERY_GPU, R_UUID, "uuid"},
		{GL_NVSMI_QUERY_GPU, R_METRIC, "utilization.gpu"},
		{GL_NVSMI_APPS, R_TIME, "timestamp"}, {GL_NVSMI_APPS, R_UUID, "gpu_uuid"},
		{GL_NVSMI_APPS, R_PID, "pid"},
	};
	int apps = any_col(f, nf, "pid");
	const struct coldef *t = apps ? k_app_cols : k_gpu_cols;
	size_t nt = apps ? GL_ARRAY_LEN(k_app_cols) : GL_ARRAY_LEN(k_gpu_cols);
	size_t known = 0;
	int have_util = 0;

	c->res->kind = apps ? GL_NVSMI_APPS : GL_NVSMI_QUERY_GPU;
	for (size_t r = 0; r < GL_ARRAY_LEN(c->col_of); r++)
		c->col_of[r] = -1;
	c->ncols = nf;
	for (size_t i = 0; i < nf; i++) {
		const struct coldef *d = lookup(t, nt, col_name(f[i]));
		c->cols[i].def = d;
		if (!d)
			continue;
		known++;
		if (c->col_of[d->role] < 0)
			c->col_of[d->role] = (int)i;
		if (d->role == R_METRIC && d->metric == GL_DCGM_GPU_UTIL)
			have_util = 1;
	}
	if (!known)
		return gl_err_set(err, GL_EFORMAT, "nvidia-smi CSV: line 1 names no known column (not a --query-gpu or "
						   "--query-compute-apps capture?)");
	for (size_t k = 0; k < GL_ARRAY_LEN(req); k++) {
		int ok = req[k].role == R_METRIC ? have_util : c->col_of[req[k].role] >= 0;
		if (req[k].kind == c->res->kind && !ok)
			return gl_err_set(err, GL_EFORMAT,
					  "nvidia-smi CSV: required column '%s' missing (add it to --query-%s)",
					  req[k].name, apps ? "compute-apps" : "gpu");
	}
	c->pname_col = c->col_of[R_PNAME];
	return 0;
}

/* ---- rows ---------------------------------------------------------------- */

static char *dup_span(struct span s)
{
	return gl_xstrndup(s.p, s.n);
}

/* Identity cells fill a GPU the first time it is seen. */
static void fill_identity(struct csv *c, size_t gi, const struct span *f)
{
	struct gl_nvsmi_gpu *g = &c->res->gpus[gi];

	for (size_t i = 0; i < c->ncols; i++) {
		const struct coldef *d = c->cols[i].def;
		double v;
		if (!d || !f[i].n || gl_nvsmi_unavailable(f[i].p, f[i].n))
			continue;
		switch (d->role) {
		case R_NAME:
			if (!g->model)
				g->model = dup_span(f[i]);
			break;
		case R_PCI:
			if (!g->pci_bus_id)
				g->pci_bus_id = dup_span(f[i]);
			break;
		case R_DRIVER:
			if (!g->driver_version)
				g->driver_version = dup_span(f[i]);
			break;
		case R_SERIAL:
			if (!g->serial)
				g->serial = dup_span(f[i]);
			break;
		case R_INDEX:
			if (g->index < 0 && gl_nvsmi_parse_value(f[i].p, f[i].n, NULL, &v) == 0 && v >= 0 && v < 65536 &&
			    v == (int)v)
				g->index = (int)v;
			break;
		case R_MEMTOTAL:
			if (g->memory_total_mib < 0 && gl_nvsmi_parse_value(f[i].p, f[i].n, d->unit, &v) == 0 && v >= 0)
				g->memory_total_mib = (int64_t)v;
			break;
		case R_PLIMIT:
			if (g->power_limit_w < 0 && gl_nvsmi_parse_value(f[i].p, f[i].n, d->unit, &v) == 0 && v >= 0)
				g->power_limit_w = v;
			break;
		case R_MIGMODE:
			if (g->mig_mode < 0)
				g->mig_mode = span_eq(f[i], "Enabled") ? 1 : span_eq(f[i], "Disabled") ? 0 : -1;
			break;
		default:
			break;
		}
	}
}

/* A metric cell into r. A bad cell is reported and left out; the row's
 * other values stay. */
static void metric_cell(struct csv *c, const struct coldef *d, struct span f, size_t line,
			struct gl_dcgm_reading *r, int *prio)
{
	double v;
	int rc;

	if (gl_nvsmi_unavailable(f.p, f.n)) {
		c->res->unavailable++;
		return;
	}
	rc = gl_nvsmi_parse_value(f.p, f.n, d->unit, &v);
	if (rc < 0 || v < 0 || (!strcmp(d->unit, "%") && v > 100)) {
		int w = (int)(f.n > 40 ? 40 : f.n);
		if (rc == -GL_ERANGE)
			gl_nvsmi_problem(c->res, line, "%s: '%.*s' is not in %s", d->name, w, f.p, d->unit);
		else
			gl_nvsmi_problem(c->res, line, "%s: '%.*s' is not a valid value", d->name, w, f.p);
		c->res->bad_values++;
		return;
	}
	if (gl_dcgm_reading_has(r, (enum gl_dcgm_metric)d->metric)) {
		if (prio[d->metric] >= d->prio)
			return;
	} else {
		c->res->values++;
	}
	r->v[d->metric] = v;
	r->have |= 1u << d->metric;
	prio[d->metric] = d->prio;
}

/* The timestamp and GPU of a row; -1 with a problem (the row is skipped). */
static int row_key(struct csv *c, const struct span *f, size_t line, int64_t *t_ms, struct span *uuid)
{
	struct span ts = f[c->col_of[R_TIME]], u = f[c->col_of[R_UUID]];

	if (gl_nvsmi_parse_time(ts.p, ts.n, t_ms) < 0) {
		gl_nvsmi_problem(c->res, line, "timestamp: '%.*s' is not YYYY/MM/DD HH:MM:SS.mmm",
				 (int)(ts.n > 40 ? 40 : ts.n), ts.p);
		return -1;
	}
	*t_ms -= c->opts->utc_offset_s * 1000;
	if (!u.n || gl_nvsmi_unavailable(u.p, u.n)) {
		gl_nvsmi_problem(c->res, line, "%s: '%.*s' names no GPU", c->cols[c->col_of[R_UUID]].def->name,
				 (int)(u.n > 40 ? 40 : u.n), u.p);
		return -1;
	}
	*uuid = u;
	return 0;
}

static size_t row_gpu(struct csv *c, struct span u, const struct span *f)
{
	size_t ngpus = c->res->ngpus, gi = gl_nvsmi_gpu_get(c->res, u.p, u.n, -1);
	if (gi >= ngpus)
		fill_identity(c, gi, f);
	return gi;
}

static int gpu_row(struct csv *c, const struct span *f, size_t line)
{
	struct gl_dcgm_reading r;
	int prio[GL_DCGM__NMETRICS] = {0};
	int64_t t;
	struct span u;
	struct gl_nvsmi_sample *s;

	if (row_key(c, f, line, &t, &u) < 0)
		return -1;
	memset(&r, 0, sizeof r);
	for (size_t i = 0; i < c->ncols; i++) {
		const struct coldef *d = c->cols[i].def;
		if (d && d->role == R_METRIC)
			metric_cell(c, d, f[i], line, &r, prio);
	}
	s = gl_nvsmi_sample_add(c->res);
	s->t_ms = t;
	s->gpu = row_gpu(c, u, f);
	s->r = r;
	s->line = line;
	return 0;
}

static int app_row(struct csv *c, const struct span *f, size_t line)
{
	struct span pid = f[c->col_of[R_PID]], u;
	struct gl_nvsmi_app *a;
	int64_t t;
	double v, mem = -1;

	if (row_key(c, f, line, &t, &u) < 0)
		return -1;
	if (gl_nvsmi_parse_value(pid.p, pid.n, NULL, &v) < 0 || v < 0 || v > 4294967295.0 || v != (double)(int64_t)v) {
		gl_nvsmi_problem(c->res, line, "pid: '%.*s' is not a process id", (int)(pid.n > 40 ? 40 : pid.n), pid.p);
		return -1;
	}
	if (c->col_of[R_USEDMEM] >= 0) {
		struct span m = f[c->col_of[R_USEDMEM]];
		if (gl_nvsmi_unavailable(m.p, m.n)) {
			c->res->unavailable++;
		} else if (gl_nvsmi_parse_value(m.p, m.n, "MiB", &mem) < 0 || mem < 0) {
			gl_nvsmi_problem(c->res, line, "used_gpu_memory: '%.*s' is not a MiB count",
					 (int)(m.n > 40 ? 40 : m.n), m.p);
			c->res->bad_values++;
			mem = -1;
		} else {
			c->res->values++;
		}
	}
	a = gl_nvsmi_app_add(c->res);
	a->t_ms = t;
	a->gpu = row_gpu(c, u, f);
	a->pid = (int64_t)v;
	a->used_mib = mem >= 0 ? (int64_t)mem : -1;
	if (c->pname_col >= 0 && f[c->pname_col].n && !gl_nvsmi_unavailable(f[c->pname_col].p, f[c->pname_col].n))
		a->process_name = dup_span(f[c->pname_col]);
	memcpy(a->type, "C", 2); /* --query-compute-apps lists compute contexts only */
	a->line = line;
	return 0;
}

/* A process name may hold commas: a compute-apps row with too many fields
 * folds the extra ones back into it. */
static long fold_pname(struct csv *c, struct span *f, long nf)
{
	long extra = nf - (long)c->ncols;
	int k = c->pname_col;

	if (extra <= 0 || k < 0)
		return nf;
	f[k].n = (size_t)(f[k + extra].p + f[k + extra].n - f[k].p);
	memmove(&f[k + 1], &f[k + 1 + extra], (size_t)(nf - k - 1 - extra) * sizeof *f);
	return (long)c->ncols;
}

static void data_line(struct csv *c, const char *p, size_t n, size_t line, struct span *f)
{
	long nf;
	size_t bad;

	if (gl_utf8_validate(p, n, &bad) < 0 || memchr(p, '\0', n)) {
		gl_nvsmi_problem(c->res, line, "not valid UTF-8 (byte %zu)", gl_utf8_validate(p, n, &bad) < 0 ? bad + 1 : 0);
		c->res->bad_rows++;
		return;
	}
	nf = split(p, n, f, GL_NVSMI_MAX_COLUMNS);
	if (nf > 0 && c->res->kind == GL_NVSMI_APPS)
		nf = fold_pname(c, f, nf);
	if (nf != (long)c->ncols) {
		gl_nvsmi_problem(c->res, line, "%ld fields, the header has %zu", nf < 0 ? (long)GL_NVSMI_MAX_COLUMNS : nf,
				 c->ncols);
		c->res->bad_rows++;
		return;
	}
	c->res->rows++;
	if ((c->res->kind == GL_NVSMI_APPS ? app_row(c, f, line) : gpu_row(c, f, line)) < 0)
		c->res->bad_rows++;
}

/* ---- the capture ----------------------------------------------------------- */

/* The header: the first line, or opts->fields for a noheader capture. 1 when
 * that first line was the header (consumed). */
static int header(struct csv *c, const char *p, size_t n, struct span *f, struct gl_err *err)
{
	long nf;
	int is_header = 1;
	const char *src = p;
	size_t srcn = n;

	if (c->opts->fields) {
		/* a noheader capture: the first line is data unless it names
		 * columns (a capture made without noheader after all) */
		size_t k = 0;
		struct span first;
		while (k < n && p[k] != ',')
			k++;
		first = col_name(trim(p, k));
		is_header = lookup(k_gpu_cols, GL_ARRAY_LEN(k_gpu_cols), first) ||
			    lookup(k_app_cols, GL_ARRAY_LEN(k_app_cols), first);
		if (!is_header) {
			src = c->opts->fields;
			srcn = strlen(src);
		}
	}
	nf = split(src, srcn, f, GL_NVSMI_MAX_COLUMNS);
	if (nf < 0)
		return gl_err_set(err, GL_ERANGE, "nvidia-smi CSV: more than %d columns", GL_NVSMI_MAX_COLUMNS);
	if (set_columns(c, f, (size_t)nf, err) < 0)
		return -GL_EFORMAT;
	if (is_header) {
		c->header_copy = gl_xstrndup(p, n);
		c->header_len = n;
	}
	return is_header;
}

int gl_nvsmi_parse_csv(const char *buf, size_t len, const struct gl_nvsmi_opts *opts, struct gl_nvsmi_result *res,
		       struct gl_err *err)
{
	static const struct gl_nvsmi_opts defaults = {0};
	struct csv *c = gl_xcalloc(1, sizeof *c);
	struct span *f = gl_xmalloc(GL_NVSMI_MAX_COLUMNS * sizeof *f);
	size_t pos = 0, line = 0;
	int have_header = 0, rc = 0;

	memset(res, 0, sizeof *res);
	c->res = res;
	c->opts = opts ? opts : &defaults;
	while (pos < len) {
		const char *p = buf + pos, *nl = memchr(p, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - p) : len - pos;
		pos += n + (nl != NULL);
		line++;
		if (n && p[n - 1] == '\r')
			n--;
		if (n > GL_NVSMI_MAX_LINE) {
			rc = gl_err_set(err, GL_ERANGE, "nvidia-smi CSV line %zu: longer than %d bytes", line, GL_NVSMI_MAX_LINE);
			goto out;
		}
		if (trim(p, n).n == 0)
			continue;
		if (!have_header) {
			int h = header(c, p, n, f, err);
			if (h < 0) {
				rc = h;
				goto out;
			}
			have_header = 1;
			if (h)
				continue;
		} else if (c->header_copy && n == c->header_len && !memcmp(p, c->header_copy, n)) {
			continue; /* the header again: captures appended to one file */
		}
		data_line(c, p, n, line, f);
	}
	res->lines = line;
	if (!have_header)
		rc = gl_err_set(err, GL_EFORMAT, "nvidia-smi CSV: empty capture");
out:
	free(c->header_copy);
	free(c);
	free(f);
	if (rc < 0)
		gl_nvsmi_result_fini(res);
	return rc;
}
