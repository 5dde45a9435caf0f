/* bench_kube_parse — parse time and peak memory of gl_kube_parse() on a
 * SYNTHETIC 50,000-pod PodList resampled from the openb trace snapshots
 * (tests/fixtures/kube/openb-at-*.json, themselves derived from the Alibaba
 * trace). Pods are drawn with a fixed seed, given fresh uids/names and written
 * into one in-memory document the way `kubectl get pods -A -o json` prints it
 * (4-space indentation), so the sizes are realistic. Run from the repo root.
 * Prints markdown table rows for bench/run.sh. */
#include "gl/kube.h"
#include "gl/strbuf.h"
#include "lib/testlib.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FIXDIR "tests/fixtures/kube"
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
	cJSON *templates = cJSON_CreateArray(), *list, *items;
	struct gl_strbuf doc = GL_STRBUF_INIT;
	struct gl_kube_result r;
	struct gl_err err = {0};
	DIR *d = opendir(FIXDIR);
	struct dirent *de;
	int ntpl;
	unsigned long long rng = 0x9e3779b97f4a7c15ULL;
	long hwm_before, hwm_after;
	double t0, t1;
	char *text;

	if (!d) {
		fprintf(stderr, "bench_kube_parse: %s: run from the repo root\n", FIXDIR);
		return 1;
	}
	while ((de = readdir(d))) {
		char path[512], *buf;
		size_t len;
		cJSON *root, *it;
		if (strncmp(de->d_name, "openb-at-", 9))
			continue;
		snprintf(path, sizeof path, FIXDIR "/%s", de->d_name);
		buf = gl_test_read_file(path, &len);
		root = cJSON_ParseWithLength(buf, len);
		cJSON_ArrayForEach(it, cJSON_GetObjectItem(root, "items"))
			cJSON_AddItemToArray(templates, cJSON_Duplicate(it, 1));
		cJSON_Delete(root);
		free(buf);
	}
	closedir(d);
	ntpl = cJSON_GetArraySize(templates);
	if (ntpl == 0) {
		fprintf(stderr, "bench_kube_parse: no snapshots in %s\n", FIXDIR);
		return 1;
	}

	list = cJSON_CreateObject();
	cJSON_AddStringToObject(list, "apiVersion", "v1");
	cJSON_AddStringToObject(list, "kind", "List");
	items = cJSON_AddArrayToObject(list, "items");
	for (int i = 0; i < NPODS; i++) {
		cJSON *pod, *meta;
		char uid[40], name[32];
		rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
		pod = cJSON_Duplicate(cJSON_GetArrayItem(templates, (int)((rng >> 33) % (unsigned)ntpl)), 1);
		meta = cJSON_GetObjectItem(pod, "metadata");
		snprintf(uid, sizeof uid, "%08x-5e17-4000-8000-%012x", i, i);
		snprintf(name, sizeof name, "synth-pod-%06d", i);
		cJSON_ReplaceItemInObject(meta, "uid", cJSON_CreateString(uid));
		cJSON_ReplaceItemInObject(meta, "name", cJSON_CreateString(name));
		cJSON_AddItemToArray(items, pod);
	}
	text = cJSON_Print(list); /* tab-indented; kubectl uses 4 spaces: re-indent */
	cJSON_Delete(list);
	cJSON_Delete(templates);
	for (char *p = text; *p; p++) {
		if (*p == '\t')
			gl_strbuf_puts(&doc, "    ");
		else
			gl_strbuf_putc(&doc, *p);
	}
	free(text);

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
	if (gl_kube_parse(doc.p, doc.len, NULL, &r, &err) != 0) {
		fprintf(stderr, "bench_kube_parse: %s\n", err.msg);
		return 1;
	}
	t1 = now_ms();
	hwm_after = vm_kib("VmHWM");
	{
		double ms = t1 - t0, doc_kib = doc.len / 1024.0;
		double ratio = hwm_after > 0 && hwm_before > 0 ? (hwm_after - hwm_before) / doc_kib : -1;
		fprintf(stderr, "# %zu items, %zu GPU pods, %zu non-GPU, document %.1f MiB, %.0f pods/s, "
				"peak RSS +%.1f MiB during parse (process peak %.1f MiB incl. the document)\n",
			r.nitems, r.npods, r.skipped_no_gpu, doc.len / 1048576.0,
			r.nitems / (ms / 1e3), (hwm_after - hwm_before) / 1024.0, hwm_after / 1024.0);
		printf("| kube PodList parse (synthetic 50k pods) | %.0f ms | - | - |\n", ms);
		printf("| kube parse throughput | %.0f pods/s | - | - |\n", r.nitems / (ms / 1e3));
		printf("| kube parse peak RSS / document size | %.1fx | 10x (target) | %.2f |\n", ratio,
		       ratio / 10.0);
	}
	gl_kube_result_fini(&r);
	gl_strbuf_fini(&doc);
	return 0;
}
