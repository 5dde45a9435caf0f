/* Benchmark: gl_sacct_parse_line over 1,000,000 synthetic lines in the default
 * layout (GL_SACCT_DEFAULT_FIELDS), one core.
 *
 * The lines are resampled from real fixtures (tests/fixtures/sacct/: the
 * testbed's allocation and step rows and Sonar's Fox rows with typed GPU TRES).
 * Each fixture row is mapped into the default column order once; columns the
 * source lacks are synthesised (Eligible = Submit, Elapsed from ElapsedRaw,
 * Timelimit from TimelimitRaw, ...). Every output line gets a fresh job id,
 * JobIDRaw and DBIndex. Only parsing is timed (including the '\n' scan), in
 * thread CPU time, best of RUNS passes.
 *
 * Usage: bench_sacct_parse [fixture-dir] (default tests/fixtures/sacct, run
 * from the repo root). Output: markdown table rows.
 */
#include "gl/sacct.h"
#include "lib/testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define NLINES 1000000
#define TARGET_LPS 2000000.0
#define RUNS 5

static const char testbed_fields[] =
	"JobID,JobIDRaw,Cluster,Partition,QOS,Account,Group,GID,User,UID,Submit,Eligible,Start,End,"
	"Elapsed,ElapsedRaw,ExitCode,State,NNodes,NCPUS,ReqCPUS,ReqMem,ReqTRES,AllocTRES,Timelimit,"
	"NodeList,JobName,DBIndex,Suspended,WCKey";
static const char sonar_fields[] =
	"JobID,JobIDRaw,User,Account,State,Start,End,AveCPU,AveDiskRead,AveDiskWrite,AveRSS,"
	"AveVMSize,ElapsedRaw,ExitCode,Layout,MaxRSS,MaxVMSize,MinCPU,ReqCPUS,ReqMem,ReqNodes,"
	"Reservation,Submit,Suspended,SystemCPU,TimelimitRaw,UserCPU,NodeList,Partition,AllocTRES,"
	"Priority,JobName";

#define MAXC 40
#define MAXT 1024

/* One fixture row in the default column order; JobID/JobIDRaw keep only the
 * part after the leading number ("_3", ".batch", "+1") so ids can vary. */
struct tmpl {
	char *col[MAXC];
};

static struct tmpl tmpls[MAXT];
static int ntmpl;

static int split(char *s, char **out, int max)
{
	int n = 0;
	for (;;) {
		char *d = strchr(s, '|');
		if (n == max)
			return -1;
		out[n++] = s;
		if (!d)
			return n;
		*d = '\0';
		s = d + 1;
	}
}

static int name_index(const char *fields, const char *name)
{
	char buf[1024], *save = NULL, *tok;
	int i = 0;

	snprintf(buf, sizeof buf, "%s", fields);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save), i++)
		if (strcasecmp(tok, name) == 0)
			return i;
	return -1;
}

static char *fmt_dur(long long s)
{
	char buf[64];
	if (s < 0)
		return strdup("UNLIMITED");
	if (s >= 86400)
		snprintf(buf, sizeof buf, "%lld-%02lld:%02lld:%02lld", s / 86400, s / 3600 % 24,
			 s / 60 % 60, s % 60);
	else
		snprintf(buf, sizeof buf, "%02lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
	return strdup(buf);
}

static void add_file(const char *path, const char *fields)
{
	static const char *const dflt[] = {
		"JobID", "JobIDRaw", "Cluster", "Partition", "QOS", "Account", "Group", "GID", "User",
		"UID", "Submit", "Eligible", "Start", "End", "Elapsed", "ElapsedRaw", "ExitCode",
		"State", "NNodes", "NCPUS", "ReqCPUS", "ReqMem", "ReqTRES", "AllocTRES", "Timelimit",
		"NodeList", "DBIndex", "Suspended", "WCKey", "JobName",
	};
	char *buf = gl_test_read_file(path, NULL), *line, *save = NULL;

	for (line = strtok_r(buf, "\n", &save); line && ntmpl < MAXT;
	     line = strtok_r(NULL, "\n", &save)) {
		char *c[MAXC];
		struct tmpl *t = &tmpls[ntmpl];
		int n = split(line, c, MAXC);

		if (n < 10)
			continue;
		for (size_t k = 0; k < sizeof dflt / sizeof dflt[0]; k++) {
			int i = name_index(fields, dflt[k]);
			const char *v = i >= 0 && i < n ? c[i] : NULL;
			char *out;

			if (k == 0 || k == 1) { /* JobID / JobIDRaw: keep the suffix */
				v = v ? v : c[0];
				v += strspn(v, "0123456789");
				out = strdup(v);
			} else if (v) {
				out = strdup(v);
			} else if (!strcmp(dflt[k], "Cluster")) {
				out = strdup("fox");
			} else if (!strcmp(dflt[k], "QOS")) {
				out = strdup("normal");
			} else if (!strcmp(dflt[k], "Group")) {
				out = strdup(c[name_index(fields, "User")]);
			} else if (!strcmp(dflt[k], "GID") || !strcmp(dflt[k], "UID")) {
				out = *c[name_index(fields, "User")] ? strdup("210037") : strdup("");
			} else if (!strcmp(dflt[k], "Eligible")) {
				out = strdup(c[name_index(fields, "Submit")]);
			} else if (!strcmp(dflt[k], "Elapsed")) {
				out = fmt_dur(atoll(c[name_index(fields, "ElapsedRaw")]));
			} else if (!strcmp(dflt[k], "NNodes")) {
				out = strdup("1");
			} else if (!strcmp(dflt[k], "NCPUS")) {
				out = strdup(c[name_index(fields, "ReqCPUS")]);
			} else if (!strcmp(dflt[k], "ReqTRES")) {
				out = strdup(c[name_index(fields, "AllocTRES")]);
			} else if (!strcmp(dflt[k], "Timelimit")) {
				const char *tl = c[name_index(fields, "TimelimitRaw")];
				out = *tl ? fmt_dur(atoll(tl) * 60) : strdup("");
			} else {
				out = strdup(""); /* GID, DBIndex (set per line), WCKey */
			}
			t->col[k] = out;
		}
		ntmpl++;
	}
	free(buf);
}

/* xorshift: reproducible resampling without libc rand() state */
static unsigned long long rng_state = 0x9E3779B97F4A7C15ull;
static unsigned long long rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* CPU time of this thread, not wall time: the figure is per core, and on a
 * shared machine wall time also counts the time other processes held it. */
static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "tests/fixtures/sacct";
	char path[512];
	char *data;
	size_t cap = (size_t)NLINES * 600, len = 0;
	struct gl_sacct_layout lay;
	struct gl_err err = {0};
	double best = 1e9;
	long long check = 0;

	snprintf(path, sizeof path, "%s/testbed/sacct_steps.txt", dir);
	add_file(path, testbed_fields);
	snprintf(path, sizeof path, "%s/sonar/sacct_output.txt", dir);
	add_file(path, sonar_fields);
	snprintf(path, sizeof path, "%s/sonar/sacct-output.txt", dir);
	add_file(path, sonar_fields);
	if (ntmpl == 0)
		return 1;

	data = malloc(cap);
	if (!data)
		return 1;
	for (long i = 0; i < NLINES; i++) {
		const struct tmpl *t = &tmpls[rng() % (unsigned)ntmpl];
		long long id = 2000000 + i;
		int n = snprintf(data + len, cap - len, "%lld%s|%lld%s", id, t->col[0], id, t->col[1]);
		len += (size_t)n;
		for (int k = 2; k < 30; k++) {
			if (k == 26) /* DBIndex */
				n = snprintf(data + len, cap - len, "|%ld", 5000000 + i);
			else
				n = snprintf(data + len, cap - len, "|%s", t->col[k]);
			len += (size_t)n;
		}
		data[len++] = '\n';
		if (cap - len < 4096)
			return 1;
	}

	if (gl_sacct_layout_init(&lay, NULL, NULL, &err) != 0) {
		fprintf(stderr, "bench: %s\n", err.msg);
		return 1;
	}
	for (int run = 0; run < RUNS; run++) {
		const char *p = data, *end = data + len;
		long lines = 0;
		double t0 = now_s(), dt;

		check = 0;
		while (p < end) {
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			struct gl_sacct_rec rec;
			size_t n = (size_t)(nl - p);

			if (gl_sacct_parse_line(&lay, p, n, &rec, &err) != 0) {
				fprintf(stderr, "bench: line %ld: %s\n", lines + 1, err.msg);
				return 1;
			}
			check += rec.gpus_alloc * (rec.elapsed_s > 0 ? rec.elapsed_s : 0) + rec.db_index;
			lines++;
			p = nl + 1;
		}
		dt = now_s() - t0;
		if (dt < best)
			best = dt;
		if (lines != NLINES)
			return 1;
	}
	{
		double lps = NLINES / best, mbps = (double)len / best / 1e6;
		printf("| sacct parser (synthetic 1M lines, 1 core) | %.0f lines/s | %.0f lines/s (target) | %.2f |\n",
		       lps, TARGET_LPS, lps / TARGET_LPS);
		printf("| sacct parser (synthetic 1M lines, 1 core) | %.1f MB/s | - | - |\n", mbps);
		fprintf(stderr, "bench: %d templates, %zu bytes (%.0f B/line), best of %d runs %.3f s, check %lld\n",
			ntmpl, len, (double)len / NLINES, RUNS, best, check);
	}
	for (int i = 0; i < ntmpl; i++)
		for (int k = 0; k < 30; k++)
			free(tmpls[i].col[k]);
	free(data);
	gl_sacct_layout_fini(&lay);
	return 0;
}
