/* docs/openapi.yaml against the route table (issue 7): every route the
 * server answers is documented and every documented path is a route; for
 * each, the same method, least role, query parameters and whether a hot
 * standby may answer it (x-gpuledger-reads: standby, replica_ok) and whether
 * an owner-scoped token may use it (x-gpuledger-scoped: owner, owner_scoped;
 * docs/security.md, "Owner scopes"). Parsed with
 * libyaml's document API (aliases resolve to the shared node). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/routes.h"
#include "lib/testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

static yaml_document_t g_doc;

static int setup(void **state)
{
	yaml_parser_t p;
	FILE *f = fopen(gl_test_fixture("docs/openapi.yaml"), "rb");
	int ok;
	if (!f)
		return -1;
	yaml_parser_initialize(&p);
	yaml_parser_set_input_file(&p, f);
	ok = yaml_parser_load(&p, &g_doc);
	if (!ok)
		fprintf(stderr, "docs/openapi.yaml:%zu: %s\n", p.problem_mark.line + 1, p.problem ? p.problem : "?");
	yaml_parser_delete(&p);
	fclose(f);
	return ok && yaml_document_get_root_node(&g_doc) ? 0 : -1;
}

static int teardown(void **state)
{
	yaml_document_delete(&g_doc);
	return 0;
}

static const char *scalar(yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* The value of key in a mapping node, or NULL. */
static yaml_node_t *get(yaml_node_t *map, const char *key)
{
	if (!map || map->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		const char *k = scalar(yaml_document_get_node(&g_doc, p->key));
		if (k && !strcmp(k, key))
			return yaml_document_get_node(&g_doc, p->value);
	}
	return NULL;
}

static yaml_node_t *root_get(const char *k)
{
	return get(yaml_document_get_root_node(&g_doc), k);
}

/* A prefix route ("/v1/reports/") is documented as its one path
 * parameter ("/v1/reports/{id}"): the route's path as the document names it. */
static const char *doc_path(const char *route_path)
{
	static char buf[256];
	size_t n = strlen(route_path);
	if (n > 1 && route_path[n - 1] == '/') {
		snprintf(buf, sizeof buf, "%s{id}", route_path);
		return buf;
	}
	return route_path;
}

static const struct gl_server_route *route_for(const char *path)
{
	for (size_t i = 0; gl_routes[i].path; i++)
		if (!strcmp(doc_path(gl_routes[i].path), path))
			return &gl_routes[i];
	return NULL;
}

/* Query parameter names of an operation, sorted, comma-joined, into out. */
static void doc_params(yaml_node_t *op, char *out, size_t n)
{
	yaml_node_t *params = get(op, "parameters");
	char names[32][64];
	size_t k = 0;
	out[0] = '\0';
	if (params) {
		assert_int_equal(params->type, YAML_SEQUENCE_NODE);
		for (yaml_node_item_t *it = params->data.sequence.items.start; it < params->data.sequence.items.top; it++) {
			yaml_node_t *pn = yaml_document_get_node(&g_doc, *it);
			const char *ref = scalar(get(pn, "$ref"));
			if (ref) {
				const char *pfx = "#/components/parameters/";
				assert_memory_equal(ref, pfx, strlen(pfx));
				pn = get(get(root_get("components"), "parameters"), ref + strlen(pfx));
				if (!pn)
					fail_msg("unresolved %s", ref);
			}
			assert_non_null(scalar(get(pn, "in")));
			if (strcmp(scalar(get(pn, "in")), "query") != 0)
				continue;
			assert_true(k < 32);
			snprintf(names[k++], sizeof names[0], "%s", scalar(get(pn, "name")));
		}
	}
	qsort(names, k, sizeof names[0], (int (*)(const void *, const void *))strcmp);
	for (size_t i = 0; i < k; i++) {
		if (i && !strcmp(names[i], names[i - 1]))
			fail_msg("parameter %s listed twice", names[i]);
		snprintf(out + strlen(out), n - strlen(out), "%s%s", i ? "," : "", names[i]);
	}
}

static void route_params_sorted(const struct gl_server_route *r, char *out, size_t n)
{
	char buf[512], names[32][64], *save = NULL;
	size_t k = 0;
	out[0] = '\0';
	snprintf(buf, sizeof buf, "%s", r->params ? r->params : "");
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
		snprintf(names[k++], sizeof names[0], "%s", t);
	qsort(names, k, sizeof names[0], (int (*)(const void *, const void *))strcmp);
	for (size_t i = 0; i < k; i++)
		snprintf(out + strlen(out), n - strlen(out), "%s%s", i ? "," : "", names[i]);
}

static void test_every_route_is_documented_with_its_role_and_parameters(void **state)
{
	yaml_node_t *paths = root_get("paths");
	size_t n = 0;
	assert_non_null(paths);
	for (size_t i = 0; gl_routes[i].path; i++, n++) {
		const struct gl_server_route *r = &gl_routes[i];
		char method[16], want[512], got[512];
		yaml_node_t *op;
		const char *role;
		for (size_t k = 0; k <= strlen(r->method) && k < sizeof method; k++)
			method[k] = (char)(r->method[k] >= 'A' && r->method[k] <= 'Z' ? r->method[k] + 32 : r->method[k]);
		op = get(get(paths, doc_path(r->path)), method);
		if (!op)
			fail_msg("%s %s is a route but not in docs/openapi.yaml", r->method, r->path);
		role = scalar(get(op, "x-gpuledger-role"));
		if (!role || strcmp(role, r->role) != 0)
			fail_msg("%s: x-gpuledger-role %s, the route says %s", r->path, role ? role : "(none)", r->role);
		{
			/* the routes a hot standby may answer (database.read_dsn) */
			const char *reads = scalar(get(op, "x-gpuledger-reads"));
			if (r->replica_ok != (reads && !strcmp(reads, "standby")))
				fail_msg("%s: x-gpuledger-reads %s, the route's replica_ok is %d", r->path, reads ? reads : "(none)",
					 r->replica_ok);
		}
		{
			const char *sc = scalar(get(op, "x-gpuledger-scoped"));
			if (r->owner_scoped != (sc && !strcmp(sc, "owner")))
				fail_msg("%s: x-gpuledger-scoped %s, the route's owner_scoped is %d", r->path, sc ? sc : "(none)",
					 r->owner_scoped);
		}
		doc_params(op, got, sizeof got);
		route_params_sorted(r, want, sizeof want);
		if (strcmp(got, want) != 0)
			fail_msg("%s: documented parameters [%s], the route accepts [%s]", r->path, got, want);
		/* every error a route can give has the documented shape */
		assert_non_null(get(get(op, "responses"), "200"));
		if (strcmp(r->role, "public") != 0)
			assert_non_null(get(get(op, "responses"), "401"));
	}
	assert_true(n >= 10);
}

static void test_every_documented_path_is_a_route(void **state)
{
	yaml_node_t *paths = root_get("paths");
	assert_int_equal(paths->type, YAML_MAPPING_NODE);
	for (yaml_node_pair_t *p = paths->data.mapping.pairs.start; p < paths->data.mapping.pairs.top; p++) {
		const char *path = scalar(yaml_document_get_node(&g_doc, p->key));
		yaml_node_t *ops = yaml_document_get_node(&g_doc, p->value);
		const struct gl_server_route *r = route_for(path);
		if (!r)
			fail_msg("docs/openapi.yaml documents %s, which the server does not answer", path);
		for (yaml_node_pair_t *q = ops->data.mapping.pairs.start; q < ops->data.mapping.pairs.top; q++) {
			const char *m = scalar(yaml_document_get_node(&g_doc, q->key));
			int found = 0;
			/* a path may have several routes, one per method */
			for (size_t i = 0; gl_routes[i].path; i++)
				found |= !strcmp(doc_path(gl_routes[i].path), path) && !strcasecmp(m, gl_routes[i].method);
			if (!found)
				fail_msg("docs/openapi.yaml documents %s %s; the route is %s", m, path, r->method);
		}
	}
}

static void test_the_error_schema(void **state)
{
	yaml_node_t *err = get(get(get(root_get("components"), "schemas"), "Error"), "properties");
	yaml_node_t *inner = get(get(err, "error"), "properties");
	assert_non_null(inner);
	assert_non_null(get(inner, "code"));
	assert_non_null(get(inner, "message"));
	assert_non_null(get(inner, "param"));
	assert_string_equal(scalar(root_get("openapi")), "3.0.3");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_route_is_documented_with_its_role_and_parameters),
		cmocka_unit_test(test_every_documented_path_is_a_route),
		cmocka_unit_test(test_the_error_schema),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
