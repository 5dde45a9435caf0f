/* `gpuledger rates load FILE | list`: the cost model (rates, owner rules,
 * idle owners) from a YAML file with the same keys as the main config. */
#include "gl/accounting.h"
#include "gl/cli.h"
#include "gl/costing.h"
#include "gl/cost.h"
#include "gl/db.h"
#include "gl/log.h"

#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char usage_rates[] =
	"usage: gpuledger [--config FILE] rates load FILE | rates list\n"
	"load: replaces the rates, owners and idle_owners loaded from configuration with those in FILE\n"
	"      (YAML with the same keys as the main config; see docs/config.md). Validates first; nothing\n"
	"      changes on an error.\n"
	"list: prints the rates and owner rules in force.\n";

static void actor_name(char *buf, size_t n)
{
	struct passwd *pw = getpwuid(geteuid());
	snprintf(buf, n, "cli:%s", pw ? pw->pw_name : "unknown");
}

int gl_cli_rates(struct gl_config *cfg, int argc, char **argv)
{
	struct gl_err err = {0};
	PGconn *c = NULL;
	PGresult *r = NULL;
	int rc = 0;

	if (gl_cli_wants_help(argc, argv)) {
		fputs(usage_rates, stdout);
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "load")) {
		struct gl_config file;
		struct gl_costing_summary sum;
		char actor[64];
		if (gl_config_load(&file, argv[2], &err))
			return gl_cli_fail(&err);
		actor_name(actor, sizeof actor);
		if (gl_db_connect(cfg, &c, &err) || gl_costing_load(c, &file, actor, &sum, &err))
			rc = gl_cli_fail(&err);
		else if (sum.changed)
			printf("rates: %d rates, %d owner rules, %d idle owners loaded (changed; %d built days of the"
			       " rollup made stale)\n",
			       sum.rates, sum.owners, sum.idle_owners, sum.stale_days);
		else
			printf("rates: %d rates, %d owner rules, %d idle owners loaded (unchanged)\n", sum.rates,
			       sum.owners, sum.idle_owners);
		gl_config_fini(&file);
		goto out;
	}
	if (argc == 2 && !strcmp(argv[1], "list")) {
		if (gl_db_connect(cfg, &c, &err) ||
		    gl_db_query(c,
				"SELECT gpu_model, currency, micros_per_gpu_hour, valid_from, valid_to FROM rates"
				" ORDER BY gpu_model, valid_from",
				0, NULL, &r, &err)) {
			rc = gl_cli_fail(&err);
			goto out;
		}
		printf("%-16s %-8s %14s  %-26s %-26s\n", "model", "currency", "per GPU-hour", "from", "to");
		for (int i = 0; i < PQntuples(r); i++) {
			char money[40];
			gl_money_format(atoll(PQgetvalue(r, i, 2)), 6, money, sizeof money);
			printf("%-16s %-8s %14s  %-26s %-26s\n", PQgetvalue(r, i, 0), PQgetvalue(r, i, 1), money,
			       PQgetvalue(r, i, 3), PQgetvalue(r, i, 4));
		}
		PQclear(r);
		r = NULL;
		if (gl_db_query(c,
				"SELECT priority, coalesce(cluster, '*'), match_field, match_value, team,"
				" coalesce(project, ''), coalesce(cost_center, ''), valid_from, valid_to FROM owners"
				" ORDER BY priority, rule_id",
				0, NULL, &r, &err)) {
			rc = gl_cli_fail(&err);
			goto out;
		}
		printf("\n%-4s %-10s %-14s %-16s %-14s %-14s %-10s\n", "#", "cluster", "match", "value", "team", "project",
		       "cost centre");
		for (int i = 0; i < PQntuples(r); i++)
			printf("%-4s %-10s %-14s %-16s %-14s %-14s %-10s\n", PQgetvalue(r, i, 0), PQgetvalue(r, i, 1),
			       PQgetvalue(r, i, 2), PQgetvalue(r, i, 3), PQgetvalue(r, i, 4), PQgetvalue(r, i, 5),
			       PQgetvalue(r, i, 6));
		goto out;
	}
	return gl_cli_usage_error(usage_rates, "rates: expected 'load FILE' or 'list'");
out:
	PQclear(r);
	PQfinish(c);
	return rc;
}

static const char usage_rollup[] =
	"usage: gpuledger [--config FILE] rollup [--days N]\n"
	"Rebuilds the daily per-owner aggregates (usage_daily) of up to N stale past days (default 400),\n"
	"most recent first. The daemon does this every minute; run it after a bulk load or a cost-model change.\n";

int gl_cli_rollup(struct gl_config *cfg, int argc, char **argv)
{
	struct gl_err err = {0};
	PGconn *c = NULL;
	int built = 0, rc = 0;
	long days = 400;

	if (gl_cli_wants_help(argc, argv)) {
		fputs(usage_rollup, stdout);
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "--days")) {
		char *end;
		days = strtol(argv[2], &end, 10);
		if (*end || days < 1 || days > 100000)
			return gl_cli_usage_error(usage_rollup, "rollup: --days must be a positive integer");
	} else if (argc != 1) {
		return gl_cli_usage_error(usage_rollup, "rollup: unexpected argument '%s'", argv[1]);
	}
	if (gl_db_connect(cfg, &c, &err) || gl_acct_build_stale(c, (int64_t)time(NULL), (int)days, &built, &err))
		rc = gl_cli_fail(&err);
	else
		printf("rollup: %d days rebuilt\n", built);
	PQfinish(c);
	return rc;
}
