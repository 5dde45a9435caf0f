/* openb_to_podlist — turn the Alibaba GPU trace v2023 ("openb") pod list into
 * `kubectl get pods -A -o json` snapshots at chosen instants, so the kube
 * parser can be tested on real workload shapes (fractional GPUs, pending pods,
 * churn). Not built by the Makefile; build and run from the repo root:
 *
 *   mkdir -p build/tools && cc -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra \
 *       -o build/tools/openb_to_podlist tests/tools/openb_to_podlist.c
 *   build/tools/openb_to_podlist CSV OUTDIR [INSTANT...]
 *
 * INSTANT is in trace seconds; without any, five instants are taken at the
 * 10/30/50/70/90th percentiles of creation_time (the trace is quiet for its
 * first two months, so evenly spaced instants would see almost nothing).
 * Writes OUTDIR/openb-at-<INSTANT>.json, one pod per line.
 *
 * The model (tests/fixtures/kube/README.md repeats it; test_kube.c recomputes
 * the expected totals from the CSV with the same rules):
 * - trace second s is OPENB_EPOCH + s (the trace publishes no wall clock);
 * - absent before creation_time;
 * - Pending from creation_time until scheduled_time (for ever when empty);
 * - Running from scheduled_time until deletion_time, on a synthetic node;
 * - at deletion_time a pod whose final pod_phase is Succeeded/Failed shows that
 *   phase (finishedAt = deletion_time) for OPENB_LINGER_S more seconds, as
 *   finished pods do until garbage collection; every other pod vanishes.
 * - num_gpu x gpu_milli is written three ways in turn (row index mod 3):
 *   Alibaba annotations (alibabacloud.com/gpu-milli + gpu-count), a milli
 *   quantity limit ("460m"), a decimal quantity limit ("0.460"). Whole GPUs
 *   use nvidia.com/gpu: N (plus the annotations on every third pod).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define OPENB_EPOCH 1672531200LL /* 2023-01-01T00:00:00Z */
#define OPENB_LINGER_S 86400LL
#define MAX_PODS 100000

struct pod {
	char name[64], qos[32], spec[64], phase[16];
	long cpu_milli, mem_mib, num_gpu, gpu_milli;
	long long created, deleted, scheduled; /* scheduled -1 = never */
};

static void ts(char *buf, size_t n, long long trace_s)
{
	time_t t = (time_t)(OPENB_EPOCH + trace_s);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int split(char *line, char **f, int max)
{
	int n = 0;
	char *p = line;
	line[strcspn(line, "\r\n")] = '\0';
	while (n < max) {
		f[n++] = p;
		p = strchr(p, ',');
		if (!p)
			break;
		*p++ = '\0';
	}
	return n;
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;
	return (x > y) - (x < y);
}

/* Writes one pod as it looks at instant t; returns 0 when it is absent. */
static int write_pod(FILE *o, const struct pod *p, size_t idx, long long t, int first)
{
	const char *phase;
	char c[32], s[32], d[32];
	int running = 0, done = 0, scheduled;

	if (t < p->created)
		return 0;
	scheduled = p->scheduled >= 0 && t >= p->scheduled;
	if (t < p->deleted) {
		phase = scheduled ? "Running" : "Pending";
		running = scheduled;
	} else if ((!strcmp(p->phase, "Succeeded") || !strcmp(p->phase, "Failed")) &&
		   t < p->deleted + OPENB_LINGER_S) {
		phase = p->phase;
		done = 1;
	} else {
		return 0;
	}
	ts(c, sizeof c, p->created);
	ts(s, sizeof s, p->scheduled >= 0 ? p->scheduled : 0);
	ts(d, sizeof d, p->deleted);

	fprintf(o, "%s\n{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"openb\","
		   "\"uid\":\"%08zx-0b0e-4000-8000-%012zx\",\"creationTimestamp\":\"%s\","
		   "\"labels\":{\"app.kubernetes.io/part-of\":\"openb-trace\",\"qos\":\"%s\"}",
		first ? "" : ",", p->name, idx, idx, c, p->qos);
	if (p->num_gpu > 0 && (idx % 3 == 0 || p->spec[0])) {
		const char *sep = "";
		fputs(",\"annotations\":{", o);
		if (idx % 3 == 0) {
			fprintf(o, "\"alibabacloud.com/gpu-milli\":\"%ld\",\"alibabacloud.com/gpu-count\":\"%ld\"",
				p->gpu_milli, p->num_gpu);
			sep = ",";
		}
		if (p->spec[0])
			fprintf(o, "%s\"alibabacloud.com/gpu-card-model\":\"%s\"", sep, p->spec);
		fputc('}', o);
	}
	fprintf(o, "},\"spec\":{");
	if (scheduled)
		fprintf(o, "\"nodeName\":\"openb-node-%04zu\",", idx % 1213);
	fprintf(o, "\"restartPolicy\":\"Never\",\"schedulerName\":\"default-scheduler\","
		   "\"containers\":[{\"name\":\"main\",\"image\":\"tensorflow:latest\",\"resources\":{");
	{
		char gpu[64] = "";
		if (p->num_gpu > 0 && p->gpu_milli >= 1000)
			snprintf(gpu, sizeof gpu, ",\"nvidia.com/gpu\":\"%ld\"", p->num_gpu);
		else if (p->num_gpu > 0 && idx % 3 == 1)
			snprintf(gpu, sizeof gpu, ",\"nvidia.com/gpu\":\"%ldm\"", p->num_gpu * p->gpu_milli);
		else if (p->num_gpu > 0 && idx % 3 == 2)
			snprintf(gpu, sizeof gpu, ",\"nvidia.com/gpu\":\"%ld.%03ld\"",
				 p->num_gpu * p->gpu_milli / 1000, p->num_gpu * p->gpu_milli % 1000);
		fprintf(o, "\"limits\":{\"cpu\":\"%ldm\",\"memory\":\"%ldMi\"%s},"
			   "\"requests\":{\"cpu\":\"%ldm\",\"memory\":\"%ldMi\"%s}}}]},",
			p->cpu_milli, p->mem_mib, gpu, p->cpu_milli, p->mem_mib, gpu);
	}
	fprintf(o, "\"status\":{\"phase\":\"%s\",\"qosClass\":\"%s\",\"conditions\":[", phase,
		p->qos);
	if (scheduled)
		fprintf(o, "{\"type\":\"PodScheduled\",\"status\":\"True\",\"lastTransitionTime\":\"%s\"}", s);
	else
		fprintf(o, "{\"type\":\"PodScheduled\",\"status\":\"False\",\"reason\":\"Unschedulable\","
			   "\"lastTransitionTime\":\"%s\"}", c);
	fputc(']', o);
	if (scheduled) {
		fprintf(o, ",\"startTime\":\"%s\",\"containerStatuses\":[{\"name\":\"main\",\"ready\":%s,"
			   "\"restartCount\":0,\"state\":",
			s, running ? "true" : "false");
		if (done)
			fprintf(o, "{\"terminated\":{\"exitCode\":%d,\"reason\":\"%s\",\"startedAt\":\"%s\","
				   "\"finishedAt\":\"%s\"}}}]",
				strcmp(p->phase, "Succeeded") ? 1 : 0,
				strcmp(p->phase, "Succeeded") ? "Error" : "Completed", s, d);
		else
			fprintf(o, "{\"running\":{\"startedAt\":\"%s\"}}}]", s);
	}
	fputs("}}", o);
	return 1;
}

int main(int argc, char **argv)
{
	static struct pod pods[MAX_PODS];
	static long long created[MAX_PODS];
	long long instants[64];
	size_t npods = 0, ninst = 0;
	char line[1024];
	char *f[16];
	FILE *in;

	if (argc < 3) {
		fprintf(stderr, "usage: %s CSV OUTDIR [INSTANT...]\n", argv[0]);
		return 2;
	}
	in = fopen(argv[1], "r");
	if (!in) {
		perror(argv[1]);
		return 1;
	}
	if (!fgets(line, sizeof line, in) || strncmp(line, "name,cpu_milli,memory_mib,num_gpu,gpu_milli,", 44)) {
		fprintf(stderr, "%s: not an openb pod list\n", argv[1]);
		return 1;
	}
	while (fgets(line, sizeof line, in) && npods < MAX_PODS) {
		struct pod *p = &pods[npods];
		if (split(line, f, 16) != 11) {
			fprintf(stderr, "%s: line %zu: want 11 columns\n", argv[1], npods + 2);
			return 1;
		}
		snprintf(p->name, sizeof p->name, "%s", f[0]);
		p->cpu_milli = atol(f[1]);
		p->mem_mib = atol(f[2]);
		p->num_gpu = atol(f[3]);
		p->gpu_milli = atol(f[4]);
		snprintf(p->spec, sizeof p->spec, "%s", f[5]);
		snprintf(p->qos, sizeof p->qos, "%s", f[6]);
		snprintf(p->phase, sizeof p->phase, "%s", f[7]);
		p->created = atoll(f[8]);
		p->deleted = atoll(f[9]);
		p->scheduled = f[10][0] ? atoll(f[10]) : -1;
		created[npods] = p->created;
		npods++;
	}
	fclose(in);
	if (npods == 0) {
		fprintf(stderr, "%s: no pods\n", argv[1]);
		return 1;
	}
	for (int a = 3; a < argc && ninst < 64; a++)
		instants[ninst++] = atoll(argv[a]);
	if (ninst == 0) {
		static const int pct[] = {10, 30, 50, 70, 90};
		qsort(created, npods, sizeof created[0], cmp_ll);
		for (size_t k = 0; k < 5; k++)
			instants[ninst++] = created[npods * (size_t)pct[k] / 100];
	}
	for (size_t k = 0; k < ninst; k++) {
		char path[4096];
		size_t n = 0;
		FILE *o;
		snprintf(path, sizeof path, "%s/openb-at-%lld.json", argv[2], instants[k]);
		o = fopen(path, "w");
		if (!o) {
			perror(path);
			return 1;
		}
		fputs("{\"apiVersion\":\"v1\",\"kind\":\"List\",\"metadata\":{\"resourceVersion\":\"\"},\"items\":[", o);
		for (size_t i = 0; i < npods; i++)
			n += (size_t)write_pod(o, &pods[i], i, instants[k], n == 0);
		fputs("\n]}\n", o);
		if (fclose(o) != 0) {
			perror(path);
			return 1;
		}
		printf("%s: %zu pods\n", path, n);
	}
	return 0;
}
