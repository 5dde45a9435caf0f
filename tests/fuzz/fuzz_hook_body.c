/* fuzz-link: full
 * libFuzzer harness for the API's POST bodies: POST /v1/hook/actions
 * (gl_hook_record) is the one POST route. The body is checked before the
 * database is asked anything, so the harness hands it a connection that
 * cannot connect: a body the route accepts ends at the database (-GL_EDB),
 * one it refuses is -GL_EINVAL naming the field. Invariants:
 * - nothing else comes back (no 5xx for a client's mistake, no success);
 * - a refusal names "body" or one of the record's fields, and its message
 *   starts with what it names (or a JSON path inside it);
 * - a body that reaches the database keeps the contract, checked here
 *   independently: one JSON object (strict UTF-8, nothing after it) of
 *   known fields, each once; cluster, job_id, policy and stage non-empty
 *   strings, stage warn1|warn2|act, ok a boolean, exit_status an integer or
 *   null, command a string or an array of strings, owner a string; no
 *   string holding \u0000; cluster, job_id, policy, owner within 255 bytes
 *   and the command within 4096 (docs/ingest.md, "Bounded keys").
 * Seeds: the bodies of docs/hook.md, docs/openapi.yaml and the http tests
 * (tests/fuzz/corpus/hook_body). */
#include "gl/config.h"
#include "store/db_int.h"
#include "gl/hook.h"
#include "gl/jsonscan.h"
#include "gl/utf8.h"

#include <cjson/cJSON.h>
#include <libpq-fe.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const fields[] = {"cluster", "job_id", "policy", "stage", "ok", "exit_status", "command", "owner"};

static int stop_at_nul(const char *path, void *ud)
{
	(void)path;
	(void)ud;
	return 1;
}

static int known_field(const char *s)
{
	for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
		if (!strcmp(s, fields[i]))
			return 1;
	return 0;
}

static int str_ok(const cJSON *o, const char *k, int required, size_t max)
{
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, k);
	if (!f)
		return !required;
	return cJSON_IsString(f) && (!required || f->valuestring[0]) && strlen(f->valuestring) <= max;
}

/* The contract of an accepted body, read independently of the route. */
static void check_accepted(const char *body, size_t len)
{
	const char *end = NULL;
	cJSON *o, *f;
	size_t total = 0;

	if (gl_utf8_validate(body, len, NULL) || gl_jsonscan_nul(body, len, stop_at_nul, NULL))
		abort();
	o = cJSON_ParseWithLengthOpts(body, len, &end, 0);
	if (!cJSON_IsObject(o))
		abort();
	while ((size_t)(end - body) < len && strchr(" \t\r\n", *end))
		end++;
	if ((size_t)(end - body) != len)
		abort();
	for (cJSON *a = o->child; a; a = a->next) {
		if (!known_field(a->string))
			abort();
		for (cJSON *b = o->child; b != a; b = b->next)
			if (!strcmp(a->string, b->string))
				abort();
	}
	if (!str_ok(o, "cluster", 1, 255) || !str_ok(o, "job_id", 1, 255) || !str_ok(o, "policy", 1, 255) ||
	    !str_ok(o, "stage", 1, 16) || !str_ok(o, "owner", 0, 255))
		abort();
	f = cJSON_GetObjectItemCaseSensitive(o, "stage");
	if (strcmp(f->valuestring, "warn1") && strcmp(f->valuestring, "warn2") && strcmp(f->valuestring, "act"))
		abort();
	if (!cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(o, "ok")))
		abort();
	f = cJSON_GetObjectItemCaseSensitive(o, "exit_status");
	if (f && !cJSON_IsNull(f) &&
	    (!cJSON_IsNumber(f) || f->valuedouble != (double)(int)f->valuedouble || f->valuedouble < INT_MIN ||
	     f->valuedouble > INT_MAX))
		abort();
	f = cJSON_GetObjectItemCaseSensitive(o, "command");
	if (cJSON_IsString(f)) {
		total = strlen(f->valuestring) + 1;
	} else if (cJSON_IsArray(f)) {
		cJSON *e;
		cJSON_ArrayForEach(e, f)
		{
			if (!cJSON_IsString(e))
				abort();
			total += strlen(e->valuestring) + 1;
		}
	} else if (f && !cJSON_IsNull(f)) {
		abort();
	}
	if (total > 4096)
		abort();
	cJSON_Delete(o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static PGconn *dead;
	static struct gl_config cfg;
	struct gl_err err = {0};
	const char *param = NULL;
	cJSON *out = NULL;
	int rc;

	if (!dead) {
		/* a socket that cannot exist: libpq fails at once, every statement errs */
		dead = PQconnectdb("host=/nonexistent-gpuledger-fuzz port=1 connect_timeout=1");
		if (gl_config_load_buf(&cfg, NULL, NULL, 0, &err))
			abort();
	}
	rc = gl_hook_record(gl_db_store(dead), &cfg, (const char *)data, size, "token:1", 1795478400, &out, &param, &err);
	if (rc == -GL_EDB) {
		check_accepted((const char *)data, size);
		return 0;
	}
	if (rc != -GL_EINVAL || out || !param)
		abort();
	if (strcmp(param, "body") && !known_field(param))
		abort();
	if (strncmp(err.msg, param, strlen(param)))
		abort();
	return 0;
}
