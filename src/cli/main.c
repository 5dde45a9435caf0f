/* gpuledger command line: gpuledger [--config FILE] COMMAND [ARGS].
 * Exit codes: 0 ok, 1 runtime error, 2 usage error. */
#include "gl/config.h"
#include "gl/db.h"
#include "gl/ingest.h"
#include "gl/log.h"
#include "gl/migrate.h"
#include "gl/routes.h"
#include "gl/sacct_ingest.h"
#include "gl/sacct.h"
#include "gl/sacct_poll.h"
#include "gl/server.h"

#include <getopt.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define EXIT_RUNTIME 1
#define EXIT_USAGE 2

static volatile sig_atomic_t g_stop;
static void on_signal(int sig)
{
	(void)sig;
	g_stop = 1;
}

static const char usage_main[] =
	"usage: gpuledger [--config FILE] COMMAND [ARGS]\n"
	"\n"
	"commands:\n"
	"  serve          run the daemon: periodic ingest + HTTP API\n"
	"  migrate        apply database migrations (idempotent)\n"
	"  db             init|start|stop|status of the embedded PostgreSQL\n"
	"  ingest         one-shot ingest: ingest sacct --cluster NAME --file F\n"
	"  check-config   validate the configuration file\n"
	"  version        print the version\n"
	"\n"
	"global options:\n"
	"  -c, --config FILE   configuration file (default: $GPULEDGER_CONFIG, else built-in defaults)\n"
	"  -h, --help          this help; COMMAND --help for a command's\n"
	"\n"
	"exit codes: 0 ok, 1 runtime error, 2 usage error\n";

static int usage_error(const char *usage, const char *fmt, ...) GL_PRINTF(2, 3);
static int usage_error(const char *usage, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "gpuledger: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n%s", usage);
	return EXIT_USAGE;
}

static int wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return 1;
	return 0;
}

static int fail(const struct gl_err *err)
{
	gl_log(GL_LOG_ERROR, "%s", err->msg);
	return EXIT_RUNTIME;
}

/* ---- check-config ---- */
static const char usage_check[] = "usage: gpuledger [--config FILE] check-config\n"
				  "Loads and validates the configuration; prints the effective database target.\n";

static int cmd_check_config(struct gl_config *cfg, int argc, char **argv)
{
	char dsn[1024];
	struct gl_err err = {0};
	if (wants_help(argc, argv)) {
		fputs(usage_check, stdout);
		return 0;
	}
	if (argc > 1)
		return usage_error(usage_check, "check-config: unexpected argument '%s'", argv[1]);
	if (gl_db_dsn(cfg, dsn, sizeof dsn, &err))
		return fail(&err);
	printf("%s: ok (%zu sacct sources; database: %s)\n", cfg->path, cfg->n_sacct,
	       gl_db_is_external(cfg) ? "external" : "embedded");
	return 0;
}

/* ---- migrate ---- */
static const char usage_migrate[] = "usage: gpuledger [--config FILE] migrate\n"
				    "Applies the migrations not yet applied, each in its own transaction.\n";

static int cmd_migrate(struct gl_config *cfg, int argc, char **argv)
{
	struct gl_err err = {0};
	PGconn *c = NULL;
	int applied = 0, ver = 0, rc = 0;
	if (wants_help(argc, argv)) {
		fputs(usage_migrate, stdout);
		return 0;
	}
	if (argc > 1)
		return usage_error(usage_migrate, "migrate: unexpected argument '%s'", argv[1]);
	if (gl_db_connect(cfg, &c, &err) || gl_migrate_run(c, &applied, &err) || gl_migrate_current(c, &ver, &err)) {
		rc = fail(&err);
		goto out;
	}
	printf("migrate: %d applied, schema at version %d\n", applied, ver);
out:
	PQfinish(c);
	return rc;
}

/* ---- db ---- */
static const char usage_db[] =
	"usage: gpuledger [--config FILE] db init|start|stop|status\n"
	"Manages the embedded PostgreSQL under database.embedded_dir (unix socket only).\n"
	"As root, initdb/pg_ctl run as the 'postgres' user. Not available with an external DSN.\n";

static int cmd_db(struct gl_config *cfg, int argc, char **argv)
{
	struct gl_err err = {0};
	int rc = 0;
	if (wants_help(argc, argv)) {
		fputs(usage_db, stdout);
		return 0;
	}
	if (argc != 2)
		return usage_error(usage_db, "db: expected one of init|start|stop|status");
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
			return running ? 0 : 3;
		}
	} else
		return usage_error(usage_db, "db: unknown action '%s'", argv[1]);
	if (rc)
		return fail(&err);
	return 0;
}

/* ---- ingest ---- */
static const char usage_ingest[] =
	"usage: gpuledger [--config FILE] ingest sacct --cluster NAME --file F [--delimiter C] [--fields LIST]\n"
	"Ingests a saved sacct output (--parsable or --parsable2). Without --fields, a header\n"
	"line is used when present, else the recommended field list:\n  " GL_SACCT_DEFAULT_FIELDS "\n"
	"Malformed lines are reported as file:line and skipped; the rest is ingested.\n"
	"Exit status 0 when every line was ingested, 1 on failure, 4 when lines were skipped.\n";

static int cmd_ingest(struct gl_config *cfg, int argc, char **argv)
{
	static const struct option opts[] = {
		{"cluster", required_argument, 0, 'C'}, {"file", required_argument, 0, 'f'},
		{"delimiter", required_argument, 0, 'd'}, {"fields", required_argument, 0, 'F'},
		{"help", no_argument, 0, 'h'}, {0, 0, 0, 0},
	};
	const char *cluster = NULL, *file = NULL, *delim = NULL, *fields = NULL;
	struct gl_sacct_ingest_opts o = {0};
	struct gl_ingest_stats st;
	struct gl_err err = {0};
	PGconn *c = NULL;
	int ch, rc = 0;

	if (argc < 2 || wants_help(argc, argv)) {
		fputs(usage_ingest, argc < 2 ? stderr : stdout);
		return argc < 2 ? EXIT_USAGE : 0;
	}
	if (strcmp(argv[1], "sacct") != 0)
		return usage_error(usage_ingest, "ingest: unknown source '%s'", argv[1]);
	optind = 2;
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 'C': cluster = optarg; break;
		case 'f': file = optarg; break;
		case 'd': delim = optarg; break;
		case 'F': fields = optarg; break;
		default: return usage_error(usage_ingest, "ingest sacct: bad option");
		}
	}
	if (optind < argc)
		return usage_error(usage_ingest, "ingest sacct: unexpected argument '%s'", argv[optind]);
	if (!cluster || !file)
		return usage_error(usage_ingest, "ingest sacct: --cluster and --file are required");
	gl_ingest_stats_init(&st, 0);
	o.cluster = cluster;
	o.input_name = file;
	o.fields = fields;
	o.delimiter = delim;
	o.batch_rows = cfg->ingest_batch_rows;
	o.max_skip_reasons = cfg->ingest_max_skip_reasons;
	o.watermark_s = GL_TIME_NONE;
	if (gl_db_connect(cfg, &c, &err) || gl_sacct_ingest_file(c, &o, file, &st, &err)) {
		rc = fail(&err);
		goto out;
	}
	gl_log(GL_LOG_INFO, "ingest sacct %s (%s): %lld lines, %lld inserted, %lld updated, %lld unchanged, "
			    "%lld skipped, %lld ignored (steps/header)",
	       file, cluster, (long long)st.lines_read, (long long)st.inserted, (long long)st.updated,
	       (long long)st.unchanged, (long long)st.skipped, (long long)st.ignored);
	printf("{\"lines\":%lld,\"inserted\":%lld,\"updated\":%lld,\"unchanged\":%lld,\"skipped\":%lld,\"ignored\":%lld}\n",
	       (long long)st.lines_read, (long long)st.inserted, (long long)st.updated, (long long)st.unchanged,
	       (long long)st.skipped, (long long)st.ignored);
	rc = st.skipped ? 4 : 0;
out:
	gl_ingest_stats_fini(&st);
	PQfinish(c);
	return rc;
}

/* ---- serve ---- */
static const char usage_serve[] =
	"usage: gpuledger [--config FILE] serve [--listen ADDR:PORT] [--port-file F] [--no-ingest]\n"
	"Runs the HTTP API and the periodic ingest loop until SIGINT/SIGTERM.\n"
	"--listen overrides server.listen (port 0 = any free port, logged and written to --port-file).\n";

struct source_slot {
	const struct gl_sacct_source_cfg *src;
	int64_t next_s;
	struct gl_log_limiter lim;
};

static int cmd_serve(struct gl_config *cfg, int argc, char **argv)
{
	static const struct option opts[] = {
		{"listen", required_argument, 0, 'l'}, {"port-file", required_argument, 0, 'p'},
		{"no-ingest", no_argument, 0, 'n'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0},
	};
	struct gl_server_opts so = {0};
	struct gl_server *srv = NULL;
	struct source_slot *slots = NULL;
	struct gl_err err = {0};
	PGconn *c = NULL;
	int ch, rc = 0, no_ingest = 0, applied;
	struct sigaction sa;

	if (wants_help(argc, argv)) {
		fputs(usage_serve, stdout);
		return 0;
	}
	optind = 1;
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 'l': so.listen = optarg; break;
		case 'p': so.port_file = optarg; break;
		case 'n': no_ingest = 1; break;
		default: return usage_error(usage_serve, "serve: bad option");
		}
	}
	if (optind < argc)
		return usage_error(usage_serve, "serve: unexpected argument '%s'", argv[optind]);

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	/* fail early and clearly when the database is not there or not migrated */
	if (gl_db_connect(cfg, &c, &err) || gl_migrate_run(c, &applied, &err)) {
		rc = fail(&err);
		goto out;
	}
	if (gl_server_start(cfg, &so, &srv, &err)) {
		rc = fail(&err);
		goto out;
	}
	gl_log(GL_LOG_INFO, "serve: listening on http://%s:%u/ (%zu sacct sources%s)",
	       so.listen ? so.listen : cfg->listen, (unsigned)gl_server_port(srv), cfg->n_sacct,
	       no_ingest ? ", ingest off" : "");
	{
		/* the exact port on its own line, for scripts that started us on port 0 */
		char host[256];
		const char *l = so.listen ? so.listen : cfg->listen;
		snprintf(host, sizeof host, "%.*s", (int)(strrchr(l, ':') - l), l);
		gl_log(GL_LOG_INFO, "serve: URL http://%s:%u/", host, (unsigned)gl_server_port(srv));
	}
	slots = gl_xcalloc(cfg->n_sacct ? cfg->n_sacct : 1, sizeof *slots);
	for (size_t i = 0; i < cfg->n_sacct; i++) {
		slots[i].src = &cfg->sacct[i];
		slots[i].next_s = 0;
		slots[i].lim = (struct gl_log_limiter)GL_LOG_LIMITER_INIT(600);
	}
	/* one tick loop; each source runs at its own interval (Redis serverCron style) */
	while (!g_stop) {
		int64_t now = (int64_t)time(NULL);
		for (size_t i = 0; !no_ingest && i < cfg->n_sacct && !g_stop; i++) {
			struct gl_sacct_poll_result res;
			if (now < slots[i].next_s)
				continue;
			slots[i].next_s = now + slots[i].src->interval_s;
			if (PQstatus(c) != CONNECTION_OK)
				PQreset(c);
			if (gl_sacct_poll_run(c, cfg, slots[i].src, now, &res, &err)) {
				gl_log_fail(&slots[i].lim, now, GL_LOG_ERROR, "sacct %s: %s", slots[i].src->cluster, err.msg);
				continue;
			}
			gl_log_ok(&slots[i].lim, "sacct");
			gl_log(GL_LOG_INFO, "sacct %s: %d chunks, %lld lines, %lld inserted, %lld updated, %lld unchanged, %lld skipped",
			       slots[i].src->cluster, res.chunks, (long long)res.lines, (long long)res.inserted,
			       (long long)res.updated, (long long)res.unchanged, (long long)res.skipped);
		}
		for (int t = 0; t < 5 && !g_stop; t++)
			usleep(100 * 1000);
	}
	gl_log(GL_LOG_INFO, "serve: stopping");
out:
	gl_server_stop(srv);
	free(slots);
	PQfinish(c);
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"config", required_argument, 0, 'c'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0},
	};
	const char *config_path = getenv("GPULEDGER_CONFIG");
	struct gl_config cfg;
	struct gl_err err = {0};
	enum gl_log_level lvl;
	int ch, rc;
	const char *cmd;

	/* stop at the command: its options are its own */
	while ((ch = getopt_long(argc, argv, "+c:h", opts, NULL)) != -1) {
		switch (ch) {
		case 'c': config_path = optarg; break;
		case 'h': fputs(usage_main, stdout); return 0;
		default: fputs(usage_main, stderr); return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		fputs(usage_main, stderr);
		return EXIT_USAGE;
	}
	cmd = argv[optind];
	if (!strcmp(cmd, "version")) {
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
	if (!strcmp(cmd, "check-config"))
		rc = cmd_check_config(&cfg, argc, argv);
	else if (!strcmp(cmd, "migrate"))
		rc = cmd_migrate(&cfg, argc, argv);
	else if (!strcmp(cmd, "db"))
		rc = cmd_db(&cfg, argc, argv);
	else if (!strcmp(cmd, "ingest"))
		rc = cmd_ingest(&cfg, argc, argv);
	else if (!strcmp(cmd, "serve"))
		rc = cmd_serve(&cfg, argc, argv);
	else {
		fprintf(stderr, "gpuledger: unknown command '%s'\n%s", cmd, usage_main);
		rc = EXIT_USAGE;
	}
	gl_config_fini(&cfg);
	return rc;
}
