/* Unit tests for src/sources/nvsmi.c and nvsmixml.c: nvidia-smi CSV and XML.
 *
 * Real captures (tests/fixtures/nvsmi/README.md) are checked against an
 * independent reading done here: the header split on ", ", the column found
 * by its printed name, the number read with strtod. Small inputs inline are
 * HAND-WRITTEN for one rule each and say so. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/nvsmi.h"
#include "gl/nvsmixml.h"
#include "lib/testlib.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIX "tests/fixtures/nvsmi/"
#define NOPE (-1e300)

/* ---- cells ----------------------------------------------------------------- */

static void test_cells(void **state)
{
	static const struct {
		const char *in, *unit;
		int rc;
		double v;
	} vals[] = {
		{"81559 MiB", "MiB", 0, 81559}, {"0 %", "%", 0, 0}, {"69.85 W", "W", 0, 69.85}, {"12", "%", 0, 12},
		{"1e3 MiB", "MiB", 0, 1000}, {"81559 GiB", "MiB", -GL_ERANGE, 0}, {"5 %", NULL, -GL_ERANGE, 0},
		{"MiB", "MiB", -GL_EINVAL, 0}, {"", "%", -GL_EINVAL, 0}, {"NaN %", "%", -GL_EINVAL, 0},
		{"Inf W", "W", -GL_EINVAL, 0}, {"12  %", "%", -GL_ERANGE, 0}, {"0x10", NULL, -GL_EINVAL, 0},
	};
	static const struct {
		const char *in;
		int na;
	} nas[] = {
		{"[N/A]", 1}, {"N/A", 1}, {"[Not Supported]", 1}, {"[Unknown Error]", 1}, {"[Insufficient Permissions]", 1},
		{"[Requested functionality has been deprecated]", 1}, {"0", 0}, {"[", 0}, {"NA", 0}, {"", 0},
	};
	static const struct {
		const char *in;
		int rc;
		int64_t ms;
	} times[] = {
		{"2026/07/14 08:12:38.696", 0, 1784016758696}, {"2026/07/14 08:12:38", 0, 1784016758000},
		{"1970/01/01 00:00:00.000", 0, 0}, {"2024/02/29 23:59:59.999", 0, 1709251199999},
		{"2023/02/29 00:00:00.000", -GL_EINVAL, 0}, {"2026-07-14 08:12:38.696", -GL_EINVAL, 0},
		{"2026/07/14 24:00:00.000", -GL_EINVAL, 0}, {"2026/07/14 08:12:38.69", -GL_EINVAL, 0},
		{"2026/13/01 00:00:00.000", -GL_EINVAL, 0}, {"", -GL_EINVAL, 0},
	};
	(void)state;
	for (size_t i = 0; i < GL_ARRAY_LEN(vals); i++) {
		double v = -1;
		int rc = gl_nvsmi_parse_value(vals[i].in, strlen(vals[i].in), vals[i].unit, &v);
		if (rc != vals[i].rc || (rc == 0 && v != vals[i].v))
			fail_msg("value '%s': rc %d v %g", vals[i].in, rc, v);
	}
	for (size_t i = 0; i < GL_ARRAY_LEN(nas); i++)
		if (gl_nvsmi_unavailable(nas[i].in, strlen(nas[i].in)) != nas[i].na)
			fail_msg("unavailable '%s'", nas[i].in);
	for (size_t i = 0; i < GL_ARRAY_LEN(times); i++) {
		int64_t ms = -1;
		int rc = gl_nvsmi_parse_time(times[i].in, strlen(times[i].in), &ms);
		if (rc != times[i].rc || (rc == 0 && ms != times[i].ms))
			fail_msg("time '%s': rc %d ms %lld", times[i].in, rc, (long long)ms);
	}
}

/* ---- real query-gpu captures against an independent reading ---------------- */

/* Splits on ", " exactly as nvidia-smi writes it; returns the field count. */
static size_t naive_split(char *line, char **f, size_t max)
{
	size_t n = 0;
	char *p = line;
	for (;;) {
		char *sep = strstr(p, ", ");
		if (n == max)
			return n;
		f[n++] = p;
		if (!sep)
			return n;
		*sep = '\0';
		p = sep + 2;
	}
}

static int naive_col(char **h, size_t nh, const char *name)
{
	for (size_t i = 0; i < nh; i++)
		if (!strcmp(h[i], name))
			return (int)i;
	return -1;
}

static double naive_value(const char *cell)
{
	return cell[0] == '[' ? NOPE : strtod(cell, NULL);
}

static void check_real_query(const char *path, size_t want_rows)
{
	static const struct { const char *col; enum gl_dcgm_metric m; } metrics[] = {
		{"utilization.gpu [%]", GL_DCGM_GPU_UTIL}, {"utilization.memory [%]", GL_DCGM_MEM_COPY_UTIL},
		{"memory.used [MiB]", GL_DCGM_FB_USED_MIB}, {"memory.free [MiB]", GL_DCGM_FB_FREE_MIB},
		{"power.draw [W]", GL_DCGM_POWER_W},
	};
	size_t len;
	char *buf = gl_test_read_file(gl_test_fixture(path), &len), *copy = strdup(buf);
	char *save = NULL, *line, *h[400], *f[400];
	size_t nh, row = 0;
	struct gl_nvsmi_result r;
	struct gl_err err = {0};

	assert_int_equal(gl_nvsmi_parse_csv(buf, len, NULL, &r, &err), 0);
	memset(buf, 'x', len); /* nothing may point into the input */
	assert_int_equal(r.kind, GL_NVSMI_QUERY_GPU);
	assert_int_equal(r.nproblems, 0);
	assert_int_equal(r.nsamples, want_rows);
	assert_int_equal(r.ngpus, 1);
	nh = naive_split(strtok_r(copy, "\n", &save), h, 400);
	while ((line = strtok_r(NULL, "\n", &save))) {
		size_t nf = naive_split(line, f, 400);
		const struct gl_nvsmi_sample *s = &r.samples[row++];
		const struct gl_nvsmi_gpu *g = &r.gpus[s->gpu];
		assert_int_equal(nf, nh);
		assert_string_equal(g->uuid, f[naive_col(h, nh, "uuid")]);
		assert_string_equal(g->model, f[naive_col(h, nh, "name")]);
		assert_int_equal(g->memory_total_mib, (int64_t)naive_value(f[naive_col(h, nh, "memory.total [MiB]")]));
		for (size_t k = 0; k < GL_ARRAY_LEN(metrics); k++) {
			double want = naive_value(f[naive_col(h, nh, metrics[k].col)]);
			int has = gl_dcgm_reading_has(&s->r, metrics[k].m);
			if (has != (want != NOPE) || (has && s->r.v[metrics[k].m] != want))
				fail_msg("%s row %zu %s: have %d %g, want %g", path, row, metrics[k].col, has,
					 has ? s->r.v[metrics[k].m] : 0, want);
		}
	}
	assert_int_equal(row, want_rows);
	gl_nvsmi_result_fini(&r);
	free(buf);
	free(copy);
}

static void test_real_query_gpu(void **state)
{
	(void)state;
	check_real_query(FIX "h100_query_gpu.csv", 2);
	check_real_query(FIX "h100mig_query_gpu.csv", 2);
	check_real_query(FIX "h200_query_gpu.csv", 2);
	check_real_query(FIX "h200mig_query_gpu.csv", 2);
	check_real_query(FIX "l40s_query_gpu.csv", 2);
}

/* Real, read off the files: what the capture means beyond the values. */
static void test_real_query_meaning(void **state)
{
	size_t len;
	char *buf;
	struct gl_nvsmi_result r;
	(void)state;

	/* H100 in MIG mode: utilisation is [N/A], never 0 */
	buf = gl_test_read_file(gl_test_fixture(FIX "h100mig_query_gpu.csv"), &len);
	assert_int_equal(gl_nvsmi_parse_csv(buf, len, NULL, &r, NULL), 0);
	assert_int_equal(r.gpus[0].mig_mode, 1);
	assert_false(gl_dcgm_reading_has(&r.samples[1].r, GL_DCGM_GPU_UTIL));
	assert_true(gl_dcgm_reading_has(&r.samples[1].r, GL_DCGM_POWER_W));
	assert_true(r.unavailable >= 4);
	gl_nvsmi_result_fini(&r);
	free(buf);

	/* H100: idle then gpu_burn; the times are the capture's, taken as UTC */
	buf = gl_test_read_file(gl_test_fixture(FIX "h100_query_gpu.csv"), &len);
	assert_int_equal(gl_nvsmi_parse_csv(buf, len, &(struct gl_nvsmi_opts){NULL, 7200}, &r, NULL), 0);
	assert_int_equal(r.samples[0].t_ms, 1784016758696 - 7200000); /* 2026/07/14 08:12:38.696 at UTC+2 */
	assert_int_equal(r.samples[0].r.v[GL_DCGM_GPU_UTIL], 0);
	assert_int_equal(r.samples[1].r.v[GL_DCGM_GPU_UTIL], 100);
	assert_string_equal(r.gpus[0].driver_version, "590.48.01");
	assert_string_equal(r.gpus[0].pci_bus_id, "00000000:00:09.0");
	assert_int_equal(r.gpus[0].index, 0);
	assert_true(r.gpus[0].power_limit_w == 700);
	assert_int_equal(r.gpus[0].mig_mode, 0);
	gl_nvsmi_result_fini(&r);
	free(buf);
}

static void test_real_apps(void **state)
{
	size_t len;
	char *buf = gl_test_read_file(gl_test_fixture(FIX "h100_compute_apps.csv"), &len);
	struct gl_nvsmi_result r;
	(void)state;

	assert_int_equal(gl_nvsmi_parse_csv(buf, len, NULL, &r, NULL), 0);
	assert_int_equal(r.kind, GL_NVSMI_APPS);
	assert_int_equal(r.napps, 3);
	assert_int_equal(r.nsamples, 0);
	assert_int_equal(r.apps[2].pid, 11345);
	assert_int_equal(r.apps[2].used_mib, 15690);
	assert_string_equal(r.apps[2].process_name, "./gpu_burn");
	assert_string_equal(r.apps[2].type, "C");
	assert_int_equal(r.apps[0].t_ms, 1784016773500);
	assert_string_equal(r.gpus[r.apps[0].gpu].uuid, "GPU-00000000-0000-0000-0000-000000000000");
	assert_string_equal(r.gpus[r.apps[0].gpu].serial, "0000000000000");
	gl_nvsmi_result_fini(&r);
	free(buf);
}

/* ---- hand-written CSV, one rule each ---------------------------------------- */

struct csv_case {
	const char *name, *fields, *text;
	int rc;
	const char *err;     /* substring of the refusal */
	size_t nsamples, napps, nproblems;
	const char *problem; /* "line: reason" substring of the first problem */
	double util0, mem0;  /* first sample's GPU_UTIL and FB_USED; NOPE = absent */
};

static const struct csv_case csv_cases[] = {
	{"columns in any order, nounits", NULL,
	 "uuid, memory.used [MiB], utilization.gpu [%], timestamp\n"
	 "GPU-a, 1234, 37, 2026/10/01 12:00:00.000\n", 0, NULL, 1, 0, 0, NULL, 37, 1234},
	{"aliases", NULL, "gpu_uuid, timestamp, utilization.gpu [%]\nGPU-a, 2026/10/01 12:00:00.000, 5 %\n", 0, NULL, 1, 0, 0,
	 NULL, 5, NOPE},
	{"noheader with --fields", "timestamp,uuid,utilization.gpu,memory.used",
	 "2026/10/01 12:00:00.000, GPU-a, 50 %, 100 MiB\n2026/10/01 12:00:30.000, GPU-a, 51 %, 100 MiB\n", 0, NULL, 2, 0, 0,
	 NULL, 50, 100},
	{"--fields given but the capture has its header", "timestamp,uuid,utilization.gpu",
	 "timestamp, uuid, utilization.gpu [%]\n2026/10/01 12:00:00.000, GPU-a, 9 %\n", 0, NULL, 1, 0, 0, NULL, 9, NOPE},
	{"-l: rows of several GPUs and times, CRLF, a repeated header, blank lines", NULL,
	 "timestamp, uuid, utilization.gpu [%]\r\n2026/10/01 12:00:00.000, GPU-a, 1 %\r\n2026/10/01 12:00:00.000, GPU-b, 2 %\r\n\r\n"
	 "timestamp, uuid, utilization.gpu [%]\r\n2026/10/01 12:00:30.000, GPU-a, 3 %\r\n",
	 0, NULL, 3, 0, 0, NULL, 1, NOPE},
	{"unavailable cells are missing, not zero", NULL,
	 "timestamp, uuid, utilization.gpu [%], memory.used [MiB], power.draw [W]\n"
	 "2026/10/01 12:00:00.000, GPU-a, [N/A], [Not Supported], [Unknown Error]\n", 0, NULL, 1, 0, 0, NULL, NOPE, NOPE},
	{"a bad value leaves the row's others", NULL,
	 "timestamp, uuid, utilization.gpu [%], memory.used [MiB]\n2026/10/01 12:00:00.000, GPU-a, 7 %, lots MiB\n", 0, NULL,
	 1, 0, 1, "2: memory.used: 'lots MiB' is not a valid value", 7, NOPE},
	{"another unit", NULL,
	 "timestamp, uuid, utilization.gpu [%], memory.used [MiB]\n2026/10/01 12:00:00.000, GPU-a, 7 %, 2 GiB\n", 0, NULL, 1,
	 0, 1, "2: memory.used: '2 GiB' is not in MiB", 7, NOPE},
	{"a percentage above 100", NULL, "timestamp, uuid, utilization.gpu [%]\n2026/10/01 12:00:00.000, GPU-a, 101 %\n", 0,
	 NULL, 1, 0, 1, "2: utilization.gpu: '101 %' is not a valid value", NOPE, NOPE},
	{"a short row is skipped, the rest read", NULL,
	 "timestamp, uuid, utilization.gpu [%]\n2026/10/01 12:00:00.000, GPU-a\n2026/10/01 12:00:30.000, GPU-a, 4 %\n", 0, NULL,
	 1, 0, 1, "2: 2 fields, the header has 3", 4, NOPE},
	{"a bad timestamp", NULL,
	 "timestamp, uuid, utilization.gpu [%]\n2026-10-01T12:00:00Z, GPU-a, 1 %\n2026/10/01 12:00:30.000, GPU-a, 4 %\n", 0, NULL,
	 1, 0, 1, "2: timestamp: '2026-10-01T12:00:00Z' is not YYYY/MM/DD", 4, NOPE},
	{"no GPU", NULL, "timestamp, uuid, utilization.gpu [%]\n2026/10/01 12:00:00.000, [N/A], 1 %\n", 0, NULL, 0, 0, 1,
	 "2: uuid: '[N/A]' names no GPU", NOPE, NOPE},
	{"bytes that are not UTF-8", NULL,
	 "timestamp, uuid, utilization.gpu [%]\n2026/10/01 12:00:00.000, GPU-\xff, 1 %\n", 0, NULL, 0, 0, 1,
	 "2: not valid UTF-8 (byte 30)", NOPE, NOPE},
	{"required uuid missing", NULL,
	 "index, timestamp, utilization.gpu [%], memory.used [MiB]\n0, 2020/11/12 13:48:11.412, 99 %, 30994 MiB\n",
	 -GL_EFORMAT, "required column 'uuid' missing", 0, 0, 0, NULL, NOPE, NOPE},
	{"required utilization missing", NULL, "timestamp, uuid, memory.used [MiB]\n2026/10/01 12:00:00.000, GPU-a, 1 MiB\n",
	 -GL_EFORMAT, "required column 'utilization.gpu' missing", 0, 0, 0, NULL, NOPE, NOPE},
	{"required timestamp missing (noheader)", "uuid,utilization.gpu", "GPU-a, 3 %\n", -GL_EFORMAT,
	 "required column 'timestamp' missing", 0, 0, 0, NULL, NOPE, NOPE},
	{"not a capture", NULL, "<html><body>502 Bad Gateway</body></html>\n", -GL_EFORMAT, "no known column", 0, 0, 0, NULL,
	 NOPE, NOPE},
	{"empty", NULL, "\n\n", -GL_EFORMAT, "empty", 0, 0, 0, NULL, NOPE, NOPE},
	{"compute apps: a process name with commas", NULL,
	 "timestamp, gpu_uuid, pid, process_name, used_gpu_memory [MiB]\n"
	 "2026/10/01 12:00:00.000, GPU-a, 4242, python train.py --a=1,2, 512 MiB\n", 0, NULL, 0, 1, 0, NULL, NOPE, NOPE},
	{"compute apps: memory unknown", "timestamp,gpu_uuid,pid,used_memory",
	 "2026/10/01 12:00:00.000, GPU-a, 4242, [N/A]\n", 0, NULL, 0, 1, 0, NULL, NOPE, NOPE},
	{"compute apps: bad pid", NULL, "timestamp, gpu_uuid, pid\n2026/10/01 12:00:00.000, GPU-a, -3\n", 0, NULL, 0, 0, 1,
	 "2: pid: '-3' is not a process id", NOPE, NOPE},
	{"compute apps: gpu_uuid required", NULL, "timestamp, pid, used_gpu_memory [MiB]\n2026/10/01 12:00:00.000, 1, 2 MiB\n",
	 -GL_EFORMAT, "required column 'gpu_uuid' missing", 0, 0, 0, NULL, NOPE, NOPE},
};

static void test_csv_cases(void **state)
{
	(void)state;
	for (size_t i = 0; i < GL_ARRAY_LEN(csv_cases); i++) {
		const struct csv_case *c = &csv_cases[i];
		struct gl_nvsmi_opts o = {c->fields, 0};
		struct gl_nvsmi_result r;
		struct gl_err err = {0};
		int rc = gl_nvsmi_parse_csv(c->text, strlen(c->text), &o, &r, &err);
		char first[300] = "";

		if (r.nproblems)
			snprintf(first, sizeof first, "%zu: %s", r.problems[0].line, r.problems[0].reason);
		if (rc != c->rc || (c->err && !strstr(err.msg, c->err)))
			fail_msg("%s: rc %d err '%s'", c->name, rc, err.msg);
		if (rc == 0 && (r.nsamples != c->nsamples || r.napps != c->napps || r.nproblems != c->nproblems ||
				(c->problem && !strstr(first, c->problem))))
			fail_msg("%s: %zu samples %zu apps %zu problems, first '%s'", c->name, r.nsamples, r.napps, r.nproblems,
				 first);
		if (rc == 0 && r.nsamples) {
			const struct gl_dcgm_reading *rd = &r.samples[0].r;
			double u = gl_dcgm_reading_has(rd, GL_DCGM_GPU_UTIL) ? rd->v[GL_DCGM_GPU_UTIL] : NOPE;
			double m = gl_dcgm_reading_has(rd, GL_DCGM_FB_USED_MIB) ? rd->v[GL_DCGM_FB_USED_MIB] : NOPE;
			if (u != c->util0 || m != c->mem0)
				fail_msg("%s: util %g mem %g", c->name, u, m);
		}
		if (rc != 0)
			assert_int_equal(r.nsamples + r.ngpus + r.nproblems, 0);
		gl_nvsmi_result_fini(&r);
	}
}

/* HAND-WRITTEN: the details the table does not show. */
static void test_csv_details(void **state)
{
	static const char apps[] = "timestamp, gpu_uuid, pid, process_name, used_gpu_memory [MiB]\n"
				   "2026/10/01 12:00:00.000, GPU-a, 4242, python train.py --a=1,2, 512 MiB\n";
	static const char two[] = "timestamp, uuid, utilization.gpu [%], power.draw.instant [W], power.draw [W]\n"
				  "2026/10/01 12:00:00.000, GPU-b, 1 %, 300 W, 250 W\n"
				  "2026/10/01 12:00:00.000, GPU-a, 2 %, 310 W, [N/A]\n"
				  "2026/10/01 12:00:30.000, GPU-b, 3 %, 320 W, 260 W\n";
	struct gl_nvsmi_result r;
	(void)state;

	assert_int_equal(gl_nvsmi_parse_csv(apps, strlen(apps), NULL, &r, NULL), 0);
	assert_string_equal(r.apps[0].process_name, "python train.py --a=1,2");
	assert_int_equal(r.apps[0].used_mib, 512);
	gl_nvsmi_result_fini(&r);

	/* GPUs in first-seen order; power.draw wins over the instant reading,
	 * which stands in when power.draw is not there */
	assert_int_equal(gl_nvsmi_parse_csv(two, strlen(two), NULL, &r, NULL), 0);
	assert_int_equal(r.ngpus, 2);
	assert_string_equal(r.gpus[0].uuid, "GPU-b");
	assert_int_equal(r.samples[2].gpu, 0);
	assert_true(r.samples[0].r.v[GL_DCGM_POWER_W] == 250);
	assert_true(r.samples[1].r.v[GL_DCGM_POWER_W] == 310);
	assert_int_equal(r.values, 6);
	assert_int_equal(r.unavailable, 1);
	gl_nvsmi_result_fini(&r);
}

/* ---- XML ------------------------------------------------------------------- */

struct xml_want {
	const char *path;
	size_t ngpus, nsamples, napps;
	const char *uuid, *model, *driver;
	int64_t t_ms;           /* the document's timestamp, taken as UTC */
	double util, fb_used, power; /* whole GPU's sample; NOPE = absent */
	int mig_mode;
	int64_t mem_total;
};

/* Real (telegraf's captures), values read off the files by hand. */
static const struct xml_want xml_wants[] = {
	{FIX "telegraf_a100-sxm4-v12.xml", 5, 5, 0, "GPU-513536b6-7d19-9063-b049-1e69664bb298", "NVIDIA A100-SXM4-80GB",
	 "535.54.03", 1691149470000, NOPE, 50, 67.03, 1, 81920},
	{FIX "telegraf_tesla-t4.xml", 1, 1, 2, "GPU-d37e67a5-91dd-3774-a5cb-99096249601a", "Tesla T4", "515.105.01",
	 1682353359000, 0, 1032, 26.78, -1, 15360},
	{FIX "telegraf_rtx-4000-sff-ada-v13.xml", 1, 1, 4, "GPU-37037c3f-65c8-ec4d-24a9-420204ad8026",
	 "NVIDIA RTX 4000 SFF Ada Generation", "595.84", 1785978220000, 0, 3534, 8.81, -1, 20475},
	{FIX "telegraf_quadro-p400.xml", 1, 1, 0, "GPU-8f750be4-dfbc-23b9-b33f-da729a536494", "Quadro P400", "418.43",
	 1552323807000, 0, 0, NOPE, -1, 1998},
};

static double have_or_nope(const struct gl_dcgm_reading *r, enum gl_dcgm_metric m)
{
	return gl_dcgm_reading_has(r, m) ? r->v[m] : NOPE;
}

static void test_real_xml(void **state)
{
	(void)state;
	for (size_t i = 0; i < GL_ARRAY_LEN(xml_wants); i++) {
		const struct xml_want *w = &xml_wants[i];
		size_t len;
		char *buf = gl_test_read_file(gl_test_fixture(w->path), &len);
		struct gl_nvsmi_result r;
		struct gl_err err = {0};
		const struct gl_nvsmi_sample *s;

		if (gl_nvsmixml_parse(buf, len, NULL, &r, &err) != 0)
			fail_msg("%s: %s", w->path, err.msg);
		memset(buf, 'x', len);
		if (r.ngpus != w->ngpus || r.nsamples != w->nsamples || r.napps != w->napps || r.nproblems)
			fail_msg("%s: %zu gpus %zu samples %zu apps %zu problems", w->path, r.ngpus, r.nsamples, r.napps,
				 r.nproblems);
		s = &r.samples[0];
		assert_string_equal(r.gpus[0].uuid, w->uuid);
		assert_string_equal(r.gpus[0].model, w->model);
		assert_string_equal(r.gpus[0].driver_version, w->driver);
		assert_int_equal(r.gpus[0].mig_mode, w->mig_mode);
		assert_int_equal(r.gpus[0].memory_total_mib, w->mem_total);
		assert_int_equal(s->t_ms, w->t_ms);
		if (have_or_nope(&s->r, GL_DCGM_GPU_UTIL) != w->util || have_or_nope(&s->r, GL_DCGM_FB_USED_MIB) != w->fb_used ||
		    have_or_nope(&s->r, GL_DCGM_POWER_W) != w->power)
			fail_msg("%s: util %g fb %g power %g", w->path, have_or_nope(&s->r, GL_DCGM_GPU_UTIL),
				 have_or_nope(&s->r, GL_DCGM_FB_USED_MIB), have_or_nope(&s->r, GL_DCGM_POWER_W));
		gl_nvsmi_result_fini(&r);
		free(buf);
	}
}

/* Real: the A100's four MIG instances (gpu_instance_id 3-6, 19968 MiB, 12
 * MiB used) are GPUs of their own without utilisation; the T4's processes. */
static void test_real_xml_details(void **state)
{
	size_t len;
	char *buf = gl_test_read_file(gl_test_fixture(FIX "telegraf_a100-sxm4-v12.xml"), &len);
	struct gl_nvsmi_result r;
	(void)state;

	assert_int_equal(gl_nvsmixml_parse(buf, len, NULL, &r, NULL), 0);
	for (size_t i = 1; i < 5; i++) {
		assert_string_equal(r.gpus[i].uuid, r.gpus[0].uuid);
		assert_int_equal(r.gpus[i].gi_id, (int)i + 2);
		assert_int_equal(r.gpus[i].memory_total_mib, 19968);
		assert_int_equal(r.samples[i].gpu, i);
		assert_true(r.samples[i].r.v[GL_DCGM_FB_USED_MIB] == 12);
		assert_false(gl_dcgm_reading_has(&r.samples[i].r, GL_DCGM_GPU_UTIL));
	}
	assert_true(r.gpus[0].power_limit_w == 500);
	gl_nvsmi_result_fini(&r);
	free(buf);

	buf = gl_test_read_file(gl_test_fixture(FIX "telegraf_tesla-t4.xml"), &len);
	assert_int_equal(gl_nvsmixml_parse(buf, len, NULL, &r, NULL), 0);
	assert_int_equal(r.apps[1].pid, 5762);
	assert_string_equal(r.apps[1].process_name, "python");
	assert_string_equal(r.apps[1].type, "C");
	assert_int_equal(r.apps[1].used_mib, 1005);
	assert_string_equal(r.apps[0].type, "G");
	gl_nvsmi_result_fini(&r);
	free(buf);
}

struct xml_case {
	const char *name, *text;
	int rc;
	size_t ngpus, nsamples, nproblems;
	const char *problem; /* "line: reason" substring of the first problem */
};

#define DOC(ts, body) "<?xml version=\"1.0\" ?>\n<!DOCTYPE nvidia_smi_log SYSTEM \"nvsmi_device_v12.dtd\">\n" \
	"<nvidia_smi_log>\n<timestamp>" ts "</timestamp>\n<driver_version>550.54.14</driver_version>\n" body "</nvidia_smi_log>\n"
#define GPU(uuid, util) "<gpu id=\"00000000:01:00.0\">\n<uuid>" uuid "</uuid>\n<utilization>\n<gpu_util>" util \
	"</gpu_util>\n</utilization>\n</gpu>\n"

/* HAND-WRITTEN: shapes the real captures do not have. */
static const struct xml_case xml_cases[] = {
	{"two documents (-l)", DOC("Mon Oct  5 12:00:00 2026", GPU("GPU-a", "10 %")) DOC("Mon Oct  5 12:00:05 2026", GPU("GPU-a", "20 %")),
	 0, 1, 2, 0, NULL},
	{"entities, comments, CDATA", DOC("Mon Oct  5 12:00:00 2026",
	 "<!-- a comment with <gpu> in it -->\n<gpu id=\"x\">\n<uuid>GPU-<![CDATA[a]]>&amp;b</uuid>\n"
	 "<product_name>A &lt;B&gt; &#67;</product_name>\n</gpu>\n"), 0, 1, 1, 0, NULL},
	{"no timestamp: the GPU, no reading", "<nvidia_smi_log>\n" GPU("GPU-a", "1 %") "</nvidia_smi_log>\n", 0, 1, 0, 1,
	 "has no <timestamp>"},
	{"a bad timestamp", DOC("yesterday", GPU("GPU-a", "1 %")), 0, 1, 0, 2, "4: timestamp: 'yesterday'"},
	{"a gpu without uuid", DOC("Mon Oct  5 12:00:00 2026", "<gpu>\n<product_name>x</product_name>\n</gpu>\n" GPU("GPU-b", "3 %")),
	 0, 1, 1, 1, "6: <gpu> without a uuid"},
	{"a bad value", DOC("Mon Oct  5 12:00:00 2026", GPU("GPU-a", "lots")), 0, 1, 1, 1,
	 "utilization/gpu_util: 'lots' is not a valid value"},
	{"an unclosed element inside <gpu>", DOC("Mon Oct  5 12:00:00 2026",
	 "<gpu>\n<uuid>GPU-a</uuid>\n<utilization>\n<gpu_util>4 %</gpu_util>\n</gpu>\n"), 0, 1, 1, 1,
	 "10: </gpu> closes <utilization>"},
	{"truncated", "<nvidia_smi_log>\n<timestamp>Mon Oct  5 12:00:00 2026</timestamp>\n<gpu>\n<uuid>GPU-a</uuid>\n<fb_memory_usage>\n<used>5 MiB",
	 0, 1, 1, 1, "the document ends inside <used>"},
	{"not nvidia-smi", "<html><body>nope</body></html>", -GL_EFORMAT, 0, 0, 0, NULL},
	{"not XML at all", "timestamp, uuid\n", -GL_EFORMAT, 0, 0, 0, NULL},
	{"not UTF-8", "<nvidia_smi_log>\xc3\x28</nvidia_smi_log>", -GL_EFORMAT, 0, 0, 0, NULL},
	{"a lone '<' at the very end", "<nvidia_smi_log>\n<", 0, 0, 0, 2, "2: not an element: '<'"},
	{"too deep", "<nvidia_smi_log><a><a><a><a><a><a><a><a><a><a><a><a><a><a><a><a><a><a><a><a><a><a><a><a><a><a><a>"
	 "<a><a><a><a><a><a><a><a>", 0, 0, 0, 2, "elements nested deeper than 32"},
};

static void test_xml_cases(void **state)
{
	(void)state;
	for (size_t i = 0; i < GL_ARRAY_LEN(xml_cases); i++) {
		const struct xml_case *c = &xml_cases[i];
		struct gl_nvsmi_result r;
		struct gl_err err = {0};
		int rc = gl_nvsmixml_parse(c->text, strlen(c->text), NULL, &r, &err);
		char first[300] = "";

		if (r.nproblems)
			snprintf(first, sizeof first, "%zu: %s", r.problems[0].line, r.problems[0].reason);
		if (rc != c->rc || (rc == 0 && (r.ngpus != c->ngpus || r.nsamples != c->nsamples || r.nproblems != c->nproblems ||
						 (c->problem && !strstr(first, c->problem)))))
			fail_msg("%s: rc %d (%s) %zu gpus %zu samples %zu problems, first '%s'", c->name, rc, err.msg, r.ngpus,
				 r.nsamples, r.nproblems, first);
		gl_nvsmi_result_fini(&r);
	}
}

static void test_xml_details(void **state)
{
	static const char ent[] = DOC("Mon Oct  5 12:00:00 2026",
				      "<gpu id=\"x\">\n<uuid>GPU-<![CDATA[a]]>&amp;b</uuid>\n"
				      "<product_name>A &lt;B&gt; &#67;</product_name>\n</gpu>\n");
	static const char two[] = DOC("Mon Oct  5 12:00:00 2026", GPU("GPU-a", "10 %"))
		DOC("Mon Oct  5 12:00:05 2026", GPU("GPU-a", "20 %"));
	struct gl_nvsmi_result r;
	(void)state;

	assert_int_equal(gl_nvsmixml_parse(ent, strlen(ent), NULL, &r, NULL), 0);
	assert_string_equal(r.gpus[0].uuid, "GPU-a&b");
	assert_string_equal(r.gpus[0].model, "A <B> C");
	gl_nvsmi_result_fini(&r);

	assert_int_equal(gl_nvsmixml_parse(two, strlen(two), &(struct gl_nvsmi_opts){NULL, -3600}, &r, NULL), 0);
	assert_int_equal(r.samples[0].t_ms, 1791201600000 + 3600000); /* 2026-10-05 12:00 at UTC-1 */
	assert_int_equal(r.samples[1].t_ms - r.samples[0].t_ms, 5000);
	assert_true(r.samples[1].r.v[GL_DCGM_GPU_UTIL] == 20);
	gl_nvsmi_result_fini(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cells),
		cmocka_unit_test(test_real_query_gpu),
		cmocka_unit_test(test_real_query_meaning),
		cmocka_unit_test(test_real_apps),
		cmocka_unit_test(test_csv_cases),
		cmocka_unit_test(test_csv_details),
		cmocka_unit_test(test_real_xml),
		cmocka_unit_test(test_real_xml_details),
		cmocka_unit_test(test_xml_cases),
		cmocka_unit_test(test_xml_details),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
