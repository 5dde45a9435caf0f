/* Unit tests for src/sources/sacct.c. Real lines come from tests/fixtures/sacct/
 * (see its README.md for provenance); every line not from a real sacct is
 * marked "hand-written". Run from the repo root. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gl/bounds.h"
#include "gl/sacct.h"
#include "lib/testlib.h"

#define FIX "tests/fixtures/sacct/"

#define TESTBED_FIELDS_FILE FIX "testbed/sacct_fields.txt"
#define SONAR_FIELDS                                                                            \
	"JobID,JobIDRaw,User,Account,State,Start,End,AveCPU,AveDiskRead,AveDiskWrite,AveRSS,"      \
	"AveVMSize,ElapsedRaw,ExitCode,Layout,MaxRSS,MaxVMSize,MinCPU,ReqCPUS,ReqMem,ReqNodes,"     \
	"Reservation,Submit,Suspended,SystemCPU,TimelimitRaw,UserCPU,NodeList,Partition,AllocTRES," \
	"Priority,JobName"
#define HB_FIELDS                                                                               \
	"JobID,JobName,User,Partition,NodeList,NNodes,NCPUs,NTasks,State,Submit,Start,End,"        \
	"Timelimit,Elapsed,TotalCPU,CPUTime,UserCPU,SystemCPU,ReqMem,MaxRSS,MaxVMSize,ReqTRES,"     \
	"AllocTRES,TRESUsageInMax,TRESUsageInTot,TRESUsageOutTot,MaxDiskRead,MaxDiskWrite,"         \
	"MaxRSSNode,MaxRSSTask,MaxVMSizeNode,MaxVMSizeTask,MaxDiskReadNode,MaxDiskReadTask,"        \
	"MaxDiskWriteNode,MaxDiskWriteTask,Comment"
#define XDMOD_FIELDS                                                                            \
	"jobid,jobidraw,cluster,partition,qos,account,group,gid,user,uid,submit,eligible,start,"   \
	"end,elapsed,exitcode,state,nnodes,ncpus,reqcpus,reqmem,reqtres,alloctres,timelimit,"      \
	"nodelist,jobname"
#define AWS_FIELDS                                                                              \
	"State,JobID,ReqCPUS,ReqMem,ReqNodes,Constraints,Submit,Eligible,Start,Elapsed,Suspended," \
	"End,ExitCode,DerivedExitCode,AllocNodes,NCPUS,MaxDiskRead,MaxDiskWrite,MaxPages,MaxRSS,"  \
	"MaxVMSize,CPUTime,UserCPU,SystemCPU,TotalCPU"

/* ---- helpers ------------------------------------------------------------ */

static int str_is(struct gl_str s, const char *want)
{
	return s.p && strlen(want) == s.len && memcmp(s.p, want, s.len) == 0;
}

#define assert_str(s, want)                                                              \
	do {                                                                             \
		if (!str_is((s), (want)))                                                \
			fail_msg("%s: got '%.*s', want '%s'", #s, (int)(s).len,           \
				 (s).p ? (s).p : "(null)", (want));                     \
	} while (0)

static void layout(struct gl_sacct_layout *lay, const char *fields, const char *delim)
{
	struct gl_err err = {0};
	int rc = gl_sacct_layout_init(lay, fields, delim, &err);
	if (rc != 0)
		fail_msg("layout: %s", err.msg);
}

/* Reads sacct_fields.txt ('|'-separated) into a comma list. */
static void testbed_layout(struct gl_sacct_layout *lay)
{
	size_t n;
	char *f = gl_test_read_file(TESTBED_FIELDS_FILE, &n);
	for (size_t i = 0; i < n; i++)
		if (f[i] == '|')
			f[i] = ',';
		else if (f[i] == '\n')
			f[i] = '\0';
	layout(lay, f, "|");
	free(f);
}

typedef void (*rec_fn)(const struct gl_sacct_rec *rec, void *ud);

/* Parses every line of a fixture; any parse error fails the test with file:line. */
static int parse_file(const char *path, const struct gl_sacct_layout *lay, rec_fn fn, void *ud)
{
	size_t len, lineno = 0;
	char *buf = gl_test_read_file(path, &len);
	const char *p = buf, *end = buf + len;
	int lines = 0;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		struct gl_sacct_rec rec;
		struct gl_err err = {0};

		lineno++;
		if (n) {
			if (gl_sacct_parse_line(lay, p, n, &rec, &err) != 0)
				fail_msg("%s:%zu: %s", path, lineno, err.msg);
			if (fn)
				fn(&rec, ud);
			lines++;
		}
		p += n + 1;
	}
	free(buf);
	return lines;
}

static int parse1(const struct gl_sacct_layout *lay, const char *line, struct gl_sacct_rec *rec)
{
	struct gl_err err = {0};
	int rc = gl_sacct_parse_line(lay, line, strlen(line), rec, &err);
	if (rc != 0)
		fail_msg("parse '%s': %s", line, err.msg);
	return rc;
}

/* ---- pure helpers ------------------------------------------------------ */

static void test_time(void **state)
{
	static const struct {
		const char *in;
		int rc;
		int64_t want;
	} cases[] = {
		{"2026-11-22T16:03:53", 0, 1795363433}, /* testbed first submit */
		{"2024-04-05T13:13:39", 0, 1712322819}, /* hb-jobinfo */
		{"1970-01-01T00:00:00", 0, 0},
		{"2000-02-29T23:59:59", 0, 951868799},
		{"2016-12-31T23:59:59", 0, 1483228799},
		/* the ends of the range PostgreSQL takes (Python datetime epoch offsets) */
		{"0001-01-01T00:00:00", 0, -62135596800},
		{"9999-12-31T23:59:59", 0, 253402300799},
		{"0000-01-01T00:00:00", -GL_EINVAL, 0},
		{"1969-12-31T23:59:59", 0, -1},
		{"Unknown", 0, GL_TIME_NONE},
		{"None", 0, GL_TIME_NONE},
		{"", 0, GL_TIME_NONE},
		/* hand-written bad times */
		{"2024-13-01T00:00:00", -GL_EINVAL, 0},
		{"2023-02-29T00:00:00", -GL_EINVAL, 0},
		{"2024-04-05 13:13:39", -GL_EINVAL, 0},
		{"2024-04-05T24:00:00", -GL_EINVAL, 0},
		{"2024-04-05T13:60:00", -GL_EINVAL, 0},
		{"2024-04-05T13:13:3", -GL_EINVAL, 0},
		{"2024-04-05T13:13:39Z", -GL_EINVAL, 0},
		{"2024-O4-05T13:13:39", -GL_EINVAL, 0},
		{"unknown", -GL_EINVAL, 0},
		{"2024-00-10T00:00:00", -GL_EINVAL, 0},
	};
	(void)state;
	for (size_t i = 0; i < GL_ARRAY_LEN(cases); i++) {
		int64_t got = 42;
		int rc = gl_sacct_parse_time(cases[i].in, strlen(cases[i].in), &got);
		if (rc != cases[i].rc || (rc == 0 && got != cases[i].want))
			fail_msg("time '%s': rc %d got %lld, want rc %d %lld", cases[i].in, rc,
				 (long long)got, cases[i].rc, (long long)cases[i].want);
	}
}

static void test_duration(void **state)
{
	static const struct {
		const char *in;
		int rc;
		int64_t want;
	} cases[] = {
		{"00:00:20", 0, 20},          /* HH:MM:SS (testbed) */
		{"00:01:11", 0, 71},
		{"22:32:22", 0, 81142},
		{"1-04:33:44", 0, 102824},    /* D-HH:MM:SS (hb-jobinfo) */
		{"10-13:27:06", 0, 912426},   /* xdmod */
		{"125-00:00:00", 0, 10800000},
		{"37-14:00:00", 0, 3247200},
		{"25:34.179", 0, 1534},       /* MM:SS.mmm (aws TotalCPU) */
		{"00:00.081", 0, 0},
		{"03:44.623", 0, 224},
		{"04:27", 0, 267},            /* MM:SS */
		{"01:26:39.5", 0, 5199},      /* hand-written: fraction on HH:MM:SS */
		{"UNLIMITED", 0, -1},
		{"Partition_limit", 0, -1},
		{"Partition_Limit", 0, -1},   /* xdmod spelling */
		{"INVALID", 0, -1},
		{"", 0, -1},
		/* hand-written bad durations */
		{"1:2:3:4", -GL_EINVAL, 0},
		{"1-02:03", -GL_EINVAL, 0},
		{"1-24:00:00", -GL_EINVAL, 0},
		{"00:60:00", -GL_EINVAL, 0},
		{"00:00:61", -GL_EINVAL, 0},
		{"12", -GL_EINVAL, 0},
		{"abc", -GL_EINVAL, 0},
		{"00:00:", -GL_EINVAL, 0},
		{"00:00.", -GL_EINVAL, 0},
		{"00:00.1x", -GL_EINVAL, 0},
		{"-1:00:00", -GL_EINVAL, 0},
		{"1--1:00:00", -GL_EINVAL, 0},
		{"99999999999:00", -GL_EINVAL, 0},
	};
	(void)state;
	for (size_t i = 0; i < GL_ARRAY_LEN(cases); i++) {
		int64_t got = 42;
		int rc = gl_sacct_parse_duration(cases[i].in, strlen(cases[i].in), &got);
		if (rc != cases[i].rc || (rc == 0 && got != cases[i].want))
			fail_msg("duration '%s': rc %d got %lld, want rc %d %lld", cases[i].in, rc,
				 (long long)got, cases[i].rc, (long long)cases[i].want);
	}
}

static void test_tres(void **state)
{
	static const struct {
		const char *in;
		int rc;
		int64_t gpus;
		const char *type;
	} cases[] = {
		/* xdmod alloc-tres-gpu-count.json, all 9 pairs */
		{"", 0, 0, ""},
		{"billing=1,cpu=1,mem=1000M,node=1", 0, 0, ""},
		{"billing=10,cpu=10,gres/gpu=4,mem=374000M,node=2", 0, 4, ""},
		{"billing=12,cpu=12,gres/gpu=4,mem=748000M,node=4", 0, 4, ""},
		{"billing=6,cpu=6,gres/gpu=2,mem=374000M,node=2", 0, 2, ""},
		{"billing=1,cpu=1,gres/gpu=1,mem=125G,node=1", 0, 1, ""},
		{"billing=1,cpu=1,gres/gpu:p100=1,mem=125G,node=1", 0, 1, "p100"},
		{"gres/gpu:volta=2,mem=125G,node=1", 0, 2, "volta"},
		{"billing=1,cpu=1,gres/gpu:tesla=4", 0, 4, "tesla"},
		/* testbed: typed + untyped are the same GPUs, never summed */
		{"billing=2,cpu=2,gres/gpu:a100=8,gres/gpu=8,mem=2000M,node=2", 0, 8, "a100"},
		/* sonar */
		{"billing=78,cpu=48,gres/gpu:a100_80=4,gres/gpu=4,mem=384G,node=1", 0, 4, "a100_80"},
		/* hb-jobinfo usage TRES: gpumem/gpuutil are not counts */
		{"cpu=15:33:58,energy=0,fs/disk=934556828,gres/gpumem=20500736K,gres/gpuutil=90,"
		 "mem=1294440K,pages=3310,vmem=10379460K",
		 0, 0, ""},
		/* xdmod decimal memory */
		{"billing=64,cpu=64,mem=62.50G,node=8", 0, 0, ""},
		/* hand-written: mixed types, no untyped entry -> sum, type "" */
		{"cpu=8,gres/gpu:a100=2,gres/gpu:v100=1,node=1", 0, 3, ""},
		/* hand-written: mixed types with untyped total -> the total */
		{"gres/gpu:a100=2,gres/gpu:v100=1,gres/gpu=3", 0, 3, ""},
		/* hand-written: MIG profile names contain '.' */
		{"cpu=4,gres/gpu:1g.10gb=1,mem=16G,node=1", 0, 1, "1g.10gb"},
		{"gres/gpu:3g.40gb=2,gres/gpu:1g.10gb=1", 0, 3, ""},
		/* hand-written: usage TRES next to a count */
		{"gres/gpu=2,gres/gpumem=0,gres/gpuutil=0", 0, 2, ""},
		{"gres/gpu_shard=4,gres/gpus=1", 0, 0, ""},
		/* hand-written: split on the FIRST '=' only */
		{"license/x=a=b,gres/gpu=1", 0, 1, ""},
		/* hand-written bad TRES */
		{"gres/gpu=x", -GL_EINVAL, 0, ""},
		{"gres/gpu=-1", -GL_EINVAL, 0, ""},
		{"gres/gpu:a100=", -GL_EINVAL, 0, ""},
		{"gres/gpu:=1", -GL_EINVAL, 0, ""},
		{"cpu=1,,node=1", -GL_EINVAL, 0, ""},
		{"cpu=1,", -GL_EINVAL, 0, ""},
		{"cpu", -GL_EINVAL, 0, ""},
		{"=1", -GL_EINVAL, 0, ""},
		{"gres/gpu=99999999999999999999", -GL_EINVAL, 0, ""},
		/* a million GPUs per job is the most believed; x1000 must not wrap */
		{"gres/gpu=1000000", 0, 1000000, ""},
		{"gres/gpu:h100=1000000", 0, 1000000, "h100"},
		{"gres/gpu=1000001", -GL_ERANGE, 0, ""},
		{"cpu=1,gres/gpu=999999999999999999,node=1", -GL_ERANGE, 0, ""},
		{"gres/gpu:a100=600000,gres/gpu:h100=400001", -GL_ERANGE, 0, ""}, /* typed sum */
	};
	(void)state;
	for (size_t i = 0; i < GL_ARRAY_LEN(cases); i++) {
		int64_t gpus = 42;
		char type[GL_SACCT_GPU_TYPE_MAX] = "junk";
		int rc = gl_sacct_parse_tres_gpus(cases[i].in, strlen(cases[i].in), &gpus, type);
		if (rc != cases[i].rc ||
		    (rc == 0 && (gpus != cases[i].gpus || strcmp(type, cases[i].type) != 0)))
			fail_msg("tres '%s': rc %d gpus %lld type '%s', want rc %d %lld '%s'", cases[i].in,
				 rc, (long long)gpus, type, cases[i].rc, (long long)cases[i].gpus,
				 cases[i].type);
	}
}

/* ---- per-column behaviour through gl_sacct_parse_line -------------------- */

static void test_jobid(void **state)
{
	static const struct {
		const char *id;
		enum gl_sacct_kind kind;
		int64_t base, task, het;
		const char *step;
	} cases[] = {
		{"123", GL_SACCT_ALLOCATION, 123, -1, -1, NULL},
		{"7_3", GL_SACCT_ALLOCATION, 7, 3, -1, NULL},          /* testbed */
		{"4103947_100", GL_SACCT_ALLOCATION, 4103947, 100, -1, NULL}, /* xdmod */
		{"14+1", GL_SACCT_ALLOCATION, 14, -1, 1, NULL},        /* testbed het */
		{"1.batch", GL_SACCT_STEP, 1, -1, -1, "batch"},
		{"2346371.extern", GL_SACCT_STEP, 2346371, -1, -1, "extern"},
		{"2346371.interactive", GL_SACCT_STEP, 2346371, -1, -1, "interactive"},
		{"3.0", GL_SACCT_STEP, 3, -1, -1, "0"},
		{"7_0.batch", GL_SACCT_STEP, 7, 0, -1, "batch"},
		{"4103947_[1-3]", GL_SACCT_ARRAY_PENDING, 4103947, -1, -1, NULL}, /* xdmod */
		{"4103947_[9-11,13,16-20]", GL_SACCT_ARRAY_PENDING, 4103947, -1, -1, NULL},
		/* hand-written: forms not in any real fixture */
		{"123.0+1", GL_SACCT_STEP, 123, -1, -1, "0+1"},
		{"123+1.0", GL_SACCT_STEP, 123, -1, 1, "0"},
		{"123_4.batch", GL_SACCT_STEP, 123, 4, -1, "batch"},
		{"123_[5-9]", GL_SACCT_ARRAY_PENDING, 123, -1, -1, NULL},
		{"123_[1-99:2]", GL_SACCT_ARRAY_PENDING, 123, -1, -1, NULL},
		{"123_[1-100%10]", GL_SACCT_ARRAY_PENDING, 123, -1, -1, NULL},
		{"123_[1-3,5...", GL_SACCT_ARRAY_PENDING, 123, -1, -1, NULL},
		{"123_[", GL_SACCT_ARRAY_PENDING, 123, -1, -1, NULL},
	};
	struct gl_sacct_layout lay;
	(void)state;
	layout(&lay, "JobID,State", "|");
	for (size_t i = 0; i < GL_ARRAY_LEN(cases); i++) {
		char line[128];
		struct gl_sacct_rec rec;
		snprintf(line, sizeof line, "%s|COMPLETED", cases[i].id);
		parse1(&lay, line, &rec);
		if (rec.kind != cases[i].kind || rec.base_job_id != cases[i].base ||
		    rec.array_task_id != cases[i].task || rec.het_offset != cases[i].het)
			fail_msg("jobid '%s': kind %d base %lld task %lld het %lld", cases[i].id,
				 rec.kind, (long long)rec.base_job_id, (long long)rec.array_task_id,
				 (long long)rec.het_offset);
		if (cases[i].step)
			assert_str(rec.step, cases[i].step);
		else
			assert_int_equal(rec.step.len, 0);
		assert_str(rec.job_id, cases[i].id);
	}
}

static void test_state(void **state)
{
	static const struct {
		const char *in;
		enum gl_sacct_job_state st;
		int64_t by;
	} cases[] = {
		{"COMPLETED", GL_SACCT_JS_COMPLETED, -1},
		{"CANCELLED by 2003", GL_SACCT_JS_CANCELLED, 2003},   /* testbed */
		{"CANCELLED by 10304007", GL_SACCT_JS_CANCELLED, 10304007}, /* hb-jobinfo */
		{"CANCELLED", GL_SACCT_JS_CANCELLED, -1},
		{"REQUEUED", GL_SACCT_JS_REQUEUED, -1},
		{"TIMEOUT", GL_SACCT_JS_TIMEOUT, -1},
		{"FAILED", GL_SACCT_JS_FAILED, -1},
		{"OUT_OF_MEMORY", GL_SACCT_JS_OUT_OF_MEMORY, -1},
		{"NODE_FAIL", GL_SACCT_JS_NODE_FAIL, -1},
		{"PREEMPTED", GL_SACCT_JS_PREEMPTED, -1},
		{"PENDING", GL_SACCT_JS_PENDING, -1},
		{"RUNNING", GL_SACCT_JS_RUNNING, -1},
		{"SPECIAL_EXIT", GL_SACCT_JS_SPECIAL_EXIT, -1},
		{"REQUEUE_HOLD", GL_SACCT_JS_REQUEUE_HOLD, -1},
		{"FOO", GL_SACCT_JS_UNKNOWN, -1},     /* xdmod unknown-job-state.log */
		{"INVALID", GL_SACCT_JS_UNKNOWN, -1}, /* aws issue61 */
		{"", GL_SACCT_JS_UNKNOWN, -1},
		{"CANCELLED by x", GL_SACCT_JS_CANCELLED, -1}, /* hand-written */
		{"COMPLETEDX", GL_SACCT_JS_UNKNOWN, -1},       /* hand-written */
	};
	struct gl_sacct_layout lay;
	(void)state;
	layout(&lay, "JobID,State", "|");
	for (size_t i = 0; i < GL_ARRAY_LEN(cases); i++) {
		char line[128];
		struct gl_sacct_rec rec;
		snprintf(line, sizeof line, "1|%s", cases[i].in);
		parse1(&lay, line, &rec);
		if (rec.state != cases[i].st || rec.state_by_uid != cases[i].by)
			fail_msg("state '%s': %s by %lld", cases[i].in, gl_sacct_job_state_name(rec.state),
				 (long long)rec.state_by_uid);
		assert_str(rec.state_raw, cases[i].in);
	}
	assert_string_equal(gl_sacct_job_state_name(GL_SACCT_JS_OUT_OF_MEMORY), "OUT_OF_MEMORY");
	assert_string_equal(gl_sacct_job_state_name(GL_SACCT_JS_UNKNOWN), "UNKNOWN");
	assert_string_equal(gl_sacct_job_state_name((enum gl_sacct_job_state)99), "UNKNOWN");
}

static void test_reqmem(void **state)
{
	static const struct {
		const char *line; /* ReqMem|NCPUS|ReqCPUS|NNodes */
		int64_t want;
	} cases[] = {
		{"2000M|2|2|1", 2000},          /* testbed */
		{"128G|32|32|1", 131072},       /* sonar */
		{"2T|1|1|1", 2097152},          /* aws issue61 */
		{"3000Mc|256|256|32", 768000},  /* xdmod: per CPU */
		{"48000Mn|36|36|3", 144000},    /* xdmod: per node */
		{"125Gn|16|16|1", 128000},      /* xdmod pozidriv */
		{"100Gn|8|8|2", 204800},        /* hand-written */
		{"0n|0|0|0", 0},                /* xdmod 5692623 */
		{"0n|8|8|1", 0},                /* aws issue17 */
		{"62.50G|64|64|8", 64000},      /* hand-written, decimal as in AllocTRES */
		{"1.5G|1|1|1", 1536},           /* hand-written */
		{"512K|1|1|1", 1},              /* hand-written: rounds to nearest MiB */
		{"1P|1|1|1", 1073741824},       /* hand-written */
		{"1000|1|1|1", 1000},           /* hand-written: no unit = MiB */
		{"2147486648Mn|8|8|1", 24000},  /* xdmod: MEM_PER_CPU flag bit leaked, 3000 MiB/CPU */
		{"2147486448Mn|8|8|1", 22400},  /* xdmod pozidriv */
		{"3000Mc|0|4|1", 12000},        /* hand-written: pending, NCPUS 0 -> ReqCPUS */
		{"3000Mc|||1", -1},             /* hand-written: CPUs unknown */
		{"48000Mn|1|1|0", -1},          /* hand-written: nodes unknown */
		{"|1|1|1", -1},                 /* steps have an empty ReqMem */
	};
	struct gl_sacct_layout lay;
	(void)state;
	layout(&lay, "JobID,ReqMem,NCPUS,ReqCPUS,NNodes", "|");
	for (size_t i = 0; i < GL_ARRAY_LEN(cases); i++) {
		struct gl_sacct_rec rec;
		char line[128];
		snprintf(line, sizeof line, "1|%s", cases[i].line);
		parse1(&lay, line, &rec);
		if (rec.req_mem_mb != cases[i].want)
			fail_msg("reqmem '%s': %lld, want %lld", cases[i].line,
				 (long long)rec.req_mem_mb, (long long)cases[i].want);
	}
}

/* Malformed lines: the message names the column and the value (hand-written,
 * each a real testbed/xdmod line with one column broken). */
static void test_bad_lines(void **state)
{
	static const struct {
		const char *fields;
		const char *delim;
		const char *line;
		const char *want_msg;
	} cases[] = {
		{"JobID,Submit,ElapsedRaw", NULL, "1|2026-11-22T16:03:53", "wrong field count: 2, want 3"},
		{"JobID,Submit,ElapsedRaw", NULL, "1|2026-11-22T16:03:53|20|x", "wrong field count: 4, want 3"},
		{"JobID,Submit,ElapsedRaw", NULL, "1|2026-11-22T16:03:53|20||", "wrong field count: 5, want 3"},
		{"JobID,Submit,ElapsedRaw", NULL, "", "wrong field count: 1, want 3"},
		{"JobID,WCKey", NULL, "1|aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa|bbbbbbbbbbbbbbbbbbbbbbbbbbbbbb|c|",
		 "wrong field count: 5, want 2"},
		{"JobID,WCKey,JobName", "☃", "1|wk|name", "wrong field count: 1, want 3"},
		{"JobID,Submit,ElapsedRaw", "☃", "1|2026-11-22T16:03:53|20", "wrong field count: 1, want 3"},
		{"JobID,Submit,ElapsedRaw", NULL, "1|2026-11-22T16:3:53|20", "Submit: bad time '2026-11-22T16:3:53'"},
		{"JobID,Start", NULL, "1|2024-13-01T00:00:00", "Start: bad time '2024-13-01T00:00:00'"},
		{"JobID,End", NULL, "1|unknown", "End: bad time 'unknown'"},
		{"JobID,Eligible", NULL, "1|2026-02-30T00:00:00", "Eligible: bad time '2026-02-30T00:00:00'"},
		{"JobID,ElapsedRaw", NULL, "1|2x", "ElapsedRaw: bad number '2x'"},
		{"JobID,Elapsed", NULL, "1|00:00:6O", "Elapsed: bad duration '00:00:6O'"},
		{"JobID,Timelimit", NULL, "1|forever", "Timelimit: bad duration 'forever'"},
		{"JobID,Suspended", NULL, "1|-1", "Suspended: bad duration '-1'"},
		{"JobID,AllocTRES", NULL, "1|billing=1,cpu=1,gres/gpu=one,node=1",
		 "AllocTRES: bad TRES 'billing=1,cpu=1,gres/gpu=one,node=1'"},
		{"JobID,ReqTRES", NULL, "1|cpu=1,gres/gpu", "ReqTRES: bad TRES 'cpu=1,gres/gpu'"},
		{"JobID,ReqMem", NULL, "1|12Q", "ReqMem: bad memory '12Q'"},
		{"JobID,ReqMem", NULL, "1|G", "ReqMem: bad memory 'G'"},
		{"JobID,NCPUS", NULL, "1|-2", "NCPUS: bad number '-2'"},
		{"JobID,UID", NULL, "1|2001 ", "UID: bad number '2001 '"},
		{"JobID,DBIndex", NULL, "1|99999999999999999999", "DBIndex: bad number '99999999999999999999'"},
		{"JobID,State", NULL, "x1|COMPLETED", "JobID: bad job id 'x1'"},
		{"JobID,State", NULL, "|COMPLETED", "JobID: bad job id ''"},
		{"JobID,State", NULL, "1.|COMPLETED", "JobID: bad job id '1.'"},
		{"JobID,State", NULL, "1_x|COMPLETED", "JobID: bad job id '1_x'"},
		{"JobID,State", NULL, "1+|COMPLETED", "JobID: bad job id '1+'"},
		{"JobID,State", NULL, "1 |COMPLETED", "JobID: bad job id '1 '"},
		/* not UTF-8: PostgreSQL would refuse the whole batch; byte counted from 1 */
		{"JobID,JobName", NULL, "1|caf\xe9", "not valid UTF-8 (byte 6)"},
		{"JobID,JobName,WCKey", NULL, "1|caf\xe9|wk", "not valid UTF-8 (byte 6)"},
		{"JobID,JobName", NULL, "1|\xed\xa0\x80", "not valid UTF-8 (byte 3)"}, /* U+D800 */
		{"JobID,JobName", NULL, "1|\xc0\xaf", "not valid UTF-8 (byte 3)"},     /* overlong '/' */
		{"JobID,JobName", "☃", "1☃\xe2\x98", "not valid UTF-8 (byte 5)"},      /* half a snowman */
		{"JobID,Account", NULL, "1|\xff", "not valid UTF-8 (byte 3)"},
		/* integer columns: 2^31 - 1 is the largest a count may be */
		{"JobID,NNodes", NULL, "1|99999999999", "NNodes: bad number (over 2147483647) '99999999999'"},
		{"JobID,NCPUS", NULL, "1|2147483648", "NCPUS: bad number (over 2147483647) '2147483648'"},
		{"JobID,ReqCPUS", NULL, "1|4294967296", "ReqCPUS: bad number (over 2147483647) '4294967296'"},
		{"JobID,State", NULL, "1+2147483648|COMPLETED", "JobID: bad job id '1+2147483648'"},
		{"JobID,Submit", NULL, "1|0000-01-01T00:00:00", "Submit: bad time '0000-01-01T00:00:00'"},
		{"JobID,AllocTRES", NULL, "1|gres/gpu=999999999999999999",
		 "AllocTRES: bad TRES (over 1000000 GPUs) 'gres/gpu=999999999999999999'"},
		{"JobID,ReqTRES", NULL, "1|gres/gpu=1000001", "ReqTRES: bad TRES (over 1000000 GPUs) 'gres/gpu=1000001'"},
	};
	(void)state;
	for (size_t i = 0; i < GL_ARRAY_LEN(cases); i++) {
		struct gl_sacct_layout lay;
		struct gl_sacct_rec rec;
		struct gl_err err = {0};
		int rc;

		layout(&lay, cases[i].fields, cases[i].delim);
		rc = gl_sacct_parse_line(&lay, cases[i].line, strlen(cases[i].line), &rec, &err);
		if (rc != -GL_EINVAL || err.code != GL_EINVAL || strcmp(err.msg, cases[i].want_msg) != 0)
			fail_msg("'%s': rc %d msg '%s', want '%s'", cases[i].line, rc, err.msg,
				 cases[i].want_msg);
		gl_sacct_layout_fini(&lay);
	}
}

/* Tasks a pending array meta row stands for, counted by hand. */
static void test_array_tasks(void **state)
{
	static const struct {
		const char *job_id;
		int64_t tasks;
		int partial;
	} cases[] = {
		{"4103947_[1-3]", 3, 0},                 /* xdmod */
		{"4103947_[9-11,13,16-20]", 9, 0},       /* 3 + 1 + 5 */
		{"7000_[1-100]", 100, 0},
		{"123_[5]", 1, 0},
		{"123_[1,3,5-9]", 7, 0},                 /* 1 + 1 + 5 */
		{"123_[1-99:2]", 50, 0},                 /* 1, 3, ..., 99 */
		{"123_[0-15:4]", 4, 0},                  /* 0, 4, 8, 12 */
		{"123_[1-100%10]", 100, 0},              /* the limit runs 10 at a time: still 100 */
		{"123_[1-3,7-8:1%2]", 5, 0},
		{"123_[0-3999999]", 4000000, 0},         /* MaxArraySize's ceiling */
		/* cut short: lower bounds */
		{"123_[1-3,5...", 4, 1},
		{"123_[1-3,5,7-...", 5, 1},              /* 7 at least */
		{"123_[1-3,", 3, 1},
		{"123_[1-10", 10, 1},                    /* perhaps 1-100 */
		{"123_[0-100:2", 1, 1},                  /* perhaps :25: the step is not trusted */
		{"123_[5-1]", 1, 1},                     /* not a range: one task */
		{"123_[", 1, 1},
		{"123_[x]", 1, 1},
	};
	struct gl_sacct_layout lay;
	(void)state;
	layout(&lay, "JobID,State", NULL);
	for (size_t i = 0; i < GL_ARRAY_LEN(cases); i++) {
		struct gl_sacct_rec rec;
		char line[128];
		snprintf(line, sizeof line, "%s|PENDING", cases[i].job_id);
		parse1(&lay, line, &rec);
		if (rec.kind != GL_SACCT_ARRAY_PENDING || rec.array_tasks != cases[i].tasks ||
		    rec.array_tasks_partial != cases[i].partial)
			fail_msg("'%s': kind %d tasks %lld partial %d, want %lld %d", cases[i].job_id, rec.kind,
				 (long long)rec.array_tasks, rec.array_tasks_partial, (long long)cases[i].tasks,
				 cases[i].partial);
	}
	{
		/* not an array meta row: nothing */
		struct gl_sacct_rec rec;
		parse1(&lay, "7000_5|PENDING", &rec);
		assert_int_equal(rec.array_tasks, 0);
		assert_int_equal(rec.array_tasks_partial, 0);
	}
	{
		/* a task id no Slurm makes (MaxArraySize <= 4000001): the line is
		 * refused, saying why; "77_[0-4294967296]" was 2,147,483,647
		 * pending tasks, unflagged */
		static const char *const bad[] = {"77_[0-4294967296]", "77_[4000001]", "77_[1-3,5-4000001]",
						  "77_4294967296", "77_4000001"};
		for (size_t i = 0; i < GL_ARRAY_LEN(bad); i++) {
			struct gl_sacct_rec rec;
			struct gl_err err = {0};
			char line[128];
			snprintf(line, sizeof line, "%s|PENDING", bad[i]);
			assert_int_equal(gl_sacct_parse_line(&lay, line, strlen(line), &rec, &err), -GL_EINVAL);
			if (!strstr(err.msg, "JobID: bad job id (an array task id over 4000000"))
				fail_msg("%s: %s", bad[i], err.msg);
		}
		struct gl_sacct_rec rec;
		parse1(&lay, "77_[0-4000000]|PENDING", &rec);
		assert_int_equal(rec.array_tasks, 4000001);
		parse1(&lay, "77_4000000|RUNNING", &rec);
		assert_int_equal(rec.array_task_id, 4000000);
	}
	gl_sacct_layout_fini(&lay);
}

/* The largest counts the integer columns hold still parse. */
static void test_int_limits(void **state)
{
	struct gl_sacct_layout lay;
	struct gl_sacct_rec rec;
	(void)state;
	layout(&lay, "JobID,NNodes,NCPUS,ReqCPUS", NULL);
	parse1(&lay, "1+2147483647|2147483647|2147483647|2147483647", &rec);
	assert_int_equal(rec.het_offset, 2147483647);
	assert_int_equal(rec.nnodes, 2147483647);
	assert_int_equal(rec.ncpus, 2147483647);
	assert_int_equal(rec.req_cpus, 2147483647);
	gl_sacct_layout_fini(&lay);
}

/* Each text column is held to its own bound (include/gl/bounds.h) in any
 * column order: at the bound the line parses, one byte over it is refused
 * naming the column and the bound; an ignored column has none. */
static void test_text_bounds(void **state)
{
	static const struct {
		const char *name;
		enum gl_bounds k;
	} cols[] = {
		{"JobName", GL_BOUNDS_JOB_NAME}, {"User", GL_BOUNDS_USER}, {"Partition", GL_BOUNDS_ACCOUNT},
		{"Cluster", GL_BOUNDS_CLUSTER}, {"NodeList", GL_BOUNDS_NODE_LIST}, {"State", GL_BOUNDS_TEXT},
	};
	struct gl_sacct_layout lay;
	size_t cap = gl_bounds_max(GL_BOUNDS_NODE_LIST) + 16384;
	char *line = malloc(cap), *big = malloc(cap), want[160];
	(void)state;
	assert_non_null(line);
	assert_non_null(big);
	memset(big, 'a', cap);
	layout(&lay, "JobName,User,Partition,AveDiskRead,JobID,Cluster,NodeList,State", "|");
	for (size_t c = 0; c < sizeof cols / sizeof cols[0]; c++) {
		for (size_t over = 0; over <= 1; over++) {
			size_t len = gl_bounds_max(cols[c].k) + over;
			struct gl_sacct_rec rec;
			struct gl_err err = {0};
			int n = 0;
			const char *v[8] = {"train", "alice", "gpu", "", "42", "fox", "n1", "COMPLETED"};
			static const int at[] = {0, 1, 2, 5, 6, 7};

			line[0] = '\0';
			for (int i = 0; i < 8; i++) {
				if (i == 3) /* AveDiskRead: ignored, never bounded */
					n += snprintf(line + n, cap - (size_t)n, "%.*s|", 5000, big);
				else if (i == at[c])
					n += snprintf(line + n, cap - (size_t)n, "%.*s%s", (int)len, big, i < 7 ? "|" : "");
				else
					n += snprintf(line + n, cap - (size_t)n, "%s%s", v[i], i < 7 ? "|" : "");
			}
			if (!over) {
				if (gl_sacct_parse_line(&lay, line, (size_t)n, &rec, &err) != 0)
					fail_msg("%s at its bound: %s", cols[c].name, err.msg);
				continue;
			}
			assert_int_not_equal(gl_sacct_parse_line(&lay, line, (size_t)n, &rec, &err), 0);
			snprintf(want, sizeof want, "%s: %zu bytes, over the %zu-byte bound of", cols[c].name, len,
				 len - 1);
			if (!strstr(err.msg, want))
				fail_msg("%s: got '%s', want '%s'", cols[c].name, err.msg, want);
		}
	}
	gl_sacct_layout_fini(&lay);
	free(line);
	free(big);
}

static void test_layout(void **state)
{
	static const struct {
		const char *fields;
		const char *delim;
		const char *want_msg; /* NULL = ok */
	} cases[] = {
		{NULL, NULL, NULL},
		{"jobid,JOBIDRAW,Account,foo,JobName%50", "|", NULL},
		{"JobID, State ", "|", NULL},
		{"JobID,,State", "|", "fields: empty field name at position 2"},
		{"JobID,State,", "|", "fields: empty field name at position 3"},
		{"JobID,State,jobid", "|", "fields: duplicate field 'jobid'"},
		{"JobID", "12345678", "delimiter: longer than 7 bytes"},
		{"JobID", "\n", "delimiter: may not contain a line break"},
		/* jobs.job_id is NOT NULL */
		{"JobIDRaw,State,JobName", "|", "fields: JobID missing (every job row needs it)"},
		{"State", "|", "fields: JobID missing (every job row needs it)"},
	};
	struct gl_sacct_layout lay;
	char many[1024] = "JobID";
	struct gl_err err = {0};
	(void)state;
	for (size_t i = 0; i < GL_ARRAY_LEN(cases); i++) {
		int rc;
		memset(&err, 0, sizeof err);
		rc = gl_sacct_layout_init(&lay, cases[i].fields, cases[i].delim, &err);
		if (cases[i].want_msg ? (rc != -GL_EINVAL || strcmp(err.msg, cases[i].want_msg) != 0)
				      : rc != 0)
			fail_msg("layout '%s': rc %d '%s'", cases[i].fields ? cases[i].fields : "(default)",
				 rc, err.msg);
	}
	layout(&lay, NULL, NULL);
	assert_int_equal(lay.ncols, 30);
	assert_int_equal(lay.jobname_col, 29);
	assert_int_equal(lay.pos[GL_SACCT_F_DBINDEX], 26);
	assert_string_equal(lay.delim, "|");
	layout(&lay, "jobid,JOBIDRAW,Account,foo,JobName%50", "☃");
	assert_int_equal(lay.ncols, 5);
	assert_int_equal(lay.col[3], GL_SACCT_F_IGNORED);
	assert_int_equal(lay.pos[GL_SACCT_F_JOBIDRAW], 1);
	assert_int_equal(lay.jobname_col, 4);
	assert_int_equal(lay.delim_len, 3);
	for (int i = 1; i < GL_SACCT_MAX_COLS + 1; i++)
		strcat(many, ",x");
	assert_int_equal(gl_sacct_layout_init(&lay, many, NULL, &err), -GL_EINVAL);
	assert_string_equal(err.msg, "fields: more than 64 fields");
}

/* Delimiters: --parsable trailing delimiter, UTF-8 delimiter, JobName holding
 * the delimiter when last (all hand-written around real testbed values). */
static void test_delimiters(void **state)
{
	static const struct {
		const char *fields;
		const char *delim;
		const char *line;
		const char *want_name;
		const char *want_wckey;
	} cases[] = {
		{"JobID,JobName,WCKey", NULL, "1|cpu_only|", "cpu_only", ""},
		{"JobID,JobName,WCKey", NULL, "1|cpu_only||", "cpu_only", ""}, /* --parsable */
		{"JobID,JobName,WCKey", NULL, "1|cpu_only|wk\r", "cpu_only", "wk"},
		{"JobID,WCKey,JobName", NULL, "1|wk|a|b|c", "a|b|c", "wk"},
		{"JobID,WCKey,JobName", NULL, "1|wk|a|b|", "a|b", "wk"}, /* --parsable */
		{"JobID,WCKey,JobName", NULL, "1|wk|", "", "wk"},
		{"JobID,WCKey,JobName", NULL, "1|wk||", "", "wk"},
		{"JobID,WCKey,JobName", "☃", "1☃wk☃a☃b☃", "a☃b", "wk"},
		{"JobID,WCKey,JobName", "☃", "1☃wk☃snow|man☃", "snow|man", "wk"},
		{"JobID,WCKey,JobName", "☃", "1☃wk☃aàb", "aàb", "wk"},
		/* U+2600 shares its first two bytes with the snowman U+2603 */
		{"JobID,JobName,WCKey", "☃", "1☃\xe2\x98\x80☃wk☃", "\xe2\x98\x80", "wk"},
		{"JobID,JobName,WCKey", "::", "1::a:b::wk", "a:b", "wk"},
		{"JobID,WCKey,JobName", "☃", "1☃wk☃☃☃", "☃", "wk"},
		/* long enough for the 16-byte vector scan, delimiters across chunk edges */
		{"JobID,WCKey,JobName", "☃", "1☃wkwkwkwkwkwkwkwkwkwkwkwk☃aaaaaaaaaaaaa☃bbbbbbbbbbbbbbb☃c☃",
		 "aaaaaaaaaaaaa☃bbbbbbbbbbbbbbb☃c", "wkwkwkwkwkwkwkwkwkwkwkwk"},
		/* ... and U+2014 its first byte */
		{"JobID,JobName,WCKey", "☃", "1☃aaaaaaaaaaa\xe2\x98\x80" "aaaaaaaaaaaaaaaaa\xe2\x80\x94☃wwwwwwwwwwwwwwwwwwwwwwwwww",
		 "aaaaaaaaaaa\xe2\x98\x80" "aaaaaaaaaaaaaaaaa\xe2\x80\x94", "wwwwwwwwwwwwwwwwwwwwwwwwww"},
		{"JobID,JobName,WCKey", NULL, "1|aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa|wwwwwwwwwwwwwwwwwwwwwwwwwwwwwwww|",
		 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "wwwwwwwwwwwwwwwwwwwwwwwwwwwwwwww"},
	};
	(void)state;
	for (size_t i = 0; i < GL_ARRAY_LEN(cases); i++) {
		struct gl_sacct_layout lay;
		struct gl_sacct_rec rec;
		layout(&lay, cases[i].fields, cases[i].delim);
		parse1(&lay, cases[i].line, &rec);
		assert_str(rec.job_name, cases[i].want_name);
		assert_str(rec.wckey, cases[i].want_wckey);
		assert_int_equal(rec.base_job_id, 1);
		assert_null(rec.account.p); /* absent column */
		assert_int_equal(rec.elapsed_s, -1);
		assert_int_equal(rec.start_s, GL_TIME_NONE);
	}
}

/* ---- whole real records --------------------------------------------------- */

static void test_testbed_records(void **state)
{
	/* testbed sacct_alloc.txt line 12 (cancelled while pending) and 17 (het component) */
	static const char pend[] =
		"12|12|testgpu|v100|normal|teamb|carol|2003|carol|2003|2026-11-22T16:04:04|"
		"2026-11-22T16:04:04|None|2026-11-22T16:04:09|00:00:00|0|0:0|CANCELLED by 2003|2|2|2|"
		"2000M|billing=2,cpu=2,gres/gpu=4,mem=2000M,node=2||00:02:00|None assigned|"
		"cancel_pending|20|00:00:00|";
	static const char het[] =
		"14+1|15|testgpu|v100|normal|teama|alice|2001|alice|2001|2026-11-22T16:04:06|"
		"2026-11-22T16:04:06|2026-11-22T16:05:28|2026-11-22T16:05:48|00:00:20|20|0:0|COMPLETED|"
		"1|1|1|1000M|billing=1,cpu=1,gres/gpu=1,mem=1000M,node=1|billing=1,cpu=1,"
		"gres/gpu:v100=1,gres/gpu=1,mem=1000M,node=1|00:02:00|gpu03|hetjob|23|00:00:00|";
	struct gl_sacct_layout lay;
	struct gl_sacct_rec r;
	(void)state;
	testbed_layout(&lay);

	parse1(&lay, pend, &r);
	assert_int_equal(r.kind, GL_SACCT_ALLOCATION);
	assert_int_equal(r.base_job_id, 12);
	assert_int_equal(r.job_id_raw_num, 12);
	assert_str(r.cluster, "testgpu");
	assert_str(r.partition, "v100");
	assert_str(r.qos, "normal");
	assert_str(r.account, "teamb");
	assert_str(r.group, "carol");
	assert_str(r.user, "carol");
	assert_int_equal(r.uid, 2003);
	assert_int_equal(r.gid, 2003);
	assert_int_equal(r.submit_s, 1795363444);
	assert_int_equal(r.eligible_s, 1795363444);
	assert_int_equal(r.start_s, GL_TIME_NONE);
	assert_int_equal(r.end_s, 1795363449);
	assert_int_equal(r.elapsed_s, 0);
	assert_str(r.exit_code, "0:0");
	assert_int_equal(r.state, GL_SACCT_JS_CANCELLED);
	assert_int_equal(r.state_by_uid, 2003);
	assert_int_equal(r.nnodes, 2);
	assert_int_equal(r.ncpus, 2);
	assert_int_equal(r.req_cpus, 2);
	assert_int_equal(r.req_mem_mb, 2000);
	assert_int_equal(r.gpus_req, 4);
	assert_int_equal(r.gpus_alloc, 0);
	assert_string_equal(r.gpu_type, "");
	assert_str(r.alloc_tres, "");
	assert_int_equal(r.timelimit_s, 120);
	assert_str(r.node_list, "None assigned");
	assert_str(r.job_name, "cancel_pending");
	assert_int_equal(r.db_index, 20);
	assert_int_equal(r.suspended_s, 0);
	assert_str(r.wckey, "");

	parse1(&lay, het, &r);
	assert_int_equal(r.kind, GL_SACCT_ALLOCATION);
	assert_int_equal(r.base_job_id, 14);
	assert_int_equal(r.het_offset, 1);
	assert_int_equal(r.array_task_id, -1);
	assert_int_equal(r.job_id_raw_num, 15);
	assert_int_equal(r.gpus_alloc, 1);
	assert_int_equal(r.gpus_req, 1);
	assert_string_equal(r.gpu_type, "v100");
	assert_int_equal(r.elapsed_s, 20);
	assert_int_equal(r.end_s - r.start_s, 20);
}

/* The sreport oracle: Σ ElapsedRaw × gres/gpu per account/user over the -X rows. */
struct oracle {
	const char *account, *user;
	int64_t want, got;
};

struct oracle_ctx {
	struct oracle *o;
	size_t n;
	int64_t total, a100, v100;
	int kinds[3], requeued, allocs;
};

static void oracle_rec(const struct gl_sacct_rec *r, void *ud)
{
	struct oracle_ctx *c = ud;
	int64_t gs = r->elapsed_s * r->gpus_alloc;

	c->kinds[r->kind]++;
	if (r->kind != GL_SACCT_ALLOCATION)
		return;
	c->allocs++;
	if (r->state == GL_SACCT_JS_REQUEUED)
		c->requeued++;
	for (size_t i = 0; i < c->n; i++)
		if (str_is(r->account, c->o[i].account) && str_is(r->user, c->o[i].user))
			c->o[i].got += gs;
	c->total += gs;
	if (strcmp(r->gpu_type, "a100") == 0)
		c->a100 += gs;
	else if (strcmp(r->gpu_type, "v100") == 0)
		c->v100 += gs;
	else
		assert_int_equal(gs, 0);
}

static void check_oracle(const char *path, int want_lines, int want_steps)
{
	struct oracle o[] = {
		{"teama", "alice", 151, 0}, {"teama", "bob", 105, 0}, {"teamb", "bob", 60, 0},
		{"teamb", "carol", 330, 0}, {"teamc", "dave", 356, 0},
	};
	struct oracle_ctx c = {.o = o, .n = GL_ARRAY_LEN(o)};
	struct gl_sacct_layout lay;

	testbed_layout(&lay);
	assert_int_equal(parse_file(path, &lay, oracle_rec, &c), want_lines);
	for (size_t i = 0; i < GL_ARRAY_LEN(o); i++)
		if (o[i].got != o[i].want)
			fail_msg("%s/%s: %lld GPU-s, sreport says %lld", o[i].user, o[i].account,
				 (long long)o[i].got, (long long)o[i].want);
	assert_int_equal(c.total, 1002);
	assert_int_equal(c.a100, 816);
	assert_int_equal(c.v100, 186);
	assert_int_equal(c.allocs, 20);
	assert_int_equal(c.requeued, 1);
	assert_int_equal(c.kinds[GL_SACCT_STEP], want_steps);
	assert_int_equal(c.kinds[GL_SACCT_ARRAY_PENDING], 0);
}

static void test_testbed_oracle_alloc(void **state)
{
	(void)state;
	check_oracle(FIX "testbed/sacct_alloc.txt", 20, 0);
}

static void test_testbed_oracle_steps(void **state)
{
	(void)state;
	/* steps must never add to the sums even though they carry gres/gpu */
	check_oracle(FIX "testbed/sacct_steps.txt", 42, 22);
}

struct counts {
	int alloc, step, pending, gpu_alloc, by_uid, no_start, typed[8], unknown_state;
	int64_t gpus, gpu_seconds, max_mem_mb;
};

static const char *const sonar_types[] = {"", "a100", "a100_80", "l40s", "a40", "rtx30"};

static void count_rec(const struct gl_sacct_rec *r, void *ud)
{
	struct counts *c = ud;

	if (r->kind == GL_SACCT_STEP) {
		c->step++;
		return;
	}
	if (r->kind == GL_SACCT_ARRAY_PENDING)
		c->pending++;
	else
		c->alloc++;
	if (r->state_by_uid >= 0)
		c->by_uid++;
	if (r->state == GL_SACCT_JS_UNKNOWN)
		c->unknown_state++;
	if (r->start_s == GL_TIME_NONE)
		c->no_start++;
	if (r->req_mem_mb > c->max_mem_mb)
		c->max_mem_mb = r->req_mem_mb;
	if (r->gpus_alloc > 0) {
		c->gpu_alloc++;
		c->gpus += r->gpus_alloc;
		if (r->elapsed_s > 0)
			c->gpu_seconds += r->elapsed_s * r->gpus_alloc;
		for (size_t i = 0; i < GL_ARRAY_LEN(sonar_types); i++)
			if (strcmp(r->gpu_type, sonar_types[i]) == 0)
				c->typed[i]++;
	}
}

static void test_sonar(void **state)
{
	struct gl_sacct_layout lay;
	struct counts c = {0};
	(void)state;
	layout(&lay, SONAR_FIELDS, "|");
	assert_int_equal(parse_file(FIX "sonar/sacct_output.txt", &lay, count_rec, &c), 301);
	/* expected values counted independently with awk over the fixture */
	assert_int_equal(c.alloc, 122);
	assert_int_equal(c.step, 179);
	assert_int_equal(c.gpu_alloc, 65);
	assert_int_equal(c.gpus, 83);
	assert_int_equal(c.gpu_seconds, 3360033);
	assert_int_equal(c.by_uid, 5);
	assert_int_equal(c.typed[0], 43); /* untyped only */
	assert_int_equal(c.typed[1], 3);
	assert_int_equal(c.typed[2], 6);
	assert_int_equal(c.typed[3], 5);
	assert_int_equal(c.typed[4], 4);
	assert_int_equal(c.typed[5], 4);

	memset(&c, 0, sizeof c);
	assert_int_equal(parse_file(FIX "sonar/sacct-output.txt", &lay, count_rec, &c), 96);
	assert_int_equal(c.alloc, 29);
	assert_int_equal(c.step, 67);
	assert_int_equal(c.gpu_alloc, 16);
	assert_int_equal(c.gpus, 16);
	assert_int_equal(c.gpu_seconds, 3007);
}

static void test_hb_jobinfo(void **state)
{
	struct gl_sacct_layout lay;
	struct counts c = {0};
	struct gl_sacct_rec r;
	/* hb-jobinfo/sacct.txt, the 7965768 allocation line, cut to its first 24 fields
	 * (hand-shortened layout; values verbatim) */
	static const char line[] =
		"7965768☃A9E0GMQ7UDQT2YW☃user427☃gpulong☃v100gpu16☃1☃8☃☃CANCELLED by 10314909☃"
		"2024-04-04T19:29:45☃2024-04-04T21:45:17☃2024-04-05T13:13:39☃1-23:59:00☃15:28:22☃"
		"15:33:59☃5-03:46:56☃15:10:50☃23:08.358☃10G☃☃☃billing=1,cpu=1,gres/gpu=1,mem=10G,"
		"node=1☃billing=8,cpu=8,gres/gpu:v100=1,gres/gpu=1,mem=10G,node=1☃";
	(void)state;

	layout(&lay, HB_FIELDS, "☃");
	assert_int_equal(parse_file(FIX "hb-jobinfo/sacct.txt", &lay, count_rec, &c), 242);
	assert_int_equal(c.alloc, 100);
	assert_int_equal(c.step, 142);
	assert_int_equal(c.gpu_alloc, 9);
	assert_int_equal(c.gpus, 14);
	assert_int_equal(c.by_uid, 8);

	layout(&lay,
	       "JobID,JobName,User,Partition,NodeList,NNodes,NCPUs,NTasks,State,Submit,Start,End,"
	       "Timelimit,Elapsed,TotalCPU,CPUTime,UserCPU,SystemCPU,ReqMem,MaxRSS,MaxVMSize,ReqTRES,"
	       "AllocTRES",
	       "☃");
	parse1(&lay, line, &r);
	assert_str(r.job_name, "A9E0GMQ7UDQT2YW");
	assert_str(r.alloc_tres, "billing=8,cpu=8,gres/gpu:v100=1,gres/gpu=1,mem=10G,node=1");
	assert_int_equal(r.state, GL_SACCT_JS_CANCELLED);
	assert_int_equal(r.state_by_uid, 10314909);
	assert_int_equal(r.end_s, 1712322819);
	assert_int_equal(r.elapsed_s, 15 * 3600 + 28 * 60 + 22);
	assert_int_equal(r.timelimit_s, 86400 + 23 * 3600 + 59 * 60);
	assert_int_equal(r.gpus_alloc, 1);
	assert_int_equal(r.gpus_req, 1);
	assert_string_equal(r.gpu_type, "v100");
	assert_int_equal(r.req_mem_mb, 10240);
}

static void test_xdmod(void **state)
{
	static const char *const files[] = {
		"accounting-logs.log", "accounting-logs-with-job-arrays.log", "non-ended-job-state.log",
		"unknown-job-state.log", "utf8-multibyte-chars.log", "excerpt-phillips-pozidriv.log",
	};
	struct gl_sacct_layout lay;
	struct counts c = {0};
	int lines = 0;
	(void)state;
	layout(&lay, XDMOD_FIELDS, "|");
	for (size_t i = 0; i < GL_ARRAY_LEN(files); i++) {
		char path[256];
		snprintf(path, sizeof path, FIX "xdmod/%s", files[i]);
		lines += parse_file(path, &lay, count_rec, &c);
	}
	assert_int_equal(lines, 4 + 6 + 2 + 2 + 1 + 6);
	assert_int_equal(c.pending, 5);
	assert_int_equal(c.alloc, 16);
	assert_int_equal(c.step, 0);
	assert_int_equal(c.unknown_state, 2);
	assert_int_equal(c.gpu_alloc, 2);      /* 5692623 (gres/gpu=2) and 163485 */
	assert_int_equal(c.gpus, 4);
	assert_int_equal(c.max_mem_mb, 768000); /* 3000Mc x 256 CPUs, not the 2^31 bug */
}

static void test_aws(void **state)
{
	static const struct {
		const char *file;
		int partition, lines, steps;
	} files[] = {
		{"array_job_846.psv", 0, 16, 8},
		{"issue17_reqmem_0n_and_start_none.psv", 0, 4, 2},
		{"issue59_node_fail_with_partition.psv", 1, 2, 1},
		{"issue5_pending_unknown_times.psv", 0, 1, 0},
		{"issue61_cancelled_by_uid_2T_mem.psv", 1, 2, 0},
		{"issue63_interactive_step.psv", 0, 1, 1},
		{"multi_node_job_845.psv", 0, 2, 1},
	};
	struct gl_sacct_layout plain, withpart;
	(void)state;
	layout(&plain, AWS_FIELDS, "|");
	layout(&withpart, AWS_FIELDS ",Partition", "|");
	for (size_t i = 0; i < GL_ARRAY_LEN(files); i++) {
		char path[256];
		struct counts c = {0};
		snprintf(path, sizeof path, FIX "aws-hpc-cost-simulator/%s", files[i].file);
		assert_int_equal(parse_file(path, files[i].partition ? &withpart : &plain, count_rec, &c),
				 files[i].lines);
		assert_int_equal(c.step, files[i].steps);
	}
	/* issue5: PENDING with Unknown times, parsed into NONE */
	{
		struct gl_sacct_rec r;
		parse1(&plain, "PENDING|31259618|1|5G|1||2022-04-21T11:24:28|2022-04-21T11:24:28|Unknown|"
			       "00:00:00|00:00:00|Unknown|0:0|0:0|0|1||||||00:00:00|00:00:00|00:00:00|00:00:00",
		       &r);
		assert_int_equal(r.state, GL_SACCT_JS_PENDING);
		assert_int_equal(r.start_s, GL_TIME_NONE);
		assert_int_equal(r.end_s, GL_TIME_NONE);
		assert_int_equal(r.req_mem_mb, 5120);
		assert_int_equal(r.elapsed_s, 0);
	}
}

/* hand-written: the Comment column (sbatch --comment, a run's key for
 * runs[].by comment / tag) is read wherever --format puts it; empty when
 * the site does not store comments. */
static void test_comment_column(void **state)
{
	struct gl_sacct_layout lay;
	struct gl_sacct_rec rec;
	(void)state;
	layout(&lay, "JobID,JobIDRaw,State,Comment,JobName", "|");
	parse1(&lay, "51|51|COMPLETED|ckpt run=bert-7|train", &rec);
	assert_str(rec.comment, "ckpt run=bert-7");
	assert_str(rec.job_name, "train");
	parse1(&lay, "52|52|COMPLETED||train", &rec);
	assert_int_equal(rec.comment.len, 0);
	gl_sacct_layout_fini(&lay);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_time),
		cmocka_unit_test(test_duration),
		cmocka_unit_test(test_tres),
		cmocka_unit_test(test_jobid),
		cmocka_unit_test(test_state),
		cmocka_unit_test(test_reqmem),
		cmocka_unit_test(test_bad_lines),
		cmocka_unit_test(test_int_limits),
		cmocka_unit_test(test_array_tasks),
		cmocka_unit_test(test_layout),
		cmocka_unit_test(test_text_bounds),
		cmocka_unit_test(test_delimiters),
		cmocka_unit_test(test_testbed_records),
		cmocka_unit_test(test_testbed_oracle_alloc),
		cmocka_unit_test(test_testbed_oracle_steps),
		cmocka_unit_test(test_sonar),
		cmocka_unit_test(test_comment_column),
		cmocka_unit_test(test_hb_jobinfo),
		cmocka_unit_test(test_xdmod),
		cmocka_unit_test(test_aws),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
