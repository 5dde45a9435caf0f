/* gpuledger — command-line helpers shared by the subcommands in src/cli/.
 * Exit codes: 0 ok, 1 runtime error, 2 usage error (3: `db status` stopped,
 * 4: ingest ran but skipped lines). Ownership: nothing allocated. */
#ifndef GL_CLI_H
#define GL_CLI_H

#include "gl/common.h"
#include "gl/config.h"

#define GL_EXIT_RUNTIME 1
#define GL_EXIT_USAGE 2
#define GL_EXIT_SKIPPED 4
#define GL_EXIT_BROKEN 5 /* audit verify: the chain is broken */

/* Prints "gpuledger: <msg>" and the usage to stderr; returns GL_EXIT_USAGE. */
int gl_cli_usage_error(const char *usage, const char *fmt, ...) GL_PRINTF(2, 3);
/* Logs err and returns GL_EXIT_RUNTIME. */
int gl_cli_fail(const struct gl_err *err);
int gl_cli_wants_help(int argc, char **argv);

/* Subcommands: argv[0] is the subcommand's own name ("sacct"). */
int gl_cli_ingest_sacct(struct gl_config *cfg, int argc, char **argv);
/* src/cli/ingest_nodes.c */
int gl_cli_ingest_slurm_nodes(struct gl_config *cfg, int argc, char **argv);
int gl_cli_ingest_kube_nodes(struct gl_config *cfg, int argc, char **argv);
int gl_cli_ingest_dcgm(struct gl_config *cfg, int argc, char **argv);
int gl_cli_rates(struct gl_config *cfg, int argc, char **argv);
int gl_cli_ingest_kube(struct gl_config *cfg, int argc, char **argv);
/* src/cli/token.c, src/cli/audit.c */
int gl_cli_token(struct gl_config *cfg, int argc, char **argv);
int gl_cli_audit(struct gl_config *cfg, int argc, char **argv);
/* "cli:<user>": the audit actor of a command-line change. */
void gl_cli_actor(char *buf, size_t n);

#endif
