/* gpuledger hook idle: the idle-GPU shutdown hook for cron (docs/hook.md). */
#include "gl/cli.h"
#include "gl/cost.h"
#include "gl/hook.h"
#include "gl/log.h"
#include "gl/store.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char usage_hook[] =
	"usage: gpuledger [--config FILE] hook idle [--config FILE] [--policy NAME] [--dry-run | --act]\n"
	"                                [--format text|json]\n"
	"Finds running jobs whose GPUs idle under hook.policies, warns and acts once per\n"
	"job and stage. Dry-run is the default; acting needs --act and hook.act: true.\n"
	"exit codes: 0 nothing to do or all done, 1 error (a failed command, the circuit\n"
	"breaker), 2 usage, 3 candidates found in dry-run\n";

static const char *s(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsString(v) ? v->valuestring : "";
}

static double n(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

/* minor: the reporting currency's decimals, as every other money figure */
static void print_text(const cJSON *r, int minor)
{
	const cJSON *it;
	const char *const sections[] = {"candidates", "spared", "no_data"};
	printf("hook idle (%s) at %s\n", s(r, "mode"), s(r, "now"));
	if (*s(r, "skipped"))
		printf("skipped: %s\n", s(r, "skipped"));
	for (size_t k = 0; k < 3; k++) {
		const cJSON *arr = cJSON_GetObjectItemCaseSensitive(r, sections[k]);
		printf("%s: %d\n", sections[k], cJSON_GetArraySize(arr));
		cJSON_ArrayForEach(it, arr)
		{
			const cJSON *cost = cJSON_GetObjectItemCaseSensitive(it, "idle_cost_micros");
			printf("  %s/%s user=%s owner=%s gpus=%g idle=%.0fmin idle_gpu_h=%.2f cost=", s(it, "cluster"),
			       s(it, "job_id"), s(it, "user"), s(it, "owner"), n(it, "gpus"), n(it, "idle_minutes"),
			       n(it, "idle_gpu_seconds") / 3600.0);
			if (cJSON_IsNumber(cost)) {
				char b[48];
				gl_cost_format((int64_t)cost->valuedouble, minor, b, sizeof b);
				fputs(b, stdout);
			} else
				printf("unpriced");
			printf(" policy=%s rule=%s stage=%s", s(it, "policy"), s(it, "rule"), s(it, "stage"));
			if (k == 0)
				printf(" next=%s%s", s(it, "next_stage"),
				       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "retry")) ? " (retry)" : "");
			else
				printf(" reason=%s", s(it, "reason"));
			putchar('\n');
		}
	}
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(r, "actions"))
	{
		const cJSON *st = cJSON_GetObjectItemCaseSensitive(it, "exit_status");
		printf("ran %s %s/%s: %s -> %s", s(it, "stage"), s(it, "cluster"), s(it, "job_id"),
		       *s(it, "command") ? s(it, "command") : "(no command: recorded)",
		       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "ok")) ? "ok" : "FAILED");
		if (cJSON_IsNumber(st))
			printf(" (exit %d)", st->valueint);
		if (*s(it, "error"))
			printf(": %s", s(it, "error"));
		putchar('\n');
	}
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(r, "errors"))
		printf("error: %s\n", cJSON_IsString(it) ? it->valuestring : "");
}

int gl_cli_hook(struct gl_config *cfg, int argc, char **argv)
{
	static const struct option opts[] = {
		{"config", required_argument, 0, 'c'}, {"policy", required_argument, 0, 'p'},
		{"dry-run", no_argument, 0, 'd'},      {"act", no_argument, 0, 'a'},
		{"format", required_argument, 0, 'f'}, {"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	const char *config_path = NULL, *policy = NULL, *format = "text";
	int act = 0, dry = 0, ch, rc, exit_code = GL_HOOK_EXIT_ERROR;
	struct gl_config own;
	const struct gl_config *use = cfg;
	struct gl_err err = {0};
	struct gl_store *store = NULL;
	cJSON *report = NULL;

	if (argc < 2 || strcmp(argv[1], "idle")) {
		if (gl_cli_wants_help(argc, argv)) {
			fputs(usage_hook, stdout);
			return 0;
		}
		return gl_cli_usage_error(usage_hook, "hook: expected 'idle'");
	}
	argc--;
	argv++;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (ch) {
		case 'c': config_path = optarg; break;
		case 'p': policy = optarg; break;
		case 'd': dry = 1; break;
		case 'a': act = 1; break;
		case 'f': format = optarg; break;
		case 'h': fputs(usage_hook, stdout); return 0;
		default: return gl_cli_usage_error(usage_hook, "hook idle: bad option");
		}
	}
	if (optind < argc)
		return gl_cli_usage_error(usage_hook, "hook idle: unexpected argument '%s'", argv[optind]);
	if (act && dry)
		return gl_cli_usage_error(usage_hook, "hook idle: --act and --dry-run exclude each other");
	if (strcmp(format, "text") && strcmp(format, "json"))
		return gl_cli_usage_error(usage_hook, "hook idle: --format: text or json");
	if (config_path) {
		/* an invalid policy stops here, before anything is read or run */
		if (gl_config_load(&own, config_path, &err))
			return gl_cli_fail(&err);
		use = &own;
	}
	gl_config_warn_shell(use);
	if ((rc = gl_store_open(use, &store, &err))) {
		exit_code = gl_cli_fail(&err);
		goto out;
	}
	{
		struct gl_hook_opts o = {policy, act, 1, NULL};
		if ((rc = gl_hook_run(store, use, &o, (int64_t)time(NULL), &report, &exit_code, &err))) {
			exit_code = exit_code == GL_HOOK_EXIT_USAGE ? gl_cli_usage_error(usage_hook, "hook idle: %s", err.msg)
								     : gl_cli_fail(&err);
			goto out;
		}
	}
	if (!strcmp(format, "json")) {
		char *t = cJSON_Print(report);
		puts(t);
		free(t);
	} else {
		print_text(report, gl_cost_minor(use->currency));
	}
out:
	cJSON_Delete(report);
	gl_store_close(store);
	if (config_path)
		gl_config_fini(&own);
	return exit_code;
}
