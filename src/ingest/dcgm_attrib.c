/* GPU sample -> job attribution (see include/gl/dcgm_attrib.h). */
#include "gl/dcgm_attrib.h"

#include <stdlib.h>
#include <string.h>

const char *gl_dcgm_attrib_kind_name(enum gl_dcgm_attrib_kind k)
{
	switch (k) {
	case GL_DCGM_ATTRIB_HPC_JOB: return "hpc_job";
	case GL_DCGM_ATTRIB_POD: return "pod";
	case GL_DCGM_ATTRIB_NODE_EXCLUSIVE: return "node-exclusive";
	case GL_DCGM_ATTRIB_NODE_ESTIMATED: return "node-estimated";
	}
	return "?";
}

/* ---- a multimap from a string pair to indexes --------------------------- */

struct ment {
	uint64_t h;
	const char *k1, *k2;
	size_t val;
	size_t next; /* entry index + 1; 0 ends the chain */
};

struct mmap {
	size_t *head; /* bucket -> entry index + 1 */
	size_t cap;   /* power of two */
	struct ment *e;
	size_t n, ecap;
};

static uint64_t hstr(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * UINT64_C(0x100000001B3);
	return h;
}

static uint64_t hpair(const char *a, const char *b)
{
	return hstr(hstr(UINT64_C(0xCBF29CE484222325), a) ^ 0xff, b);
}

static void mmap_init(struct mmap *m, size_t expect)
{
	memset(m, 0, sizeof *m);
	m->cap = 16;
	while (m->cap < expect * 2)
		m->cap *= 2;
	m->head = gl_xcalloc(m->cap, sizeof *m->head);
}

static void mmap_fini(struct mmap *m)
{
	free(m->head);
	free(m->e);
}

static void mmap_put(struct mmap *m, const char *k1, const char *k2, size_t val)
{
	uint64_t h = hpair(k1, k2);
	size_t b = (size_t)h & (m->cap - 1);
	if (m->n == m->ecap) {
		m->ecap = m->ecap ? m->ecap * 2 : 64;
		m->e = gl_xrealloc(m->e, m->ecap * sizeof *m->e);
	}
	m->e[m->n] = (struct ment){h, k1, k2, val, m->head[b]};
	m->head[b] = ++m->n;
}

/* First entry for the key (entry index + 1), or 0; walk on with mmap_next. */
static size_t mmap_next(const struct mmap *m, size_t from, uint64_t h, const char *k1, const char *k2)
{
	for (size_t i = from; i; i = m->e[i - 1].next) {
		const struct ment *e = &m->e[i - 1];
		if (e->h == h && !strcmp(e->k1, k1) && !strcmp(e->k2, k2))
			return i;
	}
	return 0;
}

static size_t mmap_first(const struct mmap *m, const char *k1, const char *k2)
{
	uint64_t h = hpair(k1, k2);
	return mmap_next(m, m->head[(size_t)h & (m->cap - 1)], h, k1, k2);
}

/* ---- attribution -------------------------------------------------------- */

struct node {
	const char *name;
	size_t gpus;      /* GPUs counted for capacity (MIG parents not) */
	int labelled;     /* some GPU carries hpc_job or pod labels */
	size_t *jobs;     /* indexes of jobs with GPUs running on it */
	size_t njobs;
};

struct out {
	struct gl_dcgm_attrib_share *s;
	size_t n, cap;
};

static void emit(struct out *o, size_t gpu, const struct gl_dcgm_attrib_job *j, double share, enum gl_dcgm_attrib_kind kind)
{
	if (o->n == o->cap) {
		o->cap = o->cap ? o->cap * 2 : 64;
		o->s = gl_xrealloc(o->s, o->cap * sizeof *o->s);
	}
	o->s[o->n++] = (struct gl_dcgm_attrib_share){gpu, j->job_pk, share, kind, j->start_s};
}

static int hpc_match(const struct gl_dcgm_attrib_job *j, const char *label)
{
	return !strcmp(j->job_id, label) || (j->job_id_raw[0] && !strcmp(j->job_id_raw, label)) ||
	       (j->het_job_id[0] && !strcmp(j->het_job_id, label));
}

static int seen(const size_t *m, size_t n, size_t v)
{
	for (size_t i = 0; i < n; i++)
		if (m[i] == v)
			return 1;
	return 0;
}

void gl_dcgm_attrib_assign(const struct gl_dcgm_attrib_gpu *gpus, size_t ngpus, const struct gl_dcgm_attrib_job *jobs,
		       size_t njobs, struct gl_dcgm_attrib_share **out_s, size_t *nout)
{
	struct mmap nodes_by_name, pods;
	struct node *nodes = NULL;
	size_t nnodes = 0, nodes_cap = 0, *node_of = gl_xcalloc(ngpus ? ngpus : 1, sizeof *node_of);
	size_t *match = NULL, nmatch, match_cap = 0;
	size_t *nodeless = NULL, nnodeless = 0;
	struct out o = {0};

	mmap_init(&nodes_by_name, ngpus);
	mmap_init(&pods, njobs * 2);
	/* nodes of the scrape, their GPU counts, and whether labels are in use */
	for (size_t g = 0; g < ngpus; g++) {
		size_t e = mmap_first(&nodes_by_name, gpus[g].node, "");
		struct node *nd;
		if (!e) {
			if (nnodes == nodes_cap) {
				nodes_cap = nodes_cap ? nodes_cap * 2 : 16;
				nodes = gl_xrealloc(nodes, nodes_cap * sizeof *nodes);
			}
			memset(&nodes[nnodes], 0, sizeof *nodes);
			nodes[nnodes].name = gpus[g].node;
			mmap_put(&nodes_by_name, gpus[g].node, "", nnodes);
			e = nodes_by_name.n;
			nnodes++;
		}
		node_of[g] = nodes_by_name.e[e - 1].val;
		nd = &nodes[node_of[g]];
		if (gpus[g].skip)
			continue;
		nd->gpus++;
		if (gpus[g].njobs)
			nd->labelled = 1;
		for (size_t p = 0; p < gpus[g].npods; p++)
			if (gpus[g].pods[p].pod[0])
				nd->labelled = 1;
	}
	/* jobs by node (only the scrape's nodes matter) and by namespace/pod */
	for (size_t j = 0; j < njobs; j++) {
		const struct gl_dcgm_attrib_job *jb = &jobs[j];
		if (jb->ns[0]) {
			mmap_put(&pods, jb->ns, jb->name, j);
			if (strcmp(jb->name, jb->job_id))
				mmap_put(&pods, jb->ns, jb->job_id, j);
		}
		if (!jb->nnodes) {
			nodeless = gl_xrealloc(nodeless, (nnodeless + 1) * sizeof *nodeless);
			nodeless[nnodeless++] = j;
		}
		for (size_t k = 0; k < jb->nnodes; k++) {
			size_t e = mmap_first(&nodes_by_name, jb->nodes[k], "");
			struct node *nd;
			if (!e)
				continue;
			nd = &nodes[nodes_by_name.e[e - 1].val];
			/* a node listed twice must not count the job twice */
			if (seen(nd->jobs, nd->njobs, j))
				continue;
			nd->jobs = gl_xrealloc(nd->jobs, (nd->njobs + 1) * sizeof *nd->jobs);
			nd->jobs[nd->njobs++] = j;
		}
	}
	match_cap = njobs ? njobs : 1;
	match = gl_xmalloc(match_cap * sizeof *match);

	for (size_t g = 0; g < ngpus; g++) {
		const struct gl_dcgm_attrib_gpu *gp = &gpus[g];
		const struct node *nd = &nodes[node_of[g]];
		if (gp->skip)
			continue;
		/* 1. hpc_job: among the jobs on this node (and any without a node list) */
		nmatch = 0;
		for (size_t l = 0; l < gp->njobs; l++) {
			for (size_t k = 0; k < nd->njobs + nnodeless; k++) {
				size_t j = k < nd->njobs ? nd->jobs[k] : nodeless[k - nd->njobs];
				if (hpc_match(&jobs[j], gp->jobs[l]) && !seen(match, nmatch, j))
					match[nmatch++] = j;
			}
		}
		if (nmatch) {
			for (size_t k = 0; k < nmatch; k++)
				emit(&o, g, &jobs[match[k]], 1.0 / (double)nmatch, GL_DCGM_ATTRIB_HPC_JOB);
			continue;
		}
		/* 2. pods: by namespace and name, wherever the job says it runs (in
		 * Kubernetes the Hostname label is often the exporter pod) */
		for (size_t p = 0; p < gp->npods; p++) {
			const struct gl_dcgm_pod *pd = &gp->pods[p];
			if (!pd->pod[0])
				continue;
			uint64_t h = hpair(pd->ns, pd->pod);
			for (size_t e = mmap_next(&pods, pods.head[(size_t)h & (pods.cap - 1)], h, pd->ns, pd->pod); e;
			     e = mmap_next(&pods, pods.e[e - 1].next, h, pd->ns, pd->pod))
				if (!seen(match, nmatch, pods.e[e - 1].val))
					match[nmatch++] = pods.e[e - 1].val;
		}
		if (nmatch) {
			for (size_t k = 0; k < nmatch; k++)
				emit(&o, g, &jobs[match[k]], 1.0 / (double)nmatch, GL_DCGM_ATTRIB_POD);
			continue;
		}
		/* 3. node: only where labels are not in use */
		if (nd->labelled || !nd->gpus)
			continue;
		{
			double sum = 0, cap_micro = (double)GL_GPU_MICRO * (double)nd->gpus, denom;
			size_t holders = 0, last = 0;
			for (size_t k = 0; k < nd->njobs; k++) {
				const struct gl_dcgm_attrib_job *jb = &jobs[nd->jobs[k]];
				double per_node;
				if (jb->held_micro <= 0)
					continue;
				per_node = (double)jb->held_micro / (double)(jb->nnodes ? jb->nnodes : 1);
				sum += per_node;
				holders++;
				last = nd->jobs[k];
			}
			if (!holders)
				continue;
			if (holders == 1 && sum >= cap_micro) {
				emit(&o, g, &jobs[last], 1.0, GL_DCGM_ATTRIB_NODE_EXCLUSIVE);
				continue;
			}
			denom = sum > cap_micro ? sum : cap_micro;
			for (size_t k = 0; k < nd->njobs; k++) {
				const struct gl_dcgm_attrib_job *jb = &jobs[nd->jobs[k]];
				if (jb->held_micro <= 0)
					continue;
				emit(&o, g, jb,
				     (double)jb->held_micro / (double)(jb->nnodes ? jb->nnodes : 1) / denom,
				     GL_DCGM_ATTRIB_NODE_ESTIMATED);
			}
		}
	}

	for (size_t i = 0; i < nnodes; i++)
		free(nodes[i].jobs);
	free(nodes);
	free(node_of);
	free(match);
	free(nodeless);
	mmap_fini(&nodes_by_name);
	mmap_fini(&pods);
	*out_s = o.s;
	*nout = o.n;
}
