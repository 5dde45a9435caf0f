/* libFuzzer harness for the sacct line parser and hostlist expansion.
 * Input: bytes split on '\n'; each line goes through the default '|' layout,
 * a '☃' layout with JobName last and the pure helpers. Parsed slices must lie
 * inside the line: anything else is a bug even if no sanitizer fires. */
#include "gl/hostlist.h"
#include "gl/sacct.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct gl_sacct_layout lay_pipe, lay_snow;
static int ready;

static void check_slice(struct gl_str s, const char *line, size_t len)
{
	if (s.p && (s.p < line || s.p + s.len > line + len))
		abort();
}

static void check_rec(const struct gl_sacct_rec *r, const char *line, size_t len)
{
	const struct gl_str *all[] = {&r->job_id, &r->job_id_raw, &r->cluster, &r->partition,
				      &r->qos, &r->account, &r->group, &r->user, &r->state_raw,
				      &r->exit_code, &r->req_mem, &r->req_tres, &r->alloc_tres,
				      &r->node_list, &r->wckey, &r->job_name, &r->step};
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		check_slice(*all[i], line, len);
	if (memchr(r->gpu_type, '\0', sizeof r->gpu_type) == NULL)
		abort();
	if ((unsigned)r->state >= GL_SACCT_JS__COUNT || r->gpus_alloc < 0 || r->gpus_req < 0)
		abort();
}

/* Stops long expansions early: the cap itself is covered by unit tests. */
static int host_cb(const char *host, void *ud)
{
	int *n = ud;
	(void)host;
	return ++*n >= 512;
}

static void one_line(const char *line, size_t len)
{
	struct gl_sacct_rec rec;
	struct gl_err err;
	int64_t v, gpus;
	char type[GL_SACCT_GPU_TYPE_MAX];
	int hosts = 0;

	if (gl_sacct_parse_line(&lay_pipe, line, len, &rec, &err) == 0) {
		check_rec(&rec, line, len);
		if (rec.node_list.p)
			(void)gl_hostlist_expand(rec.node_list.p, rec.node_list.len, host_cb, &hosts, &err);
	}
	if (gl_sacct_parse_line(&lay_snow, line, len, &rec, &err) == 0)
		check_rec(&rec, line, len);
	(void)gl_sacct_parse_time(line, len, &v);
	(void)gl_sacct_parse_duration(line, len, &v);
	if (gl_sacct_parse_tres_gpus(line, len, &gpus, type) == 0 && gpus < 0)
		abort();
	hosts = 0;
	(void)gl_hostlist_expand(line, len, host_cb, &hosts, &err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p, *end;

	if (!ready) {
		if (gl_sacct_layout_init(&lay_pipe, NULL, NULL, NULL) != 0 ||
		    gl_sacct_layout_init(&lay_snow, "JobID,JobIDRaw,User,Account,State,Submit,Start,End,"
					 "Elapsed,ElapsedRaw,Timelimit,NNodes,NCPUS,ReqMem,ReqTRES,"
					 "AllocTRES,NodeList,JobName", "☃", NULL) != 0)
			abort();
		ready = 1;
	}
	/* copy so ASan sees reads past the line as overflows, not as the next line */
	p = (const char *)data;
	end = p + size;
	while (p <= end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		char *copy = malloc(n ? n : 1);
		if (!copy)
			abort();
		memcpy(copy, p, n);
		one_line(copy, n);
		free(copy);
		if (!nl)
			break;
		p = nl + 1;
	}
	return 0;
}
