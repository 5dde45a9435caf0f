/* Benchmark: Prometheus text parser and dcgm mapping on one core.
 *
 * Input: a SYNTHETIC scrape built in memory by replicating the real T4
 * dcgm-exporter series in tests/fixtures/dcgm/datadog_dcgm_fixture_metrics.prom
 * across many GPUs (8 per host), laid out the way dcgm-exporter writes it:
 * HELP, TYPE, then one line per GPU for each metric. Only UUID, Hostname, gpu
 * and device change, so line lengths and label sets stay those of the real
 * exporter.
 *
 * The peer is measured in the same run on the same bytes: Prometheus' own
 * Go parser (bench/go/expfmt), built offline from Debian's golang-go and
 * golang-github-prometheus-common-dev; without them its row says so.
 *
 * Times are this thread's CPU time, best of runs (the Go peer: its process's
 * CPU time, one core), so the figures hold beside other processes' load.
 *
 * Usage: bench_promtext [fixture-dir] [gpus] [seconds]   (run from the repo root)
 * Prints markdown table rows.
 */
#include "gl/dcgm.h"
#include "gl/promtext.h"
#include "gl/strbuf.h"
#include "lib/testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Appends line with the first occurrence of each from[i] replaced by to[i]. */
static void put_subst(struct gl_strbuf *b, const char *line, size_t n, const char *const *from,
		      const char *const *to, int nsub)
{
	const char *p = line, *e = line + n;
	while (p < e) {
		const char *best = e;
		int bi = -1, i;
		for (i = 0; i < nsub; i++) {
			const char *q = memmem(p, (size_t)(e - p), from[i], strlen(from[i]));
			if (q && q < best) {
				best = q;
				bi = i;
			}
		}
		gl_strbuf_append(b, p, (size_t)(best - p));
		if (bi < 0)
			break;
		gl_strbuf_puts(b, to[bi]);
		p = best + strlen(from[bi]);
	}
	gl_strbuf_putc(b, '\n');
}

/* The first host's series (the complete dcgm-exporter default set for one
 * GPU) with their HELP/TYPE lines, replicated per GPU. */
static void build(struct gl_strbuf *out, const char *src, size_t len, int ngpus)
{
	const char *p = src, *e = src + len;
	static const char *const from[] = {"gpu=\"0\"", "GPU-20c56d28", "device=\"nvidia0\"", "Hostname=\"424773df46e0\""};

	while (p < e) {
		const char *nl = memchr(p, '\n', (size_t)(e - p));
		size_t n = (size_t)((nl ? nl : e) - p);
		if (n && p[0] == '#') {
			if (n > 7 && (memcmp(p, "# HELP ", 7) == 0 || memcmp(p, "# TYPE ", 7) == 0)) {
				gl_strbuf_append(out, p, n);
				gl_strbuf_putc(out, '\n');
			}
		} else if (n && memmem(p, n, "Hostname=\"424773df46e0\"", 23)) {
			int g;
			for (g = 0; g < ngpus; g++) {
				char gpu[32], uuid[32], dev[32], host[48];
				const char *to[4];
				snprintf(gpu, sizeof gpu, "gpu=\"%d\"", g % 8);
				snprintf(uuid, sizeof uuid, "GPU-%08x", 0x20c56d28u + (unsigned)g);
				snprintf(dev, sizeof dev, "device=\"nvidia%d\"", g % 8);
				snprintf(host, sizeof host, "Hostname=\"gpu-node-%05d\"", g / 8);
				to[0] = gpu;
				to[1] = uuid;
				to[2] = dev;
				to[3] = host;
				put_subst(out, p, n, from, to, 4);
			}
		}
		p = nl ? nl + 1 : e;
	}
}

struct count {
	size_t n;
	double sum;
};

static int on_sample(void *ctx, const struct gl_promtext_sample *s)
{
	struct count *c = ctx;
	c->n++;
	c->sum += s->value + (double)s->nlabels;
	return 0;
}

static int on_sample_map(void *ctx, const struct gl_promtext_sample *s)
{
	return gl_dcgm_scrape_add(ctx, s);
}

/* Prometheus' Go TextParser on the same scrape: samples/s on one core, or
 * 0 (with the reason on stderr) when Go or the package is missing. */
static double go_peer(const struct gl_strbuf *syn, double secs)
{
	char dir[] = "/tmp/gl-expfmt-XXXXXX", cmd[1024], file[64];
	double per_s = 0, t;
	size_t n;
	FILE *f;
	if (!mkdtemp(dir))
		return 0;
	snprintf(file, sizeof file, "%s/scrape.prom", dir);
	snprintf(cmd, sizeof cmd,
		 "cd bench/go/expfmt && GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE=%s/cache go build -o %s/expfmt_bench . "
		 ">&2",
		 dir, dir);
	if (!(f = fopen(file, "w")) || fwrite(syn->p, 1, syn->len, f) != syn->len || fclose(f)) {
		fprintf(stderr, "bench: cannot write %s\n", file);
		goto out;
	}
	if (system(cmd) != 0) {
		fprintf(stderr, "bench: the Go peer did not build (apt-get install golang-go "
				"golang-github-prometheus-common-dev)\n");
		goto out;
	}
	snprintf(cmd, sizeof cmd, "%s/expfmt_bench %s %g", dir, file, secs);
	if ((f = popen(cmd, "r")) && fscanf(f, "%zu %lf", &n, &t) == 2 && t > 0)
		per_s = (double)n / t;
	if (f)
		pclose(f);
out:
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "bench: could not remove %s\n", dir);
	return per_s;
}

/* CPU time of this thread, not wall time: the figure is per core, and on a
 * shared machine wall time also counts the time other processes held it
 * (as bench_nvsmi and bench_amdscrape measure). */
static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void row(const char *what, double per_s, double ref, const char *ref_name)
{
	printf("| %s | %.0f samples/s | %.0f samples/s (%s) | %.2fx |\n", what, per_s, ref, ref_name, per_s / ref);
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "tests/fixtures/dcgm";
	int ngpus = argc > 2 ? atoi(argv[2]) : 10000;
	double secs = argc > 3 ? atof(argv[3]) : 2.0;
	struct gl_strbuf syn = GL_STRBUF_INIT;
	struct gl_promtext_stats st;
	struct count c = {0, 0};
	struct gl_promtext_handler h = {on_sample, NULL, &c};
	char path[512], *src;
	size_t len, per_scrape = 0, gpus_seen = 0;
	double t0, t, best_parse = 1e30, best_map = 1e30, go;
	int iters = 0, rc = 1;

	snprintf(path, sizeof path, "%s/datadog_dcgm_fixture_metrics.prom", dir);
	src = gl_test_read_file(path, &len);
	build(&syn, src, len, ngpus > 0 ? ngpus : 1);

	/* parse only: best of repeated runs, for at least secs seconds */
	t0 = now_s();
	do {
		double a = now_s();
		c.n = 0;
		if (gl_promtext_parse(syn.p, syn.len, NULL, &h, &st, NULL) != 0 || st.bad_lines)
			goto out;
		t = now_s() - a;
		if (t < best_parse)
			best_parse = t;
		per_scrape = c.n;
		iters++;
	} while (now_s() - t0 < secs || iters < 3);

	/* parse + dcgm mapping (hash lookup, arena copies of new GPUs) */
	t0 = now_s();
	iters = 0;
	do {
		struct gl_dcgm_scrape s;
		struct gl_promtext_handler hm = {on_sample_map, NULL, &s};
		double a = now_s();
		gl_dcgm_scrape_init(&s, NULL);
		hm.ctx = &s;
		if (gl_promtext_parse(syn.p, syn.len, NULL, &hm, NULL, NULL) != 0)
			goto out;
		gpus_seen = s.ngpus;
		gl_dcgm_scrape_fini(&s);
		t = now_s() - a;
		if (t < best_map)
			best_map = t;
		iters++;
	} while (now_s() - t0 < secs || iters < 3);

	fprintf(stderr, "bench: synthetic scrape %.1f MB, %zu samples, %d GPUs (%zu mapped), sum %g\n",
		(double)syn.len / 1e6, per_scrape, ngpus, gpus_seen, c.sum);
	printf("| benchmark | result | reference | ratio |\n|---|---|---|---|\n");
	go = go_peer(&syn, secs);
	if (go > 0)
		row("promtext parser (synthetic, 1 core)", (double)per_scrape / best_parse, go,
		    "Prometheus' Go expfmt.TextParser, same bytes, same run");
	else
		printf("| promtext parser (synthetic, 1 core) | %.0f samples/s | Go peer not measured (no Go toolchain) | - |\n",
		       (double)per_scrape / best_parse);
	row("promtext parser (synthetic, 1 core)", (double)per_scrape / best_parse, 5000000, "target");
	printf("| promtext parser throughput (synthetic, 1 core) | %.0f MB/s | - | - |\n",
	       (double)syn.len / 1e6 / best_parse);
	row("promtext parse + dcgm mapping (synthetic, 1 core)", (double)per_scrape / best_map, 5000000, "target");
	rc = 0;
out:
	if (rc)
		fprintf(stderr, "bench: parse failed\n");
	gl_strbuf_fini(&syn);
	free(src);
	return rc;
}
