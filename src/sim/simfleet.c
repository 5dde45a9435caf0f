/* The fleet simulator's model (see include/gl/simfleet.h). */
#include "gl/simfleet.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct gl_simfleet_model gl_sim_models[] = {
	{"a100", "NVIDIA A100-SXM4-80GB", "NVIDIA-A100-SXM4-80GB", 81920, 60, 400},
	{"v100", "Tesla V100-SXM2-32GB", "Tesla-V100-SXM2-32GB", 32768, 40, 300},
	{"a10", "NVIDIA A10", "NVIDIA-A10", 23028, 20, 150},
	{"t4", "Tesla T4", "Tesla-T4", 15360, 10, 70},
};
const size_t gl_sim_nmodels = GL_ARRAY_LEN(gl_sim_models);

/* The openb trace names no owner: pods are spread over made-up namespaces. */
const struct gl_simfleet_namespace gl_sim_namespaces[] = {
	{"recsys-train", "ads", "ranking", "CC-2001"},
	{"llm-serving", "language", "assistant", "CC-1002"},
	{"vision-batch", "vision", "segmentation", "CC-1001"},
	{"search", "search", "retrieval", "CC-2002"},
	{"notebooks", "platform", "shared", "CC-1004"},
};
const size_t gl_sim_nnamespaces = GL_ARRAY_LEN(gl_sim_namespaces);

#define RESERVE_AFTER_TRACE_S (6 * 3600) /* a Slurm job waiting this long reserves its partition */

void gl_simfleet_params_default(struct gl_simfleet_params *p)
{
	memset(p, 0, sizeof *p);
	p->seed = 28;
	p->gpus = 256;
	p->load = 0.8;
	p->slurm_name = "sim-slurm";
	p->kube_name = "sim-k8s";
	p->max_runtime_s = 3 * 86400;
	p->max_wait_s = 2 * 86400;
	p->node_mtbf_s = 20 * 86400;
}

/* splitmix64: small, seedable, the same on every platform */
static uint64_t rnd(struct gl_simfleet_fleet *f)
{
	uint64_t z = (f->rng += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static double rnd_unit(struct gl_simfleet_fleet *f)
{
	return (double)(rnd(f) >> 11) / 9007199254740992.0;
}

static double rnd_exp(struct gl_simfleet_fleet *f, double mean)
{
	return -log(1.0 - rnd_unit(f)) * mean;
}

static size_t rnd_below(struct gl_simfleet_fleet *f, size_t n)
{
	return (size_t)(rnd(f) % n);
}

static int64_t wall(const struct gl_simfleet_fleet *f, double trace_s)
{
	int64_t w = llround(trace_s / f->speed);
	return w < 1 ? 1 : w;
}

static int64_t trace_runtime(const struct gl_simfleet_fleet *f, const struct gl_simfleet_cluster_def *c, int32_t row)
{
	int64_t r = c->kind == GL_SIMFLEET_SLURM ? f->tr->jobs[row].runtime_s : f->tr->pods[row].duration_s;
	return r < f->p.max_runtime_s ? r : f->p.max_runtime_s;
}

static int32_t trace_gpus(const struct gl_simfleet_fleet *f, const struct gl_simfleet_cluster_def *c, int32_t row)
{
	return c->kind == GL_SIMFLEET_SLURM ? f->tr->jobs[row].gpus : f->tr->pods[row].gpus;
}

static size_t trace_rows(const struct gl_simfleet_fleet *f, const struct gl_simfleet_cluster_def *c)
{
	return c->kind == GL_SIMFLEET_SLURM ? f->tr->njobs : f->tr->npods;
}

/* Arrivals per hour of the week as the trace submitted them, mean 1; an
 * hour is capped at 3x the mean (openb's pods alive at its start all carry
 * creation time 0). */
static void week_profile(double *prof, const struct gl_simfleet_fleet *f, int kind)
{
	size_t n = kind == GL_SIMFLEET_SLURM ? f->tr->njobs : f->tr->npods;
	double sum = 0;
	for (int h = 0; h < 168; h++)
		prof[h] = 1.0;
	for (size_t i = 0; i < n; i++)
		prof[(kind == GL_SIMFLEET_SLURM ? f->tr->jobs[i].week_s : f->tr->pods[i].week_s) / 3600]++;
	for (int round = 0; round < 2; round++) {
		sum = 0;
		for (int h = 0; h < 168; h++)
			sum += prof[h];
		for (int h = 0; h < 168; h++)
			prof[h] = fmin(prof[h] * 168.0 / sum, 3.0);
	}
}

static void add_part(struct gl_simfleet_fleet *f, struct gl_simfleet_cluster_def *c, const char *name, int model, int nnodes,
		     int gpn, const char *prefix)
{
	struct gl_simfleet_part *p = &c->part[c->nparts++];
	snprintf(p->name, sizeof p->name, "%s", name);
	p->model = model;
	p->first_node = f->nnodes;
	p->nnodes = nnodes;
	p->gpus_per_node = gpn;
	for (int i = 0; i < nnodes; i++) {
		struct gl_simfleet_node *n = &f->nodes[f->nnodes++];
		memset(n, 0, sizeof *n);
		snprintf(n->name, sizeof n->name, "%s%03d", prefix, i + 1);
		n->cluster = (int)(c - f->cl);
		n->part = c->nparts - 1;
		n->ngpus = gpn;
		for (int k = 0; k < GL_SIMFLEET_MAX_GPUS_PER_NODE; k++) {
			n->slot[k] = -1;
			n->energy_at_s[k] = f->p.start_s;
		}
		n->avail_since_s = f->p.start_s;
		n->avail_until_s = GL_SIMFLEET_NONE;
	}
	c->nnodes += nnodes;
	c->gpus += nnodes * gpn;
}

/* Mean GPU-seconds a job of the partition asks, over the rows it accepts;
 * the arrival rate that offers `load` of its GPUs. */
static int part_rate(struct gl_simfleet_fleet *f, struct gl_simfleet_cluster_def *c, struct gl_simfleet_part *p)
{
	double sum = 0;
	size_t n = 0, rows = trace_rows(f, c);
	int gpus = p->nnodes * p->gpus_per_node;
	p->max_job_gpus = c->kind == GL_SIMFLEET_SLURM ? (gpus / 2 < GL_SIMFLEET_MAX_JOB_NODES * p->gpus_per_node
							     ? gpus / 2
							     : GL_SIMFLEET_MAX_JOB_NODES * p->gpus_per_node)
						  : p->gpus_per_node;
	for (size_t i = 0; i < rows; i++) {
		int32_t g = trace_gpus(f, c, (int32_t)i);
		if (g > p->max_job_gpus)
			continue;
		sum += (double)g * (double)trace_runtime(f, c, (int32_t)i);
		n++;
	}
	if (n == 0 || sum <= 0)
		return -1;
	p->rate_per_trace_s = f->p.load * gpus / (sum / (double)n);
	c->rate_per_trace_s += p->rate_per_trace_s;
	return 0;
}

static void draw_arrival(struct gl_simfleet_fleet *f, struct gl_simfleet_cluster_def *c)
{
	int how = (int)(fmod(f->trace_s, 604800.0) / 3600.0);
	double rate = c->rate_per_trace_s * f->week_profile[c->kind][how] * f->speed;
	c->next_arrival_s = (double)f->now_s + rnd_exp(f, 1.0 / rate);
}

static void draw_fault(struct gl_simfleet_fleet *f, struct gl_simfleet_node *n)
{
	n->next_fault_s = f->p.node_mtbf_s > 0 ? f->now_s + wall(f, rnd_exp(f, (double)f->p.node_mtbf_s)) : INT64_MAX;
}

int gl_simfleet_new(const struct gl_simfleet_params *p, const struct gl_simtrace_traces *tr, struct gl_simfleet_fleet **out,
		    struct gl_err *err)
{
	struct gl_simfleet_fleet *f;
	int slurm_gpus = p->gpus * 2 / 3, kube_gpus = p->gpus - slurm_gpus;
	int na100 = (slurm_gpus * 2 / 3 + 4) / 8, nv100 = (slurm_gpus / 3 + 4) / 8;
	int na10 = (kube_gpus * 2 / 3 + 4) / 8, nt4 = (kube_gpus / 3 + 2) / 4;

	*out = NULL;
	if (p->gpus < 48 || p->gpus > 100000)
		return gl_err_set(err, GL_EINVAL, "fleet: %d GPUs (48 to 100000)", p->gpus);
	if (!tr->njobs || !tr->npods || !tr->nseries)
		return gl_err_set(err, GL_EINVAL, "fleet: the traces hold no job, pod or duty series");
	f = gl_xcalloc(1, sizeof *f);
	f->p = *p;
	f->tr = tr;
	f->rng = p->seed;
	f->now_s = p->start_s;
	f->trace_s = (double)p->start_s;
	f->speed = 1.0;
	f->next_id = 1000;
	f->next_dbindex = 1;
	f->nodes = gl_xcalloc((size_t)(na100 + nv100 + na10 + nt4), sizeof *f->nodes);
	f->ncl = 2;
	snprintf(f->cl[0].name, sizeof f->cl[0].name, "%s", p->slurm_name);
	f->cl[0].kind = GL_SIMFLEET_SLURM;
	f->cl[0].first_node = f->nnodes;
	add_part(f, &f->cl[0], "a100", 0, na100, 8, "gpu-a");
	add_part(f, &f->cl[0], "v100", 1, nv100, 8, "gpu-v");
	snprintf(f->cl[1].name, sizeof f->cl[1].name, "%s", p->kube_name);
	f->cl[1].kind = GL_SIMFLEET_KUBE;
	f->cl[1].first_node = f->nnodes;
	add_part(f, &f->cl[1], "a10", 2, na10, 8, "k8s-a10-");
	add_part(f, &f->cl[1], "t4", 3, nt4, 4, "k8s-t4-");
	for (int c = 0; c < f->ncl; c++)
		for (int i = 0; i < f->cl[c].nparts; i++)
			if (part_rate(f, &f->cl[c], &f->cl[c].part[i])) {
				int rc = gl_err_set(err, GL_EINVAL, "fleet: no trace row fits partition %s",
						    f->cl[c].part[i].name);
				gl_simfleet_free(f);
				return rc;
			}
	week_profile(f->week_profile[GL_SIMFLEET_SLURM], f, GL_SIMFLEET_SLURM);
	week_profile(f->week_profile[GL_SIMFLEET_KUBE], f, GL_SIMFLEET_KUBE);
	for (int c = 0; c < f->ncl; c++)
		draw_arrival(f, &f->cl[c]);
	for (int i = 0; i < f->nnodes; i++)
		draw_fault(f, &f->nodes[i]);
	*out = f;
	return 0;
}

void gl_simfleet_free(struct gl_simfleet_fleet *f)
{
	if (!f)
		return;
	free(f->nodes);
	free(f->jobs);
	free(f->active);
	free(f->events);
	free(f);
}

int gl_simfleet_cluster(const struct gl_simfleet_fleet *f, const char *name)
{
	for (int c = 0; c < f->ncl; c++)
		if (!strcmp(f->cl[c].name, name))
			return c;
	return -1;
}

static int32_t push_job(struct gl_simfleet_fleet *f, const struct gl_simfleet_job *j)
{
	if (f->njobs == f->jobs_cap) {
		f->jobs_cap = f->jobs_cap ? f->jobs_cap * 2 : 4096;
		f->jobs = gl_xrealloc(f->jobs, f->jobs_cap * sizeof *f->jobs);
	}
	if (f->nactive == f->active_cap) {
		f->active_cap = f->active_cap ? f->active_cap * 2 : 1024;
		f->active = gl_xrealloc(f->active, f->active_cap * sizeof *f->active);
	}
	f->jobs[f->njobs] = *j;
	f->active[f->nactive++] = (int32_t)f->njobs;
	return (int32_t)f->njobs++;
}

static void arrive(struct gl_simfleet_fleet *f, struct gl_simfleet_cluster_def *c)
{
	struct gl_simfleet_job j;
	double pick = rnd_unit(f) * c->rate_per_trace_s;
	int pi = 0;
	size_t rows = trace_rows(f, c);
	int32_t row = -1;

	while (pi < c->nparts - 1 && pick >= c->part[pi].rate_per_trace_s)
		pick -= c->part[pi++].rate_per_trace_s;
	for (int tries = 0; tries < 64 && row < 0; tries++) {
		int32_t r = (int32_t)rnd_below(f, rows);
		if (trace_gpus(f, c, r) <= c->part[pi].max_job_gpus)
			row = r;
	}
	if (row < 0)
		return;
	memset(&j, 0, sizeof j);
	j.id = f->next_id++;
	j.dbindex = f->next_dbindex++;
	j.cluster = (int16_t)(c - f->cl);
	j.part = (int16_t)pi;
	j.trace = row;
	j.gpus = trace_gpus(f, c, row);
	j.state = GL_SIMFLEET_PENDING;
	if (c->kind == GL_SIMFLEET_SLURM) {
		j.profile = row;
		j.outcome = f->tr->jobs[row].failed ? GL_SIMFLEET_FAILED : GL_SIMFLEET_COMPLETED;
	} else {
		j.profile = (int32_t)rnd_below(f, f->tr->nseries);
		j.owner = (int32_t)rnd_below(f, gl_sim_nnamespaces);
		j.outcome = f->tr->pods[row].failed ? GL_SIMFLEET_FAILED : GL_SIMFLEET_COMPLETED;
	}
	j.submit_s = f->now_s;
	j.start_s = j.end_s = j.planned_end_s = GL_SIMFLEET_NONE;
	j.run_s = wall(f, (double)trace_runtime(f, c, row));
	j.deadline_s = f->now_s + wall(f, (double)f->p.max_wait_s);
	push_job(f, &j);
}

static void release(struct gl_simfleet_fleet *f, int32_t ji)
{
	struct gl_simfleet_job *j = &f->jobs[ji];
	for (int i = 0; i < j->nnodes; i++) {
		struct gl_simfleet_node *n = &f->nodes[j->node[i]];
		for (int k = 0; k < n->ngpus; k++)
			if (n->slot[k] == ji)
				n->slot[k] = -1;
	}
}

/* The job's attempt ends now; a Slurm job is requeued as a new attempt of
 * the same JobID, a pod replaced by a new pod (its controller's doing). */
static void lose(struct gl_simfleet_fleet *f, int32_t ji)
{
	struct gl_simfleet_job next = f->jobs[ji];
	release(f, ji);
	f->jobs[ji].state = GL_SIMFLEET_REQUEUED;
	f->jobs[ji].end_s = f->now_s;
	f->requeues++;
	if (f->cl[next.cluster].kind == GL_SIMFLEET_KUBE)
		next.id = f->next_id++;
	next.dbindex = f->next_dbindex++;
	next.attempt++;
	next.state = GL_SIMFLEET_PENDING;
	next.submit_s = f->now_s;
	next.start_s = next.end_s = next.planned_end_s = GL_SIMFLEET_NONE;
	next.nnodes = 0;
	next.deadline_s = f->now_s + wall(f, (double)f->p.max_wait_s);
	push_job(f, &next);
}

static void fault(struct gl_simfleet_fleet *f, struct gl_simfleet_node *n)
{
	int drain = rnd_unit(f) < 0.3, kube = f->cl[n->cluster].kind == GL_SIMFLEET_KUBE;
	struct gl_simfleet_nodeevent *e;

	n->avail = drain ? GL_SIMFLEET_DRAIN : GL_SIMFLEET_DOWN;
	n->avail_since_s = f->now_s;
	n->avail_until_s = f->now_s + wall(f, 3600.0 + rnd_unit(f) * 7 * 3600.0);
	snprintf(n->reason, sizeof n->reason, "%s",
		 drain ? (kube ? "cordoned: gpu xid 79" : "gpu xid 79")
		       : (kube ? "KubeletNotReady" : "Not responding"));
	f->faults++;
	if (f->nevents == f->events_cap) {
		f->events_cap = f->events_cap ? f->events_cap * 2 : 256;
		f->events = gl_xrealloc(f->events, f->events_cap * sizeof *f->events);
	}
	e = &f->events[f->nevents++];
	e->node = (int32_t)(n - f->nodes);
	e->kind = n->avail;
	e->start_s = f->now_s;
	e->end_s = GL_SIMFLEET_NONE;
	snprintf(e->reason, sizeof e->reason, "%s", n->reason);
	if (!drain)
		for (int k = 0; k < n->ngpus; k++)
			if (n->slot[k] >= 0)
				lose(f, n->slot[k]);
}

static void repair(struct gl_simfleet_fleet *f, struct gl_simfleet_node *n)
{
	int32_t ni = (int32_t)(n - f->nodes);
	for (size_t i = f->nevents; i-- > 0;)
		if (f->events[i].node == ni && f->events[i].end_s == GL_SIMFLEET_NONE) {
			f->events[i].end_s = f->now_s;
			break;
		}
	n->avail = GL_SIMFLEET_UP;
	n->avail_since_s = f->now_s;
	n->avail_until_s = GL_SIMFLEET_NONE;
	n->reason[0] = '\0';
	draw_fault(f, n);
}

static int node_free(const struct gl_simfleet_node *n)
{
	int k = 0;
	for (int i = 0; i < n->ngpus; i++)
		k += n->slot[i] < 0;
	return k;
}

static void take(struct gl_simfleet_fleet *f, int32_t ji, int ni, int gpus)
{
	struct gl_simfleet_job *j = &f->jobs[ji];
	struct gl_simfleet_node *n = &f->nodes[ni];
	uint8_t mask = 0;
	for (int k = 0; k < n->ngpus && gpus > 0; k++)
		if (n->slot[k] < 0) {
			n->slot[k] = ji;
			mask |= (uint8_t)(1u << k);
			gpus--;
		}
	j->node[j->nnodes] = (int16_t)ni;
	j->mask[j->nnodes++] = mask;
}

/* Best fit on one node, or whole free nodes for a job larger than one. */
static int place(struct gl_simfleet_fleet *f, int32_t ji)
{
	struct gl_simfleet_job *j = &f->jobs[ji];
	const struct gl_simfleet_part *p = &f->cl[j->cluster].part[j->part];
	int gpn = p->gpus_per_node;

	if (j->gpus <= gpn) {
		int best = -1, best_free = gpn + 1;
		for (int i = p->first_node; i < p->first_node + p->nnodes; i++) {
			int fr = f->nodes[i].avail == GL_SIMFLEET_UP ? node_free(&f->nodes[i]) : 0;
			if (fr >= j->gpus && fr < best_free) {
				best = i;
				best_free = fr;
			}
		}
		if (best < 0)
			return 0;
		take(f, ji, best, j->gpus);
	} else {
		int want = (j->gpus + gpn - 1) / gpn, got = 0, pick[GL_SIMFLEET_MAX_JOB_NODES];
		for (int i = p->first_node; i < p->first_node + p->nnodes && got < want; i++)
			if (f->nodes[i].avail == GL_SIMFLEET_UP && node_free(&f->nodes[i]) == gpn)
				pick[got++] = i;
		if (got < want)
			return 0;
		for (int i = 0; i < want; i++)
			take(f, ji, pick[i], j->gpus / want + (i < j->gpus % want));
	}
	j->state = GL_SIMFLEET_RUNNING;
	j->start_s = f->now_s;
	j->planned_end_s = f->now_s + j->run_s;
	f->jobs_started++;
	return 1;
}

static void schedule(struct gl_simfleet_fleet *f)
{
	int blocked[2][4] = {{0}};
	for (size_t i = 0; i < f->nactive; i++) {
		struct gl_simfleet_job *j = &f->jobs[f->active[i]];
		if (j->state != GL_SIMFLEET_PENDING || blocked[j->cluster][j->part])
			continue;
		if (!place(f, f->active[i]) && f->cl[j->cluster].kind == GL_SIMFLEET_SLURM &&
		    (double)(f->now_s - j->submit_s) * f->speed > RESERVE_AFTER_TRACE_S)
			/* the partition holds back for the job that waited
			 * longest, as Slurm's backfill reserves for its top job
			 * (Kubernetes' scheduler reserves nothing) */
			blocked[j->cluster][j->part] = 1;
	}
}

static void process_due(struct gl_simfleet_fleet *f)
{
	size_t w = 0;
	for (size_t i = 0; i < f->nactive; i++) {
		int32_t ji = f->active[i];
		struct gl_simfleet_job *j = &f->jobs[ji];
		if (j->state == GL_SIMFLEET_RUNNING && j->planned_end_s <= f->now_s) {
			release(f, ji);
			j->state = j->outcome;
			j->end_s = j->planned_end_s;
		} else if (j->state == GL_SIMFLEET_PENDING && j->deadline_s <= f->now_s) {
			j->state = GL_SIMFLEET_CANCELLED;
			j->end_s = f->now_s;
		}
	}
	for (int i = 0; i < f->nnodes; i++) {
		struct gl_simfleet_node *n = &f->nodes[i];
		if (n->avail != GL_SIMFLEET_UP && n->avail_until_s <= f->now_s)
			repair(f, n);
		else if (n->avail == GL_SIMFLEET_UP && n->next_fault_s <= f->now_s)
			fault(f, n);
	}
	for (int c = 0; c < f->ncl; c++)
		while (f->cl[c].next_arrival_s <= (double)f->now_s) {
			arrive(f, &f->cl[c]);
			draw_arrival(f, &f->cl[c]);
		}
	for (size_t i = 0; i < f->nactive; i++) {
		const struct gl_simfleet_job *j = &f->jobs[f->active[i]];
		if (j->state == GL_SIMFLEET_PENDING || j->state == GL_SIMFLEET_RUNNING)
			f->active[w++] = f->active[i];
	}
	f->nactive = w;
	schedule(f);
}

static int64_t next_event(const struct gl_simfleet_fleet *f)
{
	int64_t t = INT64_MAX;
	for (int c = 0; c < f->ncl; c++) {
		int64_t a = (int64_t)ceil(f->cl[c].next_arrival_s);
		t = a < t ? a : t;
	}
	for (size_t i = 0; i < f->nactive; i++) {
		const struct gl_simfleet_job *j = &f->jobs[f->active[i]];
		int64_t e = j->state == GL_SIMFLEET_RUNNING ? j->planned_end_s : j->deadline_s;
		t = e < t ? e : t;
	}
	for (int i = 0; i < f->nnodes; i++) {
		const struct gl_simfleet_node *n = &f->nodes[i];
		int64_t e = n->avail != GL_SIMFLEET_UP ? n->avail_until_s : n->next_fault_s;
		t = e < t ? e : t;
	}
	return t > f->now_s ? t : f->now_s + 1;
}

void gl_simfleet_advance(struct gl_simfleet_fleet *f, int64_t to_s)
{
	if (to_s <= f->now_s)
		return;
	for (;;) {
		int64_t t = next_event(f);
		if (t > to_s)
			break;
		f->trace_s += (double)(t - f->now_s) * f->speed;
		f->now_s = t;
		process_due(f);
	}
	f->trace_s += (double)(to_s - f->now_s) * f->speed;
	f->now_s = to_s;
}

static int64_t rescale(int64_t at, int64_t t, double ratio)
{
	if (t == GL_SIMFLEET_NONE || t == INT64_MAX || t <= at)
		return t;
	return at + (int64_t)fmax(1.0, llround((double)(t - at) * ratio));
}

void gl_simfleet_set_speed(struct gl_simfleet_fleet *f, int64_t at_s, double speed)
{
	double ratio;
	gl_simfleet_advance(f, at_s);
	if (speed <= 0 || speed == f->speed)
		return;
	ratio = f->speed / speed;
	for (size_t i = 0; i < f->nactive; i++) {
		struct gl_simfleet_job *j = &f->jobs[f->active[i]];
		if (j->state == GL_SIMFLEET_RUNNING)
			j->planned_end_s = rescale(f->now_s, j->planned_end_s, ratio);
		else
			j->run_s = (int64_t)fmax(1.0, llround((double)j->run_s * ratio));
		j->deadline_s = rescale(f->now_s, j->deadline_s, ratio);
	}
	for (int i = 0; i < f->nnodes; i++) {
		f->nodes[i].avail_until_s = rescale(f->now_s, f->nodes[i].avail_until_s, ratio);
		f->nodes[i].next_fault_s = rescale(f->now_s, f->nodes[i].next_fault_s, ratio);
	}
	f->speed = speed;
	for (int c = 0; c < f->ncl; c++)
		draw_arrival(f, &f->cl[c]);
}

int gl_simfleet_util(const struct gl_simfleet_fleet *f, const struct gl_simfleet_job *j, int k, int64_t t_s)
{
	double since = (double)(t_s > j->start_s ? t_s - j->start_s : 0) * f->speed;
	if (f->cl[j->cluster].kind == GL_SIMFLEET_SLURM) {
		const struct gl_simtrace_pjob *pj = &f->tr->jobs[j->profile];
		int64_t minute = (int64_t)(since / 60.0) % GL_SIMTRACE_UTIL_MINUTES;
		int g = k % pj->util_ngpus;
		return f->tr->util[((size_t)pj->util_first + (size_t)g) * GL_SIMTRACE_UTIL_MINUTES + (size_t)minute];
	} else {
		const struct gl_simtrace_duty *d = &f->tr->series[j->profile];
		/* each pod starts at its own point of the series */
		int64_t at = ((int64_t)(since / f->tr->duty_step_s) + (int64_t)j->id * 37 + k) % d->n;
		return f->tr->duty[(size_t)d->first + (size_t)at];
	}
}
