/* Embedded PostgreSQL and connections (see include/gl/db.h and src/store/db_int.h). */
#include "db_int.h"
#include "gl/dbcancel.h"
#include "gl/log.h"
#include "gl/proc.h"

#include <libpq-events.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

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

/* Whether the OS user pw may search every existing directory on the way
 * to path (what the cluster needs to reach its data directory below it);
 * directories still to be made are made reachable by mkdir_owned. */
static int reachable_by(const char *path, const struct passwd *pw)
{
	gid_t groups[64];
	int ng = (int)GL_ARRAY_LEN(groups);
	char tmp[PATH_MAX];
	struct stat st;
	if (getgrouplist(pw->pw_name, pw->pw_gid, groups, &ng) < 0)
		ng = 0;
	snprintf(tmp, sizeof tmp, "%s/", path);
	for (char *s = tmp + 1; *s; s++) {
		mode_t bit = S_IXOTH;
		if (*s != '/')
			continue;
		*s = '\0';
		if (stat(tmp, &st))
			return errno == ENOENT;
		*s = '/';
		if (st.st_uid == pw->pw_uid)
			bit = S_IXUSR;
		else
			for (int i = 0; i < ng; i++)
				if (groups[i] == st.st_gid)
					bit = S_IXGRP;
		if (!(st.st_mode & bit))
			return 0;
	}
	return 1;
}

static int has_cluster(const char *base)
{
	char ver[PATH_MAX + 16];
	snprintf(ver, sizeof ver, "%s/pg/PG_VERSION", base);
	return access(ver, F_OK) == 0;
}

/* As root: the configured base, unless the cluster's OS user cannot reach
 * it and it holds no cluster (then GL_DB_RELOCATE_ROOT/<hash>). */
static void choose_base(struct gl_db_paths *p)
{
	char moved[PATH_MAX];
	struct passwd *pw;
	snprintf(p->base, sizeof p->base, "%s", p->configured);
	if (geteuid() != 0 || has_cluster(p->configured))
		return;
	snprintf(moved, sizeof moved, "%s/%016llx", GL_DB_RELOCATE_ROOT, (unsigned long long)fnv1a(p->configured));
	pw = getpwnam(GL_DB_OS_USER);
	if (has_cluster(moved) || (pw && !reachable_by(p->configured, pw))) {
		snprintf(p->base, sizeof p->base, "%s", moved);
		p->relocated = 1;
	}
}

int gl_db_paths(const struct gl_config *cfg, struct gl_db_paths *p, struct gl_err *err)
{
	const char *dir = cfg->db_embedded_dir;
	struct sockaddr_un sun;
	char cwd[PATH_MAX];

	memset(p, 0, sizeof *p);
	if (dir[0] == '/') {
		snprintf(p->configured, sizeof p->configured, "%s", dir);
	} else {
		if (!getcwd(cwd, sizeof cwd))
			return gl_err_set(err, GL_EIO, "getcwd: %s", strerror(errno));
		snprintf(p->configured, sizeof p->configured, "%s/%s", cwd, dir);
	}
	choose_base(p);
	snprintf(p->datadir, sizeof p->datadir, "%s/pg", p->base);
	snprintf(p->logfile, sizeof p->logfile, "%s/log/postgresql.log", p->base);
	snprintf(p->passfile, sizeof p->passfile, "%s/pgpass", p->base);
	snprintf(p->sockdir, sizeof p->sockdir, "%s/run", p->base);
	/* a unix socket path is limited to ~107 bytes: deep checkouts get a short
	 * private directory instead, derived from the base so it is stable
	 * (/run, where only root creates, when we are root) */
	if (strlen(p->sockdir) + sizeof("/.s.PGSQL.5432") > sizeof sun.sun_path)
		snprintf(p->sockdir, sizeof p->sockdir, "%s/gpuledger-%016llx", geteuid() == 0 ? "/run" : "/tmp",
			 (unsigned long long)fnv1a(p->base));
	return 0;
}

/* conninfo value quoting: a path may hold spaces or quotes */
static void dsn_quote(char *out, size_t n, const char *v)
{
	size_t k = 0;
	if (n < 3)
		return;
	out[k++] = '\'';
	for (; *v && k + 3 < n; v++) {
		if (*v == '\'' || *v == '\\')
			out[k++] = '\\';
		out[k++] = *v;
	}
	out[k++] = '\'';
	out[k] = '\0';
}

static void embedded_dsn(const struct gl_db_paths *p, const char *db, const char *user, char *buf, size_t n)
{
	char host[2 * PATH_MAX + 3], pass[2 * PATH_MAX + 3];
	dsn_quote(host, sizeof host, p->sockdir);
	dsn_quote(pass, sizeof pass, p->passfile);
	snprintf(buf, n, "host=%s port=%d dbname=%s user=%s passfile=%s", host, GL_DB_EMBEDDED_PORT, db, user, pass);
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
	embedded_dsn(&p, GL_DB_NAME, GL_DB_ROLE, buf, n);
	return 0;
}

int gl_db_owner_dsn(const struct gl_config *cfg, char *buf, size_t n, struct gl_err *err)
{
	const char *ext = gl_config_external_dsn(cfg), *mig = gl_config_migrate_dsn(cfg);
	struct gl_db_paths p;
	int rc;
	if (ext) {
		snprintf(buf, n, "%s", mig ? mig : ext);
		return 0;
	}
	if (mig)
		return gl_err_set(err, GL_ECONFIG,
				  "%s is set without an external database (database.dsn, GPULEDGER_DSN): the embedded "
				  "cluster migrates as its own owner role, %s; unset it",
				  getenv("GPULEDGER_MIGRATE_DSN") && *getenv("GPULEDGER_MIGRATE_DSN") ? "GPULEDGER_MIGRATE_DSN"
												: "database.migrate_dsn",
				  GL_DB_OWNER);
	if ((rc = gl_db_paths(cfg, &p, err)))
		return rc;
	embedded_dsn(&p, GL_DB_NAME, GL_DB_OWNER, buf, n);
	return 0;
}

static int external_refusal(const struct gl_config *cfg, const char *what, struct gl_err *err)
{
	return gl_err_set(err, GL_ECONFIG,
			  "db %s: an external database is configured (%s); gpuledger does not manage it", what,
			  getenv("GPULEDGER_DSN") && *getenv("GPULEDGER_DSN") ? "GPULEDGER_DSN" : "database.dsn");
}

/* Creates dir (and parents, 0755) and gives it mode; as root it belongs to
 * the cluster's OS user. A directory that exists is taken over the same
 * way (an older cluster's 0755 directories become private); a symlink or
 * a file in its place is refused (the socket directory may be in /tmp). */
static int mkdir_owned(const char *dir, mode_t mode, struct gl_err *err)
{
	char tmp[PATH_MAX];
	struct stat st;
	snprintf(tmp, sizeof tmp, "%s", dir);
	for (char *s = tmp + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(tmp, 0755) == 0)
			(void)chmod(tmp, 0755); /* whatever the umask: the cluster user passes through */
		else if (errno != EEXIST)
			return gl_err_set(err, GL_EIO, "mkdir %s: %s", tmp, strerror(errno));
		*s = '/';
	}
	if (mkdir(tmp, mode) && errno != EEXIST)
		return gl_err_set(err, GL_EIO, "mkdir %s: %s", tmp, strerror(errno));
	if (lstat(tmp, &st) || !S_ISDIR(st.st_mode))
		return gl_err_set(err, GL_EIO, "%s: not a directory", tmp);
	if (geteuid() == 0) {
		struct passwd *pw = getpwnam(GL_DB_OS_USER);
		if (!pw)
			return gl_err_set(err, GL_EIO, "user '%s' does not exist (install postgresql)", GL_DB_OS_USER);
		if (chown(tmp, pw->pw_uid, pw->pw_gid))
			return gl_err_set(err, GL_EIO, "chown %s: %s", tmp, strerror(errno));
	} else if (st.st_uid != geteuid()) {
		return gl_err_set(err, GL_EIO, "%s belongs to another user (uid %u)", tmp, (unsigned)st.st_uid);
	}
	if (chmod(tmp, mode))
		return gl_err_set(err, GL_EIO, "chmod %s: %s", tmp, strerror(errno));
	return 0;
}

static int run_pg(const struct gl_config *cfg, const char *const *argv, const char *logfile, struct gl_err *err)
{
	struct gl_proc_opts o = {0};
	struct gl_proc_result r;
	char how[64];
	int rc;

	o.run_as = GL_DB_OS_USER;
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

/* 48 hex digits from the kernel's CSPRNG: no quote, colon or backslash,
 * so it goes into SQL, pgpass and initdb's pwfile as it is */
static int gen_password(char out[49], struct gl_err *err)
{
	unsigned char b[24];
	size_t got = 0;
	while (got < sizeof b) {
		ssize_t r = getrandom(b + got, sizeof b - got, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return gl_err_set(err, GL_EIO, "getrandom: %s", strerror(errno));
		got += (size_t)r;
	}
	for (size_t i = 0; i < sizeof b; i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
	return 0;
}

/* Writes path whole (a temporary file renamed over it), mode 0600, owned
 * by uid/gid when we are root (uid (uid_t)-1: ours). */
static int write_private(const char *path, const char *text, uid_t uid, gid_t gid, struct gl_err *err)
{
	char tmp[PATH_MAX + 8];
	int fd, rc = 0;
	size_t len = strlen(text);
	snprintf(tmp, sizeof tmp, "%s.new", path);
	(void)unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return gl_err_set(err, GL_EIO, "%s: %s", tmp, strerror(errno));
	if (write(fd, text, len) != (ssize_t)len || fsync(fd))
		rc = gl_err_set(err, GL_EIO, "%s: %s", tmp, strerror(errno));
	else if (geteuid() == 0 && uid != (uid_t)-1 && fchown(fd, uid, gid))
		rc = gl_err_set(err, GL_EIO, "chown %s: %s", tmp, strerror(errno));
	close(fd);
	if (!rc && rename(tmp, path))
		rc = gl_err_set(err, GL_EIO, "rename %s: %s", tmp, strerror(errno));
	if (rc)
		(void)unlink(tmp);
	return rc;
}

/* The password of role in the passfile (its "*:*:*:role:pw" line). */
static int passfile_get(const struct gl_db_paths *p, const char *role, char pw[49], struct gl_err *err)
{
	char line[256], pfx[80];
	FILE *f = fopen(p->passfile, "r");
	int found = 0;
	if (!f)
		return gl_err_set(err, errno == ENOENT ? GL_ENOTFOUND : GL_EIO, "%s: %s", p->passfile, strerror(errno));
	snprintf(pfx, sizeof pfx, "*:*:*:%s:", role);
	while (!found && fgets(line, sizeof line, f)) {
		line[strcspn(line, "\r\n")] = '\0';
		if (!strncmp(line, pfx, strlen(pfx)) && strlen(line + strlen(pfx)) == 48) {
			snprintf(pw, 49, "%s", line + strlen(pfx));
			found = 1;
		}
	}
	fclose(f);
	return found ? 0 : gl_err_set(err, GL_ENOTFOUND, "%s: no password for role %s", p->passfile, role);
}

/* A new passfile with fresh passwords for the superuser, the owner role
 * and the application role; su_pw gets the superuser's. */
static int passfile_make(const struct gl_db_paths *p, char su_pw[49], struct gl_err *err)
{
	char own_pw[49], app_pw[49], text[320];
	int rc;
	if ((rc = gen_password(su_pw, err)) || (rc = gen_password(own_pw, err)) || (rc = gen_password(app_pw, err)))
		return rc;
	snprintf(text, sizeof text,
		 "# gpuledger embedded cluster: generated role passwords (libpq passfile)\n"
		 "*:*:*:%s:%s\n*:*:*:%s:%s\n*:*:*:%s:%s\n",
		 GL_DB_SUPERUSER, su_pw, GL_DB_OWNER, own_pw, GL_DB_ROLE, app_pw);
	return write_private(p->passfile, text, (uid_t)-1, (gid_t)-1, err);
}

/* role's password, a fresh one added to the passfile when it has none (a
 * passfile written before the owner role existed) */
static int passfile_role(const struct gl_db_paths *p, const char *role, char pw[49], struct gl_err *err)
{
	char *old = NULL, *text = NULL;
	size_t len = 0;
	FILE *f;
	int rc = passfile_get(p, role, pw, err);
	if (rc != -GL_ENOTFOUND || access(p->passfile, F_OK) != 0)
		return rc;
	if (!(f = fopen(p->passfile, "r")))
		return gl_err_set(err, GL_EIO, "%s: %s", p->passfile, strerror(errno));
	old = gl_xcalloc(1, 4097);
	len = fread(old, 1, 4096, f);
	fclose(f);
	if ((rc = gen_password(pw, err)))
		goto out;
	text = gl_xcalloc(1, len + 128);
	snprintf(text, len + 128, "%.*s%s*:*:*:%s:%s\n", (int)len, old, len && old[len - 1] != '\n' ? "\n" : "",
		 role, pw);
	rc = write_private(p->passfile, text, (uid_t)-1, (gid_t)-1, err);
out:
	free(old);
	free(text);
	return rc;
}

/* Every local connection by password: the socket directory is private
 * too, but a password holds even where its mode is loosened. */
static const char hba_text[] =
	"# gpuledger embedded cluster (written by gpuledger db init/start): unix socket only,\n"
	"# a password (scram-sha-256) for every role; the passwords are in the base's pgpass\n"
	"local all all scram-sha-256\n";

static int write_hba(const struct gl_db_paths *p, struct gl_err *err)
{
	char path[PATH_MAX + 16];
	struct passwd *pw = geteuid() == 0 ? getpwnam(GL_DB_OS_USER) : NULL;
	snprintf(path, sizeof path, "%s/pg_hba.conf", p->datadir);
	return write_private(path, hba_text, pw ? pw->pw_uid : (uid_t)-1, pw ? pw->pw_gid : (gid_t)-1, err);
}

/* 1 when pg_hba.conf admits anyone without a password (an older gpuledger
 * made the cluster with --auth=trust), or cannot be read. */
static int hba_trusts(const struct gl_db_paths *p)
{
	char path[PATH_MAX + 16], line[512];
	FILE *f;
	int trust = 0;
	snprintf(path, sizeof path, "%s/pg_hba.conf", p->datadir);
	if (!(f = fopen(path, "r")))
		return 1;
	while (!trust && fgets(line, sizeof line, f)) {
		line[strcspn(line, "#")] = '\0';
		trust = strstr(line, "trust") != NULL || strstr(line, "peer") != NULL || strstr(line, "ident") != NULL;
	}
	fclose(f);
	return trust;
}

/* As root the cluster's OS user must reach its directory; said with the
 * fix rather than as initdb's "permission denied". */
static int check_reach(const struct gl_db_paths *p, struct gl_err *err)
{
	const char *argv[] = {"test", "-w", p->datadir, NULL};
	struct gl_proc_opts o = {.run_as = GL_DB_OS_USER, .timeout_s = 10};
	struct gl_proc_result r;
	int rc;
	if (geteuid() != 0)
		return 0;
	if ((rc = gl_proc_run(argv, &o, &r, err)))
		return rc;
	if (!r.exited || r.status != 0)
		return gl_err_set(err, GL_EIO,
				  "db init: user '%s' cannot write %s (a parent directory is not searchable); "
				  "set database.embedded_dir to a path it can reach, e.g. %s",
				  GL_DB_OS_USER, p->datadir, GL_DB_RELOCATE_ROOT);
	return 0;
}

static void log_relocation(const struct gl_db_paths *p, const char *what)
{
	if (p->relocated)
		gl_log(GL_LOG_INFO,
		       "db %s: database.embedded_dir %s is not reachable by user '%s' (a parent directory is not "
		       "searchable): the cluster lives in %s",
		       what, p->configured, GL_DB_OS_USER, p->base);
}

static int make_dirs(const struct gl_db_paths *p, struct gl_err *err)
{
	char logdir[PATH_MAX + 8];
	snprintf(logdir, sizeof logdir, "%s/log", p->base);
	return mkdir_owned(p->base, 0700, err) ?: mkdir_owned(p->datadir, 0700, err) ?:
	       mkdir_owned(p->sockdir, 0700, err) ?: mkdir_owned(logdir, 0700, err);
}

static int run_initdb(const struct gl_config *cfg, const struct gl_db_paths *p, struct gl_err *err)
{
	char initdb[PATH_MAX + 16], pwfile[PATH_MAX + 16], pwopt[PATH_MAX + 32], initlog[PATH_MAX + 32], su_pw[49],
		text[64];
	struct passwd *pw = geteuid() == 0 ? getpwnam(GL_DB_OS_USER) : NULL;
	int rc;
	snprintf(initdb, sizeof initdb, "%s/initdb", cfg->db_pg_bindir);
	snprintf(initlog, sizeof initlog, "%s/log/initdb.log", p->base);
	snprintf(pwfile, sizeof pwfile, "%s/initdb.pw", p->base);
	snprintf(pwopt, sizeof pwopt, "--pwfile=%s", pwfile);
	if ((rc = passfile_make(p, su_pw, err)))
		return rc;
	snprintf(text, sizeof text, "%s\n", su_pw);
	/* initdb (the cluster's user) reads the superuser's password here */
	if ((rc = write_private(pwfile, text, pw ? pw->pw_uid : (uid_t)-1, pw ? pw->pw_gid : (gid_t)-1, err)))
		return rc;
	{
		const char *argv[] = {initdb, "-D", p->datadir, "-U", GL_DB_SUPERUSER, "--auth-local=scram-sha-256",
				      "--auth-host=scram-sha-256", pwopt, "-E", "UTF8", "--no-locale", NULL};
		rc = run_pg(cfg, argv, initlog, err);
	}
	(void)unlink(pwfile);
	return rc ?: write_hba(p, err);
}

static int upgrade_trust(const struct gl_db_paths *p, struct gl_err *err);
static int ensure_roles(PGconn *c, const struct gl_db_paths *p, int say_old, struct gl_err *err);

/* An older gpuledger's trust cluster: upgraded now when it runs (the
 * passwords are set through it), else by the next start. */
static int init_existing(const struct gl_config *cfg, const struct gl_db_paths *p, struct gl_err *err)
{
	int running = 0, rc;
	if (!hba_trusts(p) && access(p->passfile, F_OK) == 0)
		return 0;
	if ((rc = gl_db_status(cfg, &running, err)))
		return rc;
	if (running)
		return make_dirs(p, err) ?: upgrade_trust(p, err);
	gl_log(GL_LOG_WARN, "db init: the cluster at %s admits local connections without a password: "
			    "'gpuledger db start' makes it ask for one", p->datadir);
	return 0;
}

int gl_db_init(const struct gl_config *cfg, struct gl_err *err)
{
	struct gl_db_paths p;
	char conf[PATH_MAX + 32];
	FILE *f = NULL;
	int rc;

	if (gl_db_is_external(cfg))
		return external_refusal(cfg, "init", err);
	if ((rc = gl_db_paths(cfg, &p, err)))
		goto out;
	log_relocation(&p, "init");
	if (has_cluster(p.base)) {
		gl_log(GL_LOG_INFO, "db: cluster already initialised at %s", p.datadir);
		rc = init_existing(cfg, &p, err);
		goto out;
	}
	if ((rc = make_dirs(&p, err)) || (rc = check_reach(&p, err)) || (rc = run_initdb(cfg, &p, err)))
		goto out;
	snprintf(conf, sizeof conf, "%s/postgresql.conf", p.datadir);
	f = fopen(conf, "a");
	if (!f) {
		rc = gl_err_set(err, GL_EIO, "%s: %s", conf, strerror(errno));
		goto out;
	}
	/* unix socket only: no TCP listener at all */
	fprintf(f, "\n# gpuledger embedded cluster\nlisten_addresses = ''\nunix_socket_directories = '%s'\n"
		   "unix_socket_permissions = 0700\npassword_encryption = 'scram-sha-256'\n"
		   "port = %d\ntimezone = 'UTC'\nlog_timezone = 'UTC'\nmax_connections = 100\n",
		p.sockdir, GL_DB_EMBEDDED_PORT);
	if (getenv("GL_PG_FAST"))
		/* throwaway test clusters: durability across an OS crash is not needed */
		fprintf(f, "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n");
	gl_log(GL_LOG_INFO, "db: initialised cluster at %s (socket in %s, passwords in %s)", p.datadir, p.sockdir,
	       p.passfile);
out:
	if (f)
		fclose(f);
	return rc;
}

static int ping(const struct gl_db_paths *p, const char *db, const char *user)
{
	char dsn[4 * PATH_MAX + 128];
	PGconn *c;
	int ok;
	embedded_dsn(p, db, user, dsn, sizeof dsn);
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
		/* a ping needs no password: the server's answer to the startup says it is up */
		char dsn[2 * PATH_MAX + 64], host[2 * PATH_MAX + 3];
		dsn_quote(host, sizeof host, p.sockdir);
		snprintf(dsn, sizeof dsn, "host=%s port=%d dbname=postgres connect_timeout=3", host,
			 GL_DB_EMBEDDED_PORT);
		*running = PQping(dsn) == PQPING_OK;
	}
	return 0;
}

/* An older gpuledger's cluster admits every local connection (trust):
 * passwords are set while it still does, then pg_hba.conf asks for them. */
static int upgrade_trust(const struct gl_db_paths *p, struct gl_err *err)
{
	char dsn[4 * PATH_MAX + 128], su_pw[49], sql[160];
	PGconn *c = NULL;
	int rc;
	/* trust: no password is asked for */
	embedded_dsn(p, "postgres", GL_DB_SUPERUSER, dsn, sizeof dsn);
	if ((rc = gl_db_connect_dsn(dsn, &c, err))) {
		gl_err_prefix(err, "db start: upgrading the cluster's authentication: ");
		goto out;
	}
	if ((rc = passfile_make(p, su_pw, err)))
		goto out;
	snprintf(sql, sizeof sql, "ALTER ROLE %s PASSWORD '%s'", GL_DB_SUPERUSER, su_pw);
	if ((rc = gl_db_exec(c, "SET password_encryption = 'scram-sha-256'", err)) || (rc = gl_db_exec(c, sql, err)) ||
	    (rc = ensure_roles(c, p, 0, err)) || (rc = write_hba(p, err)) ||
	    (rc = gl_db_exec(c, "SELECT pg_reload_conf()", err)))
		goto out;
	gl_log(GL_LOG_WARN,
	       "db start: the cluster at %s admitted every local connection (trust, made by an older gpuledger): "
	       "it now asks every role for a password (scram-sha-256; generated, in %s)",
	       p->datadir, p->passfile);
out:
	PQfinish(c);
	return rc;
}

static int server_up(const struct gl_config *cfg, const struct gl_db_paths *p, int running, struct gl_err *err)
{
	char pgctl[PATH_MAX + 16];
	int rc;
	/* the socket dir may live in /run or /tmp and vanish at reboot; an
	 * older cluster's directories were 0755: private from now on */
	if ((rc = make_dirs(p, err)))
		return rc;
	if (running)
		return 0;
	snprintf(pgctl, sizeof pgctl, "%s/pg_ctl", cfg->db_pg_bindir);
	const char *argv[] = {pgctl, "-D", p->datadir, "-l", p->logfile, "-w", "-t", "60", "start", NULL};
	if ((rc = run_pg(cfg, argv, NULL, err)))
		gl_err_prefix(err, "db start (see %s): ", p->logfile);
	return rc;
}

/* role: LOGIN, no superuser, its password the passfile's (set at every
 * start: the file is the reference) */
static int ensure_role(PGconn *c, const struct gl_db_paths *p, const char *role, struct gl_err *err)
{
	char pw[49], sql[256];
	PGresult *r = NULL;
	int rc;
	if ((rc = passfile_role(p, role, pw, err)) ||
	    (rc = gl_db_query(c, "SELECT 1 FROM pg_roles WHERE rolname = $1", 1, (const char *[]){role}, &r, err)))
		goto out;
	snprintf(sql, sizeof sql, "%s ROLE %s LOGIN NOSUPERUSER NOCREATEROLE NOCREATEDB NOBYPASSRLS PASSWORD '%s'",
		 PQntuples(r) ? "ALTER" : "CREATE", role, pw);
	if ((rc = gl_db_exec(c, "SET password_encryption = 'scram-sha-256'", err)) || (rc = gl_db_exec(c, sql, err)))
		goto out;
out:
	PQclear(r);
	return rc;
}

/* The owner and application roles, and the database, which the owner
 * role owns when it is made here (an older gpuledger's, owned by the
 * application role, is handed over by gl_db_owner_takeover at migrate,
 * which says so itself: say_old 0). */
static int ensure_roles(PGconn *c, const struct gl_db_paths *p, int say_old, struct gl_err *err)
{
	PGresult *r = NULL;
	int rc;
	if ((rc = ensure_role(c, p, GL_DB_OWNER, err)) || (rc = ensure_role(c, p, GL_DB_ROLE, err)) ||
	    (rc = gl_db_query(c, "SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = $1", 1,
			      (const char *[]){GL_DB_NAME}, &r, err)))
		goto out;
	if (PQntuples(r) == 0)
		rc = gl_db_exec(c, "CREATE DATABASE " GL_DB_NAME " OWNER " GL_DB_OWNER " TEMPLATE template0 ENCODING 'UTF8'",
				err);
	else if (say_old && !strcmp(PQgetvalue(r, 0, 0), GL_DB_ROLE))
		gl_log(GL_LOG_INFO, "db: the database %s belongs to the application role %s (an older gpuledger made it): "
				    "'gpuledger migrate' hands it and its objects to %s",
		       GL_DB_NAME, GL_DB_ROLE, GL_DB_OWNER);
out:
	PQclear(r);
	return rc;
}

/* What the application role owns in the database it is connected to (an
 * older gpuledger's schema), checked from the catalogs: the database, or
 * any relation, function or schema outside the temporary schemas. */
static const char k_app_owns_sql[] =
	"SELECT (SELECT datdba FROM pg_database WHERE datname = current_database()) = r.oid"
	" OR EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
	"  WHERE c.relowner = r.oid AND n.nspname !~ '^pg_(toast_)?temp_')"
	" OR EXISTS (SELECT 1 FROM pg_proc f JOIN pg_namespace n ON n.oid = f.pronamespace"
	"  WHERE f.proowner = r.oid AND n.nspname !~ '^pg_(toast_)?temp_')"
	" OR EXISTS (SELECT 1 FROM pg_namespace n WHERE n.nspowner = r.oid AND n.nspname !~ '^pg_(toast_)?temp_')"
	" FROM pg_roles r WHERE r.rolname = $1";

/* REASSIGN OWNED also takes the objects the role's open sessions made
 * (temporary tables): a daemon still running from before the upgrade
 * fails on them until it restarts, which an upgrade does anyway. The
 * schema CREATE that `audit harden` gave the database owner goes with
 * the ownership; the application role's SELECT and INSERT on the audit
 * log stay (the hardened log is not the owner role's to grant). */
static int takeover(PGconn *su, int *converted, struct gl_err *err)
{
	PGresult *r = NULL;
	int rc;
	*converted = 0;
	if ((rc = gl_db_query(su, k_app_owns_sql, 1, (const char *[]){GL_DB_ROLE}, &r, err)))
		goto out;
	if (PQntuples(r) == 0 || PQgetvalue(r, 0, 0)[0] != 't')
		goto out;
	if ((rc = gl_db_exec(su, "BEGIN", err)) ||
	    (rc = gl_db_exec(su, "ALTER DATABASE " GL_DB_NAME " OWNER TO " GL_DB_OWNER, err)) ||
	    (rc = gl_db_exec(su, "REASSIGN OWNED BY " GL_DB_ROLE " TO " GL_DB_OWNER, err)) ||
	    (rc = gl_db_exec(su, "REVOKE CREATE ON SCHEMA public FROM " GL_DB_ROLE, err)) ||
	    (rc = gl_db_exec(su, "GRANT USAGE, CREATE ON SCHEMA public TO " GL_DB_OWNER, err)) ||
	    (rc = gl_db_exec(su, "COMMIT", err))) {
		PQclear(PQexec(su, "ROLLBACK"));
		goto out;
	}
	*converted = 1;
	gl_log(GL_LOG_WARN,
	       "db: the database %s and its objects belonged to the application role %s (made by an older gpuledger): "
	       "they now belong to %s, which runs the migrations; %s keeps what the service uses",
	       GL_DB_NAME, GL_DB_ROLE, GL_DB_OWNER, GL_DB_ROLE);
out:
	PQclear(r);
	return rc;
}

int gl_db_owner_takeover(const struct gl_config *cfg, int *converted, struct gl_err *err)
{
	struct gl_db_paths p;
	char dsn[4 * PATH_MAX + 128];
	PGconn *c = NULL;
	int rc;
	*converted = 0;
	if (gl_db_is_external(cfg))
		return external_refusal(cfg, "takeover", err);
	if ((rc = gl_db_paths(cfg, &p, err)))
		goto out;
	embedded_dsn(&p, "postgres", GL_DB_SUPERUSER, dsn, sizeof dsn);
	if ((rc = gl_db_connect_dsn(dsn, &c, err)) || (rc = ensure_roles(c, &p, 0, err)))
		goto out;
	PQfinish(c);
	embedded_dsn(&p, GL_DB_NAME, GL_DB_SUPERUSER, dsn, sizeof dsn);
	if ((rc = gl_db_connect_dsn(dsn, &c, err)) || (rc = takeover(c, converted, err)))
		goto out;
out:
	if (rc)
		gl_err_prefix(err, "db: the owner role: ");
	PQfinish(c);
	return rc;
}

int gl_db_start(const struct gl_config *cfg, struct gl_err *err)
{
	struct gl_db_paths p;
	char dsn[4 * PATH_MAX + 128];
	PGconn *c = NULL;
	int rc, running = 0;

	if (gl_db_is_external(cfg))
		return external_refusal(cfg, "start", err);
	if ((rc = gl_db_paths(cfg, &p, err)))
		goto out;
	log_relocation(&p, "start");
	if (!has_cluster(p.base)) {
		rc = gl_err_set(err, GL_ENOTFOUND, "db start: no cluster at %s (run 'gpuledger db init')", p.datadir);
		goto out;
	}
	if ((rc = gl_db_status(cfg, &running, err)) || (rc = server_up(cfg, &p, running, err)))
		goto out;
	if ((hba_trusts(&p) || access(p.passfile, F_OK) != 0) && (rc = upgrade_trust(&p, err)))
		goto out;
	embedded_dsn(&p, "postgres", GL_DB_SUPERUSER, dsn, sizeof dsn);
	if ((rc = gl_db_connect_dsn(dsn, &c, err)) || (rc = ensure_roles(c, &p, 1, err)))
		goto out;
	if (!ping(&p, GL_DB_NAME, GL_DB_ROLE)) {
		rc = gl_err_set(err, GL_EDB, "db start: server is up but %s@%s is not reachable", GL_DB_ROLE, GL_DB_NAME);
		goto out;
	}
	if (!running)
		gl_log(GL_LOG_INFO, "db: started (socket %s, log %s)", p.sockdir, p.logfile);
out:
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

/* gl_db_cancel_on_stop: each connection's slot, ended by libpq's
 * destroy event (PQfinish) wherever the connection is closed */
static int g_cancel_on_stop;
static const char g_evt_name[] = "gpuledger dbcancel";

static int on_conn_event(PGEventId id, void *info, void *pass)
{
	PGconn *c;
	struct gl_dbcancel_slot *s;
	(void)pass;
	if (id == PGEVT_REGISTER)
		return 1;
	c = id == PGEVT_CONNRESET ? ((PGEventConnReset *)info)->conn : id == PGEVT_CONNDESTROY ?
								 ((PGEventConnDestroy *)info)->conn : NULL;
	if (!c || !(s = PQinstanceData(c, on_conn_event)))
		return 1;
	gl_dbcancel_end(s);
	if (id == PGEVT_CONNRESET) /* a new backend: a new cancel key */
		gl_dbcancel_begin(s, gl_db_store(c), GL_DBCANCEL_WORK, "command");
	else
		free(s);
	return 1;
}

void gl_db_cancel_on_stop(void)
{
	g_cancel_on_stop = 1;
}

static void cancel_register(PGconn *c)
{
	struct gl_dbcancel_slot *s;
	if (!g_cancel_on_stop)
		return;
	s = gl_xcalloc(1, sizeof *s);
	if (!PQregisterEventProc(c, on_conn_event, g_evt_name, NULL) || !PQsetInstanceData(c, on_conn_event, s)) {
		gl_log(GL_LOG_WARN, "db: a stop could not cancel this command's statements (no event hook)");
		free(s);
		return;
	}
	gl_dbcancel_begin(s, gl_db_store(c), GL_DBCANCEL_WORK, "command");
}

/* gl_db_set_session: written once at start, before any other thread */
static char g_instance[128];
static char g_idle_txn[24] = "0";

void gl_db_set_session(const char *instance, int64_t idle_in_txn_timeout_s)
{
	snprintf(g_instance, sizeof g_instance, "%s", instance ? instance : "");
	snprintf(g_idle_txn, sizeof g_idle_txn, "%llds", (long long)idle_in_txn_timeout_s);
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
	if (g_instance[0]) {
		/* ingest_runs.instance takes it as its default (sql/055); a
		 * daemon paused inside a transaction loses its session, and the
		 * locks another instance waits on, after the timeout */
		r = PQexecParams(c,
				 "SELECT set_config('gpuledger.instance', $1, false),"
				 " set_config('idle_in_transaction_session_timeout', $2, false)",
				 2, NULL, (const char *[]){g_instance, g_idle_txn}, NULL, NULL, 0);
		PQclear(r);
	}
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
	cancel_register(c);
	*out = c;
	return 0;
}

int gl_db_reset(PGconn *c, struct gl_err *err)
{
	char msg[512];
	PQreset(c);
	if (PQstatus(c) == CONNECTION_OK) {
		session_setup(c);
		return 0;
	}
	snprintf(msg, sizeof msg, "%s", PQerrorMessage(c));
	msg[strcspn(msg, "\n")] = '\0';
	return gl_err_set(err, GL_EDB, "database unreachable: %s", msg);
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

int gl_db_connect_owner(const struct gl_config *cfg, PGconn **out, struct gl_err *err)
{
	char dsn[4 * PATH_MAX + 128];
	int rc;
	*out = NULL;
	if ((rc = gl_db_owner_dsn(cfg, dsn, sizeof dsn, err)))
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
	/* sql/055's fence: another instance holds the lease now */
	if (!strcmp(state, GL_DB_SQLSTATE_FENCED))
		return GL_EBUSY;
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
		return gl_err_set(err, GL_EDB, "%s: cancelled: %s", what,
				  g_cancel_on_stop ? "the command was stopped by a signal" : "the daemon is stopping");
	snprintf(msg, sizeof msg, "%s", m && *m ? m : PQerrorMessage(c));
	msg[strcspn(msg, "\n")] = '\0';
	return gl_err_set(err, gl_db_sqlstate_code(state), "%s: %s", what, msg);
}

int gl_db_fail(PGconn *c, PGresult *r, const char *what, struct gl_err *err)
{
	return pg_fail(c, r, what, err);
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
	char dsn[4 * PATH_MAX + 128];
	int rc;
	*out = NULL;
	if (gl_db_is_external(cfg))
		return gl_err_set(err, GL_ECONFIG, "no superuser connection to an external database");
	if ((rc = gl_db_paths(cfg, &p, err)))
		return rc;
	embedded_dsn(&p, GL_DB_NAME, GL_DB_SUPERUSER, dsn, sizeof dsn);
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
