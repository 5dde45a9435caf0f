#!/usr/bin/env bash
# The simulated demo fleet for `make run` (docs/demo.md). Subcommands:
#   start BUILD            start build/gpuledger-sim in the background (its
#                          state, shims and log in $SIM_DIR, default var/sim),
#                          write $SIM_DIR/gpuledger.demo.yaml, print its path
#   history BIN ARGS...    load the fleet's history (jobs, pods, node
#                          inventory and events since the fleet's first day)
#                          through the shims into the configured database
#   budgets BIN ARGS...    set budgets in the demo config from each team's
#                          spend this month, so they cross thresholds live
#   stop                   stop the simulator this script started
# Environment: SIM_DIR, SIM_SPEED (60), SIM_GPUS (256), SIM_HISTORY_DAYS (72).
set -euo pipefail
cd "$(dirname "$0")/../.."
DIR=${SIM_DIR:-var/sim}
FIELDS=JobID,JobIDRaw,Cluster,Partition,QOS,Account,Group,GID,User,UID,Submit,Eligible,Start,End,Elapsed,ElapsedRaw,ExitCode,State,NNodes,NCPUS,ReqCPUS,ReqMem,ReqTRES,AllocTRES,Timelimit,NodeList,DBIndex,Suspended,WCKey,JobName

start() {
	local build=$1 pid
	mkdir -p "$DIR"
	rm -f "$DIR/sim.url"
	"$build/gpuledger-sim" serve --dir "$DIR" --speed "${SIM_SPEED:-60}" --gpus "${SIM_GPUS:-256}" \
		--history-days "${SIM_HISTORY_DAYS:-72}" >>"$DIR/sim.log" 2>&1 </dev/null &
	pid=$!
	echo "$pid" >"$DIR/sim.pid"
	for _ in $(seq 1 300); do
		[[ -s $DIR/sim.url ]] && break
		if ! kill -0 "$pid" 2>/dev/null; then
			echo "sim: the simulator stopped; its log ($DIR/sim.log):" >&2
			tail -5 "$DIR/sim.log" >&2
			exit 1
		fi
		sleep 0.1
	done
	[[ -s $DIR/sim.url ]] || { echo "sim: no $DIR/sim.url after 30 s" >&2; exit 1; }
	write_config /dev/null
	echo "$DIR/gpuledger.demo.yaml"
}

# The template with its var/sim/ paths moved to this SIM_DIR and the
# budgets list from file $1 (none when it is empty).
write_config() {
	sed "s#var/sim/#$DIR/#g" scripts/demo/gpuledger.demo.yaml |
		awk -v f="$1" '/^budgets: \[\]/ && (getline l < f) > 0 { print l; while ((getline l < f) > 0) print l; next } { print }' \
			>"$DIR/gpuledger.demo.yaml.tmp"
	mv "$DIR/gpuledger.demo.yaml.tmp" "$DIR/gpuledger.demo.yaml"
}

stop() {
	local pid
	[[ -s $DIR/sim.pid ]] || return 0
	pid=$(cat "$DIR/sim.pid")
	# only the simulator this script started (its pid file, its binary)
	if [[ $(readlink "/proc/$pid/exe" 2>/dev/null) == */gpuledger-sim ]]; then
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	fi
	rm -f "$DIR/sim.pid"
}

history() {
	local bin=$1 start now tmp slurm kube dump
	shift
	read -r slurm kube < <(sed -n 's/.*"clusters":\["\([^"]*\)","\([^"]*\)"\].*/\1 \2/p' <(curl -s --noproxy '*' "$(cat "$DIR/sim.url")/state"))
	start=$(sed -n 's/^start //p' "$DIR/timeline")
	printf -v start '%(%Y-%m-%dT%H:%M:%S)T' "$start"
	printf -v now '%(%Y-%m-%dT%H:%M:%S)T' -1
	tmp=$(mktemp -d /tmp/gpuledger-sim-history.XXXXXX)
	trap 'rm -rf "$tmp"' RETURN
	echo "sim: loading the fleet's history since ${start}Z (docs/demo.md)"
	# the pods' dump (the largest) runs beside the Slurm part
	GL_SIM_URL=$(cat "$DIR/sim.url") "$(readlink "$DIR/bin/kubectl")" pods-history >"$tmp/pods.json" &
	dump=$!
	TZ=UTC "$DIR/bin/sacct" --allusers --parsable2 --noheader --allocations --duplicates --clusters "$slurm" \
		--starttime "$start" --endtime "$now" --delimiter '|' --format "$FIELDS" >"$tmp/sacct.txt"
	"$bin" "$@" ingest sacct --cluster "$slurm" --file "$tmp/sacct.txt" --fields "$FIELDS"
	"$DIR/bin/scontrol" show node -o >"$tmp/nodes.txt"
	"$DIR/bin/sacctmgr" -P show event events=node,cluster "clusters=$slurm" "start=$start" "end=$now" \
		format=Cluster,Event,NodeName,ClusterNodes,Start,End,State,StateRaw,Reason,User,TRES >"$tmp/events.txt"
	"$DIR/bin/scontrol" show reservation -o >"$tmp/resv.txt"
	"$bin" "$@" ingest slurm-nodes --cluster "$slurm" --nodes "$tmp/nodes.txt" --events "$tmp/events.txt" \
		--reservations "$tmp/resv.txt" --at "${now}Z"
	"$DIR/bin/kubectl" get nodes -o json >"$tmp/knodes.json"
	"$bin" "$@" ingest kube-nodes --cluster "$kube" --file "$tmp/knodes.json" --at "${now}Z"
	wait "$dump"
	"$bin" "$@" ingest kube --cluster "$kube" --file "$tmp/pods.json" --at "${now}Z"
}

# Budgets from this month's spend so far, per team: one already over, one
# just under 100 %, one just under 90 %, one under 75 %, so the live part
# crosses thresholds within minutes (alerts: budget_alerts, /v1/budgets).
budgets() {
	local bin=$1 tmp cfg=$DIR/gpuledger.demo.yaml month
	shift
	month=$(date -u +%Y-%m)
	tmp=$(mktemp -d /tmp/gpuledger-sim-budgets.XXXXXX)
	trap 'rm -rf "$tmp"' RETURN
	# the owners and rates of the demo config, as serve loads them
	"$bin" "$@" rates load "$cfg" >/dev/null
	"$bin" "$@" report showback --month "$month" --format csv --aggregate team --out "$tmp" >/dev/null
	# spend to date per team, largest first (total_micros: exact, unformatted)
	awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) { if ($i == "owner") o = i; if ($i == "total_micros") m = i } next }
		o && m && $o !~ /^__/ && $m + 0 > 0 { print $m, $o }' "$tmp"/*-owners.csv | sort -rn |
		awk 'BEGIN { n = split("1.05 0.9995 0.8995 0.7 0.4", used, " "); print "budgets:" }
			NR <= n { printf "  - {owner: %s, aggregate: team, amount: \"%.2f\"}\n", $2, $1 / 1e6 / used[NR] + 0.01 }
			END { if (NR == 0) print "  []" }' >"$tmp/budgets.yaml"
	write_config "$tmp/budgets.yaml"
}

cmd=${1:-}
shift || true
case $cmd in
start | stop | history | budgets) "$cmd" "$@" ;;
*)
	sed -n '2,13s/^# \{0,1\}//p' "$0" >&2
	exit 2
	;;
esac
