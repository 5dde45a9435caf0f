/* Reading the simulator's trace slices (see include/gl/simload.h). */
#include "gl/simload.h"
#include "gl/strbuf.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

static int read_file(const char *path, struct gl_strbuf *out, struct gl_err *err)
{
	FILE *fp = fopen(path, "rb");
	char buf[65536];
	size_t n;
	if (!fp)
		return gl_err_set(err, GL_EIO, "%s: %s", path, strerror(errno));
	while ((n = fread(buf, 1, sizeof buf, fp)) > 0)
		gl_strbuf_append(out, buf, n);
	fclose(fp);
	return 0;
}

int gl_simload_traces(const char *dir, struct gl_simtrace_traces *tr, struct gl_err *err)
{
	static const char *const files[] = {"philly_jobs.tsv", "openb_pods.tsv", "genai_duty.tsv"};
	int rc = 0;
	for (size_t i = 0; i < GL_ARRAY_LEN(files) && !rc; i++) {
		struct gl_strbuf b = GL_STRBUF_INIT;
		char path[PATH_MAX];
		snprintf(path, sizeof path, "%s/%s", dir, files[i]);
		rc = read_file(path, &b, err);
		if (!rc && i == 0)
			rc = gl_simtrace_parse_philly(tr, path, b.p, b.len, err);
		else if (!rc && i == 1)
			rc = gl_simtrace_parse_pods(tr, path, b.p, b.len, err);
		else if (!rc)
			rc = gl_simtrace_parse_duty(tr, path, b.p, b.len, err);
		gl_strbuf_fini(&b);
	}
	return rc;
}
