/* `gpuledger audit verify|head|prune|harden` (docs/security.md). */
#include "gl/audit.h"
#include "gl/cli.h"
#include "gl/log.h"
#include "gl/shard.h"
#include "gl/store.h"
#include "gl/timeutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char usage_audit[] =
	"usage: gpuledger [--config FILE] audit verify [--anchor FILE | --no-anchor]\n"
	"       gpuledger [--config FILE] audit head [--append FILE]\n"
	"       gpuledger [--config FILE] audit prune --before YYYY-MM\n"
	"       gpuledger [--config FILE] audit harden\n"
	"verify  recompute the hash chain; exit 5 naming the first broken sequence number.\n"
	"        The anchors of audit.anchor_file (or --anchor FILE: lines written by 'audit head')\n"
	"        must still match the chain; --no-anchor checks the chain alone.\n"
	"head    print the chain head (seq, hash, time); --append also appends it to FILE\n"
	"        (publish it outside the database, e.g. from cron).\n"
	"prune   drop the monthly partitions before YYYY-MM (never the current month); audited.\n"
	"harden  run once with a superuser DSN: hands audit_log to the role gpuledger_audit so the\n"
	"        service role keeps only INSERT and SELECT; on a central of shards, moves dblink into\n"
	"        schema gl_dblink, which only the owner may use (docs/security.md).\n";

static int audit_verify(struct gl_config *cfg, int argc, char **argv)
{
	struct gl_audit_anchor *anchors = NULL;
	struct gl_audit_verify v;
	struct gl_err err = {0};
	const char *anchor_file = NULL;
	char hx[2 * GL_AUDIT_HASH_LEN + 1];
	size_t na = 0;
	struct gl_store *st = NULL;
	int rc = 0;
	int no_anchor = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--anchor") && i + 1 < argc)
			anchor_file = argv[++i];
		else if (!strcmp(argv[i], "--no-anchor"))
			no_anchor = 1;
		else
			return gl_cli_usage_error(usage_audit, "audit verify: unexpected argument '%s'", argv[i]);
	}
	if (no_anchor && anchor_file)
		return gl_cli_usage_error(usage_audit, "audit verify: --anchor and --no-anchor exclude each other");
	/* the daemon's anchors by default: a plain verify from cron would
	 * otherwise pass a recomputed chain, a truncation or a deleted tail */
	if (!anchor_file && !no_anchor && cfg->audit_anchor_file[0]) {
		anchor_file = cfg->audit_anchor_file;
		if (access(anchor_file, F_OK) != 0) {
			gl_err_set(&err, GL_EIO,
				   "%s: audit.anchor_file %s: %s (the daemon writes it at start; --no-anchor verifies the"
				   " chain alone)",
				   cfg->path, anchor_file, strerror(errno));
			rc = gl_cli_fail(&err);
			goto out;
		}
	}
	if ((anchor_file && gl_audit_anchors_read(anchor_file, &anchors, &na, &err)) || gl_store_open(cfg, &st, &err) ||
	    gl_audit_verify(st, anchors, na, &v, &err)) {
		rc = gl_cli_fail(&err);
		goto out;
	}
	if (!v.ok) {
		printf("audit verify: BROKEN at seq %lld: %s (%lld rows verified before it)\n", (long long)v.bad_seq,
		       v.reason, (long long)v.rows);
		rc = GL_CLI_EXIT_BROKEN;
		goto out;
	}
	gl_audit_hex(v.head, hx);
	if (v.rows)
		printf("audit verify: ok: %lld rows, seq %lld..%lld, head %s, %lld anchors checked%s%s\n", (long long)v.rows,
		       (long long)v.first_seq, (long long)v.last_seq, hx, (long long)v.anchors_checked,
		       anchor_file ? " from " : " (no anchor file)", anchor_file ? anchor_file : "");
	else
		printf("audit verify: ok: empty log%s%s\n", anchor_file ? ", anchors from " : "", anchor_file ? anchor_file : "");
out:
	free(anchors);
	gl_store_close(st);
	return rc;
}

static int audit_head(struct gl_config *cfg, int argc, char **argv)
{
	struct gl_err err = {0};
	const char *append = NULL;
	char line[256];
	struct gl_store *st = NULL;
	int rc = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--append") && i + 1 < argc)
			append = argv[++i];
		else
			return gl_cli_usage_error(usage_audit, "audit head: unexpected argument '%s'", argv[i]);
	}
	if (gl_store_open(cfg, &st, &err) ||
	    (append ? gl_audit_anchor_append(st, append, (int64_t)time(NULL), line, sizeof line, &err)
		    : gl_audit_anchor_line(st, (int64_t)time(NULL), line, sizeof line, &err))) {
		rc = gl_cli_fail(&err);
		goto out;
	}
	fputs(line, stdout);
out:
	gl_store_close(st);
	return rc;
}

static int audit_prune(struct gl_config *cfg, int argc, char **argv)
{
	struct gl_audit_prune_result res;
	struct gl_err err = {0};
	char actor[96], day[16];
	int64_t before;
	struct gl_store *st = NULL;
	int rc = 0;
	if (argc != 3 || strcmp(argv[1], "--before") != 0)
		return gl_cli_usage_error(usage_audit, "audit prune: expected --before YYYY-MM");
	if (strlen(argv[2]) != 7 || argv[2][4] != '-')
		return gl_cli_usage_error(usage_audit, "audit prune: --before: expected YYYY-MM, got '%s'", argv[2]);
	snprintf(day, sizeof day, "%s-01", argv[2]);
	if (gl_timeutil_parse(day, strlen(day), &before))
		return gl_cli_usage_error(usage_audit, "audit prune: --before: expected YYYY-MM, got '%s'", argv[2]);
	gl_cli_actor(actor, sizeof actor);
	if (gl_store_open(cfg, &st, &err) || gl_audit_prune(st, actor, before, &res, &err)) {
		rc = gl_cli_fail(&err);
		goto out;
	}
	printf("audit prune: dropped %d partitions (%lld rows) before %s; recorded as seq %lld\n", res.partitions,
	       (long long)res.rows, argv[2], (long long)res.audit_seq);
	if (res.kept)
		printf("audit prune: kept %d older partitions: they hold sequence numbers above rows that stay (a writer's"
		       " clock ran behind); dropping them would break the chain (see the audit.prune row's \"kept\")\n",
		       res.kept);
out:
	gl_store_close(st);
	return rc;
}

static int audit_harden(struct gl_config *cfg, int argc, char **argv)
{
	struct gl_err err = {0};
	struct gl_store *st = NULL;
	int rc = 0, moved = 0;
	if (argc != 1)
		return gl_cli_usage_error(usage_audit, "audit harden: unexpected argument '%s'", argv[1]);
	if (gl_store_open(cfg, &st, &err) || gl_audit_harden(st, &err) || gl_shard_dblink_private(st, &moved, &err)) {
		gl_err_prefix(&err, "audit harden (needs a superuser DSN): ");
		rc = gl_cli_fail(&err);
		goto out;
	}
	printf("audit harden: audit_log now belongs to gpuledger_audit; the service role may only SELECT and INSERT\n");
	if (moved)
		printf("audit harden: dblink moved into schema gl_dblink, which only the schema's owner may use\n");
out:
	gl_store_close(st);
	return rc;
}

int gl_cli_audit(struct gl_config *cfg, int argc, char **argv)
{
	if (argc < 2) {
		fputs(usage_audit, stderr);
		return GL_CLI_EXIT_USAGE;
	}
	if (gl_cli_wants_help(argc, argv)) {
		fputs(usage_audit, stdout);
		return 0;
	}
	if (!strcmp(argv[1], "verify"))
		return audit_verify(cfg, argc - 1, argv + 1);
	if (!strcmp(argv[1], "head"))
		return audit_head(cfg, argc - 1, argv + 1);
	if (!strcmp(argv[1], "prune"))
		return audit_prune(cfg, argc - 1, argv + 1);
	if (!strcmp(argv[1], "harden"))
		return audit_harden(cfg, argc - 1, argv + 1);
	return gl_cli_usage_error(usage_audit, "audit: unknown action '%s'", argv[1]);
}
