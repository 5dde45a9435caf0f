/* Audit log speed: synchronous single-row append (the trigger-style figure
 * of ANCHORS.md), batched append (what the API's writer thread does), the
 * async writer end to end, and verification of a 1 M-row chain.
 * Prints markdown rows "| figure | ours | limit | ratio |". */
#include "gl/audit.h"
#include "store/db_int.h"
#include "gl/timeutil.h"
#include "lib/testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static PGconn *fresh(const char *name, char *dsn, size_t n)
{
	PGconn *c;
	struct gl_err err = {0};
	if (gl_test_db_fresh(name, dsn, n))
		gl_test_die("cannot create the database");
	/* the session settings gpuledger itself uses (UTC, no JIT) */
	if (gl_db_connect_dsn(dsn, &c, &err))
		gl_test_die(err.msg);
	return c;
}

static void row(const char *figure, double ours, const char *limit, double lim)
{
	printf("| %s | %.0f rows/s | %s | %.2f |\n", figure, ours, limit, ours / lim);
}

/* 1 M chained rows straight in with COPY, built with the same canonical
 * encoding: verification is what is measured, not the load. */
static void load_chain(PGconn *c, long n)
{
	struct gl_strbuf data = GL_STRBUF_INIT, canon = GL_STRBUF_INIT;
	struct gl_err err = {0};
	unsigned char prev[GL_AUDIT_HASH_LEN] = {0}, h[GL_AUDIT_HASH_LEN];
	int64_t base_us = ((int64_t)time(NULL) - 3600) * 1000000;
	char ph[65], hh[65], ts[32], detail[48], obj[32];

	for (long i = 1; i <= n; i++) {
		int64_t at = base_us + i;
		snprintf(detail, sizeof detail, "{\"ms\": 0.25, \"status\": %ld}", 200 + i % 5);
		snprintf(obj, sizeof obj, "/v1/jobs/%ld", i);
		gl_strbuf_reset(&canon);
		gl_audit_canonical(&canon, i, at, "token:1", "10.1.2.3", "http.request", obj, "ok", detail);
		gl_audit_hash(prev, canon.p, canon.len, h);
		gl_audit_hex(prev, ph);
		gl_audit_hex(h, hh);
		gl_timeutil_format(at / 1000000, ts, sizeof ts);
		ts[19] = '\0';
		gl_strbuf_printf(&data, "%ld\t%s.%06lld+00\ttoken:1\t10.1.2.3\thttp.request\t%s\tok\t%s\t\\\\x%s\t\\\\x%s\n", i,
				 ts, (long long)(at % 1000000), obj, detail, ph, hh);
		memcpy(prev, h, sizeof prev);
		if (i % 100000 == 0 || i == n) {
			if (gl_db_copy_in(c,
					  "COPY audit_log (audit_id, at, actor, source_addr, action, object, outcome, detail,"
					  " prev_hash, hash) FROM STDIN",
					  data.p, data.len, &err))
				gl_test_die(err.msg);
			gl_strbuf_reset(&data);
		}
	}
	gl_strbuf_fini(&data);
	gl_strbuf_fini(&canon);
}

int main(void)
{
	char dsn[512];
	struct gl_err err = {0};
	PGconn *c = fresh("gl_bench_audit", dsn, sizeof dsn);
	double t0, t;
	const long n_single = 3000, n_batch = 100000, n_async = 100000, n_verify = 1000000;

	PQclear(PQexec(c, "SET synchronous_commit = on"));
	/* 1. one row per transaction, as a trigger-based design would pay */
	t0 = gl_test_now_s();
	for (long i = 0; i < n_single; i++)
		if (gl_audit_append(gl_db_store(c), "token:1", "10.1.2.3", "http.request", "/v1/jobs", "ok", "{\"status\": 200}", &err))
			gl_test_die(err.msg);
	t = gl_test_now_s() - t0;
	row("audit append, 1 row per transaction", (double)n_single / t, "2.5–2.9 k/s (ANCHORS: chained append)", 2700);

	/* 2. batches of 256 (the writer thread's unit) */
	{
		struct gl_audit_entry e[256];
		for (int k = 0; k < 256; k++)
			e[k] = (struct gl_audit_entry){0, "token:1", "10.1.2.3", "http.request", "/v1/jobs", "ok",
						       "{\"status\": 200, \"route\": \"jobs\"}"};
		t0 = gl_test_now_s();
		for (long i = 0; i < n_batch; i += 256)
			if (gl_audit_append_batch(gl_db_store(c), e, 256, NULL, &err))
				gl_test_die(err.msg);
		t = gl_test_now_s() - t0;
		row("audit append, batches of 256", (double)n_batch / t, "2.7 k/s (ANCHORS chained append)", 2700);
	}

	/* 3. the API path: submit to the async writer, stop = drain */
	{
		struct gl_audit_writer *w;
		struct gl_audit_entry e = {0, "token:1", "127.0.0.1", "http.request", "/v1/jobs", "ok",
					   "{\"method\":\"GET\",\"route\":\"jobs\",\"status\":200,\"ms\":0.120}"};
		double submit;
		if (gl_audit_writer_start(dsn, 65536, 200, &w, &err))
			gl_test_die(err.msg);
		t0 = gl_test_now_s();
		for (long i = 0; i < n_async; i++)
			gl_audit_writer_submit(w, &e);
		submit = gl_test_now_s() - t0;
		gl_audit_writer_stop(w);
		t = gl_test_now_s() - t0;
		row("audit writer (async, API path), end to end", (double)n_async / t, "2.7 k/s (ANCHORS chained append)",
		    2700);
		fprintf(stderr, "  writer: %.2f µs per submit on the request thread\n", submit / (double)n_async * 1e6);
	}
	{
		struct gl_audit_verify v;
		if (gl_audit_verify(gl_db_store(c), NULL, 0, &v, &err) || !v.ok)
			gl_test_die(v.ok ? err.msg : v.reason);
		fprintf(stderr, "  chain after the append runs: %lld rows, ok\n", (long long)v.rows);
	}
	PQfinish(c);

	/* 4. verification of 1 M rows */
	c = fresh("gl_bench_audit_verify", dsn, sizeof dsn);
	t0 = gl_test_now_s();
	load_chain(c, n_verify);
	fprintf(stderr, "  loaded %ld chained rows in %.1f s\n", n_verify, gl_test_now_s() - t0);
	{
		struct gl_audit_verify v;
		t0 = gl_test_now_s();
		if (gl_audit_verify(gl_db_store(c), NULL, 0, &v, &err))
			gl_test_die(err.msg);
		t = gl_test_now_s() - t0;
		if (!v.ok || v.rows != n_verify)
			gl_test_die(v.reason);
		row("audit verify, 1 M rows", (double)n_verify / t, "430 k rows/s (ANCHORS); target 300 k", 430000);
	}
	PQfinish(c);
	return 0;
}
