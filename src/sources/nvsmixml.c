/* `nvidia-smi -q -x` -> GPUs, readings and processes (see include/gl/nvsmixml.h). */
#include "gl/nvsmixml.h"
#include "gl/strbuf.h"
#include "gl/timeutil.h"
#include "gl/utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME_MAX_LEN 64
#define MAX_MIG 16
#define MAX_PROC 256

struct mig {
	int gi_id;
	double total, used, free; /* < 0 unknown */
};

struct proc {
	int64_t pid;
	int gi_id;
	int64_t used_mib;
	char type[4];
	char *name;
};

/* One <gpu> as it is read. */
struct gpu_acc {
	size_t line;
	char *uuid, *model, *serial, *pci;
	int minor, mig_mode;
	double mem_total;
	struct gl_dcgm_reading r;
	int power_prio, limit_prio;
	double power_limit;
	struct mig mig[MAX_MIG];
	size_t nmig, mig_dropped;
	struct proc proc[MAX_PROC];
	size_t nproc, proc_dropped;
};

struct xml {
	const char *p;
	size_t len, pos, line;
	struct gl_nvsmi_result *res;
	const struct gl_nvsmi_opts *opts;
	char stack[GL_NVSMIXML_MAX_DEPTH][NAME_MAX_LEN];
	int depth;
	int gpu_depth;           /* depth of the open <gpu>, -1 none */
	struct gl_strbuf text;   /* decoded text of the innermost element */
	int64_t doc_t_ms;        /* GL_TIME_NONE until <timestamp> */
	char *driver;
	int docs;
	struct gpu_acc *g;
};

static char *dup_text(const struct gl_strbuf *t)
{
	return gl_xstrdup(gl_strbuf_cstr(t));
}

static void gpu_free(struct gpu_acc *g)
{
	free(g->uuid);
	free(g->model);
	free(g->serial);
	free(g->pci);
	for (size_t i = 0; i < g->nproc; i++)
		free(g->proc[i].name);
	memset(g, 0, sizeof *g);
}

/* ---- values -------------------------------------------------------------- */

/* "Fri Aug  4 11:44:30 2023" (ctime's form) -> ms of that civil time as UTC. */
static int parse_ctime(const char *s, int64_t *ms)
{
	static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
	char mon[4];
	int d, h, mi, se, y, n = 0;
	const char *m;

	if (sscanf(s, "%*3s %3s %d %d:%d:%d %d%n", mon, &d, &h, &mi, &se, &y, &n) != 6 || s[n] != '\0')
		return -GL_EINVAL;
	m = strstr(months, mon);
	if (!m || (m - months) % 3 || strlen(mon) != 3 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 || mi > 59 ||
	    se < 0 || se > 60 || y < 1970 || y > 9999)
		return -GL_EINVAL;
	*ms = (gl_timeutil_days_from_civil(y, (unsigned)((m - months) / 3 + 1), (unsigned)d) * 86400 + h * 3600 + mi * 60 +
	       (se > 59 ? 59 : se)) * 1000;
	return 0;
}

/* A value cell: 1 with *v, 0 unavailable (counted), -1 bad (a problem). */
static int value(struct xml *x, const char *what, const char *unit, double *v)
{
	const char *s = gl_strbuf_cstr(&x->text);
	size_t n = x->text.len;

	if (!n || gl_nvsmi_unavailable(s, n)) {
		x->res->unavailable++;
		return 0;
	}
	if (gl_nvsmi_parse_value(s, n, unit, v) < 0 || *v < 0 || (unit && !strcmp(unit, "%") && *v > 100)) {
		gl_nvsmi_problem(x->res, x->line, "%s: '%.40s' is not a valid value", what, s);
		x->res->bad_values++;
		return -1;
	}
	return 1;
}

static void metric(struct xml *x, const char *what, enum gl_dcgm_metric m, const char *unit)
{
	double v;
	if (value(x, what, unit, &v) == 1) {
		x->g->r.v[m] = v;
		x->g->r.have |= 1u << m;
	}
}

static double num_or(struct xml *x, const char *what, const char *unit, double dflt)
{
	double v;
	return value(x, what, unit, &v) == 1 ? v : dflt;
}

/* ---- element ends ---------------------------------------------------------- */

/* The path below <gpu> of the element being closed, "" for <gpu> itself. */
static void rel_path(const struct xml *x, char *buf, size_t n)
{
	size_t l = 0;
	buf[0] = '\0';
	for (int i = x->gpu_depth + 1; i < x->depth; i++)
		l += (size_t)snprintf(buf + (l < n ? l : n), l < n ? n - l : 0, "%s%s", l ? "/" : "", x->stack[i]);
}

static void power(struct xml *x, int prio)
{
	double v;
	/* v13 prints average and instant draw, older schemas power_draw */
	if (prio > x->g->power_prio && value(x, "power_draw", "W", &v) == 1) {
		x->g->r.v[GL_DCGM_POWER_W] = v;
		x->g->r.have |= 1u << GL_DCGM_POWER_W;
		x->g->power_prio = prio;
	}
}

static void limit(struct xml *x, int prio)
{
	double v;
	if (prio > x->g->limit_prio && value(x, "power_limit", "W", &v) == 1) {
		x->g->power_limit = v;
		x->g->limit_prio = prio;
	}
}

static void gpu_leaf(struct xml *x, const char *path)
{
	struct gpu_acc *g = x->g;
	const char *t = gl_strbuf_cstr(&x->text);
	static const char *const power_paths[] = {"power_readings/power_draw", "gpu_power_readings/instant_power_draw",
						  "gpu_power_readings/power_draw", "gpu_power_readings/average_power_draw"};
	static const char *const limit_paths[] = {"power_readings/power_limit", "power_readings/enforced_power_limit",
						  "gpu_power_readings/current_power_limit"};

	if (!strcmp(path, "uuid") && !g->uuid && x->text.len)
		g->uuid = dup_text(&x->text);
	else if (!strcmp(path, "product_name") && !g->model && x->text.len)
		g->model = dup_text(&x->text);
	else if (!strcmp(path, "serial") && !g->serial && x->text.len && !gl_nvsmi_unavailable(t, x->text.len))
		g->serial = dup_text(&x->text);
	else if (!strcmp(path, "pci/pci_bus_id") && !g->pci && x->text.len)
		g->pci = dup_text(&x->text);
	else if (!strcmp(path, "minor_number"))
		g->minor = (int)num_or(x, "minor_number", NULL, -1);
	else if (!strcmp(path, "mig_mode/current_mig"))
		g->mig_mode = !strcmp(t, "Enabled") ? 1 : !strcmp(t, "Disabled") ? 0 : -1;
	else if (!strcmp(path, "fb_memory_usage/total"))
		g->mem_total = num_or(x, "fb_memory_usage/total", "MiB", -1);
	else if (!strcmp(path, "fb_memory_usage/used"))
		metric(x, "fb_memory_usage/used", GL_DCGM_FB_USED_MIB, "MiB");
	else if (!strcmp(path, "fb_memory_usage/free"))
		metric(x, "fb_memory_usage/free", GL_DCGM_FB_FREE_MIB, "MiB");
	else if (!strcmp(path, "utilization/gpu_util"))
		metric(x, "utilization/gpu_util", GL_DCGM_GPU_UTIL, "%");
	else if (!strcmp(path, "utilization/memory_util"))
		metric(x, "utilization/memory_util", GL_DCGM_MEM_COPY_UTIL, "%");
	else {
		for (size_t i = 0; i < GL_ARRAY_LEN(power_paths); i++)
			if (!strcmp(path, power_paths[i]))
				power(x, (int)i + 1);
		for (size_t i = 0; i < GL_ARRAY_LEN(limit_paths); i++)
			if (!strcmp(path, limit_paths[i]))
				limit(x, (int)i + 1);
	}
}

static void mig_leaf(struct xml *x, const char *leaf)
{
	struct gpu_acc *g = x->g;
	struct mig *m;

	if (!g->nmig)
		return;
	m = &g->mig[g->nmig - 1];
	if (!strcmp(leaf, "gpu_instance_id"))
		m->gi_id = (int)num_or(x, "mig_device/gpu_instance_id", NULL, -1);
	else if (!strcmp(leaf, "fb_memory_usage/total"))
		m->total = num_or(x, "mig_device/fb_memory_usage/total", "MiB", -1);
	else if (!strcmp(leaf, "fb_memory_usage/used"))
		m->used = num_or(x, "mig_device/fb_memory_usage/used", "MiB", -1);
	else if (!strcmp(leaf, "fb_memory_usage/free"))
		m->free = num_or(x, "mig_device/fb_memory_usage/free", "MiB", -1);
}

static void proc_leaf(struct xml *x, const char *leaf)
{
	struct gpu_acc *g = x->g;
	struct proc *p;
	const char *t = gl_strbuf_cstr(&x->text);

	if (!g->nproc)
		return;
	p = &g->proc[g->nproc - 1];
	if (!strcmp(leaf, "pid"))
		p->pid = (int64_t)num_or(x, "process_info/pid", NULL, -1);
	else if (!strcmp(leaf, "gpu_instance_id"))
		p->gi_id = (int)num_or(x, "process_info/gpu_instance_id", NULL, -1);
	else if (!strcmp(leaf, "used_memory"))
		p->used_mib = (int64_t)num_or(x, "process_info/used_memory", "MiB", -1);
	else if (!strcmp(leaf, "type") && x->text.len < sizeof p->type)
		memcpy(p->type, t, x->text.len + 1);
	else if (!strcmp(leaf, "process_name") && !p->name && x->text.len)
		p->name = dup_text(&x->text);
}

/* The <gpu> is complete: its GPU, sample, MIG instances and processes. */
static void gpu_emit(struct xml *x)
{
	struct gpu_acc *g = x->g;
	size_t gi, ngpus = x->res->ngpus;
	struct gl_nvsmi_gpu *rg;

	x->res->rows++;
	if (!g->uuid || gl_nvsmi_unavailable(g->uuid, strlen(g->uuid))) {
		gl_nvsmi_problem(x->res, g->line, "<gpu> without a uuid: skipped");
		x->res->bad_rows++;
		return;
	}
	gi = gl_nvsmi_gpu_get(x->res, g->uuid, strlen(g->uuid), -1);
	rg = &x->res->gpus[gi];
	if (gi >= ngpus) {
		rg->model = g->model ? gl_xstrdup(g->model) : NULL;
		rg->serial = g->serial ? gl_xstrdup(g->serial) : NULL;
		rg->pci_bus_id = g->pci ? gl_xstrdup(g->pci) : NULL;
		rg->driver_version = x->driver ? gl_xstrdup(x->driver) : NULL;
		rg->minor = g->minor;
		rg->mig_mode = g->mig_mode;
		rg->memory_total_mib = g->mem_total >= 0 ? (int64_t)g->mem_total : -1;
		rg->power_limit_w = g->power_limit;
	}
	if (g->mig_dropped || g->proc_dropped)
		gl_nvsmi_problem(x->res, g->line, "<gpu> %s: %zu MIG devices and %zu processes beyond %d and %d left out",
				 g->uuid, g->mig_dropped, g->proc_dropped, MAX_MIG, MAX_PROC);
	if (x->doc_t_ms == GL_TIME_NONE) {
		gl_nvsmi_problem(x->res, g->line, "<gpu> %s: the document has no <timestamp>: no readings", g->uuid);
		return;
	}
	{
		struct gl_nvsmi_sample *s = gl_nvsmi_sample_add(x->res);
		s->t_ms = x->doc_t_ms;
		s->gpu = gi;
		s->r = g->r;
		s->line = g->line;
		for (int m = 0; m < GL_DCGM__NMETRICS; m++)
			x->res->values += (g->r.have >> m) & 1u;
	}
	for (size_t i = 0; i < g->nmig; i++) {
		const struct mig *m = &g->mig[i];
		size_t mi;
		struct gl_nvsmi_sample *s;
		if (m->gi_id < 0)
			continue;
		mi = gl_nvsmi_gpu_get(x->res, g->uuid, strlen(g->uuid), m->gi_id);
		x->res->gpus[mi].memory_total_mib = m->total >= 0 ? (int64_t)m->total : -1;
		if (!x->res->gpus[mi].model && g->model)
			x->res->gpus[mi].model = gl_xstrdup(g->model);
		s = gl_nvsmi_sample_add(x->res);
		s->t_ms = x->doc_t_ms;
		s->gpu = mi;
		s->line = g->line;
		if (m->used >= 0) {
			s->r.v[GL_DCGM_FB_USED_MIB] = m->used;
			s->r.have |= 1u << GL_DCGM_FB_USED_MIB;
			x->res->values++;
		}
		if (m->free >= 0) {
			s->r.v[GL_DCGM_FB_FREE_MIB] = m->free;
			s->r.have |= 1u << GL_DCGM_FB_FREE_MIB;
			x->res->values++;
		}
	}
	for (size_t i = 0; i < g->nproc; i++) {
		const struct proc *p = &g->proc[i];
		struct gl_nvsmi_app *a;
		if (p->pid < 0)
			continue;
		a = gl_nvsmi_app_add(x->res);
		a->t_ms = x->doc_t_ms;
		a->gpu = p->gi_id >= 0 ? gl_nvsmi_gpu_get(x->res, g->uuid, strlen(g->uuid), p->gi_id) : gi;
		a->pid = p->pid;
		a->used_mib = p->used_mib;
		a->process_name = p->name ? gl_xstrdup(p->name) : NULL;
		memcpy(a->type, p->type, sizeof a->type);
		a->line = g->line;
	}
}

static void start_element(struct xml *x, const char *name)
{
	int d = x->depth - 1; /* the element just pushed */

	gl_strbuf_reset(&x->text);
	if (!strcmp(name, "nvidia_smi_log") && d == 0) {
		x->docs++;
		x->doc_t_ms = GL_TIME_NONE;
		free(x->driver);
		x->driver = NULL;
	} else if (!strcmp(name, "gpu") && d == 1 && x->gpu_depth < 0) {
		gpu_free(x->g);
		x->gpu_depth = d;
		x->g->line = x->line;
		x->g->minor = x->g->mig_mode = -1;
		x->g->mem_total = x->g->power_limit = -1;
	} else if (x->gpu_depth >= 0 && d == x->gpu_depth + 2 && !strcmp(name, "mig_device") &&
		   !strcmp(x->stack[d - 1], "mig_devices")) {
		if (x->g->nmig == MAX_MIG) {
			x->g->mig_dropped++;
			return;
		}
		x->g->mig[x->g->nmig++] = (struct mig){-1, -1, -1, -1};
	} else if (x->gpu_depth >= 0 && d == x->gpu_depth + 2 && !strcmp(name, "process_info") &&
		   !strcmp(x->stack[d - 1], "processes")) {
		if (x->g->nproc == MAX_PROC) {
			x->g->proc_dropped++;
			return;
		}
		memset(&x->g->proc[x->g->nproc], 0, sizeof x->g->proc[0]);
		x->g->proc[x->g->nproc].pid = x->g->proc[x->g->nproc].gi_id = -1;
		x->g->proc[x->g->nproc].used_mib = -1;
		x->g->nproc++;
	}
}

static void trim_text(struct gl_strbuf *t)
{
	size_t a = 0, n = t->len;
	while (a < n && (t->p[a] == ' ' || t->p[a] == '\t' || t->p[a] == '\n' || t->p[a] == '\r'))
		a++;
	while (n > a && (t->p[n - 1] == ' ' || t->p[n - 1] == '\t' || t->p[n - 1] == '\n' || t->p[n - 1] == '\r'))
		n--;
	if (a)
		memmove(t->p, t->p + a, n - a);
	t->len = n - a;
	if (t->p)
		t->p[t->len] = '\0';
}

static void end_element(struct xml *x)
{
	int d = x->depth - 1;
	char path[256];

	trim_text(&x->text);
	if (d == 1 && !strcmp(x->stack[0], "nvidia_smi_log")) {
		const char *t = gl_strbuf_cstr(&x->text);
		if (!strcmp(x->stack[1], "timestamp")) {
			if (parse_ctime(t, &x->doc_t_ms) == 0)
				x->doc_t_ms -= x->opts->utc_offset_s * 1000;
			else
				gl_nvsmi_problem(x->res, x->line, "timestamp: '%.40s' is not 'Fri Aug  4 11:44:30 2023'", t);
		} else if (!strcmp(x->stack[1], "driver_version") && !x->driver && x->text.len) {
			x->driver = dup_text(&x->text);
		}
	}
	if (x->gpu_depth < 0 || d < x->gpu_depth)
		return;
	if (d == x->gpu_depth) {
		gpu_emit(x);
		gpu_free(x->g);
		x->gpu_depth = -1;
		return;
	}
	rel_path(x, path, sizeof path);
	if (!strncmp(path, "mig_devices/mig_device/", 23))
		mig_leaf(x, path + 23);
	else if (!strncmp(path, "processes/process_info/", 23))
		proc_leaf(x, path + 23);
	else
		gpu_leaf(x, path);
}

/* ---- the tokenizer ---------------------------------------------------------- */

static void count_lines(struct xml *x, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++)
		x->line += x->p[i] == '\n';
}

/* Moves past the first occurrence of end (from pos); 0 when it is missing. */
static int skip_past(struct xml *x, const char *end)
{
	size_t el = strlen(end);
	const char *f = memmem(x->p + x->pos, x->len - x->pos, end, el);
	size_t to = f ? (size_t)(f - x->p) + el : x->len;
	count_lines(x, x->pos, to);
	x->pos = to;
	return f != NULL;
}

/* Text up to the next '<', entities decoded into x->text. */
static void text(struct xml *x)
{
	size_t start = x->pos;
	while (x->pos < x->len && x->p[x->pos] != '<') {
		char c = x->p[x->pos];
		if (c == '&') {
			static const struct { const char *e; char c; } ents[] = {
				{"&lt;", '<'}, {"&gt;", '>'}, {"&amp;", '&'}, {"&quot;", '"'}, {"&apos;", '\''}};
			size_t k, rest = x->len - x->pos;
			for (k = 0; k < GL_ARRAY_LEN(ents); k++) {
				size_t el = strlen(ents[k].e);
				if (rest >= el && !memcmp(x->p + x->pos, ents[k].e, el)) {
					gl_strbuf_putc(&x->text, ents[k].c);
					x->pos += el;
					break;
				}
			}
			if (k < GL_ARRAY_LEN(ents))
				continue;
			if (rest > 3 && x->p[x->pos + 1] == '#') {
				/* a character reference: kept only when it is printable ASCII */
				char *end;
				long v = strtol(x->p + x->pos + 2 + (x->p[x->pos + 2] == 'x'), &end,
						x->p[x->pos + 2] == 'x' ? 16 : 10);
				if (end < x->p + x->len && *end == ';' && v >= 0x20 && v < 0x7f) {
					gl_strbuf_putc(&x->text, (char)v);
					x->pos = (size_t)(end - x->p) + 1;
					continue;
				}
			}
		}
		gl_strbuf_putc(&x->text, c);
		x->pos++;
	}
	count_lines(x, start, x->pos);
}

/* An element name at pos; its length (0: none). */
static size_t name_len(const struct xml *x, size_t at)
{
	size_t n = 0;
	while (at + n < x->len) {
		char c = x->p[at + n];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
		      c == '-' || c == '.' || c == ':'))
			break;
		n++;
	}
	return n;
}

static void close_tag(struct xml *x)
{
	size_t n = name_len(x, x->pos + 2);
	char name[NAME_MAX_LEN];
	int k;

	snprintf(name, sizeof name, "%.*s", (int)(n < NAME_MAX_LEN ? n : NAME_MAX_LEN - 1), x->p + x->pos + 2);
	for (k = x->depth - 1; k >= 0 && strcmp(x->stack[k], name); k--)
		;
	if (k < 0) {
		gl_nvsmi_problem(x->res, x->line, "</%s> closes no open element: ignored", name);
	} else {
		if (k != x->depth - 1)
			gl_nvsmi_problem(x->res, x->line, "</%s> closes <%s> (not closed)", name, x->stack[x->depth - 1]);
		/* the unclosed ones end here too, so their GPU is not lost */
		while (x->depth > k) {
			end_element(x);
			x->depth--;
			gl_strbuf_reset(&x->text);
		}
	}
	skip_past(x, ">");
}

/* 0, or -1 when the document is too deep to go on. */
static int open_tag(struct xml *x)
{
	size_t n = name_len(x, x->pos + 1);
	const char *gt = memchr(x->p + x->pos, '>', x->len - x->pos);
	int self_close = gt && gt > x->p + x->pos && gt[-1] == '/';

	if (!n || n >= NAME_MAX_LEN || !gt) {
		size_t rest = x->len - x->pos;
		gl_nvsmi_problem(x->res, x->line, "not an element: '%.*s'", (int)(rest < 20 ? rest : 20), x->p + x->pos);
		x->pos++;
		return 0;
	}
	if (x->depth == GL_NVSMIXML_MAX_DEPTH) {
		gl_nvsmi_problem(x->res, x->line, "elements nested deeper than %d", GL_NVSMIXML_MAX_DEPTH);
		return -1;
	}
	memcpy(x->stack[x->depth], x->p + x->pos + 1, n);
	x->stack[x->depth][n] = '\0';
	x->depth++;
	start_element(x, x->stack[x->depth - 1]);
	count_lines(x, x->pos, (size_t)(gt - x->p));
	x->pos = (size_t)(gt - x->p) + 1;
	if (self_close) {
		end_element(x);
		x->depth--;
	}
	return 0;
}

static int markup(struct xml *x)
{
	const char *at = x->p + x->pos;
	size_t rest = x->len - x->pos;

	if (rest >= 4 && !memcmp(at, "<!--", 4))
		skip_past(x, "-->");
	else if (rest >= 9 && !memcmp(at, "<![CDATA[", 9)) {
		const char *e = memmem(at, rest, "]]>", 3);
		size_t n = e ? (size_t)(e - at) - 9 : rest - 9;
		gl_strbuf_append(&x->text, at + 9, n);
		count_lines(x, x->pos, x->pos + 9 + n);
		x->pos += 9 + n + (e ? 3 : 0);
	} else if (rest >= 2 && at[1] == '?')
		skip_past(x, "?>");
	else if (rest >= 2 && at[1] == '!')
		skip_past(x, ">"); /* DOCTYPE: nvidia-smi's carries no internal subset */
	else if (rest >= 2 && at[1] == '/')
		close_tag(x);
	else
		return open_tag(x);
	return 0;
}

int gl_nvsmixml_parse(const char *buf, size_t len, const struct gl_nvsmi_opts *opts, struct gl_nvsmi_result *res,
		      struct gl_err *err)
{
	static const struct gl_nvsmi_opts defaults = {0};
	struct xml x;
	size_t bad;
	int rc = 0;

	memset(res, 0, sizeof *res);
	memset(&x, 0, sizeof x);
	res->kind = GL_NVSMI_XML;
	if (gl_utf8_validate(buf, len, &bad) < 0 || memchr(buf, '\0', len))
		return gl_err_set(err, GL_EFORMAT, "nvidia-smi XML: not valid UTF-8 (byte %zu)",
				  gl_utf8_validate(buf, len, &bad) < 0 ? bad + 1 : 0);
	x.p = buf;
	x.len = len;
	x.line = 1;
	x.res = res;
	x.opts = opts ? opts : &defaults;
	x.gpu_depth = -1;
	x.doc_t_ms = GL_TIME_NONE;
	x.g = gl_xcalloc(1, sizeof *x.g);
	while (x.pos < len) {
		if (buf[x.pos] != '<') {
			text(&x);
			continue;
		}
		if (markup(&x) < 0)
			break;
	}
	if (x.depth > 0) {
		gl_nvsmi_problem(res, x.line, "the document ends inside <%s>", x.stack[x.depth - 1]);
		/* what was read of an open <gpu> is still a GPU */
		while (x.depth > 0) {
			end_element(&x);
			x.depth--;
		}
	}
	res->lines = x.line;
	if (!x.docs)
		rc = gl_err_set(err, GL_EFORMAT, "nvidia-smi XML: no <nvidia_smi_log> element");
	gpu_free(x.g);
	free(x.g);
	free(x.driver);
	gl_strbuf_fini(&x.text);
	if (rc < 0)
		gl_nvsmi_result_fini(res);
	return rc;
}
