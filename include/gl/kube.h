/* gpuledger — pure parser for a Kubernetes PodList (`kubectl get pods -A -o json`).
 *
 * No I/O, no clock, no libpq: the caller reads the document and says when it
 * was taken (gl_kube_pod_to_row's seen_at_s). Only pods that request GPUs come
 * out; see FORMATS.md "Kubernetes pods" for the field mapping.
 *
 * Ownership:
 * - struct gl_kube_opts is caller-owned and only read during gl_kube_parse();
 *   its strings are not kept.
 * - struct gl_kube_result is caller-owned storage; gl_kube_parse() fills it
 *   with heap memory (pods, every string in them, problems) that
 *   gl_kube_result_fini() releases. fini on a zeroed or already-finalised
 *   result is a no-op, as is gl_kube_result_free(NULL).
 * - The document is only read during gl_kube_parse(); nothing points into it.
 * - gl_kube_pod_to_row() fills a struct gl_jobrow whose strings point INTO
 *   THE POD: the row is valid as long as the result is not finalised.
 */
#ifndef GL_KUBE_H
#define GL_KUBE_H

#include "gl/common.h"
#include "gl/jobrow.h"
#include "gl/kubegpu.h"

#include <stddef.h>
#include <stdint.h>

/* Defaults for the resource bounds checked before any JSON is parsed. */
#define GL_KUBE_MAX_DOC_BYTES_DEFAULT ((size_t)512 << 20)
#define GL_KUBE_MAX_DEPTH_DEFAULT 64
#define GL_KUBE_GPU_TYPE_MAX 64

struct gl_kube_opts {
	/* Label keys copied into tags_json as "team", "project", "cost_center".
	 * NULL = "team", "project", "cost-center"; "" = do not copy. */
	const char *team_label;
	const char *project_label;
	const char *cost_center_label;
	size_t max_doc_bytes; /* 0 = GL_KUBE_MAX_DOC_BYTES_DEFAULT */
	int max_depth;        /* 0 = GL_KUBE_MAX_DEPTH_DEFAULT */
	/* 1: the caller has already bounded the nesting of doc to max_depth
	 * (the ingest's item splitter measures it in its own pass), so the
	 * parser's depth scan is skipped */
	int depth_checked;
	/* What the pods cannot say about their nodes (time-slicing replicas
	 * per GPU, a GPU's memory): borrowed, only read during the parse;
	 * nodes absent here are unknown (their shares that need it are
	 * reported, not guessed). */
	const struct gl_kubegpu_node_gpu *nodes;
	size_t nnodes;
};

enum gl_kube_phase {
	GL_KUBE_PHASE_OTHER = 0, /* missing or not one of the documented values */
	GL_KUBE_PHASE_PENDING,
	GL_KUBE_PHASE_RUNNING,
	GL_KUBE_PHASE_SUCCEEDED,
	GL_KUBE_PHASE_FAILED,
	GL_KUBE_PHASE_UNKNOWN,
};

struct gl_kube_pod {
	char *uid;            /* metadata.uid, never NULL: the natural key */
	char *name;           /* metadata.name, NULL when absent */
	char *namespace_;     /* metadata.namespace, NULL when absent */
	char *node_name;      /* spec.nodeName, NULL when not scheduled */
	char *phase_raw;      /* status.phase verbatim, NULL when absent */
	enum gl_kube_phase phase;
	char *owner_kind;     /* first ownerReference with controller=true (else first one), NULL none */
	char *owner_name;
	char *labels_json;    /* metadata.labels as a JSON object, "{}" when none */
	char *tags_json;      /* {"namespace":..,"owner_kind":..,"owner_name":..,"team":..,
	                       *  "project":..,"cost_center":..,"labels":{...}} (absent keys omitted) */
	char *nodes_json;     /* ["<nodeName>"] or NULL */
	int64_t submit_s;     /* creationTimestamp, always set */
	int64_t start_s;      /* status.startTime, else PodScheduled=True lastTransitionTime; GL_TIME_NONE */
	int64_t end_s;        /* see gl_kube_parse(); GL_TIME_NONE while running */
	int64_t active_deadline_s; /* spec.activeDeadlineSeconds, the pod's limit after start_s; -1 none */
	char gpu_type[GL_KUBE_GPU_TYPE_MAX]; /* MIG profile ("1g.10gb") when all GPUs are that profile, else "" */
	struct gl_kubegpu gpu; /* the GPU intent under its sharing scheme: micro-GPUs billed and held,
			        * bound UUIDs, run:ai group, and why any of it is not billed (note) */
	/* The physical capacity the pod holds in the books, micro-GPUs: its
	 * gpu.phys_micro (gpu.gpu_micro when that is unknown; 0 for a run:ai
	 * reservation, whose GPU is its group's pods'), as cut by
	 * gl_kube_bound_held(); held_cut_micro is what the cut took, and
	 * held_cut_uuid the GPU it was taken on ("" when it was the node). */
	int64_t held_micro;
	int64_t held_cut_micro;
	char held_cut_uuid[80];
};

struct gl_kube_result {
	struct gl_kube_pod *pods; /* npods GPU pods, in document order */
	size_t npods;
	size_t nitems;            /* items in the document */
	size_t skipped_no_gpu;    /* pods with no GPU intent at all (not an error) */
	size_t gpu_unclear;       /* kept pods whose GPU intent is (partly) not understood: gpu.note says
				   * why, and a problem names the pod */
	size_t skipped_bad;       /* pods dropped for a missing/bad key field */
	char **problems;          /* one message per skipped pod or ignored bad field, */
	size_t nproblems;         /* each naming the JSON path ("items[17].metadata.uid: missing") */
	size_t problems_dropped;  /* beyond GL_KUBE_MAX_PROBLEMS: counted, not kept */
};
/* Keeps a hostile document from turning into millions of messages. */
#define GL_KUBE_MAX_PROBLEMS 1000

/* Parses a PodList (or a List whose items are Pods). Before parsing it checks
 * the size cap and the bracket nesting depth (outside strings), so a huge or
 * deeply nested document is refused cheaply with -GL_ERANGE.
 * -GL_EINVAL: not JSON. -GL_EFORMAT: JSON but not a PodList (no `items` array,
 * wrong kind). On any error res holds nothing (it is zeroed).
 * Per pod: a missing uid or creationTimestamp skips that pod with a problem
 * line; other bad optional fields are ignored with a problem line.
 * end_s = max container finishedAt when the phase is Succeeded/Failed, or
 * every container has terminated and the phase is neither Running nor
 * Pending (a Running pod with all containers terminated is restarting); a
 * terminal pod without any finishedAt (evicted) ends at its latest
 * condition transition.
 * GPUs: gl_kubegpu_read() (include/gl/kubegpu.h) under every sharing scheme,
 * per container from resources.limits, falling back to requests; the pod
 * needs max(sum(containers) + sum(sidecars), max(init_i + sidecars before
 * i)), as the scheduler computes it. A pod is kept when it has any GPU
 * intent, billed or not: a run:ai reservation (billed 0, its GPU is its
 * group's), or a pod whose GPUs cannot be understood (gpu.note, counted in
 * gpu_unclear, and a problem naming it) is never dropped silently. Then
 * gl_kube_link_runai() over the document's pods. */
int gl_kube_parse(const char *doc, size_t len, const struct gl_kube_opts *opts,
		  struct gl_kube_result *res, struct gl_err *err) GL_MUSTCHECK;
void gl_kube_result_fini(struct gl_kube_result *res);

/* run:ai: the fraction pods of a GPU group on a node get the UUID the
 * group's reservation pod holds (run.ai/reserve_for_gpu_index), unless they
 * name GPUs themselves. gl_kube_parse() does this within one document; a
 * caller that parses a snapshot in parts calls it once over all parts' pods
 * (idempotent). */
void gl_kube_link_runai(struct gl_kube_pod *const *pods, size_t n);
/* Bounds held_micro so that the pods holding one physical GPU (the same
 * node and bound UUID, a pod with k UUIDs holding 1/k of its share on each)
 * never hold more than one GPU at any instant, nor the pods of a node more
 * than its GPUs (nodes[].gpus, when known): pods are taken in start order
 * (then uid), each getting what the earlier pods still running at its start
 * left. Pods not started or on no node hold nothing to bound. Starts again
 * from the unbounded share at each call (idempotent). gl_kube_parse() does
 * this within one document; a caller that parses a snapshot in parts calls
 * it once over all parts' pods, after gl_kube_link_runai(). Returns the
 * pods cut (held_cut_micro > 0). */
size_t gl_kube_bound_held(struct gl_kube_pod *const *pods, size_t n, const struct gl_kubegpu_node_gpu *nodes,
			  size_t nnodes);
/* For heap-allocated results: fini + free(res). */
void gl_kube_result_free(struct gl_kube_result *res);

/* Fills row from pod (strings borrowed from pod; see Ownership). seen_at_s is
 * when the snapshot was taken (row.last_seen_s), GL_TIME_NONE if unknown.
 * gpu_micro and phys_micro (allocated: billed, and held_micro) are the
 * pod's once it is bound to a node or has started, else 0; req_gpu_micro
 * is always the request (pending demand). eligible_s = submit_s (a pod is
 * schedulable as soon as it exists). */
void gl_kube_pod_to_row(const struct gl_kube_pod *pod, int64_t seen_at_s, struct gl_jobrow *row);

/* Pure helpers, exported for tests and other sources. */
/* Kubernetes quantity ("1", "500m", "0.5", "2k", "1Ki", "1e3") -> milli-units,
 * rounded up as Quantity.MilliValue() does. Negative values are -GL_EINVAL,
 * values beyond int64 milli -GL_ERANGE. */
int gl_kube_parse_quantity_milli(const char *s, size_t n, int64_t *milli) GL_MUSTCHECK;
/* RFC 3339 date-time ("2026-10-01T12:00:00Z", "...T12:00:00.123+02:00";
 * t/z lower case and a space separator accepted) -> Unix seconds UTC,
 * fraction truncated. -GL_EINVAL on anything else. */
int gl_kube_parse_rfc3339(const char *s, size_t n, int64_t *out) GL_MUSTCHECK;
/* Largest {}/[] nesting depth outside JSON strings, stopping (returning
 * max_depth + 1) as soon as max_depth is exceeded. Never fails. */
int gl_kube_json_depth(const char *doc, size_t len, int max_depth);
/* doc[i] is '"': the index past its closing quote, len when unterminated.
 * memchr-fast: most of a PodList's bytes are inside strings. */
size_t gl_kube_json_skip_string(const char *doc, size_t i, size_t len);
/* cJSON hands string bytes through unchecked, and PostgreSQL refuses a
 * whole batch for one bad byte. Returns 1 when a string value or key
 * somewhere under v is not valid UTF-8 and writes where, relative to v, into
 * path (".metadata.labels.team", ".spec.containers[1].name"; a bad key is
 * named by its parent and " (a key)"); 0 otherwise. path is always valid
 * UTF-8 itself and NUL-terminated (cut to cap bytes). */
struct cJSON;
int gl_kube_json_bad_utf8(const struct cJSON *v, char *path, size_t cap);
/* Byte classes for lexical JSON scans: 0 nothing to see, 1 '"', 2 '{' '[',
 * 3 '}' ']'. */
extern const unsigned char gl_kube_json_class[256];

#endif
