/* Slurm `sacct --parsable[2]` line parser (see include/gl/sacct.h).
 *
 * Pure and allocation-free: a line is first cut into column slices (memchr on
 * the delimiter's first byte), then each known column is converted through a
 * table indexed by enum gl_sacct_field. Values that need another column
 * (ReqMem needs NCPUS/NNodes, Elapsed loses to ElapsedRaw) are finished after
 * the walk so the column order of the layout never matters.
 */
#include "gl/sacct.h"
#include "gl/bounds.h"
#include "gl/timeutil.h"
#include "gl/utf8.h"

#include <stddef.h>
#include <string.h>
#include <strings.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* How a column is converted. Plain slices and numbers go through generic
 * converters at a struct offset; the rest have their own code. */
enum conv {
	CV_STR,      /* slice only */
	CV_INT,      /* slice-less integer, empty = -1 */
	CV_TIME,     /* Unix seconds */
	CV_DUR,      /* duration seconds, empty/UNLIMITED = -1 */
	CV_JOBID,
	CV_JOBIDRAW,
	CV_STATE,
	CV_ELAPSED,  /* deferred: only when ElapsedRaw is absent or empty */
	CV_ELAPSEDRAW,
	CV_REQMEM,   /* deferred: needs NCPUS / NNodes */
	CV_ALLOCTRES,
	CV_REQTRES,
};

struct fdesc {
	const char *name; /* as sacct spells it, for --fields lookup and messages */
	unsigned char conv;
	unsigned short off; /* struct gl_str for CV_STR and slice-carrying kinds, int64_t otherwise */
	unsigned char bound; /* B(enum gl_bounds) of a column kept as text; 0 for the others */
};
#define B(k) ((unsigned char)((k) + 1))

#define SOFF(m) ((unsigned short)offsetof(struct gl_sacct_rec, m))

static const struct fdesc fdesc[GL_SACCT_F__COUNT] = {
	[GL_SACCT_F_JOBID] = {"JobID", CV_JOBID, SOFF(job_id), B(GL_BOUNDS_JOB_ID)},
	[GL_SACCT_F_JOBIDRAW] = {"JobIDRaw", CV_JOBIDRAW, SOFF(job_id_raw), B(GL_BOUNDS_JOB_ID)},
	[GL_SACCT_F_CLUSTER] = {"Cluster", CV_STR, SOFF(cluster), B(GL_BOUNDS_CLUSTER)},
	[GL_SACCT_F_PARTITION] = {"Partition", CV_STR, SOFF(partition), B(GL_BOUNDS_ACCOUNT)},
	[GL_SACCT_F_QOS] = {"QOS", CV_STR, SOFF(qos), B(GL_BOUNDS_ACCOUNT)},
	[GL_SACCT_F_ACCOUNT] = {"Account", CV_STR, SOFF(account), B(GL_BOUNDS_ACCOUNT)},
	[GL_SACCT_F_GROUP] = {"Group", CV_STR, SOFF(group), B(GL_BOUNDS_USER)},
	[GL_SACCT_F_GID] = {"GID", CV_INT, SOFF(gid)},
	[GL_SACCT_F_USER] = {"User", CV_STR, SOFF(user), B(GL_BOUNDS_USER)},
	[GL_SACCT_F_UID] = {"UID", CV_INT, SOFF(uid)},
	[GL_SACCT_F_SUBMIT] = {"Submit", CV_TIME, SOFF(submit_s)},
	[GL_SACCT_F_ELIGIBLE] = {"Eligible", CV_TIME, SOFF(eligible_s)},
	[GL_SACCT_F_START] = {"Start", CV_TIME, SOFF(start_s)},
	[GL_SACCT_F_END] = {"End", CV_TIME, SOFF(end_s)},
	[GL_SACCT_F_ELAPSED] = {"Elapsed", CV_ELAPSED, 0},
	[GL_SACCT_F_ELAPSEDRAW] = {"ElapsedRaw", CV_ELAPSEDRAW, 0},
	[GL_SACCT_F_EXITCODE] = {"ExitCode", CV_STR, SOFF(exit_code), B(GL_BOUNDS_TEXT)},
	[GL_SACCT_F_STATE] = {"State", CV_STATE, SOFF(state_raw), B(GL_BOUNDS_TEXT)},
	[GL_SACCT_F_NNODES] = {"NNodes", CV_INT, SOFF(nnodes)},
	[GL_SACCT_F_NCPUS] = {"NCPUS", CV_INT, SOFF(ncpus)},
	[GL_SACCT_F_REQCPUS] = {"ReqCPUS", CV_INT, SOFF(req_cpus)},
	[GL_SACCT_F_REQMEM] = {"ReqMem", CV_REQMEM, SOFF(req_mem), B(GL_BOUNDS_TEXT)},
	[GL_SACCT_F_REQTRES] = {"ReqTRES", CV_REQTRES, SOFF(req_tres), B(GL_BOUNDS_TEXT)},
	[GL_SACCT_F_ALLOCTRES] = {"AllocTRES", CV_ALLOCTRES, SOFF(alloc_tres), B(GL_BOUNDS_TEXT)},
	[GL_SACCT_F_TIMELIMIT] = {"Timelimit", CV_DUR, SOFF(timelimit_s)},
	[GL_SACCT_F_NODELIST] = {"NodeList", CV_STR, SOFF(node_list), B(GL_BOUNDS_NODE_LIST)},
	[GL_SACCT_F_DBINDEX] = {"DBIndex", CV_INT, SOFF(db_index)},
	[GL_SACCT_F_SUSPENDED] = {"Suspended", CV_DUR, SOFF(suspended_s)},
	[GL_SACCT_F_WCKEY] = {"WCKey", CV_STR, SOFF(wckey), B(GL_BOUNDS_ACCOUNT)},
	[GL_SACCT_F_JOBNAME] = {"JobName", CV_STR, SOFF(job_name), B(GL_BOUNDS_JOB_NAME)},
	/* sbatch --comment (kept when AccountingStoreFlags has job_comment):
	 * a run's key when runs[].by is comment or tag (docs/runs.md) */
	[GL_SACCT_F_COMMENT] = {"Comment", CV_STR, SOFF(comment), B(GL_BOUNDS_JOB_NAME)},
};

static const struct {
	const char *name;
	unsigned char len;
} state_names[GL_SACCT_JS__COUNT] = {
#define S(e, s) [e] = {s, sizeof(s) - 1}
	S(GL_SACCT_JS_UNKNOWN, "UNKNOWN"), S(GL_SACCT_JS_PENDING, "PENDING"), S(GL_SACCT_JS_RUNNING, "RUNNING"),
	S(GL_SACCT_JS_SUSPENDED, "SUSPENDED"), S(GL_SACCT_JS_COMPLETED, "COMPLETED"),
	S(GL_SACCT_JS_CANCELLED, "CANCELLED"), S(GL_SACCT_JS_FAILED, "FAILED"), S(GL_SACCT_JS_TIMEOUT, "TIMEOUT"),
	S(GL_SACCT_JS_NODE_FAIL, "NODE_FAIL"), S(GL_SACCT_JS_PREEMPTED, "PREEMPTED"),
	S(GL_SACCT_JS_BOOT_FAIL, "BOOT_FAIL"), S(GL_SACCT_JS_DEADLINE, "DEADLINE"),
	S(GL_SACCT_JS_OUT_OF_MEMORY, "OUT_OF_MEMORY"), S(GL_SACCT_JS_REQUEUED, "REQUEUED"),
	S(GL_SACCT_JS_REQUEUE_HOLD, "REQUEUE_HOLD"), S(GL_SACCT_JS_REQUEUE_FED, "REQUEUE_FED"),
	S(GL_SACCT_JS_RESIZING, "RESIZING"), S(GL_SACCT_JS_REVOKED, "REVOKED"),
	S(GL_SACCT_JS_SPECIAL_EXIT, "SPECIAL_EXIT"),
#undef S
};

const char *gl_sacct_job_state_name(enum gl_sacct_job_state s)
{
	if ((unsigned)s >= GL_SACCT_JS__COUNT)
		return "UNKNOWN";
	return state_names[s].name;
}

/* ---- layout ---------------------------------------------------------- */

static int lookup_field(const char *p, size_t n)
{
	for (int f = 0; f < GL_SACCT_F__COUNT; f++)
		if (strlen(fdesc[f].name) == n && strncasecmp(fdesc[f].name, p, n) == 0)
			return f;
	return GL_SACCT_F_IGNORED;
}

int gl_sacct_layout_init(struct gl_sacct_layout *lay, const char *fields, const char *delim,
			 struct gl_err *err)
{
	const char *p;

	memset(lay, 0, sizeof *lay);
	for (int f = 0; f < GL_SACCT_F__COUNT; f++)
		lay->pos[f] = -1;
	lay->jobname_col = -1;

	if (!delim || !*delim)
		delim = "|";
	lay->delim_len = strlen(delim);
	if (lay->delim_len >= sizeof lay->delim)
		return gl_err_set(err, GL_EINVAL, "delimiter: longer than %zu bytes",
				  sizeof lay->delim - 1);
	if (strpbrk(delim, "\r\n"))
		return gl_err_set(err, GL_EINVAL, "delimiter: may not contain a line break");
	memcpy(lay->delim, delim, lay->delim_len + 1);

	p = fields ? fields : GL_SACCT_DEFAULT_FIELDS;
	for (;;) {
		const char *comma = strchr(p, ',');
		size_t n = comma ? (size_t)(comma - p) : strlen(p);
		const char *name = p, *pct;
		int f;

		while (n && (*name == ' ' || *name == '\t'))
			name++, n--;
		while (n && (name[n - 1] == ' ' || name[n - 1] == '\t'))
			n--;
		/* "JobName%40" sets a print width; it changes nothing in parsable output */
		pct = memchr(name, '%', n);
		if (pct)
			n = (size_t)(pct - name);
		if (n == 0)
			return gl_err_set(err, GL_EINVAL, "fields: empty field name at position %d",
					  lay->ncols + 1);
		if (lay->ncols == GL_SACCT_MAX_COLS)
			return gl_err_set(err, GL_EINVAL, "fields: more than %d fields",
					  GL_SACCT_MAX_COLS);
		f = lookup_field(name, n);
		if (f != GL_SACCT_F_IGNORED) {
			if (lay->pos[f] >= 0)
				return gl_err_set(err, GL_EINVAL, "fields: duplicate field '%.*s'",
						  (int)n, name);
			lay->pos[f] = lay->ncols;
		}
		lay->col[lay->ncols++] = f;
		if (!comma)
			break;
		p = comma + 1;
	}
	/* jobs.job_id is NOT NULL: without JobID every line would fail the batch */
	if (lay->pos[GL_SACCT_F_JOBID] < 0)
		return gl_err_set(err, GL_EINVAL, "fields: JobID missing (every job row needs it)");
	lay->jobname_col = lay->pos[GL_SACCT_F_JOBNAME];
	for (int i = 0; i < lay->ncols; i++) {
		int f = lay->col[i];
		lay->col_max[i] = f >= 0 && fdesc[f].bound ? gl_bounds_max((enum gl_bounds)(fdesc[f].bound - 1))
							   : SIZE_MAX;
	}
	return 0;
}

void gl_sacct_layout_fini(struct gl_sacct_layout *lay)
{
	/* Nothing is allocated today; kept so callers need not change if that does. */
	(void)lay;
}

/* ---- scalar helpers ------------------------------------------------- */

static inline int is_digit(char c)
{
	return (unsigned char)(c - '0') < 10;
}

/* Non-negative decimal integer, the whole slice; no sign, no spaces. */
static int parse_u63(const char *s, size_t n, int64_t *out)
{
	int64_t v = 0;

	if (n == 0 || n > 18) /* 18 digits can never overflow int64 */
		return -GL_EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (!is_digit(s[i]))
			return -GL_EINVAL;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return 0;
}

static inline int eq_lit(const char *s, size_t n, const char *lit, size_t litn)
{
	return n == litn && memcmp(s, lit, n) == 0;
}

static int days_in_month(int y, int m)
{
	static const unsigned char dim[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
		return 29;
	return dim[m - 1];
}

int gl_sacct_parse_time(const char *s, size_t n, int64_t *out)
{
	const unsigned char *u = (const unsigned char *)s;
	int y, mo, dd, h, mi, se;

	if (n != 19) {
		if (n == 0 || eq_lit(s, n, "Unknown", 7) || eq_lit(s, n, "None", 4)) {
			*out = GL_TIME_NONE;
			return 0;
		}
		return -GL_EINVAL;
	}
	if (s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':')
		return -GL_EINVAL;
	/* four columns per line go through here: unrolled, one branch for all digits */
#define DG(i) ((unsigned)u[i] - '0')
	{
		const unsigned d0 = DG(0), d1 = DG(1), d2 = DG(2), d3 = DG(3), d5 = DG(5),
			       d6 = DG(6), d8 = DG(8), d9 = DG(9), d11 = DG(11), d12 = DG(12),
			       d14 = DG(14), d15 = DG(15), d17 = DG(17), d18 = DG(18);
		if ((d0 > 9) | (d1 > 9) | (d2 > 9) | (d3 > 9) | (d5 > 9) | (d6 > 9) | (d8 > 9) |
		    (d9 > 9) | (d11 > 9) | (d12 > 9) | (d14 > 9) | (d15 > 9) | (d17 > 9) | (d18 > 9))
			return -GL_EINVAL;
		y = (int)(d0 * 1000 + d1 * 100 + d2 * 10 + d3);
		mo = (int)(d5 * 10 + d6);
		dd = (int)(d8 * 10 + d9);
		h = (int)(d11 * 10 + d12);
		mi = (int)(d14 * 10 + d15);
		se = (int)(d17 * 10 + d18);
	}
#undef DG
	/* year 0000 is not a year PostgreSQL takes in ISO form (it has no year 0) */
	if (y < 1 || mo < 1 || mo > 12 || dd < 1 || dd > days_in_month(y, mo) || h > 23 || mi > 59 || se > 59)
		return -GL_EINVAL;
	*out = gl_timeutil_days_from_civil(y, (unsigned)mo, (unsigned)dd) * 86400 + h * 3600 + mi * 60 + se;
	return 0;
}

int gl_sacct_parse_duration(const char *s, size_t n, int64_t *out)
{
	int64_t days = 0, g[3] = {0, 0, 0};
	int ng = 0, have_days = 0;
	size_t i = 0;

	if (n == 0 || (n == 9 && strncasecmp(s, "UNLIMITED", 9) == 0) ||
	    (n == 15 && strncasecmp(s, "Partition_limit", 15) == 0) ||
	    (n == 7 && strncasecmp(s, "INVALID", 7) == 0)) {
		*out = -1;
		return 0;
	}
	for (;;) {
		size_t start = i;
		int64_t v = 0;

		while (i < n && is_digit(s[i]) && i - start < 9)
			v = v * 10 + (s[i++] - '0');
		if (i == start || (i < n && is_digit(s[i])))
			return -GL_EINVAL; /* empty group or absurdly long */
		if (i < n && s[i] == '-' && ng == 0 && !have_days) {
			days = v;
			have_days = 1;
			i++;
			continue;
		}
		if (ng == 3)
			return -GL_EINVAL;
		g[ng++] = v;
		if (i == n)
			break;
		if (s[i] == ':') {
			i++;
			continue;
		}
		if (s[i] == '.') {
			/* "MM:SS.mmm": the fraction is truncated, but must be digits */
			if (++i == n)
				return -GL_EINVAL;
			for (; i < n; i++)
				if (!is_digit(s[i]))
					return -GL_EINVAL;
			break;
		}
		return -GL_EINVAL;
	}
	if (ng < 2 || (have_days && ng != 3))
		return -GL_EINVAL;
	if (ng == 3) {
		if (g[1] > 59 || g[2] > 59 || (have_days && g[0] > 23))
			return -GL_EINVAL;
		*out = days * 86400 + g[0] * 3600 + g[1] * 60 + g[2];
	} else {
		if (g[1] > 59)
			return -GL_EINVAL;
		*out = g[0] * 60 + g[1];
	}
	return 0;
}

int gl_sacct_parse_tres_gpus(const char *s, size_t n, int64_t *gpus, char type[GL_SACCT_GPU_TYPE_MAX])
{
	const char *p = s, *end = s + n, *tname = NULL;
	size_t tlen = 0;
	int64_t untyped = -1, typed_sum = 0;
	int types = 0;

	*gpus = 0;
	type[0] = '\0';
	while (p < end) {
		const char *e = memchr(p, ',', (size_t)(end - p));
		const char *eq;
		size_t nlen;
		int64_t v;

		if (!e)
			e = end;
		eq = memchr(p, '=', (size_t)(e - p));
		if (!eq || eq == p)
			return -GL_EINVAL;
		nlen = (size_t)(eq - p);
		/* Exact names only: gres/gpumem and gres/gpuutil are usage, not counts. */
		if (nlen >= 8 && memcmp(p, "gres/gpu", 8) == 0 && (nlen == 8 || p[8] == ':')) {
			if (parse_u63(eq + 1, (size_t)(e - eq - 1), &v) < 0)
				return -GL_EINVAL;
			if (nlen == 8) {
				untyped = v;
			} else {
				if (nlen == 9)
					return -GL_EINVAL; /* "gres/gpu:=1" */
				if (__builtin_add_overflow(typed_sum, v, &typed_sum))
					return -GL_EINVAL;
				if (types == 0) {
					tname = p + 9;
					tlen = nlen - 9;
					types = 1;
				} else if (nlen - 9 != tlen || memcmp(p + 9, tname, tlen) != 0) {
					types = 2;
				}
			}
		}
		if (e == end)
			break;
		p = e + 1;
		if (p == end)
			return -GL_EINVAL; /* trailing comma */
	}
	/* Entries are string-sorted, so gres/gpu:a100=2 precedes gres/gpu=2: the
	 * untyped total already includes the typed ones and must not be added. */
	*gpus = untyped >= 0 ? untyped : typed_sum;
	/* milli-GPUs times seconds must stay far inside int64 in every rollup */
	if (*gpus > GL_SACCT_MAX_JOB_GPUS) {
		*gpus = 0;
		type[0] = '\0';
		return -GL_ERANGE;
	}
	if (types == 1) {
		if (tlen > GL_SACCT_GPU_TYPE_MAX - 1) {
			*gpus = 0;
			return -GL_EFORMAT; /* cut, it would be another model */
		}
		memcpy(type, tname, tlen);
		type[tlen] = '\0';
	}
	return 0;
}

/* ReqMem -> MiB for the whole job. Old Slurm (< 21.08) suffixes c (per CPU)
 * and n (per node); newer prints a job total without suffix. */
static int parse_reqmem(const char *s, size_t n, int64_t cpus, int64_t nnodes, int64_t *out)
{
	int64_t whole = 0, milli = 0, mult_num = 1, mult_den = 1, mb;
	size_t i = 0, start;
	char scope = 0;

	*out = -1;
	if (n == 0)
		return 0;
	start = i;
	while (i < n && is_digit(s[i]) && i - start < 18)
		whole = whole * 10 + (s[i++] - '0');
	if (i == start || (i < n && is_digit(s[i])))
		return -GL_EINVAL;
	if (i < n && s[i] == '.') {
		int fd = 0;
		start = ++i;
		while (i < n && is_digit(s[i])) {
			if (fd < 3) {
				milli = milli * 10 + (s[i] - '0');
				fd++;
			}
			i++;
		}
		if (i == start)
			return -GL_EINVAL;
		while (fd++ < 3)
			milli *= 10;
	}
	if (i < n) {
		switch (s[i]) {
		case 'K': mult_den = 1024; i++; break;
		case 'M': i++; break;
		case 'G': mult_num = 1024; i++; break;
		case 'T': mult_num = 1024 * 1024; i++; break;
		case 'P': mult_num = 1024 * 1024 * 1024; i++; break;
		default: break;
		}
	}
	if (i < n && (s[i] == 'c' || s[i] == 'n'))
		scope = s[i++];
	if (i != n)
		return -GL_EINVAL;
	/* Slurm before 21.08 could print the MEM_PER_CPU flag bit (2^31) as part
	 * of the number ("2147486648Mn" = 3000 MiB per CPU, seen in XDMoD logs). */
	if (scope && mult_num == 1 && mult_den == 1 && whole >= ((int64_t)1 << 31)) {
		whole -= (int64_t)1 << 31;
		scope = 'c';
	}
	if (__builtin_mul_overflow(whole, 1000, &mb) || __builtin_add_overflow(mb, milli, &mb) ||
	    __builtin_mul_overflow(mb, mult_num, &mb))
		return -GL_EINVAL;
	mb = (mb / mult_den + 500) / 1000;
	if (mb == 0 || scope == 0) {
		*out = mb;
		return 0;
	}
	{
		int64_t k = scope == 'c' ? cpus : nnodes;
		if (k <= 0)
			return 0; /* unknown multiplier: leave -1 */
		if (__builtin_mul_overflow(mb, k, &mb))
			return -GL_EINVAL;
	}
	*out = mb;
	return 0;
}

/* Digits at s[*i..n), at most 18; -1 when there are none. */
static int64_t take_num(const char *s, size_t n, size_t *i)
{
	size_t start = *i;
	int64_t v = 0;
	while (*i < n && is_digit(s[*i]) && *i - start < 18)
		v = v * 10 + (s[(*i)++] - '0');
	return *i == start ? -1 : v;
}

int gl_sacct_array_tasks(const char *s, size_t n, int64_t *tasks, int *partial)
{
	size_t i = 0;
	int64_t total = 0;

	*partial = 1;
	*tasks = 1;
	for (;;) {
		int64_t a = take_num(s, n, &i), b, step = 1, k;
		if (a < 0)
			break; /* cut before an element, or not a range list */
		if (a > GL_SACCT_MAX_ARRAY_TASK_ID)
			return -GL_ERANGE;
		b = a;
		if (i < n && s[i] == '-') {
			i++;
			if ((b = take_num(s, n, &i)) < 0 || b < a) {
				total += 1; /* the first task is real; the end was cut */
				break;
			}
			/* no Slurm makes such a task: corrupt, not a count */
			if (b > GL_SACCT_MAX_ARRAY_TASK_ID)
				return -GL_ERANGE;
		}
		if (i < n && s[i] == ':') {
			i++;
			/* a step cut short ("0-100:2" of ":25") would overcount */
			if ((step = take_num(s, n, &i)) <= 0 || i == n) {
				total += 1;
				break;
			}
		}
		k = (b - a) / step + 1;
		total = total > INT32_MAX - k ? INT32_MAX : total + k;
		if (i < n && s[i] == ',') {
			i++;
			continue;
		}
		if (i < n && s[i] == '%') { /* "%4": at most 4 at once, not fewer tasks */
			i++;
			(void)take_num(s, n, &i);
		}
		/* anything else, a cut inside the last number included, leaves
		 * fewer digits or elements than there were: a lower bound */
		if (i + 1 == n && s[i] == ']')
			*partial = 0;
		break;
	}
	*tasks = total > 0 ? total : 1;
	return 0;
}

/* "123", "123_4", "123_[5-9", "123+1", "123.batch", "123_4.0", "123+1.0", "123.0+1". */
static int parse_jobid(const char *s, size_t n, struct gl_sacct_rec *rec)
{
	size_t i = 0, start;
	int64_t v = 0;

	while (i < n && is_digit(s[i]) && i < 18)
		v = v * 10 + (s[i++] - '0');
	if (i == 0 || (i < n && is_digit(s[i])))
		return -GL_EINVAL;
	rec->base_job_id = v;
	if (i < n && s[i] == '_') {
		if (++i < n && s[i] == '[') {
			/* Pending array meta row: it stands for every task of its
			 * range list; a list cut short ("...") gives a lower bound,
			 * and anything unreadable in it counts as one task. */
			rec->kind = GL_SACCT_ARRAY_PENDING;
			return gl_sacct_array_tasks(s + i + 1, n - i - 1, &rec->array_tasks, &rec->array_tasks_partial);
		}
		start = i;
		v = 0;
		while (i < n && is_digit(s[i]) && i - start < 18)
			v = v * 10 + (s[i++] - '0');
		if (i == start || (i < n && is_digit(s[i])))
			return -GL_EINVAL;
		if (v > GL_SACCT_MAX_ARRAY_TASK_ID)
			return -GL_ERANGE;
		rec->array_task_id = v;
	}
	if (i < n && s[i] == '+') {
		start = ++i;
		v = 0;
		while (i < n && is_digit(s[i]) && i - start < 18)
			v = v * 10 + (s[i++] - '0');
		if (i == start || (i < n && is_digit(s[i])) || v > INT32_MAX)
			return -GL_EINVAL; /* het_offset is an integer column */
		rec->het_offset = v;
	}
	if (i < n && s[i] == '.') {
		if (++i == n)
			return -GL_EINVAL;
		rec->step.p = s + i;
		rec->step.len = n - i;
		rec->kind = GL_SACCT_STEP;
		return 0;
	}
	return i == n ? 0 : -GL_EINVAL;
}

static void parse_state(const char *s, size_t n, struct gl_sacct_rec *rec)
{
	const char *sp = memchr(s, ' ', n);
	size_t tok = sp ? (size_t)(sp - s) : n;

	rec->state = GL_SACCT_JS_UNKNOWN;
	for (int st = 1; st < GL_SACCT_JS__COUNT; st++) {
		if (state_names[st].len == tok && state_names[st].name[0] == s[0] &&
		    memcmp(state_names[st].name, s, tok) == 0) {
			rec->state = (enum gl_sacct_job_state)st;
			break;
		}
	}
	/* "CANCELLED by 1234": anything else after the token is kept only in state_raw */
	if (sp && n - tok > 4 && memcmp(sp, " by ", 4) == 0) {
		int64_t uid;
		if (parse_u63(sp + 4, n - tok - 4, &uid) == 0)
			rec->state_by_uid = uid;
	}
}

/* ---- the line ------------------------------------------------------- */

/* Offsets of up to max delimiters in s[0..len), left to right, matches not
 * overlapping. One pass over the line: with SSE2, 16 bytes are compared per
 * step and every candidate of the first delimiter byte is read off the mask,
 * which beats one memchr call per (short) column. */
static int find_delims(const struct gl_sacct_layout *lay, const char *s, size_t len,
		       size_t *pos, int max)
{
	const char d0 = lay->delim[0];
	const size_t dl = lay->delim_len;
	size_t i = 0, next = 0; /* next: first offset a new match may start at */
	int k = 0;

	if (max <= 0 || len < dl)
		return 0;
#if defined(__SSE2__)
	{
		const __m128i vd = _mm_set1_epi8(d0);
		for (; i + 16 <= len; i += 16) {
			unsigned m = (unsigned)_mm_movemask_epi8(
				_mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)(s + i)), vd));
			while (m) {
				size_t at = i + (size_t)__builtin_ctz(m);
				m &= m - 1;
				if (at < next || at + dl > len)
					continue;
				if (dl > 1 && memcmp(s + at + 1, lay->delim + 1, dl - 1) != 0)
					continue;
				pos[k++] = at;
				if (k == max)
					return k;
				next = at + dl;
			}
		}
	}
#endif
	for (; i < len; i++) {
		if (s[i] != d0 || i < next || i + dl > len)
			continue;
		if (dl > 1 && memcmp(s + i + 1, lay->delim + 1, dl - 1) != 0)
			continue;
		pos[k++] = i;
		if (k == max)
			return k;
		next = i + dl;
	}
	return k;
}

/* Only for the error message, so plain and slow. */
static int count_fields(const struct gl_sacct_layout *lay, const char *s, size_t len)
{
	int n = 1;

	for (size_t i = 0; i + lay->delim_len <= len;) {
		if (memcmp(s + i, lay->delim, lay->delim_len) == 0) {
			n++;
			i += lay->delim_len;
		} else {
			i++;
		}
	}
	return n;
}

#define SHOW_MAX 96

static int bad_value(struct gl_err *err, int f, const char *what, struct gl_str v)
{
	int shown = v.len > SHOW_MAX ? SHOW_MAX : (int)v.len;
	return gl_err_set(err, GL_EINVAL, "%s: bad %s '%.*s'%s", fdesc[f].name, what, shown, v.p,
			  v.len > SHOW_MAX ? "..." : "");
}

static const char *tres_problem(int rc)
{
	return rc == -GL_ERANGE ? "TRES (over 1000000 GPUs)"
	       : rc == -GL_EFORMAT ? "TRES (a GPU type over the 63-byte bound of GPU model names)"
				   : "TRES";
}

static int too_long(struct gl_err *err, const struct fdesc *fd, size_t len)
{
	char why[160];
	/* the caller saw len over lay->col_max, the same bound: always -1 */
	(void)gl_bounds_check((enum gl_bounds)(fd->bound - 1), len, why, sizeof why);
	return gl_err_set(err, GL_EINVAL, "%s: %s", fd->name, why);
}

static inline int64_t *i64_at(struct gl_sacct_rec *rec, unsigned off)
{
	return (int64_t *)(void *)((char *)rec + off);
}

static inline struct gl_str *str_at(struct gl_sacct_rec *rec, unsigned off)
{
	return (struct gl_str *)(void *)((char *)rec + off);
}

int gl_sacct_parse_line(const struct gl_sacct_layout *lay, const char *line, size_t len,
			struct gl_sacct_rec *rec, struct gl_err *err)
{
	struct gl_str cols[GL_SACCT_MAX_COLS];
	const char *end;
	const int n = lay->ncols;
	const size_t dl = lay->delim_len;
	char req_type[GL_SACCT_GPU_TYPE_MAX] = "";
	int64_t elapsed_raw = -1;
	int have_elapsed_raw = 0, req_mem_col = -1, elapsed_col = -1, rc;

	memset(rec, 0, sizeof *rec);
	rec->array_task_id = rec->het_offset = -1;
	rec->job_id_raw_num = rec->db_index = rec->uid = rec->gid = -1;
	rec->submit_s = rec->eligible_s = rec->start_s = rec->end_s = GL_TIME_NONE;
	rec->elapsed_s = rec->suspended_s = rec->timelimit_s = -1;
	rec->state_by_uid = -1;
	rec->nnodes = rec->ncpus = rec->req_cpus = rec->req_mem_mb = -1;
	rec->base_job_id = -1;

	if (!line)
		line = "";
	if (len && line[len - 1] == '\r')
		len--;
	end = line + len;
	{
		/* PostgreSQL refuses the whole COPY for one bad byte: this line only */
		size_t at;
		if (gl_utf8_validate(line, len, &at) < 0)
			return gl_err_set(err, GL_EINVAL, "not valid UTF-8 (byte %zu)", at + 1);
	}

	/* Cut into exactly n columns: n - 1 delimiters, plus one more allowed
	 * only as the --parsable trailing delimiter. JobName, when last, absorbs
	 * any further ones, so there is no need to look past n - 1 then. */
	{
		size_t pos[GL_SACCT_MAX_COLS + 1], from = 0;
		const int last_absorbs = lay->jobname_col == n - 1;
		int nd = find_delims(lay, line, len, pos, last_absorbs ? n - 1 : n + 1);

		if (nd < n - 1)
			return gl_err_set(err, GL_EINVAL, "wrong field count: %d, want %d", nd + 1, n);
		for (int i = 0; i < n - 1; i++) {
			cols[i].p = line + from;
			cols[i].len = pos[i] - from;
			from = pos[i] + dl;
		}
		cols[n - 1].p = line + from;
		cols[n - 1].len = len - from;
		if (last_absorbs) {
			if (cols[n - 1].len >= dl && memcmp(end - dl, lay->delim, dl) == 0)
				cols[n - 1].len -= dl;
		} else if (nd >= n) {
			if (nd > n || pos[n - 1] + dl != len)
				return gl_err_set(err, GL_EINVAL, "wrong field count: %d, want %d",
						  count_fields(lay, line, len), n);
			cols[n - 1].len = pos[n - 1] - from;
		}
	}

	for (int i = 0; i < n; i++) {
		const int f = lay->col[i];
		const struct gl_str v = cols[i];
		const struct fdesc *fd;

		if (f < 0)
			continue;
		fd = &fdesc[f];
		/* kept as text (an indexed key, for some): the line goes, not the batch */
		if (v.len > lay->col_max[i])
			return too_long(err, fd, v.len);
		switch (fd->conv) {
		case CV_STR:
			*str_at(rec, fd->off) = v;
			break;
		case CV_INT:
			if (v.len && parse_u63(v.p, v.len, i64_at(rec, fd->off)) < 0)
				return bad_value(err, f, "number", v);
			/* stored in integer columns: one absurd count must not fail the batch */
			if ((f == GL_SACCT_F_NNODES || f == GL_SACCT_F_NCPUS || f == GL_SACCT_F_REQCPUS) &&
			    *i64_at(rec, fd->off) > INT32_MAX)
				return bad_value(err, f, "number (over 2147483647)", v);
			break;
		case CV_TIME:
			if (gl_sacct_parse_time(v.p, v.len, i64_at(rec, fd->off)) < 0)
				return bad_value(err, f, "time", v);
			break;
		case CV_DUR:
			if (gl_sacct_parse_duration(v.p, v.len, i64_at(rec, fd->off)) < 0)
				return bad_value(err, f, "duration", v);
			break;
		case CV_JOBID:
			rec->job_id = v;
			if ((rc = parse_jobid(v.p, v.len, rec)) < 0)
				return bad_value(err, f,
						 rc == -GL_ERANGE ? "job id (an array task id over 4000000, the largest"
								    " Slurm's MaxArraySize allows)"
								  : "job id",
						 v);
			break;
		case CV_JOBIDRAW: {
			size_t k = 0;
			int64_t num = 0;
			rec->job_id_raw = v;
			while (k < v.len && k < 18 && is_digit(v.p[k]))
				num = num * 10 + (v.p[k++] - '0');
			if (k > 0)
				rec->job_id_raw_num = num;
			break;
		}
		case CV_STATE:
			rec->state_raw = v;
			if (v.len)
				parse_state(v.p, v.len, rec);
			break;
		case CV_ELAPSED:
			elapsed_col = i;
			break;
		case CV_ELAPSEDRAW:
			if (v.len) {
				if (parse_u63(v.p, v.len, &elapsed_raw) < 0)
					return bad_value(err, f, "number", v);
				have_elapsed_raw = 1;
			}
			break;
		case CV_REQMEM:
			rec->req_mem = v;
			req_mem_col = i;
			break;
		case CV_ALLOCTRES:
			rec->alloc_tres = v;
			if (v.len && (rc = gl_sacct_parse_tres_gpus(v.p, v.len, &rec->gpus_alloc, rec->gpu_type)) < 0)
				return bad_value(err, f, tres_problem(rc), v);
			break;
		case CV_REQTRES:
			rec->req_tres = v;
			if (v.len && (rc = gl_sacct_parse_tres_gpus(v.p, v.len, &rec->gpus_req, req_type)) < 0)
				return bad_value(err, f, tres_problem(rc), v);
			break;
		}
	}

	if (have_elapsed_raw) {
		rec->elapsed_s = elapsed_raw;
	} else if (elapsed_col >= 0) {
		struct gl_str v = cols[elapsed_col];
		if (gl_sacct_parse_duration(v.p, v.len, &rec->elapsed_s) < 0)
			return bad_value(err, GL_SACCT_F_ELAPSED, "duration", v);
	}
	if (req_mem_col >= 0) {
		struct gl_str v = cols[req_mem_col];
		int64_t cpus = rec->ncpus > 0 ? rec->ncpus : rec->req_cpus;
		if (parse_reqmem(v.p, v.len, cpus, rec->nnodes, &rec->req_mem_mb) < 0)
			return bad_value(err, GL_SACCT_F_REQMEM, "memory", v);
	}
	/* A job that never started has an empty AllocTRES: keep the requested
	 * type so pending demand can still be priced by model. */
	if (rec->gpus_alloc == 0 && rec->gpu_type[0] == '\0' && rec->gpus_req > 0 &&
	    lay->pos[GL_SACCT_F_REQTRES] >= 0)
		memcpy(rec->gpu_type, req_type, sizeof req_type);
	return 0;
}
