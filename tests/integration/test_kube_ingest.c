/* Kubernetes ingestion against a real PostgreSQL through the real binary: the
 * openb snapshots (derived from the Alibaba trace, tests/fixtures/kube/README.md)
 * ingested in time order and checked pod by pod against an independent
 * computation from the trace CSV; idempotent re-ingest; old snapshots
 * refused; documents that are not PodLists; pods without uid; the daemon's
 * file and command sources. The small PodLists in this file are hand-written. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define FIXDIR "tests/fixtures/kube"
/* Must match tests/tools/openb_to_podlist.c (the model is documented there). */
#define OPENB_EPOCH 1672531200LL
#define OPENB_LINGER_S 86400LL
#define NONE (-1LL)
#define POD0 "pod:00000000-0b0e-4000-8000-000000000000" /* openb-pod-0000 */

/* The real trace CSV the snapshots were derived from (tests/fixtures/kube/
 * README.md), after $GL_OPENB_CSV when that is set. */
static const char *const csv_paths[] = {
	FIXDIR "/openb_pod_list_default.csv",
};

static char g_dsn[512];
static PGconn *g_c;
static long long g_inst[32];
static size_t g_ninst;

struct csv_pod {
	char name[64], qos[32], phase[16];
	long num_gpu, gpu_milli;
	long long created, deleted, scheduled;
};
static struct csv_pod *g_csv;
static size_t g_ncsv;

static void load_csv(void)
{
	FILE *f = NULL;
	char line[1024];
	size_t cap = 0;
	const char *env = getenv("GL_OPENB_CSV");

	if (env)
		f = fopen(env, "r");
	for (size_t i = 0; !f && i < sizeof csv_paths / sizeof csv_paths[0]; i++)
		f = fopen(csv_paths[i], "r");
	if (!f)
		return;
	if (!fgets(line, sizeof line, f)) {
		fclose(f);
		return;
	}
	while (fgets(line, sizeof line, f)) {
		char *col[11], *p = line;
		int k = 0;
		struct csv_pod *c;
		line[strcspn(line, "\r\n")] = '\0';
		for (; k < 11 && p; k++) {
			col[k] = p;
			p = strchr(p, ',');
			if (p)
				*p++ = '\0';
		}
		if (k != 11)
			continue;
		if (g_ncsv == cap) {
			cap = cap ? cap * 2 : 1024;
			g_csv = realloc(g_csv, cap * sizeof *g_csv);
		}
		c = &g_csv[g_ncsv++];
		snprintf(c->name, sizeof c->name, "%s", col[0]);
		c->num_gpu = atol(col[3]);
		c->gpu_milli = atol(col[4]);
		snprintf(c->qos, sizeof c->qos, "%s", col[6]);
		snprintf(c->phase, sizeof c->phase, "%s", col[7]);
		c->created = atoll(col[8]);
		c->deleted = atoll(col[9]);
		c->scheduled = col[10][0] ? atoll(col[10]) : -1;
	}
	fclose(f);
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;
	return (x > y) - (x < y);
}

static int setup(void **state)
{
	DIR *d;
	struct dirent *de;

	if (gl_test_db_fresh("gl_test_kube", g_dsn, sizeof g_dsn))
		return -1;
	g_c = PQconnectdb(g_dsn);
	if (PQstatus(g_c) != CONNECTION_OK)
		return -1;
	PQclear(PQexec(g_c, "SET client_min_messages = warning"));
	d = opendir(gl_test_fixture(FIXDIR));
	while ((de = readdir(d))) {
		long long t;
		char tail[8];
		if (sscanf(de->d_name, "openb-at-%lld.%7s", &t, tail) == 2 && !strcmp(tail, "json") &&
		    g_ninst < sizeof g_inst / sizeof g_inst[0])
			g_inst[g_ninst++] = t;
	}
	closedir(d);
	qsort(g_inst, g_ninst, sizeof g_inst[0], cmp_ll);
	load_csv();
	if (!g_csv) {
		fprintf(stderr, "tests/fixtures/kube/openb_pod_list_default.csv is missing\n");
		return -1;
	}
	return g_ninst >= 2 ? 0 : -1;
}

static int teardown(void **state)
{
	PQfinish(g_c);
	free(g_csv);
	return 0;
}

static void snap_path(long long t, char *buf, size_t n)
{
	snprintf(buf, n, FIXDIR "/openb-at-%lld.json", t);
}

static void rfc3339(long long unix_s, char *buf, size_t n)
{
	time_t tt = (time_t)unix_s;
	struct tm tm;
	gmtime_r(&tt, &tm);
	strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void ingest_at(const char *cluster, const char *file, long long unix_s, struct gl_test_out *o)
{
	char at[40];
	rfc3339(unix_s, at, sizeof at);
	assert_int_equal(gl_test_run(g_dsn, NULL, o, "ingest", "kube", "--cluster", cluster, "--file", file, "--at", at,
				     NULL),
			 0);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

/* Copies a fixture to path (atomically: a reader never sees half a file)
 * and stamps it with mtime, as a refresher writing `kubectl` output would. */
static void place_snapshot(const char *fixture, const char *path, long long mtime)
{
	char tmp[PATH_MAX], buf[65536];
	FILE *in = fopen(fixture, "rb"), *out;
	size_t n;
	struct timespec ts[2];

	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	out = fopen(tmp, "wb");
	assert_non_null(in);
	assert_non_null(out);
	while ((n = fread(buf, 1, sizeof buf, in)) > 0)
		assert_int_equal(fwrite(buf, 1, n, out), n);
	fclose(in);
	assert_int_equal(fclose(out), 0);
	ts[0].tv_sec = ts[1].tv_sec = (time_t)mtime;
	ts[0].tv_nsec = ts[1].tv_nsec = 0;
	assert_int_equal(utimensat(AT_FDCWD, tmp, ts, 0), 0);
	assert_int_equal(rename(tmp, path), 0);
}

static const char *tmpdir(void)
{
	return getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp";
}

/* ---- the model, from the CSV ---------------------------------------- */

enum { ABSENT, PENDING, RUNNING, DONE };

static int phase_at(const struct csv_pod *p, long long t)
{
	int terminal = !strcmp(p->phase, "Succeeded") || !strcmp(p->phase, "Failed");
	if (t < p->created)
		return ABSENT;
	if (t < p->deleted)
		return p->scheduled >= 0 && t >= p->scheduled ? RUNNING : PENDING;
	if (terminal && t < p->deleted + OPENB_LINGER_S)
		return DONE;
	return ABSENT;
}

struct want {
	const char *state;
	long long start, end, gpu_milli, req_gpu_milli;
};

/* What the row of CSV pod p must look like after snapshots 0..k were
 * ingested in order; 0 when the pod never appeared (no row). */
static int expect(const struct csv_pod *p, size_t k, struct want *w)
{
	long long milli = (long long)p->num_gpu * p->gpu_milli;
	size_t last = k + 1;
	int ph;

	for (size_t j = 0; j <= k; j++)
		if (phase_at(p, g_inst[j]) != ABSENT)
			last = j;
	if (last > k)
		return 0;
	ph = phase_at(p, g_inst[last]);
	w->req_gpu_milli = milli;
	w->start = p->scheduled >= 0 && g_inst[last] >= p->scheduled ? OPENB_EPOCH + p->scheduled : NONE;
	w->gpu_milli = w->start != NONE ? milli : 0;
	if (ph == DONE) {
		/* closed by its own finishedAt; a listed-then-gone finished pod keeps it */
		w->state = !strcmp(p->phase, "Succeeded") ? "COMPLETED" : "FAILED";
		w->end = OPENB_EPOCH + (w->start != NONE ? p->deleted : p->created);
	} else if (last < k) {
		/* vanished: closed at the last time it was seen */
		w->state = "CANCELLED";
		w->end = OPENB_EPOCH + g_inst[last];
	} else {
		w->state = ph == RUNNING ? "RUNNING" : "PENDING";
		w->end = NONE;
	}
	return 1;
}

#define CLUSTER_SQL(name) "(SELECT cluster_id FROM clusters WHERE name = '" name "')"

/* Every row of cluster k1 against the model, and the running milli-GPUs per
 * qos label and the pending demand at instant k against the CSV. */
static void check_against_trace(size_t k)
{
	PGresult *r;
	char *seen = calloc(g_ncsv, 1);
	size_t want_rows = 0;
	long long want_q[8] = {0}, got_q[8] = {0}, want_pending = 0;
	char qos[8][32];
	size_t nq = 0;

	assert_non_null(seen);
	r = PQexec(g_c, "SELECT job_key, state, coalesce(extract(epoch FROM start_at)::bigint, -1),"
			" coalesce(extract(epoch FROM end_at)::bigint, -1), gpu_milli, req_gpu_milli,"
			" tags->'labels'->>'qos', tags->>'namespace', job_id, coalesce(elapsed_s, -1)"
			" FROM jobs WHERE cluster_id = " CLUSTER_SQL("k1"));
	assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
	for (int i = 0; i < PQntuples(r); i++) {
		size_t idx;
		struct want w;
		const struct csv_pod *p;
		assert_int_equal(sscanf(PQgetvalue(r, i, 0), "pod:%8zx-", &idx), 1);
		assert_true(idx < g_ncsv);
		p = &g_csv[idx];
		seen[idx] = 1;
		if (!expect(p, k, &w))
			fail_msg("%s: has a row but never appeared by snapshot %zu", p->name, k);
		assert_string_equal(PQgetvalue(r, i, 8), p->name);
		assert_string_equal(PQgetvalue(r, i, 6), p->qos);
		assert_string_equal(PQgetvalue(r, i, 7), "openb");
		if (strcmp(PQgetvalue(r, i, 1), w.state) || atoll(PQgetvalue(r, i, 2)) != w.start ||
		    atoll(PQgetvalue(r, i, 3)) != w.end || atoll(PQgetvalue(r, i, 4)) != w.gpu_milli ||
		    atoll(PQgetvalue(r, i, 5)) != w.req_gpu_milli)
			fail_msg("snapshot %zu: %s: row %s start %s end %s gpu %s req %s; want %s %lld %lld %lld %lld", k,
				 p->name, PQgetvalue(r, i, 1), PQgetvalue(r, i, 2), PQgetvalue(r, i, 3),
				 PQgetvalue(r, i, 4), PQgetvalue(r, i, 5), w.state, w.start, w.end, w.gpu_milli,
				 w.req_gpu_milli);
		if (w.start != NONE && w.end != NONE)
			assert_int_equal(atoll(PQgetvalue(r, i, 9)), w.end - w.start);
	}
	PQclear(r);
	for (size_t i = 0; i < g_ncsv; i++) {
		struct want w;
		const struct csv_pod *p = &g_csv[i];
		int ph = phase_at(p, g_inst[k]);
		if (p->num_gpu == 0 || p->gpu_milli == 0) {
			assert_false(seen[i]); /* pods without GPUs are not jobs */
			continue;
		}
		if (expect(p, k, &w)) {
			want_rows++;
			if (!seen[i])
				fail_msg("snapshot %zu: %s appeared but has no row", k, p->name);
		}
		if (ph == PENDING)
			want_pending += (long long)p->num_gpu * p->gpu_milli;
		if (ph == RUNNING) {
			size_t q = 0;
			while (q < nq && strcmp(qos[q], p->qos))
				q++;
			if (q == nq) {
				assert_true(nq < 8);
				snprintf(qos[nq++], sizeof qos[0], "%s", p->qos);
			}
			want_q[q] += (long long)p->num_gpu * p->gpu_milli;
		}
	}
	assert_int_equal(gl_test_qintf(g_c, "SELECT count(*) FROM jobs WHERE cluster_id = " CLUSTER_SQL("k1")), (long long)want_rows);
	/* the totals an owner report would read: running now, per qos label */
	for (size_t q = 0; q < nq; q++) {
		got_q[q] = gl_test_qintf(g_c, "SELECT coalesce(sum(gpu_milli), 0) FROM jobs WHERE cluster_id = " CLUSTER_SQL("k1")
				" AND start_at IS NOT NULL AND end_at IS NULL AND tags->'labels'->>'qos' = '%s'",
				qos[q]);
		if (got_q[q] != want_q[q])
			fail_msg("snapshot %zu: qos %s: %lld milli-GPUs running, the CSV says %lld", k, qos[q],
				 got_q[q], want_q[q]);
	}
	{
		long long sum = 0;
		for (size_t q = 0; q < nq; q++)
			sum += want_q[q];
		assert_int_equal(gl_test_qintf(g_c, "SELECT coalesce(sum(gpu_milli), 0) FROM jobs WHERE cluster_id = " CLUSTER_SQL("k1")
				      " AND start_at IS NOT NULL AND end_at IS NULL"),
				 sum);
	}
	assert_int_equal(gl_test_qintf(g_c, "SELECT coalesce(sum(req_gpu_milli), 0) FROM jobs WHERE cluster_id = " CLUSTER_SQL("k1")
			      " AND start_at IS NULL AND end_at IS NULL"),
			 want_pending);
	free(seen);
}

static const char *rows_md5(char *buf, size_t n)
{
	snprintf(buf, n, "%s",
		 gl_test_qstr(g_c, "SELECT md5(string_agg(j::text, ',' ORDER BY job_key)) FROM"
				   " (SELECT job_key, state, start_at, end_at, gpu_milli, tags, last_seen_at, updated_at,"
				   " job_pk FROM jobs) j"));
	return buf;
}

/* ---- tests ------------------------------------------------------------ */

static void test_openb_in_time_order(void **state)
{
	long long fractional = 0, pod0_xmin = -1;
	for (size_t k = 0; k < g_ninst; k++) {
		struct gl_test_out o;
		char path[256], before[64], after[64];
		snap_path(g_inst[k], path, sizeof path);
		ingest_at("k1", path, OPENB_EPOCH + g_inst[k], &o);
		if (o.status != 0)
			fail_msg("%s: exit %d: %s", path, o.status, o.err);
		if (k == 0)
			assert_non_null(strstr(o.out, "\"updated\":0,"));
		else
			assert_null(strstr(o.out, "\"vanished\":0,")); /* the trace has churn between instants */
		gl_test_out_fini(&o);
		if (g_csv)
			check_against_trace(k);
		/* a running pod that stays listed is not rewritten: the trace's first
		 * pod runs from the first snapshot until it vanishes before the last */
		if (k == 0)
			pod0_xmin = gl_test_qintf(g_c, "SELECT xmin::text::bigint FROM jobs WHERE job_key = '" POD0 "'");
		else if (k + 1 < g_ninst)
			assert_int_equal(gl_test_qintf(g_c, "SELECT xmin::text::bigint FROM jobs WHERE job_key = '" POD0 "'"), pod0_xmin);
		else
			assert_int_equal(gl_test_qintf(g_c, "SELECT extract(epoch FROM end_at)::bigint FROM jobs WHERE job_key = '" POD0 "'"),
					 OPENB_EPOCH + g_inst[k - 1]);
		if (k > 0)
			assert_true(gl_test_qintf(g_c, "SELECT count(*) FROM jobs WHERE end_at IS NULL AND cluster_id = " CLUSTER_SQL("k1")
					 " AND last_seen_at < to_timestamp(%lld)", OPENB_EPOCH + g_inst[k]) > 0);
		fractional += gl_test_qintf(g_c, "SELECT count(*) FROM jobs WHERE cluster_id = " CLUSTER_SQL("k1")
				   " AND end_at IS NULL AND gpu_milli %% 1000 <> 0");

		/* the same snapshot again: nothing inserted, nothing rewritten */
		rows_md5(before, sizeof before);
		ingest_at("k1", path, OPENB_EPOCH + g_inst[k], &o);
		assert_int_equal(o.status, 0);
		if (!strstr(o.out, "\"inserted\":0,\"updated\":0,") || !strstr(o.out, "\"vanished\":0,"))
			fail_msg("re-ingest of %s changed rows: %s", path, o.out);
		gl_test_out_fini(&o);
		assert_string_equal(rows_md5(after, sizeof after), before);
		assert_int_equal(gl_test_qintf(g_c, "SELECT extract(epoch FROM watermark)::bigint FROM ingest_state"
				      " WHERE source = 'kube' AND cluster_id = " CLUSTER_SQL("k1")),
				 OPENB_EPOCH + g_inst[k]);
	}
	/* fractional shares are really exercised */
	assert_true(fractional > 0);
	assert_int_equal(gl_test_qintf(g_c, "SELECT count(*) FROM ingest_runs WHERE source = 'kube' AND status = 'ok'"
			      " AND cluster_id = " CLUSTER_SQL("k1")),
			 (long long)(2 * g_ninst));
}

static void test_older_snapshot_refused(void **state)
{
	struct gl_test_out o;
	char path[256], before[64], after[64];

	/* runs after test_openb_in_time_order: the watermark is the last instant */
	rows_md5(before, sizeof before);
	snap_path(g_inst[0], path, sizeof path);
	ingest_at("k1", path, OPENB_EPOCH + g_inst[0], &o);
	assert_int_equal(o.status, 1);
	assert_non_null(strstr(o.err, "older than"));
	gl_test_out_fini(&o);
	assert_string_equal(rows_md5(after, sizeof after), before);
	assert_string_equal(gl_test_qstr(g_c, "SELECT status FROM ingest_runs ORDER BY run_id DESC LIMIT 1"), "failed");
	assert_int_equal(gl_test_qintf(g_c, "SELECT extract(epoch FROM watermark)::bigint FROM ingest_state"
			      " WHERE source = 'kube' AND cluster_id = " CLUSTER_SQL("k1")),
			 OPENB_EPOCH + g_inst[g_ninst - 1]);
}

/* A hand-written running GPU pod. */
static void pod_json(char *buf, size_t n, const char *uid_field, const char *created, const char *name)
{
	snprintf(buf, n,
		 "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"ml\",%s"
		 "\"creationTimestamp\":\"%s\",\"labels\":{\"team\":\"vision\"}},"
		 "\"spec\":{\"nodeName\":\"n1\",\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":"
		 "{\"nvidia.com/gpu\":\"1\"}}}]},\"status\":{\"phase\":\"Running\",\"startTime\":\"2026-10-01T10:00:00Z\"}}",
		 name, uid_field, created);
}

static void test_not_a_podlist_writes_nothing(void **state)
{
	static const char *const bad[] = {
		"{\"apiVersion\":\"v1\",\"kind\":\"NodeList\",\"items\":[]}",
		"{\"apiVersion\":\"v1\",\"kind\":\"PodList\",\"items\":[",
		"sacct output|is|not|json\n",
		"{\"apiVersion\":\"v1\",\"kind\":\"PodList\",\"items\":{}}",
	};
	char path[PATH_MAX], doc[2048], pod[1024], before[64], after[64];
	struct gl_test_out o;

	/* one running pod first: a bad document must not close it */
	snprintf(path, sizeof path, "%s/kube-bad.json", tmpdir());
	pod_json(pod, sizeof pod, "\"uid\":\"u-keep\",", "2026-10-01T09:00:00Z", "keep");
	snprintf(doc, sizeof doc, "{\"apiVersion\":\"v1\",\"kind\":\"PodList\",\"items\":[%s]}", pod);
	write_file(path, doc);
	ingest_at("kbad", path, 1791000000LL, &o);
	assert_int_equal(o.status, 0);
	gl_test_out_fini(&o);
	assert_string_equal(gl_test_qstr(g_c, "SELECT job_key || ' ' || state || ' ' || (tags->>'team') FROM jobs"
					      " WHERE cluster_id = " CLUSTER_SQL("kbad")),
			    "pod:u-keep RUNNING vision");
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		rows_md5(before, sizeof before);
		write_file(path, bad[i]);
		ingest_at("kbad", path, 1791000100LL + (long long)i, &o);
		if (o.status != 1)
			fail_msg("bad document %zu: exit %d, want 1: %s", i, o.status, o.err);
		assert_non_null(strstr(o.err, path)); /* the message names the input */
		gl_test_out_fini(&o);
		assert_string_equal(rows_md5(after, sizeof after), before);
		assert_string_equal(gl_test_qstr(g_c, "SELECT status FROM ingest_runs ORDER BY run_id DESC LIMIT 1"),
				    "failed");
	}
	/* the error says why */
	write_file(path, bad[0]);
	ingest_at("kbad", path, 1791000200LL, &o);
	assert_non_null(strstr(o.err, "NodeList"));
	gl_test_out_fini(&o);
	assert_int_equal(gl_test_qintf(g_c, "SELECT count(*) FROM jobs WHERE end_at IS NULL AND cluster_id = " CLUSTER_SQL("kbad")), 1);
	/* and the watermark did not move */
	assert_int_equal(gl_test_qintf(g_c, "SELECT extract(epoch FROM watermark)::bigint FROM ingest_state"
			      " WHERE source = 'kube' AND cluster_id = " CLUSTER_SQL("kbad")),
			 1791000000LL);
}

static void test_pod_without_uid(void **state)
{
	char path[PATH_MAX], doc[8192], a[1024], b[1024], b_bad[1024], nouid[1024];
	struct gl_test_out o;

	snprintf(path, sizeof path, "%s/kube-uid.json", tmpdir());
	pod_json(a, sizeof a, "\"uid\":\"u-a\",", "2026-10-01T09:00:00Z", "a");
	pod_json(b, sizeof b, "\"uid\":\"u-b\",", "2026-10-01T09:00:00Z", "b");
	pod_json(b_bad, sizeof b_bad, "\"uid\":\"u-b\",", "yesterday", "b");
	pod_json(nouid, sizeof nouid, "", "2026-10-01T09:00:00Z", "nouid");
	snprintf(doc, sizeof doc, "{\"apiVersion\":\"v1\",\"kind\":\"PodList\",\"items\":[%s,%s]}", a, b);
	write_file(path, doc);
	ingest_at("kuid", path, 1791000000LL, &o);
	assert_int_equal(o.status, 0);
	gl_test_out_fini(&o);

	/* later: a pod without uid, and b with a broken creationTimestamp */
	snprintf(doc, sizeof doc, "{\"apiVersion\":\"v1\",\"kind\":\"PodList\",\"items\":[%s,%s,%s]}", nouid, a, b_bad);
	write_file(path, doc);
	ingest_at("kuid", path, 1791000600LL, &o);
	assert_int_equal(o.status, 4);
	assert_non_null(strstr(o.err, "items[0].metadata.uid: missing"));
	assert_non_null(strstr(o.err, "items[2].metadata.creationTimestamp"));
	assert_non_null(strstr(o.out, "\"skipped\":2,"));
	gl_test_out_fini(&o);
	assert_string_equal(gl_test_qstr(g_c, "SELECT status FROM ingest_runs ORDER BY run_id DESC LIMIT 1"), "partial");
	assert_int_equal(gl_test_qintf(g_c, "SELECT count(*) FROM ingest_runs r, jsonb_array_elements(r.skip_reasons) e"
			      " WHERE r.run_id = (SELECT max(run_id) FROM ingest_runs)"
			      " AND e->>'path' = 'items[0].metadata.uid' AND e->>'reason' = 'missing'"),
			 1);
	/* the rest was ingested; b is still listed (only unreadable), so not closed */
	assert_int_equal(gl_test_qintf(g_c, "SELECT count(*) FROM jobs WHERE end_at IS NULL AND cluster_id = " CLUSTER_SQL("kuid")), 2);

	/* once b is really gone it is closed at the last time it was seen */
	snprintf(doc, sizeof doc, "{\"apiVersion\":\"v1\",\"kind\":\"PodList\",\"items\":[%s]}", a);
	write_file(path, doc);
	ingest_at("kuid", path, 1791001200LL, &o);
	assert_int_equal(o.status, 0);
	assert_non_null(strstr(o.out, "\"vanished\":1,"));
	gl_test_out_fini(&o);
	assert_string_equal(gl_test_qstr(g_c, "SELECT state || ' ' || extract(epoch FROM end_at)::bigint || ' ' ||"
					      " (tags->>'vanished') FROM jobs WHERE job_key = 'pod:u-b'"),
			    "CANCELLED 1791000600 true");
}

/* A crash-looping pod (restartPolicy Always) seen Running with its only
 * container terminated has no end yet, so when it disappears it is closed
 * as vanished; it used to get the container's finishedAt as end and then
 * stay RUNNING for ever, as vanished pods are looked for among rows
 * without an end. */
static void test_crash_loop_pod_closes(void **state)
{
	char path[PATH_MAX];
	static const char snap1[] =
		"{\"apiVersion\":\"v1\",\"kind\":\"PodList\",\"items\":[{\"metadata\":{\"uid\":\"u-loop\",\"name\":\"loop\","
		"\"namespace\":\"ml\",\"creationTimestamp\":\"2026-10-01T09:00:00Z\"},\"spec\":{\"nodeName\":\"n1\","
		"\"restartPolicy\":\"Always\",\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"2\"}}}]},"
		"\"status\":{\"phase\":\"Running\",\"startTime\":\"2026-10-01T09:00:05Z\",\"containerStatuses\":[{\"name\":\"c\","
		"\"restartCount\":3,\"state\":{\"terminated\":{\"exitCode\":1,\"reason\":\"Error\","
		"\"startedAt\":\"2026-10-01T09:20:00Z\",\"finishedAt\":\"2026-10-01T09:25:00Z\"}},"
		"\"lastState\":{\"terminated\":{\"exitCode\":1,\"finishedAt\":\"2026-10-01T09:15:00Z\"}}}]}}]}";
	static const char snap2[] = "{\"apiVersion\":\"v1\",\"kind\":\"PodList\",\"items\":[]}";
	struct gl_test_out o;

	snprintf(path, sizeof path, "%s/kube-loop.json", tmpdir());
	write_file(path, snap1);
	ingest_at("kloop", path, 1790847000LL, &o); /* 2026-10-01T09:30:00Z */
	assert_int_equal(o.status, 0);
	gl_test_out_fini(&o);
	assert_string_equal(gl_test_qstr(g_c, "SELECT state || ' ' || (end_at IS NULL) FROM jobs WHERE job_key = 'pod:u-loop'"),
			    "RUNNING true");
	/* gone in the next snapshot: closed at 09:30, when it was last seen */
	write_file(path, snap2);
	ingest_at("kloop", path, 1790847600LL, &o); /* 09:40 */
	assert_int_equal(o.status, 0);
	assert_non_null(strstr(o.out, "\"vanished\":1,"));
	gl_test_out_fini(&o);
	assert_string_equal(gl_test_qstr(g_c, "SELECT state || ' ' || extract(epoch FROM end_at)::bigint || ' ' ||"
					      " (tags->>'vanished') || ' ' || elapsed_s FROM jobs WHERE job_key = 'pod:u-loop'"),
			    "CANCELLED 1790847000 true 1795");
}

/* A document of many slices (the ingest parses it in pieces of a few MiB
 * while it writes): a broken last item writes nothing, even with several
 * transactions' worth of pods before it; problems name the document's own
 * item index. */
/* A pod nested past the depth cap: refused with the reason, nothing
 * written, whichever path (the sliced one measures depth while splitting). */
static void test_deep_item_refused(void **state)
{
	enum { DEPTH = 5000 };
	char path[PATH_MAX], before[64], after[64];
	struct gl_test_out o;
	FILE *f;

	(void)state;
	snprintf(path, sizeof path, "%s/kube-deep.json", tmpdir());
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\"apiVersion\":\"v1\",\"kind\":\"PodList\",\"items\":[{\"metadata\":{\"uid\":\"deep\",\"x\":", f);
	for (int i = 0; i < DEPTH; i++)
		fputc('[', f);
	for (int i = 0; i < DEPTH; i++)
		fputc(']', f);
	fputs("}}]}\n", f);
	assert_int_equal(fclose(f), 0);
	rows_md5(before, sizeof before);
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "ingest", "kube", "--cluster", "kdeep", "--file", path, "--at",
				     "2026-10-02T00:00:00Z", NULL),
			 0);
	assert_int_equal(o.status, 1);
	assert_non_null(strstr(o.err, "nested deeper than 64 levels"));
	gl_test_out_fini(&o);
	assert_string_equal(rows_md5(after, sizeof after), before);
}

/* A first load streams new rows straight into COPY; a uid listed twice in
 * that same document must still end as one row, the later listing winning. */
static void test_first_load_repeated_uid(void **state)
{
	char path[PATH_MAX], doc[4096], a[1024], b[1024], c[1024];
	struct gl_test_out o;

	(void)state;
	snprintf(path, sizeof path, "%s/kube-dup.json", tmpdir());
	pod_json(a, sizeof a, "\"uid\":\"dup-1\",", "2026-10-01T09:00:00Z", "first-name");
	pod_json(b, sizeof b, "\"uid\":\"dup-2\",", "2026-10-01T09:00:00Z", "other");
	pod_json(c, sizeof c, "\"uid\":\"dup-1\",", "2026-10-01T09:00:00Z", "second-name");
	snprintf(doc, sizeof doc, "{\"apiVersion\":\"v1\",\"kind\":\"PodList\",\"items\":[%s,%s,%s]}", a, b, c);
	write_file(path, doc);
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "ingest", "kube", "--cluster", "kdup", "--file", path, "--at",
				     "2026-10-02T00:00:00Z", NULL),
			 0);
	if (o.status != 0)
		fail_msg("exit %d: %s", o.status, o.err);
	gl_test_out_fini(&o);
	assert_int_equal(gl_test_qintf(g_c, "SELECT count(*) FROM jobs WHERE cluster_id = " CLUSTER_SQL("kdup")), 2);
	assert_string_equal(gl_test_qstr(g_c, "SELECT job_id FROM jobs WHERE job_key = 'pod:dup-1' AND cluster_id = "
					      CLUSTER_SQL("kdup")),
			    "second-name");
}

static void test_big_document_in_slices(void **state)
{
	enum { NPODS = 30000, NOUID = 25000 };
	char path[PATH_MAX], cfgpath[PATH_MAX], pod[1024], uid[64], name[32], before[64], after[64];
	struct gl_test_out o;
	FILE *f;

	snprintf(path, sizeof path, "%s/kube-big.json", tmpdir());
	snprintf(cfgpath, sizeof cfgpath, "%s/kube-big.yaml", tmpdir());
	write_file(cfgpath, "ingest:\n  batch_rows: 5000\nlog:\n  level: warn\n");
	for (int broken = 1; broken >= 0; broken--) {
		f = fopen(path, "w");
		assert_non_null(f);
		fputs("{\"apiVersion\":\"v1\",\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"1\"},\"items\":[\n", f);
		for (int i = 0; i < NPODS; i++) {
			snprintf(uid, sizeof uid, "\"uid\":\"big-%06d\",", i);
			snprintf(name, sizeof name, "big-%06d", i);
			pod_json(pod, sizeof pod, i == NOUID ? "" : uid, "2026-10-01T09:00:00Z", name);
			fprintf(f, "%s%s\n", i ? "," : "", pod);
		}
		if (broken)
			fputs(",{\"kind\":\"Pod\",\"metadata\":{\"uid\":\"big-x\",}}\n", f);
		fputs("]}\n", f);
		assert_int_equal(fclose(f), 0);
		rows_md5(before, sizeof before);
		assert_int_equal(gl_test_run(g_dsn, NULL, &o, "--config", cfgpath, "ingest", "kube", "--cluster", "kbig",
					     "--file", path, "--at", "2026-10-05T00:00:00Z", NULL),
				 0);
		if (broken) {
			if (o.status != 1)
				fail_msg("broken big document: exit %d: %s", o.status, o.err);
			assert_non_null(strstr(o.err, "invalid JSON"));
			assert_string_equal(rows_md5(after, sizeof after), before);
		} else {
			if (o.status != 4)
				fail_msg("big document: exit %d: %s", o.status, o.err);
			assert_non_null(strstr(o.err, "items[25000].metadata.uid: missing"));
			assert_non_null(strstr(o.out, "\"items\":30000,\"pods\":29999,\"running\":29999,"));
		}
		gl_test_out_fini(&o);
	}
	assert_int_equal(gl_test_qintf(g_c, "SELECT count(*) FROM jobs WHERE cluster_id = " CLUSTER_SQL("kbig")), NPODS - 1);
	assert_int_equal(gl_test_qintf(g_c, "SELECT sum(gpu_milli) FROM jobs WHERE end_at IS NULL AND cluster_id = " CLUSTER_SQL("kbig")),
			 (NPODS - 1) * 1000LL);
	/* the run went through several transactions and ended 'partial' */
	assert_string_equal(gl_test_qstr(g_c, "SELECT status FROM ingest_runs ORDER BY run_id DESC LIMIT 1"), "partial");
}

/* Waits (bounded) until sql returns want; returns the last value seen. */
static long long wait_for(long long want, const char *sql)
{
	long long v = -1;
	for (int i = 0; i < 600; i++) { /* up to 60 s: a cap, not a measurement */
		v = gl_test_qint(g_c, sql);
		if (v == want)
			break;
		usleep(100000);
	}
	return v;
}

static struct gl_test_daemon g_d;

/* A failed assertion must not leave the daemon running. */
static int stop_daemon(void **state)
{
	if (g_d.pid > 0)
		gl_test_daemon_stop(&g_d);
	return 0;
}

static void test_daemon_sources(void **state)
{
	char dir[PATH_MAX], file[PATH_MAX], cmdfile[PATH_MAX], cfg[4096], snap0[256], snap1[256];
	struct gl_test_daemon *d = &g_d;
	struct gl_test_http h;
	long long open_kc, running_kd1;

	snprintf(dir, sizeof dir, "%s/kube-daemon", tmpdir());
	mkdir(dir, 0755);
	snprintf(file, sizeof file, "%s/pods.json", dir);
	snprintf(cmdfile, sizeof cmdfile, "%s/cmd.json", dir);
	snap_path(g_inst[0], snap0, sizeof snap0);
	snap_path(g_inst[1], snap1, sizeof snap1);
	place_snapshot(snap0, file, OPENB_EPOCH + g_inst[0]);
	place_snapshot(snap0, cmdfile, OPENB_EPOCH + g_inst[0]);
	/* kd reads a file another process refreshes; kc runs a command (cat,
	 * standing in for kubectl) that starts failing */
	snprintf(cfg, sizeof cfg,
		 "log:\n  level: info\nsources:\n  kube:\n"
		 "    - cluster: kd\n      file: %s\n      interval_s: 5\n"
		 "    - cluster: kc\n      command: cat %s\n      interval_s: 5\n      timeout_s: 30\n",
		 file, cmdfile);
	assert_int_equal(gl_test_daemon_start(d, g_dsn, cfg, NULL), 0);

	assert_int_equal(wait_for(OPENB_EPOCH + g_inst[0],
				  "SELECT extract(epoch FROM watermark)::bigint FROM ingest_state"
				  " WHERE source = 'kube' AND cluster_id = " CLUSTER_SQL("kd")),
			 OPENB_EPOCH + g_inst[0]);
	assert_int_equal(wait_for(1, "SELECT count(*) FROM ingest_runs WHERE status = 'ok' AND cluster_id = " CLUSTER_SQL("kc")),
			 1);
	open_kc = gl_test_qintf(g_c, "SELECT count(*) FROM jobs WHERE end_at IS NULL AND cluster_id = " CLUSTER_SQL("kc"));
	assert_true(open_kc > 0);
	assert_int_equal(gl_test_qintf(g_c, "SELECT count(*) FROM jobs WHERE cluster_id = " CLUSTER_SQL("kd")),
			 gl_test_qintf(g_c, "SELECT count(*) FROM jobs WHERE cluster_id = " CLUSTER_SQL("kc")));

	/* the file is refreshed (a later snapshot); the command breaks */
	place_snapshot(snap1, file, OPENB_EPOCH + g_inst[1]);
	assert_int_equal(unlink(cmdfile), 0);
	assert_int_equal(wait_for(OPENB_EPOCH + g_inst[1],
				  "SELECT extract(epoch FROM watermark)::bigint FROM ingest_state"
				  " WHERE source = 'kube' AND cluster_id = " CLUSTER_SQL("kd")),
			 OPENB_EPOCH + g_inst[1]);
	assert_int_equal(wait_for(1, "SELECT count(*) FROM ingest_runs WHERE status = 'failed' AND cluster_id = "
				     CLUSTER_SQL("kc")),
			 1);

	/* kd now shows the second instant: same running set as the CLI ingest saw */
	running_kd1 = gl_test_qintf(g_c, "SELECT coalesce(sum(gpu_milli), 0) FROM jobs WHERE cluster_id = " CLUSTER_SQL("kd")
			   " AND start_at IS NOT NULL AND end_at IS NULL");
	if (g_csv) {
		long long want = 0;
		for (size_t i = 0; i < g_ncsv; i++)
			if (phase_at(&g_csv[i], g_inst[1]) == RUNNING)
				want += (long long)g_csv[i].num_gpu * g_csv[i].gpu_milli;
		assert_int_equal(running_kd1, want);
	}
	assert_true(gl_test_qintf(g_c, "SELECT count(*) FROM jobs WHERE cluster_id = " CLUSTER_SQL("kd") " AND tags ? 'vanished'") > 0);
	/* the failed command closed nothing: the last known state stays */
	assert_int_equal(gl_test_qintf(g_c, "SELECT count(*) FROM jobs WHERE end_at IS NULL AND cluster_id = " CLUSTER_SQL("kc")),
			 open_kc);
	assert_int_equal(gl_test_qintf(g_c, "SELECT count(*) FROM jobs WHERE tags ? 'vanished' AND cluster_id = " CLUSTER_SQL("kc")), 0);
	assert_non_null(strstr(gl_test_qstr(g_c, "SELECT error FROM ingest_runs WHERE status = 'failed' AND cluster_id = "
						 CLUSTER_SQL("kc")),
			       "cat"));

	/* health: one entry per source, the failing one down */
	assert_int_equal(gl_test_http(d->port, "GET", "/metrics", NULL, 0, NULL, &h), 0);
	assert_int_equal(h.status, 200);
	assert_non_null(strstr(h.body, "gpuledger_source_up{source=\"kube\",cluster=\"kd\",target=\"\"} 1"));
	assert_non_null(strstr(h.body, "gpuledger_source_up{source=\"kube\",cluster=\"kc\",target=\"\"} 0"));
	gl_test_http_fini(&h);
	assert_int_equal(gl_test_daemon_stop(d), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_openb_in_time_order),
		cmocka_unit_test(test_older_snapshot_refused),
		cmocka_unit_test(test_not_a_podlist_writes_nothing),
		cmocka_unit_test(test_pod_without_uid),
		cmocka_unit_test(test_crash_loop_pod_closes),
		cmocka_unit_test(test_first_load_repeated_uid),
		cmocka_unit_test(test_deep_item_refused),
		cmocka_unit_test(test_big_document_in_slices),
		cmocka_unit_test_teardown(test_daemon_sources, stop_daemon),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
