/* gpuledger — configuration: YAML (libyaml) -> a small tree that keeps line
 * numbers -> struct gl_config through one declarative key table.
 *
 * Ownership: gl_config_load() fills a caller-owned struct gl_config whose
 * strings and arrays are heap-owned by it; release with gl_config_fini().
 * gl_config_keys() returns a static table (never freed).
 */
#ifndef GL_CONFIG_H
#define GL_CONFIG_H

#include "gl/common.h"
#include "gl/hookpolicy.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct gl_config_sacct_source {
	char *cluster;
	char *command;       /* sacct binary (path or name on PATH) */
	char *extra_args;    /* whitespace-separated extra argv elements */
	char *delimiter;
	int64_t interval_s;
	int64_t overlap_s;   /* re-read window before the watermark */
	int64_t chunk_s;     /* sacct -S/-E chunk size (day-sized by default) */
	int64_t lookback_s;  /* first run: how far back to start */
	int64_t timeout_s;   /* kill sacct after this long */
};

struct gl_config_kube_source {
	char *cluster;
	char *command;       /* e.g. "kubectl get pods -A -o json" (split on whitespace, no shell); "" = use file */
	char *file;          /* a PodList JSON another process refreshes; "" = use command */
	int64_t interval_s;
	int64_t timeout_s;
	char *label_team;    /* label keys copied into the ownership tags */
	char *label_project;
	char *label_cost_center;
};

struct gl_config_dcgm_source {
	char *cluster;
	char *targets;       /* whitespace/comma-separated http(s) URLs of dcgm-exporter /metrics */
	char *targets_file;  /* one URL per line (# comments); re-read every run */
	int64_t interval_s;
	int64_t timeout_s;   /* per target */
	int64_t max_parallel;
};

/* sources.serving[]: one inference endpoint scraped over HTTP
 * (docs/serving.md): its targets' /metrics, and the pod, pods or Slurm
 * job it runs on (at most one of pod, namespace + selector, job,
 * job_name; none: the scrape's own pod/namespace labels). */
struct gl_config_serving_source {
	int line;            /* where the entry starts in the file */
	char *endpoint;
	char *cluster;
	char *targets;       /* whitespace/comma-separated http(s) URLs of the server's /metrics */
	char *model;         /* model name for servers that label none (TGI); "" = none */
	char *pod;           /* NAMESPACE/NAME */
	char *namespace_;    /* with selector: the Deployment's pods */
	char *selector;      /* k=v,k2=v2 */
	char *job;           /* Slurm job id */
	char *job_name;      /* Slurm job name */
	int64_t interval_s;
	int64_t timeout_s;   /* per target */
	int64_t max_parallel;
};

struct gl_config_rate {
	char *model;         /* GPU model or type as jobs name it ("a100", "1g.10gb"); "*" = any unpriced model */
	char *currency;
	char *per_gpu_hour;  /* decimal text, at most 6 decimals: parsed exactly into micro-units */
	char *from;          /* RFC3339 or date; "" = since always */
	char *to;            /* "" = until further notice */
};

struct gl_config_owner {
	char *cluster;       /* "" = any cluster */
	char *match;         /* account | user | partition | qos | wckey | namespace | label:<key> */
	char *value;         /* exact value, or "*" */
	char *team;
	char *project;
	char *cost_center;
	char *from;
	char *to;
};

/* workload_types[]: a rule giving jobs a workload type (sql/088,
 * gl_workload_type): the first rule in force at the job's start that
 * matches wins; a job no rule matches is "unclassified". */
struct gl_config_workload {
	char *cluster;       /* "" = any cluster */
	char *match;         /* account | user | partition | qos | wckey | namespace | label:<key> | endpoint */
	char *value;         /* exact value, or "*" */
	char *type;          /* training, inference, ... or any name the site uses */
	char *from;
	char *to;
};

/* gpu_models[]: an explicit alias for a GPU model name the canonical rule
 * (sql/024, gl_gpu_model) cannot derive, e.g. the exporter's "NVIDIA
 * A100-SXM4-80GB" for a Slurm type "a100_80g". Compared case-insensitively. */
struct gl_config_gpu_model {
	char *match;         /* a model name as some source writes it */
	char *model;         /* the canonical model it means */
};

/* runs[]: how jobs group into training runs (docs/runs.md), in priority
 * order, effective-dated by the job's submit time. */
struct gl_config_run {
	char *cluster;       /* "" = any cluster */
	char *by;            /* GL_RUNS_BY_NAMES (include/gl/runs.h) */
	char *from;
	char *to;
};

struct gl_config_idle_owner {
	char *cluster;
	char *partition;     /* "" = the whole cluster */
	char *team;          /* idle capacity of this hardware is charged to this team (shareIdle=owner) */
};

/* budgets[]: a monthly budget per owner (the report's aggregate key, team
 * by default), effective-dated. */
struct gl_config_budget {
	char *owner;
	char *aggregate;     /* team | project | cost_center | account | user */
	char *amount;        /* decimal text per month, parsed where used */
	char *currency;
	char *from, *to;     /* RFC 3339 or date; "" = open */
};

/* sources.slurm_nodes[]: scontrol show node -o (+ sacctmgr show event, scontrol show reservation) */
struct gl_config_slurm_nodes_source {
	char *cluster;
	char *scontrol;          /* scontrol binary */
	char *sacctmgr;          /* sacctmgr binary; "" = no event history (sampled states only) */
	int64_t events_lookback_s; /* each run re-reads the node events of this window */
	int reservations;        /* also read scontrol show reservation -o */
	int64_t interval_s;
	int64_t timeout_s;
};

/* sources.kube_nodes[]: kubectl get nodes -o json */
struct gl_config_kube_nodes_source {
	char *cluster;
	char *command;           /* split on whitespace, no shell; "" = use file */
	char *file;              /* a NodeList JSON another process refreshes; "" = use command */
	int64_t interval_s;
	int64_t timeout_s;
};

/* sources.nvidia_smi[]: a node's nvidia-smi captures (docs/ingest.md,
 * "nvidia-smi captures"), each by a command run on a schedule or a file a
 * node-side cron refreshes; "" = not given. */
struct gl_config_nvsmi_source {
	char *cluster;
	char *node;
	char *command;           /* prints --query-gpu CSV or -q -x XML (argv split on whitespace, no shell) */
	char *file;
	char *fields;            /* the --query-gpu list of a noheader capture */
	char *apps_command;      /* prints --query-compute-apps CSV */
	char *apps_file;
	char *pids_command;      /* prints `scontrol listpids` (or /proc/PID/cgroup lines) */
	char *pids_file;
	int64_t utc_offset_s;    /* the node's local time minus UTC, for captures not taken with TZ=UTC */
	int64_t interval_s;
	int64_t timeout_s;
};

/* capacity_plan[]: planned changes of capacity per cluster and GPU model
 * (docs/forecast.md, "Capacity planning"). Checked here for form (file:line);
 * the daemon checks clusters, models and retirements against the database
 * when it loads the plan (gl_capplandb_load_config), naming file:line too. */
struct gl_config_capacity_plan {
	int line;            /* where the entry starts in the file */
	char *cluster;
	char *gpu_model;
	char *action;        /* add | retire */
	int64_t gpus;        /* >= 1 */
	char *date;          /* YYYY-MM-DD: in service (or gone) from 00:00 UTC that day */
	char *note;
};

struct gl_config {
	char *path;          /* the file it came from, or "(defaults)" */
	/* database */
	char *db_dsn;        /* "" -> embedded cluster */
	char *db_migrate_dsn; /* "" -> migrations run through db_dsn */
	char *db_embedded_dir;
	char *db_pg_bindir;
	char *db_read_dsn;             /* "" = reads go to db_dsn too (docs/scale.md "Read replicas") */
	int64_t db_max_replica_lag_s;  /* a standby further behind: the read goes to the primary */
	/* server */
	char *listen;
	char *instance_name;           /* "" = host:pid:start (docs/scale.md "Several daemons") */
	int64_t lease_ttl_s;
	int64_t http_threads;          /* libmicrohttpd's I/O threads (docs/security.md "Connections") */
	int64_t http_workers;          /* the main pool */
	int64_t http_heavy_workers;    /* the heavy pool and its bounds ("Heavy requests") */
	int64_t http_heavy_queue;
	int64_t http_heavy_per_token;
	int64_t http_heavy_window_days;
	int64_t http_heavy_steps;
	int64_t http_max_answer_lines; /* a bound on an answer's lines, so on its memory */
	int64_t http_statement_timeout_s;
	int64_t http_conn_timeout_s;   /* inactivity */
	int64_t http_header_timeout_s; /* deadlines: activity does not extend them */
	int64_t http_body_timeout_s;
	int64_t http_max_conns;
	int64_t http_max_conns_per_ip;
	int64_t http_reserved_conns;   /* of http_max_conns, for the probe routes */
	int64_t http_max_body_bytes;
	int64_t auth_outage_grace_s;   /* docs/security.md "Database outages" */
	char *web_dir;
	int64_t http_rate_per_ip;      /* requests/s per client address; 0 = off */
	int64_t http_rate_burst;
	/* audit (docs/security.md) */
	char *audit_anchor_file;       /* "" = the daemon writes no anchors */
	int64_t audit_anchor_interval_s;
	char *audit_anchor_command;    /* run with each anchor ({line} {seq} {hash} {at} {file}); "" = none */
	int audit_allow_shell;         /* anchor_command may hand placeholders to a shell */
	int audit_requests;            /* 0 only for benchmarks: no per-request rows */
	/* log */
	char *log_level;
	/* ingest */
	int64_t ingest_batch_rows;
	int64_t ingest_max_skip_reasons;
	int64_t bucket_s;
	/* idle predicate (dcgm rollups, hook) */
	char *idle_engine_active_threshold; /* decimal text, parsed where used */
	int idle_use_gpu_util_fallback;
	int idle_memory_counts_as_busy;
	int64_t idle_fb_used_busy_mib;
	int64_t idle_power_busy_watts;      /* 0 = off */
	int64_t idle_held_memory_mib;       /* idle with this much framebuffer used is "held idle"; 0 = off */
	/* inventory / retention */
	int64_t inventory_absent_grace_s;
	int64_t retention_raw_days;
	int64_t retention_usage_days;       /* 0 = kept */
	int64_t retention_ingest_runs_days; /* 0 = kept */
	/* sources */
	struct gl_config_sacct_source *sacct;
	size_t n_sacct;
	struct gl_config_kube_source *kube;
	size_t n_kube;
	struct gl_config_dcgm_source *dcgm;
	size_t n_dcgm;
	struct gl_config_slurm_nodes_source *slurm_nodes;
	size_t n_slurm_nodes;
	struct gl_config_kube_nodes_source *kube_nodes;
	size_t n_kube_nodes;
	struct gl_config_serving_source *serving;
	size_t n_serving;
	struct gl_config_nvsmi_source *nvidia_smi;
	size_t n_nvidia_smi;
	/* cost model */
	struct gl_config_rate *rates;
	size_t n_rates;
	struct gl_config_owner *owners;
	size_t n_owners;
	struct gl_config_idle_owner *idle_owners;
	size_t n_idle_owners;
	struct gl_config_workload *workload_types;
	size_t n_workload_types;
	struct gl_config_run *runs;
	size_t n_runs;
	struct gl_config_gpu_model *gpu_models;
	size_t n_gpu_models;
	int64_t api_max_window_days;
	char *currency;
	/* monthly reports and budgets (docs/reports.md) */
	char *reports_dir;           /* "" = the daemon makes no scheduled reports */
	char *reports_schedule;      /* "HH:MM" UTC on the 1st of each month */
	char *reports_aggregate;
	char *reports_formats;       /* comma list of csv, html, pdf */
	char *reports_share_idle;
	char *reports_template_dir;        /* showback.html, showback.css, pdf-layout.yaml */
	char *reports_thousands_separator; /* HTML and PDF only; the CSV has none */
	char *reports_decimal_separator;
	struct gl_config_budget *budgets;
	size_t n_budgets;
	char *budget_thresholds;     /* comma list of percentages */
	char *budget_alert_command;  /* argv template, whitespace-split, no shell; "" = audit only */
	int64_t budget_interval_s;
	int budget_allow_shell;      /* budget_alerts.command may hand placeholders to a shell */
	/* idle-GPU hook (docs/hook.md) */
	int hook_act;                  /* acting also needs --act on the command line */
	int64_t hook_max_actions_per_run;
	int64_t hook_max_data_age_s;
	char *hook_lock_file;          /* "" = the database advisory lock only */
	int64_t hook_command_timeout_s;
	char *hook_slurm_command;
	char *hook_kube_command;
	int hook_allow_shell;          /* hook.slurm_command / hook.kube_command may hand placeholders to a shell */
	struct gl_hookpolicy_cfg *hook_policies;
	size_t n_hook_policies;
	/* capacity planning */
	struct gl_config_capacity_plan *capacity_plan;
	size_t n_capacity_plan;
	int64_t procurement_lead_days;  /* GPUs ordered today are in service this many days later */
};

/* GL_CONFIG_LINE: not a key; in a list element's table, an int field that gets
 * the element's line number (for later checks that name file:line). */
enum gl_config_type { GL_CONFIG_STR, GL_CONFIG_INT, GL_CONFIG_BOOL, GL_CONFIG_LIST, GL_CONFIG_LINE };

struct gl_config_key {
	const char *name;        /* dotted path relative to its table ("database.dsn", "cluster") */
	enum gl_config_type type;
	size_t offset;           /* into the struct the table describes */
	const char *def;         /* default as text (NULL = none) */
	int required;
	int64_t min, max;        /* for GL_CONFIG_INT */
	const char *doc;
	/* GL_CONFIG_LIST: element table, element size, offset of the size_t count */
	const struct gl_config_key *sub;
	size_t elem_size;
	size_t count_offset;
};

/* The top-level key table, terminated by an entry with name == NULL. */
const struct gl_config_key *gl_config_keys(void);

/* path == NULL: defaults only. Errors name "file:line: key: why". */
int gl_config_load(struct gl_config *cfg, const char *path, struct gl_err *err) GL_MUSTCHECK;
/* Same from a memory buffer (name is used in messages). */
int gl_config_load_buf(struct gl_config *cfg, const char *name, const char *buf, size_t len,
		       struct gl_err *err) GL_MUSTCHECK;
void gl_config_fini(struct gl_config *cfg);
/* runs[] as the grouping's rules (times parsed; the config was checked at
 * load). *rules is the caller's to free; its strings are cfg's. */
struct gl_runs_rule;
void gl_config_run_rules(const struct gl_config *cfg, struct gl_runs_rule **rules, size_t *n);

/* Effective DSN: GPULEDGER_DSN env, else database.dsn, else NULL (embedded). */
const char *gl_config_external_dsn(const struct gl_config *cfg);
/* The schema owner's DSN for migrations: GPULEDGER_MIGRATE_DSN env, else
 * database.migrate_dsn, else NULL (migrations through the DSN above). */
const char *gl_config_migrate_dsn(const struct gl_config *cfg);
/* Pure: server.listen "ADDR:PORT" ("[v6]:PORT", "localhost:PORT"; port
 * 0..65535) into a socket address; -GL_ECONFIG otherwise. Run on the file's
 * value at load, so check-config refuses what serve would. */
struct sockaddr_storage;
int gl_config_parse_listen(const char *s, struct sockaddr_storage *ss, socklen_t *len, struct gl_err *err) GL_MUSTCHECK;

/* Flattened key paths ("sources.sacct[].cluster") in table order, for the
 * doc/example consistency check. Calls cb once per key. */
void gl_config_walk_keys(void (*cb)(const char *path, const struct gl_config_key *k, void *ud), void *ud);

/* Logs a warning for each command template that hands a placeholder to a
 * shell because its allow_shell says so (gl_tmpl_shell_check); without it
 * such a template fails the load. The daemon, `hook idle` and
 * `check-config` call this at every start. */
void gl_config_warn_shell(const struct gl_config *cfg);
/* The placeholders audit.anchor_command may use, NULL-terminated. */
extern const char *const gl_config_anchor_placeholders[];

/* Compiles hook.policies[] with the hook-wide defaults (hook.slurm_command,
 * hook.kube_command, hook.max_data_age_s): gl_hookpolicy_compile for this
 * config, errors naming its file. */
int gl_config_hookpolicies(const struct gl_config *cfg, struct gl_hookpolicy **out, size_t *n,
			   struct gl_err *err) GL_MUSTCHECK;

#endif
