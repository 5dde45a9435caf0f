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
# nor this script). Files move with `git mv`, so history follows them.
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
# Families that keep their shared prefix on purpose (not renamed): the
# route handlers gl_route_* (api/routes_*.c, one table in routes_core.c),
# the subcommands gl_cli_<command> (cli/*.c, declared in cli.h), the
# request API gl_req_* / gl_resp_* of api/server.c, the base helpers of
# util/common.c (gl_err_*, gl_x*alloc). At the end the script lists what
# else still does not match its file, for the next pass.
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"
self=scripts/rename-modules.sh

# old path -> new path (src/ and include/)
FILES=(
	"src/cli/audit.c src/cli/cli_audit.c"
	"src/cli/hook.c src/cli/cli_hook.c"
	"src/cli/report.c src/cli/cli_report.c"
	"src/cli/forecast.c src/cli/cli_forecast.c"
	"src/cli/shard.c src/cli/cli_shard.c"
	"src/store/capacity.c src/store/capstore.c"
)
# old prefix -> new prefix (the module the file names)
PREFIX=(
	"gl_acct_ gl_accounting_"          # store/accounting.c
	"gl_cb_ gl_chargeback_"            # domain/chargeback.c
	"gl_attrib_ gl_dcgm_attrib_"       # ingest/dcgm_attrib.c
	"gl_money_ gl_cost_"               # domain/cost.c
	"gl_i128_ gl_cost_i128_"           # domain/cost.c
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
)

tracked() { # the files a rename may touch, NUL-separated
	git ls-files -z -- src include tests bench docs scripts Makefile README.md gpuledger.example.yaml |
		grep -zv -e "^$self\$" -e '\.\(png\|pdf\|gz\|zip\|prom\.gz\)$' || true
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
rename_ident() { # ERE of the old names, sed expression, what (for the log)
	local re=$1 expr=$2 what=$3 clash
	mapfile -d '' fs < <(holding "$re")
	if [[ ${#fs[@]} -eq 0 ]]; then
		echo "rename-modules: done before: $what"
		return
	fi
	# the names it would make must not be in use already
	clash=$(comm -12 <(idents "$re" | sed -E "$expr") <(idents '\bgl_[A-Za-z0-9_]+'))
	if [[ -n $clash ]]; then
		echo "rename-modules: $what would clash with names in use: $clash" >&2
		exit 1
	fi
	sed -i -E "$expr" "${fs[@]}"
	echo "rename-modules: $what in ${#fs[@]} files"
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

# ---- the layering check's known list: duplicate names that are gone ----
known=scripts/layers-known.txt
if [[ -f $known ]]; then
	while read -r rule path; do
		[[ $rule == name ]] || continue
		b=$(basename "$path")
		if [[ ! -e $path || $(find src -name "$b" | wc -l) -lt 2 ]]; then
			grep -vxF "name $path" "$known" >"$known.new" || true
			mv "$known.new" "$known"
			echo "rename-modules: $known: no longer a duplicate name: $path"
			changed=1
		fi
	done < <(grep -E '^name ' "$known" || true)
fi

# ---- what still does not match its file ----
left=0
while read -r f; do
	b=$(basename "$f" .c)
	while read -r fn; do
		case $fn in
		gl_"$b" | gl_"$b"_* | gl_route_* | gl_cli_* | gl_req_* | gl_resp_*) ;;
		*)
			[[ $b == common ]] && continue
			echo "rename-modules: left: $f $fn"
			left=$((left + 1))
			;;
		esac
	done < <(awk '/^[A-Za-z_].*\(/ && !/^static/ {l = $0; sub(/\(.*/, "", l); sub(/.*[ *]/, "", l); if (l ~ /^gl_/) print l}' "$f")
done < <(find src -name '*.c' -not -path 'src/sim/*' | sort)
dups=$(find src -name '*.[ch]' | awk -F/ '{print $NF}' | sort | uniq -d)
echo "rename-modules: $( ((changed)) && echo "renamed" || echo "nothing to do"); duplicate file names under src/: ${dups:-none}; functions whose prefix is not their file's (for a next pass): $left"
