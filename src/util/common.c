/* Error helpers and aborting allocators (see include/gl/common.h). */
#include "gl/common.h"
#include "gl/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gl_err_set(struct gl_err *err, int code, const char *fmt, ...)
{
	if (code < 0)
		code = -code;
	if (err) {
		va_list ap;
		err->code = code;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof err->msg, fmt, ap);
		va_end(ap);
	}
	return -code;
}

int gl_err_prefix(struct gl_err *err, const char *fmt, ...)
{
	char pre[256], old[sizeof err->msg];
	va_list ap;

	if (!err)
		return -GL_EINVAL;
	va_start(ap, fmt);
	vsnprintf(pre, sizeof pre, fmt, ap);
	va_end(ap);
	memcpy(old, err->msg, sizeof old);
	old[sizeof old - 1] = '\0';
	{
		size_t a = strlen(pre), b = strlen(old);
		if (a > sizeof err->msg - 1)
			a = sizeof err->msg - 1;
		if (b > sizeof err->msg - 1 - a)
			b = sizeof err->msg - 1 - a;
		memcpy(err->msg, pre, a);
		memcpy(err->msg + a, old, b);
		err->msg[a + b] = '\0';
	}
	return -(err->code ? err->code : GL_EINVAL);
}

const char *gl_strerror(int code)
{
	static const char *const names[] = {
		[GL_OK] = "ok", [GL_EINVAL] = "invalid input", [GL_ENOMEM] = "out of memory",
		[GL_EIO] = "i/o error", [GL_EDB] = "database error", [GL_ENOTFOUND] = "not found",
		[GL_ECONFIG] = "configuration error", [GL_ERANGE] = "out of range",
		[GL_EAUTH] = "unauthenticated", [GL_EPERM] = "forbidden", [GL_EBUSY] = "busy",
		[GL_EFORMAT] = "unrecognised format", [GL_EINTERNAL] = "internal error",
	};
	if (code < 0)
		code = -code;
	if ((size_t)code >= GL_ARRAY_LEN(names) || !names[code])
		return "unknown error";
	return names[code];
}

void gl_oom(size_t n)
{
	gl_log(GL_LOG_ERROR, "out of memory allocating %zu bytes", n);
	abort();
}

void *gl_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		gl_oom(n);
	return p;
}

void *gl_xcalloc(size_t nmemb, size_t size)
{
	void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);
	if (!p)
		gl_oom(nmemb * size);
	return p;
}

void *gl_xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		gl_oom(n);
	return q;
}

char *gl_xstrdup(const char *s)
{
	return gl_xstrndup(s, strlen(s));
}

char *gl_xstrndup(const char *s, size_t n)
{
	char *p = gl_xmalloc(n + 1);
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

void gl_qsort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(base, n, size, cmp);
}

void *gl_bsearch(const void *key, const void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	return n ? bsearch(key, base, n, size, cmp) : NULL;
}
