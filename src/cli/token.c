/* `gpuledger token create|list|revoke` (docs/security.md).
 * The token is printed once, alone on stdout; only its SHA-256 is stored. */
#include "gl/auth.h"
#include "gl/cli.h"
#include "gl/store.h"
#include "gl/timeutil.h"
#include "gl/tokens.h"

#include <getopt.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char usage_token[] =
	"usage: gpuledger [--config FILE] token create --name N --role R [--expires D] [--scope DIM=VALUE]...\n"
	"       gpuledger [--config FILE] token list\n"
	"       gpuledger [--config FILE] token revoke ID|NAME\n"
	"Roles: viewer, finance, admin, hook. --expires takes a duration (90d, 12h, 30m)\n"
	"or a time (2027-01-01, RFC 3339). --scope DIM=VALUE (repeatable; DIM: team, project,\n"
	"cost_center, account, namespace, user; owner= means team=) limits the token to the\n"
	"rows whose DIM is one of its values, for every DIM given (team=a --scope team=b\n"
	"--scope project=x: team a or b, and project x). create prints the token once on\n"
	"stdout; store it then.\n";

/* "team=vision,team=nlp" (or "*" unscoped) into out. */
static void scope_text(const struct gl_tokens_scope *sc, size_t n, char *out, size_t len)
{
	size_t o = 0;
	snprintf(out, len, "%s", n ? "" : "*");
	for (size_t i = 0; i < n && o < len; i++)
		o += (size_t)snprintf(out + o, len - o, "%s%s=%s", i ? "," : "", sc[i].dim, sc[i].value);
}

void gl_cli_actor(char *buf, size_t n)
{
	const struct passwd *pw = getpwuid(geteuid());
	snprintf(buf, n, "cli:%s", pw && pw->pw_name ? pw->pw_name : "unknown");
}

/* "90d" / "12h" / "30m" / "45s" from now, or an absolute time. */
static int parse_expires(const char *s, int64_t now_s, int64_t *out)
{
	char *end;
	long long v = strtoll(s, &end, 10);
	if (end != s && v > 0 && end[0] && !end[1] && strchr("smhd", end[0])) {
		long long mult = end[0] == 's' ? 1 : end[0] == 'm' ? 60 : end[0] == 'h' ? 3600 : 86400;
		if (v > 100LL * 365 * 86400 / mult)
			return -GL_EINVAL;
		*out = now_s + v * mult;
		return 0;
	}
	return gl_timeutil_parse(s, strlen(s), out) ? -GL_EINVAL : 0;
}

static int token_create(struct gl_config *cfg, int argc, char **argv)
{
	static const struct option opts[] = {
		{"name", required_argument, 0, 'n'}, {"role", required_argument, 0, 'r'},
		{"expires", required_argument, 0, 'e'}, {"scope", required_argument, 0, 's'},
		{0, 0, 0, 0},
	};
	const char *name = NULL, *role = NULL;
	struct gl_tokens_scope scope[GL_TOKENS_MAX_OWNERS];
	char shown[GL_TOKENS_MAX_OWNERS * (16 + GL_TOKENS_OWNER_MAX)];
	size_t n_scope = 0;
	int64_t expires = GL_TIME_NONE, id = 0, now = (int64_t)time(NULL);
	char token[GL_TOKENS_LEN + 1], actor[96], when[32];
	struct gl_err err = {0};
	struct gl_store *st = NULL;
	int ch, rc = 0;

	optind = 1;
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 'n': name = optarg; break;
		case 'r': role = optarg; break;
		case 'e':
			if (parse_expires(optarg, now, &expires))
				return gl_cli_usage_error(usage_token, "token create: --expires: bad duration or time '%s'", optarg);
			break;
		case 's':
			if (n_scope == GL_TOKENS_MAX_OWNERS)
				return gl_cli_usage_error(usage_token, "token create: at most %d --scope options", GL_TOKENS_MAX_OWNERS);
			if (gl_tokens_scope_arg(optarg, &scope[n_scope], &err))
				return gl_cli_usage_error(usage_token, "token create: %s", err.msg);
			n_scope++;
			break;
		default: return gl_cli_usage_error(usage_token, "token create: bad option");
		}
	}
	if (optind < argc)
		return gl_cli_usage_error(usage_token, "token create: unexpected argument '%s'", argv[optind]);
	if (!name || !*name || strlen(name) >= GL_TOKENS_NAME_MAX)
		return gl_cli_usage_error(usage_token, "token create: --name is required (< %d bytes)", GL_TOKENS_NAME_MAX);
	if (!gl_auth_role_valid(role))
		return gl_cli_usage_error(usage_token, "token create: --role must be viewer, finance, admin or hook");
	if (expires != GL_TIME_NONE && expires <= now)
		fprintf(stderr, "gpuledger: warning: --expires is in the past; the token will be refused\n");
	gl_cli_actor(actor, sizeof actor);
	if (gl_store_open(cfg, &st, &err) ||
	    gl_tokens_create(st, name, role, expires, scope, n_scope, actor, token, &id, &err)) {
		rc = gl_cli_fail(&err);
		goto out;
	}
	/* the token alone on stdout (TOKEN=$(gpuledger token create ...)); the rest on stderr */
	printf("%s\n", token);
	fflush(stdout);
	memset(token, 0, sizeof token);
	if (expires != GL_TIME_NONE)
		gl_timeutil_format(expires, when, sizeof when);
	scope_text(scope, n_scope, shown, sizeof shown);
	fprintf(stderr, "token %lld '%s' created: role %s, expires %s, scope %s\n"
		"It is shown only now; gpuledger keeps only its SHA-256.\n",
		(long long)id, name, role, expires == GL_TIME_NONE ? "never" : when, shown);
out:
	gl_store_close(st);
	return rc;
}

static void put_time(int64_t t, char *buf, size_t n)
{
	if (t == GL_TIME_NONE)
		snprintf(buf, n, "-");
	else
		gl_timeutil_format(t, buf, n);
}

static int token_list(struct gl_config *cfg, int argc, char **argv)
{
	struct gl_tokens_info *t = NULL;
	struct gl_err err = {0};
	size_t n = 0;
	struct gl_store *st = NULL;
	int rc = 0;
	if (argc > 1)
		return gl_cli_usage_error(usage_token, "token list: unexpected argument '%s'", argv[1]);
	if (gl_store_open(cfg, &st, &err) || gl_tokens_list(st, &t, &n, &err)) {
		rc = gl_cli_fail(&err);
		goto out;
	}
	printf("%-6s %-24s %-8s %-22s %-22s %-22s %-22s %s\n", "ID", "NAME", "ROLE", "CREATED", "EXPIRES", "REVOKED",
	       "LAST USED", "OWNERS");
	for (size_t i = 0; i < n; i++) {
		char cr[32], ex[32], rv[32], lu[32], sc[GL_TOKENS_MAX_OWNERS * (16 + GL_TOKENS_OWNER_MAX)];
		put_time(t[i].created_s, cr, sizeof cr);
		put_time(t[i].expires_s, ex, sizeof ex);
		put_time(t[i].revoked_s, rv, sizeof rv);
		put_time(t[i].last_used_s, lu, sizeof lu);
		scope_text(t[i].scope, t[i].n_scope, sc, sizeof sc);
		printf("%-6lld %-24s %-8s %-22s %-22s %-22s %-22s %s\n", (long long)t[i].id, t[i].name, t[i].role, cr, ex,
		       rv, lu, sc);
	}
out:
	free(t);
	gl_store_close(st);
	return rc;
}

static int token_revoke(struct gl_config *cfg, int argc, char **argv)
{
	struct gl_err err = {0};
	char actor[96];
	int64_t id = 0;
	struct gl_store *st = NULL;
	int rc = 0;
	if (argc != 2)
		return gl_cli_usage_error(usage_token, "token revoke: expected one ID or NAME");
	gl_cli_actor(actor, sizeof actor);
	if (gl_store_open(cfg, &st, &err) || gl_tokens_revoke(st, argv[1], actor, &id, &err)) {
		rc = gl_cli_fail(&err);
		goto out;
	}
	printf("token %lld revoked (a running server refuses it within 5 s)\n", (long long)id);
out:
	gl_store_close(st);
	return rc;
}

int gl_cli_token(struct gl_config *cfg, int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		fputs(usage_token, argc < 2 ? stderr : stdout);
		return argc < 2 ? GL_CLI_EXIT_USAGE : 0;
	}
	if (gl_cli_wants_help(argc, argv)) {
		fputs(usage_token, stdout);
		return 0;
	}
	if (!strcmp(argv[1], "create"))
		return token_create(cfg, argc - 1, argv + 1);
	if (!strcmp(argv[1], "list"))
		return token_list(cfg, argc - 1, argv + 1);
	if (!strcmp(argv[1], "revoke"))
		return token_revoke(cfg, argc - 1, argv + 1);
	return gl_cli_usage_error(usage_token, "token: unknown action '%s'", argv[1]);
}
