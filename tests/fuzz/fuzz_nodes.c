/* libFuzzer harness for the node inventory parsers: the same bytes go to
 * `scontrol show node -o`, `sacctmgr -P show event`, both reservation forms
 * and the kubectl NodeList parser, plus the state table and Gres helpers.
 * Invariants beyond the sanitizers: counts are never negative and a node's
 * models fit their array. */
#include "gl/nodeobs.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct gl_nodeobs_snapshot *s)
{
	for (size_t i = 0; i < s->nnodes; i++) {
		const struct gl_nodeobs_obs *o = &s->nodes[i];
		if (!o->name || o->ngpu_models > GL_NODEOBS_MAX_MODELS || (unsigned)o->avail >= GL_NODEOBS_AVAIL__COUNT)
			abort();
		for (size_t m = 0; m < o->ngpu_models; m++)
			if (o->gpus[m].gpus < 0 || o->gpus[m].mig_instances < 0)
				abort();
	}
	for (size_t i = 0; i < s->nresvs; i++)
		if (!s->resvs[i].name || s->resvs[i].gpus_total < 0)
			abort();
	if (s->nproblems > GL_NODEOBS_MAX_PROBLEMS)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gl_nodeobs_snapshot s = GL_NODEOBS_SNAPSHOT_INIT;
	struct gl_err err = {0};
	const char *p = (const char *)data;
	char unk[64];
	struct gl_nodeobs_gpus g[GL_NODEOBS_MAX_MODELS];
	size_t n;
	int64_t total;
	(void)gl_scontrol_parse_nodes(p, size, &s, &err);
	(void)gl_slurm_events_parse_sacctmgr(p, size, &s, &err);
	(void)gl_slurm_events_parse_reservations(p, size, &s, &err);
	(void)gl_kube_nodes_parse(p, size, &s, &err);
	check(&s);
	gl_nodeobs_snapshot_fini(&s);
	(void)gl_nodeobs_state_classify(p, size, unk, sizeof unk);
	if (gl_nodeobs_parse_gres(p, size, g, &n, &err) == 0 && n > GL_NODEOBS_MAX_MODELS)
		abort();
	if (gl_nodeobs_parse_tres_models(p, size, g, &n, &total, &err) == 0 && (n > GL_NODEOBS_MAX_MODELS || total < 0))
		abort();
	return 0;
}
