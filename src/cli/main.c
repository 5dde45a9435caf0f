/* gpuledger command line: gpuledger [--config FILE] COMMAND [ARGS].
 * Exit codes: 0 ok, 1 runtime error, 2 usage error. */
#include "gl/jsonarena.h"
#include "gl/anchor.h"
#include "gl/audit.h"
#include "gl/budget.h"
#include "gl/cli.h"
#include "gl/config.h"
#include "gl/capplandb.h"
#include "gl/costing.h"
#include "gl/daemon.h"
#include "gl/db.h"
#include "gl/dbcancel.h"
#include "gl/health.h"
#include "gl/ingest.h"
#include "gl/lease.h"
#include "gl/log.h"
#include "gl/proc.h"
#include "gl/migrate.h"
#include "gl/report_sched.h"
#include "gl/routes.h"
#include "gl/sacct_ingest.h"
#include "gl/sacct.h"
#include "gl/sacct_poll.h"
#include "gl/srchealth.h"
#include "gl/server.h"
#include "gl/store.h"

#include <curl/curl.h>
#include <getopt.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define EXIT_RUNTIME GL_CLI_EXIT_RUNTIME
#define EXIT_USAGE GL_CLI_EXIT_USAGE

static volatile int g_stop; /* set from the signal handler; int for gl_daemon_tick */
static void on_signal(int sig)
{
	(void)sig;
	g_stop = 1;
	/* the loop's thread may be blocked in libpq, where no flag reaches it:
	 * the watcher thread cancels its statement (HTTP requests go on until
	 * the server stops) */
	gl_dbcancel_request(GL_DBCANCEL_WORK);
}

/* A command other than serve: SIGTERM/SIGINT used to end it on the spot,
 * leaving its statement running in its server session until it noticed
 * the client gone (a long UPDATE never does) or someone cancelled it.
 * Now the stop cancels the statement (every connection is registered,
 * gl_db_cancel_on_stop), the command fails on it as on any error and
 * records what it must (an ingest run's row), and main() ends by the same
 * signal. A second signal, or GL_CLI_STOP_GRACE_S without an end, ends
 * the process at once as before. */
#define GL_CLI_STOP_GRACE_S (GL_DBCANCEL_GIVEUP_MS / 1000 + 5)
static volatile sig_atomic_t g_cli_sig;
static void on_cli_alarm(int sig)
{
	(void)sig;
	signal(g_cli_sig, SIG_DFL);
	raise(g_cli_sig);
}

static void on_cli_signal(int sig)
{
	g_cli_sig = sig;
	gl_dbcancel_request(GL_DBCANCEL_WORK);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGALRM, on_cli_alarm);
	alarm(GL_CLI_STOP_GRACE_S);
}

static void cli_stop_setup(void)
{
	struct sigaction sa;
	struct gl_err err = {0};
	if (gl_dbcancel_start(&err)) {
		gl_log(GL_LOG_WARN, "%s; a signal ends this command without cancelling its statement", err.msg);
		return;
	}
	gl_db_cancel_on_stop();
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_cli_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

/* SIGHUP's default action ends the process on the spot (no last audit
 * anchor, a source cut mid-batch): a terminal closing on a foreground
 * daemon, or a `systemctl reload`, killed it. It now checks the config
 * file and says whether it is valid; the configuration is read at start
 * only (request threads read it without locks), so applying it is a
 * restart. */
static volatile sig_atomic_t g_hup;
static void on_hup(int sig)
{
	(void)sig;
	g_hup = 1;
}

static void check_on_hup(const struct gl_config *cfg)
{
	struct gl_config fresh;
	struct gl_err err = {0};
	if (!strcmp(cfg->path, "(defaults)")) {
		gl_log(GL_LOG_WARN, "SIGHUP: running on built-in defaults, no configuration file to check");
		return;
	}
	if (gl_config_load(&fresh, cfg->path, &err)) {
		gl_log(GL_LOG_ERROR, "SIGHUP: %s; the running configuration stays", err.msg);
		return;
	}
	gl_config_fini(&fresh);
	gl_log(GL_LOG_WARN, "SIGHUP: %s is valid; the configuration is read at start only: restart gpuledger to apply it",
	       cfg->path);
}

static const char usage_main[] =
	"usage: gpuledger [--config FILE] COMMAND [ARGS]\n"
	"\n"
	"commands:\n"
	"  serve          run the daemon: periodic ingest + HTTP API\n"
	"  migrate        apply database migrations (idempotent)\n"
	"  db             init|start|stop|status of the embedded PostgreSQL; redact stored credentials\n"
	"  ingest         one-shot ingest: ingest sacct --cluster NAME --file F\n"
	"  rates          load|list the cost model (rates, owner rules, idle owners)\n"
	"  rollup         rebuild stale daily aggregates (the daemon does it every minute)\n"
	"  shard          init|attach|list: a ledger sharded over PostgreSQL servers (docs/scale.md)\n"
	"  forecast       backtest the demand forecaster on a CSV time series\n"
	"  report         report showback --month YYYY-MM: monthly showback as CSV, HTML or PDF\n"
	"  token          create|list|revoke API tokens\n"
	"  audit          verify|head|prune|harden the audit log\n"
	"  hook           idle: the idle-GPU shutdown hook for cron (dry-run by default)\n"
	"  check-config   validate the configuration file\n"
	"  version        print the version\n"
	"\n"
	"global options:\n"
	"  -c, --config FILE   configuration file (default: $GPULEDGER_CONFIG, else built-in defaults)\n"
	"  -h, --help          this help; COMMAND --help for a command's\n"
	"      --version       the version (as the version command)\n"
	"\n"
	"exit codes: 0 ok, 1 runtime error, 2 usage error, 3 hook idle found candidates in dry-run,\n"
	"            4 ingest skipped malformed lines, 5 audit verify found the chain broken\n";

/* ---- check-config ---- */
static const char usage_check[] = "usage: gpuledger [--config FILE] check-config\n"
				  "Loads and validates the configuration; prints the effective database target.\n";

/* gpu_models[] is stored with the cost model (gl_costing_load replaces the
 * config's aliases, rates and owner rules together, so names are
 * canonical under the aliases the rates were stored with); a file without
 * a cost model leaves the one `rates load` put in force alone, and its
 * aliases with it. Said, not silent. */
static void warn_idle_aliases(const struct gl_config *cfg)
{
	if (cfg->n_gpu_models && !(cfg->n_rates || cfg->n_owners || cfg->n_idle_owners || cfg->n_workload_types))
		gl_log(GL_LOG_WARN,
		       "%s: gpu_models: %zu aliases not applied: they are loaded with the cost model, and this file has"
		       " no rates, owners or idle_owners; put them in the file given to 'gpuledger rates load'",
		       cfg->path, cfg->n_gpu_models);
}

static int cmd_check_config(struct gl_config *cfg, int argc, char **argv)
{
	char dsn[1024];
	struct gl_err err = {0};
	if (gl_cli_wants_help(argc, argv)) {
		fputs(usage_check, stdout);
		return 0;
	}
	if (argc > 1)
		return gl_cli_usage_error(usage_check, "check-config: unexpected argument '%s'", argv[1]);
	if (gl_db_dsn(cfg, dsn, sizeof dsn, &err) || gl_db_owner_dsn(cfg, dsn, sizeof dsn, &err))
		return gl_cli_fail(&err);
	{
		/* budgets and the report schedule are only read by the daemon later */
		int64_t at;
		if (gl_budget_validate(cfg, &err) || gl_settings_schedule_parse(cfg->reports_schedule, &at, &err)) {
			struct gl_err e2 = {0};
			gl_err_set(&e2, err.code, "%s: %s", cfg->path, err.msg);
			return gl_cli_fail(&e2);
		}
	}
	if (gl_db_is_external(cfg) && !gl_config_migrate_dsn(cfg))
		/* before the ok line, which scripts read to its end */
		printf("database: one role runs the migrations and the service (no database.migrate_dsn): see "
		       "docs/security.md, \"Two roles\"\n");
	warn_idle_aliases(cfg);
	gl_config_warn_shell(cfg);
	printf("%s: ok (%zu sacct sources; database: %s; listen %s)\n", cfg->path, cfg->n_sacct,
	       gl_db_is_external(cfg) ? "external" : "embedded", cfg->listen);
	return 0;
}

/* ---- migrate ---- */
static const char usage_migrate[] =
	"usage: gpuledger [--config FILE] migrate\n"
	"Applies the migrations not yet applied, each in its own transaction, as the role that owns the schema\n"
	"(embedded: " GL_DB_OWNER "; external: database.migrate_dsn, else database.dsn), then grants the service's\n"
	"role what it uses.\n";

/* The lines migrate says about roles (docs/security.md, "Two roles"). */
static void say_roles(const struct gl_migrate_summary *m)
{
	if (m->hardened)
		gl_log(GL_LOG_INFO, "migrate: audit_log handed to gpuledger_audit (the service role may only SELECT and INSERT)");
	if (m->dblink_moved)
		gl_log(GL_LOG_INFO, "migrate: dblink moved into schema gl_dblink, which only %s may use", m->owner);
	if (m->dblink_public)
		gl_log(GL_LOG_WARN, "migrate: dblink is in a schema every role may use, so the central reads its shards "
				    "without it (slower) until a superuser runs `gpuledger audit harden` (docs/security.md)");
	if (strcmp(m->owner, m->app))
		printf("migrate: ran as %s, which owns the schema; the service's role %s owns nothing and was granted "
		       "what it uses\n",
		       m->owner, m->app);
	else
		printf("migrate: one role, %s, owns the schema and serves: see docs/security.md, \"Two roles\"\n", m->owner);
}

static int cmd_migrate(struct gl_config *cfg, int argc, char **argv)
{
	struct gl_err err = {0};
	struct gl_migrate_summary m;
	if (gl_cli_wants_help(argc, argv)) {
		fputs(usage_migrate, stdout);
		return 0;
	}
	if (argc > 1)
		return gl_cli_usage_error(usage_migrate, "migrate: unexpected argument '%s'", argv[1]);
	if (gl_migrate_database(cfg, &m, &err))
		return gl_cli_fail(&err);
	printf("migrate: %d applied, schema at version %d\n", m.applied, m.version);
	say_roles(&m);
	return 0;
}

/* ---- db ---- */
static const char usage_db[] =
	"usage: gpuledger [--config FILE] db init|start|stop|status\n"
	"       gpuledger [--config FILE] db redact [--dry-run]\n"
	"init|start|stop|status manage the embedded PostgreSQL under database.embedded_dir (unix socket\n"
	"only, a private socket directory, a generated password per role in its pgpass); as root,\n"
	"initdb/pg_ctl run as the 'postgres' user, and a directory it cannot reach moves the cluster to\n"
	"" GL_DB_RELOCATE_ROOT "/<hash of the path> (said by status). Not available with an external DSN.\n"
	"redact blanks credentials in ingest runs stored before they were blanked on the way in (any DSN).\n";

static int cmd_db(struct gl_config *cfg, int argc, char **argv)
{
	struct gl_err err = {0};
	int rc = 0;
	if (gl_cli_wants_help(argc, argv)) {
		fputs(usage_db, stdout);
		return 0;
	}
	if (argc >= 2 && !strcmp(argv[1], "redact"))
		return gl_cli_db_redact(cfg, argc - 1, argv + 1);
	if (argc != 2)
		return gl_cli_usage_error(usage_db, "db: expected one of init|start|stop|status|redact");
	if (!strcmp(argv[1], "init"))
		rc = gl_db_init(cfg, &err);
	else if (!strcmp(argv[1], "start"))
		rc = gl_db_start(cfg, &err);
	else if (!strcmp(argv[1], "stop"))
		rc = gl_db_stop(cfg, &err);
	else if (!strcmp(argv[1], "status")) {
		int running = 0;
		struct gl_db_paths p;
		if ((rc = gl_db_status(cfg, &running, &err)) == 0 && (rc = gl_db_paths(cfg, &p, &err)) == 0) {
			printf("embedded PostgreSQL: %s (data %s, socket %s)\n", running ? "running" : "stopped",
			       p.datadir, p.sockdir);
			printf("passfile %s (roles %s, %s, %s)\n", p.passfile, GL_DB_SUPERUSER, GL_DB_OWNER, GL_DB_ROLE);
			if (p.relocated)
				printf("database.embedded_dir %s is not reachable by user '%s': the cluster lives in %s\n",
				       p.configured, GL_DB_OS_USER, p.base);
			return running ? 0 : 3;
		}
	} else
		return gl_cli_usage_error(usage_db, "db: unknown action '%s'", argv[1]);
	if (rc)
		return gl_cli_fail(&err);
	return 0;
}

/* ---- ingest ---- */
static const struct {
	const char *name;
	int (*fn)(struct gl_config *cfg, int argc, char **argv);
	const char *summary;
} ingest_cmds[] = {
	{"sacct", gl_cli_ingest_sacct, "ingest sacct --cluster NAME --file F [--delimiter C] [--fields LIST]"},
	{"kube", gl_cli_ingest_kube, "ingest kube --cluster NAME --file F [--at TIME]"},
	{"dcgm", gl_cli_ingest_dcgm, "ingest dcgm --cluster NAME --file F --at TIME [--node NAME]"},
	{"nvidia-smi", gl_cli_ingest_nvsmi,
	 "ingest nvidia-smi --cluster NAME --node N --file F [--fields LIST] [--at TIME] [--apps F --pids F]"},
	{"slurm-nodes", gl_cli_ingest_slurm_nodes,
	 "ingest slurm-nodes --cluster NAME --nodes F [--events F] [--reservations F] [--at TIME]"},
	{"kube-nodes", gl_cli_ingest_kube_nodes, "ingest kube-nodes --cluster NAME --file F [--at TIME]"},
	{"serving", gl_cli_ingest_serving,
	 "ingest serving --file F --at TIME --endpoint NAME [--cluster C] [--pod NS/NAME | --job ID | --job-name N]"},
	/* further sources register here */
};

static int cmd_ingest(struct gl_config *cfg, int argc, char **argv)
{
	if (argc >= 2) {
		for (size_t i = 0; i < GL_ARRAY_LEN(ingest_cmds); i++)
			if (!strcmp(argv[1], ingest_cmds[i].name))
				return ingest_cmds[i].fn(cfg, argc - 1, argv + 1);
	}
	{
		FILE *o = argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) ? stdout : stderr;
		fprintf(o, "usage: gpuledger [--config FILE] ingest SOURCE ...\nsources:\n");
		for (size_t i = 0; i < GL_ARRAY_LEN(ingest_cmds); i++)
			fprintf(o, "  gpuledger %s\n", ingest_cmds[i].summary);
		fprintf(o, "'gpuledger ingest SOURCE --help' for details.\n");
		if (argc >= 2 && o == stderr)
			fprintf(stderr, "gpuledger: ingest: unknown source '%s'\n", argv[1]);
		return o == stdout ? 0 : EXIT_USAGE;
	}
}

/* ---- serve ---- */

/* This instance's identity and lease keeper (docs/scale.md, "Several
 * daemons"): each periodic job runs where its lease is held. A daemon
 * session left idle inside a transaction (a paused process) is ended by
 * the server after twice the lease, at least GL_SERVE_IDLE_TXN_MIN_S, so
 * the locks it holds do not stall the instance that took over. */
#define GL_SERVE_IDLE_TXN_MIN_S 60
static void serve_identity(const struct gl_config *cfg, struct gl_daemon_self *self)
{
	int64_t idle = 2 * cfg->lease_ttl_s;
	memset(self, 0, sizeof *self);
	gl_lease_identity(cfg->instance_name, (int64_t)time(NULL), self->instance, sizeof self->instance, self->holder,
			  sizeof self->holder);
	self->lease_ttl_s = cfg->lease_ttl_s;
	gl_db_set_session(self->instance, idle > GL_SERVE_IDLE_TXN_MIN_S ? idle : GL_SERVE_IDLE_TXN_MIN_S);
	gl_health_instance(self->instance);
}

/* Renewals three times per shortest lease of any job here. */
static int serve_keeper(const struct gl_config *cfg, const struct gl_daemon_self *self,
			const struct gl_daemon_source *srcs, size_t n, int64_t anchor_interval_s,
			struct gl_lease_keeper **out, struct gl_err *err)
{
	char dsn[1024];
	int64_t ttl = gl_daemon_lease_ttl(self, anchor_interval_s);
	int rc;
	for (size_t i = 0; i < n; i++) {
		int64_t t = gl_daemon_lease_ttl(self, srcs[i].interval_s);
		if (srcs[i].leased && t < ttl)
			ttl = t;
	}
	if ((rc = gl_db_dsn(cfg, dsn, sizeof dsn, err)))
		return rc;
	return gl_lease_keeper_start(dsn, self->holder, ttl * 1000 / 3, out, err);
}

static const char usage_serve[] =
	"usage: gpuledger [--config FILE] serve [--listen ADDR:PORT] [--port-file F] [--no-ingest]\n"
	"Runs the HTTP API and the periodic ingest loop until SIGINT/SIGTERM.\n"
	"--listen overrides server.listen (port 0 = any free port, logged and written to --port-file).\n";

/* The daemon's database before it serves: open and migrated (failing early
 * and clearly when it is not there), the embedded cluster hardened, and the
 * config's cost model and capacity plan (checked against the fleet,
 * file:line) the ones in force. */
static int serve_prepare(const struct gl_config *cfg, struct gl_store **st, struct gl_err *err)
{
	int rc;
	/* fail early and clearly when the database is not there or not
	 * migrated; the owner role is needed only when a migration is due */
	if ((rc = gl_store_open(cfg, st, err)))
		return rc;
	if (gl_migrate_pending(*st)) {
		struct gl_migrate_summary m;
		if ((rc = gl_migrate_database(cfg, &m, err)))
			return rc;
		gl_log(GL_LOG_INFO, "serve: migrated as %s (%d applied, schema at version %d)", m.owner, m.applied,
		       m.version);
	}
	warn_idle_aliases(cfg);
	gl_config_warn_shell(cfg);
	if (cfg->n_rates || cfg->n_owners || cfg->n_idle_owners || cfg->n_workload_types) {
		struct gl_costing_summary sum;
		if ((rc = gl_costing_load(*st, cfg, "system", &sum, err)))
			return rc;
	}
	return gl_capplandb_load_config(*st, cfg, "system", (int64_t)time(NULL), err);
}

static int cmd_serve(struct gl_config *cfg, int argc, char **argv)
{
	static const struct option opts[] = {
		{"listen", required_argument, 0, 'l'}, {"port-file", required_argument, 0, 'p'},
		{"no-ingest", no_argument, 0, 'n'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0},
	};
	struct gl_server_opts so = {0};
	struct gl_server *srv = NULL;
	struct gl_daemon_source *srcs = NULL, anchor_job;
	struct gl_daemon_self self;
	struct gl_lease_keeper *keeper = NULL;
	size_t nsrc = 0;
	struct gl_err err = {0};
	struct gl_anchor_state anchor = {GL_LOG_LIMITER_INIT(600), GL_LOG_LIMITER_INIT(600)};
	struct gl_store *st = NULL;
	int ch, rc = 0, no_ingest = 0;
	struct sigaction sa;

	if (gl_cli_wants_help(argc, argv)) {
		fputs(usage_serve, stdout);
		return 0;
	}
	optind = 1;
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 'l': so.listen = optarg; break;
		case 'p': so.port_file = optarg; break;
		case 'n': no_ingest = 1; break;
		default: return gl_cli_usage_error(usage_serve, "serve: bad option");
		}
	}
	if (optind < argc)
		return gl_cli_usage_error(usage_serve, "serve: unexpected argument '%s'", argv[optind]);

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = on_hup;
	sa.sa_flags = SA_RESTART; /* a check, not a stop: calls under way go on */
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (gl_dbcancel_start(&err)) {
		rc = gl_cli_fail(&err);
		goto out;
	}
	serve_identity(cfg, &self);
	if (serve_prepare(cfg, &st, &err)) {
		rc = gl_cli_fail(&err);
		goto out;
	}
	if (gl_server_start(cfg, &so, &srv, &err)) {
		rc = gl_cli_fail(&err);
		goto out;
	}
	{
		/* the bound port (port 0 picks one), for people and scripts */
		char host[256];
		const char *l = so.listen ? so.listen : cfg->listen;
		snprintf(host, sizeof host, "%.*s", (int)(strrchr(l, ':') - l), l);
		gl_log(GL_LOG_INFO,
		       "serve: listening on http://%s:%u/ (instance %s; %zu sacct, %zu kube, %zu dcgm sources, %zu serving endpoints%s)",
		       host, (unsigned)gl_server_port(srv), self.instance, cfg->n_sacct, cfg->n_kube, cfg->n_dcgm,
		       cfg->n_serving,
		       no_ingest ? ", ingest off" : "");
	}
	nsrc = gl_daemon_sources(cfg, &srcs);
	/* the anchor file is written by one instance at a time, like a source */
	memset(&anchor_job, 0, sizeof anchor_job);
	snprintf(anchor_job.name, sizeof anchor_job.name, "audit:anchor");
	anchor_job.interval_s = cfg->audit_anchor_interval_s;
	anchor_job.leased = 1;
	anchor_job.lim = (struct gl_log_limiter)GL_LOG_LIMITER_INIT(600);
	if (serve_keeper(cfg, &self, srcs, no_ingest ? 0 : nsrc, cfg->audit_anchor_interval_s, &keeper, &err)) {
		rc = gl_cli_fail(&err);
		goto out;
	}
	/* a signal also kills a source command still running, so a stop never
	 * waits on a slow or hung sacct/kubectl */
	gl_proc_set_stop_flag(&g_stop);
	/* one tick loop; each source runs at its own interval (Redis serverCron style) */
	while (!g_stop) {
		if (g_hup) {
			g_hup = 0;
			check_on_hup(cfg);
		}
		if (!no_ingest)
			gl_daemon_tick(st, cfg, &self, srcs, nsrc, (int64_t)time(NULL), &g_stop);
		if (cfg->audit_anchor_file[0] && (int64_t)time(NULL) >= anchor_job.next_s && !gl_store_revive(st, &err)) {
			anchor_job.next_s = (int64_t)time(NULL) + cfg->audit_anchor_interval_s;
			/* not held: next_s is the next try */
			if (gl_daemon_lease(st, &self, &anchor_job, (int64_t)time(NULL)))
				gl_anchor_tick(st, cfg, &anchor, (int64_t)time(NULL), 0);
			if (gl_store_up(st) && gl_lease_unfence(st, &err))
				gl_log(GL_LOG_WARN, "audit: anchor: %s", err.msg);
		}
		for (int t = 0; t < 5 && !g_stop; t++)
			usleep(100 * 1000);
	}
	gl_log(GL_LOG_INFO, "serve: stopping");
	/* what runs from here on (the last anchor's command) runs to its end */
	gl_proc_set_stop_flag(NULL);
	/* the requests in flight end first: their statements are cancelled
	 * like the sources' (docs/ingest.md, "Stopping the daemon"), so this
	 * waits on no lock; the writer has drained: the last anchor covers
	 * every request served */
	gl_server_stop(srv);
	srv = NULL;
	/* the stop's anchor is the holder's; another instance goes on anchoring */
	if (anchor_job.token)
		gl_anchor_tick(st, cfg, &anchor, (int64_t)time(NULL), 1);
out:
	/* the leases expire now: the other instances take the jobs over at
	 * their next try (a rolling restart waits no ttl) */
	gl_lease_keeper_stop(keeper);
	gl_server_stop(srv);
	/* after the server: no request thread holds a slot any more */
	gl_dbcancel_stop();
	free(srcs);
	gl_store_close(st);
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"config", required_argument, 0, 'c'}, {"help", no_argument, 0, 'h'}, {"version", no_argument, 0, 'V'},
		{0, 0, 0, 0},
	};
	const char *config_path = getenv("GPULEDGER_CONFIG");
	struct gl_config cfg;
	struct gl_err err = {0};
	enum gl_log_level lvl;
	int ch, rc;
	const char *cmd;

	/* libcurl's global state, once, before any thread (the dcgm scraper) */
	curl_global_init(CURL_GLOBAL_DEFAULT);
	/* the cJSON hooks are process-wide: installed before any thread */
	gl_jsonarena_init();
	/* ingest/ reports each source's health through its own sink (it may
	 * not include a daemon header): here it goes to the registry that
	 * /metrics and /healthz read */
	gl_srchealth_set_sink(gl_health_report);
	/* libpq waits for ever on a server that takes the connection and never
	 * answers (a hung host, a half-open network path): the daemon's tick
	 * and its reconnects would stop with it. A connection string's own
	 * connect_timeout, or the environment's, still wins. */
	setenv("PGCONNECT_TIMEOUT", "10", 0);
	/* stop at the command: its options are its own */
	while ((ch = getopt_long(argc, argv, "+c:h", opts, NULL)) != -1) {
		switch (ch) {
		case 'c': config_path = optarg; break;
		case 'h': fputs(usage_main, stdout); return 0;
		/* what packagers and scripts try first */
		case 'V': printf("gpuledger %s\n", GL_VERSION); return 0;
		default: fputs(usage_main, stderr); return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		fputs(usage_main, stderr);
		return EXIT_USAGE;
	}
	cmd = argv[optind];
	if (!strcmp(cmd, "version")) {
		static const char usage_version[] = "usage: gpuledger version\n  prints the version (as --version)\n";
		const char *a = optind + 1 < argc ? argv[optind + 1] : NULL;
		if (a && (!strcmp(a, "--help") || !strcmp(a, "-h"))) {
			fputs(usage_version, stdout);
			return 0;
		}
		if (a) {
			fprintf(stderr, "gpuledger version: unexpected argument '%s'\n%s", a, usage_version);
			return EXIT_USAGE;
		}
		printf("gpuledger %s\n", GL_VERSION);
		return 0;
	}
	if (!strcmp(cmd, "help")) {
		fputs(usage_main, stdout);
		return 0;
	}
	if (config_path && !*config_path)
		config_path = NULL;
	if (gl_config_load(&cfg, config_path, &err)) {
		gl_log(GL_LOG_ERROR, "%s", err.msg);
		return EXIT_RUNTIME;
	}
	if (gl_log_parse_level(cfg.log_level, &lvl)) {
		gl_log(GL_LOG_ERROR, "%s: log.level: unknown level '%s'", cfg.path, cfg.log_level);
		gl_config_fini(&cfg);
		return EXIT_RUNTIME;
	}
	gl_log_set_level(lvl);
	argc -= optind;
	argv += optind;
	if (strcmp(cmd, "serve") != 0) {
		/* rows a command writes on its own behalf (ingest runs) name its user */
		char actor[96];
		gl_cli_actor(actor, sizeof actor);
		gl_audit_set_process_actor(actor);
		cli_stop_setup();
	}
	if (!strcmp(cmd, "check-config"))
		rc = cmd_check_config(&cfg, argc, argv);
	else if (!strcmp(cmd, "migrate"))
		rc = cmd_migrate(&cfg, argc, argv);
	else if (!strcmp(cmd, "db"))
		rc = cmd_db(&cfg, argc, argv);
	else if (!strcmp(cmd, "ingest"))
		rc = cmd_ingest(&cfg, argc, argv);
	else if (!strcmp(cmd, "rollup"))
		rc = gl_cli_rollup(&cfg, argc, argv);
	else if (!strcmp(cmd, "shard"))
		rc = gl_cli_shard(&cfg, argc, argv);
	else if (!strcmp(cmd, "report"))
		rc = gl_cli_report(&cfg, argc, argv);
	else if (!strcmp(cmd, "rates"))
		rc = gl_cli_rates(&cfg, argc, argv);
	else if (!strcmp(cmd, "forecast"))
		rc = gl_cli_forecast(&cfg, argc, argv);
	else if (!strcmp(cmd, "serve"))
		rc = cmd_serve(&cfg, argc, argv);
	else if (!strcmp(cmd, "token"))
		rc = gl_cli_token(&cfg, argc, argv);
	else if (!strcmp(cmd, "audit"))
		rc = gl_cli_audit(&cfg, argc, argv);
	else if (!strcmp(cmd, "hook"))
		rc = gl_cli_hook(&cfg, argc, argv);
	else {
		fprintf(stderr, "gpuledger: unknown command '%s'\n%s", cmd, usage_main);
		rc = EXIT_USAGE;
	}
	gl_config_fini(&cfg);
	if (g_cli_sig) {
		/* the command's statement was cancelled and its error said: end
		 * as the signal asked, so the caller sees which */
		gl_dbcancel_stop();
		signal(g_cli_sig, SIG_DFL);
		raise(g_cli_sig);
	}
	return rc;
}
