/* fuzz-link: full
 * libFuzzer harness for the configuration file (gl_config_load_buf: the
 * YAML tree, the key table, every semantic check, the hook policies and the
 * command templates). Invariants, not only "no crash":
 * - loading is deterministic (the same bytes twice: the same verdict and
 *   message);
 * - every error names the file, and a line it names is in the input;
 * - a config that loads keeps its promises: the listen address parses, the
 *   currency is an ISO 4217 code and every rate and budget is in it, each
 *   policy compiles, no command template hands a placeholder to a shell
 *   unless its allow_shell says so, and the bounds of numbers hold.
 * Seeds: gpuledger.example.yaml and the configs of the tests and docs
 * (tests/fuzz/corpus/config). */
#include "gl/config.h"
#include "gl/cost.h"
#include "gl/hookpolicy.h"
#include "gl/log.h"
#include "gl/tmpl.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t count_lines(const uint8_t *d, size_t n)
{
	size_t k = 1;
	for (size_t i = 0; i < n; i++)
		k += d[i] == '\n' || (d[i] == '\r' && (i + 1 == n || d[i + 1] != '\n'));
	return k;
}

/* "f.yaml:N: ..." names line N; it must be one of the input's. */
static void check_error(const char *msg, const uint8_t *data, size_t size)
{
	if (strncmp(msg, "f.yaml", 6) != 0)
		abort();
	if (msg[6] == ':' && msg[7] >= '0' && msg[7] <= '9') {
		long ln = strtol(msg + 7, NULL, 10);
		if (ln < 1 || (size_t)ln > count_lines(data, size) + 1)
			abort();
	}
}

static void check_template(const char *t, int allow)
{
	char **w = NULL, why[256];
	size_t n = 0;
	struct gl_err e = {0};
	if (!t || !*t || allow || gl_tmpl_split(t, &w, &n, &e))
		return;
	if (gl_tmpl_shell_check((const char *const *)w, n, why, sizeof why))
		abort(); /* a shell with a placeholder got through */
	gl_tmpl_words_free(w);
}

static void check_loaded(const struct gl_config *c)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	struct gl_err e = {0};
	struct gl_hookpolicy *pol = NULL;
	size_t npol = 0;
	int64_t v;

	if (gl_config_parse_listen(c->listen, &ss, &sl, &e) || gl_cost_minor(c->currency) < 0)
		abort();
	if (c->http_threads < 2 || c->http_threads > 256 || c->audit_anchor_interval_s < 1)
		abort();
	for (size_t i = 0; i < c->n_rates; i++)
		if (strcmp(c->rates[i].currency, c->currency) || gl_cost_parse(c->rates[i].per_gpu_hour, &v, &e))
			abort();
	for (size_t i = 0; i < c->n_budgets; i++)
		if (strcmp(c->budgets[i].currency, c->currency) || gl_cost_parse(c->budgets[i].amount, &v, &e) || v <= 0)
			abort();
	if (gl_config_hookpolicies(c, &pol, &npol, &e) || npol != c->n_hook_policies)
		abort();
	gl_hookpolicy_free(pol, npol);
	check_template(c->hook_slurm_command, c->hook_allow_shell);
	check_template(c->hook_kube_command, c->hook_allow_shell);
	check_template(c->audit_anchor_command, c->audit_allow_shell);
	for (size_t i = 0; i < c->n_hook_policies; i++) {
		check_template(c->hook_policies[i].warn_command, c->hook_policies[i].allow_shell);
		check_template(c->hook_policies[i].slurm_command, c->hook_policies[i].allow_shell);
		check_template(c->hook_policies[i].kube_command, c->hook_policies[i].allow_shell);
	}
	gl_config_warn_shell(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int quiet;
	struct gl_config a, b;
	struct gl_err ea = {0}, eb = {0};
	int ra, rb;

	if (!quiet) {
		/* gl_config_warn_shell's warnings would flood the run */
		gl_log_set_fd(open("/dev/null", O_WRONLY));
		quiet = 1;
	}
	ra = gl_config_load_buf(&a, "f.yaml", (const char *)data, size, &ea);
	rb = gl_config_load_buf(&b, "f.yaml", (const char *)data, size, &eb);
	if (ra != rb || strcmp(ea.msg, eb.msg))
		abort();
	if (ra) {
		check_error(ea.msg, data, size);
		return 0;
	}
	check_loaded(&a);
	gl_config_fini(&a);
	gl_config_fini(&b);
	return 0;
}
