/* Benchmark: the nvidia-smi CSV parser on one core, a fleet of 10,000 GPUs
 * sampled every 30 s.
 *
 * Input: SYNTHETIC, built in memory from the real H100 load row of
 * tests/fixtures/nvsmi/h100_query_gpu.csv: the query
 * `--query-gpu=timestamp,uuid,index,name,pci.bus_id,utilization.gpu,
 * utilization.memory,memory.used,memory.total,power.draw,enforced.power.limit
 * --format=csv` with that row's values (units as nvidia-smi prints them),
 * one row per GPU and 30 s round, UUID, index and timestamp varied, as
 * `-l 30` output of the fleet's nodes concatenated.
 *
 * A "sample" is one metric value delivered into a reading (utilization.gpu,
 * utilization.memory, memory.used, power.draw: 4 a row), as a Prometheus
 * sample is one value. Usage: bench_nvsmi [gpus] [rounds] [seconds]. Prints
 * markdown rows.
 */
#include "gl/nvsmi.h"
#include "gl/strbuf.h"
#include "lib/testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* CPU time of this thread: a core's throughput, whatever else the machine runs. */
static double cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void build(struct gl_strbuf *b, int gpus, int rounds)
{
	gl_strbuf_puts(b, "timestamp, uuid, index, name, pci.bus_id, utilization.gpu [%], utilization.memory [%], "
			  "memory.used [MiB], memory.total [MiB], power.draw [W], enforced.power.limit [W]\n");
	for (int r = 0; r < rounds; r++) {
		int s = 38 + r * 30;
		for (int g = 0; g < gpus; g++)
			gl_strbuf_printf(b,
					 "2026/07/14 08:%02d:%02d.%03d, GPU-%08x-0000-0000-0000-%012x, %d, NVIDIA H100 80GB HBM3, "
					 "00000000:%02X:00.0, %d %%, %d %%, %d MiB, 81559 MiB, %d.%02d W, 700.00 W\n",
					 12 + s / 60, s % 60, 353 + g % 600, g, g, g % 8, g % 256, (g * 37 + r) % 101, 11 + g % 7,
					 19818 - g % 1000, 600 + g % 90, g % 100);
	}
}

int main(int argc, char **argv)
{
	int gpus = argc > 1 ? atoi(argv[1]) : 10000, rounds = argc > 2 ? atoi(argv[2]) : 20;
	double secs = argc > 3 ? atof(argv[3]) : 3.0, best = 1e30, t0;
	struct gl_strbuf csv = GL_STRBUF_INIT;
	size_t values = 0, rows = 0;
	int iters = 0;

	build(&csv, gpus, rounds);
	t0 = gl_test_now_s();
	do {
		struct gl_nvsmi_result r;
		struct gl_err err = {0};
		double a = cpu_now(), t;
		if (gl_nvsmi_parse_csv(csv.p, csv.len, NULL, &r, &err) != 0 || r.nproblems || (int)r.ngpus != gpus) {
			fprintf(stderr, "bench_nvsmi: parse failed: %s (%zu problems)\n", err.msg, r.nproblems);
			return 1;
		}
		values = r.values;
		rows = r.nsamples;
		gl_nvsmi_result_fini(&r);
		t = cpu_now() - a;
		if (t < best)
			best = t;
		iters++;
	} while (gl_test_now_s() - t0 < secs || iters < 3);
	fprintf(stderr, "bench_nvsmi: %d GPUs x %d rounds, %.1f MB, %zu rows, %zu values, best of %d runs %.3f s\n", gpus,
		rounds, (double)csv.len / 1e6, rows, values, iters, best);
	printf("| nvidia-smi CSV parse, 10,000 GPUs x %d rounds of 30 s (synthetic from the real H100 row), 1 core | "
	       "%.2f M samples/s (%.2f M rows/s, %.0f MB/s) | 2 M samples/s/core (issue 27) | %.2f |\n",
	       rounds, values / best / 1e6, rows / best / 1e6, csv.len / best / 1e6, values / best / 2e6);
	gl_strbuf_fini(&csv);
	return 0;
}
