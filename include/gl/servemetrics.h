/* gpuledger — inference-server /metrics -> serving counters per model.
 *
 * Four server families map onto one set of cumulative counters per series
 * (one model of one server process), through one table each
 * (src/sources/servemetrics.c; docs/serving.md, "Metrics read"):
 * vLLM (vllm: and the older vllm_ spelling), Hugging Face TGI (tgi_),
 * NVIDIA Triton (nv_inference_) and SGLang (sglang:). A series is keyed by
 * family, model (model_name; Triton's model; SGLang's older name; none:
 * the caller's default) and the scrape's own pod/namespace labels (a scrape
 * through a Prometheus federation carries them, as pod or exported_pod).
 * Other labels (finished_reason, version, reason, err, engine, method) are
 * summed over.
 *
 * Pure: no I/O, no clock, no libpq.
 *
 * Ownership: struct gl_servemetrics_scrape is caller-owned storage set up by
 * gl_servemetrics_parse() and released by gl_servemetrics_fini(), which
 * frees the series array and every string in it. Nothing points into the
 * scrape text.
 */
#ifndef GL_SERVEMETRICS_H
#define GL_SERVEMETRICS_H

#include "gl/common.h"
#include "gl/promtext.h"

#include <stddef.h>
#include <stdint.h>

enum gl_servemetrics_family { GL_SERVEMETRICS_NONE = 0, GL_SERVEMETRICS_VLLM, GL_SERVEMETRICS_TGI, GL_SERVEMETRICS_TRITON, GL_SERVEMETRICS_SGLANG };

/* The counters of a series, all cumulative since the process started. */
enum gl_servemetrics_ctr {
	GL_SERVEMETRICS_REQUESTS = 0, /* finished requests, failed ones included */
	GL_SERVEMETRICS_FAILED,       /* of which failed or aborted */
	GL_SERVEMETRICS_PROMPT,       /* prompt (prefill) tokens */
	GL_SERVEMETRICS_GENERATED,    /* generated tokens */
	GL_SERVEMETRICS_INFERENCES,   /* Triton nv_inference_count: a batch of n counts n */
	GL_SERVEMETRICS_EXECUTIONS,   /* Triton nv_inference_exec_count */
	GL_SERVEMETRICS__NCTR
};

#define GL_SERVEMETRICS_MAX_LE 64 /* latency buckets kept per series; more is a bad histogram */

struct gl_servemetrics_series {
	enum gl_servemetrics_family family;
	char *model_name;           /* "" when neither the server nor the caller names it */
	char *pod, *namespace_;     /* the scrape's own labels; "" when absent */
	double v[GL_SERVEMETRICS__NCTR];   /* meaningful where have has bit (1u << ctr) */
	uint32_t have;
	double start_s;             /* process start (process_start_time_seconds, else the
				     * counters' _created); NaN unknown */
	/* end-to-end latency histogram, seconds: cumulative counts per upper
	 * bound, ascending, +Inf last; nle 0 when the server has none (Triton)
	 * or it was unusable (hist_problem says why) */
	size_t nle;
	double le[GL_SERVEMETRICS_MAX_LE];
	double cum[GL_SERVEMETRICS_MAX_LE];
	const char *hist_problem;   /* static; NULL when fine */
	double running, waiting;    /* gauges; NaN when absent */
};

struct gl_servemetrics_scrape {
	struct gl_servemetrics_series *series;
	size_t n, cap;
	struct gl_promtext_stats parse;
	size_t known;               /* samples of a known serving metric */
	size_t bad_values;          /* counter samples that were no count (negative, NaN, text) */
	size_t first_bad_value_line;
};

/* Parses one scrape. default_model (may be NULL) names the model of series
 * the server labels none (TGI). Returns 0; -GL_EFORMAT when buf is not
 * Prometheus text at all (err names the line), or when it carries no known
 * serving metric (err says which families were looked for and what the
 * first metric was). Bad lines are skipped and listed in s->parse. */
int gl_servemetrics_parse(struct gl_servemetrics_scrape *s, const char *buf, size_t len, const char *default_model,
			  struct gl_err *err) GL_MUSTCHECK;
void gl_servemetrics_fini(struct gl_servemetrics_scrape *s);

/* "vllm", "tgi", "triton", "sglang" ("" for GL_SERVEMETRICS_NONE). */
const char *gl_servemetrics_family_name(enum gl_servemetrics_family f);
/* "requests", "failed", "prompt_tokens", ... */
const char *gl_servemetrics_counter_name(enum gl_servemetrics_ctr c);

#endif
