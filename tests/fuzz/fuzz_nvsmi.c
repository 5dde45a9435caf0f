/* libFuzzer harness: the nvidia-smi CSV and XML parsers (src/sources/nvsmi.c,
 * nvsmixml.c). The first byte picks the parser (CSV, CSV of a noheader
 * capture with --fields, XML) and a UTC offset; the rest is the capture, as
 * an exact-size heap copy so reads past its end are caught. Invariants, not
 * just "no crash": every sample and app names a GPU of the result, the GPU
 * index finds each GPU again, readings are finite, non-negative, percentages
 * at most 100, problems name lines of the input, and a refused capture
 * leaves nothing behind. tests/fuzz/run.sh builds and runs it. */
#include "gl/nvsmi.h"
#include "gl/nvsmixml.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct gl_nvsmi_result *r)
{
	for (size_t i = 0; i < r->nsamples; i++) {
		const struct gl_nvsmi_sample *s = &r->samples[i];
		if (s->gpu >= r->ngpus || s->r.have >> GL_DCGM__NMETRICS)
			abort();
		for (int m = 0; m < GL_DCGM__NMETRICS; m++) {
			if (!gl_dcgm_reading_has(&s->r, (enum gl_dcgm_metric)m))
				continue;
			if (!isfinite(s->r.v[m]) || s->r.v[m] < 0)
				abort();
			if ((m == GL_DCGM_GPU_UTIL || m == GL_DCGM_MEM_COPY_UTIL) && s->r.v[m] > 100)
				abort();
		}
		if (s->line == 0 || s->line > r->lines)
			abort();
	}
	for (size_t i = 0; i < r->napps; i++)
		if (r->apps[i].gpu >= r->ngpus || r->apps[i].pid < 0 || r->apps[i].used_mib < -1)
			abort();
	for (size_t i = 0; i < r->nproblems; i++)
		if (!r->problems[i].reason[0] || r->problems[i].line > r->lines + 1)
			abort();
	if (r->nproblems > GL_NVSMI_MAX_PROBLEMS || r->bad_rows > r->rows + r->nproblems + r->problems_dropped)
		abort();
	for (size_t i = 0; i < r->ngpus; i++) {
		const struct gl_nvsmi_gpu *g = &r->gpus[i];
		size_t before = r->ngpus;
		if (!g->uuid[0])
			abort();
		if (gl_nvsmi_gpu_get((struct gl_nvsmi_result *)r, g->uuid, strlen(g->uuid), g->gi_id) != i ||
		    r->ngpus != before)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gl_nvsmi_result r;
	struct gl_nvsmi_opts o = {NULL, 0};
	struct gl_err err = {0, ""};
	char *buf;
	int rc, kind;

	if (size == 0)
		return 0;
	kind = data[0] % 3;
	o.utc_offset_s = ((int)(data[0] >> 2) - 32) * 1800;
	if (kind == 1)
		o.fields = "timestamp,uuid,utilization.gpu,memory.used,power.draw";
	buf = malloc(size - 1 ? size - 1 : 1);
	if (!buf)
		return 0;
	memcpy(buf, data + 1, size - 1);
	rc = kind == 2 ? gl_nvsmixml_parse(buf, size - 1, &o, &r, &err) : gl_nvsmi_parse_csv(buf, size - 1, &o, &r, &err);
	if (rc == 0)
		check(&r);
	else if (rc != -GL_EFORMAT && rc != -GL_ERANGE)
		abort();
	else if (r.ngpus || r.nsamples || r.napps || r.nproblems || r.gpus || r.problems || !err.msg[0])
		abort(); /* a refused capture produces nothing but the reason */
	gl_nvsmi_result_fini(&r);
	free(buf);
	return 0;
}
