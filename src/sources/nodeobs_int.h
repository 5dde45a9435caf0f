/* Internal to the node inventory parsers (src/sources/{nodeobs,scontrol,
 * slurm_events,kube_nodes}.c). Ownership as in gl/nodeobs.h: the add_*
 * functions return a zeroed slot owned by the snapshot. */
#ifndef GL_NODEOBS_INT_H
#define GL_NODEOBS_INT_H

#include "gl/nodeobs.h"

struct gl_nodeobs_kv {
	const char *key, *val;
	size_t klen, vlen;
};

void gl_nodeobs_problem(struct gl_nodeobs_snapshot *s, const char *fmt, ...) GL_PRINTF(2, 3);
struct gl_nodeobs_obs *gl_nodeobs_add_node(struct gl_nodeobs_snapshot *s);
struct gl_nodeobs_slurm_event *gl_nodeobs_add_event(struct gl_nodeobs_snapshot *s);
struct gl_nodeobs_slurm_resv *gl_nodeobs_add_resv(struct gl_nodeobs_snapshot *s);
void gl_nodeobs_node_fini(struct gl_nodeobs_obs *o);
void gl_nodeobs_resv_fini(struct gl_nodeobs_slurm_resv *r);
/* Splits "K=V K2=V 2 ..." into at most max pairs (pointers into s). */
size_t gl_nodeobs_kv_split(const char *s, size_t n, struct gl_nodeobs_kv *kv, size_t max);
/* NULL for "", "(null)", "None"; else a heap copy. */
char *gl_nodeobs_dup_val(const char *v, size_t n);

/* scontrol show reservation [-o] blocks (src/sources/scontrol.c). */
int gl_scontrol_parse_resv(const char *text, size_t len, struct gl_nodeobs_snapshot *s);

#endif
