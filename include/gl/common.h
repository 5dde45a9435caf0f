/* gpuledger — shared error conventions and tiny helpers.
 *
 * Ownership: struct gl_err is caller-owned storage (usually on the stack);
 * functions that fail fill it and return a negative GL_E* code. Nothing here
 * allocates except gl_xmalloc & co., whose results the caller frees with free().
 */
#ifndef GL_COMMON_H
#define GL_COMMON_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define GL_MUSTCHECK __attribute__((warn_unused_result))
#define GL_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define GL_NORETURN __attribute__((noreturn))
#else
#define GL_MUSTCHECK
#define GL_PRINTF(a, b)
#define GL_NORETURN
#endif

#define GL_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* The release, in /v1/health, --version and the scraper's User-Agent. */
#define GL_VERSION "0.1.0"

/* Error codes: functions return 0 or one of these, negated. */
enum {
	GL_OK = 0,
	GL_EINVAL = 1,   /* bad input (parse error, bad parameter) */
	GL_ENOMEM = 2,
	GL_EIO = 3,      /* file / process / socket failure */
	GL_EDB = 4,      /* database error */
	GL_ENOTFOUND = 5,
	GL_ECONFIG = 6,  /* configuration error */
	GL_ERANGE = 7,   /* value out of range / too large */
	GL_EAUTH = 8,    /* authentication failed */
	GL_EPERM = 9,    /* authenticated but not allowed */
	GL_EBUSY = 10,   /* lock held / rate limited */
	GL_EFORMAT = 11, /* input is not of the expected format at all */
	GL_EINTERNAL = 12, /* a fault of ours or of the data (a failed statement that retrying will not mend) */
};

/* A message with context ("sacct line 17: Elapsed: bad duration"). */
struct gl_err {
	int code;       /* the positive GL_E* code, 0 when unset */
	char msg[512];
};

/* Sets err (if non-NULL) and returns -code, so callers can write
 * `return gl_err_set(err, GL_EINVAL, "x: %s", why);`. */
int gl_err_set(struct gl_err *err, int code, const char *fmt, ...) GL_PRINTF(3, 4);
/* Prefixes an existing message with more context ("file.yaml:3: " + msg). */
int gl_err_prefix(struct gl_err *err, const char *fmt, ...) GL_PRINTF(2, 3);
const char *gl_strerror(int code); /* code may be negative or positive */

/* Allocation that aborts with a log line on out-of-memory. */
void *gl_xmalloc(size_t n);
void *gl_xcalloc(size_t nmemb, size_t size);
void *gl_xrealloc(void *p, size_t n);
char *gl_xstrdup(const char *s);
char *gl_xstrndup(const char *s, size_t n);
GL_NORETURN void gl_oom(size_t n);

/* qsort and bsearch that take an empty array given as NULL: C leaves
 * qsort(NULL, 0, ...) undefined (UBSan stops on it), and an empty list here
 * is usually a NULL pointer. Every sort and search in src/ goes through
 * these. */
void gl_qsort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));
void *gl_bsearch(const void *key, const void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));

/* FNV-1a of a C string: the hash of the small open-addressing tables keyed
 * by client address (limiters, the connection guard, tallies). */
static inline uint64_t gl_fnv1a(const char *s)
{
	uint64_t h = 1469598103934665603ULL;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

/* A non-owning slice of bytes (not NUL-terminated). */
struct gl_str {
	const char *p;
	size_t len;
};
#define GL_STR_NULL ((struct gl_str){NULL, 0})
static inline int gl_str_eq(struct gl_str s, const char *lit)
{
	size_t i = 0;
	for (; i < s.len; i++)
		if (lit[i] != s.p[i] || lit[i] == '\0')
			return 0;
	return lit[i] == '\0';
}

/* Sentinel for "no time" (NULL in the database). Times are Unix seconds, UTC. */
#define GL_TIME_NONE INT64_MIN

/* GPUs are counted in micro-GPUs (one GPU = 1,000,000): a seventh of a GPU
 * is 142,857, where milli-GPUs lost 0.6 % of it (docs/schema.md, "jobs").
 * GPU time is micro-GPU-seconds until it is rounded, once, to seconds. */
#define GL_GPU_MICRO INT64_C(1000000)

#endif
