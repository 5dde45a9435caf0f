/* gpuledger test support: a fresh database per test program on the throwaway
 * cluster tests/run.sh starts, the real binary run as a child, the real
 * daemon on port 0, and HTTP requests with libcurl.
 *
 * Ownership: strings returned in struct fields are owned by the struct and
 * freed by the matching _fini/_stop function; gl_test_read_file's buffer and
 * gl_test_get_json's tree are the caller's (free, cJSON_Delete).
 *
 * Nothing here uses cmocka: the benchmarks link these objects too. Helpers
 * that can fail return NULL/-1 for the test to assert on, or exit.
 */
#ifndef GL_TESTLIB_H
#define GL_TESTLIB_H

#include <cjson/cJSON.h>
#include <libpq-fe.h>
#include <stddef.h>
#include <sys/types.h>

/* Environment set by tests/run.sh. */
const char *gl_test_bin(void);       /* $GL_TEST_BIN: build/gpuledger */
const char *gl_test_admin_dsn(void); /* $GL_TEST_ADMIN_DSN: superuser on the throwaway cluster */
const char *gl_test_app_dsn_base(void); /* $GL_TEST_APP_DSN: "host=... user=gpuledger" without dbname */
/* $GL_TEST_TIMEOUT_SCALE (1 to 100, default 1): how many times longer the
 * helpers here wait for a slow binary (GL_TEST_BIN under valgrind): the
 * daemon's start (20 s), its stop before SIGKILL (10 s) and one HTTP
 * request (30 s). Bounds that are a test's own assertion are not scaled. */
int gl_test_timeout_scale(void);

/* Drops and creates database `name` owned by the owner role
 * (gpuledger_owner), as `db start` makes the embedded one; fills dsn with
 * the application role's DSN for it. */
int gl_test_db_create(const char *name, char *dsn, size_t n);
/* Creates the database and runs the real `gpuledger migrate` against it. */
int gl_test_db_fresh(const char *name, char *dsn, size_t n);
/* The owner role's DSN for the database an application-role dsn names
 * (the same options, user gpuledger_owner): what migrations and the test
 * set-ups that change the schema (ALTER, TRUNCATE, VACUUM, ANALYZE) use.
 * 0, or -1 when dsn does not parse or is not the application role's. */
int gl_test_owner_dsn(const char *dsn, char *out, size_t n);

struct gl_test_out {
	int status;      /* exit status; 128+sig when killed */
	char *out;       /* stdout, NUL-terminated */
	char *err;       /* stderr excerpt */
};
/* Runs build/gpuledger with GPULEDGER_DSN=dsn (NULL: unset) and
 * GPULEDGER_MIGRATE_DSN its gl_test_owner_dsn (unset when there is none),
 * as a site with two roles configures it, and the given args
 * (NULL-terminated). Extra env "K=V" entries may be passed in env (they
 * come last: "GPULEDGER_MIGRATE_DSN=" runs migrations as dsn's role). */
int gl_test_run(const char *dsn, const char *const *env, struct gl_test_out *o, const char *arg0, ...);
void gl_test_out_fini(struct gl_test_out *o);
/* The same, for set-ups that only need the command to succeed: 0 when it
 * exits 0, else -1 with its stderr printed. */
int gl_test_cli(const char *dsn, const char *arg0, ...);
/* o[key] as an integer; LLONG_MIN (and a message) when it is no number,
 * which no expected figure equals. */
long long gl_test_jnum(const cJSON *o, const char *key);
/* A second session holding `LOCK TABLE table IN mode MODE` in an open
 * transaction (PQfinish releases it), as the owner role of an
 * application-role dsn (gl_test_owner_dsn: any mode on any table); NULL,
 * with a message, on failure. */
PGconn *gl_test_lock_table(const char *dsn, const char *table, const char *mode);

/* gl_test_cli with `--config cfg` first, no DSN and GL_PG_FAST=1 (an
 * embedded cluster of its own: the shard servers below). */
int gl_test_cli_cfg(const char *cfg, const char *arg0, ...);
/* A shard server for the sharding tests and benchmarks (docs/scale.md): a
 * private embedded cluster under dir made by the real `db init/start`,
 * migrated and made shard k (`shard init`). cfg gets its config file, dsn
 * the application role's conninfo with its password spelled out (what
 * `shard attach --dsn` takes: the central server reads no passfile of
 * ours). Stop it with gl_test_cli_cfg(cfg, "db", "stop", NULL). 0 or -1. */
int gl_test_shard_server(const char *dir, int k, char *cfg, size_t ncfg, char *dsn, size_t ndsn);
/* On the central database: postgres_fdw and USAGE on it for the
 * application role (a superuser's one-time step), then the real `shard
 * attach name --index k --dsn shard_dsn`. 0 or -1. */
int gl_test_shard_attach(const char *central_dsn, int k, const char *name, const char *shard_dsn);
/* The superuser of the shard server whose application dsn gl_test_shard_server
 * gave (its passfile has the password); NULL, said on stderr, when it
 * cannot connect. The caller PQfinish()es it. */
PGconn *gl_test_shard_superuser(const char *shard_dsn);
/* The server log of the embedded cluster of config file cfg (where `db
 * start` sends it) into path. 0 or -1. */
int gl_test_server_log(const char *cfg, char *path, size_t n);
/* Query helpers: first column of the first row as integer / text (static buffer). */
/* Runs one statement on a connection of its own: the rows it affected, -1
 * on error (printed). For test set-ups that write a few rows by SQL. */
long long gl_test_exec_dsn(const char *dsn, const char *sql);
/* 1 when sql ran on c (a command or rows), else 0 with the statement and
 * its error printed: for tests that hold their own connections. */
int gl_test_sql_ok(PGconn *c, const char *sql);
/* The same as the owner role of the database an application-role dsn
 * names (gl_test_owner_dsn): for set-ups that change the schema. */
long long gl_test_exec_owner(const char *dsn, const char *sql);
long long gl_test_qint(PGconn *c, const char *sql);
/* gl_test_qint on a connection of its own to dsn (-999999 when it fails). */
long long gl_test_qint_dsn(const char *dsn, const char *sql);
const char *gl_test_qstr(PGconn *c, const char *sql);
/* The same with the SQL made by printf (at most 2 KiB). */
long long gl_test_qintf(PGconn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *gl_test_qstrf(PGconn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

struct gl_test_daemon {
	pid_t pid;
	int port;
	char dir[256];
	char log[300];
	char token[64];     /* an admin token made by the real `token create`; "" if that failed */
	long long token_id;
};
/* Starts `gpuledger serve --listen 127.0.0.1:0 --port-file ...` with the
 * given config text (may be NULL) against dsn; waits until it listens.
 * Before that it migrates and creates an admin token (d->token), which
 * gl_test_http() then sends to this daemon's port by default. */
int gl_test_daemon_start(struct gl_test_daemon *d, const char *dsn, const char *config_yaml, const char *const *extra_args);
/* SIGTERM, wait; returns the exit status. */
int gl_test_daemon_stop(struct gl_test_daemon *d);
/* SIGTERM and a wait of at most bound_s seconds, then SIGKILL (the stop
 * tests' upper bound, never a timing assertion). Returns the exit status
 * (128 + signal when killed); *log gets the daemon's log (free()), *took
 * (may be NULL) the seconds the stop took. Cleans up as gl_test_daemon_stop. */
int gl_test_daemon_sigterm(struct gl_test_daemon *d, int bound_s, char **log, double *took);

struct gl_test_http {
	long status;
	char *body;
	size_t len;
	char *headers;
};
/* method "GET"/"POST"; body may be NULL. extra_headers: NULL-terminated "K: V" list or NULL.
 * Sends the admin token of the daemon started on port unless extra_headers
 * has its own "Authorization:" line (a bare "Authorization:" sends none). */
int gl_test_http(int port, const char *method, const char *path, const char *body, size_t body_len,
		 const char *const *extra_headers, struct gl_test_http *r);

struct gl_test_http_opts {
	const char *token;       /* NULL: the daemon's admin token */
	int no_token;            /* 1: no Authorization header at all */
	const char *source_addr; /* bind the client here (e.g. "127.0.0.7"); NULL: default */
};
int gl_test_http_ex(int port, const char *method, const char *path, const char *body, size_t body_len,
		    const char *const *extra_headers, const struct gl_test_http_opts *o, struct gl_test_http *r);

/* Runs the real `gpuledger token create --name N --role R [extra...]`
 * against dsn; the token goes to out (n >= 64), its id to *id (may be NULL). */
int gl_test_token_create(const char *dsn, const char *name, const char *role, const char *const *extra, char *out,
			 size_t n, long long *id);
void gl_test_http_fini(struct gl_test_http *r);
/* The value of response header name (compared without regard to case) in
 * r->headers, copied into out (n bytes); NULL when r has no such header. */
const char *gl_test_header(const struct gl_test_http *r, const char *name, char *out, size_t n);

/* Repo-relative fixture path check: aborts the test program with a message
 * when a fixture is missing (tests run from the repo root). */
const char *gl_test_fixture(const char *rel);
/* 1 when s[0..n) is strict UTF-8 (RFC 3629), by a decoder of its own (the
 * reference src/util/utf8.c is tested against). */
int gl_test_utf8_valid(const unsigned char *s, size_t n);
/* The whole file, NUL-terminated, its length in *len (len may be NULL);
 * exits the program with a message when it cannot be read. */
char *gl_test_read_file(const char *path, size_t *len);
/* The testbed's sacct field list (tests/fixtures/sacct/testbed/
 * sacct_fields.txt, one '|'-separated line) comma-separated, as --fields
 * takes it. 0, or -1 when it cannot be read. */
int gl_test_sacct_fields(char *out, size_t n);

/* GET path from the daemon on port: the parsed body when the status is
 * want_status, the Content-Type JSON and the body parses; else NULL, with
 * the status and body on stderr. */
cJSON *gl_test_get_json(int port, const char *path, long want_status);
/* GET path (with a bearer token unless NULL): the body, the caller's, when
 * the status is 200; else NULL, with the status and body on stderr. With
 * headers, the answer's headers too (the caller's; NULL when it failed). */
char *gl_test_get_body(int port, const char *path, const char *token, char **headers);
/* The element of root's array `array` whose string member `field` is
 * value, or NULL (borrowed from root). */
cJSON *gl_test_json_item(const cJSON *root, const char *array, const char *field, const char *value);

/* For the benchmarks: monotonic seconds, and a fatal error that names the
 * program ("bench_nodes: msg") and exits 1. */
double gl_test_now_s(void);
void gl_test_die(const char *msg) __attribute__((noreturn));
/* Process pid's CPU time so far (utime + stime, /proc/PID/stat) and peak
 * RSS (VmHWM, kB); 0 when unreadable. For the daemon benchmarks. */
void gl_test_proc_usage(pid_t pid, double *cpu_s, long *hwm_kb);
/* n (<= 200) timed GETs of path on the daemon of port: p50 and p99 in ms;
 * when body is not NULL it gets the first answer's body (the caller's to
 * free). -1 when one was not a 200. */
int gl_test_http_timed(int port, const char *path, int n, double *p50, double *p99, char **body);

/* The limit ingest benchmarks compare against: copies table's rows out to
 * tmpfile, empties the table (TRUNCATE as the owner role, c being the
 * application role's connection), and times a raw COPY of the same bytes back in
 * (same table, same indexes), after a CHECKPOINT through GL_TEST_ADMIN_DSN
 * (the application role may not run one). Returns seconds; dies on a
 * database error. */
double gl_test_copy_baseline(PGconn *c, const char *table, const char *cols, const char *tmpfile);

/* For the benchmarks: the seconds the real `gpuledger ingest sacct
 * --cluster cluster --file file --fields fields` took against dsn (its
 * summary on stderr); dies when it fails. */
double gl_test_time_ingest_sacct(const char *dsn, const char *cluster, const char *file, const char *fields);

/* SYNTHETIC: n finished untyped GPU jobs (gres/gpu=1, no GPU type) of
 * cluster "synth" as `sacct -P` lines in the testbed's field order
 * (gl_test_sacct_fields), job i (1-based, also its DBIndex) on node
 * gpu<i % 16, two digits>, ten minutes long, one every 7 s from
 * 2025-11-22. Their model is their node's (jobs.node_gpu_model). 0, or -1
 * when path cannot be written. */
int gl_test_synth_untyped_sacct(const char *path, int n);

/* The real Philly jobs of tests/fixtures/philly/sampled_jobs.json as
 * `sacct -P` lines with GL_TEST_PHILLY_FIELDS: one per job with a valid
 * submit <= start <= end (times UTC), Account = the job's VC, its user,
 * FAILED unless its status is "Pass", its GPU count as gres/gpu, NodeList
 * node_list (NULL: the job's node addresses), DBIndex and JobID = the line
 * number (1-based), JobName = the Philly job id. jobs[0..n) get the same
 * jobs in the same order (line k is jobs[k - 1]). Returns n, -1 on error. */
#define GL_TEST_PHILLY_FIELDS                                                                                      \
	"JobID,JobIDRaw,Cluster,Partition,Account,User,Submit,Eligible,Start,End,ElapsedRaw,State,ReqTRES,AllocTRES," \
	"NodeList,DBIndex,JobName"
struct gl_test_philly_job {
	char user[16], vc[16];
	long long submit, start, end, gpus;
	int failed; /* Philly status other than Pass: sacct state FAILED */
};
int gl_test_philly_to_sacct(const char *out_path, const char *node_list, struct gl_test_philly_job *jobs, int max);
/* A fresh database `name` (dsn filled as gl_test_db_fresh) holding those
 * jobs, ingested by the real `ingest sacct` as cluster "philly". 0 or -1. */
int gl_test_philly_db(const char *name, char *dsn, size_t n);

/* The messy fleet's jobs (tests/fixtures/messy/README.md) into dsn by the
 * real ingest: alpha's sacct poll that stops on 7 November with jobs open,
 * beta's three pod snapshots at their capture times. 0 or -1. */
int gl_test_messy_jobs(const char *dsn);
/* The messy fleet's cost model (README.md there): two a100 rate periods
 * (2.50 to 16 November, 3.00 from it), v100 1.20, any other model 1.00;
 * account teama's team vision until 4 November and nlp from it, teamb's
 * language, namespace vision-ns's vision. A YAML literal to append to. */
#define GL_TEST_MESSY_COST_YAML                                                              \
	"rates:\n"                                                                           \
	"  - model: a100\n    per_gpu_hour: \"2.50\"\n    to: 2026-11-16T00:00:00Z\n"          \
	"  - model: a100\n    per_gpu_hour: \"3.00\"\n    from: 2026-11-16T00:00:00Z\n"        \
	"  - model: v100\n    per_gpu_hour: \"1.20\"\n"                                        \
	"  - model: \"*\"\n    per_gpu_hour: \"1.00\"\n"                                       \
	"owners:\n"                                                                          \
	"  - match: account\n    value: teama\n    team: vision\n    to: 2026-11-04T00:00:00Z\n" \
	"  - match: account\n    value: teama\n    team: nlp\n    from: 2026-11-04T00:00:00Z\n"  \
	"  - match: account\n    value: teamb\n    team: language\n"                           \
	"  - match: namespace\n    value: vision-ns\n    team: vision\n"

/* A strict RFC 4180 reader for the tests, independent of src/util/csv.c:
 * records end with CRLF, quoted fields double their quotes, a bare quote in
 * an unquoted field is an error. cell[r][c] for c < ncols[r]. */
#define GL_TEST_CSV_MAX_COLS 40
struct gl_test_csv {
	size_t nrows, cap;
	size_t *ncols;
	char *(*cell)[GL_TEST_CSV_MAX_COLS];
};
/* 0, or -1 when s is not such CSV (or has more than GL_TEST_CSV_MAX_COLS
 * columns); t is filled either way, for gl_test_csv_free. */
int gl_test_csv_parse(const char *s, struct gl_test_csv *t);
void gl_test_csv_free(struct gl_test_csv *t);
/* The column of name in the header row, -1 when absent. */
int gl_test_csv_col(const struct gl_test_csv *t, const char *name);

/* A SYNTHETIC PodList of npods pods resampled (fixed seed) from the openb
 * snapshots in tests/fixtures/kube (run from the repo root), each with a
 * fresh uid and name, printed as `kubectl get pods -A -o json` prints it
 * (4-space indentation). Returns malloc'd text the caller frees; *len its
 * size. Dies when the fixtures are missing. */
char *gl_test_kube_synth_doc(int npods, size_t *len);

/* A real scrape with some values changed: pairs is a NULL-terminated list
 * of ("series", "value"), a series being a sample line's text up to the
 * space before its value (name{labels}); every line of text that is such
 * a series gets the value instead of its own, the others are kept as they
 * are. For sequences of scrapes made from one real scrape. The caller
 * frees the result. */
char *gl_test_scrape_with(const char *text, const char *const *pairs);
/* Writes text to path: 0, or -1. */
int gl_test_write_file(const char *path, const char *text);
/* Whether buf, filled with '#' before a formatter wrote want into it with
 * size n, holds what snprintf would: nothing written when n is 0, else
 * want cut to n - 1 bytes and its NUL, and buf[n] still '#'. 0 when it
 * does, else -1 with the difference on stderr. */
int gl_test_cut_ok(const char *buf, size_t n, const char *want);

/* Raw sockets, for what an HTTP client library will not send (a request
 * line too long, garbage, a header a byte at a time). */
/* A TCP connection to 127.0.0.1:port from source address from (NULL: any);
 * the descriptor, or -1 (errno set). */
int gl_test_connect_from(int port, const char *from);
/* Sends len bytes of req on a new connection from `from`, then reads the
 * answer for at most timeout_ms: its HTTP status, 0 when the server closed
 * without one, -1 on a connect or send error or a timeout. */
int gl_test_raw_request(int port, const char *from, const char *req, size_t len, int timeout_ms);
/* 1 when the server has closed fd (EOF or a reset) within timeout_ms,
 * reading and dropping whatever it sent. */
int gl_test_wait_closed(int fd, int timeout_ms);
/* The daemon's peak resident set (VmHWM of /proc/PID/status), kB; -1. */
long gl_test_peak_rss_kb(int pid);
/* A superuser connection to dsn's database (NULL, with a message, on failure). */
PGconn *gl_test_superuser_conn(const char *dsn);
/* What a database superuser can do to the audit log: with the triggers
 * off, rewrite row seq's actor and recompute every hash from it on, in one
 * transaction, so the chain is consistent again (only an anchor published
 * before can tell). 0, or -1 with a message. */
int gl_test_audit_recompute(const char *dsn, long long seq, const char *actor);

/* For the benchmarks: n synthetic GPU jobs in cluster 1 ('synth', made
 * here), starts spread evenly from `from` over `span` (timestamptz and
 * interval text), 5 min to 2 days long, 1-8 GPUs, a100 or h100 (every
 * third), 200 accounts, 2,000 users, 1,250 nodes; then ANALYZE. Dies on a
 * database error. */
void gl_test_synth_jobs(PGconn *c, const char *dsn, long n, const char *from, const char *span);
/* gl_test_synth_jobs made into runs of 4 under runs: [{by: name_user}]:
 * job g named train-(g % (n/4)) of user u((g % (n/4)) % 2000), so every 4
 * jobs spread over the span are one run (/v1/runs' tests and benchmark);
 * with failed_every > 0 every such job FAILED. */
void gl_test_synth_runs(PGconn *c, const char *dsn, long n, const char *from, const char *span, int failed_every);
/* The config those runs are read with: the two models' rates, and the
 * rule that makes each 4 jobs one run. */
#define GL_TEST_SYNTH_RATES                                                                                           \
	"rates:\n"                                                                                                    \
	"  - model: a100\n    per_gpu_hour: \"2.50\"\n"                                                               \
	"  - model: h100\n    per_gpu_hour: \"4.00\"\n"
#define GL_TEST_SYNTH_RUNS_RULE "runs:\n  - by: name_user\n"
/* The same jobs' part number part of nparts (job g when g % nparts ==
 * part), in cluster `cluster` (made when missing): the parts of several
 * calls are the one set of gl_test_synth_jobs, split over clusters or
 * databases (the sharding benchmark). dsn: c's, for the owner's ANALYZE. */
void gl_test_synth_jobs_part(PGconn *c, const char *dsn, long n, const char *from, const char *span, const char *cluster,
			     int part, int nparts);

#endif
