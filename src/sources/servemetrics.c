/* Inference-server /metrics -> serving counters (see include/gl/servemetrics.h). */
#include "gl/servemetrics.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What a sample is for. */
enum role {
	R_OK,          /* requests finished (vLLM: with finished_reason, see R_OK_REASON) */
	R_OK_REASON,   /* vLLM request_success_total: finished requests by reason */
	R_FAIL,        /* failed requests (summed over reason/err labels) */
	R_COUNT,       /* TGI tgi_request_count: every request received */
	R_PROMPT,
	R_GEN,
	R_INFER,
	R_EXEC,
	R_HIST_BUCKET, /* end-to-end latency histogram, seconds */
	R_HIST_COUNT,
	R_RUNNING,
	R_WAITING,
	R_CREATED,     /* a counter's _created: the process start */
};

struct metric {
	const char *name;
	enum role role;
};

/* vLLM, after its vllm: or vllm_ prefix */
static const struct metric vllm_metrics[] = {
	{"request_success_total", R_OK_REASON},
	{"prompt_tokens_total", R_PROMPT},
	{"generation_tokens_total", R_GEN},
	{"e2e_request_latency_seconds_bucket", R_HIST_BUCKET},
	{"e2e_request_latency_seconds_count", R_HIST_COUNT},
	{"num_requests_running", R_RUNNING},
	{"num_requests_waiting", R_WAITING},
	{"request_success_created", R_CREATED},
	{"prompt_tokens_created", R_CREATED},
	{"generation_tokens_created", R_CREATED},
	{NULL, 0},
};

/* TGI: counters with no _total, token counts as histogram sums */
static const struct metric tgi_metrics[] = {
	{"tgi_request_success", R_OK},
	{"tgi_request_failure", R_FAIL},
	{"tgi_request_count", R_COUNT},
	{"tgi_request_input_length_sum", R_PROMPT},
	{"tgi_request_generated_tokens_sum", R_GEN},
	{"tgi_request_duration_bucket", R_HIST_BUCKET},
	{"tgi_request_duration_count", R_HIST_COUNT},
	{"tgi_batch_current_size", R_RUNNING},
	{"tgi_queue_size", R_WAITING},
	{NULL, 0},
};

/* Triton: no token counters and no latency histogram (its latencies are
 * cumulative microsecond counters or summaries, which do not aggregate) */
static const struct metric triton_metrics[] = {
	{"nv_inference_request_success", R_OK},
	{"nv_inference_request_failure", R_FAIL},
	{"nv_inference_count", R_INFER},
	{"nv_inference_exec_count", R_EXEC},
	{"nv_inference_pending_request_count", R_WAITING},
	{NULL, 0},
};

static const struct metric sglang_metrics[] = {
	{"sglang:num_requests_total", R_OK},
	{"sglang:num_aborted_requests_total", R_FAIL},
	{"sglang:prompt_tokens_total", R_PROMPT},
	{"sglang:generation_tokens_total", R_GEN},
	{"sglang:e2e_request_latency_seconds_bucket", R_HIST_BUCKET},
	{"sglang:e2e_request_latency_seconds_count", R_HIST_COUNT},
	{"sglang:num_running_reqs", R_RUNNING},
	{"sglang:num_queue_reqs", R_WAITING},
	{"sglang:num_requests_created", R_CREATED},
	{"sglang:prompt_tokens_created", R_CREATED},
	{"sglang:generation_tokens_created", R_CREATED},
	{NULL, 0},
};

/* vLLM finished_reason values that are no answer: the client went away
 * (abort) or the engine failed (error, newer versions) */
static int reason_failed(struct gl_str r)
{
	return gl_str_eq(r, "abort") || gl_str_eq(r, "error");
}

static int lookup_in(const struct metric *t, struct gl_str name, size_t skip, enum role *role)
{
	for (; t->name; t++)
		if (name.len == skip + strlen(t->name) && !memcmp(name.p + skip, t->name, name.len - skip)) {
			*role = t->role;
			return 1;
		}
	return 0;
}

static enum gl_servemetrics_family lookup(struct gl_str name, enum role *role)
{
	if (name.len > 5 && (!memcmp(name.p, "vllm:", 5) || !memcmp(name.p, "vllm_", 5)))
		return lookup_in(vllm_metrics, name, 5, role) ? GL_SERVEMETRICS_VLLM : GL_SERVEMETRICS_NONE;
	if (name.len > 4 && !memcmp(name.p, "tgi_", 4))
		return lookup_in(tgi_metrics, name, 0, role) ? GL_SERVEMETRICS_TGI : GL_SERVEMETRICS_NONE;
	if (name.len > 13 && !memcmp(name.p, "nv_inference_", 13))
		return lookup_in(triton_metrics, name, 0, role) ? GL_SERVEMETRICS_TRITON : GL_SERVEMETRICS_NONE;
	if (name.len > 7 && !memcmp(name.p, "sglang:", 7))
		return lookup_in(sglang_metrics, name, 0, role) ? GL_SERVEMETRICS_SGLANG : GL_SERVEMETRICS_NONE;
	return GL_SERVEMETRICS_NONE;
}

/* Raw sums while parsing, composed into the counters at the end. */
struct raw {
	double ok, ok_failed, fail, count, hist_count, created;
	int have_ok, have_fail, have_count, have_hist_count, have_created;
};

struct ctx {
	struct gl_servemetrics_scrape *s;
	struct raw *raw;
	size_t cap_raw;
	const char *default_model;
	double process_start;
	char first_unknown[96];
	size_t first_unknown_line;
	size_t last; /* series of the previous sample: scrapes group a series' lines */
};

static struct gl_str label(const struct gl_promtext_sample *sm, const char *name)
{
	for (size_t i = 0; i < sm->nlabels; i++)
		if (gl_str_eq(sm->labels[i].name, name))
			return sm->labels[i].value;
	return GL_STR_NULL;
}

static struct gl_str label2(const struct gl_promtext_sample *sm, const char *a, const char *b)
{
	struct gl_str v = label(sm, a);
	return v.p ? v : label(sm, b);
}

static int str_is(const char *s, struct gl_str v)
{
	return strlen(s) == v.len && (!v.len || !memcmp(s, v.p, v.len));
}

static struct gl_servemetrics_series *series_for(struct ctx *c, enum gl_servemetrics_family f, struct gl_str model,
					  struct gl_str pod, struct gl_str ns, struct raw **raw)
{
	struct gl_servemetrics_scrape *s = c->s;
	struct gl_servemetrics_series *x;
	for (size_t k = 0; k < s->n; k++) {
		size_t i = (c->last + k) % s->n;
		x = &s->series[i];
		if (x->family == f && str_is(x->model_name, model) && str_is(x->pod, pod) && str_is(x->namespace_, ns)) {
			c->last = i;
			*raw = &c->raw[i];
			return x;
		}
	}
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 4;
		s->series = gl_xrealloc(s->series, s->cap * sizeof *s->series);
		c->raw = gl_xrealloc(c->raw, s->cap * sizeof *c->raw);
	}
	x = &s->series[s->n];
	memset(x, 0, sizeof *x);
	memset(&c->raw[s->n], 0, sizeof c->raw[s->n]);
	x->family = f;
	x->model_name = gl_xstrndup(model.p ? model.p : "", model.len);
	x->pod = gl_xstrndup(pod.p ? pod.p : "", pod.len);
	x->namespace_ = gl_xstrndup(ns.p ? ns.p : "", ns.len);
	x->start_s = x->running = x->waiting = NAN;
	c->last = s->n;
	*raw = &c->raw[s->n];
	return &s->series[s->n++];
}

static void add_bucket(struct gl_servemetrics_series *x, const struct gl_promtext_sample *sm)
{
	struct gl_str le = label(sm, "le");
	double b;
	size_t i = 0;
	if (x->hist_problem)
		return;
	if (!le.p || gl_promtext_parse_float(le.p, le.len, &b) || isnan(b)) {
		x->hist_problem = "a bucket without a numeric le label";
		return;
	}
	while (i < x->nle && x->le[i] != b)
		i++;
	if (i == x->nle) {
		if (x->nle == GL_SERVEMETRICS_MAX_LE) {
			x->hist_problem = "more than 64 latency buckets";
			return;
		}
		x->le[x->nle] = b;
		x->cum[x->nle++] = 0;
	}
	x->cum[i] += sm->value; /* summed over the labels that are not le */
}

static void apply(struct ctx *c, enum gl_servemetrics_family f, enum role role, const struct gl_promtext_sample *sm)
{
	struct gl_str model = f == GL_SERVEMETRICS_TRITON ? label(sm, "model")
			    : f == GL_SERVEMETRICS_SGLANG ? label2(sm, "model_name", "name")
						   : label(sm, "model_name");
	struct raw *r;
	struct gl_servemetrics_series *x;
	if (!model.p && c->default_model)
		model = (struct gl_str){c->default_model, strlen(c->default_model)};
	x = series_for(c, f, model, label2(sm, "pod", "exported_pod"), label2(sm, "namespace", "exported_namespace"), &r);
	switch (role) {
	case R_OK_REASON:
		if (reason_failed(label(sm, "finished_reason")))
			r->ok_failed += sm->value;
		/* fall through */
	case R_OK:
		r->ok += sm->value;
		r->have_ok = 1;
		break;
	case R_FAIL:
		r->fail += sm->value;
		r->have_fail = 1;
		break;
	case R_COUNT:
		r->count += sm->value;
		r->have_count = 1;
		break;
	case R_PROMPT:
	case R_GEN:
	case R_INFER:
	case R_EXEC: {
		enum gl_servemetrics_ctr k = role == R_PROMPT ? GL_SERVEMETRICS_PROMPT
				    : role == R_GEN    ? GL_SERVEMETRICS_GENERATED
				    : role == R_INFER  ? GL_SERVEMETRICS_INFERENCES
						       : GL_SERVEMETRICS_EXECUTIONS;
		x->v[k] = (x->have >> k & 1u) ? x->v[k] + sm->value : sm->value;
		x->have |= 1u << k;
		break;
	}
	case R_HIST_BUCKET:
		add_bucket(x, sm);
		break;
	case R_HIST_COUNT:
		r->hist_count += sm->value;
		r->have_hist_count = 1;
		break;
	case R_RUNNING:
		x->running = isnan(x->running) ? sm->value : x->running + sm->value;
		break;
	case R_WAITING:
		x->waiting = isnan(x->waiting) ? sm->value : x->waiting + sm->value;
		break;
	case R_CREATED:
		if (!r->have_created || sm->value < r->created)
			r->created = sm->value;
		r->have_created = 1;
		break;
	}
}

static int on_sample(void *ud, const struct gl_promtext_sample *sm)
{
	struct ctx *c = ud;
	enum role role = R_OK;
	enum gl_servemetrics_family f;

	if (gl_str_eq(sm->name, "process_start_time_seconds")) {
		if (sm->has_value && isfinite(sm->value) && sm->value > 0)
			c->process_start = sm->value;
		return 0;
	}
	f = lookup(sm->name, &role);
	if (f == GL_SERVEMETRICS_NONE) {
		if (!c->first_unknown[0])
			snprintf(c->first_unknown, sizeof c->first_unknown, "%.*s",
				 (int)(sm->name.len > 80 ? 80 : sm->name.len), sm->name.p);
		if (!c->first_unknown_line)
			c->first_unknown_line = sm->line;
		return 0;
	}
	c->s->known++;
	/* a count is a finite number >= 0 (gauges too: requests and queue
	 * lengths); anything else is reported and kept out */
	if (!sm->has_value || !isfinite(sm->value) || sm->value < 0) {
		if (!c->s->bad_values++)
			c->s->first_bad_value_line = sm->line;
		return 0;
	}
	apply(c, f, role, sm);
	return 0;
}

static int cmp_le(const void *a, const void *b)
{
	const double *x = a, *y = b;
	return (x[0] > y[0]) - (x[0] < y[0]);
}

static void finish_hist(struct gl_servemetrics_series *x)
{
	double pairs[2 * GL_SERVEMETRICS_MAX_LE];
	if (x->hist_problem || !x->nle) {
		x->nle = 0;
		return;
	}
	for (size_t i = 0; i < x->nle; i++) {
		pairs[2 * i] = x->le[i];
		pairs[2 * i + 1] = x->cum[i];
	}
	gl_qsort(pairs, x->nle, 2 * sizeof *pairs, cmp_le);
	for (size_t i = 0; i < x->nle; i++) {
		x->le[i] = pairs[2 * i];
		x->cum[i] = pairs[2 * i + 1];
	}
	if (!isinf(x->le[x->nle - 1]) || x->nle < 2) {
		x->hist_problem = x->nle < 2 ? "a latency histogram with one bucket" : "a latency histogram without +Inf";
		x->nle = 0;
	}
}

/* The counters from the raw sums, as each family defines them. */
static void compose(struct ctx *c, size_t i)
{
	struct gl_servemetrics_series *x = &c->s->series[i];
	const struct raw *r = &c->raw[i];
	int have_req = 1, have_fail = 0;
	double req = 0, fail = 0;

	if (x->family == GL_SERVEMETRICS_VLLM && r->have_ok) {
		req = r->ok;
		fail = r->ok_failed;
		have_fail = 1;
	} else if ((x->family == GL_SERVEMETRICS_TGI || x->family == GL_SERVEMETRICS_TRITON) && (r->have_ok || r->have_fail)) {
		/* success and failure counters each count a finished request once */
		req = r->ok + r->fail;
		fail = r->fail;
		have_fail = 1;
	} else if (x->family == GL_SERVEMETRICS_TGI && r->have_count) {
		req = r->count;
	} else if (x->family == GL_SERVEMETRICS_SGLANG && r->have_ok) {
		req = r->ok;
		fail = r->fail;
		have_fail = r->have_fail;
	} else if (r->have_hist_count) {
		/* no request counter: the latency histogram counts every
		 * request that finished (SGLang before num_requests_total) */
		req = r->hist_count;
		fail = r->fail;
		have_fail = r->have_fail;
	} else {
		have_req = 0;
	}
	if (have_req) {
		x->v[GL_SERVEMETRICS_REQUESTS] = req;
		x->have |= 1u << GL_SERVEMETRICS_REQUESTS;
	}
	if (have_fail) {
		x->v[GL_SERVEMETRICS_FAILED] = fail;
		x->have |= 1u << GL_SERVEMETRICS_FAILED;
	}
	if (!isnan(c->process_start))
		x->start_s = c->process_start;
	else if (r->have_created)
		x->start_s = r->created;
	finish_hist(x);
}

int gl_servemetrics_parse(struct gl_servemetrics_scrape *s, const char *buf, size_t len, const char *default_model,
			  struct gl_err *err)
{
	struct ctx c;
	struct gl_promtext_handler h = {on_sample, NULL, &c};
	int rc;

	memset(s, 0, sizeof *s);
	memset(&c, 0, sizeof c);
	c.s = s;
	c.default_model = default_model && *default_model ? default_model : NULL;
	c.process_start = NAN;
	rc = gl_promtext_parse(buf, len, NULL, &h, &s->parse, err);
	if (rc == -GL_EFORMAT) {
		if (err && strncmp(err->msg, "not Prometheus text", 19))
			gl_err_prefix(err, "not Prometheus text: ");
		goto out;
	}
	if (rc)
		goto out;
	for (size_t i = 0; i < s->n; i++)
		compose(&c, i);
	if (!s->known) {
		if (c.first_unknown[0])
			rc = gl_err_set(err, GL_EFORMAT,
					"no known serving metric (vLLM vllm:/vllm_, TGI tgi_, Triton nv_inference_, "
					"SGLang sglang:); line %zu has %s",
					c.first_unknown_line, c.first_unknown);
		else
			rc = gl_err_set(err, GL_EFORMAT,
					"no known serving metric (vLLM vllm:/vllm_, TGI tgi_, Triton nv_inference_, "
					"SGLang sglang:); the scrape has no samples");
	}
out:
	free(c.raw);
	return rc;
}

void gl_servemetrics_fini(struct gl_servemetrics_scrape *s)
{
	for (size_t i = 0; s->series && i < s->n; i++) {
		free(s->series[i].model_name);
		free(s->series[i].pod);
		free(s->series[i].namespace_);
	}
	free(s->series);
	memset(s, 0, sizeof *s);
}

const char *gl_servemetrics_family_name(enum gl_servemetrics_family f)
{
	static const char *const names[] = {"", "vllm", "tgi", "triton", "sglang"};
	return (unsigned)f < GL_ARRAY_LEN(names) ? names[f] : "";
}

const char *gl_servemetrics_counter_name(enum gl_servemetrics_ctr k)
{
	static const char *const names[] = {"requests",         "failed",     "prompt_tokens",
					    "generated_tokens", "inferences", "executions"};
	return (unsigned)k < GL_ARRAY_LEN(names) ? names[k] : "";
}
