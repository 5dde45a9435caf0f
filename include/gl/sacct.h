/* gpuledger — pure parser for Slurm `sacct --parsable[2]` output.
 *
 * No I/O, no clock, no libpq. The caller feeds one line at a time.
 *
 * Ownership: struct gl_sacct_layout is built by gl_sacct_layout_init() and
 * released by gl_sacct_layout_fini(). A parsed struct gl_sacct_rec holds
 * gl_str slices that point INTO THE CALLER'S LINE BUFFER: they are valid only
 * as long as that buffer is unchanged. Fixed-size arrays (gpu_type) are copies.
 */
#ifndef GL_SACCT_H
#define GL_SACCT_H

#include "gl/common.h"

#include <stdint.h>

/* Columns we understand. Any other column in --fields is accepted and ignored. */
enum gl_sacct_field {
	GL_SACCT_F_JOBID, GL_SACCT_F_JOBIDRAW, GL_SACCT_F_CLUSTER, GL_SACCT_F_PARTITION, GL_SACCT_F_QOS,
	GL_SACCT_F_ACCOUNT, GL_SACCT_F_GROUP, GL_SACCT_F_GID, GL_SACCT_F_USER, GL_SACCT_F_UID,
	GL_SACCT_F_SUBMIT, GL_SACCT_F_ELIGIBLE, GL_SACCT_F_START, GL_SACCT_F_END, GL_SACCT_F_ELAPSED,
	GL_SACCT_F_ELAPSEDRAW, GL_SACCT_F_EXITCODE, GL_SACCT_F_STATE, GL_SACCT_F_NNODES, GL_SACCT_F_NCPUS,
	GL_SACCT_F_REQCPUS, GL_SACCT_F_REQMEM, GL_SACCT_F_REQTRES, GL_SACCT_F_ALLOCTRES, GL_SACCT_F_TIMELIMIT,
	GL_SACCT_F_NODELIST, GL_SACCT_F_DBINDEX, GL_SACCT_F_SUSPENDED, GL_SACCT_F_WCKEY, GL_SACCT_F_JOBNAME,
	GL_SACCT_F_COMMENT,
	GL_SACCT_F__COUNT,
	GL_SACCT_F_IGNORED = -1
};

/* The recommended field list (FORMATS.md), JobName last. */
#define GL_SACCT_DEFAULT_FIELDS                                                          \
	"JobID,JobIDRaw,Cluster,Partition,QOS,Account,Group,GID,User,UID,Submit,Eligible," \
	"Start,End,Elapsed,ElapsedRaw,ExitCode,State,NNodes,NCPUS,ReqCPUS,ReqMem,ReqTRES,"  \
	"AllocTRES,Timelimit,NodeList,DBIndex,Suspended,WCKey,JobName"

#define GL_SACCT_MAX_COLS 64

struct gl_sacct_layout {
	int ncols;                          /* number of columns in --fields */
	int col[GL_SACCT_MAX_COLS];         /* column index -> enum gl_sacct_field or GL_SACCT_F_IGNORED */
	int pos[GL_SACCT_F__COUNT];              /* field -> column index, -1 when absent */
	char delim[8];                      /* delimiter bytes (UTF-8 allowed, e.g. "☃") */
	size_t delim_len;
	int jobname_col;                    /* column of JobName or -1: when last, it absorbs extra delimiters */
	size_t col_max[GL_SACCT_MAX_COLS];  /* column index -> byte bound of a column kept as text
					     * (gl_bounds_max), SIZE_MAX for the others: looked up
					     * once here, not per field of every line */
};

/* fields: comma-separated sacct field names, case-insensitive (NULL = default list);
 * JobID is required. delim: NULL or "" = "|". Errors name the bad field. */
int gl_sacct_layout_init(struct gl_sacct_layout *lay, const char *fields, const char *delim,
			 struct gl_err *err) GL_MUSTCHECK;
void gl_sacct_layout_fini(struct gl_sacct_layout *lay);

enum gl_sacct_job_state {
	GL_SACCT_JS_UNKNOWN = 0, /* not in the known list: state_raw is kept verbatim */
	GL_SACCT_JS_PENDING, GL_SACCT_JS_RUNNING, GL_SACCT_JS_SUSPENDED, GL_SACCT_JS_COMPLETED, GL_SACCT_JS_CANCELLED,
	GL_SACCT_JS_FAILED, GL_SACCT_JS_TIMEOUT, GL_SACCT_JS_NODE_FAIL, GL_SACCT_JS_PREEMPTED, GL_SACCT_JS_BOOT_FAIL,
	GL_SACCT_JS_DEADLINE, GL_SACCT_JS_OUT_OF_MEMORY, GL_SACCT_JS_REQUEUED, GL_SACCT_JS_REQUEUE_HOLD,
	GL_SACCT_JS_REQUEUE_FED, GL_SACCT_JS_RESIZING, GL_SACCT_JS_REVOKED, GL_SACCT_JS_SPECIAL_EXIT,
	GL_SACCT_JS__COUNT
};
/* Upper-case name as sacct prints it ("COMPLETED"); "UNKNOWN" for GL_SACCT_JS_UNKNOWN. */
const char *gl_sacct_job_state_name(enum gl_sacct_job_state s);

enum gl_sacct_kind {
	GL_SACCT_ALLOCATION = 0, /* a job allocation: becomes one jobs row */
	GL_SACCT_STEP,           /* 123.batch, 123.extern, 123.0, 123.0+1 ...: not billed */
	GL_SACCT_ARRAY_PENDING,  /* pending array meta row 123_[5-9] (possibly truncated "...") */
};

#define GL_SACCT_GPU_TYPE_MAX 64

struct gl_sacct_rec {
	enum gl_sacct_kind kind;
	/* raw slices (into the line); .p == NULL when the column is absent */
	struct gl_str job_id, job_id_raw, cluster, partition, qos, account, group, user,
		state_raw, exit_code, req_mem, req_tres, alloc_tres, node_list, wckey, job_name, comment;

	/* JobID decomposed: base id, array task (-1 none), het offset (-1 none), step (slice, empty if none) */
	int64_t base_job_id;
	int64_t array_task_id;
	int64_t het_offset;
	struct gl_str step;
	/* GL_SACCT_ARRAY_PENDING: the tasks the meta row stands for (>= 1),
	 * and 1 when its range list was cut short, so the count is a lower
	 * bound; 0 and 0 for other rows */
	int64_t array_tasks;
	int array_tasks_partial;

	int64_t job_id_raw_num;   /* JobIDRaw numeric part, -1 when unparsable/absent */
	int64_t db_index;         /* -1 when absent/empty */
	int64_t uid, gid;         /* -1 when absent/empty */

	/* times in Unix seconds UTC; GL_TIME_NONE for Unknown/None/empty/absent */
	int64_t submit_s, eligible_s, start_s, end_s;
	int64_t elapsed_s;        /* ElapsedRaw when present, else parsed Elapsed; -1 absent */
	int64_t suspended_s;      /* -1 absent */
	int64_t timelimit_s;      /* -1 UNLIMITED/Partition_limit/INVALID/absent */

	enum gl_sacct_job_state state;
	int64_t state_by_uid;     /* "CANCELLED by 1234" -> 1234, else -1 */

	int64_t nnodes, ncpus, req_cpus; /* -1 absent; larger than INT32_MAX: the line is refused */
	int64_t req_mem_mb;       /* ReqMem in MiB as a job total when determinable, per-CPU/per-node suffix applied with ncpus/nnodes; -1 unknown */

	/* GPUs from AllocTRES (typed/untyped rule: gres/gpu=N wins; else sum of gres/gpu:TYPE=N).
	 * gres/gpumem and gres/gpuutil are not GPU counts. */
	int64_t gpus_alloc;       /* 0 when none */
	char gpu_type[GL_SACCT_GPU_TYPE_MAX]; /* the single typed name if exactly one type (e.g. "a100", "1g.10gb"), "" otherwise */
	int64_t gpus_req;         /* same rule on ReqTRES */
};

/* Parses one line (without its trailing '\n'; a trailing '\r' is tolerated).
 * Handles --parsable (trailing delimiter) and --parsable2.
 * A line that is not valid UTF-8 is refused whole ("not valid UTF-8 (byte N)").
 * Returns 0, or -GL_EINVAL with err->msg naming the column ("Submit: bad time '2024-13-01T00:00:00'")
 * but NOT the line number: the caller prefixes "file:line: ". */
int gl_sacct_parse_line(const struct gl_sacct_layout *lay, const char *line, size_t len,
			struct gl_sacct_rec *rec, struct gl_err *err) GL_MUSTCHECK;

/* Pure helpers, exported for tests and other sources. */
/* "2024-04-05T13:13:39" (UTC, years 0001-9999) -> seconds; "Unknown", "None", "" -> GL_TIME_NONE (returns 0). */
int gl_sacct_parse_time(const char *s, size_t n, int64_t *out) GL_MUSTCHECK;
/* "MM:SS", "HH:MM:SS", "D-HH:MM:SS", "MM:SS.mmm" (fraction truncated) -> seconds;
 * "UNLIMITED", "Partition_limit", "INVALID" -> -1 (returns 0). */
int gl_sacct_parse_duration(const char *s, size_t n, int64_t *out) GL_MUSTCHECK;
/* More GPUs than this in one job is corrupt input (the largest clusters
 * have ~10^5): refused so milli-GPU-seconds stay far inside int64. */
#define GL_SACCT_MAX_JOB_GPUS 1000000
/* Slurm's MaxArraySize is at most 4000001 (slurm.conf(5)), so no array
 * task id is larger than this; a larger one is corrupt input. */
#define GL_SACCT_MAX_ARRAY_TASK_ID 4000000
/* Tasks of a pending array's range list, s = the text after '['
 * ("1-100]", "1,3,5-9]", "0-15:4]", "1-100%10]"); *partial = 1 unless the
 * list ends in ']' exactly where it should (cut: "1-3,5,7..."), and then
 * *tasks is a lower bound (>= 1, at most INT32_MAX). -GL_ERANGE when a task
 * id is over GL_SACCT_MAX_ARRAY_TASK_ID ("[0-4294967296]" counted 2^31 - 1
 * pending tasks); an unreadable list counts as one task. */
int gl_sacct_array_tasks(const char *s, size_t n, int64_t *tasks, int *partial) GL_MUSTCHECK;
/* TRES list -> GPU count and single type (see gl_sacct_rec.gpus_alloc).
 * -GL_EINVAL: malformed; -GL_ERANGE: more than GL_SACCT_MAX_JOB_GPUS GPUs;
 * -GL_EFORMAT: the one GPU type is longer than GL_SACCT_GPU_TYPE_MAX - 1 bytes (it
 * was cut, which made it another model). */
int gl_sacct_parse_tres_gpus(const char *s, size_t n, int64_t *gpus, char type[GL_SACCT_GPU_TYPE_MAX]) GL_MUSTCHECK;

#endif
