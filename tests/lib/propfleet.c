/* Random fleets and queries for property tests (see propfleet.h). */
#include "propfleet.h"

#include "testlib.h"

#include "gl/timeutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t gl_prop_rand(uint64_t *s)
{
	uint64_t x = *s ? *s : 0x9e3779b97f4a7c15ULL;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dULL;
}

static int64_t between(uint64_t *s, int64_t lo, int64_t hi)
{
	return lo + (int64_t)(gl_prop_rand(s) % (uint64_t)(hi - lo));
}

void gl_prop_fleet_make(struct gl_prop_fleet *f, uint64_t seed, size_t n_jobs, int64_t lo_s, int64_t hi_s)
{
	static const char *const models[] = {"a100", "h100"};
	uint64_t s = seed;
	memset(f, 0, sizeof *f);
	f->seed = seed;
	f->n_clusters = 3;
	for (int c = 0; c < f->n_clusters; c++) {
		struct gl_prop_cluster *k = &f->clusters[c];
		snprintf(k->name, sizeof k->name, "pc%d", c);
		/* the last cluster has no inventory: its time is beyond it */
		k->nodes = c == f->n_clusters - 1 ? 0 : (int)between(&s, 1, 5);
		k->gpus_per_node = (int)between(&s, 1, 9);
		snprintf(k->model, sizeof k->model, "%s", models[between(&s, 0, 2)]);
	}
	f->jobs = calloc(n_jobs + 1, sizeof *f->jobs);
	f->n_jobs = n_jobs;
	for (size_t i = 0; i < n_jobs; i++) {
		struct gl_prop_job *j = &f->jobs[i];
		j->cluster = (int)between(&s, 0, f->n_clusters);
		j->start_s = between(&s, lo_s, hi_s - 60);
		/* a minute to three days, sometimes past the end (clipped) */
		j->end_s = j->start_s + between(&s, 60, 3 * 86400);
		if (j->end_s > hi_s)
			j->end_s = hi_s;
		j->gpus = (int)between(&s, 1, 5);
		j->account = (int)between(&s, 0, GL_PROP_ACCOUNTS);
		j->user = (int)between(&s, 0, 10);
	}
}

void gl_prop_fleet_fini(struct gl_prop_fleet *f)
{
	free(f->jobs);
	memset(f, 0, sizeof *f);
}

const char *gl_prop_config(void)
{
	return "server:\n  rate_limit_per_ip: 0\n"
	       "rates:\n  - model: a100\n    per_gpu_hour: \"2.37\"\n  - model: h100\n    per_gpu_hour: \"4.11\"\n"
	       "owners:\n  - match: account\n    value: acct0\n    team: t0\n  - match: account\n    value: acct1\n    team: t1\n"
	       "  - match: account\n    value: acct2\n    team: t2\n  - match: account\n    value: acct3\n    team: t3\n"
	       "idle_owners:\n  - cluster: pc0\n    team: t1\n";
}

const char *gl_prop_team(int account)
{
	static const char *const teams[] = {"t0", "t1", "t2", "t3", "__unallocated__", "__unallocated__"};
	return teams[account];
}

const char *gl_prop_dim(const struct gl_prop_fleet *f, const struct gl_prop_job *j, const char *dim, char *buf,
			size_t n)
{
	if (!strcmp(dim, "team"))
		snprintf(buf, n, "%s", gl_prop_team(j->account));
	else if (!strcmp(dim, "cluster"))
		snprintf(buf, n, "%s", f->clusters[j->cluster].name);
	else if (!strcmp(dim, "account"))
		snprintf(buf, n, "acct%d", j->account);
	else if (!strcmp(dim, "user"))
		snprintf(buf, n, "u%d", j->user);
	else
		snprintf(buf, n, "%s", f->clusters[j->cluster].model);
	return buf;
}

int64_t gl_prop_alloc(const struct gl_prop_job *j, int64_t a, int64_t b)
{
	int64_t lo = j->start_s > a ? j->start_s : a, hi = j->end_s < b ? j->end_s : b;
	return hi > lo ? (hi - lo) * j->gpus : 0;
}

static void ts(int64_t t, char *buf, size_t n)
{
	gl_timeutil_format(t, buf, n);
}

int gl_prop_load(const struct gl_prop_fleet *f, const char *dsn)
{
	char *sql = malloc(640 * (f->n_jobs + 64)), a[32], b[32]; /* a row is under 400 bytes */
	size_t len = 0;
	int rc = 0;
	len += (size_t)sprintf(sql + len, "BEGIN;");
	for (int c = 0; c < f->n_clusters; c++) {
		const struct gl_prop_cluster *k = &f->clusters[c];
		len += (size_t)sprintf(sql + len, "INSERT INTO clusters (name, kind) VALUES ('%s', 'slurm');", k->name);
		for (int n = 0; n < k->nodes; n++)
			len += (size_t)sprintf(sql + len,
					       "INSERT INTO node_gpu_spans (cluster_id, node, gpu_model, gpus, partition, partitions,"
					       " source, valid_from) SELECT cluster_id, 'n%d', '%s', %d, 'p', ARRAY['p'], 'scontrol',"
					       " '2026-09-01T00:00:00Z' FROM clusters WHERE name = '%s';",
					       n, k->model, k->gpus_per_node, k->name);
	}
	for (size_t i = 0; i < f->n_jobs; i++) {
		const struct gl_prop_job *j = &f->jobs[i];
		const struct gl_prop_cluster *k = &f->clusters[j->cluster];
		ts(j->start_s, a, sizeof a);
		ts(j->end_s, b, sizeof b);
		len += (size_t)sprintf(sql + len,
				       "INSERT INTO jobs (cluster_id, job_key, job_id, user_name, account, partition, state,"
				       " submit_at, start_at, end_at, elapsed_s, gpu_micro, gpu_type, nodes)"
				       " SELECT cluster_id, 'db:%zu', '%zu', 'u%d', 'acct%d', 'p', 'COMPLETED', '%s', '%s', '%s',"
				       " %lld, %d, '%s', ARRAY['n0'] FROM clusters WHERE name = '%s';",
				       i + 1, i + 1, j->user, j->account, a, a, b, (long long)(j->end_s - j->start_s),
				       j->gpus * 1000000, k->model, k->name);
	}
	len += (size_t)sprintf(sql + len, "COMMIT;");
	if (gl_test_exec_dsn(dsn, sql) < 0)
		rc = -1;
	free(sql);
	return rc;
}

void gl_prop_query_make(uint64_t *rng, struct gl_prop_query *q)
{
	static const char *const dims[] = {"team", "cluster", "account", "user", "gpu_model"};
	static const char *const shares[] = {"none", "proportional", "proportional_fleet", "owner"};
	int64_t oct1 = 1790812800; /* 2026-10-01T00:00:00Z */
	char a[32], b[32];
	memset(q, 0, sizeof *q);
	q->month = gl_prop_rand(rng) % 6 == 0;
	if (q->month) {
		snprintf(q->window, sizeof q->window, "2026-10");
		q->step = gl_prop_rand(rng) % 2 ? "none" : "day";
	} else {
		/* whole hours, up to two days, inside October and the days after */
		int64_t s = oct1 + (int64_t)(gl_prop_rand(rng) % (34 * 24)) * 3600;
		int64_t e = s + (1 + (int64_t)(gl_prop_rand(rng) % 48)) * 3600;
		ts(s, a, sizeof a);
		ts(e, b, sizeof b);
		snprintf(q->window, sizeof q->window, "%s,%s", a, b);
		q->step = (const char *[]){"none", "day", "hour"}[gl_prop_rand(rng) % 3];
	}
	q->share = shares[gl_prop_rand(rng) % 4];
	if (!strcmp(q->share, "owner")) {
		q->dims[0] = "team";
		q->n_dims = 1;
	} else {
		q->n_dims = 1 + (int)(gl_prop_rand(rng) % 2);
		q->dims[0] = dims[gl_prop_rand(rng) % 5];
		do
			q->dims[1] = dims[gl_prop_rand(rng) % 5];
		while (q->n_dims == 2 && q->dims[1] == q->dims[0]);
	}
	if (q->month && gl_prop_rand(rng) % 2) { /* the report's query */
		q->step = "none";
		q->dims[0] = "team";
		q->n_dims = 1;
	}
	q->by_model = !strcmp(q->share, "proportional") && gl_prop_rand(rng) % 3 == 0;
	snprintf(q->path, sizeof q->path, "/v1/chargeback?window=%s&step=%s&aggregate=%s%s%s&shareIdle=%s%s", q->window,
		 q->step, q->dims[0], q->n_dims > 1 ? "," : "", q->n_dims > 1 ? q->dims[1] : "", q->share,
		 q->by_model ? "&shareIdleBy=model" : "");
}

void gl_prop_scope_make(uint64_t *rng, struct gl_prop_scope *sc)
{
	static const char *const dims[] = {"team", "account", "user"};
	int first = (int)(gl_prop_rand(rng) % 3);
	size_t o = 0;
	memset(sc, 0, sizeof *sc);
	sc->n_dims = 1 + (int)(gl_prop_rand(rng) % 2);
	for (int d = 0; d < sc->n_dims; d++) {
		sc->dims[d] = dims[(first + d) % 3];
		sc->n_values[d] = 1 + (int)(gl_prop_rand(rng) % 2);
		for (int v = 0; v < sc->n_values[d]; v++) {
			char *val = sc->values[d][v];
			if (!strcmp(sc->dims[d], "team"))
				snprintf(val, 16, "t%d", (int)(gl_prop_rand(rng) % 4));
			else if (!strcmp(sc->dims[d], "account"))
				snprintf(val, 16, "acct%d", (int)(gl_prop_rand(rng) % GL_PROP_ACCOUNTS));
			else
				snprintf(val, 16, "u%d", (int)(gl_prop_rand(rng) % 11));
			if (v && !strcmp(val, sc->values[d][0]))
				sc->n_values[d] = 1; /* drawn twice: one value */
		}
		o += (size_t)snprintf(sc->filter + o, sizeof sc->filter - o, "%s%s:", d ? "%2B" : "", sc->dims[d]);
		for (int v = 0; v < sc->n_values[d]; v++) {
			/* a copy: with the sanitizers GCC cannot tell that two
			 * members of *sc do not overlap (-Werror=restrict) */
			char val[sizeof sc->values[d][v]];
			memcpy(val, sc->values[d][v], sizeof val);
			snprintf(sc->args[sc->n_args++], sizeof sc->args[0], "%s=%s", sc->dims[d], val);
			o += (size_t)snprintf(sc->filter + o, sizeof sc->filter - o, "%s%%22%s%%22", v ? "," : "", val);
		}
	}
}

int gl_prop_in_scope(const struct gl_prop_fleet *f, const struct gl_prop_job *j, const struct gl_prop_scope *sc)
{
	for (int d = 0; d < sc->n_dims; d++) {
		char buf[64];
		int in = 0;
		gl_prop_dim(f, j, sc->dims[d], buf, sizeof buf);
		for (int v = 0; v < sc->n_values[d]; v++)
			in |= !strcmp(buf, sc->values[d][v]);
		if (!in)
			return 0;
	}
	return 1;
}
