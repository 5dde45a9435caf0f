/* A rerun after a crash: `gpuledger ingest sacct` of N untyped GPU jobs
 * (gl_test_synth_untyped_sacct, no node inventory) into a jobs table
 * whose statistics say it is empty (DELETE, VACUUM (TRUNCATE false):
 * what autovacuum records after a killed batch; autovacuum off on jobs so
 * they stay so), against the first ingest of the same file into a fresh
 * database. Before sql/027 the node-model trigger's join went nested-loop
 * over the batch there (10k rows: 301 s on this machine). Sizes: argv,
 * default 10000 and 20000. Needs the env of bench/run.sh. */
#include "lib/testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void one(int n, const char *tmp, const char *fields)
{
	char dsn[1024], su[1200], path[600];
	double first, rerun;
	snprintf(path, sizeof path, "%s/bench-rerun.sacct", tmp);
	if (gl_test_synth_untyped_sacct(path, n) || gl_test_db_fresh("gl_bench_rerun", dsn, sizeof dsn))
		gl_test_die("set-up");
	snprintf(su, sizeof su, "%s dbname=gl_bench_rerun", gl_test_admin_dsn());
	if (gl_test_exec_dsn(su, "ALTER TABLE jobs SET (autovacuum_enabled = false)") < 0)
		gl_test_die("autovacuum off");
	first = gl_test_time_ingest_sacct(dsn, "synth", path, fields);
	if (gl_test_exec_dsn(dsn, "DELETE FROM jobs") < 0 || gl_test_exec_owner(dsn, "VACUUM (TRUNCATE false) jobs") < 0 ||
	    gl_test_qint_dsn(dsn, "SELECT reltuples::bigint FROM pg_class WHERE relname = 'jobs'") != 0)
		gl_test_die("empty statistics");
	rerun = gl_test_time_ingest_sacct(dsn, "synth", path, fields);
	fprintf(stderr, "  %d jobs: first %.2f s, rerun on empty statistics %.2f s\n", n, first, rerun);
	printf("| rerun: ingest sacct of %d untyped GPU jobs into jobs whose statistics say 0 rows (DELETE + VACUUM "
	       "(TRUNCATE false)) | %.2f s | the first ingest of the same file into a fresh database: %.2f s | %.2fx |\n",
	       n, rerun, first, rerun / first);
	unlink(path);
}

int main(int argc, char **argv)
{
	const char *tmp = getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp";
	char fields[1024];
	if (gl_test_sacct_fields(fields, sizeof fields))
		gl_test_die("fields");
	if (argc > 1)
		for (int i = 1; i < argc; i++)
			one(atoi(argv[i]), tmp, fields);
	else {
		one(10000, tmp, fields);
		one(20000, tmp, fields);
	}
	return 0;
}
