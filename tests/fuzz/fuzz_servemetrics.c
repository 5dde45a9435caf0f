/* libFuzzer harness: the serving mapper (src/sources/servemetrics.c) and
 * the counter arithmetic applied to what it returns
 * (src/domain/increase.c). Invariants, not only "no crash": every counter
 * a series has is a finite count >= 0; requests include the failed ones
 * where the family counts both from one source; latency bounds ascend and
 * end with +Inf, a histogram with a problem has none; a scrape applied
 * twice counts nothing the second time; a rise never counts negative; a
 * quantile lies within the histogram's bounds. Seeds: the real scrapes of
 * tests/fixtures/serving. */
#include "gl/increase.h"
#include "gl/servemetrics.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_series(const struct gl_servemetrics_series *x)
{
	double cur[GL_SERVEMETRICS__NCTR + GL_SERVEMETRICS_MAX_LE], hw[GL_SERVEMETRICS__NCTR + GL_SERVEMETRICS_MAX_LE];
	int64_t inc[GL_SERVEMETRICS__NCTR + GL_SERVEMETRICS_MAX_LE];
	size_t n = GL_SERVEMETRICS__NCTR + x->nle;
	struct gl_increase_series s = {0, 0, NAN, 0, n, hw};
	struct gl_increase_result r = {.inc = inc};
	struct gl_increase_obs o = {1000, x->start_s, 0, INT64_MIN, 970, cur};

	if (!x->model_name || !x->pod || !x->namespace_)
		abort();
	for (int k = 0; k < GL_SERVEMETRICS__NCTR; k++) {
		cur[k] = NAN;
		if (x->have >> k & 1u) {
			if (!isfinite(x->v[k]) || x->v[k] < 0)
				abort();
			cur[k] = x->v[k];
		}
	}
	if (x->family != GL_SERVEMETRICS_SGLANG && (x->have & 3u) == 3u && x->v[GL_SERVEMETRICS_FAILED] > x->v[GL_SERVEMETRICS_REQUESTS])
		abort();
	if (x->hist_problem && x->nle)
		abort();
	for (size_t i = 0; i < x->nle; i++) {
		if (i && !(x->le[i] > x->le[i - 1]))
			abort();
		cur[GL_SERVEMETRICS__NCTR + i] = x->cum[i];
	}
	if (x->nle && !isinf(x->le[x->nle - 1]))
		abort();
	if (x->nle) {
		double q = gl_increase_quantile(x->le, x->cum, x->nle, 0.5);
		double lo = x->le[0] < 0 ? x->le[0] : 0;
		if (!isnan(q) && (q < lo || (x->nle > 1 && q > x->le[x->nle - 2])))
			abort();
	}
	for (size_t i = 0; i < n; i++)
		hw[i] = NAN;
	gl_increase_step(&s, &o, &r);
	/* the same scrape later: nothing rose */
	o.at_s = 1030;
	gl_increase_step(&s, &o, &r);
	for (size_t i = 0; i < n; i++)
		if (inc[i] != 0 || r.backwards)
			abort();
	/* everything doubled: each rise is >= 0 */
	for (size_t i = 0; i < n; i++)
		cur[i] = isnan(cur[i]) ? NAN : cur[i] * 2 > 9e15 ? cur[i] : cur[i] * 2;
	o.at_s = 1060;
	gl_increase_step(&s, &o, &r);
	for (size_t i = 0; i < n; i++)
		if (inc[i] < 0)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gl_servemetrics_scrape s;
	struct gl_err err = {0, ""};
	char *buf = malloc(size + 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	if (gl_servemetrics_parse(&s, buf, size, size % 2 ? "m" : NULL, &err) == 0) {
		if (!s.known)
			abort();
		for (size_t i = 0; i < s.n; i++)
			check_series(&s.series[i]);
	} else if (!err.msg[0]) {
		abort(); /* a refusal says why */
	}
	gl_servemetrics_fini(&s);
	free(buf);
	return 0;
}
