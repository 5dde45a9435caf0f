/* gpuledger — command-line helpers shared by the subcommands in src/cli/.
 * Exit codes: 0 ok, 1 runtime error, 2 usage error (3: `db status` stopped,
 * 4: ingest ran but skipped lines). Ownership: nothing allocated but the
 * buffer of gl_cli_read_file, which the caller frees. */
#ifndef GL_CLI_H
#define GL_CLI_H

#include "gl/common.h"
#include "gl/config.h"

#define GL_CLI_EXIT_RUNTIME 1
#define GL_CLI_EXIT_USAGE 2
#define GL_CLI_EXIT_SKIPPED 4
#define GL_CLI_EXIT_BROKEN 5 /* audit verify: the chain is broken */

/* Prints "gpuledger: <msg>" and the usage to stderr; returns GL_CLI_EXIT_USAGE. */
int gl_cli_usage_error(const char *usage, const char *fmt, ...) GL_PRINTF(2, 3);
/* Logs err and returns GL_CLI_EXIT_RUNTIME. */
int gl_cli_fail(const struct gl_err *err);
int gl_cli_wants_help(int argc, char **argv);

/* One option of a subcommand: `--name VALUE` stores VALUE (argv's own
 * storage) in *value. A list of them ends with {NULL, NULL}. */
struct gl_cli_opt {
	const char *name;
	const char **value;
};
#define GL_CLI_MAX_OPTS 12
/* Parses the options of a subcommand whose options all take a value (argv[0]
 * is the subcommand; cmd names it in messages, "ingest sacct"). --help or -h
 * anywhere prints usage to stdout. Returns -1 when the command should go on,
 * else the exit status to return at once: 0 after --help, GL_CLI_EXIT_USAGE after
 * a bad option, an empty value or a stray argument (message and usage on
 * stderr). */
int gl_cli_parse_opts(int argc, char **argv, const char *cmd, const char *usage, const struct gl_cli_opt *opts);

/* How far ahead of this machine's clock a snapshot's time may be (the clock
 * of the host that took it may run a little ahead). */
#define GL_CLI_AT_SKEW_S 300
/* A snapshot's time (--at, or the file's modification time: what names it)
 * after now + GL_CLI_AT_SKEW_S is the caller's mistake (a mistyped year):
 * stored, it outdated every later snapshot of the cluster, which were then
 * refused, and it stretched node spans into the future. Returns -1 when
 * at_s is fine, else prints the error and usage and returns GL_CLI_EXIT_USAGE. */
int gl_cli_at_not_future(const char *usage, const char *cmd, const char *what, int64_t at_s, int64_t now_s);

/* The whole of path (stdin for "-" when dash_is_stdin), NUL-terminated, its
 * length without the NUL in *len; the caller frees it. NULL with err set
 * when it cannot be opened or read. */
char *gl_cli_read_file(const char *path, int dash_is_stdin, size_t *len, struct gl_err *err);

/* One count of an ingest command's result; a list ends with {NULL, 0}. */
struct gl_cli_count {
	const char *name;
	long long n;
};
/* Prints the counts as one JSON object line on stdout, the machine-readable
 * result of an `ingest` command; returns its exit status: GL_CLI_EXIT_SKIPPED
 * when skipped (input was left out), else 0. */
int gl_cli_ingest_result(const struct gl_cli_count *counts, int skipped);

/* Subcommands: argv[0] is the subcommand's own name ("sacct"). */
int gl_cli_ingest_sacct(struct gl_config *cfg, int argc, char **argv);
/* src/cli/ingest_nodes.c */
int gl_cli_ingest_slurm_nodes(struct gl_config *cfg, int argc, char **argv);
int gl_cli_ingest_kube_nodes(struct gl_config *cfg, int argc, char **argv);
int gl_cli_ingest_dcgm(struct gl_config *cfg, int argc, char **argv);
/* src/cli/ingest_serving.c */
int gl_cli_ingest_serving(struct gl_config *cfg, int argc, char **argv);
/* src/cli/ingest_nvsmi.c */
int gl_cli_ingest_nvsmi(struct gl_config *cfg, int argc, char **argv);
int gl_cli_rates(struct gl_config *cfg, int argc, char **argv);
int gl_cli_rollup(struct gl_config *cfg, int argc, char **argv);
int gl_cli_shard(struct gl_config *cfg, int argc, char **argv);
/* src/cli/cli_report.c */
int gl_cli_report(struct gl_config *cfg, int argc, char **argv);
int gl_cli_ingest_kube(struct gl_config *cfg, int argc, char **argv);
/* src/cli/cli_forecast.c: `forecast backtest` */
int gl_cli_forecast(struct gl_config *cfg, int argc, char **argv);
/* src/cli/token.c, src/cli/cli_audit.c */
int gl_cli_token(struct gl_config *cfg, int argc, char **argv);
int gl_cli_audit(struct gl_config *cfg, int argc, char **argv);
/* src/cli/cli_hook.c: hook idle */
int gl_cli_hook(struct gl_config *cfg, int argc, char **argv);
/* src/cli/db_redact.c: `db redact` */
int gl_cli_db_redact(struct gl_config *cfg, int argc, char **argv);
/* "cli:<user>": the audit actor of a command-line change. */
void gl_cli_actor(char *buf, size_t n);

#endif
