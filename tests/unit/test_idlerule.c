/* Idle window rules on real utilisation series (tests/fixtures/idle/README.md).
 * Expected idle times and candidates are computed here by independent, naive
 * rules (backward scans over the raw samples), never by the code under test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/idlerule.h"
#include "lib/testlib.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STEP_S 57 /* the Alibaba trace samples every 57 s */
#define MAXS 400
#define MAXPODS 16

struct pod {
	char name[16];
	size_t n;
	int64_t t[MAXS];
	double util[MAXS];
	double mem_mib[MAXS]; /* < 0: no memory sample */
};

static struct pod pods[MAXPODS];
static size_t npods;

static void load_alibaba(void)
{
	char *buf = gl_test_read_file(gl_test_fixture("tests/fixtures/idle/alibaba_genai_pod_duty_mem.csv"), NULL);
	char *save = NULL, *line = strtok_r(buf, "\n", &save);
	npods = 0;
	for (line = strtok_r(NULL, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[16], mem[64] = "";
		long long t;
		double u;
		struct pod *p;
		if (sscanf(line, "%15[^,],%lld,%lf,%63s", name, &t, &u, mem) < 3)
			fail_msg("bad fixture line %s", line);
		if (!npods || strcmp(pods[npods - 1].name, name)) {
			assert_true(npods < MAXPODS);
			p = &pods[npods++];
			memset(p, 0, sizeof *p);
			snprintf(p->name, sizeof p->name, "%s", name);
		}
		p = &pods[npods - 1];
		assert_true(p->n < MAXS);
		p->t[p->n] = t;
		p->util[p->n] = u;
		p->mem_mib[p->n] = mem[0] ? atof(mem) / (1024.0 * 1024.0) : -1;
		p->n++;
	}
	free(buf);
	assert_int_equal(npods, 10);
}

/* ---- the independent rules: a sample is busy when util > 0 (or memory
 * held, when it counts); they scan backwards from now ---- */
static int busy_at(const struct pod *p, size_t i, int mem_counts)
{
	return p->util[i] > 0 || (mem_counts && p->mem_mib[i] >= 1024);
}

/* samples [0, end) are those before now; start = the first sample's time */
static int64_t naive_reset(const struct pod *p, size_t end, int mem_counts)
{
	int64_t s = 0;
	for (size_t i = end; i-- > 0;) {
		if (busy_at(p, i, mem_counts))
			break;
		s += STEP_S;
	}
	return s;
}

static int64_t naive_sliding(const struct pod *p, size_t end, int mem_counts)
{
	int64_t s = 0;
	for (size_t i = end; i-- > 0;) {
		if (busy_at(p, i, mem_counts))
			break;
		s += STEP_S;
		if (i > 0 && p->t[i] - p->t[i - 1] != STEP_S)
			break; /* a missing sample is no data */
	}
	return s;
}

static int64_t naive_fixed(const struct pod *p, size_t end, int mem_counts)
{
	for (size_t i = 0; i < end; i++)
		if (busy_at(p, i, mem_counts))
			return 0;
	return (int64_t)end * STEP_S;
}

static void spans_of(const struct pod *p, size_t end, const struct gl_idlerule_signal *sig, struct gl_idlerule_span *sp)
{
	for (size_t i = 0; i < end; i++) {
		struct gl_idlerule_obs o = {p->t[i], STEP_S, 1, 0, 0, -1, p->util[i], p->mem_mib[i], -1};
		sp[i] = (struct gl_idlerule_span){p->t[i], STEP_S, gl_idlerule_classify(&o, sig)};
	}
}

static const struct gl_idlerule_signal util_only = {0.01, 0, 0, 1024, 0};
static const struct gl_idlerule_signal util_mem = {0.01, 0, 1, 1024, 0};

static void check_rule(enum gl_idlerule_kind kind, int mem_counts, int64_t (*naive)(const struct pod *, size_t, int))
{
	struct gl_idlerule r = {kind, 30 * 60, 45 * 60, 60 * 60, 0, 600, 1.0};
	struct gl_idlerule_span sp[MAXS];
	int acts = 0, nonzero = 0, checked = 0;

	if (!npods)
		load_alibaba();
	for (size_t k = 0; k < npods; k++) {
		const struct pod *p = &pods[k];
		/* now = the end of sample end-1, every 20 samples */
		for (size_t end = 20; end <= p->n; end += 20) {
			int64_t now = p->t[end - 1] + STEP_S, want = naive(p, end, mem_counts);
			enum gl_idlerule_stage want_stage = want >= r.t3_s ? GL_IDLERULE_STAGE_ACT
							: want >= r.t2_s ? GL_IDLERULE_STAGE_WARN2
							: want >= r.t1_s ? GL_IDLERULE_STAGE_WARN1 : GL_IDLERULE_STAGE_NONE;
			struct gl_idlerule_gpu_eval ev;
			spans_of(p, end, mem_counts ? &util_mem : &util_only, sp);
			gl_idlerule_eval_gpu(&r, sp, end, p->t[0], now, &ev);
			if (ev.idle_s != want)
				fail_msg("%s %s pod %s end %zu: idle %lld, naive %lld", gl_idlerule_kind_name(kind),
					 mem_counts ? "mem" : "util", p->name, end, (long long)ev.idle_s, (long long)want);
			assert_int_equal(ev.stage, want_stage);
			assert_false(ev.stale);
			acts += ev.stage == GL_IDLERULE_STAGE_ACT;
			nonzero += want > 0;
			checked++;
		}
	}
	/* the series must exercise the rule, or the comparison proves nothing */
	assert_true(checked > 100);
	/* every pod of the subset holds memory the whole time: with memory
	 * counting as busy nothing is idle (test_memory_spares_alibaba) */
	if (!mem_counts)
		assert_true(nonzero > 0);
	if (kind != GL_IDLERULE_FIXED && !mem_counts)
		assert_true(acts > 0);
}

static void test_reset_alibaba(void **s) { (void)s; check_rule(GL_IDLERULE_RESET, 0, naive_reset); }
static void test_sliding_alibaba(void **s) { (void)s; check_rule(GL_IDLERULE_SLIDING, 0, naive_sliding); }
static void test_fixed_alibaba(void **s) { (void)s; check_rule(GL_IDLERULE_FIXED, 0, naive_fixed); }
static void test_reset_alibaba_memory(void **s) { (void)s; check_rule(GL_IDLERULE_RESET, 1, naive_reset); }
static void test_sliding_alibaba_memory(void **s) { (void)s; check_rule(GL_IDLERULE_SLIDING, 1, naive_sliding); }

/* Memory held while the duty cycle is 0 is common in the trace: counting it
 * as busy must spare pods that the utilisation alone would act on. */
static void test_memory_spares_alibaba(void **s)
{
	struct gl_idlerule r = {GL_IDLERULE_RESET, 30 * 60, 0, 60 * 60, 0, 600, 1.0};
	struct gl_idlerule_span sp[MAXS];
	int spared = 0;
	(void)s;
	if (!npods)
		load_alibaba();
	for (size_t k = 0; k < npods; k++) {
		const struct pod *p = &pods[k];
		struct gl_idlerule_gpu_eval a, b;
		int64_t now = p->t[p->n - 1] + STEP_S;
		spans_of(p, p->n, &util_only, sp);
		gl_idlerule_eval_gpu(&r, sp, p->n, p->t[0], now, &a);
		spans_of(p, p->n, &util_mem, sp);
		gl_idlerule_eval_gpu(&r, sp, p->n, p->t[0], now, &b);
		assert_true(b.idle_s <= a.idle_s);
		if (a.stage == GL_IDLERULE_STAGE_ACT && b.stage != GL_IDLERULE_STAGE_ACT) {
			/* independently: the pod's last samples hold >= 1 GiB */
			assert_true(p->mem_mib[p->n - 1] >= 1024);
			spared++;
		}
	}
	assert_true(spared > 0);
}

/* Stale data: the same series evaluated long after its last sample. */
static void test_stale_alibaba(void **s)
{
	struct gl_idlerule r = {GL_IDLERULE_SLIDING, 30 * 60, 0, 60 * 60, 0, 600, 1.0};
	struct gl_idlerule_span sp[MAXS];
	struct gl_idlerule_gpu_eval ev;
	struct gl_idlerule_job_eval job;
	const struct pod *p;
	(void)s;
	if (!npods)
		load_alibaba();
	p = &pods[0];
	spans_of(p, p->n, &util_only, sp);
	gl_idlerule_eval_gpu(&r, sp, p->n, p->t[0], p->t[p->n - 1] + STEP_S + 601, &ev);
	assert_true(ev.stale);
	gl_idlerule_eval_job(&r, &ev, 1, 1, &job);
	assert_true(job.no_data);
	assert_int_equal(job.stage, GL_IDLERULE_STAGE_NONE);
	gl_idlerule_eval_gpu(&r, sp, p->n, p->t[0], p->t[p->n - 1] + STEP_S + 599, &ev);
	assert_false(ev.stale);
	gl_idlerule_eval_gpu(&r, NULL, 0, p->t[0], p->t[0] + 7200, &ev);
	assert_true(ev.stale);
}

/* ---- Philly: per-minute utilisation of every GPU of multi-GPU jobs;
 * gpu_fraction decides the job ---- */
#define PH_COLS 14
struct phgpu {
	char job[64];
	double v[PH_COLS]; /* < 0: empty cell */
};

static void test_gpu_fraction_philly(void **s)
{
	char *buf = gl_test_read_file(gl_test_fixture("tests/fixtures/idle/philly_gpu_util_around_start.csv"), NULL);
	char *save = NULL, *line;
	static struct phgpu g[400];
	size_t ng = 0;
	/* the last 4 minutes must be idle: sliding, t3 = W = 4 min */
	struct gl_idlerule r = {GL_IDLERULE_SLIDING, 2 * 60, 0, 4 * 60, 0, 119, 0};
	static const double fractions[] = {0.25, 0.5, 0.75, 1.0};
	int64_t t0 = 1509000000; /* any origin: minute k of the series starts at t0 + 60 k */
	int64_t now = t0 + 60 * PH_COLS;
	int seen_cand[4] = {0}, seen_not[4] = {0}, seen_nodata = 0;
	(void)s;

	line = strtok_r(buf, "\n", &save); /* header */
	for (line = strtok_r(NULL, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *f = line, *comma;
		int col = 0;
		assert_true(ng < GL_ARRAY_LEN(g));
		comma = strchr(f, ',');
		snprintf(g[ng].job, sizeof g[ng].job, "%.*s", (int)(comma - f), f);
		/* skip jobid, gpu, machine_type, trace */
		for (int k = 0; k < 4; k++)
			f = strchr(f, ',') + 1;
		for (col = 0; col < PH_COLS; col++) {
			comma = strchr(f, ',');
			g[ng].v[col] = (comma ? comma == f : *f == '\0') ? -1 : atof(f);
			f = comma ? comma + 1 : f + strlen(f);
		}
		ng++;
	}
	free(buf);
	for (size_t a = 0; a < ng;) {
		size_t b = a;
		while (b < ng && !strcmp(g[b].job, g[a].job))
			b++;
		for (size_t fi = 0; fi < GL_ARRAY_LEN(fractions); fi++) {
			struct gl_idlerule_gpu_eval ev[64];
			struct gl_idlerule_job_eval job;
			size_t idle = 0, nodata = 0, n = b - a, need = 0;
			int want;
			r.gpu_fraction = fractions[fi];
			assert_true(n <= 64);
			for (size_t k = a; k < b; k++) {
				struct gl_idlerule_span sp[PH_COLS];
				int last4_idle = 1;
				for (int c = 0; c < PH_COLS; c++) {
					struct gl_idlerule_obs o = {t0 + 60 * c, 60, 1, 0, g[k].v[c] < 0, -1, g[k].v[c], -1, -1};
					sp[c] = (struct gl_idlerule_span){t0 + 60 * c, 60, gl_idlerule_classify(&o, &util_only)};
				}
				gl_idlerule_eval_gpu(&r, sp, PH_COLS, t0, now, &ev[k - a]);
				for (int c = PH_COLS - 4; c < PH_COLS; c++)
					if (g[k].v[c] != 0)
						last4_idle = 0;
				idle += last4_idle;
				/* stale: no sample in the last 2 minutes */
				nodata += g[k].v[PH_COLS - 1] < 0 && g[k].v[PH_COLS - 2] < 0;
			}
			while ((double)need < fractions[fi] * (double)n - 1e-9)
				need++;
			want = !nodata && idle >= need;
			gl_idlerule_eval_job(&r, ev, n, n, &job);
			if ((job.stage == GL_IDLERULE_STAGE_ACT) != want)
				fail_msg("job %s fraction %.2f: %zu/%zu idle, stage %s", g[a].job, fractions[fi], idle, n,
					 gl_idlerule_stage_name(job.stage));
			assert_int_equal(job.no_data, nodata > 0);
			if (want)
				assert_true(job.idle_gpus >= need);
			seen_cand[fi] += want;
			seen_not[fi] += !want;
			seen_nodata += nodata > 0;
		}
		a = b;
	}
	/* the fixture has all-idle, partly idle and busy jobs */
	for (size_t fi = 0; fi < GL_ARRAY_LEN(fractions); fi++)
		assert_true(seen_cand[fi] > 0 && seen_not[fi] > 0);
	assert_true(seen_cand[0] > seen_cand[3]);
	(void)seen_nodata;
}

/* ---- nvidia-smi captures: idle and load, util / memory / power ---- */
static double prom_value(const char *text, const char *metric)
{
	const char *p = text;
	size_t n = strlen(metric);
	while ((p = strstr(p, metric))) {
		if ((p == text || p[-1] == '\n') && (p[n] == '{' || p[n] == ' ')) {
			const char *sp = strchr(p, ' ');
			return atof(sp + 1);
		}
		p += n;
	}
	fail_msg("metric %s not found", metric);
	return 0;
}

static void test_classify_nvidia_smi(void **s)
{
	static const char *const files[] = {"tests/fixtures/dcgm/nvidia_gpu_exporter_output__h100__idle.prom",
					    "tests/fixtures/dcgm/nvidia_gpu_exporter_output__h100__load.prom"};
	(void)s;
	for (int i = 0; i < 2; i++) {
		char *t = gl_test_read_file(gl_test_fixture(files[i]), NULL);
		double util = prom_value(t, "nvidia_smi_utilization_gpu_ratio") * 100,
		       mem = prom_value(t, "nvidia_smi_memory_used_bytes") / (1024.0 * 1024.0),
		       pw = prom_value(t, "nvidia_smi_power_draw_watts");
		struct gl_idlerule_obs o = {0, 30, 1, 0, 0, -1, util, mem, pw};
		struct gl_idlerule_obs no_util = {0, 30, 1, 0, 0, -1, -1, mem, pw};
		struct gl_idlerule_signal power = {0.01, 0, 0, 1024, 200}, mem_sig = {0.01, 0, 1, 1024, 0};
		int loaded = util > 0; /* what the capture says, read independently */
		assert_int_equal(gl_idlerule_classify(&o, &util_only), loaded ? GL_IDLERULE_BUSY : GL_IDLERULE_IDLE);
		/* without utilisation, power above 200 W decides (idle H100: ~70 W) */
		assert_int_equal(gl_idlerule_classify(&no_util, &power), pw >= 200 ? GL_IDLERULE_BUSY : GL_IDLERULE_IDLE);
		assert_int_equal(gl_idlerule_classify(&no_util, &util_only), GL_IDLERULE_IDLE);
		assert_int_equal(gl_idlerule_classify(&no_util, &mem_sig), mem >= 1024 ? GL_IDLERULE_BUSY : GL_IDLERULE_IDLE);
		assert_int_equal(pw >= 200, loaded);
		free(t);
	}
}

/* ---- table cases: rollup buckets, rules, grace, validation ---- */
static void test_classify_buckets(void **s)
{
	static const struct {
		struct gl_idlerule_obs o;
		int mem;
		enum gl_idlerule_state want;
	} c[] = {
		{{0, 300, 0, 0, 0, -1, -1, -1, -1}, 0, GL_IDLERULE_NODATA},
		{{0, 300, 10, 0, 10, -1, -1, -1, -1}, 0, GL_IDLERULE_NODATA},
		{{0, 300, 10, 1, 0, 0.0, -1, -1, -1}, 0, GL_IDLERULE_BUSY},
		{{0, 300, 10, 0, 0, 0.00006, -1, 40000, -1}, 0, GL_IDLERULE_IDLE},
		{{0, 300, 10, 0, 0, 0.00006, -1, 40000, -1}, 1, GL_IDLERULE_BUSY},
		{{0, 300, 10, 0, 0, 0.02, -1, 0, -1}, 0, GL_IDLERULE_BUSY},
		/* engine activity known: GPU_UTIL does not overrule it */
		{{0, 300, 10, 0, 0, 0.001, 100, 0, -1}, 0, GL_IDLERULE_IDLE},
		{{0, 300, 10, 0, 3, -1, 5, 0, -1}, 0, GL_IDLERULE_BUSY},
	};
	(void)s;
	for (size_t i = 0; i < GL_ARRAY_LEN(c); i++)
		assert_int_equal(gl_idlerule_classify(&c[i].o, c[i].mem ? &util_mem : &util_only), c[i].want);
}

static void test_rules_table(void **s)
{
	/* busy 0-30 min, idle 30-90, no data 90-100, idle 100-130; now = 130 min */
	const struct gl_idlerule_span sp[] = {
		{0, 1800, GL_IDLERULE_BUSY}, {1800, 3600, GL_IDLERULE_IDLE}, {5400, 600, GL_IDLERULE_NODATA}, {6000, 1800, GL_IDLERULE_IDLE},
	};
	struct gl_idlerule r = {GL_IDLERULE_RESET, 3600, 0, 5400, 0, 600, 1.0};
	struct gl_idlerule_gpu_eval ev;
	(void)s;
	gl_idlerule_eval_gpu(&r, sp, 4, 0, 7800, &ev);
	assert_int_equal(ev.idle_s, 5400); /* 60 + 30 min: the gap neither adds nor resets */
	assert_int_equal(ev.stage, GL_IDLERULE_STAGE_ACT);
	r.kind = GL_IDLERULE_SLIDING;
	gl_idlerule_eval_gpu(&r, sp, 4, 0, 7800, &ev);
	assert_int_equal(ev.idle_s, 1800); /* the gap broke the window */
	assert_int_equal(ev.stage, GL_IDLERULE_STAGE_NONE);
	r.kind = GL_IDLERULE_FIXED;
	gl_idlerule_eval_gpu(&r, sp, 4, 0, 7800, &ev);
	assert_int_equal(ev.idle_s, 0);
	/* with a grace covering the busy start, fixed counts the idle spans */
	r.grace_s = 1800;
	gl_idlerule_eval_gpu(&r, sp, 4, 0, 7800, &ev);
	assert_int_equal(ev.idle_s, 5400);
	assert_int_equal(ev.idle_total_s, 5400);
	assert_int_equal(ev.last_data_s, 7800);
	/* a span running past now is cut at now */
	gl_idlerule_eval_gpu(&r, sp, 4, 0, 7000, &ev);
	assert_int_equal(ev.idle_s, 3600 + 1000);
}

static void test_check(void **s)
{
	struct gl_idlerule ok = {GL_IDLERULE_FIXED, 3600, 6300, 7200, 0, 600, 1.0}, r;
	struct gl_err e = {0};
	enum gl_idlerule_kind k;
	enum gl_idlerule_stage st;
	(void)s;
	assert_int_equal(gl_idlerule_check(&ok, &e), 0);
	r = ok;
	r.t1_s = 7200;
	assert_int_equal(gl_idlerule_check(&r, &e), -GL_EINVAL);
	assert_non_null(strstr(e.msg, "t1_min"));
	r = ok;
	r.t2_s = 8000;
	assert_int_equal(gl_idlerule_check(&r, &e), -GL_EINVAL);
	r = ok;
	r.gpu_fraction = 0;
	assert_int_equal(gl_idlerule_check(&r, &e), -GL_EINVAL);
	assert_int_equal(gl_idlerule_kind_parse("sliding", &k), 0);
	assert_int_equal(k, GL_IDLERULE_SLIDING);
	assert_int_equal(gl_idlerule_kind_parse("Sliding", &k), -GL_EINVAL);
	assert_int_equal(gl_idlerule_stage_parse("warn2", &st), 0);
	assert_int_equal(st, GL_IDLERULE_STAGE_WARN2);
	assert_int_equal(gl_idlerule_cost_micros(3600, 2500000), 2500000);
	assert_int_equal(gl_idlerule_cost_micros(1, 1800), 1);   /* 0.5 rounds up */
	assert_int_equal(gl_idlerule_cost_micros(1, 1799), 0);
	assert_int_equal(gl_idlerule_cost_micros(100, -1), 0);
}

static void test_job_unseen_gpu(void **s)
{
	struct gl_idlerule r = {GL_IDLERULE_RESET, 60, 0, 120, 0, 600, 0.5};
	struct gl_idlerule_gpu_eval g[2] = {{GL_IDLERULE_STAGE_ACT, 600, 600, 1000, 0}, {GL_IDLERULE_STAGE_ACT, 600, 600, 1000, 0}};
	struct gl_idlerule_job_eval j;
	(void)s;
	gl_idlerule_eval_job(&r, g, 2, 2, &j);
	assert_int_equal(j.stage, GL_IDLERULE_STAGE_ACT);
	assert_int_equal(j.idle_gpu_s, 1200);
	/* the job has 4 GPUs, the exporter sees 2: unknown is not idle */
	gl_idlerule_eval_job(&r, g, 2, 4, &j);
	assert_true(j.no_data);
	assert_int_equal(j.stage, GL_IDLERULE_STAGE_NONE);
}

/* Idle cost across a rate change (the hook priced all of it at the rate in
 * force now). Job started at 900, grace 200 (counts from 1,100), now 2,100;
 * a100 at 3.60 an hour (1,000 micros a GPU-second) until 1,900, then 7.20
 * (2,000). Idle counted: 1,100-1,300 (200 s) and 1,600-1,900 (300 s) at
 * 1,000, 1,900-2,100 (200 s) at 2,000: 500,000 + 400,000 = 900,000 micros
 * (all 700 s at 7.20 would be 1,400,000). */
static void test_idle_cost_across_rate_change(void **s)
{
	const struct gl_idlerule r = {GL_IDLERULE_RESET, 30 * 60, 0, 60 * 60, 200, 600, 1.0};
	const struct gl_idlerule_span sp[] = {
		{1000, 300, GL_IDLERULE_IDLE}, {1300, 300, GL_IDLERULE_BUSY}, {1600, 600, GL_IDLERULE_IDLE}, {2200, 300, GL_IDLERULE_IDLE},
	};
	const struct gl_jobstats_rate rt[] = {{INT64_MIN, 1900LL * 1000000, 3600000}, {1900LL * 1000000, INT64_MAX, 7200000}};
	gl_cost_i128 num;
	(void)s;
	num = gl_idlerule_idle_cost_num(&r, sp, 4, 900, 2100, rt, 2);
	assert_int_equal((int64_t)((num + 1800000000) / 3600000000), 900000);
	/* no rate before 1,900: only the 200 s after it cost */
	num = gl_idlerule_idle_cost_num(&r, sp, 4, 900, 2100, rt + 1, 1);
	assert_int_equal((int64_t)((num + 1800000000) / 3600000000), 400000);
	assert_true(gl_idlerule_idle_cost_num(&r, sp, 4, 900, 2100, NULL, 0) == 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reset_alibaba),
		cmocka_unit_test(test_sliding_alibaba),
		cmocka_unit_test(test_fixed_alibaba),
		cmocka_unit_test(test_reset_alibaba_memory),
		cmocka_unit_test(test_sliding_alibaba_memory),
		cmocka_unit_test(test_memory_spares_alibaba),
		cmocka_unit_test(test_stale_alibaba),
		cmocka_unit_test(test_gpu_fraction_philly),
		cmocka_unit_test(test_classify_nvidia_smi),
		cmocka_unit_test(test_classify_buckets),
		cmocka_unit_test(test_rules_table),
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_job_unseen_gpu),
		cmocka_unit_test(test_idle_cost_across_rate_change),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
