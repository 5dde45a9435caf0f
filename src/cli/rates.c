/* `gpuledger rates load FILE | list`: the cost model (rates, owner rules,
 * idle owners) from a YAML file with the same keys as the main config. */
#include "gl/accounting.h"
#include "gl/cli.h"
#include "gl/cost.h"
#include "gl/costing.h"
#include "gl/log.h"
#include "gl/ratebook.h"
#include "gl/rundb.h"
#include "gl/store.h"

#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char usage_rates[] =
	"usage: gpuledger [--config FILE] rates load FILE | rates list\n"
	"load: replaces the rates, owners, idle_owners and workload_types loaded from configuration with those in FILE\n"
	"      (YAML with the same keys as the main config; see docs/config.md). Validates first; nothing\n"
	"      changes on an error.\n"
	"list: prints the rates and owner rules in force.\n";

static void actor_name(char *buf, size_t n)
{
	struct passwd *pw = getpwuid(geteuid());
	snprintf(buf, n, "cli:%s", pw ? pw->pw_name : "unknown");
}

static int rates_list(struct gl_store *st)
{
	struct gl_ratebook rb;
	struct gl_err err = {0};
	if (gl_ratebook_read(st, &rb, &err)) {
		gl_ratebook_fini(&rb);
		return gl_cli_fail(&err);
	}
	printf("%-16s %-8s %14s  %-26s %-26s\n", "model", "currency", "per GPU-hour", "from", "to");
	for (size_t i = 0; i < rb.n_rates; i++) {
		const struct gl_ratebook_rate *r = &rb.rates[i];
		char money[40];
		gl_cost_format(r->micros_per_gpu_hour, 6, money, sizeof money);
		printf("%-16s %-8s %14s  %-26s %-26s\n", r->gpu_model, r->currency, money, r->valid_from, r->valid_to);
	}
	printf("\n%-4s %-10s %-14s %-16s %-14s %-14s %-10s\n", "#", "cluster", "match", "value", "team", "project",
	       "cost centre");
	for (size_t i = 0; i < rb.n_owners; i++) {
		const struct gl_ratebook_owner *o = &rb.owners[i];
		printf("%-4lld %-10s %-14s %-16s %-14s %-14s %-10s\n", (long long)o->priority, o->cluster, o->match_field,
		       o->match_value, o->team, o->project, o->cost_center);
	}
	gl_ratebook_fini(&rb);
	return 0;
}

int gl_cli_rates(struct gl_config *cfg, int argc, char **argv)
{
	struct gl_err err = {0};
	struct gl_store *st = NULL;
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
		if (gl_store_open(cfg, &st, &err) || gl_costing_load(st, &file, actor, &sum, &err))
			rc = gl_cli_fail(&err);
		else if (sum.changed)
			printf("rates: %d rates, %d owner rules, %d idle owners, %d workload type rules loaded (changed;"
			       " %d built days of the rollup made stale)\n",
			       sum.rates, sum.owners, sum.idle_owners, sum.workload_types, sum.stale_days);
		else
			printf("rates: %d rates, %d owner rules, %d idle owners, %d workload type rules loaded"
			       " (unchanged)\n",
			       sum.rates, sum.owners, sum.idle_owners, sum.workload_types);
		gl_config_fini(&file);
	} else if (argc == 2 && !strcmp(argv[1], "list")) {
		rc = gl_store_open(cfg, &st, &err) ? gl_cli_fail(&err) : rates_list(st);
	} else {
		return gl_cli_usage_error(usage_rates, "rates: expected 'load FILE' or 'list'");
	}
	gl_store_close(st);
	return rc;
}

static const char usage_rollup[] =
	"usage: gpuledger [--config FILE] rollup [--days N] [--no-runs]\n"
	"Rebuilds the daily per-owner aggregates (usage_daily) of up to N stale past days (default 400),\n"
	"most recent first, then the runs of every month whose days are all built (/v1/runs; --no-runs: not).\n"
	"The daemon does both (every minute / five minutes); run it after a bulk load or a cost-model change.\n";

int gl_cli_rollup(struct gl_config *cfg, int argc, char **argv)
{
	struct gl_err err = {0};
	struct gl_store *st = NULL;
	struct gl_runs_rule *rules = NULL;
	size_t n_rules = 0;
	int built = 0, months = 0, runs = 1, rc = 0;
	long days = 400;

	if (gl_cli_wants_help(argc, argv)) {
		fputs(usage_rollup, stdout);
		return 0;
	}
	if (argc > 1 && !strcmp(argv[argc - 1], "--no-runs")) {
		runs = 0;
		argc--;
	}
	if (argc == 3 && !strcmp(argv[1], "--days")) {
		char *end;
		days = strtol(argv[2], &end, 10);
		if (*end || days < 1 || days > 100000)
			return gl_cli_usage_error(usage_rollup, "rollup: --days must be a positive integer");
	} else if (argc != 1) {
		return gl_cli_usage_error(usage_rollup, "rollup: unexpected argument '%s'", argv[1]);
	}
	/* the days are built on two connections at once (two cores) */
	gl_config_run_rules(cfg, &rules, &n_rules);
	if (gl_store_open(cfg, &st, &err) ||
	    gl_accounting_build_stale(st, cfg, (int64_t)time(NULL), (int)days, &built, NULL, &err) ||
	    (runs && gl_rundb_build_months(st, rules, n_rules, (int64_t)time(NULL), &months, &err)))
		rc = gl_cli_fail(&err);
	else if (runs)
		printf("rollup: %d days rebuilt, %d months of runs\n", built, months);
	else
		printf("rollup: %d days rebuilt\n", built);
	free(rules);
	gl_store_close(st);
	return rc;
}
