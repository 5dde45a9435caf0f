/* `scontrol show node -o` and `scontrol show reservation [-o]` parsers. */
#include "gl/nodeobs.h"
#include "gl/bounds.h"
#include "gl/sacct.h"
#include "gl/utf8.h"
#include "nodeobs_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_KV 160

static int key_is(const struct gl_nodeobs_kv *kv, const char *k)
{
	size_t n = strlen(k);
	return kv->klen == n && !memcmp(kv->key, k, n);
}

/* "maint test [root@2026-11-22T17:59:21]" -> text, user, time */
static void parse_reason(struct gl_nodeobs_obs *o, const char *v, size_t n)
{
	const char *lb = NULL;
	free(o->reason); /* a repeated key: the last one wins */
	free(o->reason_user);
	o->reason = o->reason_user = NULL;
	o->reason_s = GL_TIME_NONE;
	if (n && v[n - 1] == ']') {
		for (size_t i = n - 1; i-- > 0;)
			if (v[i] == '[') {
				lb = v + i;
				break;
			}
	}
	if (lb) {
		const char *at = memchr(lb, '@', (size_t)(v + n - lb));
		size_t tl = (size_t)(lb - v);
		int64_t t;
		while (tl && v[tl - 1] == ' ')
			tl--;
		if (at) {
			o->reason_user = gl_nodeobs_dup_val(lb + 1, (size_t)(at - lb - 1));
			if (gl_sacct_parse_time(at + 1, (size_t)(v + n - 1 - at - 1), &t) == 0)
				o->reason_s = t;
			o->reason = gl_nodeobs_dup_val(v, tl);
			return;
		}
	}
	o->reason = gl_nodeobs_dup_val(v, n);
}

/* The keys a node line keeps, and their bounds (include/gl/bounds.h). */
static const struct {
	const char *key;
	enum gl_bounds k;
} node_keys[] = {
	{"NodeName", GL_BOUNDS_NODE}, {"Gres", GL_BOUNDS_TEXT},   {"CfgTRES", GL_BOUNDS_TEXT}, {"AllocTRES", GL_BOUNDS_TEXT},
	{"State", GL_BOUNDS_TEXT},    {"Partitions", GL_BOUNDS_TEXT}, {"Reason", GL_BOUNDS_TEXT},
};

static int node_line_fits(const struct gl_nodeobs_kv *kv, size_t nkv, struct gl_err *err)
{
	char why[160];
	for (size_t i = 0; i < nkv; i++)
		for (size_t j = 0; j < GL_ARRAY_LEN(node_keys); j++)
			if (key_is(&kv[i], node_keys[j].key) && gl_bounds_check(node_keys[j].k, kv[i].vlen, why, sizeof why))
				return gl_err_set(err, GL_EINVAL, "%s: %s", node_keys[j].key, why);
	return 0;
}

static int parse_node_line(struct gl_nodeobs_snapshot *s, const char *line, size_t len, struct gl_err *err)
{
	struct gl_nodeobs_kv kv[MAX_KV];
	size_t nkv = gl_nodeobs_kv_split(line, len, kv, MAX_KV);
	const struct gl_nodeobs_kv *gres = NULL, *cfg = NULL, *alloc = NULL, *state = NULL;
	struct gl_nodeobs_obs *o;
	char unknown[256];
	int rc = 0;

	if (nkv == 0 || !key_is(&kv[0], "NodeName") || kv[0].vlen == 0)
		return gl_err_set(err, GL_EINVAL, "NodeName: missing");
	if ((rc = node_line_fits(kv, nkv, err)))
		return rc;
	{
		/* `scontrol show node -o` always prints State=, and CfgTRES= since
		 * 15.08 (dumps of the GPU inventory may keep only NodeName and
		 * CfgTRES); a line with neither was cut short, and read as an up
		 * node with its Gres GPUs it would be capacity nobody saw */
		int have = 0;
		for (size_t i = 1; i < nkv; i++)
			have |= key_is(&kv[i], "State") || key_is(&kv[i], "CfgTRES");
		if (!have)
			return gl_err_set(err, GL_EINVAL, "node %.*s: neither State= nor CfgTRES= (a line cut short?)",
					  (int)(kv[0].vlen > 64 ? 64 : kv[0].vlen), kv[0].val);
	}
	o = gl_nodeobs_add_node(s);
	o->name = gl_xstrndup(kv[0].val, kv[0].vlen);
	for (size_t i = 1; i < nkv; i++) {
		if (key_is(&kv[i], "Gres"))
			gres = &kv[i];
		else if (key_is(&kv[i], "CfgTRES"))
			cfg = &kv[i];
		else if (key_is(&kv[i], "AllocTRES"))
			alloc = &kv[i];
		else if (key_is(&kv[i], "State"))
			state = &kv[i];
		else if (key_is(&kv[i], "Partitions")) {
			free(o->partitions); /* a repeated key: the last one wins */
			o->partitions = gl_nodeobs_dup_val(kv[i].val, kv[i].vlen);
		} else if (key_is(&kv[i], "Reason"))
			parse_reason(o, kv[i].val, kv[i].vlen);
	}
	{
		/* CfgTRES is what the accounting (and sreport) counts; Gres is the
		 * fallback for dumps without it */
		int64_t total = 0;
		if (cfg && (rc = gl_nodeobs_parse_tres_models(cfg->val, cfg->vlen, o->gpus, &o->ngpu_models, &total, err))) {
			gl_err_prefix(err, "CfgTRES: ");
			goto out;
		}
		if (o->ngpu_models == 0 && gres &&
		    (rc = gl_nodeobs_parse_gres(gres->val, gres->vlen, o->gpus, &o->ngpu_models, err))) {
			gl_err_prefix(err, "Gres: ");
			goto out;
		}
		if (alloc) {
			struct gl_nodeobs_gpus tmp[GL_NODEOBS_MAX_MODELS];
			size_t nt;
			if ((rc = gl_nodeobs_parse_tres_models(alloc->val, alloc->vlen, tmp, &nt, &o->alloc_gpus, err))) {
				gl_err_prefix(err, "AllocTRES: ");
				goto out;
			}
		}
	}
	if (state) {
		o->state_raw = gl_xstrndup(state->val, state->vlen);
		o->avail = gl_nodeobs_state_classify(state->val, state->vlen, unknown, sizeof unknown);
		if (unknown[0]) {
			o->unknown_flags = gl_xstrdup(unknown);
			s->unknown_flags++;
		}
	} else {
		o->avail = GL_NODEOBS_AVAIL_UP;
	}
	/* the reason's time is when the admin (or slurmctld) set the state */
	if (o->avail != GL_NODEOBS_AVAIL_UP && o->reason_s != GL_TIME_NONE)
		o->state_since_s = o->reason_s;
out:
	if (rc) {
		gl_nodeobs_node_fini(o);
		s->nnodes--;
	}
	return rc;
}

int gl_scontrol_parse_nodes(const char *text, size_t len, struct gl_nodeobs_snapshot *s, struct gl_err *err)
{
	const char *p = text, *end = text + len;
	size_t lineno = 0, seen = 0, nonblank = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *e = nl ? nl : end;
		size_t n = (size_t)(e - p);
		struct gl_err le = {0};
		lineno++;
		if (n && p[n - 1] == '\r')
			n--;
		while (n && (*p == ' ' || *p == '\t')) {
			p++;
			n--;
		}
		if (n) {
			nonblank++;
			s->lines++;
			size_t at;
			if (n >= 9 && !memcmp(p, "NodeName=", 9)) {
				seen++;
				if (gl_utf8_validate(p, n, &at) < 0) {
					/* the store would refuse the whole snapshot for it */
					s->skipped++;
					gl_nodeobs_problem(s, "scontrol line %zu: not valid UTF-8 (byte %zu)", lineno,
							   at + 1);
				} else if (parse_node_line(s, p, n, &le)) {
					s->skipped++;
					gl_nodeobs_problem(s, "scontrol line %zu: %s", lineno, le.msg);
				} else if (s->nodes[s->nnodes - 1].unknown_flags) {
					gl_nodeobs_problem(s, "scontrol line %zu: node %s: unknown state flags '%s' kept verbatim",
							   lineno, s->nodes[s->nnodes - 1].name,
							   s->nodes[s->nnodes - 1].unknown_flags);
				}
			} else {
				s->skipped++;
				gl_nodeobs_problem(s, "scontrol line %zu: not a NodeName= line (did you pass -o?)", lineno);
			}
		}
		p = nl ? nl + 1 : end;
	}
	if (nonblank && !seen)
		return gl_err_set(err, GL_EFORMAT, "not `scontrol show node -o` output: no NodeName= line");
	return 0;
}

/* ---- reservations, scontrol form: one block per ReservationName= (with -o
 * one line; without it the block continues on indented lines) ---- */

static void resv_from_kv(struct gl_nodeobs_snapshot *s, const char *blk, size_t n, size_t lineno)
{
	struct gl_nodeobs_kv kv[MAX_KV];
	size_t nkv = gl_nodeobs_kv_split(blk, n, kv, MAX_KV);
	struct gl_nodeobs_slurm_resv *r;
	struct gl_err err = {0};
	int64_t t;
	static const struct {
		const char *key;
		enum gl_bounds k;
	} rk[] = {{"ReservationName", GL_BOUNDS_OBJECT}, {"Nodes", GL_BOUNDS_NODE_LIST}, {"Flags", GL_BOUNDS_TEXT},
		  {"TRES", GL_BOUNDS_TEXT}};
	for (size_t i = 0; i < nkv; i++)
		for (size_t j = 0; j < GL_ARRAY_LEN(rk); j++) {
			char why[160];
			if (key_is(&kv[i], rk[j].key) && gl_bounds_check(rk[j].k, kv[i].vlen, why, sizeof why)) {
				gl_nodeobs_problem(s, "scontrol reservation line %zu: %s: %s", lineno, rk[j].key, why);
				s->skipped++;
				return;
			}
		}
	r = gl_nodeobs_add_resv(s);
	for (size_t i = 0; i < nkv; i++) {
		const struct gl_nodeobs_kv *k = &kv[i];
		/* a repeated key: the last one wins */
		if (key_is(k, "ReservationName")) {
			free(r->name);
			r->name = gl_xstrndup(k->val, k->vlen);
		}
		else if (key_is(k, "StartTime") && gl_sacct_parse_time(k->val, k->vlen, &t) == 0)
			r->start_s = t;
		else if (key_is(k, "EndTime") && gl_sacct_parse_time(k->val, k->vlen, &t) == 0)
			r->end_s = t;
		else if (key_is(k, "Nodes")) {
			free(r->nodes);
			r->nodes = gl_nodeobs_dup_val(k->val, k->vlen);
		}
		else if (key_is(k, "Flags")) {
			free(r->flags);
			r->flags = gl_nodeobs_dup_val(k->val, k->vlen);
		}
		else if (key_is(k, "TRES")) {
			free(r->tres);
			r->tres = gl_nodeobs_dup_val(k->val, k->vlen);
		}
	}
	if (!r->name || r->start_s == GL_TIME_NONE) {
		gl_nodeobs_problem(s, "scontrol reservation line %zu: %s: missing", lineno,
				   r->name ? "StartTime" : "ReservationName");
		gl_nodeobs_resv_fini(r);
		s->nresvs--;
		s->skipped++;
		return;
	}
	if (r->tres && gl_nodeobs_parse_tres_models(r->tres, strlen(r->tres), r->gpus, &r->ngpu_models, &r->gpus_total,
						  &err)) {
		gl_nodeobs_problem(s, "scontrol reservation line %zu: TRES: %s (no GPUs counted)", lineno, err.msg);
		r->ngpu_models = 0;
		r->gpus_total = 0;
	}
	if (r->flags) {
		r->maint = strstr(r->flags, "MAINT") != NULL;
		r->ignore_jobs = strstr(r->flags, "IGNORE_JOBS") != NULL;
	}
}

/* A block with a line that is not UTF-8 is skipped whole: the store would
 * refuse the snapshot for it. */
static void resv_block(struct gl_nodeobs_snapshot *s, const char *blk, size_t n, size_t lineno, size_t bad_line)
{
	if (bad_line) {
		s->skipped++;
		gl_nodeobs_problem(s, "scontrol reservation line %zu: not valid UTF-8", bad_line);
		return;
	}
	resv_from_kv(s, blk, n, lineno);
}

int gl_scontrol_parse_resv(const char *text, size_t len, struct gl_nodeobs_snapshot *s)
{
	const char *p = text, *end = text + len;
	size_t lineno = 0, blk_line = 0;
	struct gl_strbuf_lite {
		char *p;
		size_t len;
	} j = {NULL, 0};
	int in_blk = 0;
	size_t bad_line = 0; /* first line of the block that is not UTF-8, 0 none */
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *e = nl ? nl : end;
		const char *q = p;
		lineno++;
		s->lines++;
		while (q < e && (*q == ' ' || *q == '\t'))
			q++;
		while (e > q && (e[-1] == '\r' || e[-1] == ' '))
			e--;
		if (e - q >= 16 && !memcmp(q, "ReservationName=", 16)) {
			if (in_blk)
				resv_block(s, j.p, j.len, blk_line, bad_line);
			in_blk = 1;
			blk_line = lineno;
			bad_line = 0;
			j.len = 0;
		}
		if (in_blk && !bad_line && gl_utf8_validate(q, (size_t)(e - q), NULL) < 0)
			bad_line = lineno;
		if (in_blk && e > q) {
			/* join the block's lines with spaces so the tokenizer sees one line */
			j.p = gl_xrealloc(j.p, j.len + (size_t)(e - q) + 2);
			if (j.len)
				j.p[j.len++] = ' ';
			memcpy(j.p + j.len, q, (size_t)(e - q));
			j.len += (size_t)(e - q);
		}
		p = nl ? nl + 1 : end;
	}
	if (in_blk)
		resv_block(s, j.p, j.len, blk_line, bad_line);
	free(j.p);
	return 0;
}
