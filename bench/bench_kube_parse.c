/* bench_kube_parse — parse time and peak memory of gl_kube_parse() on a
 * SYNTHETIC 50,000-pod PodList resampled from the openb trace snapshots
 * (tests/fixtures/kube/openb-at-*.json, themselves derived from the Alibaba
 * trace). Pods are drawn with a fixed seed, given fresh uids/names and written
 * into one in-memory document the way `kubectl get pods -A -o json` prints it
 * (4-space indentation), so the sizes are realistic. Run from the repo root.
 * Prints markdown table rows for bench/run.sh. */
#include "gl/kube.h"
#include "lib/testlib.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NPODS 50000

static long vm_kib(const char *key)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long v = -1;
	size_t kl = strlen(key);

	if (!f)
		return -1;
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, key, kl) && line[kl] == ':')
			v = atol(line + kl + 1);
	fclose(f);
	return v;
}

/* Resets the high-water mark so the parse's own peak is measured, not the
 * document build's (Linux >= 4.0; failure just makes the figure pessimistic). */
static void reset_hwm(void)
{
	FILE *f = fopen("/proc/self/clear_refs", "w");
	if (f) {
		fputs("5", f);
		fclose(f);
	}
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(void)
{
	struct gl_kube_result r;
	struct gl_err err = {0};
	size_t len;
	char *doc;
	long hwm_before, hwm_after;
	double t0, t1;

	doc = gl_test_kube_synth_doc(NPODS, &len);

	/* hand the build's freed heap back so the parse cannot hide in it */
	malloc_trim(0);
	reset_hwm();
	hwm_before = vm_kib("VmHWM");
	{
		long rss = vm_kib("VmRSS");
		if (rss > hwm_before)
			hwm_before = rss;
	}
	t0 = now_ms();
	if (gl_kube_parse(doc, len, NULL, &r, &err) != 0) {
		fprintf(stderr, "bench_kube_parse: %s\n", err.msg);
		return 1;
	}
	t1 = now_ms();
	hwm_after = vm_kib("VmHWM");
	{
		double ms = t1 - t0, doc_kib = len / 1024.0;
		double ratio = hwm_after > 0 && hwm_before > 0 ? (hwm_after - hwm_before) / doc_kib : -1;
		fprintf(stderr, "# %zu items, %zu GPU pods, %zu non-GPU, document %.1f MiB, %.0f pods/s, "
				"peak RSS +%.1f MiB during parse (process peak %.1f MiB incl. the document)\n",
			r.nitems, r.npods, r.skipped_no_gpu, len / 1048576.0,
			r.nitems / (ms / 1e3), (hwm_after - hwm_before) / 1024.0, hwm_after / 1024.0);
		printf("| kube PodList parse (synthetic 50k pods) | %.0f ms | - | - |\n", ms);
		printf("| kube parse throughput | %.0f pods/s | - | - |\n", r.nitems / (ms / 1e3));
		printf("| kube parse peak RSS / document size | %.1fx | 10x (target) | %.2f |\n", ratio,
		       ratio / 10.0);
	}
	gl_kube_result_fini(&r);
	free(doc);
	return 0;
}
