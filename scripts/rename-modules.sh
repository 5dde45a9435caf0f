#!/usr/bin/env bash
# One prefix per module, one name per file (issue 25): renames the modules
# whose functions and types do not carry their file's name, and the source
# files whose names occur twice under src/. By symbol and by path, never by
# line, so it runs on a tree that has moved since it was written (the lead
# runs it again after merging other branches) and a second run changes
# nothing. It prints every rename it does and every one it finds done.
#
#   scripts/rename-modules.sh [ROOT]     ROOT: the tree (default this one)
#
# What it touches: the files git tracks under src/ include/ tests/ bench/
# docs/ scripts/, the Makefile, README.md and the example config (never sql/
# nor this script and its test). Files move with `git mv`, so history
# follows them.
#
# Three kinds of rename, each a table below:
#   FILES    a source file (and its header, when it has its own) to a new
#            path; #include lines and every mention of the path follow;
#   PREFIX   every identifier starting with a prefix (functions, types,
#            variables alike): gl_acct_query -> gl_accounting_query;
#   SYMBOL   one identifier, whole word.
# Before a symbol or prefix rename, the new names are checked to be unused:
# a clash stops the script before it writes anything more.
#
# Families that keep their shared prefix on purpose (not renamed) are
# those scripts/prefix.awk names (route handlers, subcommands, the request
# API, util/common.c). At the end the script takes the paid debts out of
# scripts/layers-known.txt and lists what still does not match its file
# (the same list as check-layers.sh's "prefix" rule).
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"
self=scripts/rename-modules.sh
# its own test names the old and the new names on purpose
selftest=tests/scripts/test_rename_modules.sh
# the layering debts name the old names: the end of the script pays them
known=scripts/layers-known.txt

# old path -> new path (src/ and include/)
FILES=(
	"src/cli/audit.c src/cli/cli_audit.c"
	"src/cli/hook.c src/cli/cli_hook.c"
	"src/cli/report.c src/cli/cli_report.c"
	"src/cli/forecast.c src/cli/cli_forecast.c"
	"src/cli/shard.c src/cli/cli_shard.c"
	"src/store/capacity.c src/store/capstore.c"
	"src/api/json.c src/api/apijson.c"  # gl_apijson_*, declared in apijson.h
)
# old prefix -> new prefix (the module the file names)
PREFIX=(
	"gl_acct_ gl_accounting_"          # store/accounting.c
	"gl_cb_ gl_chargeback_"            # domain/chargeback.c
	"gl_attrib_ gl_dcgm_attrib_"       # ingest/dcgm_attrib.c
	"gl_money_ gl_cost_"               # domain/cost.c
	"gl_i128_ gl_cost_i128_"           # domain/cost.c
	"gl_ratelimit_ gl_auth_ratelimit_" # api/auth.c: failed-login limits
	"gl_reqlimit_ gl_auth_reqlimit_"   # api/auth.c: per-token request limits
	"gl_inf_ gl_inference_"            # domain/inference.c
	"GL_INF_ GL_INFERENCE_"
	"gl_dcgm_batch_ gl_dcgm_ingest_batch_"      # ingest/dcgm_ingest.c
	"gl_dcgm_targets_ gl_dcgm_scrape_targets_"  # ingest/dcgm_scrape.c
	"gl_dcgm_fetch_ gl_dcgm_scrape_fetch_"
	"gl_serving_batch_ gl_serving_ingest_batch_" # ingest/serving_ingest.c
	"gl_token_ gl_tokens_"             # store/tokens.c
	"GL_TOKEN_ GL_TOKENS_"
	"gl_bound_ gl_bounds_"             # util/bounds.c
	"GL_BOUND_ GL_BOUNDS_"
	"GL_STEP_ GL_WINDOW_STEP_"         # domain/window.c
	# the types, enumerators and macros of a header, named after it
	# (scripts/prefix.awk checks headers too)
	"gl_node_ gl_nodeobs_"             # nodeobs.h
	"GL_NODE_ GL_NODEOBS_"
	"GL_AVAIL_ GL_NODEOBS_AVAIL_"
	"gl_serve_ gl_servemetrics_"       # servemetrics.h (GL_SERVE_ by symbol:
	                                   # main.c has a GL_SERVE_ of its own)
	"gl_sb_ gl_sbmodel_"               # sbmodel.h
	"GL_SB_ GL_SBMODEL_"
	"gl_cap_ gl_capacity_"             # capacity.h
	"GL_CAP_ GL_CAPACITY_"
	"GL_ROUTE_ GL_REQCLASS_"           # reqclass.h
	"GL_EXIT_ GL_CLI_EXIT_"            # cli.h
	"GL_FCS_ GL_FCSERIES_"             # fcseries.h
	"GL_SF_ GL_SACCT_F_"               # sacct.h: the fields, the job states
	"GL_JS_ GL_SACCT_JS_"
	"GL_ATTRIB_ GL_DCGM_ATTRIB_"       # dcgm_attrib.h
	"GL_SHARE_ GL_CHARGEBACK_SHARE_"   # chargeback.h
	"GL_CB_ GL_CHARGEBACK_"
	"GL_KUBE_SHARE_ GL_KUBEGPU_SHARE_" # kubegpu.h
	"gl_reportfile_ gl_reportfiles_"   # reportfiles.h
	"GL_CFG_ GL_CONFIG_"               # config.h
	"GL_IDLE_STAGE_ GL_IDLERULE_STAGE_" # idlerule.h
)
# old symbol -> new symbol
SYMBOL=(
	"gl_cb gl_chargeback"              # domain/chargeback.c: the accumulator
	"gl_percentile_sorted gl_cost_percentile_sorted"
	"gl_dcgm_attribute gl_dcgm_attrib_assign"
	"gl_capacity_query gl_capstore_query"
	# domain/settings.c: the checks moved out of store/ and report/
	"gl_budget_alert_keys gl_settings_alert_keys"
	"gl_budget_command_check gl_settings_alert_command_check"
	"gl_budget_thresholds_parse gl_settings_thresholds_parse"
	"gl_showback_aggregates gl_settings_aggregates"
	"gl_showback_aggregate_ok gl_settings_aggregate_ok"
	"gl_costing_match_valid gl_settings_match_valid"
	"gl_report_sched_parse_time gl_settings_schedule_parse"
	"gl_reports_ext gl_settings_report_ext"
	# the types of the families above that have no "_" after the prefix
	"gl_ratelimit gl_auth_ratelimit"
	"gl_reqlimit gl_auth_reqlimit"
	"gl_inf gl_inference"
	"gl_dcgm_batch gl_dcgm_ingest_batch"
	"gl_dcgm_target gl_dcgm_scrape_target"
	"gl_dcgm_fetch gl_dcgm_scrape_fetch"
	"gl_serving_batch gl_serving_ingest_batch"
	"gl_bound gl_bounds"
	# domain/window.c
	"gl_month_start gl_window_month_start"
	"gl_month_next gl_window_month_next"
	"gl_step_parse gl_window_step_parse"
	"gl_step_name gl_window_step_name"
	"gl_step gl_window_step"
	# domain/idlerule.c (gl_idle_* stays the family of store/idle.c)
	"gl_idle_stage_name gl_idlerule_stage_name"
	"gl_idle_stage_parse gl_idlerule_stage_parse"
	"gl_idle_classify gl_idlerule_classify"
	"gl_idle_cost_micros gl_idlerule_cost_micros"
	# ingest/: each source's loop is named after the file that runs it
	"gl_dcgm_claim_pending gl_dcgm_ingest_claim_pending"
	"gl_dcgm_source_run gl_dcgm_scrape_source_run"
	"gl_kube_source_run gl_kube_ingest_source_run"
	"gl_slurm_nodes_source_run gl_nodes_poll_slurm_source_run"
	"gl_kube_nodes_source_run gl_nodes_poll_kube_source_run"
	"gl_nvsmi_source_run gl_nvsmi_ingest_source_run"
	"gl_sacct_source_run gl_sacct_poll_source_run"
	"gl_serving_source_run gl_serving_scrape_source_run"
	"gl_nodes_stage_copy_text gl_nodes_ingest_stage_copy_text"
	# sources/: the parsers named after their format's file
	"gl_kube_parse_nodes gl_kube_nodes_parse"
	"gl_kube_share_name gl_kubegpu_share_name"
	"gl_node_avail_name gl_nodeobs_avail_name"
	"gl_node_snapshot_fini gl_nodeobs_snapshot_fini"
	"gl_slurm_state_classify gl_nodeobs_state_classify"
	"gl_slurm_state_raw_classify gl_nodeobs_state_raw_classify"
	"gl_mig_profile_slices gl_nodeobs_mig_profile_slices"
	"gl_slurm_parse_gres gl_nodeobs_parse_gres"
	"gl_slurm_parse_tres_models gl_nodeobs_parse_tres_models"
	"gl_job_state_name gl_sacct_job_state_name"
	"gl_nodeobs_parse_scontrol_resv gl_scontrol_parse_resv"
	"gl_sacctmgr_parse_events gl_slurm_events_parse_sacctmgr"
	"gl_slurm_parse_reservations gl_slurm_events_parse_reservations"
	# store/
	"gl_data_through_fini gl_ingest_data_through_fini"
	"gl_cluster_ensure gl_jobs_cluster_ensure"
	# util/timeutil.c (symbol by symbol: gl_time_partitions is SQL's)
	"gl_time_days_from_civil gl_timeutil_days_from_civil"
	"gl_time_civil_from_days gl_timeutil_civil_from_days"
	"gl_time_weekday gl_timeutil_weekday"
	"gl_time_parse gl_timeutil_parse"
	"gl_time_format_day gl_timeutil_format_day"
	"gl_time_format gl_timeutil_format"
	# config.h: its types are the config module's (gl_config_*)
	"gl_budget_cfg gl_config_budget"
	"gl_capacity_plan_cfg gl_config_capacity_plan"
	"gl_cfg_key gl_config_key"
	"gl_cfg_type gl_config_type"
	"gl_dcgm_source_cfg gl_config_dcgm_source"
	"gl_gpu_model_cfg gl_config_gpu_model"
	"gl_idle_owner_cfg gl_config_idle_owner"
	"gl_kube_nodes_source_cfg gl_config_kube_nodes_source"
	"gl_kube_source_cfg gl_config_kube_source"
	"gl_nvsmi_source_cfg gl_config_nvsmi_source"
	"gl_owner_cfg gl_config_owner"
	"gl_rate_cfg gl_config_rate"
	"gl_run_cfg gl_config_run"
	"gl_sacct_source_cfg gl_config_sacct_source"
	"gl_serving_source_cfg gl_config_serving_source"
	"gl_slurm_nodes_source_cfg gl_config_slurm_nodes_source"
	"gl_workload_cfg gl_config_workload"
	# idlerule.h (gl_idle_* stays the family of store/idle.c)
	"gl_idle_gpu_eval gl_idlerule_gpu_eval"
	"gl_idle_job_eval gl_idlerule_job_eval"
	"gl_idle_obs gl_idlerule_obs"
	"gl_idle_signal gl_idlerule_signal"
	"gl_idle_span gl_idlerule_span"
	"gl_idle_stage gl_idlerule_stage"
	"gl_idle_state gl_idlerule_state"
	"GL_IDLE_NODATA GL_IDLERULE_NODATA"
	"GL_IDLE_IDLE GL_IDLERULE_IDLE"
	"GL_IDLE_BUSY GL_IDLERULE_BUSY"
	# simfleet.h and simtrace.h share gl_sim_: each its own
	"gl_sim_avail gl_simfleet_avail"
	"gl_sim_cluster gl_simfleet_cluster_def" # gl_simfleet_cluster is a function
	"gl_sim_fleet gl_simfleet_fleet"
	"gl_sim_job gl_simfleet_job"
	"gl_sim_kind gl_simfleet_kind"
	"gl_sim_model gl_simfleet_model"
	"gl_sim_namespace gl_simfleet_namespace"
	"gl_sim_node gl_simfleet_node"
	"gl_sim_nodeevent gl_simfleet_nodeevent"
	"gl_sim_params gl_simfleet_params"
	"gl_sim_part gl_simfleet_part"
	"gl_sim_state gl_simfleet_state"
	"GL_SIM_MAX_GPUS_PER_NODE GL_SIMFLEET_MAX_GPUS_PER_NODE"
	"GL_SIM_MAX_JOB_NODES GL_SIMFLEET_MAX_JOB_NODES"
	"GL_SIM_NONE GL_SIMFLEET_NONE"
	"GL_SIM_SLURM GL_SIMFLEET_SLURM"
	"GL_SIM_KUBE GL_SIMFLEET_KUBE"
	"GL_SIM_PENDING GL_SIMFLEET_PENDING"
	"GL_SIM_RUNNING GL_SIMFLEET_RUNNING"
	"GL_SIM_COMPLETED GL_SIMFLEET_COMPLETED"
	"GL_SIM_FAILED GL_SIMFLEET_FAILED"
	"GL_SIM_REQUEUED GL_SIMFLEET_REQUEUED"
	"GL_SIM_CANCELLED GL_SIMFLEET_CANCELLED"
	"GL_SIM_UP GL_SIMFLEET_UP"
	"GL_SIM_DOWN GL_SIMFLEET_DOWN"
	"GL_SIM_DRAIN GL_SIMFLEET_DRAIN"
	"gl_sim_duty gl_simtrace_duty"
	"gl_sim_pjob gl_simtrace_pjob"
	"gl_sim_pod gl_simtrace_pod"
	"gl_sim_traces gl_simtrace_traces"
	"GL_SIM_UTIL_MINUTES GL_SIMTRACE_UTIL_MINUTES"
	# servemetrics.h
	"GL_SERVE_NONE GL_SERVEMETRICS_NONE"
	"GL_SERVE_VLLM GL_SERVEMETRICS_VLLM"
	"GL_SERVE_TGI GL_SERVEMETRICS_TGI"
	"GL_SERVE_TRITON GL_SERVEMETRICS_TRITON"
	"GL_SERVE_SGLANG GL_SERVEMETRICS_SGLANG"
	"GL_SERVE_REQUESTS GL_SERVEMETRICS_REQUESTS"
	"GL_SERVE_FAILED GL_SERVEMETRICS_FAILED"
	"GL_SERVE_PROMPT GL_SERVEMETRICS_PROMPT"
	"GL_SERVE_GENERATED GL_SERVEMETRICS_GENERATED"
	"GL_SERVE_INFERENCES GL_SERVEMETRICS_INFERENCES"
	"GL_SERVE_EXECUTIONS GL_SERVEMETRICS_EXECUTIONS"
	"GL_SERVE__NCTR GL_SERVEMETRICS__NCTR"
	"GL_SERVE_MAX_LE GL_SERVEMETRICS_MAX_LE"
	# the other headers
	"GL_GPU_MODEL_SQL GL_ACCOUNTING_GPU_MODEL_SQL"
	"GL_JOB_MODEL_SQL GL_ACCOUNTING_JOB_MODEL_SQL"
	"GL_JOB_GPUS_SQL GL_ACCOUNTING_JOB_GPUS_SQL"
	"GL_JOB_HELD_SQL GL_ACCOUNTING_JOB_HELD_SQL"
	"GL_JOB_RUN_KIND_SQL GL_ACCOUNTING_JOB_RUN_KIND_SQL"
	"GL_JOB_RULE_TAGS_SQL GL_ACCOUNTING_JOB_RULE_TAGS_SQL"
	"GL_USAGE_SCALE_SQL GL_ACCOUNTING_USAGE_SCALE_SQL"
	"GL_JOB_SEEN_SQL GL_ACCOUNTING_JOB_SEEN_SQL"
	"gl_share_idle gl_chargeback_share_idle"
	"GL_MICRO_GPU_SECONDS_PER_GPU_HOUR GL_COST_MICRO_GPU_SECONDS_PER_GPU_HOUR"
	"gl_i128 gl_cost_i128"
	"gl_idle_policy gl_dcgm_idle_policy"
	"GL_IDLE_POLICY_DEFAULT GL_DCGM_IDLE_POLICY_DEFAULT"
	"GL_DCGM_MAX_BODY GL_DCGM_SCRAPE_MAX_BODY"
	"gl_inv_gpu gl_dcgmstore_inv_gpu"
	"gl_hook_policy_cfg gl_hookpolicy_cfg"
	"GL_HOOK_LOCK_KEY GL_HOOKSTORE_LOCK_KEY"
	"gl_data_through_row gl_ingest_data_through_row"
	"gl_data_through gl_ingest_data_through_set" # gl_ingest_data_through fills it
	"gl_jobpid gl_jobpids_entry"
	"GL_JOB_HELD_AS_BILLED GL_JOBROW_HELD_AS_BILLED"
	"gl_job_row gl_jobrow"
	"GL_CLUSTER_HAS_DATA_SQL GL_JOBS_CLUSTER_HAS_DATA_SQL"
	"gl_merge_counts gl_jobs_merge_counts"
	"GL_KUBE_SOURCE GL_KUBE_INGEST_SOURCE"
	"gl_kube_share gl_kubegpu_share"
	"gl_kube_node_gpu gl_kubegpu_node_gpu"
	"gl_migration gl_migrate_script"
	"gl_slurm_event gl_nodeobs_slurm_event"
	"gl_slurm_resv gl_nodeobs_slurm_resv"
	"gl_nvsmi_node_input gl_nvsmi_ingest_node_input"
	"gl_reportfile gl_reportfiles_file"
	"gl_route_class gl_reqclass"
	"gl_job_state gl_sacct_job_state"
	"GL_GPU_TYPE_MAX GL_SACCT_GPU_TYPE_MAX"
	"gl_showback gl_sbmodel"
	"gl_auth gl_server_auth"
	"gl_handler_fn gl_server_handler_fn"
	"gl_route gl_server_route"
	"gl_serving_scrape_in gl_serving_ingest_scrape_in"
	"GL_BUDGET_MAX_THRESHOLDS GL_SETTINGS_MAX_THRESHOLDS"
	"gl_reports_format gl_settings_report_format"
	"GL_REPORTS_CSV GL_SETTINGS_REPORT_CSV"
	"GL_REPORTS_HTML GL_SETTINGS_REPORT_HTML"
	"GL_REPORTS_PDF GL_SETTINGS_REPORT_PDF"
	"GL_REPORTS_ZIP GL_SETTINGS_REPORT_ZIP"
	"gl_source_run_fn gl_daemon_source_run_fn"
)

tracked() { # the files a rename may touch, NUL-separated
	git ls-files -z -- src include tests bench docs scripts Makefile README.md gpuledger.example.yaml |
		grep -zv -e "^$self\$" -e "^$selftest\$" -e "^$known\$" -e '\.\(png\|pdf\|gz\|zip\|prom\.gz\)$' || true
}
holding() { # ERE -> the tracked files with a match, NUL-separated
	tracked | xargs -0 grep -lZE -- "$1" 2>/dev/null || true
}
idents() { # ERE -> the distinct identifiers matching it in the tree
	tracked | xargs -0 grep -ohE -- "$1" 2>/dev/null | sort -u || true
}
changed=0

# ---- files ----
for pair in "${FILES[@]}"; do
	read -r old new <<<"$pair"
	ob=$(basename "$old" .c) nb=$(basename "$new" .c)
	if [[ -e $old && ! -e $new ]]; then
		git mv "$old" "$new"
		echo "rename-modules: moved $old -> $new"
		changed=1
	elif [[ -e $old && -e $new ]]; then
		echo "rename-modules: both $old and $new exist: resolve by hand" >&2
		exit 1
	else
		echo "rename-modules: done before: $new"
	fi
	# its own header follows when nothing else shares it (a header named
	# after two files' base name is the other file's)
	if [[ -e include/gl/$ob.h && ! -e include/gl/$nb.h ]] && [[ -z $(find src -name "$ob.c") ]]; then
		git mv "include/gl/$ob.h" "include/gl/$nb.h"
		echo "rename-modules: moved include/gl/$ob.h -> include/gl/$nb.h"
		mapfile -d '' fs < <(holding "\"gl/$ob\\.h\"")
		[[ ${#fs[@]} -eq 0 ]] || sed -i "s|\"gl/$ob\\.h\"|\"gl/$nb.h\"|g" "${fs[@]}"
	fi
	# mentions of the path: src/cli/audit.c and cli/audit.c alike
	short=${old#src/} nshort=${new#src/}
	pre="(^|[^a-z_/]|src/)$(sed 's/[.]/\\./g' <<<"$short")"
	mapfile -d '' fs < <(holding "$pre")
	if [[ ${#fs[@]} -gt 0 ]]; then
		sed -i -E "s#$pre#\\1$nshort#g" "${fs[@]}"
		echo "rename-modules: $short -> $nshort in ${#fs[@]} files"
		changed=1
	fi
done

# ---- identifiers ----
sqlnames() { # the gl_* names the SQL of sql/ uses (comments left out)
	sed 's/--.*$//' sql/*.sql 2>/dev/null | grep -ohE '\bgl_[A-Za-z0-9_]+' | sort -u || true
}
# A C function may share its name with the SQL function it wraps
# (gl_dcgm_claim_pending): then only C code is renamed, never a string
# literal (the SQL text) nor a document (which names the SQL function).
# Perl splits each line into string/char literals and the rest.
outside_strings_holding() { # perl regex in $RE -> C files with a match outside literals
	tracked | grep -zE '\.[ch]$' | xargs -0 perl -ne '
		BEGIN { $re = qr/$ENV{RE}/ }
		my @p = split /("(?:[^"\\]|\\.)*"|'\''(?:[^'\''\\]|\\.)*'\'')/;
		for (my $i = 0; $i < @p; $i += 2) {
			if ($p[$i] =~ $re) { print "$ARGV\0"; close ARGV; last }
		}' 2>/dev/null || true
}
rename_outside_strings() { # $RE -> $NEW in the C files given, outside literals
	perl -pi -e '
		my @p = split /("(?:[^"\\]|\\.)*"|'\''(?:[^'\''\\]|\\.)*'\'')/;
		for (my $i = 0; $i < @p; $i += 2) { $p[$i] =~ s/$ENV{RE}/$ENV{NEW}/g }
		$_ = join "", @p' "$@"
}
rename_ident() { # ERE of the old names, sed expression, what (for the log)
	local re=$1 expr=$2 what=$3 clash shared
	shared=$(comm -12 <(idents "$re") <(sqlnames))
	if [[ -n $shared ]]; then
		[[ $what == *" -> "* && $what != *"*"* ]] || {
			echo "rename-modules: $what: also SQL names ($shared): rename those by symbol" >&2
			exit 1
		}
		export RE="\\b${what%% -> *}\\b" NEW="${what##* -> }"
		mapfile -d '' fs < <(outside_strings_holding)
	else
		mapfile -d '' fs < <(holding "$re")
	fi
	if [[ ${#fs[@]} -eq 0 ]]; then
		echo "rename-modules: done before: $what"
		return
	fi
	# the names it would make must not be in use already, in C nor in SQL
	clash=$(comm -12 <(tracked | xargs -0 grep -ohE -- "$re" 2>/dev/null | sort -u | sed -E "$expr" | sort -u) \
		<(sort -u <(idents '\b(gl|GL)_[A-Za-z0-9_]+') <(sqlnames)))
	if [[ -n $clash ]]; then
		echo "rename-modules: $what would clash with names in use: $clash" >&2
		exit 1
	fi
	if [[ -n $shared ]]; then
		rename_outside_strings "${fs[@]}"
		echo "rename-modules: $what in ${#fs[@]} files (C code only: also a SQL name)"
	else
		sed -i -E "$expr" "${fs[@]}"
		echo "rename-modules: $what in ${#fs[@]} files"
	fi
	changed=1
}
for pair in "${PREFIX[@]}"; do
	read -r old new <<<"$pair"
	# gl_money_* in a document goes too
	rename_ident "\\b${old}([A-Za-z0-9_]+|\\*)" "s/\\b${old}([A-Za-z0-9_]+|\\*)/${new}\\1/g" "$old* -> $new*"
done
for pair in "${SYMBOL[@]}"; do
	read -r old new <<<"$pair"
	rename_ident "\\b${old}\\b" "s/\\b${old}\\b/${new}/g" "$old -> $new"
done

# ---- the layering check's known list: debts that are paid ----
# a duplicate file name that is gone, a function that now carries its file's
# prefix (or is gone)
known=scripts/layers-known.txt
if [[ -f $known ]]; then
	mapfile -t srcs < <(find src include -name '*.[ch]' | sort)
	awk -f scripts/prefix.awk "${srcs[@]}" | sed 's/^/prefix /' >"$known.left"
	while read -r rule path fn; do
		case $rule in
		name)
			b=$(basename "$path")
			[[ ! -e $path || $(find src -name "$b" | wc -l) -lt 2 ]] || continue
			line="name $path"
			;;
		prefix)
			line="prefix $path $fn"
			! grep -qxF "$line" "$known.left" || continue
			;;
		*) continue ;;
		esac
		grep -vxF "$line" "$known" >"$known.new" || true
		mv "$known.new" "$known"
		echo "rename-modules: $known: paid: $line"
		changed=1
	done < <(grep -E '^(name|prefix) ' "$known" || true)
	rm -f "$known.left"
fi

# ---- what still does not match its file ----
mapfile -t srcs < <(find src include -name '*.[ch]' | sort)
left=0
while read -r f fn; do
	echo "rename-modules: left: $f $fn"
	left=$((left + 1))
done < <(awk -f scripts/prefix.awk "${srcs[@]}")
dups=$(find src -name '*.[ch]' | awk -F/ '{print $NF}' | sort | uniq -d)
echo "rename-modules: $( ((changed)) && echo "renamed" || echo "nothing to do"); duplicate file names under src/: ${dups:-none}; names whose prefix is not their file's: $left"
