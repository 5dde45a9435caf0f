/* End-to-end `gpuledger ingest sacct` of 1M synthetic jobs (the real testbed
 * lines resampled with fresh DBIndex values) against the limit: a raw COPY of
 * the same rows into the same table with the same indexes. Also re-ingesting
 * the same file (every row unchanged). Needs the env of bench/run.sh. */
#include "gl/jobs.h"
#include "lib/testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TB "tests/fixtures/sacct/testbed/"

static long write_big(const char *path, long rows)
{
	FILE *in = fopen(TB "sacct_alloc.txt", "r"), *out = fopen(path, "w");
	char lines[32][1024];
	int n = 0;
	long k = 0;
	if (!in || !out)
		gl_test_die("cannot open fixture or output");
	while (n < 32 && fgets(lines[n], sizeof lines[n], in))
		n++;
	fclose(in);
	for (; k < rows; k++) {
		char buf[1024], *f[40];
		int nf = 0;
		snprintf(buf, sizeof buf, "%s", lines[k % n]);
		buf[strcspn(buf, "\n")] = '\0';
		for (char *s = buf, *t; nf < 40 && (t = strsep(&s, "|"));)
			f[nf++] = t;
		for (int j = 0; j < nf; j++) {
			if (j == 27) /* DBIndex */
				fprintf(out, "%ld", k + 1);
			else if (j == 0 && k >= n) /* distinct job ids too */
				fprintf(out, "%ld", 100000 + k);
			else
				fputs(f[j], out);
			fputc(j + 1 < nf ? '|' : '\n', out);
		}
	}
	fclose(out);
	return k;
}

int main(int argc, char **argv)
{
	char dsn[512], path[512], copyfile[512], fields[1024];
	long rows = argc > 1 ? atol(argv[1]) : 1000000;
	double t_first, t_again, t_copy;
	const char *tmp = getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp";
	PGconn *c;
	FILE *f;

	snprintf(path, sizeof path, "%s/bench-sacct.txt", tmp);
	snprintf(copyfile, sizeof copyfile, "%s/bench-jobs.copy", tmp);
	f = fopen(TB "sacct_fields.txt", "r");
	if (!f || !fgets(fields, sizeof fields, f))
		gl_test_die("fields");
	fclose(f);
	fields[strcspn(fields, "\n")] = '\0';
	for (char *p = fields; *p; p++)
		if (*p == '|')
			*p = ',';
	write_big(path, rows);
	if (gl_test_db_fresh("gl_bench_ingest", dsn, sizeof dsn))
		gl_test_die("db");
	c = PQconnectdb(dsn);
	t_first = gl_test_time_ingest_sacct(dsn, "testgpu", path, fields);
	t_again = gl_test_time_ingest_sacct(dsn, "testgpu", path, fields);

	/* the limit: COPY the very same rows into the same (now emptied) table */
	t_copy = gl_test_copy_baseline(c, "jobs", gl_jobs_stage_columns, copyfile);
	fprintf(stderr, "  raw COPY: %.2f s\n", t_copy);
	printf("| sacct ingest, %ld synthetic jobs into an empty table | %.2f s (%.0f rows/s) | raw COPY of the same rows: %.2f s (target <= 1.5x) | %.2fx |\n",
	       rows, t_first, (double)rows / t_first, t_copy, t_first / t_copy);
	printf("| sacct re-ingest, same %ld jobs (all unchanged) | %.2f s | first ingest: %.2f s (target <= 1.5x) | %.2fx |\n",
	       rows, t_again, t_first, t_again / t_first);
	PQfinish(c);
	unlink(path);
	unlink(copyfile);
	return 0;
}
