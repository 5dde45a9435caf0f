/* The busy share of duty-cycle samples (src/domain/busyshare.c).
 *
 * The synthetic series are HAND-WRITTEN here (a kernel timeline and how
 * nvidia-smi samples it); the real series is the Alibaba GenAI pod duty
 * cycle (tests/fixtures/idle/README.md), checked against a naive sum done
 * here. The old exporter rule (a bucket with any non-zero sample is busy) is
 * run on the same samples to show what the duty-cycle rule changes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/busyshare.h"
#include "gl/dcgm.h"
#include "lib/testlib.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct gl_busyshare_params k_params = {60000, 1024};

/* HAND-WRITTEN: the case, 30 s samples at 50 % for a day. */
static void test_constant_half(void **state)
{
	struct gl_busyshare b;
	double r;
	(void)state;
	gl_busyshare_init(&b);
	for (int64_t t = 0; t <= 86400; t += 30)
		assert_int_equal(gl_busyshare_add(&b, &k_params, t * 1000, 0.50, 40000), 0);
	assert_int_equal(gl_busyshare_ratio(&b, &r), 0);
	assert_true(fabs(r - 0.50) <= 0.02);
	assert_int_equal(b.covered_ms, 86400 * 1000);
	assert_int_equal(b.busy_ms + b.idle_ms + b.nodata_ms, b.covered_ms);
	/* half of the day had memory held and no kernel */
	assert_int_equal(b.held_idle_ms, b.idle_ms);
}

/* A deterministic kernel timeline: on and off bursts of 0.1 to 20 s, drawn
 * so that kernels run half of the time overall. */
static uint64_t lcg(uint64_t *s)
{
	*s = *s * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
	return *s >> 33;
}

#define DAY_MS (86400 * 1000)

static void timeline(unsigned char *on, size_t n_ms, uint64_t seed)
{
	size_t t = 0;
	int state = 0;
	while (t < n_ms) {
		size_t len = 100 + (size_t)(lcg(&seed) % 19900);
		for (size_t i = t; i < t + len && i < n_ms; i++)
			on[i] = (unsigned char)state;
		t += len;
		state = !state;
	}
}

/* HAND-WRITTEN: what nvidia-smi prints every 30 s for that GPU: the share of
 * its last 1 s sample period with a kernel running, in whole percent
 * (nvidia-smi --help-query-gpu: "percent of time over the past sample
 * period ... between 1 second and 1/6 second"). */
static void test_sampled_half_duty(void **state)
{
	unsigned char *on = malloc(DAY_MS);
	struct gl_busyshare b;
	struct gl_dcgm_bucket bk;
	static const struct gl_dcgm_idle_policy pol = GL_DCGM_IDLE_POLICY_DEFAULT;
	int64_t truth = 0, buckets = 0, busy_buckets = 0;
	double r;
	(void)state;

	assert_non_null(on);
	timeline(on, DAY_MS, 42);
	for (size_t i = 0; i < DAY_MS; i++)
		truth += on[i];
	/* the timeline itself is about half busy */
	assert_true(fabs((double)truth / DAY_MS - 0.5) < 0.02);

	gl_busyshare_init(&b);
	gl_dcgm_bucket_init(&bk, 30, 300);
	for (int64_t t = 30; t < 86400; t += 30) {
		int64_t run = 0;
		struct gl_dcgm_reading rd = {{0}, 0};
		for (int64_t k = t * 1000 - 1000; k < t * 1000; k++)
			run += on[k];
		rd.v[GL_DCGM_GPU_UTIL] = (double)(run / 10); /* whole percent */
		rd.have = 1u << GL_DCGM_GPU_UTIL;
		assert_int_equal(gl_busyshare_add(&b, &k_params, t * 1000, rd.v[GL_DCGM_GPU_UTIL] / 100.0, -1), 0);
		/* the exporter rollup's rule on the same samples: 5 min buckets */
		if (t - bk.start_s >= 300) {
			int idle;
			if (gl_dcgm_bucket_is_idle(&bk, &idle) == 0) {
				buckets++;
				busy_buckets += !idle;
			}
			gl_dcgm_bucket_next(&bk, &bk, t);
		}
		assert_int_equal(gl_dcgm_bucket_add(&bk, &pol, t, &rd), 0);
	}
	assert_int_equal(gl_busyshare_ratio(&b, &r), 0);
	printf("duty-cycle rule: %.4f busy; bucket rule: %lld of %lld buckets busy\n", r, (long long)busy_buckets,
	       (long long)buckets);
	assert_true(fabs(r - 0.50) <= 0.02);
	/* ... where "any busy sample makes the bucket busy" calls it almost
	 * always busy: the reason the duty cycle is read as a share */
	assert_true((double)busy_buckets / (double)buckets > 0.9);
	free(on);
}

/* HAND-WRITTEN: the cover rule and the edges. */
static void test_rules(void **state)
{
	struct gl_busyshare b;
	double r;
	(void)state;

	gl_busyshare_init(&b);
	assert_int_equal(gl_busyshare_ratio(&b, &r), -GL_ENOTFOUND);
	/* the first sample covers nothing */
	assert_int_equal(gl_busyshare_add(&b, &k_params, 1000, 1.0, -1), 0);
	assert_int_equal(b.covered_ms, 0);
	/* 30 s at 100 % */
	assert_int_equal(gl_busyshare_add(&b, &k_params, 31000, 1.0, -1), 0);
	assert_int_equal(b.busy_ms, 30000);
	/* a 10 min silence: only max_gap (60 s) is observed, at 25 % */
	assert_int_equal(gl_busyshare_add(&b, &k_params, 631000, 0.25, -1), 0);
	assert_int_equal(b.covered_ms, 90000);
	assert_int_equal(b.busy_ms, 45000);
	assert_int_equal(b.idle_ms, 45000);
	/* no duty value: no data, never idle */
	assert_int_equal(gl_busyshare_add(&b, &k_params, 661000, NAN, 50000), 0);
	assert_int_equal(gl_busyshare_add(&b, &k_params, 691000, -1, 50000), 0);
	assert_int_equal(b.nodata_ms, 60000);
	assert_int_equal(b.held_idle_ms, 0);
	/* a repeat or an older sample is refused and counts nothing */
	assert_int_equal(gl_busyshare_add(&b, &k_params, 691000, 1.0, -1), -GL_EINVAL);
	assert_int_equal(gl_busyshare_add(&b, &k_params, 5000, 1.0, -1), -GL_EINVAL);
	assert_int_equal(b.rejected, 2);
	/* above 1 is 1; memory held while idle */
	assert_int_equal(gl_busyshare_add(&b, &k_params, 701000, 7.0, 50000), 0);
	assert_int_equal(b.busy_ms, 55000);
	assert_int_equal(gl_busyshare_add(&b, &k_params, 711000, 0.0, 50000), 0);
	assert_int_equal(b.held_idle_ms, 10000);
	/* rounding once per sample keeps the parts equal to the whole */
	assert_int_equal(gl_busyshare_add(&b, &k_params, 711333, 1.0 / 3.0, -1), 0);
	assert_int_equal(b.busy_ms + b.idle_ms + b.nodata_ms, b.covered_ms);
	assert_int_equal(b.samples, 8);
	assert_int_equal(gl_busyshare_ratio(&b, &r), 0);
}

/* Real: the Alibaba GenAI duty-cycle series, one sample every 57 s with
 * gaps, against the same sum done naively here. */
static void test_alibaba_series(void **state)
{
	char *buf = gl_test_read_file(gl_test_fixture("tests/fixtures/idle/alibaba_genai_pod_duty_mem.csv"), NULL);
	char *save = NULL, *line, pod[16] = "";
	struct gl_busyshare b;
	const struct gl_busyshare_params p = {120000, 1024};
	double want_busy = 0, want_cov = 0, want_held = 0, last_t = -1;
	int pods = 0;
	(void)state;

	gl_busyshare_init(&b);
	line = strtok_r(buf, "\n", &save); /* header */
	for (line = strtok_r(NULL, "\n", &save);; line = strtok_r(NULL, "\n", &save)) {
		char name[16] = "", mem[64] = "";
		long long t = 0;
		double duty = 0, mib;
		if (line && sscanf(line, "%15[^,],%lld,%lf,%63s", name, &t, &duty, mem) < 3)
			fail_msg("bad fixture line %s", line);
		if (!line || strcmp(name, pod)) {
			if (pod[0]) {
				/* the pod is done: compare */
				if (llabs(b.busy_ms - llround(want_busy)) > (long long)b.samples ||
				    b.covered_ms != llround(want_cov) || llabs(b.held_idle_ms - llround(want_held)) > (long long)b.samples)
					fail_msg("pod %s: busy %lld want %.0f, covered %lld want %.0f, held %lld want %.0f", pod,
						 (long long)b.busy_ms, want_busy, (long long)b.covered_ms, want_cov,
						 (long long)b.held_idle_ms, want_held);
				pods++;
			}
			if (!line)
				break;
			snprintf(pod, sizeof pod, "%s", name);
			gl_busyshare_init(&b);
			want_busy = want_cov = want_held = 0;
			last_t = -1;
		}
		mib = mem[0] ? atof(mem) / 1048576.0 : -1;
		assert_int_equal(gl_busyshare_add(&b, &p, t * 1000, duty / 100.0, mib), 0);
		if (last_t >= 0) {
			double dt = fmin((double)(t - last_t) * 1000, 120000);
			want_cov += dt;
			want_busy += dt * duty / 100.0;
			if (mib >= 1024)
				want_held += dt * (1 - duty / 100.0);
		}
		last_t = (double)t;
	}
	assert_int_equal(pods, 10);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_constant_half),
		cmocka_unit_test(test_sampled_half_duty),
		cmocka_unit_test(test_rules),
		cmocka_unit_test(test_alibaba_series),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
