/* POST /v1/hook/actions from an external controller (docs/hook.md): an
 * owner left out, or given as "", is stored as not known (NULL) and listed
 * as null, never as "" (which read as an owner with an empty name); a
 * policy that is not one of hook.policies is kept (a controller may have
 * its own names) and marked "policy_known": false, in the 201 answer and
 * in GET /v1/hook/actions. Real binary over real HTTP, real PostgreSQL. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char g_dsn[512];
static struct gl_test_daemon g_d;

static const char config_yaml[] = "hook:\n  policies:\n    - name: slurm-idle\n      scope: {clusters: c1}\n"
				  "      rule: {kind: reset, t1_min: 30, t3_min: 60}\n"
				  "      slurm_command: /bin/true {job_id}\n";

static int setup(void **state)
{
	if (gl_test_db_fresh("gl_test_hook_record", g_dsn, sizeof g_dsn))
		return -1;
	return gl_test_daemon_start(&g_d, g_dsn, config_yaml, (const char *[]){"--no-ingest", NULL});
}

static int teardown(void **state)
{
	return gl_test_daemon_stop(&g_d) == 0 ? 0 : -1;
}

/* POSTs body; returns the 201 answer's policy_known (0/1). */
static int post(const char *body)
{
	struct gl_test_http r;
	cJSON *j, *k;
	int known;
	assert_int_equal(gl_test_http(g_d.port, "POST", "/v1/hook/actions", body, strlen(body), NULL, &r), 0);
	if (r.status != 201)
		fail_msg("%s -> %ld %s", body, r.status, r.body);
	j = cJSON_Parse(r.body);
	k = cJSON_GetObjectItem(j, "policy_known");
	assert_true(cJSON_IsBool(k));
	known = cJSON_IsTrue(k);
	cJSON_Delete(j);
	gl_test_http_fini(&r);
	return known;
}

static void test_owner_unknown_and_policy_marked(void **state)
{
	PGconn *c = PQconnectdb(g_dsn);
	cJSON *j, *it;
	int seen = 0;

	assert_int_equal(post("{\"cluster\":\"c1\",\"job_id\":\"701\",\"policy\":\"slurm-idle\",\"stage\":\"warn1\",\"ok\":true}"),
			 1);
	assert_int_equal(post("{\"cluster\":\"c1\",\"job_id\":\"702\",\"policy\":\"ext-reaper\",\"stage\":\"act\","
			      "\"ok\":true,\"owner\":\"\"}"),
			 0);
	assert_int_equal(post("{\"cluster\":\"c1\",\"job_id\":\"703\",\"policy\":\"ext-reaper\",\"stage\":\"warn1\","
			      "\"ok\":false,\"owner\":\"teamx\"}"),
			 0);
	assert_int_equal(PQstatus(c), CONNECTION_OK);
	assert_int_equal(gl_test_qint(c, "SELECT count(*) FROM hook_actions WHERE owner IS NULL"), 2);
	assert_int_equal(gl_test_qint(c, "SELECT count(*) FROM hook_actions WHERE owner = ''"), 0);
	assert_int_equal(gl_test_qint(c, "SELECT count(*) FROM hook_actions WHERE owner = 'teamx'"), 1);
	PQfinish(c);

	j = gl_test_get_json(g_d.port, "/v1/hook/actions", 200);
	assert_non_null(j);
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(j, "actions"))
	{
		const char *id = cJSON_GetObjectItem(it, "job_id")->valuestring;
		cJSON *owner = cJSON_GetObjectItem(it, "owner"), *known = cJSON_GetObjectItem(it, "policy_known");
		assert_true(cJSON_IsBool(known));
		if (!strcmp(id, "701")) {
			assert_true(cJSON_IsNull(owner));
			assert_true(cJSON_IsTrue(known));
		} else if (!strcmp(id, "702")) {
			assert_true(cJSON_IsNull(owner));
			assert_true(cJSON_IsFalse(known));
			assert_string_equal(cJSON_GetObjectItem(it, "policy")->valuestring, "ext-reaper");
		} else {
			assert_string_equal(id, "703");
			assert_string_equal(owner->valuestring, "teamx");
			assert_true(cJSON_IsFalse(known));
		}
		seen++;
	}
	assert_int_equal(seen, 3);
	cJSON_Delete(j);
}

/* A controller's command carrying a credential (as argv, and as one
 * string) is stored, audited and listed blanked. */
static void test_recorded_command_is_blanked(void **state)
{
	PGconn *c = PQconnectdb(g_dsn);
	cJSON *j, *it;
	int seen = 0;

	post("{\"cluster\":\"c1\",\"job_id\":\"801\",\"policy\":\"ext\",\"stage\":\"act\",\"ok\":true,"
	     "\"command\":[\"kubectl\",\"--token\",\"tokSECRET1\",\"-H\",\"X-Api-Key: keySECRET2 more\",\"delete\",\"pod\",\"p\"]}");
	post("{\"cluster\":\"c1\",\"job_id\":\"802\",\"policy\":\"ext\",\"stage\":\"act\",\"ok\":true,"
	     "\"command\":\"curl -u admin:pwSECRET3 https://h/cancel?job=802&access_token=tokSECRET4\"}");
	assert_int_equal(PQstatus(c), CONNECTION_OK);
	assert_int_equal(gl_test_qint(c, "SELECT count(*) FROM hook_actions WHERE job_id = '801'"
					 " AND argv = ARRAY['kubectl', '--token', '***', '-H', 'X-Api-Key: ***', 'delete', 'pod', 'p']"),
			 1);
	assert_int_equal(gl_test_qint(c, "SELECT count(*) FROM hook_actions WHERE job_id = '802'"
					 " AND argv = ARRAY['curl -u admin:*** https://h/cancel?job=802&access_token=***']"),
			 1);
	assert_int_equal(gl_test_qint(c, "SELECT count(*) FROM hook_actions WHERE argv::text LIKE '%SECRET%'"), 0);
	assert_int_equal(gl_test_qint(c, "SELECT count(*) FROM audit_log WHERE action = 'hook.record'"
					 " AND object IN ('job:c1/801', 'job:c1/802')"),
			 2);
	assert_int_equal(gl_test_qint(c, "SELECT count(*) FROM audit_log WHERE detail::text LIKE '%SECRET%'"), 0);
	assert_int_equal(gl_test_qint(c, "SELECT count(*) FROM audit_log WHERE action = 'hook.record'"
					 " AND detail->'command'->>2 = '***'"),
			 1);
	PQfinish(c);

	j = gl_test_get_json(g_d.port, "/v1/hook/actions", 200);
	assert_non_null(j);
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(j, "actions"))
	{
		char *t = cJSON_PrintUnformatted(it);
		assert_null(strstr(t, "SECRET"));
		seen += !strcmp(cJSON_GetObjectItem(it, "job_id")->valuestring, "801") ||
			!strcmp(cJSON_GetObjectItem(it, "job_id")->valuestring, "802");
		free(t);
	}
	assert_int_equal(seen, 2);
	cJSON_Delete(j);
}

/* POSTs body, wants 400 naming param with says in the message. */
static void refused(const char *body, size_t len, const char *param, const char *says)
{
	struct gl_test_http r;
	cJSON *j, *e;
	assert_int_equal(gl_test_http(g_d.port, "POST", "/v1/hook/actions", body, len, NULL, &r), 0);
	if (r.status != 400)
		fail_msg("%.120s -> %ld %.300s", body, r.status, r.body);
	j = cJSON_Parse(r.body);
	e = cJSON_GetObjectItem(j, "error");
	assert_string_equal(cJSON_GetObjectItem(e, "param")->valuestring, param);
	if (!strstr(cJSON_GetObjectItem(e, "message")->valuestring, says))
		fail_msg("message '%s' lacks '%s'", cJSON_GetObjectItem(e, "message")->valuestring, says);
	cJSON_Delete(j);
	gl_test_http_fini(&r);
}

/* A \u0000 cut a hook record's cluster ("a\u0000b" was stored as "a"), and
 * a hook token wrote a 900 kB audit row through policy: each is 400 naming
 * the field, and nothing is written (issue 24). */
static void test_nul_and_oversized_fields_are_400(void **state)
{
	static const char tail[] = "\",\"job_id\":\"9\",\"stage\":\"warn1\",\"ok\":true}";
	char *big = malloc(900 * 1024 + 256), *arg = malloc(5000);
	long long rows = gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM hook_actions");
	long long audit = gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM audit_log WHERE action = 'hook.record'");
	(void)state;
	refused("{\"cluster\":\"a\\u0000b\",\"job_id\":\"9\",\"policy\":\"p\",\"stage\":\"warn1\",\"ok\":true}",
		strlen("{\"cluster\":\"a\\u0000b\",\"job_id\":\"9\",\"policy\":\"p\",\"stage\":\"warn1\",\"ok\":true}"),
		"cluster", "cluster: holds \\u0000");
	refused("{\"cluster\":\"c1\",\"job_id\":\"9\",\"policy\":\"p\",\"stage\":\"warn1\",\"ok\":true,"
		"\"command\":[\"scancel\",\"9\\u0000; rm\"]}",
		strlen("{\"cluster\":\"c1\",\"job_id\":\"9\",\"policy\":\"p\",\"stage\":\"warn1\",\"ok\":true,"
		       "\"command\":[\"scancel\",\"9\\u0000; rm\"]}"),
		"command", "command[1]: holds \\u0000");
	/* in a field that is not one: the body's */
	refused("{\"clusterx\":\"a\\u0000b\",\"job_id\":\"9\",\"policy\":\"p\",\"stage\":\"warn1\",\"ok\":true}",
		strlen("{\"clusterx\":\"a\\u0000b\",\"job_id\":\"9\",\"policy\":\"p\",\"stage\":\"warn1\",\"ok\":true}"),
		"body", "body: clusterx: holds \\u0000");
	/* a 900 kB policy: under the body cap (1 MiB), over the name bound */
	strcpy(big, "{\"cluster\":\"c1\",\"policy\":\"");
	memset(big + strlen(big), 'p', 900 * 1024);
	strcpy(big + strlen("{\"cluster\":\"c1\",\"policy\":\"") + 900 * 1024, tail);
	refused(big, strlen(big), "policy", "policy: 921600 bytes, over the 255-byte bound of policy and owner names");
	memset(arg, 'x', 4999);
	arg[4999] = '\0';
	snprintf(big, 900 * 1024, "{\"cluster\":\"c1\",\"policy\":\"p\",\"command\":[\"notify\",\"%s\"]%s", arg, tail + 1);
	refused(big, strlen(big), "command", "command: 5007 bytes, over the 4096-byte bound");
	snprintf(big, 900 * 1024, "{\"cluster\":\"%s\",\"policy\":\"p%s", arg, tail);
	refused(big, strlen(big), "cluster", "over the 255-byte bound of cluster names");
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM hook_actions"), rows);
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM audit_log WHERE action = 'hook.record'"), audit);
	free(big);
	free(arg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_owner_unknown_and_policy_marked),
		cmocka_unit_test(test_recorded_command_is_blanked),
		cmocka_unit_test(test_nul_and_oversized_fields_are_400),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
