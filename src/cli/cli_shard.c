/* `gpuledger shard init|attach|list` (docs/scale.md, "Sharding over
 * PostgreSQL servers"). */
#include "gl/cli.h"
#include "gl/shard.h"
#include "gl/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage_shard[] =
	"usage: gpuledger shard init --index K\n"
	"       gpuledger shard attach NAME --index K --dsn CONNINFO\n"
	"       gpuledger shard list\n"
	"\n"
	"  init     on a shard's database, before its first ingest: its cluster, node, GPU and job ids start\n"
	"           in shard K's range (K = 1..62), unique over the fleet\n"
	"  attach   on the central database: read shard K, named NAME, over postgres_fdw (CONNINFO's user and\n"
	"           password become the user mapping; a superuser first runs CREATE EXTENSION postgres_fdw,\n"
	"           CREATE EXTENSION dblink SCHEMA gl_dblink and GRANT USAGE ON FOREIGN DATA WRAPPER postgres_fdw\n"
	"           to the service's role)\n"
	"  list     on the central database: the shards, whether each answers now, and their clusters\n";

static int parse_index(const char *s, int *k)
{
	char *end;
	long v = s ? strtol(s, &end, 10) : 0;
	if (!s || *end || v < 1 || v > GL_SHARD_MAX)
		return gl_cli_usage_error(usage_shard, "shard: --index must be 1..%d", GL_SHARD_MAX);
	*k = (int)v;
	return -1;
}

static int shard_list(struct gl_store *c, struct gl_err *err)
{
	struct gl_shard_route rt = {0};
	int n = 0, rc;
	if ((rc = gl_shard_count(c, &n, err)) || (rc = gl_shard_route(c, &rt, err)))
		return rc;
	printf("%d shards; not answering: %s\n", n, rt.unread_text ? rt.unread_text : "none");
	gl_shard_route_fini(&rt);
	return 0;
}

int gl_cli_shard(struct gl_config *cfg, int argc, char **argv)
{
	const char *index = NULL, *dsn = NULL;
	const struct gl_cli_opt opts[] = {{"index", &index}, {"dsn", &dsn}, {NULL, NULL}};
	struct gl_err err = {0};
	struct gl_store *c = NULL;
	int k = 0, rc;

	if (argc < 2 || gl_cli_wants_help(argc, argv)) {
		fputs(usage_shard, argc < 2 ? stderr : stdout);
		return argc < 2 ? GL_CLI_EXIT_USAGE : 0;
	}
	if (!strcmp(argv[1], "list")) {
		if (argc != 2)
			return gl_cli_usage_error(usage_shard, "shard list: unexpected argument '%s'", argv[2]);
		if (gl_store_open(cfg, &c, &err) || shard_list(c, &err))
			rc = gl_cli_fail(&err);
		else
			rc = 0;
		gl_store_close(c);
		return rc;
	}
	if (!strcmp(argv[1], "init")) {
		if ((rc = gl_cli_parse_opts(argc - 1, argv + 1, "shard init", usage_shard, opts)) >= 0 ||
		    (rc = parse_index(index, &k)) >= 0)
			return rc;
		if (gl_store_open(cfg, &c, &err) || gl_shard_local_init(c, k, &err))
			rc = gl_cli_fail(&err);
		else
			printf("shard init: this database is shard %d (cluster ids from %d)\n", k, k * 1000000);
		gl_store_close(c);
		return rc < 0 ? 0 : rc;
	}
	if (!strcmp(argv[1], "attach")) {
		if (argc < 3 || argv[2][0] == '-')
			return gl_cli_usage_error(usage_shard, "shard attach: NAME is missing");
		if ((rc = gl_cli_parse_opts(argc - 2, argv + 2, "shard attach", usage_shard, opts)) >= 0 ||
		    (rc = parse_index(index, &k)) >= 0)
			return rc;
		if (!dsn)
			return gl_cli_usage_error(usage_shard, "shard attach: --dsn is missing");
		if (gl_store_open(cfg, &c, &err) || gl_shard_attach(c, k, argv[2], dsn, &err))
			rc = gl_cli_fail(&err);
		else
			printf("shard attach: %s is shard %d\n", argv[2], k);
		gl_store_close(c);
		return rc < 0 ? 0 : rc;
	}
	return gl_cli_usage_error(usage_shard, "shard: unknown subcommand '%s'", argv[1]);
}
