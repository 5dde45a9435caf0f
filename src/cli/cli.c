/* Command-line helpers (see include/gl/cli.h). */
#include "gl/cli.h"
#include "gl/log.h"
#include "gl/timeutil.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gl_cli_usage_error(const char *usage, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "gpuledger: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n%s", usage);
	return GL_CLI_EXIT_USAGE;
}

int gl_cli_fail(const struct gl_err *err)
{
	gl_log(GL_LOG_ERROR, "%s", err->msg);
	return GL_CLI_EXIT_RUNTIME;
}

int gl_cli_wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return 1;
	return 0;
}

int gl_cli_parse_opts(int argc, char **argv, const char *cmd, const char *usage, const struct gl_cli_opt *opts)
{
	/* getopt_long returns val: OPT_BASE + index, clear of '?' and ASCII */
	enum { OPT_BASE = 256 };
	struct option lo[GL_CLI_MAX_OPTS + 2] = {{0}};
	size_t n = 0;
	int ch;

	if (gl_cli_wants_help(argc, argv)) {
		fputs(usage, stdout);
		return 0;
	}
	for (; opts[n].name; n++) {
		if (n == GL_CLI_MAX_OPTS) { /* a programming error: raise the limit */
			gl_log(GL_LOG_ERROR, "cli: %s: more than %d options", cmd, GL_CLI_MAX_OPTS);
			abort();
		}
		lo[n] = (struct option){opts[n].name, required_argument, 0, OPT_BASE + (int)n};
	}
	/* listed so that abbreviations resolve as they always did ("--he" is
	 * help, a bad option here since --help itself was handled above) */
	lo[n] = (struct option){"help", no_argument, 0, 'h'};
	optind = 1;
	while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		if (ch < OPT_BASE || ch >= OPT_BASE + (int)n)
			return gl_cli_usage_error(usage, "%s: bad option", cmd);
		/* an empty value is never meant (`--cluster "$UNSET"`): it made a
		 * cluster named '' in the database; as the API, leave it out instead */
		if (!*optarg)
			return gl_cli_usage_error(usage, "%s: --%s: empty value (leave the option out for its default)",
						  cmd, opts[ch - OPT_BASE].name);
		*opts[ch - OPT_BASE].value = optarg;
	}
	if (optind < argc)
		return gl_cli_usage_error(usage, "%s: unexpected argument '%s'", cmd, argv[optind]);
	return -1;
}

int gl_cli_at_not_future(const char *usage, const char *cmd, const char *what, int64_t at_s, int64_t now_s)
{
	char at[32], now[32];
	if (at_s <= now_s + GL_CLI_AT_SKEW_S)
		return -1;
	gl_timeutil_format(at_s, at, sizeof at);
	gl_timeutil_format(now_s, now, sizeof now);
	return gl_cli_usage_error(usage,
				  "%s: %s %s is in the future (now %s): a snapshot cannot be newer than the clock, and "
				  "once stored it would make every real snapshot of the cluster look old",
				  cmd, what, at, now);
}

char *gl_cli_read_file(const char *path, int dash_is_stdin, size_t *len, struct gl_err *err)
{
	FILE *f = dash_is_stdin && !strcmp(path, "-") ? stdin : fopen(path, "rb");
	char *buf = NULL;
	size_t n = 0, cap = 0;
	if (!f) {
		gl_err_set(err, GL_EIO, "%s: %s", path, strerror(errno));
		return NULL;
	}
	for (;;) {
		size_t r;
		if (cap - n < 65536) {
			cap = cap ? cap * 2 : 1 << 17;
			buf = gl_xrealloc(buf, cap + 1);
		}
		r = fread(buf + n, 1, cap - n, f);
		n += r;
		if (r == 0)
			break;
	}
	if (ferror(f)) {
		gl_err_set(err, GL_EIO, "%s: read error", path);
		free(buf);
		buf = NULL;
	} else {
		buf[n] = '\0';
		*len = n;
	}
	if (f != stdin)
		fclose(f);
	return buf;
}

int gl_cli_ingest_result(const struct gl_cli_count *counts, int skipped)
{
	putchar('{');
	for (const struct gl_cli_count *c = counts; c->name; c++)
		printf("%s\"%s\":%lld", c == counts ? "" : ",", c->name, c->n);
	puts("}");
	return skipped ? GL_CLI_EXIT_SKIPPED : 0;
}
