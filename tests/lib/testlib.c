/* gpuledger test support (see tests/lib/testlib.h). */
#include "testlib.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#define GL_ARRAY_LEN_T(a) (sizeof(a) / sizeof((a)[0]))

static const char *env_or_die(const char *k)
{
	const char *v = getenv(k);
	if (!v || !*v) {
		fprintf(stderr, "testlib: %s is not set (run the tests through tests/run.sh or make test)\n", k);
		exit(2);
	}
	return v;
}

const char *gl_test_bin(void) { return env_or_die("GL_TEST_BIN"); }

int gl_test_timeout_scale(void)
{
	const char *v = getenv("GL_TEST_TIMEOUT_SCALE");
	long k = v ? strtol(v, NULL, 10) : 1;
	return k >= 1 && k <= 100 ? (int)k : 1;
}
const char *gl_test_admin_dsn(void) { return env_or_die("GL_TEST_ADMIN_DSN"); }
const char *gl_test_app_dsn_base(void) { return env_or_die("GL_TEST_APP_DSN"); }

const char *gl_test_fixture(const char *rel)
{
	if (access(rel, R_OK) != 0) {
		fprintf(stderr, "testlib: fixture %s missing (cwd must be the repo root)\n", rel);
		exit(2);
	}
	return rel;
}

char *gl_test_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;
	if (!f || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
		fprintf(stderr, "testlib: cannot read %s (cwd must be the repo root)\n", path);
		exit(2);
	}
	buf = malloc((size_t)n + 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "testlib: cannot read %s\n", path);
		exit(2);
	}
	fclose(f);
	buf[n] = '\0';
	if (len)
		*len = (size_t)n;
	return buf;
}

int gl_test_sacct_fields(char *out, size_t n)
{
	FILE *f = fopen(gl_test_fixture("tests/fixtures/sacct/testbed/sacct_fields.txt"), "r");
	int rc = f && fgets(out, (int)n, f) ? 0 : -1;
	if (f)
		fclose(f);
	if (rc)
		return rc;
	out[strcspn(out, "\r\n")] = '\0';
	for (char *p = out; *p; p++)
		if (*p == '|')
			*p = ',';
	return 0;
}

cJSON *gl_test_get_json(int port, const char *path, long want_status)
{
	struct gl_test_http r;
	cJSON *j = NULL;
	if (gl_test_http(port, "GET", path, NULL, 0, NULL, &r) != 0)
		fprintf(stderr, "GET %s: request failed\n", path);
	else if (r.status != want_status)
		fprintf(stderr, "GET %s: %ld %s\n", path, r.status, r.body);
	else if (!strstr(r.headers, "Content-Type: application/json"))
		fprintf(stderr, "GET %s: not JSON:\n%s\n", path, r.headers);
	else if (!(j = cJSON_Parse(r.body)))
		fprintf(stderr, "GET %s: bad JSON: %s\n", path, r.body);
	gl_test_http_fini(&r);
	return j;
}

char *gl_test_get_body(int port, const char *path, const char *token, char **headers)
{
	struct gl_test_http r;
	struct gl_test_http_opts o = {token, 0, NULL};
	char *b = NULL;
	if (headers)
		*headers = NULL;
	if (gl_test_http_ex(port, "GET", path, NULL, 0, NULL, token ? &o : NULL, &r) != 0) {
		fprintf(stderr, "GET %s: request failed\n", path);
		return NULL;
	}
	if (r.status != 200) {
		fprintf(stderr, "GET %s: %ld %s\n", path, r.status, r.body ? r.body : "");
	} else {
		b = strdup(r.body ? r.body : "");
		if (headers)
			*headers = strdup(r.headers ? r.headers : "");
	}
	gl_test_http_fini(&r);
	return b;
}

double gl_test_now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

void gl_test_die(const char *msg)
{
	fprintf(stderr, "%s: %s\n", program_invocation_short_name, msg);
	exit(1);
}

int gl_test_db_create(const char *name, char *dsn, size_t n)
{
	char sql[512];
	PGconn *c = PQconnectdb(gl_test_admin_dsn());
	PGresult *r;
	int rc = 0;
	if (PQstatus(c) != CONNECTION_OK) {
		fprintf(stderr, "testlib: admin connect: %s", PQerrorMessage(c));
		PQfinish(c);
		return -1;
	}
	snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS \"%s\" WITH (FORCE)", name);
	r = PQexec(c, sql);
	if (PQresultStatus(r) != PGRES_COMMAND_OK)
		rc = -1;
	PQclear(r);
	snprintf(sql, sizeof sql, "CREATE DATABASE \"%s\" OWNER gpuledger_owner TEMPLATE template0 ENCODING 'UTF8'",
		 name);
	r = PQexec(c, sql);
	if (PQresultStatus(r) != PGRES_COMMAND_OK) {
		fprintf(stderr, "testlib: %s: %s", sql, PQerrorMessage(c));
		rc = -1;
	}
	PQclear(r);
	PQfinish(c);
	snprintf(dsn, n, "%s dbname=%s", gl_test_app_dsn_base(), name);
	return rc;
}

int gl_test_owner_dsn(const char *dsn, char *out, size_t n)
{
	PQconninfoOption *opts = PQconninfoParse(dsn, NULL);
	size_t k = 0;
	int rc = -1, passfile = 0;
	out[0] = '\0';
	for (PQconninfoOption *o = opts; o && o->keyword; o++) {
		if (!strcmp(o->keyword, "user") && o->val && !strcmp(o->val, "gpuledger"))
			rc = 0;
		passfile |= !strcmp(o->keyword, "passfile") && o->val && *o->val;
	}
	for (PQconninfoOption *o = opts; !rc && o && o->keyword; o++) {
		const char *v = !strcmp(o->keyword, "user") ? "gpuledger_owner" : o->val;
		/* with a passfile (a shard server's, gl_test_shard_server) the
		 * owner's password is there, not the application role's */
		if (!v || (passfile && !strcmp(o->keyword, "password")))
			continue;
		k += (size_t)snprintf(out + k, k < n ? n - k : 0, "%s%s='", k ? " " : "", o->keyword);
		for (; *v; v++)
			k += (size_t)snprintf(out + k, k < n ? n - k : 0, "%s%c", *v == '\'' || *v == '\\' ? "\\" : "", *v);
		k += (size_t)snprintf(out + k, k < n ? n - k : 0, "'");
	}
	PQconninfoFree(opts);
	if (!rc && k >= n)
		rc = -1;
	if (rc)
		out[0] = '\0';
	return rc;
}

int gl_test_db_fresh(const char *name, char *dsn, size_t n)
{
	struct gl_test_out o;
	int rc;
	if (gl_test_db_create(name, dsn, n))
		return -1;
	rc = gl_test_run(dsn, NULL, &o, "migrate", NULL);
	if (rc || o.status != 0) {
		fprintf(stderr, "testlib: migrate failed (%d): %s\n", o.status, o.err);
		rc = -1;
	}
	gl_test_out_fini(&o);
	return rc;
}

static char *slurp_fd(int fd, size_t *len)
{
	size_t cap = 4096, n = 0;
	char *b = malloc(cap);
	for (;;) {
		ssize_t r;
		if (n + 1 >= cap)
			b = realloc(b, cap *= 2);
		r = read(fd, b + n, cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	b[n] = '\0';
	if (len)
		*len = n;
	return b;
}

/* gl_test_run's body: argv[0] is the binary, argv NULL-terminated. */
static int run_argv(const char *dsn, const char *const *env, struct gl_test_out *o, const char *const *argv)
{
	int outp[2], errp[2], st;
	pid_t pid;
	char of[64], ef[64];

	memset(o, 0, sizeof *o);
	/* temp files, not pipes: no deadlock on big outputs */
	snprintf(of, sizeof of, "/tmp/gltest-out-%d", (int)getpid());
	snprintf(ef, sizeof ef, "/tmp/gltest-err-%d", (int)getpid());
	outp[1] = open(of, O_RDWR | O_CREAT | O_TRUNC, 0600);
	errp[1] = open(ef, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (outp[1] < 0 || errp[1] < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		dup2(outp[1], 1);
		dup2(errp[1], 2);
		char own[2048];
		if (dsn)
			setenv("GPULEDGER_DSN", dsn, 1);
		else
			unsetenv("GPULEDGER_DSN");
		if (dsn && !gl_test_owner_dsn(dsn, own, sizeof own))
			setenv("GPULEDGER_MIGRATE_DSN", own, 1);
		else
			unsetenv("GPULEDGER_MIGRATE_DSN");
		unsetenv("GPULEDGER_CONFIG");
		for (size_t i = 0; env && env[i]; i++)
			putenv((char *)env[i]);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	o->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	lseek(outp[1], 0, SEEK_SET);
	lseek(errp[1], 0, SEEK_SET);
	o->out = slurp_fd(outp[1], NULL);
	o->err = slurp_fd(errp[1], NULL);
	close(outp[1]);
	close(errp[1]);
	unlink(of);
	unlink(ef);
	return 0;
}

/* Collects the NULL-terminated arguments after arg0 behind the binary. */
static void collect_args(const char **argv, const char *arg0, va_list ap)
{
	size_t k = 0;
	argv[k++] = gl_test_bin();
	argv[k++] = arg0;
	while (k < 63 && (argv[k] = va_arg(ap, const char *)))
		k++;
	argv[k] = NULL;
}

int gl_test_run(const char *dsn, const char *const *env, struct gl_test_out *o, const char *arg0, ...)
{
	const char *argv[64];
	va_list ap;
	va_start(ap, arg0);
	collect_args(argv, arg0, ap);
	va_end(ap);
	return run_argv(dsn, env, o, argv);
}

int gl_test_cli_cfg(const char *cfg, const char *arg0, ...)
{
	const char *argv[66], *const env[] = {"GL_PG_FAST=1", NULL};
	struct gl_test_out o;
	va_list ap;
	int rc;
	va_start(ap, arg0);
	collect_args(argv + 2, arg0, ap);
	va_end(ap);
	argv[0] = gl_test_bin();
	argv[1] = "--config";
	argv[2] = cfg;
	rc = run_argv(NULL, env, &o, argv);
	if (!rc && o.status != 0) {
		fprintf(stderr, "gpuledger --config %s %s ... exited %d: %s\n", cfg, arg0, o.status, o.err ? o.err : "");
		rc = -1;
	}
	gl_test_out_fini(&o);
	return rc;
}

int gl_test_shard_server(const char *dir, int k, char *cfg, size_t ncfg, char *dsn, size_t ndsn)
{
	char yaml[PATH_MAX + 64], sock[PATH_MAX] = "", pass[PATH_MAX] = "", idx[8], pw[128] = "";
	struct gl_test_out o = {0};
	const char *s;
	FILE *f;

	mkdir(dir, 0755);
	snprintf(cfg, ncfg, "%s/config.yaml", dir);
	snprintf(yaml, sizeof yaml, "database:\n  embedded_dir: %s/var\nlog:\n  level: warn\n", dir);
	if (!(f = fopen(cfg, "w")) || fputs(yaml, f) < 0 || fclose(f))
		return -1;
	if (gl_test_cli_cfg(cfg, "db", "init", NULL) || gl_test_cli_cfg(cfg, "db", "start", NULL) ||
	    gl_test_run(NULL, NULL, &o, "--config", cfg, "db", "status", NULL))
		return -1;
	if ((s = strstr(o.out, "socket ")))
		sscanf(s + 7, "%[^)]", sock);
	if ((s = strstr(o.out, "passfile ")))
		sscanf(s + 9, "%s", pass);
	gl_test_out_fini(&o);
	if (!sock[0] || !(f = fopen(pass, "r")))
		return -1;
	/* the role's password: the central server reads none of our files */
	while (fgets(yaml, sizeof yaml, f))
		if (!strncmp(yaml, "*:*:*:gpuledger:", 16))
			sscanf(yaml + 16, "%127s", pw);
	fclose(f);
	if (!pw[0])
		return -1;
	/* the passfile for the owner role (gl_test_owner_dsn); attach ignores it */
	snprintf(dsn, ndsn, "host=%s port=5432 dbname=gpuledger user=gpuledger password=%s passfile=%s", sock, pw, pass);
	snprintf(idx, sizeof idx, "%d", k);
	return gl_test_cli_cfg(cfg, "migrate", NULL) || gl_test_cli_cfg(cfg, "shard", "init", "--index", idx, NULL) ? -1 : 0;
}

int gl_test_shard_attach(const char *central_dsn, int k, const char *name, const char *shard_dsn)
{
	PGconn *su = gl_test_superuser_conn(central_dsn);
	char idx[8];
	if (!su)
		return -1;
	PQclear(PQexec(su, "CREATE EXTENSION IF NOT EXISTS postgres_fdw"));
	/* the capacity check asks each shard once through it (sql/104), from
	 * the schema only the owner may use (sql/143) */
	PQclear(PQexec(su, "CREATE EXTENSION IF NOT EXISTS dblink SCHEMA gl_dblink"));
	PQclear(PQexec(su, "GRANT USAGE ON FOREIGN DATA WRAPPER postgres_fdw TO gpuledger, gpuledger_owner"));
	PQfinish(su);
	snprintf(idx, sizeof idx, "%d", k);
	return gl_test_cli(central_dsn, "shard", "attach", name, "--index", idx, "--dsn", shard_dsn, NULL);
}

PGconn *gl_test_shard_superuser(const char *shard_dsn)
{
	char *perr = NULL, dsn[1024] = "";
	size_t k = 0;
	PQconninfoOption *opts = PQconninfoParse(shard_dsn, &perr);
	PGconn *c;
	for (PQconninfoOption *o = opts; o && o->keyword; o++)
		if (o->val && *o->val && strcmp(o->keyword, "user") && strcmp(o->keyword, "password") && k < sizeof dsn)
			k += (size_t)snprintf(dsn + k, sizeof dsn - k, "%s='%s' ", o->keyword, o->val);
	if (k < sizeof dsn)
		snprintf(dsn + k, sizeof dsn - k, "user=postgres");
	PQconninfoFree(opts);
	PQfreemem(perr);
	c = PQconnectdb(dsn);
	if (PQstatus(c) != CONNECTION_OK) {
		fprintf(stderr, "testlib: shard superuser: %s", PQerrorMessage(c));
		PQfinish(c);
		return NULL;
	}
	return c;
}

int gl_test_server_log(const char *cfg, char *path, size_t n)
{
	struct gl_test_out o = {0};
	char pass[PATH_MAX] = "", *slash;
	const char *s;
	if (gl_test_run(NULL, NULL, &o, "--config", cfg, "db", "status", NULL))
		return -1;
	/* the passfile lies at the cluster's base, beside log/ (wherever a
	 * root-run cluster was moved to) */
	if ((s = strstr(o.out, "passfile ")))
		sscanf(s + 9, "%4095s", pass);
	gl_test_out_fini(&o);
	if (!(slash = strrchr(pass, '/')))
		return -1;
	*slash = '\0';
	return (size_t)snprintf(path, n, "%s/log/postgresql.log", pass) < n ? 0 : -1;
}

int gl_test_cli(const char *dsn, const char *arg0, ...)
{
	const char *argv[64];
	struct gl_test_out o;
	va_list ap;
	int rc;
	va_start(ap, arg0);
	collect_args(argv, arg0, ap);
	va_end(ap);
	rc = run_argv(dsn, NULL, &o, argv);
	if (!rc && o.status != 0) {
		fprintf(stderr, "gpuledger %s ... exited %d: %s\n", arg0, o.status, o.err ? o.err : "");
		rc = -1;
	}
	gl_test_out_fini(&o);
	return rc;
}

long long gl_test_jnum(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	if (!cJSON_IsNumber(v)) {
		fprintf(stderr, "no number '%s' in the answer\n", key);
		return LLONG_MIN;
	}
	return (long long)v->valuedouble;
}

PGconn *gl_test_lock_table(const char *dsn, const char *table, const char *mode)
{
	char sql[200], own[2048];
	/* the application role may not take the strong modes on audit_log */
	PGconn *c = PQconnectdb(gl_test_owner_dsn(dsn, own, sizeof own) ? dsn : own);
	PGresult *r;
	if (PQstatus(c) != CONNECTION_OK) {
		fprintf(stderr, "lock %s: %s", table, PQerrorMessage(c));
		PQfinish(c);
		return NULL;
	}
	snprintf(sql, sizeof sql, "BEGIN; LOCK TABLE %s IN %s MODE", table, mode);
	r = PQexec(c, sql);
	if (PQresultStatus(r) != PGRES_COMMAND_OK) {
		fprintf(stderr, "lock %s: %s", table, PQerrorMessage(c));
		PQclear(r);
		PQfinish(c);
		return NULL;
	}
	PQclear(r);
	return c;
}

void gl_test_out_fini(struct gl_test_out *o)
{
	free(o->out);
	free(o->err);
	o->out = o->err = NULL;
}

long long gl_test_exec_owner(const char *dsn, const char *sql)
{
	char own[2048];
	if (gl_test_owner_dsn(dsn, own, sizeof own)) {
		fprintf(stderr, "testlib: no owner role for %s\n", dsn);
		return -1;
	}
	return gl_test_exec_dsn(own, sql);
}

long long gl_test_qint(PGconn *c, const char *sql)
{
	PGresult *r = PQexec(c, sql);
	long long v = -999999;
	if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0 && !PQgetisnull(r, 0, 0))
		v = atoll(PQgetvalue(r, 0, 0));
	else if (PQresultStatus(r) != PGRES_TUPLES_OK)
		fprintf(stderr, "testlib: %s: %s", sql, PQerrorMessage(c));
	PQclear(r);
	return v;
}

long long gl_test_qint_dsn(const char *dsn, const char *sql)
{
	PGconn *c = PQconnectdb(dsn);
	long long v = -999999;
	if (PQstatus(c) == CONNECTION_OK)
		v = gl_test_qint(c, sql);
	else
		fprintf(stderr, "testlib: %s", PQerrorMessage(c));
	PQfinish(c);
	return v;
}

const char *gl_test_qstr(PGconn *c, const char *sql)
{
	static char buf[8192];
	PGresult *r = PQexec(c, sql);
	buf[0] = '\0';
	if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0)
		snprintf(buf, sizeof buf, "%s", PQgetisnull(r, 0, 0) ? "(null)" : PQgetvalue(r, 0, 0));
	else if (PQresultStatus(r) != PGRES_TUPLES_OK)
		fprintf(stderr, "testlib: %s: %s", sql, PQerrorMessage(c));
	PQclear(r);
	return buf;
}

long long gl_test_qintf(PGconn *c, const char *fmt, ...)
{
	char sql[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(sql, sizeof sql, fmt, ap);
	va_end(ap);
	return gl_test_qint(c, sql);
}

const char *gl_test_qstrf(PGconn *c, const char *fmt, ...)
{
	char sql[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(sql, sizeof sql, fmt, ap);
	va_end(ap);
	return gl_test_qstr(c, sql);
}

/* port -> default token of the daemon on it, for gl_test_http() */
static struct {
	int port;
	char token[64];
} g_tokens[32];

static void token_register(int port, const char *token)
{
	for (size_t i = 0; i < GL_ARRAY_LEN_T(g_tokens); i++)
		if (g_tokens[i].port == 0 || g_tokens[i].port == port) {
			g_tokens[i].port = port;
			snprintf(g_tokens[i].token, sizeof g_tokens[i].token, "%s", token);
			return;
		}
}

static void token_unregister(int port)
{
	for (size_t i = 0; i < GL_ARRAY_LEN_T(g_tokens); i++)
		if (g_tokens[i].port == port)
			memset(&g_tokens[i], 0, sizeof g_tokens[i]);
}

static const char *token_for(int port)
{
	for (size_t i = 0; i < GL_ARRAY_LEN_T(g_tokens); i++)
		if (g_tokens[i].port == port && g_tokens[i].token[0])
			return g_tokens[i].token;
	return NULL;
}

static int token_create_cfg(const char *dsn, const char *cfgfile, const char *name, const char *role,
			    const char *const *extra, char *out, size_t n, long long *id)
{
	struct gl_test_out o;
	const char *a[24];
	size_t k = 0;
	int rc = -1;
	if (cfgfile) {
		a[k++] = "--config";
		a[k++] = cfgfile;
	}
	a[k++] = "token";
	a[k++] = "create";
	a[k++] = "--name";
	a[k++] = name;
	a[k++] = "--role";
	a[k++] = role;
	for (size_t i = 0; extra && extra[i] && k < 22; i++)
		a[k++] = extra[i];
	while (k < 24)
		a[k++] = NULL;
	out[0] = '\0';
	if (gl_test_run(dsn, NULL, &o, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12],
			a[13], a[14], a[15], a[16], a[17], a[18], a[19], a[20], a[21], a[22], a[23], NULL) == 0 &&
	    o.status == 0) {
		size_t len = strcspn(o.out, "\n");
		if (len > 0 && len < n) {
			memcpy(out, o.out, len);
			out[len] = '\0';
			rc = 0;
		}
		if (id) {
			const char *p = strstr(o.err, "token ");
			*id = p ? atoll(p + 6) : 0;
		}
	}
	if (rc)
		fprintf(stderr, "testlib: token create %s failed (%d): %s\n", name, o.status, o.err ? o.err : "");
	gl_test_out_fini(&o);
	return rc;
}

int gl_test_token_create(const char *dsn, const char *name, const char *role, const char *const *extra, char *out,
			 size_t n, long long *id)
{
	return token_create_cfg(dsn, NULL, name, role, extra, out, n, id);
}

/* Once listening, a daemon opens its workers' sessions (on a central: to
 * every shard) and /healthz says "starting" meanwhile, for a bounded
 * time: a test starts from a ready daemon, as a load balancer would. */
static int daemon_ready(struct gl_test_daemon *d)
{
	for (int i = 0; i < 200 * gl_test_timeout_scale(); i++) { /* up to 20 s (times the scale) */
		struct gl_test_http r;
		int starting = gl_test_http(d->port, "GET", "/healthz", NULL, 0, (const char *[]){"Authorization:", NULL},
					    &r) == 0 && r.status == 503 && r.body && strstr(r.body, "\"starting\"");
		gl_test_http_fini(&r);
		if (!starting)
			return 0;
		usleep(50000);
	}
	fprintf(stderr, "testlib: daemon still starting; log %s\n", d->log);
	return -1;
}

int gl_test_daemon_start(struct gl_test_daemon *d, const char *dsn, const char *config_yaml,
			 const char *const *extra_args)
{
	char portfile[320], cfgfile[320];
	const char *argv[32];
	size_t k = 0;
	int logfd;

	memset(d, 0, sizeof *d);
	snprintf(d->dir, sizeof d->dir, "/tmp/gltest-daemon-XXXXXX");
	if (!mkdtemp(d->dir))
		return -1;
	snprintf(portfile, sizeof portfile, "%s/port", d->dir);
	snprintf(cfgfile, sizeof cfgfile, "%s/config.yaml", d->dir);
	snprintf(d->log, sizeof d->log, "%s/daemon.log", d->dir);
	{
		FILE *f = fopen(cfgfile, "w");
		if (!f)
			return -1;
		fputs(config_yaml ? config_yaml : "", f);
		fclose(f);
	}
	{
		/* every API route but /healthz wants a token: make an admin one
		 * the real way; a daemon meant to fail at startup simply gets none */
		struct gl_test_out o;
		char name[64];
		if (gl_test_run(dsn, NULL, &o, "--config", cfgfile, "migrate", NULL) == 0 && o.status == 0) {
			static int n_made;
			snprintf(name, sizeof name, "test-admin-%d-%d", (int)getpid(), ++n_made);
			(void)!token_create_cfg(dsn, cfgfile, name, "admin", NULL, d->token, sizeof d->token, &d->token_id);
		}
		gl_test_out_fini(&o);
	}
	argv[k++] = gl_test_bin();
	argv[k++] = "--config";
	argv[k++] = cfgfile;
	argv[k++] = "serve";
	argv[k++] = "--listen";
	argv[k++] = "127.0.0.1:0";
	argv[k++] = "--port-file";
	argv[k++] = portfile;
	for (size_t i = 0; extra_args && extra_args[i] && k < 31; i++)
		argv[k++] = extra_args[i];
	argv[k] = NULL;
	logfd = open(d->log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	d->pid = fork();
	if (d->pid == 0) {
		char own[2048];
		dup2(logfd, 1);
		dup2(logfd, 2);
		setenv("GPULEDGER_DSN", dsn, 1);
		if (!gl_test_owner_dsn(dsn, own, sizeof own))
			setenv("GPULEDGER_MIGRATE_DSN", own, 1);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(logfd);
	for (int i = 0; i < 200 * gl_test_timeout_scale(); i++) { /* up to 20 s (times the scale) */
		FILE *f = fopen(portfile, "r");
		int st;
		if (f) {
			int ok = fscanf(f, "%d", &d->port) == 1;
			fclose(f);
			if (ok && d->port > 0) {
				if (d->token[0])
					token_register(d->port, d->token);
				return daemon_ready(d);
			}
		}
		if (waitpid(d->pid, &st, WNOHANG) == d->pid) {
			fprintf(stderr, "testlib: daemon exited early; log %s\n", d->log);
			d->pid = 0;
			return -1;
		}
		usleep(100000);
	}
	fprintf(stderr, "testlib: daemon did not start; log %s\n", d->log);
	return -1;
}

int gl_test_daemon_sigterm(struct gl_test_daemon *d, int bound_s, char **log, double *took)
{
	struct timespec a, b;
	double t = 0;
	int st = 0, done = 0;
	clock_gettime(CLOCK_MONOTONIC, &a);
	kill(d->pid, SIGTERM);
	while (!done) {
		done = waitpid(d->pid, &st, WNOHANG) == d->pid;
		clock_gettime(CLOCK_MONOTONIC, &b);
		t = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
		if (done || t >= bound_s)
			break;
		usleep(20000);
	}
	fprintf(stderr, "stop: %.2f s\n", t);
	if (!done) {
		fprintf(stderr, "daemon still running %d s after SIGTERM: killed\n", bound_s);
		kill(d->pid, SIGKILL);
		waitpid(d->pid, &st, 0);
	}
	if (took)
		*took = t;
	*log = gl_test_read_file(d->log, NULL);
	d->pid = 0; /* reaped: gl_test_daemon_stop only cleans up */
	(void)gl_test_daemon_stop(d);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int gl_test_daemon_stop(struct gl_test_daemon *d)
{
	int st = 0;
	char cmd[400];
	if (d->pid > 0) {
		kill(d->pid, SIGTERM);
		int tries = 100 * gl_test_timeout_scale(); /* 10 s (times the scale), then SIGKILL */
		for (int i = 0; i < tries; i++) {
			if (waitpid(d->pid, &st, WNOHANG) == d->pid)
				break;
			usleep(100000);
			if (i == tries - 1) {
				kill(d->pid, SIGKILL);
				waitpid(d->pid, &st, 0);
			}
		}
	}
	d->pid = 0;
	token_unregister(d->port);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", d->dir);
	if (getenv("GL_TEST_KEEP") == NULL && system(cmd) != 0)
		fprintf(stderr, "testlib: could not remove %s\n", d->dir);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

struct membuf {
	char *p;
	size_t n;
};

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct membuf *m = ud;
	size_t k = size * nmemb;
	m->p = realloc(m->p, m->n + k + 1);
	memcpy(m->p + m->n, ptr, k);
	m->n += k;
	m->p[m->n] = '\0';
	return k;
}

static int cmp_ms(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int gl_test_http_timed(int port, const char *path, int n, double *p50, double *p99, char **body)
{
	double lat[200];
	if (n < 1 || n > 200)
		return -1;
	for (int i = 0; i < n; i++) {
		struct gl_test_http r;
		double a = gl_test_now_s();
		int bad = gl_test_http(port, "GET", path, NULL, 0, NULL, &r) || r.status != 200;
		if (!bad && body && i == 0) {
			*body = r.body;
			r.body = NULL;
		}
		gl_test_http_fini(&r);
		if (bad)
			return -1;
		lat[i] = (gl_test_now_s() - a) * 1000;
	}
	qsort(lat, (size_t)n, sizeof *lat, cmp_ms);
	*p50 = lat[(n + 1) / 2 - 1];
	*p99 = lat[(int)(0.99 * n + 0.999999) - 1];
	return 0;
}

int gl_test_http(int port, const char *method, const char *path, const char *body, size_t body_len,
		 const char *const *extra_headers, struct gl_test_http *r)
{
	return gl_test_http_ex(port, method, path, body, body_len, extra_headers, NULL, r);
}

int gl_test_http_ex(int port, const char *method, const char *path, const char *body, size_t body_len,
		    const char *const *extra_headers, const struct gl_test_http_opts *o, struct gl_test_http *r)
{
	char auth[128];
	int has_auth = 0;
	CURL *h = curl_easy_init();
	struct curl_slist *hl = NULL;
	struct membuf b = {0}, hd = {0};
	char url[2048];
	CURLcode cc;

	memset(r, 0, sizeof *r);
	snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_data);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, &hd);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 30L * gl_test_timeout_scale());
	curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
	if (body) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
	}
	if (!strcmp(method, "HEAD"))
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	for (size_t i = 0; extra_headers && extra_headers[i]; i++) {
		hl = curl_slist_append(hl, extra_headers[i]);
		if (!strncasecmp(extra_headers[i], "Authorization:", 14))
			has_auth = 1;
	}
	if (!has_auth && !(o && o->no_token)) {
		const char *tok = o && o->token ? o->token : token_for(port);
		if (tok) {
			snprintf(auth, sizeof auth, "Authorization: Bearer %s", tok);
			hl = curl_slist_append(hl, auth);
		}
	}
	if (o && o->source_addr)
		curl_easy_setopt(h, CURLOPT_INTERFACE, o->source_addr);
	if (hl)
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
	cc = curl_easy_perform(h);
	if (cc == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
	curl_slist_free_all(hl);
	curl_easy_cleanup(h);
	r->body = b.p ? b.p : calloc(1, 1);
	r->len = b.n;
	r->headers = hd.p ? hd.p : calloc(1, 1);
	return cc == CURLE_OK ? 0 : -1;
}

const char *gl_test_header(const struct gl_test_http *r, const char *name, char *out, size_t n)
{
	size_t len = strlen(name);
	/* one header a line, "Name: value\r\n" */
	for (const char *p = r->headers; p && *p;) {
		const char *eol = strstr(p, "\r\n");
		size_t ll = eol ? (size_t)(eol - p) : strlen(p);
		if (ll > len && p[len] == ':' && !strncasecmp(p, name, len)) {
			const char *v = p + len + 1;
			while (*v == ' ')
				v++;
			snprintf(out, n, "%.*s", (int)(p + ll - v), v);
			return out;
		}
		p += ll + (eol ? 2 : 0);
	}
	return NULL;
}

void gl_test_http_fini(struct gl_test_http *r)
{
	free(r->body);
	free(r->headers);
	r->body = r->headers = NULL;
}

double gl_test_time_ingest_sacct(const char *dsn, const char *cluster, const char *file, const char *fields)
{
	struct gl_test_out o;
	double t0 = gl_test_now_s(), dt;
	if (gl_test_run(dsn, NULL, &o, "ingest", "sacct", "--cluster", cluster, "--file", file, "--fields", fields,
			NULL) ||
	    o.status != 0) {
		fprintf(stderr, "%s\n", o.err ? o.err : "");
		gl_test_die("ingest failed");
	}
	dt = gl_test_now_s() - t0;
	fprintf(stderr, "  ingest: %.2f s %s", dt, o.out);
	gl_test_out_fini(&o);
	return dt;
}

int gl_test_synth_untyped_sacct(const char *path, int n)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	for (int i = 1; i <= n; i++) {
		time_t t = 1763800000L + i * 7L, b = t + 10, e = t + 610;
		char sub[32], st[32], en[32];
		strftime(sub, sizeof sub, "%Y-%m-%dT%H:%M:%S", gmtime(&t));
		strftime(st, sizeof st, "%Y-%m-%dT%H:%M:%S", gmtime(&b));
		strftime(en, sizeof en, "%Y-%m-%dT%H:%M:%S", gmtime(&e));
		fprintf(f,
			"%d|%d|synth|gpu|normal|team%d|g|2001|u%d|2001|%s|%s|%s|%s|00:10:00|600|0:0|COMPLETED|1|2|2|1000M|"
			"billing=1,cpu=2,gres/gpu=1,mem=1000M,node=1|billing=1,cpu=2,gres/gpu=1,mem=1000M,node=1|"
			"01:00:00|gpu%02d|job%d|%d|00:00:00|\n",
			i, i, i % 5, i % 50, sub, sub, st, en, i % 16, i, i);
	}
	return fclose(f) ? -1 : 0;
}

double gl_test_copy_baseline(PGconn *c, const char *table, const char *cols, const char *tmpfile)
{
	char sql[2048], buf[1 << 16];
	PGresult *r;
	FILE *f;
	char *row;
	size_t n;
	int k;
	double t0;

	snprintf(sql, sizeof sql, "COPY (SELECT %s FROM %s) TO STDOUT", cols, table);
	f = fopen(tmpfile, "w");
	r = PQexec(c, sql);
	if (!f || PQresultStatus(r) != PGRES_COPY_OUT)
		gl_test_die(PQerrorMessage(c));
	PQclear(r);
	while ((k = PQgetCopyData(c, &row, 0)) > 0) {
		fwrite(row, 1, (size_t)k, f);
		PQfreemem(row);
	}
	PQclear(PQgetResult(c));
	fclose(f);
	{
		/* only the table's owner may TRUNCATE it */
		char app[1024], own[2048];
		snprintf(app, sizeof app, "%s dbname=%s", gl_test_app_dsn_base(), PQdb(c));
		snprintf(sql, sizeof sql, "TRUNCATE %s", table);
		if (gl_test_owner_dsn(app, own, sizeof own) || gl_test_exec_dsn(own, sql) < 0)
			gl_test_die("TRUNCATE as the owner role failed");
	}
	/* CHECKPOINT needs a superuser (or pg_checkpoint): the application
	 * role is neither, so it goes through the admin connection */
	if (gl_test_exec_dsn(gl_test_admin_dsn(), "CHECKPOINT") < 0)
		gl_test_die("CHECKPOINT through GL_TEST_ADMIN_DSN failed");
	f = fopen(tmpfile, "r");
	t0 = gl_test_now_s();
	snprintf(sql, sizeof sql, "COPY %s (%s) FROM STDIN", table, cols);
	r = PQexec(c, sql);
	if (!f || PQresultStatus(r) != PGRES_COPY_IN)
		gl_test_die(PQerrorMessage(c));
	PQclear(r);
	while ((n = fread(buf, 1, sizeof buf, f)) > 0)
		PQputCopyData(c, buf, (int)n);
	PQputCopyEnd(c, NULL);
	r = PQgetResult(c);
	if (PQresultStatus(r) != PGRES_COMMAND_OK)
		gl_test_die(PQerrorMessage(c));
	PQclear(r);
	fclose(f);
	return gl_test_now_s() - t0;
}

char *gl_test_kube_synth_doc(int npods, size_t *len)
{
	static const char dir[] = "tests/fixtures/kube";
	cJSON *templates = cJSON_CreateArray(), *list, *items;
	unsigned long long rng = 0x9e3779b97f4a7c15ULL;
	DIR *d = opendir(dir);
	struct dirent *de;
	char *text, *out, *o;
	size_t tabs = 0;
	int ntpl;

	if (!d)
		gl_test_die("tests/fixtures/kube: run from the repo root");
	while ((de = readdir(d))) {
		char p[512], *buf;
		size_t n;
		cJSON *root, *it;
		if (strncmp(de->d_name, "openb-at-", 9))
			continue;
		snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
		buf = gl_test_read_file(p, &n);
		root = cJSON_ParseWithLength(buf, n);
		cJSON_ArrayForEach(it, cJSON_GetObjectItem(root, "items"))
			cJSON_AddItemToArray(templates, cJSON_Duplicate(it, 1));
		cJSON_Delete(root);
		free(buf);
	}
	closedir(d);
	ntpl = cJSON_GetArraySize(templates);
	if (ntpl == 0)
		gl_test_die("tests/fixtures/kube: no openb snapshots");
	list = cJSON_CreateObject();
	cJSON_AddStringToObject(list, "apiVersion", "v1");
	cJSON_AddStringToObject(list, "kind", "List");
	items = cJSON_AddArrayToObject(list, "items");
	for (int i = 0; i < npods; i++) {
		cJSON *pod, *meta;
		char uid[40], name[32];
		rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
		pod = cJSON_Duplicate(cJSON_GetArrayItem(templates, (int)((rng >> 33) % (unsigned)ntpl)), 1);
		meta = cJSON_GetObjectItem(pod, "metadata");
		snprintf(uid, sizeof uid, "%08x-5e17-4000-8000-%012x", i, i);
		snprintf(name, sizeof name, "synth-pod-%06d", i);
		cJSON_ReplaceItemInObject(meta, "uid", cJSON_CreateString(uid));
		cJSON_ReplaceItemInObject(meta, "name", cJSON_CreateString(name));
		cJSON_AddItemToArray(items, pod);
	}
	text = cJSON_Print(list);
	cJSON_Delete(list);
	cJSON_Delete(templates);
	if (!text)
		gl_test_die("synthetic PodList: out of memory");
	/* cJSON indents with tabs, kubectl with 4 spaces */
	for (const char *p = text; *p; p++)
		tabs += *p == '\t';
	o = out = malloc(strlen(text) + 3 * tabs + 1);
	if (!out)
		gl_test_die("synthetic PodList: out of memory");
	for (const char *p = text; *p; p++) {
		if (*p == '\t') {
			memcpy(o, "    ", 4);
			o += 4;
		} else {
			*o++ = *p;
		}
	}
	*o = '\0';
	free(text);
	*len = (size_t)(o - out);
	return out;
}

static long long philly_time(const cJSON *o, const char *key)
{
	const char *s = cJSON_GetStringValue(cJSON_GetObjectItem(o, key));
	struct tm tm = {0};
	if (!s || !strptime(s, "%Y-%m-%d %H:%M:%S", &tm))
		return -1;
	return (long long)timegm(&tm);
}

static void philly_fmt(long long t, char *buf, size_t n)
{
	time_t tt = (time_t)t;
	struct tm tm;
	gmtime_r(&tt, &tm);
	strftime(buf, n, "%Y-%m-%dT%H:%M:%S", &tm);
}

int gl_test_philly_to_sacct(const char *out_path, const char *node_list, struct gl_test_philly_job *jobs, int max)
{
	size_t len;
	char *buf = gl_test_read_file(gl_test_fixture("tests/fixtures/philly/sampled_jobs.json"), &len);
	cJSON *root = cJSON_ParseWithLength(buf, len), *it;
	FILE *o = fopen(out_path, "w");
	int n = 0;

	free(buf);
	if (!root || !o) {
		cJSON_Delete(root);
		if (o)
			fclose(o);
		return -1;
	}
	cJSON_ArrayForEach(it, root)
	{
		struct gl_test_philly_job *j = &jobs[n];
		const char *status = cJSON_GetStringValue(cJSON_GetObjectItem(it, "status"));
		char s1[32], s2[32], s3[32], nodes[4096] = "";
		cJSON *d;
		if (n == max)
			break;
		j->submit = philly_time(it, "submitted_time");
		j->start = philly_time(it, "start_time");
		j->end = philly_time(it, "end_time");
		if (j->submit < 0 || j->start < 0 || j->end < j->start)
			continue;
		snprintf(j->user, sizeof j->user, "%s", cJSON_GetStringValue(cJSON_GetObjectItem(it, "user")));
		snprintf(j->vc, sizeof j->vc, "%s", cJSON_GetStringValue(cJSON_GetObjectItem(it, "vc")));
		j->gpus = 0;
		cJSON_ArrayForEach(d, cJSON_GetObjectItem(it, "detail"))
		{
			const char *ip = cJSON_GetStringValue(cJSON_GetObjectItem(d, "ip"));
			j->gpus += cJSON_GetArraySize(cJSON_GetObjectItem(d, "gpus"));
			if (ip && strlen(nodes) + strlen(ip) + 2 < sizeof nodes) {
				if (nodes[0])
					strcat(nodes, ",");
				strcat(nodes, ip);
			}
		}
		j->failed = !(status && !strcmp(status, "Pass"));
		philly_fmt(j->submit, s1, sizeof s1);
		philly_fmt(j->start, s2, sizeof s2);
		philly_fmt(j->end, s3, sizeof s3);
		n++;
		fprintf(o, "%d|%d|philly|gpu|%s|%s|%s|%s|%s|%s|%lld|%s|gres/gpu=%lld|gres/gpu=%lld|%s|%d|%s\n", n, n, j->vc,
			j->user, s1, s1, s2, s3, j->end - j->start, j->failed ? "FAILED" : "COMPLETED",
			j->gpus, j->gpus, node_list ? node_list : nodes, n,
			cJSON_GetStringValue(cJSON_GetObjectItem(it, "jobid")));
	}
	cJSON_Delete(root);
	return fclose(o) == 0 ? n : -1;
}

int gl_test_csv_parse(const char *s, struct gl_test_csv *t)
{
	memset(t, 0, sizeof *t);
	while (*s) {
		size_t col = 0;
		if (t->nrows == t->cap) {
			t->cap = t->cap ? t->cap * 2 : 64;
			t->ncols = realloc(t->ncols, t->cap * sizeof *t->ncols);
			t->cell = realloc(t->cell, t->cap * sizeof *t->cell);
			if (!t->ncols || !t->cell)
				gl_test_die("csv: out of memory");
		}
		t->ncols[t->nrows] = 0;
		for (;;) {
			char *f = malloc(strlen(s) + 1);
			size_t n = 0;
			if (!f)
				gl_test_die("csv: out of memory");
			if (*s == '"') {
				for (s++;; s++) {
					if (!*s) { /* unterminated quote */
						free(f);
						goto bad;
					}
					if (*s == '"') {
						if (s[1] != '"')
							break;
						s++;
					}
					f[n++] = *s;
				}
				s++;
			} else {
				for (; *s && *s != ',' && *s != '\r' && *s != '\n'; s++) {
					if (*s == '"') { /* a quote inside an unquoted field */
						free(f);
						goto bad;
					}
					f[n++] = *s;
				}
			}
			f[n] = '\0';
			if (col == GL_TEST_CSV_MAX_COLS) {
				free(f);
				goto bad;
			}
			t->cell[t->nrows][col++] = f;
			t->ncols[t->nrows] = col;
			if (*s == ',') {
				s++;
				continue;
			}
			if (s[0] != '\r' || s[1] != '\n') /* records end with CRLF */
				goto bad;
			s += 2;
			break;
		}
		t->nrows++;
	}
	return 0;
bad:
	t->nrows++; /* the cells read so far, for gl_test_csv_free */
	return -1;
}

void gl_test_csv_free(struct gl_test_csv *t)
{
	for (size_t i = 0; i < t->nrows; i++)
		for (size_t k = 0; k < t->ncols[i]; k++)
			free(t->cell[i][k]);
	free(t->ncols);
	free(t->cell);
	memset(t, 0, sizeof *t);
}

int gl_test_csv_col(const struct gl_test_csv *t, const char *name)
{
	for (size_t k = 0; t->nrows && k < t->ncols[0]; k++)
		if (!strcmp(t->cell[0][k], name))
			return (int)k;
	return -1;
}

int gl_test_sql_ok(PGconn *c, const char *sql)
{
	PGresult *r = PQexec(c, sql);
	int good = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
	if (!good)
		fprintf(stderr, "%s: %s", sql, PQerrorMessage(c));
	PQclear(r);
	return good;
}

long long gl_test_exec_dsn(const char *dsn, const char *sql)
{
	PGconn *c = PQconnectdb(dsn);
	PGresult *r = PQexec(c, sql);
	long long n = -1;
	if (PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK)
		n = atoll(PQcmdTuples(r));
	else
		fprintf(stderr, "testlib: %s: %s", sql, PQerrorMessage(c));
	PQclear(r);
	PQfinish(c);
	return n;
}

/* Decodes by bit patterns, then rejects what RFC 3629 forbids: written
 * apart from src/util/utf8.c, which test_utf8 checks against it. */
int gl_test_utf8_valid(const unsigned char *u, size_t n)
{
	size_t i = 0;
	while (i < n) {
		unsigned c = u[i];
		uint32_t cp;
		size_t len;
		if (c < 0x80) {
			i++;
			continue;
		}
		if ((c & 0xE0) == 0xC0) {
			len = 2;
			cp = c & 0x1F;
		} else if ((c & 0xF0) == 0xE0) {
			len = 3;
			cp = c & 0x0F;
		} else if ((c & 0xF8) == 0xF0) {
			len = 4;
			cp = c & 0x07;
		} else {
			return 0;
		}
		if (i + len > n)
			return 0;
		for (size_t k = 1; k < len; k++) {
			if ((u[i + k] & 0xC0) != 0x80)
				return 0;
			cp = (cp << 6) | (u[i + k] & 0x3F);
		}
		if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000))
			return 0;
		if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
			return 0;
		i += len;
	}
	return 1;
}

char *gl_test_scrape_with(const char *text, const char *const *pairs)
{
	size_t cap = strlen(text) + 1, len = 0;
	char *out = malloc(cap);
	const char *p = text;
	if (!out)
		gl_test_die("out of memory");
	while (*p) {
		const char *nl = strchr(p, '\n'), *end = nl ? nl + 1 : p + strlen(p);
		const char *repl = NULL;
		size_t plen = 0;
		for (size_t k = 0; pairs[k]; k += 2) {
			size_t n = strlen(pairs[k]);
			if ((size_t)(end - p) > n && !strncmp(p, pairs[k], n) && p[n] == ' ') {
				repl = pairs[k + 1];
				plen = n;
			}
		}
		{
			size_t need = repl ? plen + 1 + strlen(repl) + 1 : (size_t)(end - p);
			if (len + need + 1 > cap) {
				cap = 2 * (len + need + 1);
				if (!(out = realloc(out, cap)))
					gl_test_die("out of memory");
			}
			if (repl)
				len += (size_t)sprintf(out + len, "%.*s %s\n", (int)plen, p, repl);
			else {
				memcpy(out + len, p, (size_t)(end - p));
				len += (size_t)(end - p);
			}
		}
		p = end;
	}
	out[len] = '\0';
	return out;
}

int gl_test_cut_ok(const char *buf, size_t n, const char *want)
{
	size_t len = strlen(want), cut = n && n - 1 < len ? n - 1 : len;
	if (n == 0 ? buf[0] == '#' : strlen(buf) == cut && !memcmp(buf, want, cut) && buf[n] == '#')
		return 0;
	fprintf(stderr, "testlib: \"%s\" in %zu bytes: got \"%.40s\"\n", want, n, buf);
	return -1;
}

int gl_test_write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	if (fputs(text, f) < 0) {
		fclose(f);
		return -1;
	}
	return fclose(f) ? -1 : 0;
}

int gl_test_connect_from(int port, const char *from)
{
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		return -1;
	inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
	if (from) {
		struct sockaddr_in me = {.sin_family = AF_INET};
		inet_pton(AF_INET, from, &me.sin_addr);
		if (bind(fd, (struct sockaddr *)&me, sizeof me) != 0) {
			close(fd);
			return -1;
		}
	}
	if (connect(fd, (struct sockaddr *)&to, sizeof to) != 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

int gl_test_raw_request(int port, const char *from, const char *req, size_t len, int timeout_ms)
{
	int fd = gl_test_connect_from(port, from), status = -1;
	char buf[4096];
	size_t got = 0, off = 0;
	double until = gl_test_now_s() + timeout_ms / 1000.0;
	if (fd < 0)
		return -1;
	while (off < len) {
		ssize_t n = send(fd, req + off, len - off, MSG_NOSIGNAL);
		if (n <= 0)
			break; /* the server may answer and close before it read everything */
		off += (size_t)n;
	}
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int left = (int)((until - gl_test_now_s()) * 1000);
		ssize_t n;
		if (left <= 0 || poll(&p, 1, left) <= 0)
			break;
		n = recv(fd, buf + got, sizeof buf - 1 - got, 0);
		if (n <= 0) {
			status = 0;
			break;
		}
		got += (size_t)n;
		buf[got] = '\0';
		if (strstr(buf, "\r\n") || got == sizeof buf - 1)
			break;
	}
	if (got && !strncmp(buf, "HTTP/1.", 7) && strlen(buf) > 12)
		status = atoi(buf + 9);
	close(fd);
	return status;
}

int gl_test_wait_closed(int fd, int timeout_ms)
{
	double until = gl_test_now_s() + timeout_ms / 1000.0;
	char buf[512];
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int left = (int)((until - gl_test_now_s()) * 1000);
		ssize_t n;
		if (left <= 0)
			return 0;
		if (poll(&p, 1, left) <= 0)
			continue;
		n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			return 1;
	}
}

long gl_test_peak_rss_kb(int pid)
{
	char path[64], line[256];
	long kb = -1;
	FILE *f;
	snprintf(path, sizeof path, "/proc/%d/status", pid);
	if (!(f = fopen(path, "r")))
		return -1;
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, "VmHWM:", 6))
			kb = atol(line + 6);
	fclose(f);
	return kb;
}

/* ---- audit tampering (what a database superuser can do) ---- */
#include "gl/audit.h"
#include "gl/strbuf.h"

PGconn *gl_test_superuser_conn(const char *dsn)
{
	char adsn[700];
	const char *db = strstr(dsn, "dbname=");
	PGconn *a;
	snprintf(adsn, sizeof adsn, "%s %.*s", gl_test_admin_dsn(), db ? (int)strcspn(db, " ") : 0, db ? db : "");
	a = PQconnectdb(adsn);
	if (PQstatus(a) != CONNECTION_OK) {
		fprintf(stderr, "testlib: superuser connection: %s", PQerrorMessage(a));
		PQfinish(a);
		return NULL;
	}
	return a;
}

int gl_test_audit_recompute(const char *dsn, long long seq, const char *actor)
{
	PGconn *a = gl_test_superuser_conn(dsn);
	PGresult *r;
	unsigned char prev[GL_AUDIT_HASH_LEN], h[GL_AUDIT_HASH_LEN];
	struct gl_strbuf canon = GL_STRBUF_INIT;
	int rc = -1;

	if (!a)
		return -1;
	/* triggers off, one transaction: nobody sees it half done */
	PQclear(PQexec(a, "SET session_replication_role = replica"));
	PQclear(PQexec(a, "BEGIN"));
	PQclear(PQexec(a, "LOCK TABLE audit_log IN EXCLUSIVE MODE"));
	{
		char s[24];
		snprintf(s, sizeof s, "%lld", seq);
		r = PQexecParams(a,
				 "SELECT audit_id, (extract(epoch FROM at) * 1000000)::bigint, actor, source_addr, action,"
				 " object, outcome, detail::text, encode(prev_hash, 'hex') FROM audit_log"
				 " WHERE audit_id >= $1::bigint ORDER BY audit_id",
				 1, NULL, (const char *[]){s}, NULL, NULL, 0);
	}
	if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) == 0 || gl_audit_unhex(PQgetvalue(r, 0, 8), prev))
		goto out;
	for (int i = 0; i < PQntuples(r); i++) {
		long long s = atoll(PQgetvalue(r, i, 0));
		const char *act = s == seq ? actor : PQgetvalue(r, i, 2);
		char ph[2 * GL_AUDIT_HASH_LEN + 1], hh[2 * GL_AUDIT_HASH_LEN + 1], ss[24];
		PGresult *u;
		gl_strbuf_reset(&canon);
		gl_audit_canonical(&canon, s, atoll(PQgetvalue(r, i, 1)), act, PQgetisnull(r, i, 3) ? NULL : PQgetvalue(r, i, 3),
				   PQgetvalue(r, i, 4), PQgetisnull(r, i, 5) ? NULL : PQgetvalue(r, i, 5), PQgetvalue(r, i, 6),
				   PQgetvalue(r, i, 7));
		gl_audit_hash(prev, canon.p, canon.len, h);
		gl_audit_hex(prev, ph);
		gl_audit_hex(h, hh);
		snprintf(ss, sizeof ss, "%lld", s);
		u = PQexecParams(a,
				 "UPDATE audit_log SET actor = $2, prev_hash = decode($3, 'hex'), hash = decode($4, 'hex')"
				 " WHERE audit_id = $1::bigint",
				 4, NULL, (const char *[]){ss, act, ph, hh}, NULL, NULL, 0);
		if (PQresultStatus(u) != PGRES_COMMAND_OK) {
			fprintf(stderr, "testlib: recompute: %s", PQerrorMessage(a));
			PQclear(u);
			goto out;
		}
		PQclear(u);
		memcpy(prev, h, sizeof prev);
	}
	rc = 0;
out:
	PQclear(r);
	PQclear(PQexec(a, rc ? "ROLLBACK" : "COMMIT"));
	gl_strbuf_fini(&canon);
	PQfinish(a);
	return rc;
}

void gl_test_synth_jobs_part(PGconn *c, const char *dsn, long n, const char *from, const char *span, const char *cluster,
			     int part, int nparts)
{
	char sql[2048], ns[24], ps[16], nps[16];
	PGresult *r;
	snprintf(ns, sizeof ns, "%ld", n);
	snprintf(ps, sizeof ps, "%d", part);
	snprintf(nps, sizeof nps, "%d", nparts);
	snprintf(sql, sizeof sql,
		 "INSERT INTO jobs (cluster_id, job_key, job_id, user_name, account, partition, state, submit_at, start_at,"
		 " end_at, elapsed_s, gpu_micro, gpu_type, nodes)"
		 " SELECT (SELECT cluster_id FROM clusters WHERE name = $4), 'db:' || g, g::text, 'u' || (g %% 2000),"
		 " 'acct' || (g %% 200),"
		 " CASE WHEN g %% 3 = 0 THEN 'h100' ELSE 'a100' END, 'COMPLETED', s - interval '10 minutes', s, s + d,"
		 " extract(epoch FROM d)::bigint, (1 + g %% 8) * 1000000, CASE WHEN g %% 3 = 0 THEN 'h100' ELSE 'a100' END,"
		 " ARRAY['n' || (g %% 1250)]"
		 " FROM (SELECT g, $1::timestamptz + (g::double precision / $3::bigint) * $2::interval AS s,"
		 "  make_interval(secs => 300 + (g::bigint * 7919) %% 172800) AS d FROM generate_series(1, $3::bigint) g"
		 "  WHERE g %% $6::integer = $5::integer) x");
	r = PQexecParams(c, "INSERT INTO clusters (name, kind) VALUES ($1, 'slurm') ON CONFLICT (name) DO NOTHING", 1, NULL,
			 (const char *[]){cluster}, NULL, NULL, 0);
	PQclear(r);
	r = PQexecParams(c, sql, 6, NULL, (const char *[]){from, span, ns, cluster, ps, nps}, NULL, NULL, 0);
	if (PQresultStatus(r) != PGRES_COMMAND_OK)
		gl_test_die(PQerrorMessage(c));
	PQclear(r);
	/* only the owner role analyzes a table (the application role's ANALYZE is skipped with a warning) */
	if (gl_test_exec_owner(dsn, "ANALYZE jobs") < 0)
		gl_test_die("ANALYZE jobs as the owner role failed");
}

void gl_test_synth_jobs(PGconn *c, const char *dsn, long n, const char *from, const char *span)
{
	gl_test_synth_jobs_part(c, dsn, n, from, span, "synth", 0, 1);
}

void gl_test_synth_runs(PGconn *c, const char *dsn, long n, const char *from, const char *span, int failed_every)
{
	char sql[512];
	PGresult *r;
	gl_test_synth_jobs(c, dsn, n, from, span);
	snprintf(sql, sizeof sql,
		 "UPDATE jobs SET name = 'train-' || (job_id::bigint %% %ld),"
		 " user_name = 'u' || ((job_id::bigint %% %ld) %% 2000),"
		 " state = CASE WHEN job_id::bigint %% %d = 0 THEN 'FAILED' ELSE state END",
		 n / 4, n / 4, failed_every > 0 ? failed_every : INT_MAX);
	r = PQexec(c, sql);
	if (PQresultStatus(r) != PGRES_COMMAND_OK)
		gl_test_die(PQerrorMessage(c));
	PQclear(r);
	if (gl_test_exec_owner(dsn, "ANALYZE jobs") < 0)
		gl_test_die("ANALYZE jobs as the owner role failed");
}

int gl_test_philly_db(const char *name, char *dsn, size_t n)
{
	static struct gl_test_philly_job jobs[5000];
	char path[PATH_MAX];
	int rc;
	snprintf(path, sizeof path, "%s/%s-philly-sacct.txt", getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp", name);
	if (gl_test_philly_to_sacct(path, NULL, jobs, 5000) < 4000 || gl_test_db_fresh(name, dsn, n))
		return -1;
	rc = gl_test_cli(dsn, "ingest", "sacct", "--cluster", "philly", "--file", path, "--fields", GL_TEST_PHILLY_FIELDS,
			 NULL);
	unlink(path);
	return rc;
}

cJSON *gl_test_json_item(const cJSON *root, const char *array, const char *field, const char *value)
{
	cJSON *it;
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(root, array))
	{
		const cJSON *f = cJSON_GetObjectItem(it, field);
		if (cJSON_IsString(f) && !strcmp(f->valuestring, value))
			return it;
	}
	return NULL;
}

int gl_test_messy_jobs(const char *dsn)
{
	static const char *const snaps[] = {"2026-11-01", "2026-11-03", "2026-11-05"};
	static const char *const ats[] = {"2026-11-01T12:00:00Z", "2026-11-03T00:00:00Z", "2026-11-05T00:00:00Z"};
	char f[256];
	if (gl_test_cli(dsn, "ingest", "sacct", "--cluster", "alpha", "--file",
			gl_test_fixture("tests/fixtures/messy/sacct_alpha.txt"), "--at", "2026-11-07T12:00:00Z", NULL))
		return -1;
	for (int i = 0; i < 3; i++) {
		snprintf(f, sizeof f, "tests/fixtures/messy/pods_beta_%s.json", snaps[i]);
		if (gl_test_cli(dsn, "ingest", "kube", "--cluster", "beta", "--file", gl_test_fixture(f), "--at", ats[i],
				NULL))
			return -1;
	}
	return 0;
}

void gl_test_proc_usage(pid_t pid, double *cpu_s, long *hwm_kb)
{
	char path[64], buf[4096];
	FILE *f;
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	*cpu_s = 0;
	if (f) {
		size_t n = fread(buf, 1, sizeof buf - 1, f);
		char *p;
		unsigned long ut = 0, st = 0;
		buf[n] = '\0';
		fclose(f);
		p = strrchr(buf, ')'); /* the command name may hold spaces */
		if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) == 2)
			*cpu_s = (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
	}
	*hwm_kb = gl_test_peak_rss_kb((int)pid);
}
