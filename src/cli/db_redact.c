/* `gpuledger db redact [--dry-run]`: blanks credentials in ingest runs and
 * hook commands stored before the redaction caught them
 * (include/gl/redactdb.h). */
#include "gl/cli.h"
#include "gl/redactdb.h"
#include "gl/store.h"

#include <stdio.h>
#include <string.h>

static const char usage_db_redact[] =
	"usage: gpuledger [--config FILE] db redact [--dry-run]\n"
	"Blanks credentials (tokens, passwords, URL user:password@, ...) in the command lines, target URLs\n"
	"and error texts of stored ingest runs, and in the idle hook's stored commands and their errors,\n"
	"as new ones are stored (docs/security.md). One transaction,\n"
	"audited (db.redact); running it again changes nothing. The audit log itself is never rewritten.\n"
	"--dry-run: count what would change, write nothing.\n";

int gl_cli_db_redact(struct gl_config *cfg, int argc, char **argv)
{
	struct gl_redactdb_result res;
	struct gl_err err = {0};
	char actor[96];
	struct gl_store *st = NULL;
	int dry = 0, rc = 0;

	if (gl_cli_wants_help(argc, argv)) {
		fputs(usage_db_redact, stdout);
		return 0;
	}
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--dry-run"))
			dry = 1;
		else
			return gl_cli_usage_error(usage_db_redact, "db redact: unexpected argument '%s'", argv[i]);
	}
	gl_cli_actor(actor, sizeof actor);
	if (gl_store_open(cfg, &st, &err) || gl_redactdb_run(st, actor, dry, &res, &err)) {
		rc = gl_cli_fail(&err);
		goto out;
	}
	printf("db redact: %lld ingest runs examined, %lld %s (input %lld, error %lld, skip_reasons %lld)%s\n",
	       (long long)res.examined, (long long)res.changed, dry ? "would change" : "changed", (long long)res.input,
	       (long long)res.error, (long long)res.skip_reasons, dry ? "; nothing written" : "");
	printf("db redact: %lld hook actions examined, %lld %s (argv %lld, stderr %lld); %lld hook stage errors %s\n",
	       (long long)res.hook_examined, (long long)res.hook_changed, dry ? "would change" : "changed",
	       (long long)res.hook_argv, (long long)res.hook_stderr, (long long)res.stage_errors,
	       dry ? "would change" : "changed");
	if (res.raced)
		printf("db redact: %lld runs changed by the daemon meanwhile were left to it\n", (long long)res.raced);
out:
	gl_store_close(st);
	return rc;
}
