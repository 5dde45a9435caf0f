/* A primary and a streaming standby for tests (see pgpair.h). */
#include "pgpair.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BIN "/usr/lib/postgresql/15/bin"

static int g_quiet; /* sh() says nothing of a failure (stopping a killed server) */

/* Runs a shell command as the postgres OS user when we are root. */
static int sh(const char *fmt, ...)
{
	char cmd[4096], full[4400];
	va_list ap;
	int rc;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	if (geteuid() == 0)
		snprintf(full, sizeof full, "runuser -u postgres -- sh -c '%s'", cmd);
	else
		snprintf(full, sizeof full, "sh -c '%s'", cmd);
	rc = system(full);
	if (rc != 0 && !g_quiet)
		fprintf(stderr, "pgpair: failed (%d): %s\n", rc, cmd);
	return rc == 0 ? 0 : -1;
}

/* Root writes into the cluster's existing files: their owner stays. */
static int put_file(const char *path, const char *mode, const char *fmt, ...)
{
	FILE *f = fopen(path, mode);
	va_list ap;
	if (!f) {
		fprintf(stderr, "pgpair: %s: cannot write\n", path);
		return -1;
	}
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	return fclose(f) == 0 ? 0 : -1;
}

static int free_port(void)
{
	for (int tries = 0; tries < 200; tries++) {
		int port = 20000 + rand() % 40000, fd = socket(AF_INET, SOCK_STREAM, 0), ok;
		struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		ok = bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
		close(fd);
		if (ok)
			return port;
	}
	return -1;
}

static int exec_su(const char *dsn, const char *sql)
{
	PGconn *c = PQconnectdb(dsn);
	PGresult *r;
	int ok;
	if (PQstatus(c) != CONNECTION_OK) {
		fprintf(stderr, "pgpair: %s", PQerrorMessage(c));
		PQfinish(c);
		return -1;
	}
	r = PQexec(c, sql);
	ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
	if (!ok)
		fprintf(stderr, "pgpair: %s: %s", sql, PQresultErrorMessage(r));
	PQclear(r);
	PQfinish(c);
	return ok ? 0 : -1;
}

int gl_test_pgpair_start(struct gl_test_pgpair *p, int sync)
{
	char tmpl[] = "/tmp/gltest-pgpair-XXXXXX", hba[320], conf[2][320];
	memset(p, 0, sizeof *p);
	srand((unsigned)time(NULL) ^ (unsigned)getpid());
	if (!mkdtemp(tmpl))
		return -1;
	snprintf(p->dir, sizeof p->dir, "%s", tmpl);
	chmod(p->dir, 0700);
	if (geteuid() == 0) {
		char c[400];
		snprintf(c, sizeof c, "chown postgres:postgres %s", p->dir);
		if (system(c) != 0)
			return -1;
	}
	snprintf(p->password, sizeof p->password, "pw%08x%08x", (unsigned)rand(), (unsigned)rand());
	snprintf(p->data[0], sizeof p->data[0], "%s/primary", p->dir);
	snprintf(p->data[1], sizeof p->data[1], "%s/standby", p->dir);
	p->port[0] = free_port();
	do
		p->port[1] = free_port();
	while (p->port[1] == p->port[0]);
	for (int i = 0; i < 2; i++) {
		snprintf(p->su[i], sizeof p->su[i],
			 "host=127.0.0.1 port=%d dbname=postgres user=postgres password=%s connect_timeout=5", p->port[i],
			 p->password);
		snprintf(p->app[i], sizeof p->app[i],
			 "host=127.0.0.1 port=%d dbname=gpuledger user=gpuledger password=%s connect_timeout=5", p->port[i],
			 p->password);
	}
	snprintf(p->app_rw, sizeof p->app_rw,
		 "host=127.0.0.1,127.0.0.1 port=%d,%d dbname=gpuledger user=gpuledger password=%s connect_timeout=5"
		 " target_session_attrs=read-write",
		 p->port[0], p->port[1], p->password);
	snprintf(p->app_read, sizeof p->app_read,
		 "host=127.0.0.1,127.0.0.1 port=%d,%d dbname=gpuledger user=gpuledger password=%s connect_timeout=5"
		 " target_session_attrs=prefer-standby",
		 p->port[1], p->port[0], p->password);
	snprintf(hba, sizeof hba, "%s/pg_hba.conf", p->data[0]);
	for (int i = 0; i < 2; i++)
		snprintf(conf[i], sizeof conf[i], "%s/postgresql.conf", p->data[i]);
	if (sh("echo %s > %s/pw && " BIN "/initdb -D %s -U postgres --pwfile=%s/pw --auth=scram-sha-256 -E UTF8 "
	       "--no-locale >%s/initdb.log 2>&1",
	       p->password, p->dir, p->data[0], p->dir, p->dir) ||
	    put_file(hba, "w",
		     "local all all scram-sha-256\nhost all all 127.0.0.1/32 scram-sha-256\n"
		     "host replication all 127.0.0.1/32 scram-sha-256\n") ||
	    put_file(conf[0], "a",
		     "listen_addresses = '127.0.0.1'\nunix_socket_directories = '%s'\nport = %d\nfsync = off\n"
		     "full_page_writes = off\nwal_sender_timeout = '5s'\ntimezone = 'UTC'\n",
		     p->dir, p->port[0]) ||
	    sh(BIN "/pg_ctl -D %s -l %s/primary.log -w -t 60 start >/dev/null", p->data[0], p->dir))
		return -1;
	{
		char sql[300];
		char own[300];
		/* the two roles of docs/security.md, "Two roles": the owner
		 * migrates (the tests' GPULEDGER_MIGRATE_DSN names it with the
		 * same password), the service's role owns nothing */
		snprintf(sql, sizeof sql, "CREATE ROLE gpuledger LOGIN PASSWORD '%s'", p->password);
		snprintf(own, sizeof own, "CREATE ROLE gpuledger_owner LOGIN PASSWORD '%s'", p->password);
		if (exec_su(p->su[0], sql) || exec_su(p->su[0], own) ||
		    exec_su(p->su[0], "CREATE DATABASE gpuledger OWNER gpuledger_owner"))
			return -1;
	}
	if (sh(BIN "/pg_basebackup -D %s -R -X stream -c fast -d \"host=127.0.0.1 port=%d user=postgres password=%s\" "
	       ">%s/basebackup.log 2>&1",
	       p->data[1], p->port[0], p->password, p->dir) ||
	    put_file(conf[1], "a", "port = %d\nwal_receiver_status_interval = '1s'\nhot_standby_feedback = on\n",
		     p->port[1]) ||
	    sh(BIN "/pg_ctl -D %s -l %s/standby.log -w -t 60 start >/dev/null", p->data[1], p->dir))
		return -1;
	if (sync && (exec_su(p->su[0], "ALTER SYSTEM SET synchronous_standby_names = '*'") ||
		     exec_su(p->su[0], "ALTER SYSTEM SET synchronous_commit = 'remote_apply'") ||
		     exec_su(p->su[0], "SELECT pg_reload_conf()")))
		return -1;
	return gl_test_pgpair_catch_up(p, 60);
}

int gl_test_pgpair_catch_up(struct gl_test_pgpair *p, int bound_s)
{
	PGconn *a = PQconnectdb(p->su[0]), *b = PQconnectdb(p->su[1]);
	int ok = 0;
	if (PQstatus(a) == CONNECTION_OK && PQstatus(b) == CONNECTION_OK) {
		PGresult *r = PQexec(a, "SELECT pg_current_wal_lsn()::text");
		char lsn[64] = "";
		if (PQresultStatus(r) == PGRES_TUPLES_OK)
			snprintf(lsn, sizeof lsn, "%s", PQgetvalue(r, 0, 0));
		PQclear(r);
		for (int k = 0; k < bound_s * 10 && !ok && lsn[0]; k++) {
			const char *params[1] = {lsn};
			r = PQexecParams(b, "SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn", 1, NULL, params, NULL, NULL, 0);
			ok = PQresultStatus(r) == PGRES_TUPLES_OK && PQgetvalue(r, 0, 0)[0] == 't';
			PQclear(r);
			if (!ok)
				usleep(100000);
		}
	}
	if (!ok)
		fprintf(stderr, "pgpair: the standby did not catch up in %d s\n", bound_s);
	PQfinish(a);
	PQfinish(b);
	return ok ? 0 : -1;
}

void gl_test_pgpair_kill(struct gl_test_pgpair *p, int i)
{
	char path[400], cmd[600];
	FILE *f;
	long pid = 0;
	snprintf(path, sizeof path, "%s/postmaster.pid", p->data[i]);
	if (!(f = fopen(path, "r")))
		return;
	if (fscanf(f, "%ld", &pid) != 1)
		pid = 0;
	fclose(f);
	if (pid <= 0)
		return;
	/* the postmaster and its children: a crash, not a shutdown */
	snprintf(cmd, sizeof cmd, "kill -9 %ld $(ps -o pid= --ppid %ld) 2>/dev/null", pid, pid);
	if (system(cmd) != 0)
		fprintf(stderr, "pgpair: kill: %s\n", cmd);
}

int gl_test_pgpair_promote(struct gl_test_pgpair *p, int i)
{
	return sh(BIN "/pg_ctl -D %s -w -t 60 promote >/dev/null", p->data[i]);
}

void gl_test_pgpair_stop(struct gl_test_pgpair *p)
{
	char cmd[400];
	if (!p->dir[0])
		return;
	for (int i = 0; i < 2; i++) {
		char pidf[400];
		snprintf(pidf, sizeof pidf, "%s/postmaster.pid", p->data[i]);
		g_quiet = 1;
		if (access(pidf, F_OK) == 0)
			(void)sh(BIN "/pg_ctl -D %s -m immediate -w stop >/dev/null 2>&1", p->data[i]);
		g_quiet = 0;
	}
	snprintf(cmd, sizeof cmd, "rm -rf %s", p->dir);
	if (!getenv("GL_TEST_KEEP") && system(cmd) != 0)
		fprintf(stderr, "pgpair: could not remove %s\n", p->dir);
	p->dir[0] = '\0';
}
