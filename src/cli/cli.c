/* Command-line helpers (see include/gl/cli.h). */
#include "gl/cli.h"
#include "gl/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int gl_cli_usage_error(const char *usage, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "gpuledger: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n%s", usage);
	return GL_EXIT_USAGE;
}

int gl_cli_fail(const struct gl_err *err)
{
	gl_log(GL_LOG_ERROR, "%s", err->msg);
	return GL_EXIT_RUNTIME;
}

int gl_cli_wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return 1;
	return 0;
}
