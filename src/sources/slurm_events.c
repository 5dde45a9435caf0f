/* `sacctmgr -P show event` and `sacctmgr -P show reservation` parsers (the
 * '|'-separated tables with their header line), plus the dispatch between the
 * two reservation forms. */
#include "gl/nodeobs.h"
#include "gl/bounds.h"
#include "gl/sacct.h"
#include "gl/utf8.h"
#include "nodeobs_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>


enum col {
	C_EVENT, C_NODE, C_CLNODES, C_START, C_END, C_STATE, C_STATERAW, C_REASON, C_USER, C_TRES, C_NAME, C_FLAGS,
	C__COUNT
};

static const struct {
	const char *name;
	enum col col;
} col_names[] = {
	{"Event", C_EVENT}, {"NodeName", C_NODE}, {"NodeNames", C_NODE}, {"Nodes", C_NODE},
	{"Cluster Nodes", C_CLNODES}, {"ClusterNodes", C_CLNODES}, {"TimeStart", C_START}, {"Start", C_START},
	{"TimeEnd", C_END}, {"End", C_END}, {"State", C_STATE}, {"StateRaw", C_STATERAW}, {"Reason", C_REASON},
	{"User", C_USER}, {"TRES", C_TRES}, {"Name", C_NAME}, {"Flags", C_FLAGS},
};

#define MAX_COLS 64

struct psv {
	int pos[C__COUNT];
	int ncols;
};

static int header_init(struct psv *h, const char *p, size_t n)
{
	int c = 0;
	const char *end = p + n;
	for (int i = 0; i < C__COUNT; i++)
		h->pos[i] = -1;
	while (p <= end && c < MAX_COLS) {
		const char *e = memchr(p, '|', (size_t)(end - p));
		size_t l;
		if (!e)
			e = end;
		l = (size_t)(e - p);
		for (size_t i = 0; i < GL_ARRAY_LEN(col_names); i++)
			if (strlen(col_names[i].name) == l && !strncasecmp(col_names[i].name, p, l) &&
			    h->pos[col_names[i].col] < 0)
				h->pos[col_names[i].col] = c;
		c++;
		if (e == end)
			break;
		p = e + 1;
	}
	h->ncols = c;
	return h->pos[C_START] >= 0 ? 0 : -1;
}

static size_t split(const char *p, size_t n, struct gl_str *f, size_t max)
{
	const char *end = p + n;
	size_t k = 0;
	while (k < max) {
		const char *e = memchr(p, '|', (size_t)(end - p));
		if (!e)
			e = end;
		f[k].p = p;
		f[k].len = (size_t)(e - p);
		k++;
		if (e == end)
			break;
		p = e + 1;
	}
	return k;
}

static struct gl_str col(const struct psv *h, const struct gl_str *f, size_t nf, enum col c)
{
	if (h->pos[c] < 0 || (size_t)h->pos[c] >= nf)
		return (struct gl_str){"", 0};
	return f[h->pos[c]];
}

static char *dup_str(struct gl_str v)
{
	return gl_nodeobs_dup_val(v.p, v.len);
}

typedef int (*row_fn)(struct gl_nodeobs_snapshot *s, const struct psv *h, const struct gl_str *f, size_t nf,
		      struct gl_err *err);

static int parse_table(const char *text, size_t len, struct gl_nodeobs_snapshot *s, const char *what, row_fn fn,
		       struct gl_err *err)
{
	const char *p = text, *end = text + len;
	struct psv h;
	int have_header = 0;
	size_t lineno = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = (size_t)((nl ? nl : end) - p);
		lineno++;
		if (n && p[n - 1] == '\r')
			n--;
		if (n && memchr(p, '|', n)) {
			s->lines++;
			if (!have_header) {
				if (header_init(&h, p, n) == 0)
					have_header = 1;
				else
					return gl_err_set(err, GL_EFORMAT, "%s line %zu: no header with TimeStart/Start (use -P without -n)",
							  what, lineno);
			} else {
				struct gl_str f[MAX_COLS];
				struct gl_err le = {0};
				size_t nf = split(p, n, f, MAX_COLS), at;
				if (gl_utf8_validate(p, n, &at) < 0) {
					/* the store would refuse the whole snapshot for it */
					s->skipped++;
					gl_nodeobs_problem(s, "%s line %zu: not valid UTF-8 (byte %zu)", what, lineno, at + 1);
				} else if ((int)nf != h.ncols) {
					s->skipped++;
					gl_nodeobs_problem(s, "%s line %zu: %zu fields, header has %d", what, lineno, nf, h.ncols);
				} else if (fn(s, &h, f, nf, &le)) {
					s->skipped++;
					gl_nodeobs_problem(s, "%s line %zu: %s", what, lineno, le.msg);
				}
			}
		}
		p = nl ? nl + 1 : end;
	}
	if (!have_header && len > 0) {
		/* an empty answer is fine; text without any table is not */
		for (const char *q = text; q < end; q++)
			if (*q != ' ' && *q != '\n' && *q != '\r' && *q != '\t')
				return gl_err_set(err, GL_EFORMAT, "not `sacctmgr -P show %s` output: no header line",
						  !strcmp(what, "events") ? "event" : "reservation");
	}
	return 0;
}

/* The columns a row keeps, and their bounds (include/gl/bounds.h). */
struct colbound {
	enum col c;
	const char *name;
	enum gl_bounds k;
};

static int row_fits(const struct psv *h, const struct gl_str *f, size_t nf, const struct colbound *cb, size_t n,
		    struct gl_err *err)
{
	char why[160];
	for (size_t i = 0; i < n; i++)
		if (gl_bounds_check(cb[i].k, col(h, f, nf, cb[i].c).len, why, sizeof why))
			return gl_err_set(err, GL_EINVAL, "%s: %s", cb[i].name, why);
	return 0;
}

static int parse_times(const struct psv *h, const struct gl_str *f, size_t nf, int64_t *start, int64_t *end,
		       struct gl_err *err)
{
	struct gl_str v = col(h, f, nf, C_START);
	if (gl_sacct_parse_time(v.p, v.len, start) || *start == GL_TIME_NONE)
		return gl_err_set(err, GL_EINVAL, "TimeStart: bad time '%.*s'", (int)v.len, v.p);
	v = col(h, f, nf, C_END);
	if (gl_sacct_parse_time(v.p, v.len, end))
		return gl_err_set(err, GL_EINVAL, "TimeEnd: bad time '%.*s'", (int)v.len, v.p);
	if (*end != GL_TIME_NONE && *end < *start)
		return gl_err_set(err, GL_EINVAL, "TimeEnd before TimeStart");
	return 0;
}

static int event_row(struct gl_nodeobs_snapshot *s, const struct psv *h, const struct gl_str *f, size_t nf,
		     struct gl_err *err)
{
	struct gl_str ev = col(h, f, nf, C_EVENT), node = col(h, f, nf, C_NODE), raw = col(h, f, nf, C_STATERAW),
		      st = col(h, f, nf, C_STATE), tres = col(h, f, nf, C_TRES);
	int64_t start, end;
	struct gl_nodeobs_slurm_event *e;
	struct gl_nodeobs_gpus g[GL_NODEOBS_MAX_MODELS];
	size_t ng;
	int rc;
	static const struct colbound cb[] = {
		{C_EVENT, "Event", GL_BOUNDS_TEXT},   {C_NODE, "NodeName", GL_BOUNDS_NODE},
		{C_CLNODES, "ClusterNodes", GL_BOUNDS_NODE_LIST}, {C_STATE, "State", GL_BOUNDS_TEXT},
		{C_REASON, "Reason", GL_BOUNDS_TEXT}, {C_USER, "User", GL_BOUNDS_USER},
		{C_TRES, "TRES", GL_BOUNDS_TEXT},
	};
	if ((rc = row_fits(h, f, nf, cb, GL_ARRAY_LEN(cb), err)) || (rc = parse_times(h, f, nf, &start, &end, err)))
		return rc;
	e = gl_nodeobs_add_event(s);
	e->start_s = start;
	e->end_s = end;
	e->is_cluster = gl_str_eq(ev, "Cluster") || (ev.len == 0 && node.len == 0);
	e->node = e->is_cluster ? NULL : dup_str(node);
	e->cluster_nodes = e->is_cluster ? dup_str(col(h, f, nf, C_CLNODES)) : NULL;
	e->state = dup_str(st);
	e->reason = dup_str(col(h, f, nf, C_REASON));
	e->user = dup_str(col(h, f, nf, C_USER));
	if (raw.len) {
		char buf[24];
		char *endp;
		snprintf(buf, sizeof buf, "%.*s", (int)raw.len, raw.p);
		e->state_raw = strtoll(buf, &endp, 10);
		if (*endp) {
			e->state_raw = -1;
			gl_nodeobs_problem(s, "events: StateRaw '%s' is not a number, State used", buf);
		}
	}
	if (!e->is_cluster && !e->node) {
		rc = gl_err_set(err, GL_EINVAL, "NodeName: missing on a node event");
		goto out;
	}
	if (tres.len && gl_nodeobs_parse_tres_models(tres.p, tres.len, g, &ng, &e->gpus_total, err)) {
		gl_err_prefix(err, "TRES: ");
		rc = -GL_EINVAL;
		goto out;
	}
	if (e->state_raw >= 0)
		e->avail = gl_nodeobs_state_raw_classify(e->state_raw);
	else {
		e->avail = gl_nodeobs_state_classify(st.p, st.len, NULL, 0);
		if (st.len >= 5 && memmem(st.p, st.len, "MAINT", 5))
			e->avail = GL_NODEOBS_AVAIL_MAINT;
	}
	/* every node event is an unavailability period (the rollup books it as Down) */
	if (e->avail == GL_NODEOBS_AVAIL_UP)
		e->avail = GL_NODEOBS_AVAIL_DOWN;
out:
	if (rc) {
		free(e->node);
		free(e->cluster_nodes);
		free(e->state);
		free(e->reason);
		free(e->user);
		s->nevents--;
	}
	return rc;
}

int gl_slurm_events_parse_sacctmgr(const char *text, size_t len, struct gl_nodeobs_snapshot *s, struct gl_err *err)
{
	return parse_table(text, len, s, "events", event_row, err);
}

static int resv_row(struct gl_nodeobs_snapshot *s, const struct psv *h, const struct gl_str *f, size_t nf,
		    struct gl_err *err)
{
	int64_t start, end;
	struct gl_nodeobs_slurm_resv *r;
	struct gl_str tres = col(h, f, nf, C_TRES);
	int rc;
	static const struct colbound cb[] = {
		{C_NAME, "Name", GL_BOUNDS_OBJECT}, {C_NODE, "Nodes", GL_BOUNDS_NODE_LIST},
		{C_FLAGS, "Flags", GL_BOUNDS_TEXT}, {C_TRES, "TRES", GL_BOUNDS_TEXT},
	};
	if ((rc = row_fits(h, f, nf, cb, GL_ARRAY_LEN(cb), err)) || (rc = parse_times(h, f, nf, &start, &end, err)))
		return rc;
	r = gl_nodeobs_add_resv(s);
	r->start_s = start;
	r->end_s = end;
	r->name = dup_str(col(h, f, nf, C_NAME));
	if (!r->name)
		r->name = gl_xstrdup("");
	r->flags = dup_str(col(h, f, nf, C_FLAGS));
	r->nodes = dup_str(col(h, f, nf, C_NODE));
	r->tres = dup_str(tres);
	if (tres.len &&
	    gl_nodeobs_parse_tres_models(tres.p, tres.len, r->gpus, &r->ngpu_models, &r->gpus_total, err)) {
		gl_err_prefix(err, "TRES: ");
		gl_nodeobs_resv_fini(r);
		s->nresvs--;
		return -GL_EINVAL;
	}
	if (r->flags) {
		r->maint = strstr(r->flags, "MAINT") != NULL;
		r->ignore_jobs = strstr(r->flags, "IGNORE_JOBS") != NULL;
	}
	return 0;
}

int gl_slurm_events_parse_reservations(const char *text, size_t len, struct gl_nodeobs_snapshot *s, struct gl_err *err)
{
	if (memmem(text, len, "ReservationName=", 16))
		return gl_scontrol_parse_resv(text, len, s);
	/* "No reservations in the system" is scontrol's empty answer */
	if (memmem(text, len, "No reservations", 15))
		return 0;
	return parse_table(text, len, s, "reservations", resv_row, err);
}
