/* Idle-GPU window rules (see include/gl/idlerule.h). */
#include "gl/idlerule.h"

#include <math.h>
#include <string.h>

static const char *const kind_names[] = {"fixed", "sliding", "reset"};
static const char *const stage_names[] = {"none", "warn1", "warn2", "act"};

const char *gl_idlerule_kind_name(enum gl_idlerule_kind k)
{
	return (unsigned)k < GL_ARRAY_LEN(kind_names) ? kind_names[k] : "?";
}

int gl_idlerule_kind_parse(const char *s, enum gl_idlerule_kind *out)
{
	for (size_t i = 0; i < GL_ARRAY_LEN(kind_names); i++)
		if (s && !strcmp(s, kind_names[i])) {
			*out = (enum gl_idlerule_kind)i;
			return 0;
		}
	return -GL_EINVAL;
}

const char *gl_idlerule_stage_name(enum gl_idlerule_stage s)
{
	return (unsigned)s < GL_ARRAY_LEN(stage_names) ? stage_names[s] : "?";
}

int gl_idlerule_stage_parse(const char *s, enum gl_idlerule_stage *out)
{
	for (size_t i = 0; i < GL_ARRAY_LEN(stage_names); i++)
		if (s && !strcmp(s, stage_names[i])) {
			*out = (enum gl_idlerule_stage)i;
			return 0;
		}
	return -GL_EINVAL;
}

int gl_idlerule_check(const struct gl_idlerule *r, struct gl_err *err)
{
	if ((unsigned)r->kind >= GL_ARRAY_LEN(kind_names))
		return gl_err_set(err, GL_EINVAL, "rule.kind: unknown rule");
	if (r->t1_s <= 0 || r->t3_s <= 0)
		return gl_err_set(err, GL_EINVAL, "rule: t1_min and t3_min must be positive");
	if (r->t1_s >= r->t3_s)
		return gl_err_set(err, GL_EINVAL, "rule: t1_min (%lld) must be below t3_min (%lld)",
				  (long long)(r->t1_s / 60), (long long)(r->t3_s / 60));
	if (r->t2_s && (r->t2_s <= r->t1_s || r->t2_s >= r->t3_s))
		return gl_err_set(err, GL_EINVAL, "rule: t2_min (%lld) must lie between t1_min and t3_min",
				  (long long)(r->t2_s / 60));
	if (r->t2_s < 0 || r->grace_s < 0 || r->max_data_age_s < 0)
		return gl_err_set(err, GL_EINVAL, "rule: negative duration");
	if (!(r->gpu_fraction > 0 && r->gpu_fraction <= 1))
		return gl_err_set(err, GL_EINVAL, "rule.gpu_fraction: must be in (0, 1]");
	return 0;
}

enum gl_idlerule_state gl_idlerule_classify(const struct gl_idlerule_obs *o, const struct gl_idlerule_signal *sig)
{
	if (o->samples <= 0 || o->nodata_samples >= o->samples)
		return GL_IDLERULE_NODATA;
	if (o->busy_samples > 0)
		return GL_IDLERULE_BUSY;
	if (o->engine_mean >= 0 && o->engine_mean >= sig->engine_active_threshold)
		return GL_IDLERULE_BUSY;
	/* GPU_UTIL only speaks when engine activity is missing: it reads 100 % for
	 * a kernel that barely uses the GPU, so it must not overrule the engine */
	if (o->engine_mean < 0 && o->util_max_pct >= 0 && o->util_max_pct > sig->util_threshold_pct)
		return GL_IDLERULE_BUSY;
	if (sig->memory_counts_as_busy && o->fb_used_mib >= 0 && o->fb_used_mib >= sig->fb_used_busy_mib)
		return GL_IDLERULE_BUSY;
	if (sig->power_busy_watts > 0 && o->power_w >= 0 && o->power_w >= sig->power_busy_watts)
		return GL_IDLERULE_BUSY;
	return GL_IDLERULE_IDLE;
}

static enum gl_idlerule_stage stage_for(const struct gl_idlerule *r, int64_t idle_s)
{
	if (idle_s >= r->t3_s)
		return GL_IDLERULE_STAGE_ACT;
	if (r->t2_s && idle_s >= r->t2_s)
		return GL_IDLERULE_STAGE_WARN2;
	if (idle_s >= r->t1_s)
		return GL_IDLERULE_STAGE_WARN1;
	return GL_IDLERULE_STAGE_NONE;
}

/* The part of a span inside [start + grace, now) counts: 0 when none. */
static int clip_span(const struct gl_idlerule_span *s, int64_t from, int64_t now_s, int64_t *a, int64_t *b)
{
	*a = s->start_s > from ? s->start_s : from;
	*b = s->start_s + s->dur_s < now_s ? s->start_s + s->dur_s : now_s;
	return *b > *a;
}

gl_cost_i128 gl_idlerule_idle_cost_num(const struct gl_idlerule *r, const struct gl_idlerule_span *spans, size_t n,
				  int64_t job_start_s, int64_t now_s, const struct gl_jobstats_rate *rates, size_t nr)
{
	gl_cost_i128 num = 0;
	int64_t a, b;
	for (size_t i = 0; i < n; i++)
		if (spans[i].state == GL_IDLERULE_IDLE && clip_span(&spans[i], job_start_s + r->grace_s, now_s, &a, &b))
			num += gl_jobstats_cost_num(rates, nr, a * 1000000, b * 1000000, GL_GPU_MICRO);
	return num;
}

void gl_idlerule_eval_gpu(const struct gl_idlerule *r, const struct gl_idlerule_span *spans, size_t n,
			  int64_t job_start_s, int64_t now_s, struct gl_idlerule_gpu_eval *out)
{
	int64_t from = job_start_s + r->grace_s, acc = 0, run = 0, run_end = GL_TIME_NONE;
	int busy = 0;

	memset(out, 0, sizeof *out);
	out->last_data_s = GL_TIME_NONE;
	for (size_t i = 0; i < n; i++) {
		const struct gl_idlerule_span *s = &spans[i];
		int64_t a, b = s->start_s + s->dur_s;
		if (s->state != GL_IDLERULE_NODATA && (out->last_data_s == GL_TIME_NONE || b > out->last_data_s))
			out->last_data_s = b;
		if (!clip_span(s, from, now_s, &a, &b))
			continue;
		switch (s->state) {
		case GL_IDLERULE_BUSY:
			busy = 1;
			acc = 0;
			run = 0;
			run_end = b;
			break;
		case GL_IDLERULE_IDLE:
			out->idle_total_s += b - a;
			acc += b - a;
			/* a hole between spans is time without data: it breaks the run */
			if (run_end == GL_TIME_NONE || a > run_end)
				run = 0;
			run += b - a;
			run_end = b;
			break;
		case GL_IDLERULE_NODATA:
			run = 0;
			run_end = b;
			break;
		}
	}
	switch (r->kind) {
	case GL_IDLERULE_FIXED: out->idle_s = busy ? 0 : out->idle_total_s; break;
	case GL_IDLERULE_SLIDING: out->idle_s = run; break;
	case GL_IDLERULE_RESET: out->idle_s = acc; break;
	}
	out->stale = out->last_data_s == GL_TIME_NONE || out->last_data_s < now_s - r->max_data_age_s;
	out->stage = stage_for(r, out->idle_s);
}

void gl_idlerule_eval_job(const struct gl_idlerule *r, const struct gl_idlerule_gpu_eval *gpus, size_t ngpus,
			  size_t expected_gpus, struct gl_idlerule_job_eval *out)
{
	size_t n = expected_gpus > ngpus ? expected_gpus : ngpus, need;
	int64_t kth = 0;

	memset(out, 0, sizeof *out);
	if (!n) {
		out->no_data = 1;
		return;
	}
	need = (size_t)ceil(r->gpu_fraction * (double)n - 1e-9);
	if (need < 1)
		need = 1;
	if (ngpus < n)
		out->no_data = 1;
	for (size_t i = 0; i < ngpus; i++) {
		out->idle_gpu_s += gpus[i].idle_total_s;
		if (gpus[i].stale)
			out->no_data = 1;
	}
	/* the need-th largest idle time: at least `need` GPUs have that much */
	if (need <= ngpus) {
		for (size_t i = 0; i < ngpus; i++) {
			size_t above = 0, equal = 0;
			for (size_t j = 0; j < ngpus; j++) {
				above += gpus[j].idle_s > gpus[i].idle_s;
				equal += gpus[j].idle_s == gpus[i].idle_s;
			}
			if (above < need && above + equal >= need) {
				kth = gpus[i].idle_s;
				break;
			}
		}
	}
	out->idle_s = kth;
	out->stage = out->no_data ? GL_IDLERULE_STAGE_NONE : stage_for(r, kth);
	for (size_t i = 0; i < ngpus; i++)
		if (stage_for(r, gpus[i].idle_s) >= (out->stage > GL_IDLERULE_STAGE_WARN1 ? out->stage : GL_IDLERULE_STAGE_WARN1))
			out->idle_gpus++;
}

int64_t gl_idlerule_cost_micros(int64_t idle_gpu_s, int64_t micros_per_gpu_hour)
{
	if (micros_per_gpu_hour < 0 || idle_gpu_s <= 0)
		return 0;
	return (idle_gpu_s * micros_per_gpu_hour + 1800) / 3600;
}
