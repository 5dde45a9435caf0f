/* The health sink of ingest (see include/gl/srchealth.h). */
#include "gl/srchealth.h"

#include <stddef.h>

static gl_srchealth_sink_fn sink;

void gl_srchealth_set_sink(gl_srchealth_sink_fn s)
{
	sink = s;
}

void gl_srchealth_report(const char *source, const char *cluster, const char *key, int ok, int64_t at_s,
			 const char *err, double duration_s)
{
	if (sink)
		sink(source, cluster, key, ok, at_s, err, duration_s);
}
