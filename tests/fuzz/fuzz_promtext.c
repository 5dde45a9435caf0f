/* libFuzzer harness: the Prometheus text parser and the dcgm mapping.
 *
 * The first byte picks the format (auto / 0.0.4 / OpenMetrics) and a small
 * line bound now and then, so the long-line and forced-format paths get
 * exercised too; the rest is the scrape. Every callback touches every byte it
 * is handed, so ASan sees any slice that strays outside the input or the
 * scratch buffer. */
#include "gl/dcgm.h"
#include "gl/promtext.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile unsigned sink;

static void touch(struct gl_str s)
{
	size_t i;
	for (i = 0; i < s.len; i++)
		sink += (unsigned char)s.p[i];
}

static int on_sample(void *ctx, const struct gl_promtext_sample *s)
{
	size_t i;
	touch(s->name);
	touch(s->value_raw);
	for (i = 0; i < s->nlabels; i++) {
		touch(s->labels[i].name);
		touch(s->labels[i].value);
	}
	if (s->nlabels > GL_PROMTEXT_MAX_LABELS || s->name.len == 0)
		abort();
	return gl_dcgm_scrape_add(ctx, s);
}

static int on_meta(void *ctx, const struct gl_promtext_meta *m)
{
	(void)ctx;
	touch(m->metric);
	touch(m->text);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct gl_dcgm_idle_policy pol = {0.01, 1, 1, 100.0, 50.0};
	struct gl_promtext_opts o = {GL_PROMTEXT_AUTO, 0};
	struct gl_promtext_stats st;
	struct gl_dcgm_scrape s;
	struct gl_dcgm_opts dopts = {NULL};
	struct gl_promtext_handler h = {on_sample, on_meta, NULL};
	struct gl_err err = {0, ""};
	char *buf;
	size_t i;
	int rc;

	if (size == 0)
		return 0;
	o.format = (enum gl_promtext_format)(data[0] % 3);
	if (data[0] & 0x80)
		o.max_line = 1 + (data[0] & 0x3f);
	if (data[0] & 0x40)
		dopts.node = "fuzz-node";
	/* an exact-size heap copy so reads past the end are caught */
	buf = malloc(size - 1 ? size - 1 : 1);
	if (!buf)
		return 0;
	memcpy(buf, data + 1, size - 1);

	gl_dcgm_scrape_init(&s, &dopts);
	h.ctx = &s;
	rc = gl_promtext_parse(buf, size - 1, &o, &h, &st, &err);
	if (rc != 0 && rc != -GL_EFORMAT)
		abort();
	if (st.nbad > GL_PROMTEXT_MAX_BAD || st.nbad > st.bad_lines + st.no_value)
		abort();
	for (i = 0; i < s.ngpus; i++) {
		const struct gl_dcgm_gpu *g = &s.gpus[i];
		struct gl_dcgm_bucket b;
		int busy;
		if (gl_dcgm_scrape_find(&s, g->hostname, g->uuid, g->gi_id) != g)
			abort();
		gl_dcgm_bucket_init(&b, 1700000100, 300);
		if (gl_dcgm_bucket_add(&b, &pol, 1700000100, &g->r) != 0)
			abort();
		(void)gl_dcgm_reading_is_busy(&pol, &g->r, &busy);
		(void)gl_dcgm_bucket_is_idle(&b, &busy);
	}
	gl_dcgm_scrape_fini(&s);

	/* the convenience wrapper on the same bytes */
	rc = gl_dcgm_scrape_parse(&s, buf, size - 1, &dopts, &err);
	gl_dcgm_scrape_fini(&s);
	(void)rc;
	free(buf);
	return 0;
}
