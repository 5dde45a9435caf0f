/* Idle-hook policies (see include/gl/hookpolicy.h). */
#include "gl/hookpolicy.h"
#include "gl/tmpl.h"
#include "gl/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const gl_hookpolicy_placeholders[] = {
	"job_id", "cluster", "user", "account", "owner", "namespace", "pod", "job_name", "partition", "policy",
	"stage", "idle_minutes", "gpus", "gpu_hours", "cost", "currency", "action_at", NULL,
};

static void list_push(struct gl_hookpolicy_list *l, const char *s, size_t len)
{
	l->v = gl_xrealloc(l->v, (l->n + 2) * sizeof *l->v);
	l->v[l->n++] = gl_xstrndup(s, len);
	l->v[l->n] = NULL;
}

void gl_hookpolicy_list_fini(struct gl_hookpolicy_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

/* "a, b,c" -> {a, b, c}; empty items dropped */
static void split_commas(const char *s, struct gl_hookpolicy_list *l)
{
	while (s && *s) {
		const char *e = strchr(s, ','), *a = s, *b;
		if (!e)
			e = s + strlen(s);
		b = e;
		while (a < b && (*a == ' ' || *a == '\t'))
			a++;
		while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
			b--;
		if (b > a)
			list_push(l, a, (size_t)(b - a));
		s = *e ? e + 1 : e;
	}
}

int gl_hookpolicy_split(const char *tmpl, struct gl_hookpolicy_list *out, struct gl_err *err)
{
	memset(out, 0, sizeof *out);
	return gl_tmpl_split(tmpl, &out->v, &out->n, err);
}

static int check_placeholders(const struct gl_hookpolicy_list *l, char *bad, size_t nbad)
{
	for (size_t i = 0; i < l->n; i++)
		if (gl_tmpl_check(l->v[i], gl_hookpolicy_placeholders, bad, nbad))
			return -1;
	return 0;
}

static int compile_one(const struct gl_hookpolicy_defaults *d, const struct gl_hookpolicy_cfg *c,
		       struct gl_hookpolicy *p, struct gl_err *err)
{
	char *end, bad[64];
	double v;
	int rc;
	const struct {
		const char *key, *tmpl;
		struct gl_hookpolicy_list *out;
	} tm[] = {
		{"warn_command", c->warn_command, &p->warn_argv},
		/* an inherited command's error names the key it came from */
		{c->slurm_command[0] ? "slurm_command" : "slurm_command (hook.slurm_command)",
		 c->slurm_command[0] ? c->slurm_command : d->slurm_command, &p->slurm_argv},
		{c->kube_command[0] ? "kube_command" : "kube_command (hook.kube_command)",
		 c->kube_command[0] ? c->kube_command : d->kube_command, &p->kube_argv},
	};

	p->name = c->name;
	p->line = c->line;
	p->allow_list_file = c->allow_list_file;
	if ((rc = gl_idlerule_kind_parse(c->rule, &p->rule.kind)))
		return gl_err_set(err, GL_ECONFIG, "rule.kind: '%s' is not fixed, sliding or reset", c->rule);
	p->rule.t1_s = c->t1_min * 60;
	p->rule.t2_s = c->t2_min * 60;
	p->rule.t3_s = c->t3_min * 60;
	p->rule.grace_s = c->grace_min * 60;
	p->rule.max_data_age_s = d->max_data_age_s;
	v = strtod(c->gpu_fraction, &end);
	if (*end || end == c->gpu_fraction || !(v > 0 && v <= 1))
		return gl_err_set(err, GL_ECONFIG, "rule.gpu_fraction: '%s' is not in (0, 1]", c->gpu_fraction);
	p->rule.gpu_fraction = v;
	if ((rc = gl_idlerule_check(&p->rule, err)))
		return -GL_ECONFIG;
	v = strtod(c->engine_active_threshold, &end);
	if (*end || end == c->engine_active_threshold || !(v >= 0 && v <= 1))
		return gl_err_set(err, GL_ECONFIG, "signal.engine_active_threshold: '%s' is not a ratio in [0, 1]",
				  c->engine_active_threshold);
	p->signal.engine_active_threshold = v;
	p->signal.util_threshold_pct = (double)c->util_threshold_pct;
	p->signal.memory_counts_as_busy = c->memory_counts_as_busy;
	p->signal.fb_used_busy_mib = (double)c->fb_used_busy_mib;
	p->signal.power_busy_watts = (double)c->power_busy_watts;
	p->min_age_s = c->min_age_min * 60;

	split_commas(c->clusters, &p->clusters);
	split_commas(c->partitions, &p->partitions);
	split_commas(c->qos, &p->qos);
	split_commas(c->accounts, &p->accounts);
	split_commas(c->namespaces, &p->namespaces);
	split_commas(c->labels, &p->labels);
	split_commas(c->ex_users, &p->ex_users);
	split_commas(c->ex_accounts, &p->ex_accounts);
	split_commas(c->ex_qos, &p->ex_qos);
	split_commas(c->ex_partitions, &p->ex_partitions);
	split_commas(c->ex_namespaces, &p->ex_namespaces);
	split_commas(c->ex_label, &p->ex_label);
	/* a policy without a scope would act on the whole fleet: never by accident */
	if (!p->clusters.n && !p->partitions.n && !p->qos.n && !p->accounts.n && !p->namespaces.n && !p->labels.n)
		return gl_err_set(err, GL_ECONFIG, "scope: empty (name at least one of clusters, partitions, qos, "
						   "accounts, namespaces, labels)");
	for (size_t i = 0; i < p->labels.n; i++)
		if (!strchr(p->labels.v[i], '='))
			return gl_err_set(err, GL_ECONFIG, "scope.labels: '%s' is not key=value", p->labels.v[i]);
	if (p->ex_label.n > 1 || (p->ex_label.n && !strchr(p->ex_label.v[0], '=')))
		return gl_err_set(err, GL_ECONFIG, "exclude.label: '%s' is not one key=value", c->ex_label);
	for (size_t i = 0; i < GL_ARRAY_LEN(tm); i++) {
		if ((rc = gl_hookpolicy_split(tm[i].tmpl, tm[i].out, err)))
			return gl_err_prefix(err, "%s: ", tm[i].key), -GL_ECONFIG;
		if (check_placeholders(tm[i].out, bad, sizeof bad))
			return gl_err_set(err, GL_ECONFIG, "%s: unknown placeholder %s", tm[i].key, bad);
		if (i > 0 && !tm[i].out->n)
			return gl_err_set(err, GL_ECONFIG, "%s: empty command", tm[i].key);
	}
	return 0;
}

int gl_hookpolicy_compile(const struct gl_hookpolicy_cfg *pc, size_t npc, const struct gl_hookpolicy_defaults *d,
			  struct gl_hookpolicy **out, size_t *n, struct gl_err *err)
{
	struct gl_hookpolicy *p = gl_xcalloc(npc ? npc : 1, sizeof *p);
	int rc = 0;

	*out = NULL;
	*n = 0;
	for (size_t i = 0; i < npc; i++) {
		const struct gl_hookpolicy_cfg *c = &pc[i];
		for (size_t j = 0; j < i; j++)
			if (!strcmp(pc[j].name, c->name)) {
				rc = gl_err_set(err, GL_ECONFIG, "%s:%d: hook.policies[%zu]: name '%s' is used twice (first at line %d)",
						d->path, c->line, i, c->name, pc[j].line);
				goto out;
			}
		if ((rc = compile_one(d, c, &p[i], err))) {
			gl_err_prefix(err, "%s:%d: hook.policies[%zu] (%s): ", d->path, c->line, i, c->name);
			err->code = GL_ECONFIG;
			rc = -GL_ECONFIG;
			goto out;
		}
	}
out:
	if (rc) {
		gl_hookpolicy_free(p, npc);
		return rc;
	}
	*out = p;
	*n = npc;
	return 0;
}

void gl_hookpolicy_free(struct gl_hookpolicy *p, size_t n)
{
	if (!p)
		return;
	for (size_t i = 0; i < n; i++) {
		struct gl_hookpolicy_list *ls[] = {&p[i].clusters, &p[i].partitions, &p[i].qos, &p[i].accounts,
						   &p[i].namespaces, &p[i].labels, &p[i].ex_users, &p[i].ex_accounts,
						   &p[i].ex_qos, &p[i].ex_partitions, &p[i].ex_namespaces, &p[i].ex_label,
						   &p[i].warn_argv, &p[i].slurm_argv, &p[i].kube_argv};
		for (size_t k = 0; k < GL_ARRAY_LEN(ls); k++)
			gl_hookpolicy_list_fini(ls[k]);
	}
	free(p);
}

static int in_list(const struct gl_hookpolicy_list *l, const char *s)
{
	for (size_t i = 0; s && i < l->n; i++)
		if (!strcmp(l->v[i], s))
			return 1;
	return 0;
}

static int has_label(const struct gl_hookpolicy_job *j, const char *kv)
{
	for (size_t i = 0; i < j->nlabels; i++)
		if (!strcmp(j->labels[i], kv))
			return 1;
	return 0;
}

int gl_hookpolicy_in_scope(const struct gl_hookpolicy *p, const struct gl_hookpolicy_job *j)
{
	const struct {
		const struct gl_hookpolicy_list *l;
		const char *v;
	} c[] = {{&p->clusters, j->cluster},   {&p->partitions, j->partition}, {&p->qos, j->qos},
		 {&p->accounts, j->account},   {&p->namespaces, j->namespace}};
	for (size_t i = 0; i < GL_ARRAY_LEN(c); i++)
		if (c[i].l->n && !in_list(c[i].l, c[i].v))
			return 0;
	for (size_t i = 0; i < p->labels.n; i++)
		if (!has_label(j, p->labels.v[i]))
			return 0;
	return 1;
}

int gl_hookpolicy_excluded(const struct gl_hookpolicy *p, const struct gl_hookpolicy_job *j, char *why, size_t n)
{
	const struct {
		const char *key;
		const struct gl_hookpolicy_list *l;
		const char *v;
	} c[] = {{"exclude.users", &p->ex_users, j->user},
		 {"exclude.accounts", &p->ex_accounts, j->account},
		 {"exclude.qos", &p->ex_qos, j->qos},
		 {"exclude.partitions", &p->ex_partitions, j->partition},
		 {"exclude.namespaces", &p->ex_namespaces, j->namespace}};
	for (size_t i = 0; i < GL_ARRAY_LEN(c); i++)
		if (in_list(c[i].l, c[i].v)) {
			snprintf(why, n, "%s: %s", c[i].key, c[i].v);
			return 1;
		}
	if (p->ex_label.n && has_label(j, p->ex_label.v[0])) {
		snprintf(why, n, "exclude.label: %s", p->ex_label.v[0]);
		return 1;
	}
	return 0;
}

char **gl_hookpolicy_expand(const struct gl_hookpolicy_list *tmpl, const struct gl_tmpl_var *vars, size_t nvars)
{
	char **argv = gl_xcalloc(tmpl->n + 1, sizeof *argv);
	for (size_t i = 0; i < tmpl->n; i++)
		argv[i] = gl_tmpl_expand(tmpl->v[i], vars, nvars);
	return argv;
}

int gl_hookpolicy_dash_arg(const struct gl_hookpolicy_list *tmpl, char *const *argv)
{
	for (size_t i = 0; i < tmpl->n && argv[i]; i++)
		if (argv[i][0] == '-' && tmpl->v[i][0] != '-')
			return (int)i;
	return -1;
}

void gl_hookpolicy_argv_free(char **argv)
{
	for (size_t i = 0; argv && argv[i]; i++)
		free(argv[i]);
	free(argv);
}
