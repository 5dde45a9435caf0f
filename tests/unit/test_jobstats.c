/* The report's per-job fold (domain/jobstats) and the binary COPY decoder
 * it is fed by: spans as PostgreSQL rounds them, costs split at rate
 * changes, top lists with their tie-break, failed-job waste, energy and
 * percentile_disc per owner and partition. Expected values are worked out
 * by hand in the comments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/db.h"
#include "gl/jobstats.h"

#include <stdio.h>
#include <string.h>

#define US 1000000LL

static void test_span_rounds_like_postgres(void **state)
{
	(void)state;
	assert_int_equal(gl_jobstats_span_s(0, 3600 * US), 3600);
	/* float8 -> int8 is rint: halves go to the even neighbour */
	assert_int_equal(gl_jobstats_span_s(0, US / 2), 0);
	assert_int_equal(gl_jobstats_span_s(0, 3 * US / 2), 2);
	assert_int_equal(gl_jobstats_span_s(0, 5 * US / 2), 2);
	assert_int_equal(gl_jobstats_span_s(0, 2 * US + 600000), 3);
	/* each side is a double of epoch seconds first (a step of ~0.24 us in
	 * 2026): a microsecond either side of the half still rounds its way */
	assert_int_equal(gl_jobstats_span_s(1793491200LL * US, 1793491200LL * US + 499999), 0);
	assert_int_equal(gl_jobstats_span_s(1793491200LL * US, 1793491200LL * US + 500001), 1);
	assert_int_equal(gl_jobstats_span_s(10 * US, 0), -10);
}

static void test_cost_split_at_rate_changes(void **state)
{
	/* 2.00 until t=3600 s, a gap, then 3.00 from 7200 s on */
	const struct gl_jobstats_rate r[] = {
		{INT64_MIN, 3600 * US, 2000000},
		{7200 * US, INT64_MAX, 3000000},
	};
	gl_cost_i128 num;
	(void)state;
	/* 2 GPUs from 1800 s to 9000 s: 1800 s at 2.00, 1800 s unpriced, 1800 s at 3.00 */
	num = gl_jobstats_cost_num(r, 2, 1800 * US, 9000 * US, 2000000);
	assert_true(num == (gl_cost_i128)2000000 * 2000000 * 1800 + (gl_cost_i128)3000000 * 2000000 * 1800);
	/* 2 GPUs x 0.5 h x 2.00 + 2 GPUs x 0.5 h x 3.00 = 5.00 */
	assert_true(num / GL_COST_MICRO_GPU_SECONDS_PER_GPU_HOUR == 5000000);
	/* wholly inside the gap: nothing; touching a bound: nothing */
	assert_true(gl_jobstats_cost_num(r, 2, 3600 * US, 7200 * US, 1000000) == 0);
	assert_true(gl_jobstats_cost_num(r, 0, 0, 9000 * US, 1000000) == 0);
}

static void test_failed_states(void **state)
{
	static const char *const yes[] = {"FAILED", "failed", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL",
					  "Failed extra words"};
	static const char *const no[] = {"COMPLETED", "CANCELLED by 0", "FAILEDX", "", "RUNNING", "PREEMPTED"};
	(void)state;
	for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
		assert_true(gl_jobstats_state_failed(yes[i]));
	for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
		assert_false(gl_jobstats_state_failed(no[i]));
}

static void test_percentile_disc(void **state)
{
	const int64_t v[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
	const int64_t one[] = {42};
	(void)state;
	/* the first value whose cumulative share reaches p: ceil(p * n) */
	assert_int_equal(gl_jobstats_percentile(v, 10, 0.5), 5);
	assert_int_equal(gl_jobstats_percentile(v, 10, 0.9), 9);
	assert_int_equal(gl_jobstats_percentile(v, 10, 0.99), 10);
	assert_int_equal(gl_jobstats_percentile(v, 3, 0.5), 2);
	assert_int_equal(gl_jobstats_percentile(one, 1, 0.5), 42);
	assert_int_equal(gl_jobstats_percentile(one, 1, 0.99), 42);
}

static struct gl_jobstats_job job(int64_t pk, uint32_t group, uint32_t part, int64_t cost, const char *state)
{
	static char ids[64][16];
	struct gl_jobstats_job j;
	memset(&j, 0, sizeof j);
	snprintf(ids[pk % 64], sizeof ids[0], "j%lld", (long long)pk);
	j.job_pk = pk;
	j.job_id = ids[pk % 64];
	j.cluster = "c";
	j.state = state;
	j.group = group;
	j.partition = part;
	j.gpu_micro = 1000000;
	j.alloc_us = 3600000000;
	j.cost_micros = cost;
	return j;
}

static void test_top_lists_keep_the_best_twenty(void **state)
{
	struct gl_jobstats st;
	(void)state;
	gl_jobstats_init(&st);
	/* costs 1..50 in a scrambled order, and a tie at 50 (pk 99 after pk 37) */
	for (int i = 0; i < 50; i++) {
		int64_t pk = (i * 37) % 50 + 1;
		struct gl_jobstats_job j = job(pk, 0, 0, pk, "COMPLETED");
		gl_jobstats_add(&st, &j);
	}
	{
		struct gl_jobstats_job j = job(99, 0, 0, 50, "COMPLETED");
		gl_jobstats_add(&st, &j);
	}
	assert_int_equal(st.n_top_cost, GL_JOBSTATS_TOP);
	assert_int_equal(st.top_cost[0].job_pk, 50);
	assert_int_equal(st.top_cost[1].job_pk, 99);
	assert_string_equal(st.top_cost[1].job_id, "j99");
	for (size_t i = 2; i < GL_JOBSTATS_TOP; i++)
		assert_int_equal(st.top_cost[i].cost_micros, 51 - (int64_t)i);
	/* nothing observed: no idle list */
	assert_int_equal(st.n_top_idle, 0);
	gl_jobstats_fini(&st);
}

static void test_idle_cost_only_for_observed_jobs(void **state)
{
	struct gl_jobstats st;
	struct gl_jobstats_job a = job(1, 0, 0, 1000000, "COMPLETED"), b = job(2, 0, 0, 9000000, "COMPLETED");
	(void)state;
	gl_jobstats_init(&st);
	/* a: observed, idle a quarter of its 3,600,000,000 micro-GPU-s -> 250,000 */
	a.observed = 1;
	a.idle_us = 900000000;
	/* b: dearer, but no exporter data */
	gl_jobstats_add(&st, &a);
	gl_jobstats_add(&st, &b);
	assert_int_equal(st.n_top_idle, 1);
	assert_int_equal(st.top_idle[0].job_pk, 1);
	assert_int_equal(st.top_idle[0].idle_micros, 250000);
	assert_int_equal(st.top_idle[0].idle_s, 900);
	assert_int_equal(st.top_cost[0].job_pk, 2);
	gl_jobstats_fini(&st);
}

static void test_fold_groups_into_owners(void **state)
{
	struct gl_jobstats st;
	/* groups 0 and 2 are owner 0, group 1 is owner 1; partitions 0 and 1 */
	const uint32_t owner_of[] = {0, 1, 0};
	struct gl_jobstats_owner own[2], part[2];
	static const struct {
		uint32_t g, p;
		const char *state;
		int64_t wait, energy;
	} in[] = {
		{0, 0, "FAILED", 10, -1}, {2, 0, "TIMEOUT", 30, 5}, {2, 1, "COMPLETED", 20, 7},
		{1, 1, "CANCELLED by 0", 40, -1}, {1, 1, "NODE_FAIL", -1, -1},
	};
	(void)state;
	gl_jobstats_init(&st);
	for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) {
		struct gl_jobstats_job j = job((int64_t)i + 1, in[i].g, in[i].p, 100 * ((int64_t)i + 1), in[i].state);
		j.alloc_us = 1500000 * ((int64_t)i + 1);
		j.has_wait = in[i].wait >= 0;
		j.wait_s = in[i].wait;
		j.has_energy = in[i].energy >= 0;
		j.energy_mj = in[i].energy;
		gl_jobstats_add(&st, &j);
	}
	gl_jobstats_fold(&st, owner_of, 2, own, 2, part);
	/* owner 0 failed: jobs 1 and 2: 1.5 s + 3.0 s = 4.5 -> 5 (half up); 100 + 200 */
	assert_int_equal(own[0].failed_s, 5);
	assert_int_equal(own[0].failed_micros, 300);
	/* owner 1 failed: job 5 (NODE_FAIL), not job 4 (CANCELLED): 7.5 s -> 8 */
	assert_int_equal(own[1].failed_s, 8);
	assert_int_equal(own[1].failed_micros, 500);
	assert_true(own[0].has_energy);
	assert_int_equal(own[0].energy_mj, 12);
	assert_false(own[1].has_energy);
	/* waits: owner 0 {10, 20, 30}, owner 1 {40}; partition 0 {10, 30}, 1 {20, 40} */
	assert_int_equal(own[0].n_waits, 3);
	assert_int_equal(own[0].p50_s, 20);
	assert_int_equal(own[0].p90_s, 30);
	assert_int_equal(own[1].n_waits, 1);
	assert_int_equal(own[1].p99_s, 40);
	assert_int_equal(part[0].n_waits, 2);
	assert_int_equal(part[0].p50_s, 10);
	assert_int_equal(part[0].p99_s, 30);
	assert_int_equal(part[1].p50_s, 20);
	gl_jobstats_fini(&st);
}

static void test_copy_decode(void **state)
{
	/* header (no extension) + a row of (int8 7, NULL, text "ab"); then the trailer */
	static const char msg[] = "PGCOPY\n\377\r\n\0"
				  "\0\0\0\0"
				  "\0\0\0\0"
				  "\0\3"
				  "\0\0\0\10\0\0\0\0\0\0\0\7"
				  "\377\377\377\377"
				  "\0\0\0\2ab";
	static const char trailer[] = "\377\377";
	struct gl_db_field f[4];
	int header = 0;
	(void)state;
	assert_int_equal(gl_db_copy_decode(msg, sizeof msg - 1, &header, f, 4), 3);
	assert_int_equal(header, 1);
	assert_int_equal(gl_db_field_int(&f[0]), 7);
	assert_int_equal(f[1].len, -1);
	assert_int_equal(f[2].len, 2);
	assert_memory_equal(f[2].p, "ab", 2);
	assert_int_equal(gl_db_copy_decode(trailer, 2, &header, f, 4), 0);
	/* a row cut short, a length past the end, too many fields, no signature */
	assert_int_equal(gl_db_copy_decode(msg + 19, sizeof msg - 1 - 19 - 1, &header, f, 4), -1);
	assert_int_equal(gl_db_copy_decode(msg + 19, 8, &header, f, 4), -1);
	assert_int_equal(gl_db_copy_decode(msg + 19, sizeof msg - 1 - 19, &header, f, 2), -1);
	header = 0;
	assert_int_equal(gl_db_copy_decode(msg + 1, sizeof msg - 2, &header, f, 4), -1);
	/* a timestamptz: 2000-01-01 + 1 s, and the infinities */
	{
		const char ts[8] = {0, 0, 0, 0, 0, 0x0f, 0x42, 0x40};
		const char inf[8] = {0x7f, -1, -1, -1, -1, -1, -1, -1};
		struct gl_db_field t = {ts, 8}, i = {inf, 8};
		assert_int_equal(gl_db_field_ts_us(&t), 946684801LL * US);
		assert_true(gl_db_field_ts_us(&i) == INT64_MAX);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_span_rounds_like_postgres),
		cmocka_unit_test(test_cost_split_at_rate_changes),
		cmocka_unit_test(test_failed_states),
		cmocka_unit_test(test_percentile_disc),
		cmocka_unit_test(test_top_lists_keep_the_best_twenty),
		cmocka_unit_test(test_idle_cost_only_for_observed_jobs),
		cmocka_unit_test(test_fold_groups_into_owners),
		cmocka_unit_test(test_copy_decode),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
