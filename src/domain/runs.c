/* Training runs: grouping jobs and summing their figures (include/gl/runs.h). */
#include "gl/runs.h"
#include "gl/jobstats.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The labels the training operators put on their pods, most specific
 * first: a JobSet's pods are owned by a Job, a pipeline run's by an Argo
 * Workflow, so the label names the piece of work where the owner does not. */
static const struct {
	const char *key, *kind;
} op_labels[] = {
	{"training.kubeflow.org/job-name", "kubeflow"},   /* PyTorchJob, TFJob, MPIJob, ... */
	{"jobset.sigs.k8s.io/jobset-name", "jobset"},
	{"ray.io/originated-from-cr-name", "ray"},        /* RayJob / RayCluster */
	{"volcano.sh/job-name", "volcano"},
	{"pipeline/runid", "kfp"},                        /* Kubeflow Pipelines run */
	{"workflows.argoproj.io/workflow", "argo"},
	{"batch.kubernetes.io/job-name", "job"},
	{"job-name", "job"},
};
#define N_OP GL_ARRAY_LEN(op_labels)

int gl_runs_by_parse(const char *by, enum gl_runs_by *out, const char **label)
{
	static const char *const names[] = {"array", "name_user", "comment", "wckey", "tag", "kube_owner"};
	*label = NULL;
	if (!by)
		return -GL_EINVAL;
	for (size_t i = 0; i < GL_ARRAY_LEN(names); i++)
		if (!strcmp(by, names[i])) {
			*out = (enum gl_runs_by)i;
			return 0;
		}
	if (!strncmp(by, "label:", 6) && by[6]) {
		*out = GL_RUNS_BY_LABEL;
		*label = by + 6;
		return 0;
	}
	return -GL_EINVAL;
}

void gl_runs_label_keys(const struct gl_runs_rule *rules, size_t n_rules, const char ***keys, size_t *n_keys)
{
	*keys = gl_xcalloc(N_OP + n_rules + 1, sizeof **keys);
	*n_keys = 0;
	for (size_t i = 0; i < N_OP; i++)
		(*keys)[(*n_keys)++] = op_labels[i].key;
	for (size_t i = 0; i < n_rules; i++)
		if (rules[i].by == GL_RUNS_BY_LABEL)
			(*keys)[(*n_keys)++] = rules[i].label;
}

int gl_runs_attempt_failed(const char *state)
{
	size_t n;
	if (!state)
		return 0;
	if (gl_jobstats_state_failed(state))
		return 1;
	n = strcspn(state, " ");
	return (n == 8 && !strncasecmp(state, "REQUEUED", 8)) || (n == 9 && !strncasecmp(state, "PREEMPTED", 9));
}

static int has(const char *s)
{
	return s && *s;
}

/* The value of a run=<id> word: after "run=" at the start or after a
 * character that is not a letter, digit or '_', up to a blank, ',' or ';'. */
static int tag_of(const char *s, const char **v, size_t *n)
{
	if (!s)
		return 0;
	for (const char *p = s; (p = strstr(p, "run=")); p++) {
		if (p > s && (isalnum((unsigned char)p[-1]) || p[-1] == '_'))
			continue;
		*v = p + 4;
		*n = strcspn(*v, " \t,;");
		if (*n)
			return 1;
	}
	return 0;
}

/* Index of label rule r among the label keys (after the operators'). */
static size_t label_slot(const struct gl_runs_rule *rules, size_t r)
{
	size_t k = N_OP;
	for (size_t i = 0; i < r; i++)
		k += rules[i].by == GL_RUNS_BY_LABEL;
	return k;
}

static int in_force(const struct gl_runs_rule *ru, const struct gl_runs_job *j)
{
	int64_t t = j->submit_s != GL_TIME_NONE ? j->submit_s : j->start_s;
	if (has(ru->cluster) && (!j->cluster || strcmp(ru->cluster, j->cluster)))
		return 0;
	if (ru->from_s != GL_TIME_NONE && (t == GL_TIME_NONE || t < ru->from_s))
		return 0;
	return ru->to_s == GL_TIME_NONE || (t != GL_TIME_NONE && t < ru->to_s);
}

/* The run of one rule, 1 when the job has the rule's field. */
static int rule_key(const struct gl_runs_job *j, const struct gl_runs_rule *rules, size_t r, char *buf, size_t n,
		    const char **kind)
{
	const char *c = j->cluster ? j->cluster : "", *ns = j->namespace_ ? j->namespace_ : "", *v;
	size_t vn;
	switch (rules[r].by) {
	case GL_RUNS_BY_ARRAY:
		if (j->array_job_id < 0)
			return 0;
		*kind = "array";
		snprintf(buf, n, "%s/array/%lld", c, (long long)j->array_job_id);
		return 1;
	case GL_RUNS_BY_NAME_USER:
		if (!has(j->name) || !has(j->user_name))
			return 0;
		*kind = "name_user";
		snprintf(buf, n, "%s/name_user/%s/%s", c, j->user_name, j->name);
		return 1;
	case GL_RUNS_BY_COMMENT:
	case GL_RUNS_BY_WCKEY:
		v = rules[r].by == GL_RUNS_BY_COMMENT ? j->comment : j->wckey;
		if (!has(v))
			return 0;
		*kind = rules[r].by == GL_RUNS_BY_COMMENT ? "comment" : "wckey";
		snprintf(buf, n, "%s/%s/%s", c, *kind, v);
		return 1;
	case GL_RUNS_BY_TAG:
		if (!tag_of(j->name, &v, &vn) && !tag_of(j->comment, &v, &vn))
			return 0;
		*kind = "tag";
		snprintf(buf, n, "%s/tag/%.*s", c, (int)vn, v);
		return 1;
	case GL_RUNS_BY_KUBE_OWNER:
		for (size_t i = 0; j->labels && i < N_OP; i++)
			if (has(j->labels[i])) {
				*kind = op_labels[i].kind;
				snprintf(buf, n, "%s/%s/%s/%s", c, *kind, ns, j->labels[i]);
				return 1;
			}
		if (!has(j->owner_kind) || !has(j->owner_name))
			return 0;
		*kind = "owner";
		snprintf(buf, n, "%s/owner/%s/%s/%s", c, ns, j->owner_kind, j->owner_name);
		return 1;
	case GL_RUNS_BY_LABEL:
		v = j->labels ? j->labels[label_slot(rules, r)] : NULL;
		if (!has(v))
			return 0;
		*kind = "label";
		snprintf(buf, n, "%s/label/%s/%s/%s", c, ns, rules[r].label, v);
		return 1;
	}
	return 0;
}

/* The run of a job no rule groups: its Slurm job id (requeue attempts are
 * rows of one id; het components 14+0, 14+1 share the leader's 14), or
 * the pod (name and uid). */
static void base_key(const struct gl_runs_job *j, char *buf, size_t n, const char **kind)
{
	const char *c = j->cluster ? j->cluster : "";
	if (j->namespace_) {
		/* the uid too: a pod recreated under its name is another pod */
		*kind = "pod";
		snprintf(buf, n, "%s/pod/%s/%s/%s", c, j->namespace_, j->job_id ? j->job_id : "", j->job_key ? j->job_key : "");
	} else if (j->het_job_id >= 0) {
		*kind = "job";
		snprintf(buf, n, "%s/job/%lld", c, (long long)j->het_job_id);
	} else {
		*kind = "job";
		snprintf(buf, n, "%s/job/%s", c, j->job_id ? j->job_id : "");
	}
}

void gl_runs_key(const struct gl_runs_job *j, const struct gl_runs_rule *rules, size_t n_rules, char *buf, size_t n,
		 const char **kind)
{
	for (size_t r = 0; r < n_rules; r++)
		if (in_force(&rules[r], j) && rule_key(j, rules, r, buf, n, kind))
			return;
	base_key(j, buf, n, kind);
}

/* ---- grouping -------------------------------------------------------- */

struct slot {
	size_t job;
	char *base, *run;
	const char *kind;
	int64_t t, pk; /* submit (else start), job_pk: the order inside a run */
};

static int64_t when(const struct gl_runs_job *j)
{
	return j->submit_s != GL_TIME_NONE ? j->submit_s : j->start_s;
}

static int by_time(const struct slot *x, const struct slot *y)
{
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->pk < y->pk ? -1 : x->pk > y->pk;
}

static int cmp_base(const void *a, const void *b)
{
	const struct slot *x = a, *y = b;
	int c = strcmp(x->base, y->base);
	return c ? c : by_time(x, y);
}

static int cmp_run(const void *a, const void *b)
{
	const struct slot *x = a, *y = b;
	int c = strcmp(x->run, y->run);
	return c ? c : by_time(x, y);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A job's attempts and components count once among a run's jobs. */
static int64_t distinct_bases(const struct slot *s, size_t n)
{
	char **b = gl_xcalloc(n + 1, sizeof *b);
	int64_t k = 0;
	for (size_t i = 0; i < n; i++)
		b[i] = s[i].base;
	gl_qsort(b, n, sizeof *b, cmp_str);
	for (size_t i = 0; i < n; i++)
		k += !i || strcmp(b[i], b[i - 1]);
	free(b);
	return k;
}

static int cmp_newest(const void *a, const void *b)
{
	const struct gl_runs_run *x = a, *y = b;
	if (x->first_submit_s != y->first_submit_s)
		return x->first_submit_s > y->first_submit_s ? -1 : 1;
	return strcmp(x->key, y->key);
}

static uint64_t fnv_add(uint64_t h, const char *s)
{
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ULL;
	}
	return h;
}

static void fnv_id(const char *s, char id[17])
{
	snprintf(id, 17, "%016llx", (unsigned long long)fnv_add(14695981039346656037ULL, s));
}

void gl_runs_run_id(const char *key, char id[17])
{
	fnv_id(key, id);
}

void gl_runs_rules_sig(const struct gl_runs_rule *rules, size_t n_rules, char sig[17])
{
	uint64_t h = 14695981039346656037ULL;
	char buf[96];
	for (size_t i = 0; i < n_rules; i++) {
		const struct gl_runs_rule *r = &rules[i];
		/* a separator no field holds, so ("a","b") is not ("ab","") */
		snprintf(buf, sizeof buf, "\x1f%d\x1f%lld\x1f%lld\x1f", (int)r->by, (long long)r->from_s, (long long)r->to_s);
		h = fnv_add(fnv_add(fnv_add(h, buf), r->cluster ? r->cluster : ""), "\x1f");
		h = fnv_add(fnv_add(h, r->label ? r->label : ""), "\x1e");
	}
	snprintf(sig, 17, "%016llx", (unsigned long long)h);
}

/* The run's state: RUNNING while a member runs, PENDING while one waits
 * and none runs, else the state of the attempt that ended last. */
static void run_state(struct gl_runs_run *r, const struct gl_runs_job *jobs)
{
	const struct gl_runs_job *last = NULL;
	int running = 0, pending = 0;
	for (size_t i = 0; i < r->n_members; i++) {
		const struct gl_runs_job *j = &jobs[r->members[i]];
		if (j->end_s == GL_TIME_NONE) {
			running |= j->start_s != GL_TIME_NONE;
			pending |= j->start_s == GL_TIME_NONE;
			continue;
		}
		if (!last || j->end_s > last->end_s || (j->end_s == last->end_s && j->job_pk > last->job_pk))
			last = j;
	}
	r->state = running ? "RUNNING" : pending ? "PENDING" : last && last->state ? last->state : "UNKNOWN";
	r->last_end_s = running || pending || !last ? GL_TIME_NONE : last->end_s;
}

static void add_member(struct gl_runs_run *r, const struct gl_runs_job *j, size_t idx)
{
	int64_t t = when(j);
	r->members[r->n_members++] = idx;
	if (t != GL_TIME_NONE && (r->first_submit_s == GL_TIME_NONE || t < r->first_submit_s))
		r->first_submit_s = t;
	r->attempts += j->het_offset <= 0; /* a het job's components are one attempt */
	r->gpu_s += j->gpu_s;
	r->cost_micros += j->cost_micros;
	r->unpriced_s += j->unpriced_s;
	r->unobserved_s += j->unobserved_s;
	r->busy_s += j->busy_s;
	r->idle_s += j->idle_s;
	r->observed_s += j->observed_s;
	if (j->queue_wait_s > 0)
		r->queue_s += j->queue_wait_s;
	if (gl_runs_attempt_failed(j->state)) {
		r->failed_cost_micros += j->cost_micros;
		r->failed_gpu_s += j->gpu_s;
	}
}

/* Each run's key for every job: the rule in force at the first attempt of
 * a job decides for all its attempts and components. */
static void assign_runs(struct slot *s, size_t n, const struct gl_runs_job *jobs, const struct gl_runs_rule *rules,
			size_t n_rules)
{
	char buf[1024];
	gl_qsort(s, n, sizeof *s, cmp_base);
	for (size_t i = 0; i < n;) {
		size_t e = i + 1;
		while (e < n && !strcmp(s[e].base, s[i].base))
			e++;
		gl_runs_key(&jobs[s[i].job], rules, n_rules, buf, sizeof buf, &s[i].kind);
		for (size_t k = i; k < e; k++) {
			s[k].run = gl_xstrdup(buf);
			s[k].kind = s[i].kind;
		}
		i = e;
	}
}

void gl_runs_group(const struct gl_runs_job *jobs, size_t n_jobs, const struct gl_runs_rule *rules, size_t n_rules,
		   struct gl_runs *out)
{
	struct slot *s = gl_xcalloc(n_jobs + 1, sizeof *s);
	char buf[1024];

	memset(out, 0, sizeof *out);
	for (size_t i = 0; i < n_jobs; i++) {
		const char *k;
		base_key(&jobs[i], buf, sizeof buf, &k);
		s[i] = (struct slot){.job = i, .base = gl_xstrdup(buf), .t = when(&jobs[i]), .pk = jobs[i].job_pk};
	}
	assign_runs(s, n_jobs, jobs, rules, n_rules);
	gl_qsort(s, n_jobs, sizeof *s, cmp_run);
	out->runs = gl_xcalloc(n_jobs + 1, sizeof *out->runs);
	for (size_t i = 0; i < n_jobs;) {
		struct gl_runs_run *r = &out->runs[out->n++];
		size_t e = i + 1;
		while (e < n_jobs && !strcmp(s[e].run, s[i].run))
			e++;
		r->key = gl_xstrdup(s[i].run);
		fnv_id(r->key, r->id);
		r->kind = s[i].kind;
		r->members = gl_xcalloc(e - i, sizeof *r->members);
		r->first = s[i].job;
		r->first_submit_s = GL_TIME_NONE;
		for (size_t k = i; k < e; k++)
			add_member(r, &jobs[s[k].job], s[k].job);
		r->jobs = distinct_bases(s + i, e - i);
		run_state(r, jobs);
		i = e;
	}
	for (size_t i = 0; i < n_jobs; i++) {
		free(s[i].base);
		free(s[i].run);
	}
	free(s);
	gl_qsort(out->runs, out->n, sizeof *out->runs, cmp_newest);
}

void gl_runs_fini(struct gl_runs *r)
{
	for (size_t i = 0; i < r->n; i++) {
		free(r->runs[i].key);
		free(r->runs[i].members);
	}
	free(r->runs);
	memset(r, 0, sizeof *r);
}
