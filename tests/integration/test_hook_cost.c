/* The idle hook writes money as the rest of gpuledger does: {cost} in a
 * warning command and cost= in the text report have the reporting
 * currency's decimals, rounded half up (JPY has none; {cost} used to be cut
 * at two decimals for every currency). Real binary, real PostgreSQL; one
 * running job idling on one GPU (HAND-WRITTEN sacct and dcgm-exporter
 * lines, in the formats of tests/fixtures), a recording stand-in for the
 * warning command. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char g_dsn[512], g_dir[256];

static const char *path(const char *name)
{
	static char buf[4][400];
	static int k;
	k = (k + 1) % 4;
	snprintf(buf[k], sizeof buf[k], "%s/%s", g_dir, name);
	return buf[k];
}

static void write_file(const char *p, const char *text, int exec)
{
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	if (exec)
		chmod(p, 0755);
}

static void iso(time_t t, char *b, size_t n)
{
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(b, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int setup(void **state)
{
	char buf[2048], st[32], at[32];
	time_t now = time(NULL), end = now - now % 300, t0 = end - 120 * 60;

	if (gl_test_db_fresh("gl_test_hook_cost", g_dsn, sizeof g_dsn))
		return -1;
	snprintf(g_dir, sizeof g_dir, "/tmp/gltest-hookcost-XXXXXX");
	if (!mkdtemp(g_dir))
		return -1;
	snprintf(buf, sizeof buf, "#!/bin/sh\nprintf '[%%s]' \"$@\" >> '%s'\necho >> '%s'\n", path("warn.log"),
		 path("warn.log"));
	write_file(path("warn.sh"), buf, 1);
	/* a yen price with a fraction, so that the yen figure is rounded */
	snprintf(buf, sizeof buf,
		 "currency: JPY\n"
		 "rates:\n  - model: a100\n    currency: JPY\n    per_gpu_hour: \"1000.5\"\n"
		 "hook:\n  act: true\n  policies:\n    - name: nb\n      scope: {clusters: hc}\n"
		 "      rule: {kind: sliding, t1_min: 30, t3_min: 60}\n"
		 "      warn_command: %s {cost} {currency}\n",
		 path("warn.sh"));
	write_file(path("config.yaml"), buf, 0);
	if (gl_test_cli(g_dsn, "--config", path("config.yaml"), "rates", "load", path("config.yaml"), NULL))
		return -1;
	iso(t0, st, sizeof st);
	snprintf(buf, sizeof buf,
		 "JobID|JobIDRaw|Cluster|Partition|QOS|Account|User|Submit|Eligible|Start|End|State|AllocTRES|NodeList|DBIndex\n"
		 "701|701|hc|gpu|normal|acct|erin|%.19s|%.19s|%.19s|Unknown|RUNNING|billing=1,gres/gpu:a100=1,gres/gpu=1|n1|"
		 "7701\n",
		 st, st, st);
	write_file(path("sacct.txt"), buf, 0);
	if (gl_test_cli(g_dsn, "ingest", "sacct", "--cluster", "hc", "--file", path("sacct.txt"), NULL))
		return -1;
	write_file(path("scrape.prom"),
		   "# TYPE DCGM_FI_PROF_GR_ENGINE_ACTIVE gauge\n"
		   "DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu=\"0\",UUID=\"GPU-hc-n1-0\",modelName=\"NVIDIA A100-SXM4-80GB\","
		   "Hostname=\"n1\",hpc_job=\"701\"} 0.000010\n"
		   "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
		   "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-hc-n1-0\",modelName=\"NVIDIA A100-SXM4-80GB\","
		   "Hostname=\"n1\",hpc_job=\"701\"} 0\n",
		   0);
	for (time_t t = t0; t <= end; t += 300) {
		iso(t, at, sizeof at);
		if (gl_test_cli(g_dsn, "ingest", "dcgm", "--cluster", "hc", "--file", path("scrape.prom"), "--at",
				at, "--max-gap", "300", NULL))
			return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", g_dir);
	return 0;
}

/* The dry run's idle cost in micro-units (and its idle GPU-seconds). */
static long long dry_run_micros(long long *secs)
{
	struct gl_test_out o;
	cJSON *r, *c;
	long long micros;
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "--config", path("config.yaml"), "hook", "idle", "--format", "json",
				     NULL),
			 0);
	assert_int_equal(o.status, 3);
	r = cJSON_Parse(o.out);
	gl_test_out_fini(&o);
	assert_non_null(r);
	c = cJSON_GetArrayItem(cJSON_GetObjectItem(r, "candidates"), 0);
	assert_non_null(c);
	*secs = (long long)cJSON_GetObjectItem(c, "idle_gpu_seconds")->valuedouble;
	micros = (long long)cJSON_GetObjectItem(c, "idle_cost_micros")->valuedouble;
	cJSON_Delete(r);
	return micros;
}

static void test_cost_in_the_currency_s_units(void **state)
{
	struct gl_test_out o;
	long long secs, micros, m2;
	char want[64], want2[64], line[128], *text;

	/* The hook's look-back ends at the clock, so a run a second later may
	 * see a second more of idle: the text report, run between two dry
	 * runs, shows a cost between theirs (whole yen, half up). */
	{
		long long lo, hi, shown;
		const char *p;
		micros = dry_run_micros(&secs);
		assert_true(secs > 0);
		/* 1000.5 yen a GPU-hour */
		assert_true(micros >= secs * 1000500000LL / 3600 - 1 && micros <= secs * 1000500000LL / 3600 + 1);
		assert_int_equal(gl_test_run(g_dsn, NULL, &o, "--config", path("config.yaml"), "hook", "idle", NULL), 0);
		assert_int_equal(o.status, 3);
		m2 = dry_run_micros(&secs);
		lo = ((micros < m2 ? micros : m2) + 500000) / 1000000;
		hi = ((micros > m2 ? micros : m2) + 500000) / 1000000;
		if (!(p = strstr(o.out, " cost=")) || sscanf(p, " cost=%lld ", &shown) != 1 || shown < lo || shown > hi)
			fail_msg("want a whole-yen cost in [%lld, %lld] in:\n%s", lo, hi, o.out);
		snprintf(want, sizeof want, "%lld", shown);
		snprintf(line, sizeof line, " cost=%s ", want);
		assert_non_null(strstr(o.out, line));
		gl_test_out_fini(&o);
	}

	/* the warning command's {cost}: the act runs once, so its figure lies
	 * between the dry runs before and after it */
	micros = dry_run_micros(&secs);
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "--config", path("config.yaml"), "hook", "idle", "--act", NULL), 0);
	assert_int_equal(o.status, 0);
	gl_test_out_fini(&o);
	m2 = dry_run_micros(&secs);
	snprintf(want, sizeof want, "[%lld][JPY]\n", (micros + 500000) / 1000000);
	snprintf(want2, sizeof want2, "[%lld][JPY]\n", (m2 + 500000) / 1000000);
	text = gl_test_read_file(path("warn.log"), NULL);
	if (strcmp(text, want) && strcmp(text, want2))
		fail_msg("warn.log: got '%s', want '%s' or '%s'", text, want, want2);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cost_in_the_currency_s_units),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
