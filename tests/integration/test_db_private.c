/* The embedded cluster from a checkout under a 0700 directory (root's
 * home), and its privacy (docs/security.md, "The embedded cluster").
 *
 * As root, the real binary runs `db init`, `db start`, `migrate` with the
 * default relative `embedded_dir: var` from a directory inside a 0700 one
 * that the cluster's OS user (postgres) cannot search: the cluster must
 * come up where it can reach it (GL_DB_RELOCATE_ROOT/<hash>, said by
 * `db status`). Then, on that cluster: another OS account (nobody) cannot
 * connect, not even holding the password; root without the password
 * cannot either; the application role is no superuser, owns nothing (the
 * owner role gpuledger_owner owns the database and the schema) and cannot
 * UPDATE, DELETE or TRUNCATE audit_log. A cluster left as an older
 * gpuledger made it (trust, no passfile, a 0755 socket directory) is
 * upgraded by `db start`; one whose every object the application role
 * owns is handed to the owner role by `db start` and `migrate`. The same
 * privacy is checked on the throwaway cluster that tests/run.sh made
 * (GL_TEST_ADMIN_DSN). Real PostgreSQL, real binary. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/db.h"
#include "lib/testlib.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char g_home[512], g_clone[600], g_base[600], g_sock[600], g_pass[600];

/* Runs the real binary in dir (as `make run` does from the clone) with
 * --config gpuledger.yaml and args (NULL-terminated, at most 8); returns
 * the exit status, output in *out. */
static int run_in_v(const char *dir, char **out, const char *const *args)
{
	char path[700];
	int fd, st;
	pid_t pid;
	snprintf(path, sizeof path, "%s/../run.out", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	pid = fork();
	if (pid == 0) {
		const char *argv[12] = {gl_test_bin(), "--config", "gpuledger.yaml"};
		for (int i = 0; i < 8 && args[i]; i++)
			argv[3 + i] = args[i];
		dup2(fd, 1);
		dup2(fd, 2);
		unsetenv("GPULEDGER_DSN");
		unsetenv("GPULEDGER_MIGRATE_DSN");
		unsetenv("GPULEDGER_CONFIG");
		setenv("GL_PG_FAST", "1", 1);
		if (chdir(dir))
			_exit(126);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	close(fd);
	*out = gl_test_read_file(path, NULL);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int run_in(const char *dir, char **out, const char *a1, const char *a2)
{
	return run_in_v(dir, out, (const char *const[]){a1, a2, NULL});
}

static void run_ok_v(const char *const *args, char **out)
{
	int st = run_in_v(g_clone, out, args);
	if (st != 0)
		fprintf(stderr, "gpuledger %s %s: exit %d\n%s\n", args[0], args[1] ? args[1] : "", st, *out);
	assert_int_equal(st, 0);
}

static void run_ok(const char *a1, const char *a2, char **out)
{
	run_ok_v((const char *const[]){a1, a2, NULL}, out);
}

/* after `prefix` in text, up to the end of the word (or of the line) */
static void field_after(const char *text, const char *prefix, const char *stop, char *out, size_t n)
{
	const char *p = strstr(text, prefix);
	size_t k;
	assert_non_null(p);
	p += strlen(prefix);
	k = strcspn(p, stop);
	snprintf(out, n, "%.*s", (int)k, p);
}

static int connects_as(const char *dsn)
{
	PGconn *c = PQconnectdb(dsn);
	int ok = PQstatus(c) == CONNECTION_OK;
	if (!ok)
		fprintf(stderr, "  (refused as expected: %.*s)\n", (int)strcspn(PQerrorMessage(c), "\n"),
			PQerrorMessage(c));
	PQfinish(c);
	return ok;
}

/* The password of role in a passfile, read as root. */
static void password_of(const char *passfile, const char *role, char *pw, size_t n)
{
	char *text = gl_test_read_file(passfile, NULL), pfx[64];
	snprintf(pfx, sizeof pfx, "*:*:*:%s:", role);
	field_after(text, pfx, "\n", pw, n);
	free(text);
	assert_int_equal(strlen(pw), 48);
}

/* In a child that is the OS user nobody: 1 when any of the DSNs connects. */
static int nobody_connects(const char *const *dsns)
{
	struct passwd *pw = getpwnam("nobody");
	int st;
	pid_t pid;
	assert_non_null(pw);
	pid = fork();
	if (pid == 0) {
		int any = 0;
		if (setgroups(0, NULL) || setgid(pw->pw_gid) || setuid(pw->pw_uid))
			_exit(3);
		for (size_t i = 0; dsns[i]; i++)
			any |= connects_as(dsns[i]);
		_exit(any ? 1 : 0);
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	assert_true(WIFEXITED(st));
	assert_int_not_equal(WEXITSTATUS(st), 3);
	return WEXITSTATUS(st) == 1;
}

static int setup(void **state)
{
	FILE *f;
	char cfg[700];
	if (geteuid() != 0) {
		fprintf(stderr, "test_db_private: needs root (as make test runs)\n");
		return -1;
	}
	snprintf(g_home, sizeof g_home, "%s/home0700", getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp");
	snprintf(g_clone, sizeof g_clone, "%s/gpuledger", g_home);
	if ((mkdir(g_home, 0700) && errno != EEXIST) || chmod(g_home, 0700) || (mkdir(g_clone, 0755) && errno != EEXIST))
		return -1;
	snprintf(cfg, sizeof cfg, "%s/gpuledger.yaml", g_clone);
	if (!(f = fopen(cfg, "w")))
		return -1;
	fputs("database:\n  embedded_dir: var\nlog:\n  level: info\n", f);
	return fclose(f);
}

static int teardown(void **state)
{
	char *out = NULL, cmd[1400];
	if (g_base[0]) {
		(void)run_in(g_clone, &out, "db", "stop");
		free(out);
		/* only the directory this test's cluster was given */
		if (!strncmp(g_base, GL_DB_RELOCATE_ROOT "/", strlen(GL_DB_RELOCATE_ROOT) + 1)) {
			snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_base);
			if (system(cmd) != 0)
				fprintf(stderr, "teardown: %s failed\n", cmd);
		}
	}
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_home);
	if (system(cmd) != 0)
		fprintf(stderr, "teardown: %s failed\n", cmd);
	return 0;
}

static void test_clone_in_0700_home(void **state)
{
	char *out;
	struct stat st;
	run_ok("db", "init", &out);
	/* said where it went and why */
	assert_non_null(strstr(out, "is not reachable by user 'postgres'"));
	assert_non_null(strstr(out, GL_DB_RELOCATE_ROOT "/"));
	free(out);
	run_ok("db", "start", &out);
	free(out);
	run_ok("db", "status", &out);
	assert_non_null(strstr(out, "embedded PostgreSQL: running"));
	field_after(out, "the cluster lives in ", "\n", g_base, sizeof g_base);
	field_after(out, "socket ", ")", g_sock, sizeof g_sock);
	field_after(out, "passfile ", " ", g_pass, sizeof g_pass);
	free(out);
	assert_int_equal(strncmp(g_base, GL_DB_RELOCATE_ROOT "/", strlen(GL_DB_RELOCATE_ROOT) + 1), 0);
	run_ok("migrate", NULL, &out);
	assert_non_null(strstr(out, "schema at version"));
	free(out);
	/* what stays in the clone: nothing of the cluster's */
	{
		char pg[700];
		snprintf(pg, sizeof pg, "%s/var/pg", g_clone);
		assert_int_not_equal(stat(pg, &st), 0);
	}
	/* the socket directory and the passwords: the cluster's user, and root, only */
	assert_int_equal(stat(g_sock, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	assert_int_equal(st.st_uid, getpwnam("postgres")->pw_uid);
	assert_int_equal(stat(g_pass, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
}

static void dsn_for(char *dsn, size_t n, const char *user, const char *db, const char *extra)
{
	snprintf(dsn, n, "host=%s port=%d dbname=%s user=%s connect_timeout=5 %s", g_sock, GL_DB_EMBEDDED_PORT, db,
		 user, extra);
}

/* nobody, with and without the passwords; root without them */
static void assert_private(void)
{
	char su_pw[64], app_pw[64], with_pw[4][900], pf[700];
	password_of(g_pass, "postgres", su_pw, sizeof su_pw);
	password_of(g_pass, "gpuledger", app_pw, sizeof app_pw);
	snprintf(pf, sizeof pf, "passfile=%s", g_pass);
	dsn_for(with_pw[0], sizeof with_pw[0], "postgres", "postgres", pf);
	dsn_for(with_pw[1], sizeof with_pw[1], "gpuledger", "gpuledger", pf);
	snprintf(pf, sizeof pf, "password=%s", su_pw);
	dsn_for(with_pw[2], sizeof with_pw[2], "postgres", "postgres", pf);
	snprintf(pf, sizeof pf, "password=%s", app_pw);
	dsn_for(with_pw[3], sizeof with_pw[3], "gpuledger", "gpuledger", pf);
	assert_false(nobody_connects((const char *const[]){with_pw[0], with_pw[1], with_pw[2], with_pw[3], NULL}));
	/* root gets through the directory, but not without a password */
	{
		char nopw[900];
		dsn_for(nopw, sizeof nopw, "postgres", "postgres", "passfile=/nonexistent-gl-test");
		assert_false(connects_as(nopw));
		dsn_for(nopw, sizeof nopw, "gpuledger", "gpuledger", "passfile=/nonexistent-gl-test");
		assert_false(connects_as(nopw));
	}
	assert_true(connects_as(with_pw[0]));
	assert_true(connects_as(with_pw[3]));
}

static void test_private(void **state)
{
	assert_true(g_sock[0]);
	assert_private();
}

static void dsn_for(char *dsn, size_t n, const char *user, const char *db, const char *extra);
static void assert_owns_nothing(PGconn *c);

static void test_app_role_bound(void **state)
{
	char dsn[900], pf[700];
	PGconn *c;
	PGresult *r;
	snprintf(pf, sizeof pf, "passfile=%s", g_pass);
	dsn_for(dsn, sizeof dsn, "gpuledger", "gpuledger", pf);
	c = PQconnectdb(dsn);
	assert_int_equal(PQstatus(c), CONNECTION_OK);
	assert_string_equal(gl_test_qstr(c, "SELECT rolsuper::text FROM pg_roles WHERE rolname = current_user"), "false");
	assert_string_equal(gl_test_qstr(c, "SELECT pg_get_userbyid(relowner) FROM pg_class"
					    " WHERE oid = 'public.audit_log'::regclass"),
			    "gpuledger_audit");
	/* it reads and appends (the writer's job) ... */
	assert_true(gl_test_qint(c, "SELECT count(*) FROM audit_log") >= 0);
	assert_string_equal(gl_test_qstr(c, "SELECT has_table_privilege('audit_log', 'INSERT')::text"), "true");
	/* ... and rewrites nothing */
	static const char *const denied[] = {"UPDATE audit_log SET actor = 'x'", "DELETE FROM audit_log",
					     "TRUNCATE audit_log", "ALTER TABLE audit_log DISABLE TRIGGER USER"};
	for (size_t i = 0; i < sizeof denied / sizeof *denied; i++) {
		r = PQexec(c, denied[i]);
		fprintf(stderr, "  %s: %s", denied[i], PQresultErrorMessage(r));
		assert_int_equal(PQresultStatus(r), PGRES_FATAL_ERROR);
		assert_string_equal(PQresultErrorField(r, PG_DIAG_SQLSTATE), "42501"); /* insufficient_privilege */
		PQclear(r);
	}
	assert_owns_nothing(c);
	PQfinish(c);
}

/* On c (any role): the application role owns nothing in the database, the
 * owner role owns it, and the application role cannot change the schema. */
static void assert_owns_nothing(PGconn *c)
{
	static const char *const denied[] = {"TRUNCATE jobs", "DROP TABLE jobs", "ALTER TABLE jobs ADD COLUMN x int",
					     "CREATE TABLE x (i int)"};
	PGconn *app;
	char dsn[900], pf[700];
	assert_string_equal(gl_test_qstr(c, "SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = 'gpuledger'"),
			    "gpuledger_owner");
	assert_int_equal(gl_test_qint(c, "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
					 " WHERE c.relowner = 'gpuledger'::regrole AND n.nspname !~ '^pg_(toast_)?temp_'"),
			 0);
	assert_int_equal(gl_test_qint(c, "SELECT count(*) FROM pg_proc WHERE proowner = 'gpuledger'::regrole"), 0);
	assert_true(gl_test_qint(c, "SELECT count(*) FROM pg_class WHERE relowner = 'gpuledger_owner'::regrole") > 50);
	snprintf(pf, sizeof pf, "passfile=%s", g_pass);
	dsn_for(dsn, sizeof dsn, "gpuledger", "gpuledger", pf);
	app = PQconnectdb(dsn);
	assert_int_equal(PQstatus(app), CONNECTION_OK);
	for (size_t i = 0; i < sizeof denied / sizeof *denied; i++) {
		PGresult *r = PQexec(app, denied[i]);
		if (PQresultStatus(r) != PGRES_FATAL_ERROR)
			fail_msg("the application role may: %s", denied[i]);
		assert_string_equal(PQresultErrorField(r, PG_DIAG_SQLSTATE), "42501");
		PQclear(r);
	}
	assert_true(gl_test_qint(app, "SELECT count(*) FROM jobs") >= 0);
	PQfinish(app);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

/* Leaves the stopped cluster as an older gpuledger made it: trust for
 * everyone, no passfile, the socket directory 0755. */
static void make_old_cluster(const char *hba)
{
	write_file(hba, "local all all trust\n");
	assert_int_equal(unlink(g_pass), 0);
	assert_int_equal(chmod(g_sock, 0755), 0);
}

static void assert_upgraded(const char *hba)
{
	struct stat st;
	char *text, *out;
	assert_int_equal(stat(g_sock, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	text = gl_test_read_file(hba, NULL);
	assert_null(strstr(text, "trust\n"));
	assert_non_null(strstr(text, "local all all scram-sha-256"));
	free(text);
	assert_private();
	/* and the data is still there, for the application role */
	run_ok("migrate", NULL, &out);
	assert_non_null(strstr(out, "0 applied"));
	free(out);
}

/* `db start` on a stopped trust cluster, `db init` on a running one */
static void test_trust_cluster_upgraded(void **state)
{
	char *out, hba[700], cmd[2000];
	snprintf(hba, sizeof hba, "%s/pg/pg_hba.conf", g_base);
	run_ok("db", "stop", &out);
	free(out);
	make_old_cluster(hba);
	run_ok("db", "start", &out);
	assert_non_null(strstr(out, "trust"));
	free(out);
	assert_upgraded(hba);

	run_ok("db", "stop", &out);
	free(out);
	make_old_cluster(hba);
	/* started as the older gpuledger did */
	snprintf(cmd, sizeof cmd, "runuser -u postgres -- /usr/lib/postgresql/15/bin/pg_ctl -D '%s/pg' -l '%s/log/postgresql.log' -w start >/dev/null",
		 g_base, g_base);
	assert_int_equal(system(cmd), 0);
	run_ok("db", "init", &out);
	assert_non_null(strstr(out, "trust"));
	free(out);
	assert_upgraded(hba);
}

/* One statement (or several) on the cluster as the superuser, in db. */
static void su_exec(const char *db, const char *sql)
{
	char dsn[900], pf[700];
	PGconn *c;
	PGresult *r;
	snprintf(pf, sizeof pf, "passfile=%s", g_pass);
	dsn_for(dsn, sizeof dsn, "postgres", db, pf);
	c = PQconnectdb(dsn);
	assert_int_equal(PQstatus(c), CONNECTION_OK);
	r = PQexec(c, sql);
	if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)
		fail_msg("%s: %s", sql, PQerrorMessage(c));
	PQclear(r);
	PQfinish(c);
}

/* What an older gpuledger left: the role gpuledger owning the database and
 * every object in it, CREATE on the (hardened) schema; no owner role, and
 * no line for one in the passfile. */
static void make_single_role_cluster(void)
{
	char *text = gl_test_read_file(g_pass, NULL), *line, *save = NULL;
	FILE *f;
	su_exec("gpuledger", "ALTER DATABASE gpuledger OWNER TO gpuledger; REASSIGN OWNED BY gpuledger_owner TO gpuledger;"
			     " GRANT USAGE, CREATE ON SCHEMA public TO gpuledger; DROP OWNED BY gpuledger_owner");
	su_exec("postgres", "DROP ROLE gpuledger_owner");
	f = fopen(g_pass, "w");
	assert_non_null(f);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (!strstr(line, ":gpuledger_owner:"))
			fprintf(f, "%s\n", line);
	assert_int_equal(fclose(f), 0);
	free(text);
}

/* `db start` and `migrate` hand such a cluster to the owner role; the
 * data, a token made before included, stays the application's; a second
 * migrate changes nothing. */
static void test_single_role_cluster_converted(void **state)
{
	char *out, *pass;
	char dsn[900], pf[700], tok[128];
	PGconn *su;
	make_single_role_cluster();
	snprintf(pf, sizeof pf, "passfile=%s", g_pass);
	dsn_for(dsn, sizeof dsn, "postgres", "gpuledger", pf);
	run_ok_v((const char *const[]){"token", "create", "--name", "before-split", "--role", "viewer", NULL}, &out);
	snprintf(tok, sizeof tok, "%.*s", (int)strcspn(out, "\n"), out);
	assert_int_equal(strncmp(tok, "glt_", 4), 0);
	free(out);
	su = PQconnectdb(dsn);
	assert_int_equal(PQstatus(su), CONNECTION_OK);
	assert_true(gl_test_qint(su, "SELECT count(*) FROM pg_class WHERE relowner = 'gpuledger'::regrole") > 50);
	PQfinish(su);

	run_ok("db", "start", &out);
	assert_non_null(strstr(out, "belongs to the application role gpuledger (an older gpuledger made it)"));
	free(out);
	pass = gl_test_read_file(g_pass, NULL);
	assert_non_null(strstr(pass, "*:*:*:gpuledger_owner:"));
	free(pass);
	run_ok("migrate", NULL, &out);
	assert_non_null(strstr(out, "they now belong to gpuledger_owner"));
	assert_non_null(strstr(out, "migrate: 0 applied"));
	assert_non_null(strstr(out, "ran as gpuledger_owner"));
	free(out);
	su = PQconnectdb(dsn);
	assert_int_equal(PQstatus(su), CONNECTION_OK);
	assert_owns_nothing(su);
	assert_string_equal(gl_test_qstr(su, "SELECT coalesce(gl_role_owns('gpuledger'), 'nothing')"), "nothing");
	PQfinish(su);
	run_ok_v((const char *const[]){"token", "list", NULL}, &out);
	assert_non_null(strstr(out, "before-split"));
	free(out);
	/* idempotent */
	run_ok("migrate", NULL, &out);
	assert_null(strstr(out, "now belong to"));
	assert_non_null(strstr(out, "migrate: 0 applied"));
	free(out);
	run_ok("db", "start", &out);
	assert_null(strstr(out, "belongs to the application role"));
	free(out);
}

/* tests/run.sh's own throwaway cluster is as private */
static void test_harness_cluster_private(void **state)
{
	char dsn[1200];
	snprintf(dsn, sizeof dsn, "%s connect_timeout=5", gl_test_admin_dsn());
	assert_true(connects_as(dsn));
	assert_false(nobody_connects((const char *const[]){dsn, NULL}));
	snprintf(dsn, sizeof dsn, "%s connect_timeout=5 passfile=/nonexistent-gl-test", gl_test_admin_dsn());
	assert_false(connects_as(dsn));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clone_in_0700_home),
		cmocka_unit_test(test_private),
		cmocka_unit_test(test_app_role_bound),
		cmocka_unit_test(test_trust_cluster_upgraded),
		cmocka_unit_test(test_single_role_cluster_converted),
		cmocka_unit_test(test_harness_cluster_private),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
