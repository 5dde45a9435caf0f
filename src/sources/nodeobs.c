/* Shared pieces of the node inventory parsers: the snapshot container, the
 * Slurm state table, Gres/TRES GPU counting and MIG folding. */
#include "gl/nodeobs.h"
#include "nodeobs_int.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const avail_names[GL_NODEOBS_AVAIL__COUNT] = {
	"up", "down", "drained", "powered_down", "reserved", "maint",
};

const char *gl_nodeobs_avail_name(enum gl_nodeobs_avail a)
{
	return (unsigned)a < GL_NODEOBS_AVAIL__COUNT ? avail_names[a] : "up";
}

void gl_nodeobs_problem(struct gl_nodeobs_snapshot *s, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	if (s->nproblems >= GL_NODEOBS_MAX_PROBLEMS) {
		s->problems_dropped++;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	s->problems = gl_xrealloc(s->problems, (s->nproblems + 1) * sizeof *s->problems);
	s->problems[s->nproblems++] = gl_xstrdup(buf);
}

struct gl_nodeobs_obs *gl_nodeobs_add_node(struct gl_nodeobs_snapshot *s)
{
	struct gl_nodeobs_obs *o;
	if (s->nnodes == s->cap_nodes) {
		s->cap_nodes = s->cap_nodes ? s->cap_nodes * 2 : 64;
		s->nodes = gl_xrealloc(s->nodes, s->cap_nodes * sizeof *s->nodes);
	}
	o = &s->nodes[s->nnodes++];
	memset(o, 0, sizeof *o);
	o->alloc_gpus = -1;
	o->reason_s = o->created_s = o->state_since_s = GL_TIME_NONE;
	return o;
}

struct gl_nodeobs_slurm_event *gl_nodeobs_add_event(struct gl_nodeobs_snapshot *s)
{
	struct gl_nodeobs_slurm_event *e;
	if (s->nevents == s->cap_events) {
		s->cap_events = s->cap_events ? s->cap_events * 2 : 16;
		s->events = gl_xrealloc(s->events, s->cap_events * sizeof *s->events);
	}
	e = &s->events[s->nevents++];
	memset(e, 0, sizeof *e);
	e->end_s = GL_TIME_NONE;
	e->state_raw = -1;
	return e;
}

struct gl_nodeobs_slurm_resv *gl_nodeobs_add_resv(struct gl_nodeobs_snapshot *s)
{
	struct gl_nodeobs_slurm_resv *r;
	if (s->nresvs == s->cap_resvs) {
		s->cap_resvs = s->cap_resvs ? s->cap_resvs * 2 : 8;
		s->resvs = gl_xrealloc(s->resvs, s->cap_resvs * sizeof *s->resvs);
	}
	r = &s->resvs[s->nresvs++];
	memset(r, 0, sizeof *r);
	r->start_s = r->end_s = GL_TIME_NONE;
	return r;
}

void gl_nodeobs_node_fini(struct gl_nodeobs_obs *o)
{
	free(o->name);
	free(o->partitions);
	free(o->state_raw);
	free(o->unknown_flags);
	free(o->reason);
	free(o->reason_user);
	memset(o, 0, sizeof *o);
}

static void event_fini(struct gl_nodeobs_slurm_event *e)
{
	free(e->node);
	free(e->cluster_nodes);
	free(e->state);
	free(e->reason);
	free(e->user);
}

void gl_nodeobs_resv_fini(struct gl_nodeobs_slurm_resv *r)
{
	free(r->name);
	free(r->flags);
	free(r->nodes);
	free(r->tres);
	memset(r, 0, sizeof *r);
}

void gl_nodeobs_snapshot_fini(struct gl_nodeobs_snapshot *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nnodes; i++)
		gl_nodeobs_node_fini(&s->nodes[i]);
	for (size_t i = 0; i < s->nevents; i++)
		event_fini(&s->events[i]);
	for (size_t i = 0; i < s->nresvs; i++)
		gl_nodeobs_resv_fini(&s->resvs[i]);
	for (size_t i = 0; i < s->nproblems; i++)
		free(s->problems[i]);
	free(s->nodes);
	free(s->events);
	free(s->resvs);
	free(s->problems);
	memset(s, 0, sizeof *s);
}

/* ---- the Slurm state table (docs/capacity.md) ---- */

enum tok_kind {
	T_BASE_UP, T_BASE_DOWN, T_BASE_IDLE, T_BASE_BUSY, T_BASE_FUTURE, T_BASE_UNKNOWN,
	T_DRAIN, T_DRAINED, T_DRAINING, T_FAIL, T_FAILED, T_POWERED, T_POWER_UP, T_INVAL, T_INFO,
};

static const struct {
	const char *name;
	enum tok_kind kind;
} state_toks[] = {
	{"IDLE", T_BASE_IDLE}, {"ALLOCATED", T_BASE_BUSY}, {"ALLOC", T_BASE_BUSY}, {"MIXED", T_BASE_BUSY},
	{"MIX", T_BASE_BUSY}, {"COMPLETING", T_BASE_BUSY}, {"COMP", T_BASE_BUSY}, {"DOWN", T_BASE_DOWN},
	{"ERROR", T_BASE_UP}, {"FUTURE", T_BASE_FUTURE}, {"FUTR", T_BASE_FUTURE}, {"UNKNOWN", T_BASE_UNKNOWN},
	{"UNK", T_BASE_UNKNOWN}, {"END", T_BASE_UNKNOWN},
	{"DRAIN", T_DRAIN}, {"DRAINED", T_DRAINED}, {"DRNG", T_DRAINING}, {"DRAINING", T_DRAINING},
	{"DRAIN_PENDING", T_DRAINING}, {"FAIL", T_FAIL}, {"FAILING", T_FAIL}, {"FAILED", T_FAILED},
	{"POWERED_DOWN", T_POWERED}, {"POWER_DOWN", T_INFO}, {"POWERING_DOWN", T_INFO},
	{"POWERING_UP", T_POWER_UP}, {"POWER_UP", T_POWER_UP}, {"INVAL", T_INVAL}, {"INVALID_REG", T_INVAL},
	{"INVALID", T_INVAL},
	/* flags that say nothing about availability */
	{"NOT_RESPONDING", T_INFO}, {"NO_RESPOND", T_INFO}, {"MAINT", T_INFO}, {"MAINTENANCE", T_INFO},
	{"RESERVED", T_INFO}, {"RES", T_INFO}, {"PLANNED", T_INFO}, {"CLOUD", T_INFO}, {"NET", T_INFO},
	{"REBOOT", T_INFO}, {"REBOOT_REQUESTED", T_INFO}, {"REBOOT_ISSUED", T_INFO}, {"RESUME", T_INFO},
	{"UNDRAIN", T_INFO}, {"DYNAMIC_FUTURE", T_INFO}, {"DYNAMIC_NORM", T_INFO}, {"BLOCKED", T_INFO},
	{"PERFCTRS", T_INFO}, {"NPC", T_INFO}, {"POWER_DRAIN", T_INFO}, {"COMPLETING_", T_INFO},
};

enum gl_nodeobs_avail gl_nodeobs_state_classify(const char *s, size_t n, char *unknown, size_t unknown_n)
{
	int base = T_BASE_UNKNOWN, drain = 0, drained = 0, draining = 0, fail = 0, failed = 0, powered = 0,
	    inval = 0;
	size_t ulen = 0;
	const char *p = s, *end = s + n;

	if (unknown && unknown_n)
		unknown[0] = '\0';
	while (p < end) {
		const char *e = p;
		size_t tl;
		int found = 0;
		while (e < end && *e != '+')
			e++;
		tl = (size_t)(e - p);
		/* sinfo-style suffixes: * not responding, ~ powered down, # powering up,
		 * % powering down, ! power down pending, @ reboot, ^ reboot issued,
		 * $ maintenance, - planned */
		while (tl > 0 && strchr("*~#%!@^$-", p[tl - 1])) {
			if (p[tl - 1] == '~')
				powered = 1;
			if (p[tl - 1] == '#')
				powered = 1;
			tl--;
		}
		for (size_t i = 0; tl && i < GL_ARRAY_LEN(state_toks); i++) {
			if (strlen(state_toks[i].name) != tl || strncasecmp(state_toks[i].name, p, tl))
				continue;
			found = 1;
			switch (state_toks[i].kind) {
			case T_BASE_UP: case T_BASE_DOWN: case T_BASE_IDLE: case T_BASE_BUSY: case T_BASE_FUTURE:
			case T_BASE_UNKNOWN:
				/* the first token is the base state; later base-like words are flags */
				if (p == s)
					base = (int)state_toks[i].kind;
				else if (state_toks[i].kind == T_BASE_DOWN)
					base = T_BASE_DOWN;
				break;
			case T_DRAIN: drain = 1; break;
			case T_DRAINED: drained = 1; break;
			case T_DRAINING: draining = 1; break;
			case T_FAIL: fail = 1; break;
			case T_FAILED: failed = 1; break;
			case T_POWERED: case T_POWER_UP: powered = 1; break;
			case T_INVAL: inval = 1; break;
			case T_INFO: break;
			}
			break;
		}
		if (!found && tl && unknown && unknown_n) {
			/* kept verbatim for the operator; availability comes from known flags only */
			int w = snprintf(unknown + ulen, unknown_n - ulen, "%s%.*s", ulen ? "+" : "", (int)(e - p), p);
			if (w > 0 && (size_t)w < unknown_n - ulen)
				ulen += (size_t)w;
		}
		p = e < end ? e + 1 : e;
	}
	if (base == T_BASE_DOWN || inval || failed)
		return GL_NODEOBS_AVAIL_DOWN;
	if (fail && (base == T_BASE_IDLE || base == T_BASE_UNKNOWN))
		return GL_NODEOBS_AVAIL_DOWN; /* FAIL with nothing running is FAILED */
	if (drained || (drain && !draining && base != T_BASE_BUSY))
		return GL_NODEOBS_AVAIL_DRAINED;
	if (powered || base == T_BASE_FUTURE)
		return GL_NODEOBS_AVAIL_POWERED_DOWN;
	return GL_NODEOBS_AVAIL_UP;
}

/* node_state bits of slurm/slurm.h (22.05): base in the low 4 bits */
#define NS_BASE 0xf
#define NS_DOWN 1
#define NS_FUTURE 6
#define NS_CLOUD (1u << 7)
#define NS_DRAIN (1u << 9)
#define NS_POWERED_DOWN (1u << 12)
#define NS_MAINT (1u << 15)

enum gl_nodeobs_avail gl_nodeobs_state_raw_classify(int64_t raw)
{
	uint64_t r = (uint64_t)raw;
	/* the rollup skips MAINT rows and books FUTURE and CLOUD+POWERED_DOWN as
	 * planned down; every other event row is Down (as_mysql_rollup.c) */
	if (r & NS_MAINT)
		return GL_NODEOBS_AVAIL_MAINT;
	if ((r & NS_BASE) == NS_FUTURE || ((r & NS_CLOUD) && (r & NS_POWERED_DOWN)))
		return GL_NODEOBS_AVAIL_POWERED_DOWN;
	if ((r & NS_DRAIN) && (r & NS_BASE) != NS_DOWN)
		return GL_NODEOBS_AVAIL_DRAINED;
	return GL_NODEOBS_AVAIL_DOWN;
}

/* ---- GPU counting ---- */

int gl_nodeobs_mig_profile_slices(const char *s, size_t n)
{
	/* "1g.10gb", "3g.40gb", "1g.10gb+me", "a100_1g.5gb" (Slurm's NVML names) */
	size_t i = 0;
	int g = 0;
	const char *us = memchr(s, '_', n);
	if (us) {
		i = (size_t)(us - s) + 1;
	}
	if (i >= n || !isdigit((unsigned char)s[i]))
		return 0;
	while (i < n && isdigit((unsigned char)s[i])) {
		g = g * 10 + (s[i++] - '0');
		if (g > 8)
			return 0; /* no GPU has more than 8 slices */
	}
	if (i + 1 >= n || s[i] != 'g' || s[i + 1] != '.')
		return 0;
	i += 2;
	if (i >= n || !isdigit((unsigned char)s[i]))
		return 0;
	while (i < n && (isdigit((unsigned char)s[i]) || s[i] == '.'))
		i++;
	if (i + 1 >= n + 0 || s[i] != 'g' || s[i + 1] != 'b')
		return 0;
	return g > 0 && g <= 8 ? g : 0;
}

/* Adds count GPUs of type t (len tl) into out, folding MIG types into their
 * parent: a physical GPU has 7 compute slices on A100/H100. */
static int add_model(struct gl_nodeobs_gpus *out, size_t *nout, const char *t, size_t tl, int64_t count,
		     struct gl_err *err)
{
	char model[GL_NODEOBS_MODEL_MAX];
	int slices = gl_nodeobs_mig_profile_slices(t, tl);
	int64_t mig = 0;
	if (tl >= sizeof model)
		return gl_err_set(err, GL_EINVAL, "GPU type too long");
	if (slices) {
		const char *us = memchr(t, '_', tl);
		mig = count;
		count = (count * slices + 6) / 7;
		if (us)
			tl = (size_t)(us - t);
		else {
			t = "mig";
			tl = 3;
		}
	}
	memcpy(model, t, tl);
	model[tl] = '\0';
	for (size_t i = 0; i < *nout; i++)
		if (!strcmp(out[i].model, model)) {
			out[i].gpus += count;
			out[i].mig_instances += mig;
			return 0;
		}
	if (*nout == GL_NODEOBS_MAX_MODELS)
		return gl_err_set(err, GL_EINVAL, "more than %d GPU models", GL_NODEOBS_MAX_MODELS);
	snprintf(out[*nout].model, sizeof out[*nout].model, "%s", model);
	out[*nout].gpus = count;
	out[*nout].mig_instances = mig;
	(*nout)++;
	return 0;
}

static int parse_count(const char *s, size_t n, int64_t *v)
{
	int64_t x = 0;
	size_t i = 0;
	if (!n)
		return -1;
	for (; i < n && isdigit((unsigned char)s[i]); i++) {
		x = x * 10 + (s[i] - '0');
		if (x > (int64_t)1 << 40)
			return -1;
	}
	/* Gres counts may carry a K/M suffix in theory; GPUs never do */
	if (i != n)
		return -1;
	*v = x;
	return 0;
}

int gl_nodeobs_parse_gres(const char *s, size_t n, struct gl_nodeobs_gpus *out, size_t *nout, struct gl_err *err)
{
	const char *p = s, *end = s + n;
	*nout = 0;
	if (n == 0 || (n == 6 && !memcmp(s, "(null)", 6)))
		return 0;
	while (p < end) {
		/* entries are comma-separated, but "(S:0-1)" and "(IDX:0,2)" hold commas */
		const char *e = p;
		int depth = 0;
		while (e < end && (depth || *e != ',')) {
			if (*e == '(')
				depth++;
			else if (*e == ')' && depth)
				depth--;
			e++;
		}
		{
			const char *q = memchr(p, '(', (size_t)(e - p));
			const char *ent_end = q ? q : e;
			size_t el = (size_t)(ent_end - p);
			if (el >= 3 && !memcmp(p, "gpu", 3) && (el == 3 || p[3] == ':')) {
				/* gpu:N | gpu:TYPE:N | gpu (count 1) */
				const char *c1 = el > 3 ? p + 4 : NULL;
				const char *c2 = c1 ? memchr(c1, ':', (size_t)(ent_end - c1)) : NULL;
				int64_t cnt = 1;
				int rc;
				if (!c1)
					rc = add_model(out, nout, "", 0, 1, err);
				else if (!c2) {
					if (parse_count(c1, (size_t)(ent_end - c1), &cnt))
						/* "gpu:a100" without a count means one */
						rc = add_model(out, nout, c1, (size_t)(ent_end - c1), 1, err);
					else
						rc = add_model(out, nout, "", 0, cnt, err);
				} else {
					if (parse_count(c2 + 1, (size_t)(ent_end - c2 - 1), &cnt))
						return gl_err_set(err, GL_EINVAL, "bad count in '%.*s'", (int)el, p);
					rc = add_model(out, nout, c1, (size_t)(c2 - c1), cnt, err);
				}
				if (rc)
					return rc;
			}
		}
		p = e < end ? e + 1 : e;
	}
	return 0;
}

int gl_nodeobs_parse_tres_models(const char *s, size_t n, struct gl_nodeobs_gpus *out, size_t *nout, int64_t *total,
			       struct gl_err *err)
{
	const char *p = s, *end = s + n;
	int64_t untyped = -1, typed = 0;
	*nout = 0;
	*total = 0;
	while (p < end) {
		const char *e = memchr(p, ',', (size_t)(end - p));
		const char *eq;
		size_t nl;
		int64_t v;
		if (!e)
			e = end;
		eq = memchr(p, '=', (size_t)(e - p));
		if (!eq)
			return gl_err_set(err, GL_EINVAL, "'%.*s' is not name=value", (int)(e - p), p);
		nl = (size_t)(eq - p);
		if (nl >= 8 && !memcmp(p, "gres/gpu", 8) && (nl == 8 || p[8] == ':')) {
			if (parse_count(eq + 1, (size_t)(e - eq - 1), &v))
				return gl_err_set(err, GL_EINVAL, "bad count in '%.*s'", (int)(e - p), p);
			if (nl == 8)
				untyped = v;
			else {
				int rc = add_model(out, nout, p + 9, nl - 9, v, err);
				if (rc)
					return rc;
				typed += v;
			}
		}
		p = e + 1;
	}
	{
		/* physical GPUs after MIG folding */
		int64_t phys = 0;
		for (size_t i = 0; i < *nout; i++)
			phys += out[i].gpus;
		if (untyped > typed) {
			/* the untyped total includes the typed ones; the rest has no type */
			int rc = add_model(out, nout, "", 0, untyped - typed, err);
			if (rc)
				return rc;
			phys += untyped - typed;
		}
		*total = phys;
	}
	return 0;
}

/* ---- key=value tokenizer shared by scontrol nodes and reservations ---- */

/* A token starts at a word boundary with [A-Za-z][A-Za-z0-9_]*= . Values may
 * contain spaces ("OS=Linux 6.1 #1 SMP", "Reason=maint test [root@...]"), so
 * a value runs to the next such token. */
static int is_key_at(const char *p, const char *end)
{
	const char *q = p;
	if (q >= end || !isalpha((unsigned char)*q))
		return 0;
	while (q < end && (isalnum((unsigned char)*q) || *q == '_'))
		q++;
	return q < end && *q == '=';
}

size_t gl_nodeobs_kv_split(const char *s, size_t n, struct gl_nodeobs_kv *kv, size_t max)
{
	const char *p = s, *end = s + n;
	size_t k = 0;
	while (p < end && isspace((unsigned char)*p))
		p++;
	while (p < end && k < max) {
		const char *eq = memchr(p, '=', (size_t)(end - p));
		const char *v, *q;
		if (!eq)
			break;
		kv[k].key = p;
		kv[k].klen = (size_t)(eq - p);
		v = eq + 1;
		q = v;
		/* "Reason=" is free text to the end of the line except for keys that
		 * newer Slurm prints after it */
		if (kv[k].klen == 6 && !memcmp(p, "Reason", 6)) {
			static const char *const after[] = {" Comment=", " Extra=", " InstanceId=", " InstanceType=",
							    " ResumeAfterTime=", " Reservation="};
			const char *best = end;
			for (size_t i = 0; i < GL_ARRAY_LEN(after); i++) {
				const char *f = memmem(v, (size_t)(end - v), after[i], strlen(after[i]));
				if (f && f < best)
					best = f;
			}
			q = best;
		} else {
			while (q < end) {
				if (isspace((unsigned char)*q)) {
					const char *r = q;
					while (r < end && isspace((unsigned char)*r))
						r++;
					if (r == end || is_key_at(r, end))
						break;
					q = r;
					continue;
				}
				q++;
			}
		}
		kv[k].val = v;
		kv[k].vlen = (size_t)(q - v);
		while (kv[k].vlen && isspace((unsigned char)v[kv[k].vlen - 1]))
			kv[k].vlen--;
		k++;
		p = q;
		while (p < end && isspace((unsigned char)*p))
			p++;
	}
	return k;
}

char *gl_nodeobs_dup_val(const char *v, size_t n)
{
	if (n == 0 || (n == 6 && !memcmp(v, "(null)", 6)) || (n == 4 && !memcmp(v, "None", 4)))
		return NULL;
	return gl_xstrndup(v, n);
}
