/* Embedded PostgreSQL and connections (see include/gl/db.h). */
#include "gl/db.h"
#include "gl/dbcancel.h"
#include "gl/log.h"
#include "gl/proc.h"

#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define PG_USER "postgres" /* initdb refuses root: run the cluster as this user */

int gl_db_is_external(const struct gl_config *cfg)
{
	return gl_config_external_dsn(cfg) != NULL;
}

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 1469598103934665603ULL;
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ULL;
	}
	return h;
}

int gl_db_paths(const struct gl_config *cfg, struct gl_db_paths *p, struct gl_err *err)
{
	const char *dir = cfg->db_embedded_dir;
	struct sockaddr_un sun;
	char cwd[PATH_MAX];

	memset(p, 0, sizeof *p);
	if (dir[0] == '/') {
		snprintf(p->base, sizeof p->base, "%s", dir);
	} else {
		if (!getcwd(cwd, sizeof cwd))
			return gl_err_set(err, GL_EIO, "getcwd: %s", strerror(errno));
		snprintf(p->base, sizeof p->base, "%s/%s", cwd, dir);
	}
	snprintf(p->datadir, sizeof p->datadir, "%s/pg", p->base);
	snprintf(p->logfile, sizeof p->logfile, "%s/log/postgresql.log", p->base);
	snprintf(p->sockdir, sizeof p->sockdir, "%s/run", p->base);
	/* a unix socket path is limited to ~107 bytes: deep checkouts get a short
	 * private directory instead, derived from the base so it is stable */
	if (strlen(p->sockdir) + sizeof("/.s.PGSQL.5432") > sizeof sun.sun_path)
		snprintf(p->sockdir, sizeof p->sockdir, "/tmp/gpuledger-%016llx",
			 (unsigned long long)fnv1a(p->base));
	return 0;
}

int gl_db_dsn(const struct gl_config *cfg, char *buf, size_t n, struct gl_err *err)
{
	const char *ext = gl_config_external_dsn(cfg);
	struct gl_db_paths p;
	int rc;

	if (ext) {
		snprintf(buf, n, "%s", ext);
		return 0;
	}
	if ((rc = gl_db_paths(cfg, &p, err)))
		return rc;
	snprintf(buf, n, "host=%s port=%d dbname=%s user=%s", p.sockdir, GL_DB_EMBEDDED_PORT, GL_DB_NAME, GL_DB_ROLE);
	return 0;
}

static int external_refusal(const struct gl_config *cfg, const char *what, struct gl_err *err)
{
	return gl_err_set(err, GL_ECONFIG,
			  "db %s: an external database is configured (%s); gpuledger does not manage it", what,
			  getenv("GPULEDGER_DSN") && *getenv("GPULEDGER_DSN") ? "GPULEDGER_DSN" : "database.dsn");
}

/* Creates dir (and parents) owned by the cluster user when we are root. */
static int mkdir_owned(const char *dir, mode_t mode, struct gl_err *err)
{
	char tmp[PATH_MAX];
	snprintf(tmp, sizeof tmp, "%s", dir);
	for (char *s = tmp + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(tmp, 0755) && errno != EEXIST)
			return gl_err_set(err, GL_EIO, "mkdir %s: %s", tmp, strerror(errno));
		*s = '/';
	}
	if (mkdir(tmp, mode) && errno != EEXIST)
		return gl_err_set(err, GL_EIO, "mkdir %s: %s", tmp, strerror(errno));
	if (geteuid() == 0) {
		struct passwd *pw = getpwnam(PG_USER);
		if (!pw)
			return gl_err_set(err, GL_EIO, "user '%s' does not exist (install postgresql)", PG_USER);
		if (chown(tmp, pw->pw_uid, pw->pw_gid))
			return gl_err_set(err, GL_EIO, "chown %s: %s", tmp, strerror(errno));
		if (chmod(tmp, mode))
			return gl_err_set(err, GL_EIO, "chmod %s: %s", tmp, strerror(errno));
	}
	return 0;
}

static int run_pg(const struct gl_config *cfg, const char *const *argv, const char *logfile, struct gl_err *err)
{
	struct gl_proc_opts o = {0};
	struct gl_proc_result r;
	char how[64];
	int rc;

	o.run_as = PG_USER;
	o.timeout_s = 120;
	o.stdout_path = logfile;
	if ((rc = gl_proc_run(argv, &o, &r, err)))
		return rc;
	if (!r.exited || r.status != 0) {
		gl_proc_describe(&r, how, sizeof how);
		return gl_err_set(err, GL_EIO, "%s: %s%s%s", argv[0], how, r.stderr_bytes ? ": " : "",
				  r.stderr_excerpt);
	}
	return 0;
}

int gl_db_init(const struct gl_config *cfg, struct gl_err *err)
{
	struct gl_db_paths p;
	char initdb[PATH_MAX + 16], ver[PATH_MAX + 16], conf[PATH_MAX + 32];
	FILE *f = NULL;
	int rc;

	if (gl_db_is_external(cfg))
		return external_refusal(cfg, "init", err);
	if ((rc = gl_db_paths(cfg, &p, err)))
		goto out;
	snprintf(ver, sizeof ver, "%s/PG_VERSION", p.datadir);
	if (access(ver, F_OK) == 0) {
		gl_log(GL_LOG_INFO, "db: cluster already initialised at %s", p.datadir);
		goto out;
	}
	char logdir[PATH_MAX + 8], initlog[PATH_MAX + 16];
	snprintf(logdir, sizeof logdir, "%s/log", p.base);
	snprintf(initlog, sizeof initlog, "%s/initdb.log", logdir);
	if ((rc = mkdir_owned(p.base, 0755, err)) || (rc = mkdir_owned(p.datadir, 0700, err)) ||
	    (rc = mkdir_owned(p.sockdir, 0755, err)) || (rc = mkdir_owned(logdir, 0755, err)))
		goto out;
	if (geteuid() == 0) {
		/* the postgres user must be able to reach the directory; fail with
		 * the fix rather than with initdb's "permission denied" */
		const char *argv[] = {"test", "-w", p.datadir, NULL};
		struct gl_proc_opts o = {.run_as = PG_USER, .timeout_s = 10};
		struct gl_proc_result r;
		if ((rc = gl_proc_run(argv, &o, &r, err)))
			goto out;
		if (!r.exited || r.status != 0) {
			rc = gl_err_set(err, GL_EIO,
					"db init: user '%s' cannot write %s (a parent directory is not searchable); "
					"set database.embedded_dir to a path it can reach, e.g. /var/lib/gpuledger",
					PG_USER, p.datadir);
			goto out;
		}
	}
	snprintf(initdb, sizeof initdb, "%s/initdb", cfg->db_pg_bindir);
	{
		const char *argv[] = {initdb, "-D", p.datadir, "-U", PG_USER, "--auth=trust", "-E", "UTF8",
				      "--no-locale", NULL};
		if ((rc = run_pg(cfg, argv, initlog, err)))
			goto out;
	}
	snprintf(conf, sizeof conf, "%s/postgresql.conf", p.datadir);
	f = fopen(conf, "a");
	if (!f) {
		rc = gl_err_set(err, GL_EIO, "%s: %s", conf, strerror(errno));
		goto out;
	}
	/* unix socket only: no TCP listener at all */
	fprintf(f, "\n# gpuledger embedded cluster\nlisten_addresses = ''\nunix_socket_directories = '%s'\n"
		   "port = %d\ntimezone = 'UTC'\nlog_timezone = 'UTC'\nmax_connections = 100\n",
		p.sockdir, GL_DB_EMBEDDED_PORT);
	if (getenv("GL_PG_FAST"))
		/* throwaway test clusters: durability across an OS crash is not needed */
		fprintf(f, "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n");
	gl_log(GL_LOG_INFO, "db: initialised cluster at %s (socket in %s)", p.datadir, p.sockdir);
out:
	if (f)
		fclose(f);
	return rc;
}

static int ping(const struct gl_db_paths *p, const char *db, const char *user)
{
	char dsn[PATH_MAX + 128];
	PGconn *c;
	int ok;
	snprintf(dsn, sizeof dsn, "host=%s port=%d dbname=%s user=%s connect_timeout=3", p->sockdir,
		 GL_DB_EMBEDDED_PORT, db, user);
	c = PQconnectdb(dsn);
	ok = PQstatus(c) == CONNECTION_OK;
	PQfinish(c);
	return ok;
}

int gl_db_status(const struct gl_config *cfg, int *running, struct gl_err *err)
{
	struct gl_db_paths p;
	int rc;
	*running = 0;
	if (gl_db_is_external(cfg))
		return external_refusal(cfg, "status", err);
	if ((rc = gl_db_paths(cfg, &p, err)))
		return rc;
	{
		char dsn[PATH_MAX + 64];
		snprintf(dsn, sizeof dsn, "host=%s port=%d dbname=postgres connect_timeout=3", p.sockdir,
			 GL_DB_EMBEDDED_PORT);
		*running = PQping(dsn) == PQPING_OK;
	}
	return 0;
}

int gl_db_start(const struct gl_config *cfg, struct gl_err *err)
{
	struct gl_db_paths p;
	char pgctl[PATH_MAX + 16], ver[PATH_MAX + 16], dsn[PATH_MAX + 128];
	PGconn *c = NULL;
	PGresult *r = NULL;
	int rc, running = 0;

	if (gl_db_is_external(cfg))
		return external_refusal(cfg, "start", err);
	if ((rc = gl_db_paths(cfg, &p, err)))
		goto out;
	snprintf(ver, sizeof ver, "%s/PG_VERSION", p.datadir);
	if (access(ver, F_OK) != 0) {
		rc = gl_err_set(err, GL_ENOTFOUND, "db start: no cluster at %s (run 'gpuledger db init')", p.datadir);
		goto out;
	}
	if ((rc = gl_db_status(cfg, &running, err)))
		goto out;
	if (!running) {
		/* the socket dir may live in /tmp and vanish at reboot */
		if ((rc = mkdir_owned(p.sockdir, 0755, err)))
			goto out;
		snprintf(pgctl, sizeof pgctl, "%s/pg_ctl", cfg->db_pg_bindir);
		const char *argv[] = {pgctl, "-D", p.datadir, "-l", p.logfile, "-w", "-t", "60", "start", NULL};
		if ((rc = run_pg(cfg, argv, NULL, err))) {
			gl_err_prefix(err, "db start (see %s): ", p.logfile);
			goto out;
		}
	}
	/* make sure the application role and database exist (idempotent) */
	snprintf(dsn, sizeof dsn, "host=%s port=%d dbname=postgres user=%s", p.sockdir, GL_DB_EMBEDDED_PORT, PG_USER);
	if ((rc = gl_db_connect_dsn(dsn, &c, err)))
		goto out;
	if ((rc = gl_db_query(c, "SELECT 1 FROM pg_roles WHERE rolname = $1", 1, (const char *[]){GL_DB_ROLE}, &r, err)))
		goto out;
	if (PQntuples(r) == 0 && (rc = gl_db_exec(c, "CREATE ROLE " GL_DB_ROLE " LOGIN", err)))
		goto out;
	PQclear(r);
	r = NULL;
	if ((rc = gl_db_query(c, "SELECT 1 FROM pg_database WHERE datname = $1", 1, (const char *[]){GL_DB_NAME}, &r, err)))
		goto out;
	if (PQntuples(r) == 0 &&
	    (rc = gl_db_exec(c, "CREATE DATABASE " GL_DB_NAME " OWNER " GL_DB_ROLE " TEMPLATE template0 ENCODING 'UTF8'", err)))
		goto out;
	if (!ping(&p, GL_DB_NAME, GL_DB_ROLE)) {
		rc = gl_err_set(err, GL_EDB, "db start: server is up but %s@%s is not reachable", GL_DB_ROLE, GL_DB_NAME);
		goto out;
	}
	if (!running)
		gl_log(GL_LOG_INFO, "db: started (socket %s, log %s)", p.sockdir, p.logfile);
out:
	PQclear(r);
	PQfinish(c);
	return rc;
}

int gl_db_stop(const struct gl_config *cfg, struct gl_err *err)
{
	struct gl_db_paths p;
	char pgctl[PATH_MAX + 16];
	int rc, running = 0;

	if (gl_db_is_external(cfg))
		return external_refusal(cfg, "stop", err);
	if ((rc = gl_db_paths(cfg, &p, err)) || (rc = gl_db_status(cfg, &running, err)))
		return rc;
	if (!running)
		return 0;
	snprintf(pgctl, sizeof pgctl, "%s/pg_ctl", cfg->db_pg_bindir);
	const char *argv[] = {pgctl, "-D", p.datadir, "-m", "fast", "-w", "stop", NULL};
	return run_pg(cfg, argv, NULL, err);
}

static void on_notice(void *arg, const char *msg)
{
	/* NOTICEs ("already exists, skipping") are expected noise: debug only */
	gl_log(GL_LOG_DEBUG, "db: %.*s", (int)strcspn(msg, "\n"), msg);
}

/* The settings every session of ours runs with, again after a reset (a
 * new backend starts from the server's defaults). */
static void session_setup(PGconn *c)
{
	/* all times are UTC, whatever the server's default */
	/* JIT compiles the big accounting queries for over a second and wins
	 * nothing back on them: keep it off for our sessions */
	PGresult *r = PQexec(c, "SET TIME ZONE 'UTC'; SET jit = off; SET work_mem = '64MB'");
	PQclear(r);
}

int gl_db_connect_dsn(const char *dsn, PGconn **out, struct gl_err *err)
{
	PGconn *c = PQconnectdb(dsn);
	*out = NULL;
	if (PQstatus(c) != CONNECTION_OK) {
		char msg[512];
		snprintf(msg, sizeof msg, "%s", PQerrorMessage(c));
		msg[strcspn(msg, "\n")] = '\0';
		PQfinish(c);
		return gl_err_set(err, GL_EDB, "database unreachable: %s", msg);
	}
	PQsetNoticeProcessor(c, on_notice, NULL);
	session_setup(c);
	*out = c;
	return 0;
}

int gl_db_reset(PGconn *c)
{
	PQreset(c);
	if (PQstatus(c) != CONNECTION_OK)
		return -GL_EDB;
	session_setup(c);
	return 0;
}

int gl_db_set_statement_timeout(PGconn *c, int64_t ms, struct gl_err *err)
{
	char sql[64];
	snprintf(sql, sizeof sql, "SET statement_timeout = %lld", (long long)(ms > 0 ? ms : 0));
	return gl_db_exec(c, sql, err);
}

/* The SQLSTATE of this thread's last failed statement ("" none): a caller
 * several layers up (the HTTP server) tells a statement_timeout from
 * other failures without every store function passing it along. */
static _Thread_local char t_last_state[6];

const char *gl_db_last_sqlstate(void)
{
	return t_last_state;
}

void gl_db_clear_sqlstate(void)
{
	t_last_state[0] = '\0';
}

int gl_db_connect(const struct gl_config *cfg, PGconn **out, struct gl_err *err)
{
	char dsn[PATH_MAX + 256];
	int rc;
	if ((rc = gl_db_dsn(cfg, dsn, sizeof dsn, err)))
		return rc;
	return gl_db_connect_dsn(dsn, out, err);
}

int gl_db_sqlstate_code(const char *state)
{
	/* no state: the connection broke before an answer. Connection
	 * exceptions, lack of resources, an operator's shutdown or cancel, a
	 * serialization failure or deadlock, a lock not available, a system
	 * error: the database is unavailable now and a retry may succeed. Any
	 * other failed statement (a syntax error, a constraint, bad data) is
	 * ours to mend: retrying repeats it. */
	static const char *const transient[] = {"08", "53", "57", "40", "58", "55P03"};
	if (!state || !*state)
		return GL_EDB;
	for (size_t i = 0; i < GL_ARRAY_LEN(transient); i++)
		if (!strncmp(state, transient[i], strlen(transient[i])))
			return GL_EDB;
	return GL_EINTERNAL;
}

static int pg_fail(PGconn *c, PGresult *r, const char *what, struct gl_err *err)
{
	const char *m = r ? PQresultErrorMessage(r) : PQerrorMessage(c);
	const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
	char msg[400];
	snprintf(t_last_state, sizeof t_last_state, "%s", state ? state : "");
	/* "canceling statement due to user request" names no user: say whose
	 * (only when the stop did send it: a statement_timeout has the same
	 * SQLSTATE, and the last anchor's runs after the stop) */
	if (state && !strcmp(state, "57014") && gl_dbcancel_requested(GL_DBCANCEL_WORK | GL_DBCANCEL_REQUESTS) &&
	    gl_dbcancel_sent())
		return gl_err_set(err, GL_EDB, "%s: cancelled: the daemon is stopping", what);
	snprintf(msg, sizeof msg, "%s", m && *m ? m : PQerrorMessage(c));
	msg[strcspn(msg, "\n")] = '\0';
	return gl_err_set(err, gl_db_sqlstate_code(state), "%s: %s", what, msg);
}

int gl_db_exec(PGconn *c, const char *sql, struct gl_err *err)
{
	PGresult *r = PQexec(c, sql);
	ExecStatusType st = PQresultStatus(r);
	int rc = 0;
	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
		char what[64];
		snprintf(what, sizeof what, "%.40s", sql);
		rc = pg_fail(c, r, what, err);
	}
	PQclear(r);
	return rc;
}

int gl_db_query(PGconn *c, const char *sql, int nparams, const char *const *params, PGresult **res, struct gl_err *err)
{
	PGresult *r = PQexecParams(c, sql, nparams, NULL, params, NULL, NULL, 0);
	ExecStatusType st = PQresultStatus(r);
	if (res)
		*res = NULL;
	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
		char what[64];
		snprintf(what, sizeof what, "%.40s", sql);
		int rc = pg_fail(c, r, what, err);
		PQclear(r);
		return rc;
	}
	if (res)
		*res = r;
	else
		PQclear(r);
	return 0;
}

int gl_db_copy_in(PGconn *c, const char *copy_sql, const char *data, size_t len, struct gl_err *err)
{
	PGresult *r = PQexec(c, copy_sql);
	int rc = 0;
	if (PQresultStatus(r) != PGRES_COPY_IN) {
		rc = pg_fail(c, r, "COPY", err);
		PQclear(r);
		return rc;
	}
	PQclear(r);
	/* large chunks: libpq buffers anyway and fewer calls are cheaper */
	for (size_t off = 0; off < len;) {
		size_t n = len - off > (1u << 20) ? (1u << 20) : len - off;
		if (PQputCopyData(c, data + off, (int)n) != 1) {
			rc = pg_fail(c, NULL, "COPY data", err);
			break;
		}
		off += n;
	}
	if (PQputCopyEnd(c, rc ? "client error" : NULL) != 1 && !rc)
		rc = pg_fail(c, NULL, "COPY end", err);
	while ((r = PQgetResult(c))) {
		if (PQresultStatus(r) != PGRES_COMMAND_OK && !rc)
			rc = pg_fail(c, r, "COPY", err);
		PQclear(r);
	}
	return rc;
}

int gl_db_connect_superuser(const struct gl_config *cfg, PGconn **out, struct gl_err *err)
{
	struct gl_db_paths p;
	char dsn[PATH_MAX + 128];
	int rc;
	*out = NULL;
	if (gl_db_is_external(cfg))
		return gl_err_set(err, GL_ECONFIG, "no superuser connection to an external database");
	if ((rc = gl_db_paths(cfg, &p, err)))
		return rc;
	snprintf(dsn, sizeof dsn, "host=%s port=%d dbname=%s user=%s", p.sockdir, GL_DB_EMBEDDED_PORT, GL_DB_NAME, PG_USER);
	return gl_db_connect_dsn(dsn, out, err);
}

static uint32_t be32(const char *p)
{
	const unsigned char *u = (const unsigned char *)p;
	return (uint32_t)u[0] << 24 | (uint32_t)u[1] << 16 | (uint32_t)u[2] << 8 | u[3];
}

int64_t gl_db_field_int(const struct gl_db_field *f)
{
	switch (f->len) {
	case 8:
		return (int64_t)((uint64_t)be32(f->p) << 32 | be32(f->p + 4));
	case 4:
		return (int32_t)be32(f->p);
	case 2:
		return (int16_t)((uint16_t)(unsigned char)f->p[0] << 8 | (unsigned char)f->p[1]);
	case 1:
		return (unsigned char)f->p[0];
	default:
		return 0;
	}
}

int64_t gl_db_field_ts_us(const struct gl_db_field *f)
{
	/* microseconds since 2000-01-01; the infinities are the int64 ends */
	int64_t v = gl_db_field_int(f);
	if (v == INT64_MIN || v == INT64_MAX)
		return v;
	return v + INT64_C(946684800000000);
}

int gl_db_copy_decode(const char *p, size_t len, int *header, struct gl_db_field *f, int max)
{
	static const char sig[11] = "PGCOPY\n\377\r\n\0";
	size_t at = 0;
	int n;
	if (!*header) {
		if (len < 19 || memcmp(p, sig, sizeof sig))
			return -1;
		at = 19 + be32(p + 15); /* flags, then the header extension */
		if (at > len)
			return -1;
		*header = 1;
		if (at == len)
			return -2; /* the header alone: no row yet */
	}
	if (len - at < 2)
		return -1;
	n = (int16_t)((uint16_t)(unsigned char)p[at] << 8 | (unsigned char)p[at + 1]);
	at += 2;
	if (n == -1)
		return 0;
	if (n < 1 || n > max)
		return -1;
	for (int i = 0; i < n; i++) {
		int32_t l;
		if (len - at < 4)
			return -1;
		l = (int32_t)be32(p + at);
		at += 4;
		if (l < -1 || (l > 0 && (size_t)l > len - at))
			return -1;
		f[i].p = p + at;
		f[i].len = l;
		if (l > 0)
			at += (size_t)l;
	}
	return at == len ? n : -1;
}

int gl_db_copy_out_binary(PGconn *c, const char *copy_sql, int nfields, gl_db_row_fn fn, void *ctx,
			  struct gl_err *err)
{
	struct gl_db_field f[64];
	PGresult *r = PQexec(c, copy_sql);
	char *buf = NULL;
	long row = 0;
	int rc = 0, header = 0, len;
	if (PQresultStatus(r) != PGRES_COPY_OUT) {
		rc = pg_fail(c, r, "COPY", err);
		PQclear(r);
		return rc;
	}
	PQclear(r);
	while ((len = PQgetCopyData(c, &buf, 0)) > 0) {
		int n = rc ? 0 : gl_db_copy_decode(buf, (size_t)len, &header, f, (int)GL_ARRAY_LEN(f));
		if (!rc && n != -2 && n != 0) {
			row++;
			if (n != nfields)
				rc = gl_err_set(err, GL_EDB, "COPY: row %ld: %s (%d fields, %d expected)", row,
						n < 0 ? "malformed binary row" : "wrong width", n, nfields);
			else
				rc = fn(ctx, f, n, err);
		}
		PQfreemem(buf);
		buf = NULL;
	}
	if (len == -2 && !rc)
		rc = pg_fail(c, NULL, "COPY data", err);
	while ((r = PQgetResult(c))) {
		if (PQresultStatus(r) != PGRES_COMMAND_OK && !rc)
			rc = pg_fail(c, r, "COPY", err);
		PQclear(r);
	}
	return rc;
}
