/* Team-scoped tokens (issue 26, defect 5), over real HTTP against the real
 * binary and PostgreSQL: a token scoped to owner dimensions sees its own
 * lines, the same as an admin asking with the equivalent filter; nothing it
 * gets names another owner or holds a figure only another owner has; a
 * parameter reaching outside the scope is 403 naming it; a bad --scope is
 * exit 2 naming the dimension or the value. tests/fixtures/scope/
 * sacct_scope.txt on the 6 a100 of tests/fixtures/conservation/
 * scontrol_nodes.txt (the figures are in its README). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char g_dsn[512];
static struct gl_test_daemon g_d;

static const char config_yaml[] =
	"rates:\n  - model: a100\n    per_gpu_hour: \"3.60\"\n"
	"owners:\n  - match: account\n    value: teama\n    team: vision\n    project: px\n"
	"  - match: account\n    value: teamb\n    team: language\n    project: py\n"
	"  - match: account\n    value: teamc\n    team: robotics\n    project: px\n"
	"budgets:\n  - {owner: vision, aggregate: team, amount: \"1111.00\"}\n"
	"  - {owner: language, aggregate: team, amount: \"2222.00\"}\n"
	"  - {owner: px, aggregate: project, amount: \"3333.00\"}\n";

/* A scoped token, the admin filter that means the same, and what only the
 * owners outside it have: their names and figures. */
struct scoped {
	const char *name;
	const char *const scope[4]; /* --scope arguments */
	const char *filter;         /* URL-encoded */
	const char *const others[8];
	char *token;
};

static struct scoped g_tok[] = {
	{"vision", {"team=vision"}, "team:%22vision%22",
	 {"language", "robotics", "teamb", "teamc", "bob", "carol", "33262", "12347"}, NULL},
	/* the form before dimensions: an owner is a team */
	{"legacy", {"owner=vision"}, "team:%22vision%22",
	 {"language", "robotics", "teamb", "teamc", "bob", "carol", "33262", "12347"}, NULL},
	/* OR within a dimension */
	{"two-teams", {"team=vision", "team=robotics"}, "team:%22vision%22,%22robotics%22",
	 {"language", "teamb", "bob", "33262"}, NULL},
	/* AND across dimensions: project px is vision and robotics, carol only robotics */
	{"px-carol", {"project=px", "user=carol"}, "project:%22px%22%2Buser:%22carol%22",
	 {"vision", "language", "teama", "teamb", "alice", "bob", "dave", "33262"}, NULL},
	{"alice", {"user=alice"}, "user:%22alice%22",
	 {"language", "robotics", "teamb", "teamc", "bob", "carol", "dave", "33262"}, NULL},
};
#define N_TOK (sizeof g_tok / sizeof g_tok[0])
static char g_tokens[N_TOK][64];

static int setup(void **state)
{
	if (gl_test_db_fresh("gl_test_scope", g_dsn, sizeof g_dsn))
		return -1;
	if (gl_test_cli(g_dsn, "ingest", "slurm-nodes", "--cluster", "c1", "--nodes",
			gl_test_fixture("tests/fixtures/conservation/scontrol_nodes.txt"), "--at", "2026-09-01T00:00:00Z", NULL))
		return -1;
	/* the same nodes seen again after October: their capacity is firm
	 * through the month the tests ask about, not only to the first
	 * snapshot plus inventory.absent_grace_s (docs/capacity.md) */
	if (gl_test_cli(g_dsn, "ingest", "slurm-nodes", "--cluster", "c1", "--nodes",
			gl_test_fixture("tests/fixtures/conservation/scontrol_nodes.txt"), "--at", "2026-11-01T00:00:00Z", NULL))
		return -1;
	if (gl_test_cli(g_dsn, "ingest", "sacct", "--cluster", "c1", "--file",
			gl_test_fixture("tests/fixtures/scope/sacct_scope.txt"), NULL))
		return -1;
	for (size_t i = 0; i < N_TOK; i++) {
		const char *extra[16];
		g_tok[i].token = g_tokens[i];
		size_t k = 0;
		for (size_t s = 0; s < 4 && g_tok[i].scope[s]; s++) {
			extra[k++] = "--scope";
			extra[k++] = g_tok[i].scope[s];
		}
		extra[k] = NULL;
		if (gl_test_token_create(g_dsn, g_tok[i].name, "finance", extra, g_tokens[i], sizeof g_tokens[i], NULL))
			return -1;
	}
	return gl_test_daemon_start(&g_d, g_dsn, config_yaml, (const char *[]){"--no-ingest", NULL});
}

static int teardown(void **state)
{
	return gl_test_daemon_stop(&g_d) == 0 ? 0 : -1;
}

/* GET path with token (NULL: admin); the status, the body in r. */
static long get(const char *path, const char *token, struct gl_test_http *r)
{
	struct gl_test_http_opts o = {token, 0, NULL};
	assert_int_equal(gl_test_http_ex(g_d.port, "GET", path, NULL, 0, NULL, &o, r), 0);
	return r->status;
}

static cJSON *get_json(const char *path, const char *token)
{
	struct gl_test_http r;
	cJSON *j;
	if (get(path, token, &r) != 200)
		fail_msg("%s: %ld %s", path, r.status, r.body);
	j = cJSON_Parse(r.body);
	gl_test_http_fini(&r);
	assert_non_null(j);
	return j;
}

/* No other owner's name or figure anywhere in body. */
static void assert_nothing_of_others(const struct scoped *t, const char *what, const char *body)
{
	for (size_t k = 0; k < 8 && t->others[k]; k++)
		if (strstr(body, t->others[k]))
			fail_msg("%s for %s holds '%s': %s", what, t->name, t->others[k], body);
}

/* The lines of every step, as one string of the figures compared. */
static void lines_text(const cJSON *j, char *out, size_t n)
{
	static const char *const keys[] = {"allocated_gpu_seconds", "cost_micros", "idle_share_gpu_seconds",
					   "idle_share_micros", "total_micros", "unobserved_gpu_seconds"};
	const cJSON *st, *it;
	size_t o = 0;
	out[0] = '\0';
	cJSON_ArrayForEach(st, cJSON_GetObjectItem(j, "steps"))
	{
		cJSON_ArrayForEach(it, cJSON_GetObjectItem(st, "items"))
		{
			o += (size_t)snprintf(out + o, n - o, "%s:", cJSON_GetObjectItem(it, "name")->valuestring);
			for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
				o += (size_t)snprintf(out + o, n - o, " %lld", gl_test_jnum(it, keys[k]));
			o += (size_t)snprintf(out + o, n - o, ";");
			assert_true(o < n);
		}
	}
}

/* Each scoped token: the lines an admin gets with the equivalent filter,
 * its own totals (the sums of its lines), no __idle__, no fleet figure. */
static void test_chargeback_equals_the_admin_filter(void **state)
{
	static const char *const modes[] = {"none", "proportional", "proportional_fleet"};
	static const char *const aggs[] = {"team", "team,user", "project,cluster"};
	char path[512], want[4096], got[4096];
	cJSON *fleet = get_json("/v1/chargeback?window=2026-10-06&aggregate=team&shareIdle=none", NULL);
	char fleet_idle[32], fleet_total[32];
	snprintf(fleet_idle, sizeof fleet_idle, "%lld", gl_test_jnum(cJSON_GetObjectItem(fleet, "totals"), "idle_gpu_seconds"));
	snprintf(fleet_total, sizeof fleet_total, "%lld", gl_test_jnum(cJSON_GetObjectItem(fleet, "totals"), "total_micros"));
	assert_true(atoll(fleet_idle) > 0);
	cJSON_Delete(fleet);
	for (size_t i = 0; i < N_TOK; i++)
		for (size_t m = 0; m < 3; m++)
			for (size_t a = 0; a < 3; a++) {
				cJSON *adm, *sc, *tot, *it, *st;
				struct gl_test_http r;
				long long sum = 0;
				snprintf(path, sizeof path, "/v1/chargeback?window=2026-10-06&step=day&aggregate=%s&shareIdle=%s",
					 aggs[a], modes[m]);
				sc = get_json(path, g_tok[i].token);
				snprintf(path + strlen(path), sizeof path - strlen(path), "&filter=%s", g_tok[i].filter);
				adm = get_json(path, NULL);
				lines_text(adm, want, sizeof want);
				lines_text(sc, got, sizeof got);
				assert_true(want[0] != '\0');
				assert_string_equal(got, want);
				/* its own totals: the sum of its lines, no idle */
				cJSON_ArrayForEach(st, cJSON_GetObjectItem(sc, "steps"))
				{
					assert_true(cJSON_IsNull(cJSON_GetObjectItem(st, "idle")));
					cJSON_ArrayForEach(it, cJSON_GetObjectItem(st, "items"))
						sum += gl_test_jnum(it, "total_micros");
				}
				tot = cJSON_GetObjectItem(sc, "totals");
				assert_int_equal(gl_test_jnum(tot, "total_micros"), sum);
				assert_true(cJSON_IsNull(cJSON_GetObjectItem(tot, "idle_gpu_seconds")));
				assert_true(cJSON_IsTrue(cJSON_GetObjectItem(sc, "idle_withheld")));
				assert_true(cJSON_IsFalse(cJSON_GetObjectItem(adm, "idle_withheld")));
				cJSON_Delete(adm);
				cJSON_Delete(sc);
				/* the bodies as sent, JSON and CSV */
				snprintf(path, sizeof path, "/v1/chargeback?window=2026-10-06&step=day&aggregate=%s&shareIdle=%s",
					 aggs[a], modes[m]);
				assert_int_equal(get(path, g_tok[i].token, &r), 200);
				assert_nothing_of_others(&g_tok[i], path, r.body);
				assert_null(strstr(r.body, "__idle__"));
				assert_null(strstr(r.body, fleet_idle));
				assert_null(strstr(r.body, fleet_total));
				gl_test_http_fini(&r);
				strcat(path, "&format=csv");
				assert_int_equal(get(path, g_tok[i].token, &r), 200);
				assert_nothing_of_others(&g_tok[i], path, r.body);
				assert_null(strstr(r.body, "__idle__"));
				assert_null(strstr(r.body, "__unallocated__"));
				assert_null(strstr(r.headers, fleet_idle));
				gl_test_http_fini(&r);
			}
}

/* A filter that reaches outside the scope is 403 naming it; one inside
 * narrows further (AND). */
static void test_filter_outside_the_scope_is_403(void **state)
{
	static const char *const outside[] = {"team:%22language%22", "team:%22vision%22,%22language%22"};
	struct gl_test_http r;
	cJSON *j;
	for (size_t k = 0; k < 2; k++) {
		char path[256];
		snprintf(path, sizeof path, "/v1/chargeback?window=2026-10-06&filter=%s", outside[k]);
		assert_int_equal(get(path, g_tok[0].token, &r), 403);
		assert_non_null(strstr(r.body, "\"param\":\"filter\""));
		assert_null(strstr(r.body, "33262"));
		gl_test_http_fini(&r);
	}
	/* a dimension the scope does not name narrows it: nothing of teamb's
	 * is left inside team vision, and no error tells it apart */
	j = get_json("/v1/chargeback?window=2026-10-06&filter=account:%22teamb%22", g_tok[0].token);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "steps"), 0),
								  "items")),
			 0);
	cJSON_Delete(j);
	/* inside: alice of vision, 14,400 GPU-seconds */
	j = get_json("/v1/chargeback?window=2026-10-06&aggregate=user&filter=user:%22alice%22", g_tok[0].token);
	assert_int_equal(gl_test_jnum(cJSON_GetObjectItem(j, "totals"), "allocated_gpu_seconds"), 14400);
	cJSON_Delete(j);
	/* the vision token's team: 14,400 + 3,600 */
	j = get_json("/v1/chargeback?window=2026-10-06", g_tok[0].token);
	assert_int_equal(gl_test_jnum(cJSON_GetObjectItem(j, "totals"), "allocated_gpu_seconds"), 18000);
	cJSON_Delete(j);
	/* the px-carol token may not widen its project */
	assert_int_equal(get("/v1/chargeback?window=2026-10-06&filter=project:%22py%22", g_tok[3].token, &r), 403);
	assert_non_null(strstr(r.body, "\"param\":\"filter\""));
	gl_test_http_fini(&r);
}

/* /v1/jobs: the jobs of the scope, by the owner at the job's start (team,
 * project) and the job's own columns (user, account); never another's. */
static void test_jobs_of_the_scope(void **state)
{
	static const char *const want[N_TOK] = {"601,604", "601,604", "603,601,604", "603", "601"};
	for (size_t i = 0; i < N_TOK; i++) {
		struct gl_test_http r;
		char ids[64] = "";
		cJSON *j, *it;
		assert_int_equal(get("/v1/jobs?limit=100", g_tok[i].token, &r), 200);
		assert_nothing_of_others(&g_tok[i], "/v1/jobs", r.body);
		j = cJSON_Parse(r.body);
		gl_test_http_fini(&r);
		/* newest first (by submit time): list them oldest first */
		for (int k = cJSON_GetArraySize(cJSON_GetObjectItem(j, "jobs")) - 1; k >= 0; k--) {
			it = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "jobs"), k);
			snprintf(ids + strlen(ids), sizeof ids - strlen(ids), "%s%s", ids[0] ? "," : "",
				 cJSON_GetObjectItem(it, "job_id")->valuestring);
		}
		cJSON_Delete(j);
		if (strcmp(ids, want[i]))
			fail_msg("%s: jobs %s, want %s", g_tok[i].name, ids, want[i]);
	}
}

/* The text of a PDF (pdftotext). */
static char *pdf_text(const struct gl_test_http *r, const char *name)
{
	char path[512], cmd[600];
	static char txt[1 << 18];
	size_t n;
	FILE *f;
	snprintf(path, sizeof path, "%s/%s.pdf", getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp", name);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(r->body, 1, r->len, f), r->len);
	fclose(f);
	snprintf(cmd, sizeof cmd, "pdftotext '%s' -", path);
	f = popen(cmd, "r");
	assert_non_null(f);
	n = fread(txt, 1, sizeof txt - 1, f);
	txt[n] = '\0';
	assert_int_equal(pclose(f), 0);
	return txt;
}

/* The CSV line of row name ("vision,...") in body, into out. */
static int csv_line(const char *body, const char *name, char *out, size_t n)
{
	size_t len = strlen(name);
	for (const char *p = body; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, name, len) && p[len] == ',') {
			size_t l = strcspn(p, "\r\n");
			snprintf(out, n, "%.*s", (int)l, p);
			return 1;
		}
	return 0;
}

/* Cuts a CSV line (no quoted commas) before its field k (0-based). */
static void cut_at_field(char *line, int k)
{
	for (char *p = line; *p; p++)
		if (*p == ',' && --k == 0) {
			*p = '\0';
			return;
		}
}

/* The showback report of a scope by its dimension: its rows as the
 * admin's report has them, and in every table, the HTML and the PDF text
 * nothing of another owner (names, GPU-seconds, hours, money) or the
 * fleet's idle. A scope across dimensions, or another aggregate, is 403. */
static void test_report_of_the_scope(void **state)
{
	static const char *const tables[] = {"owners", "models", "daily", "fleet", "waits", "top_cost", "top_idle",
					     "reconciliation", "rates", "owner_rules", "partial", "inference"};
	/* language: 33,262 s = 9.239 h, 33.26; robotics: 12,347 s = 3.430 h, 12.35 */
	static const char *const figures[] = {"33262", "9.239", "33.26", "12347", "3.430", "12.35", NULL};
	static const size_t toks[] = {0, 1, 4};
	static const char *const rows[] = {"vision", "vision", "alice"};
	struct gl_test_http r;
	char path[256], want[1024], got[1024];
	for (size_t t = 0; t < 3; t++) {
		const struct scoped *sc = &g_tok[toks[t]];
		const char *agg = t == 2 ? "user" : "team";
		for (size_t k = 0; k < sizeof tables / sizeof tables[0]; k++) {
			snprintf(path, sizeof path, "/v1/reports/showback?month=2026-10&format=csv&table=%s", tables[k]);
			if (get(path, sc->token, &r) != 200)
				fail_msg("%s as %s: %ld %s", path, sc->name, r.status, r.body);
			assert_nothing_of_others(sc, path, r.body);
			for (size_t f = 0; figures[f]; f++)
				if (strstr(r.body, figures[f]))
					fail_msg("%s as %s holds %s: %s", path, sc->name, figures[f], r.body);
			/* the fleet and reconciliation tables keep their row labels,
			 * with the scope's figures (0 in __idle__ and __unallocated__) */
			if (k < 3) {
				assert_null(strstr(r.body, "__idle__"));
				assert_null(strstr(r.body, "__unallocated__"));
			}
			if (!strcmp(tables[k], "owners")) {
				assert_true(csv_line(r.body, rows[t], got, sizeof got));
				gl_test_http_fini(&r);
				snprintf(path, sizeof path, "/v1/reports/showback?month=2026-10&format=csv&aggregate=%s", agg);
				assert_int_equal(get(path, NULL, &r), 200);
				assert_true(csv_line(r.body, rows[t], want, sizeof want));
				/* the figures searched for are there for an admin */
				for (size_t f = 0; t == 0 && figures[f]; f++)
					if (!strstr(r.body, figures[f]))
						fail_msg("the admin's owners table lacks %s: %s", figures[f], r.body);
				/* the same figures up to the share of the total, which is
				 * the scope's (the fleet's would give the fleet's total) */
				cut_at_field(got, 13);
				cut_at_field(want, 13);
				assert_string_equal(got, want);
			}
			gl_test_http_fini(&r);
		}
		assert_int_equal(get("/v1/reports/showback?month=2026-10&format=html", sc->token, &r), 200);
		assert_nothing_of_others(sc, "html", r.body);
		for (size_t f = 0; figures[f]; f++)
			if (strstr(r.body, figures[f]))
				fail_msg("html as %s holds %s", sc->name, figures[f]);
		assert_non_null(strstr(r.body, rows[t]));
		gl_test_http_fini(&r);
		assert_int_equal(get("/v1/reports/showback?month=2026-10&format=pdf", sc->token, &r), 200);
		{
			const char *txt = pdf_text(&r, sc->name);
			assert_nothing_of_others(sc, "pdf", txt);
			for (size_t f = 0; figures[f]; f++)
				if (strstr(txt, figures[f]))
					fail_msg("pdf as %s holds %s", sc->name, figures[f]);
			assert_non_null(strstr(txt, rows[t]));
		}
		gl_test_http_fini(&r);
	}
	assert_int_equal(get("/v1/reports/showback?month=2026-10&aggregate=project", g_tok[0].token, &r), 403);
	assert_non_null(strstr(r.body, "\"param\":\"aggregate\""));
	gl_test_http_fini(&r);
	assert_int_equal(get("/v1/reports/showback?month=2026-10", g_tok[3].token, &r), 403);
	assert_non_null(strstr(r.body, "\"param\":\"aggregate\""));
	gl_test_http_fini(&r);
	/* the recorded fleet reports are not a scope's */
	assert_int_equal(get("/v1/reports?month=2026-10", g_tok[0].token, &r), 403);
	gl_test_http_fini(&r);
}

/* /v1/budgets: the budgets on the scope's owners, by the dimension the
 * scope names alone; never another owner's budget or spend. */
static void test_budgets_of_the_scope(void **state)
{
	static const char *const want[N_TOK] = {"vision", "vision", "vision", "", ""};
	struct gl_test_http r;
	for (size_t i = 0; i < N_TOK; i++) {
		char owners[64] = "";
		cJSON *j = get_json("/v1/budgets?month=2026-10", g_tokens[i]), *it;
		cJSON_ArrayForEach(it, cJSON_GetObjectItem(j, "budgets"))
		{
			snprintf(owners + strlen(owners), sizeof owners - strlen(owners), "%s%s", owners[0] ? "," : "",
				 cJSON_GetObjectItem(it, "owner")->valuestring);
		}
		cJSON_Delete(j);
		if (strcmp(owners, want[i]))
			fail_msg("%s: budgets of %s, want %s", g_tok[i].name, owners, want[i]);
		assert_int_equal(get("/v1/budgets?month=2026-10", g_tokens[i], &r), 200);
		assert_nothing_of_others(&g_tok[i], "/v1/budgets", r.body);
		assert_null(strstr(r.body, "2222.00"));
		assert_null(strstr(r.body, "3333.00"));
		gl_test_http_fini(&r);
	}
	/* the admin sees all three */
	assert_int_equal(get("/v1/budgets?month=2026-10", NULL, &r), 200);
	assert_non_null(strstr(r.body, "2222.00"));
	assert_non_null(strstr(r.body, "3333.00"));
	gl_test_http_fini(&r);
}

/* /v1/queue: the waits of the scope's own jobs, by any dimension: a
 * partition's row holds only its jobs there. */
static void test_queue_of_the_scope(void **state)
{
	/* jobs started on the 6th inside each scope (see the README) */
	static const int want[N_TOK] = {2, 2, 3, 1, 1};
	for (size_t i = 0; i < N_TOK; i++) {
		struct gl_test_http r;
		cJSON *j;
		long long jobs = 0;
		const cJSON *it;
		for (int a = 0; a < 2; a++) {
			const char *path = a ? "/v1/queue?window=2026-10-06&aggregate=team" : "/v1/queue?window=2026-10-06&aggregate=partition";
			assert_int_equal(get(path, g_tokens[i], &r), 200);
			assert_nothing_of_others(&g_tok[i], path, r.body);
			gl_test_http_fini(&r);
		}
		j = get_json("/v1/queue?window=2026-10-06&aggregate=partition", g_tokens[i]);
		cJSON_ArrayForEach(it, cJSON_GetObjectItem(j, "items"))
			jobs += gl_test_jnum(it, "jobs");
		cJSON_Delete(j);
		if (jobs != want[i])
			fail_msg("%s: %lld jobs in the queue's waits, want %d", g_tok[i].name, jobs, want[i]);
	}
}

/* /v1/idle: its own jobs' idle; the fleet's unallocated idle (every
 * owner's capacity less their allocation) is withheld. */
static void test_idle_of_the_scope(void **state)
{
	cJSON *adm = get_json("/v1/idle?window=2026-10-06", NULL);
	assert_true(cJSON_GetArraySize(cJSON_GetObjectItem(adm, "unallocated_idle")) > 0);
	cJSON_Delete(adm);
	for (size_t i = 0; i < N_TOK; i++) {
		struct gl_test_http r;
		cJSON *j = get_json("/v1/idle?window=2026-10-06", g_tokens[i]);
		assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "unallocated_idle")), 0);
		assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "wasted_fraction")));
		cJSON_Delete(j);
		assert_int_equal(get("/v1/idle?window=2026-10-06&aggregate=user&format=csv&table=top_jobs", g_tokens[i], &r), 200);
		assert_nothing_of_others(&g_tok[i], "/v1/idle", r.body);
		gl_test_http_fini(&r);
	}
}

/* The history of a forecast's series: "key=v,v,...;" for each series, the
 * values as sent. */
static void history_text(const cJSON *j, char *out, size_t n)
{
	const cJSON *so, *h;
	size_t o = 0;
	out[0] = '\0';
	cJSON_ArrayForEach(so, cJSON_GetObjectItem(j, "series"))
	{
		o += (size_t)snprintf(out + o, n - o, "%s=", cJSON_GetObjectItem(so, "key")->valuestring);
		cJSON_ArrayForEach(h, cJSON_GetObjectItem(so, "history"))
			o += (size_t)snprintf(out + o, n - o, "%g,", cJSON_GetObjectItem(h, "value")->valuedouble);
		o += (size_t)snprintf(out + o, n - o, ";");
		assert_true(o < n);
	}
}

/* The series of j whose key is one of keys (comma list), in its order:
 * the admin's answer cut to the keys a scope owns. */
static void history_of_keys(const cJSON *j, const char *keys, char *out, size_t n)
{
	cJSON *copy = cJSON_Duplicate(j, 1), *arr = cJSON_GetObjectItem(copy, "series");
	for (int k = cJSON_GetArraySize(arr) - 1; k >= 0; k--) {
		const char *key = cJSON_GetObjectItem(cJSON_GetArrayItem(arr, k), "key")->valuestring;
		char padded[256], want[128];
		snprintf(padded, sizeof padded, ",%s,", keys);
		snprintf(want, sizeof want, ",%s,", key);
		if (!strstr(padded, want))
			cJSON_DeleteItemFromArray(arr, k);
	}
	history_text(copy, out, n);
	cJSON_Delete(copy);
}

/* /v1/forecast: a scoped token's series are those of its own jobs, the
 * same history (and so the same forecast) as the admin's series of those
 * owners, for the allocation metrics (per segment, as chargeback) and the
 * queue's (by the owner at the job's start); nothing of another owner. */
static void test_forecast_of_the_scope(void **state)
{
	static const char *const metrics[] = {"gpu_hours", "cost", "busy_gpu_hours", "demand_gpus", "pending_gpus",
					      "pending_minutes"};
	/* the tokens whose scope is one dimension, the keys of their own */
	static const struct {
		size_t tok;
		const char *agg, *keys;
	} one[] = {{0, "team", "vision"}, {1, "team", "vision"}, {2, "team", "robotics,vision"}, {4, "user", "alice"}};
	char path[512], want[8192], got[8192];
	for (size_t m = 0; m < sizeof metrics / sizeof metrics[0]; m++)
		for (size_t i = 0; i < sizeof one / sizeof one[0]; i++) {
			const struct scoped *t = &g_tok[one[i].tok];
			struct gl_test_http r;
			cJSON *adm, *sc;
			snprintf(path, sizeof path, "/v1/forecast?metric=%s&aggregate=%s&window=2026-10&step=day&horizon=3",
				 metrics[m], one[i].agg);
			adm = get_json(path, NULL);
			assert_int_equal(get(path, t->token, &r), 200);
			assert_nothing_of_others(t, path, r.body);
			sc = cJSON_Parse(r.body);
			gl_test_http_fini(&r);
			history_text(sc, got, sizeof got);
			history_of_keys(adm, one[i].keys, want, sizeof want);
			if (strcmp(got, want))
				fail_msg("%s as %s:\n got %s\nwant %s", path, t->name, got, want);
			/* the admin's answer has other owners: the comparison is not empty */
			assert_true(cJSON_GetArraySize(cJSON_GetObjectItem(adm, "series")) >
				    cJSON_GetArraySize(cJSON_GetObjectItem(sc, "series")));
			cJSON_Delete(adm);
			cJSON_Delete(sc);
		}
	/* across dimensions (project px and user carol): the admin asking with
	 * the same filter written another way (a cache entry of its own) */
	for (size_t m = 0; m < sizeof metrics / sizeof metrics[0]; m++) {
		cJSON *adm, *sc;
		struct gl_test_http r;
		snprintf(path, sizeof path, "/v1/forecast?metric=%s&aggregate=team,user&window=2026-10&step=day&horizon=3",
			 metrics[m]);
		assert_int_equal(get(path, g_tok[3].token, &r), 200);
		assert_nothing_of_others(&g_tok[3], path, r.body);
		sc = cJSON_Parse(r.body);
		gl_test_http_fini(&r);
		strcat(path, "&filter=user:carol%2Bproject:px");
		adm = get_json(path, NULL);
		history_text(sc, got, sizeof got);
		history_text(adm, want, sizeof want);
		assert_string_equal(got, want);
		assert_non_null(strstr(got, "robotics/carol="));
		cJSON_Delete(adm);
		cJSON_Delete(sc);
	}
}

/* The sum of a forecast answer's history values, over every series. */
static double history_sum(const cJSON *j)
{
	const cJSON *so, *h;
	double sum = 0;
	cJSON_ArrayForEach(so, cJSON_GetObjectItem(j, "series"))
		cJSON_ArrayForEach(h, cJSON_GetObjectItem(so, "history"))
			sum += cJSON_GetObjectItem(h, "value")->valuedouble;
	return sum;
}

/* The same request by a scope, the admin, then another scope: each its
 * own answer, never one cached for another (vision 18,000 GPU-seconds,
 * all four jobs 63,609, alice 14,400); a filter outside the scope is 403
 * naming it. */
static void test_forecast_cache_per_scope(void **state)
{
	static const char path[] = "/v1/forecast?metric=gpu_hours&aggregate=team&window=2026-09-28,2026-10-12&step=day&horizon=2";
	struct gl_test_http r;
	cJSON *j = get_json(path, g_tok[0].token);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "series")), 1);
	assert_true(fabs(history_sum(j) - 18000 / 3600.0) < 1e-9);
	cJSON_Delete(j);
	j = get_json(path, NULL);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "series")), 3);
	assert_true(fabs(history_sum(j) - 63609 / 3600.0) < 1e-3);
	cJSON_Delete(j);
	j = get_json(path, g_tok[4].token);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "series")), 1);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "series"), 0), "key")->valuestring,
			    "vision");
	assert_true(fabs(history_sum(j) - 14400 / 3600.0) < 1e-9);
	cJSON_Delete(j);
	/* and the first scope again, from the cache: still its own */
	j = get_json(path, g_tok[0].token);
	assert_true(fabs(history_sum(j) - 18000 / 3600.0) < 1e-9);
	cJSON_Delete(j);
	for (int k = 0; k < 2; k++) {
		assert_int_equal(get(k ? "/v1/forecast?window=2026-10&filter=team:%22vision%22,%22language%22"
				       : "/v1/forecast?window=2026-10&metric=pending_minutes&filter=team:language",
				     g_tok[0].token, &r),
				 403);
		assert_non_null(strstr(r.body, "\"param\":\"filter\""));
		assert_null(strstr(r.body, "33262"));
		gl_test_http_fini(&r);
	}
	/* the fleet's capacity outlook is not a scope's */
	assert_int_equal(get("/v1/capacity/forecast", g_tok[0].token, &r), 403);
	gl_test_http_fini(&r);
	assert_int_equal(get("/v1/forecast?window=2026-10&filter=team", NULL, &r), 400);
	assert_non_null(strstr(r.body, "\"param\":\"filter\""));
	gl_test_http_fini(&r);
}

/* whoami and /v1/tokens say the scope by dimension; token list too. */
static void test_scope_is_shown(void **state)
{
	struct gl_test_http r;
	struct gl_test_out o;
	cJSON *j = get_json("/v1/whoami", g_tok[3].token);
	char *s = cJSON_PrintUnformatted(cJSON_GetObjectItem(j, "scope"));
	assert_string_equal(s, "{\"project\":[\"px\"],\"user\":[\"carol\"]}");
	free(s);
	cJSON_Delete(j);
	j = get_json("/v1/whoami", g_tok[1].token);
	s = cJSON_PrintUnformatted(cJSON_GetObjectItem(j, "scope"));
	assert_string_equal(s, "{\"team\":[\"vision\"]}");
	free(s);
	cJSON_Delete(j);
	assert_int_equal(get("/v1/tokens", NULL, &r), 200);
	assert_non_null(strstr(r.body, "\"scope\":{\"team\":[\"vision\",\"robotics\"]}"));
	assert_non_null(strstr(r.body, "\"owners\":[\"project=px\",\"user=carol\"]"));
	gl_test_http_fini(&r);
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "token", "list", NULL), 0);
	assert_int_equal(o.status, 0);
	assert_non_null(strstr(o.out, "project=px,user=carol"));
	assert_non_null(strstr(o.out, "team=vision,team=robotics"));
	gl_test_out_fini(&o);
	/* the stored form: one list per dimension; the legacy token's is a team */
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM api_tokens WHERE name = 'legacy'"
						  " AND scopes = '{\"team\": [\"vision\"]}'::jsonb"),
			 1);
	/* a row in the form before 081 is refused by the table itself */
	assert_true(gl_test_exec_owner(g_dsn, "INSERT INTO api_tokens (name, token_sha256, role, scopes)"
					    " VALUES ('old', '\\x01', 'viewer', '{\"owners\": [\"vision\"]}')") < 0);
}

/* --scope with an unknown dimension, an empty value or a synthetic row's
 * name: exit 2 naming it, no token. */
static void test_bad_scope_is_exit_2(void **state)
{
	static const struct {
		const char *arg, *says;
	} bad[] = {
		{"division=vision", "unknown dimension 'division'"},
		{"team=", "empty value for dimension 'team'"},
		{"user=", "empty value for dimension 'user'"},
		{"vision", "expected DIM=VALUE"},
		{"team=__idle__", "'__idle__' is the name of a synthetic row"},
		{"owner=__unallocated__", "'__unallocated__' is the name of a synthetic row"},
		{"project=a,b", "bad value 'a,b' for dimension 'project'"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct gl_test_out o;
		assert_int_equal(gl_test_run(g_dsn, NULL, &o, "token", "create", "--name", "bad", "--role", "finance",
					     "--scope", bad[i].arg, NULL),
				 0);
		assert_int_equal(o.status, 2);
		if (!strstr(o.err, bad[i].says))
			fail_msg("--scope %s: stderr %s", bad[i].arg, o.err);
		assert_null(strstr(o.out, "glt_"));
		gl_test_out_fini(&o);
	}
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM api_tokens WHERE name = 'bad'"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chargeback_equals_the_admin_filter),
		cmocka_unit_test(test_filter_outside_the_scope_is_403),
		cmocka_unit_test(test_jobs_of_the_scope),
		cmocka_unit_test(test_report_of_the_scope),
		cmocka_unit_test(test_budgets_of_the_scope),
		cmocka_unit_test(test_queue_of_the_scope),
		cmocka_unit_test(test_idle_of_the_scope),
		cmocka_unit_test(test_forecast_of_the_scope),
		cmocka_unit_test(test_forecast_cache_per_scope),
		cmocka_unit_test(test_scope_is_shown),
		cmocka_unit_test(test_bad_scope_is_exit_2),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
