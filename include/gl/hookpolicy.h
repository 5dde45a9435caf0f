/* gpuledger — idle-hook policies compiled from hook.policies[] (docs/hook.md):
 * scope and exclusions, the idle signal and window rule, and the warn/act
 * command templates split into argv and filled in per candidate.
 *
 * Pure: no I/O (the allow-list file is read by the hook), no clock.
 * Command templates are split once into words (spaces separate words;
 * '...' and "..." quote; backslash escapes one character); a placeholder
 * such as {job_id} is replaced inside its word, so whatever a value holds
 * (a job named "x; rm -rf /") stays one argv element and no shell sees it.
 *
 * Ownership: gl_hookpolicy_compile() allocates the array; release it with
 * gl_hookpolicy_free(). Compiled policies borrow strings of pc (name,
 * allow_list_file): free them before gl_config_fini(). The argv of
 * gl_hookpolicy_expand() is the caller's, released with
 * gl_hookpolicy_argv_free().
 */
#ifndef GL_HOOKPOLICY_H
#define GL_HOOKPOLICY_H

#include "gl/common.h"
#include "gl/idlerule.h"
#include "gl/tmpl.h"

#include <stddef.h>
#include <stdint.h>

/* hook.policies[] (docs/hook.md): lists are comma-separated text, parsed
 * and checked by gl_hookpolicy_compile (below). */
struct gl_hookpolicy_cfg {
	int line;                 /* where the policy starts in the file */
	char *name;
	/* scope: a job is in scope when it matches every non-empty list */
	char *clusters, *partitions, *qos, *accounts, *namespaces;
	char *labels;             /* "k=v,k2=v2": all must be on the pod */
	/* exclusions */
	char *ex_users, *ex_accounts, *ex_qos, *ex_partitions, *ex_namespaces;
	char *ex_label;           /* "k=v": a job carrying it is spared */
	char *allow_list_file;    /* lines user:NAME, account:NAME, namespace:NAME, job:CLUSTER/ID */
	int64_t min_age_min;      /* jobs younger than this are not considered */
	int64_t grace_min;        /* time after start that never counts as idle */
	/* idle signal */
	char *engine_active_threshold;
	int64_t util_threshold_pct;
	int memory_counts_as_busy;
	int64_t fb_used_busy_mib;
	int64_t power_busy_watts; /* 0 = off */
	/* window rule */
	char *rule;               /* fixed | sliding | reset */
	int64_t t1_min, t2_min, t3_min;
	char *gpu_fraction;       /* decimal in (0, 1] */
	/* escalation: command templates, split into argv (no shell) */
	char *warn_command;       /* "" = warnings are only recorded and audited */
	char *slurm_command;      /* "" = hook.slurm_command */
	char *kube_command;       /* "" = hook.kube_command */
	int allow_shell;          /* its own templates may hand placeholders to a shell (warned at start) */
};

/* What a policy inherits from the hook's settings, and the file errors name. */
struct gl_hookpolicy_defaults {
	const char *path;                          /* the config file */
	const char *slurm_command, *kube_command;  /* hook.slurm_command, hook.kube_command */
	int64_t max_data_age_s;                    /* hook.max_data_age_s */
};

struct gl_hookpolicy_list {
	char **v;
	size_t n;
};

struct gl_hookpolicy {
	const char *name;            /* borrowed from the config */
	int line;
	struct gl_idlerule rule;     /* max_data_age_s from hook.max_data_age_s */
	struct gl_idlerule_signal signal;
	int64_t min_age_s;
	struct gl_hookpolicy_list clusters, partitions, qos, accounts, namespaces, labels;
	struct gl_hookpolicy_list ex_users, ex_accounts, ex_qos, ex_partitions, ex_namespaces, ex_label;
	const char *allow_list_file; /* borrowed; "" = none */
	struct gl_hookpolicy_list warn_argv, slurm_argv, kube_argv; /* warn_argv.n == 0: no warn command */
};

/* The attributes of a job the scope and exclusions look at. labels are
 * "key=value" strings (pod labels). Any string may be NULL (= unknown). */
struct gl_hookpolicy_job {
	const char *cluster, *kind, *partition, *qos, *account, *user, *namespace;
	const char *const *labels;
	size_t nlabels;
};

/* The placeholders templates may use, NULL-terminated. */
extern const char *const gl_hookpolicy_placeholders[];

/* Compiles the npc policies of pc (hook.policies[]). Errors name the config file
 * and the policy's line: "gl.yaml:42: hook.policies[1] (gpu-idle): ...".
 * Checks: known rule kind, gpu_fraction in (0, 1], threshold a ratio,
 * T1 < T2 < T3, a non-empty scope, unique names, balanced quotes and known
 * placeholders in the templates. */
int gl_hookpolicy_compile(const struct gl_hookpolicy_cfg *pc, size_t npc, const struct gl_hookpolicy_defaults *d,
			  struct gl_hookpolicy **out, size_t *n, struct gl_err *err) GL_MUSTCHECK;
void gl_hookpolicy_free(struct gl_hookpolicy *p, size_t n);

/* Splits a template into words (rules above); -GL_EINVAL on an open quote. */
int gl_hookpolicy_split(const char *tmpl, struct gl_hookpolicy_list *out, struct gl_err *err) GL_MUSTCHECK;
void gl_hookpolicy_list_fini(struct gl_hookpolicy_list *l);

/* 1 when the job matches every non-empty scope list of p. */
int gl_hookpolicy_in_scope(const struct gl_hookpolicy *p, const struct gl_hookpolicy_job *j);
/* 1 when an exclusion spares the job; why gets "exclude.users: alice". */
int gl_hookpolicy_excluded(const struct gl_hookpolicy *p, const struct gl_hookpolicy_job *j, char *why, size_t n);

/* A NULL-terminated argv: each template word with its placeholders
 * replaced (an unknown placeholder stays as written; compile rejects them). */
char **gl_hookpolicy_expand(const struct gl_hookpolicy_list *tmpl, const struct gl_tmpl_var *vars, size_t nvars);
/* The index of the first argument of argv (tmpl expanded) that starts with
 * '-' although its template word does not: a placeholder's value (a job
 * name, a user) would be read as an option ("--output=FILE"). -1 when none.
 * Such a command must not run: no template can neutralise an option. */
int gl_hookpolicy_dash_arg(const struct gl_hookpolicy_list *tmpl, char *const *argv);
void gl_hookpolicy_argv_free(char **argv);

#endif
