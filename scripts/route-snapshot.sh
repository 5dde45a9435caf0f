#!/usr/bin/env bash
# Records what users see from one binary: the body (and status and the
# headers that carry data) of every GET route, in JSON and CSV, with the
# aggregates, steps, shareIdle values and filters the tests use, the showback
# report (CSV tables, HTML), `hook idle --dry-run --format json` and a few
# other read-only commands, into a directory that a second binary's record
# can be `diff -r`'d against. Volatile fields are normalised (see
# normalise()); every window is pinned to absolute dates, so two records of
# one database differ only where the binaries do.
#
#   scripts/route-snapshot.sh init BIN DIR demo       embedded cluster in DIR, migrated by BIN,
#                                                      with scripts/demo-data.sh and the
#                                                      tests/fixtures/conservation scenario
#   scripts/route-snapshot.sh init BIN DIR bench [N]  the same with bench_chargeback's synthetic
#                                                      month of N jobs (default 1,000,000) and its
#                                                      rates and owners; fewer routes (bench_routes)
#   scripts/route-snapshot.sh record BIN DIR OUT      every route, twice: with usage_daily empty
#                                                      (live/) and after `rollup` (built/)
#   scripts/route-snapshot.sh stop BIN DIR            stops DIR's cluster
#
# The database is the fixture: demo-data.sh moves the Philly trace to end the
# day before it runs, so records are compared over one DIR, not across
# re-inits. A record resets what a previous one left (the rollup, recorded
# reports) as superuser first; its own requests go to the audit log after
# the init's window, which is all /v1/audit is asked for.
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "route-snapshot: $*" >&2; exit 1; }
[[ $# -ge 3 ]] || die "usage: $0 init BIN DIR demo|bench [N] | record BIN DIR OUT | stop BIN DIR"
cmd=$1 BIN=$(realpath "$2") DIR=$3
[[ -x $BIN ]] || die "$BIN: not an executable"
CFG=$DIR/config.yaml
PSQL=/usr/lib/postgresql/15/bin/psql

gl() { "$BIN" --config "$CFG" "$@"; }
sql() { # sql STATEMENT...: as the cluster superuser, on the gpuledger database
	local sock
	sock=$(gl db status | sed -n 's/.*socket \([^)]*\)).*/\1/p')
	# the embedded cluster asks every role for its password, which db init
	# wrote to the base's pgpass (older clusters trust: the file is absent)
	"$PSQL" -X -q -v ON_ERROR_STOP=1 -At "host=$sock port=5432 dbname=gpuledger user=postgres passfile=$(realpath "$DIR")/var/pgpass" "$@"
}

write_config() { # the example's settings; its cost model and owners (demo) or bench_chargeback's
	local dir set=$1
	dir=$(realpath "$DIR")
	sed -e "s|^  embedded_dir: var$|  embedded_dir: $dir/var|" \
		-e 's|^  listen: 127.0.0.1:8080$|  listen: 127.0.0.1:0|' \
		-e 's|^  rate_limit_per_ip: 100$|  rate_limit_per_ip: 0|' \
		-e 's|^  level: info$|  level: warn|' \
		-e "s|^  dir: var/reports$|  dir: $dir/reports|" \
		-e 's|^budgets: \[\]$|budgets:\n  - owner: vision\n    aggregate: team\n    amount: "1200.00"\n  - owner: platform\n    aggregate: team\n    amount: "300.00"|' \
		-e 's|^idle_owners: \[\]$|idle_owners:\n  - cluster: testgpu\n    team: vision\n  - cluster: c1\n    partition: p2\n    team: language|' \
		-e 's|^  policies: \[\]$|  policies:\n    - name: snap-idle\n      scope:\n        clusters: testgpu,c1\n      min_age_min: 5\n      rule:\n        kind: fixed\n        t1_min: 5\n        t2_min: 6\n        t3_min: 7|' \
		gpuledger.example.yaml >"$CFG"
	if [[ $set == bench ]]; then
		awk '/^rates:/ {skip = 1; print "rates:\n  - model: a100\n    per_gpu_hour: \"2.50\"\n  - model: h100\n    per_gpu_hour: \"4.00\"\nowners:\n  - match: account\n    value: acct1\n    team: t1\n  - match: account\n    value: acct2\n    team: t2\n  - match: account\n    value: acct3\n    team: t3\n  - match: user\n    value: \"*\"\n    team: rest"}
			/^idle_owners:/ {skip = 0} !skip' "$CFG" >"$CFG.new" && mv "$CFG.new" "$CFG"
	fi
	gl check-config >/dev/null || die "$CFG: not valid"
}

load_conservation() { # tests/http/test_conservation.c's scenario: clusters c1 and k1
	local F=tests/fixtures/conservation k at
	gl ingest sacct --cluster c1 --file $F/sacct_alloc.txt --fields "$(cat $F/sacct_fields.txt)" >/dev/null
	gl ingest slurm-nodes --cluster c1 --nodes $F/scontrol_nodes.txt --at 2026-09-01T00:00:00Z >/dev/null
	gl ingest kube-nodes --cluster k1 --file $F/kube_nodes.json --at 2026-10-01T00:00:00Z >/dev/null
	gl ingest kube --cluster k1 --file $F/kube_pods.json --at 2026-10-04T00:00:00Z >/dev/null
	for ((k = 0; k < 14; k++)); do
		printf -v at '2026-10-27T00:%02d:%02dZ' $((k * 30 / 60)) $((k * 30 % 60))
		gl ingest dcgm --cluster c1 --file $F/dcgm_n1_job107.prom --at "$at" >/dev/null
	done
}

load_bench() { # bench/bench_chargeback.c's month: 1..8 GPUs, 5 min .. 2 days, 200 accounts, 2,000 users
	local n=$1
	sql -c "INSERT INTO clusters (name, kind) VALUES ('synth', 'slurm')"
	sql -c "INSERT INTO jobs (cluster_id, job_key, job_id, user_name, account, partition, state, submit_at, start_at,
		 end_at, elapsed_s, gpu_micro, gpu_type, nodes)
		 SELECT (SELECT cluster_id FROM clusters WHERE name = 'synth'), 'db:' || g, g::text, 'u' || (g % 2000),
		 'acct' || (g % 200), CASE WHEN g % 3 = 0 THEN 'h100' ELSE 'a100' END,
		 'COMPLETED', s - interval '10 minutes', s, s + d, extract(epoch FROM d)::bigint, (1 + g % 8) * 1000000,
		 CASE WHEN g % 3 = 0 THEN 'h100' ELSE 'a100' END, ARRAY['n' || (g % 1250)]
		 FROM (SELECT g, timestamptz '2026-10-01' + (g::double precision / $n) * interval '31 days' AS s,
		  make_interval(secs => 300 + (g::bigint * 7919) % 172800) AS d FROM generate_series(1, $n) g) x"
	sql -c "ANALYZE jobs"
}

cmd_init() {
	local set=${1:-} n=${2:-1000000}
	[[ $set == demo || $set == bench ]] || die "init: demo or bench"
	[[ ! -e $DIR ]] || die "$DIR exists"
	mkdir -p "$DIR" && chmod 755 "$DIR"
	write_config "$set"
	GL_PG_FAST=1 gl db init >/dev/null
	gl db start >/dev/null
	gl migrate >/dev/null
	echo "$set" >"$DIR/set"
	date -u +%Y-%m-%dT%H:%M:%SZ >"$DIR/loaded_from"
	if [[ $set == demo ]]; then
		scripts/demo-data.sh "$BIN" --config "$CFG" >/dev/null
		load_conservation
	else
		load_bench "$n"
	fi
	(umask 077 && gl token create --name snap-admin --role admin >"$DIR/admin.token")
	(umask 077 && gl token create --name snap-hook --role hook >"$DIR/hook.token")
	sleep 1
	date -u +%Y-%m-%dT%H:%M:%SZ >"$DIR/loaded_to"
	echo "route-snapshot: $set data in $DIR (window $(cat "$DIR/loaded_from"),$(cat "$DIR/loaded_to"))"
}

# ---- recording ----

PORT= PID= OUTD=
serve_start() {
	rm -f "$DIR/port"
	# the binary itself, not through gl(): $! must be its pid for the stop
	"$BIN" --config "$CFG" serve --listen 127.0.0.1:0 --port-file "$DIR/port" --no-ingest >>"$DIR/serve.log" 2>&1 &
	PID=$!
	for ((i = 0; i < 300; i++)); do
		[[ -s $DIR/port ]] && PORT=$(cat "$DIR/port") && return 0
		kill -0 $PID 2>/dev/null || die "serve exited; see $DIR/serve.log"
		sleep 0.1
	done
	die "serve did not start; see $DIR/serve.log"
}
serve_stop() {
	kill -TERM "$PID" && wait "$PID" || true
	PID=
}

# The fields that change from one request or run to the next whatever the
# binary: when it was made, by whom and how long ago, and what the records'
# own requests added (the audit log's rows after the init, request counters).
# sed on the bytes, not a JSON re-print: numbers stay as the binary wrote them.
normalise() { # normalise NAME < body > body
	case $1 in
	metrics*) grep -E '^gpuledger_(db_up|ingest_last_run|inventory)' || true ;;
	tokens*) sed -E 's/"last_used":("[^"]*"|null)/"last_used":"(normalised)"/g' ;;
	inventory*.json) sed -E 's/^\{"at":"[^"]*"/{"at":"(normalised)"/' ;;
	queue*.json) sed -E 's/"longest_wait_s":[-0-9.e+]+/"longest_wait_s":"(normalised)"/g' ;;
	forecast*.json | capacity_forecast*.json) sed -E 's/"computed_at":"[^"]*"/"computed_at":"(normalised)"/' ;;
	idle_candidates*.json | hook_idle*.json) sed -E 's/"now":([[:space:]]*)"[^"]*"/"now":\1"(normalised)"/' ;;
	showback*.html) sed -E 's/(Generated|generated)( at)? [0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9:]{5,8}Z?( UTC)?/\1 (normalised)/g' ;;
	*) cat ;;
	esac
}

# get NAME PATH [TOKEN]: status, the data-carrying headers and the body into OUTD/NAME
get() {
	local name=$1 path=$2 tok=${3:-$(cat "$DIR/admin.token")} hdr body code
	hdr=$(mktemp) body=$(mktemp)
	code=$(curl -sS --max-time 900 -o "$body" -D "$hdr" -w '%{http_code}' \
		-H "Authorization: Bearer $tok" "http://127.0.0.1:$PORT$path") || code=curl-failed
	{
		echo "# GET $path"
		echo "# status $code"
		grep -iE '^(content-type|content-disposition|x-next-cursor|x-capacity-[a-z-]*|x-[a-z-]*unpriced[a-z-]*):' "$hdr" |
			tr -d '\r' | sed 's/^/# /' | sort
		# how old each source's data is depends on when the record ran
		normalise "$name" <"$body" | sed -E 's/"staleness_seconds":[0-9]+/"staleness_seconds":"(normalised)"/g'
	} >"$OUTD/$name"
	rm -f "$hdr" "$body"
}

W_MONTH=2026-10 W_DAY=2026-11-22 W_IDLE_DAY=2026-10-27
W_LONG=2026-09-01T00:00:00Z,2026-11-28T00:00:00Z
W_FC=2026-09-14T00:00:00Z,2026-11-27T00:00:00Z
W_FC_H=2026-11-13T00:00:00Z,2026-11-27T00:00:00Z

chargeback_routes() { # the accounting reads (live pieces and built days alike)
	local a s
	for a in team project cost_center user account cluster partition qos namespace gpu_model team,cluster; do
		get "chargeback_${a/,/+}.json" "/v1/chargeback?window=$W_MONTH&aggregate=$a"
	done
	for s in none proportional owner; do
		get "chargeback_share_$s.json" "/v1/chargeback?window=$W_MONTH&aggregate=team&shareIdle=$s"
		get "chargeback_share_${s}_day.json" "/v1/chargeback?window=$W_DAY&aggregate=team&shareIdle=$s"
		get "chargeback_share_${s}_filtered.json" "/v1/chargeback?window=$W_LONG&aggregate=team&shareIdle=$s&filter=team:vision"
	done
	for s in day week month; do
		get "chargeback_step_$s.json" "/v1/chargeback?window=$W_LONG&aggregate=team&step=$s"
		get "chargeback_step_${s}_cluster.csv" "/v1/chargeback?window=$W_LONG&aggregate=cluster&step=$s&format=csv"
	done
	get chargeback_step_hour.json "/v1/chargeback?window=$W_DAY&aggregate=team&step=hour"
	get chargeback_step_hour_idle.json "/v1/chargeback?window=$W_IDLE_DAY&aggregate=gpu_model&step=hour"
	get chargeback_month.csv "/v1/chargeback?window=$W_MONTH&aggregate=team&format=csv"
	get chargeback_user_day.csv "/v1/chargeback?window=$W_LONG&aggregate=user&step=day&format=csv"
	get chargeback_filter_cluster.json "/v1/chargeback?window=$W_LONG&aggregate=gpu_model&filter=cluster:c1"
	get chargeback_filter_philly.json "/v1/chargeback?window=$W_LONG&aggregate=account&filter=cluster:philly"
	get chargeback_filter_model.json "/v1/chargeback?window=$W_LONG&aggregate=team&filter=gpu_model:a100"
	get chargeback_filter_two.json "/v1/chargeback?window=$W_LONG&aggregate=team&filter=cluster:philly%2Bteam:vision,language"
	get chargeback_default.json "/v1/chargeback?window=$W_DAY"
}

report_routes() { # the showback report (it reads chargeback too)
	local t m
	for m in 2026-09 $W_MONTH; do
		for t in owners models daily fleet waits top_cost top_idle reconciliation rates owner_rules partial; do
			get "showback_${m}_$t.csv" "/v1/reports/showback?month=$m&table=$t"
		done
		get "showback_$m.html" "/v1/reports/showback?month=$m&format=html"
	done
	get showback_account_prop.csv "/v1/reports/showback?month=$W_MONTH&aggregate=account&shareIdle=proportional"
	get showback_project.csv "/v1/reports/showback?month=$W_MONTH&aggregate=project"
	get showback_user_fleet.csv "/v1/reports/showback?month=$W_MONTH&aggregate=user&table=fleet"
	get showback_owner.html "/v1/reports/showback?month=$W_MONTH&shareIdle=owner&format=html"
	get budgets_2026-10.json "/v1/budgets?month=$W_MONTH"
	get budgets_2026-09.json "/v1/budgets?month=2026-09"
}

forecast_routes() {
	local m
	for m in gpu_hours busy_gpu_hours demand_gpus pending_gpus pending_minutes cost; do
		get "forecast_$m.json" "/v1/forecast?metric=$m&aggregate=team&step=day&window=$W_FC&horizon=14"
	done
	get forecast_week.json "/v1/forecast?aggregate=cluster&step=week&window=$W_FC&horizon=4"
	get forecast_hour.json "/v1/forecast?aggregate=cluster&step=hour&window=$W_FC_H&horizon=24&level=80"
	get forecast_exclude.json "/v1/forecast?aggregate=account&step=day&window=$W_FC&exclude=2026-10-01,2026-10-03T00:00:00Z"
	get capacity_forecast.json "/v1/capacity/forecast?window=$W_FC&horizon=14"
	get capacity_forecast_testgpu.json "/v1/capacity/forecast?window=$W_FC&horizon=7&cluster=testgpu"
	get capacity_forecast_week.json "/v1/capacity/forecast?window=2026-06-01T00:00:00Z,2026-11-23T00:00:00Z&horizon=8&step=week"
	get capacity_forecast_risk.json "/v1/capacity/forecast?window=$W_FC&horizon=14&risk=5"
	get capacity_plan.json /v1/capacity/plan
}

other_routes() {
	local a w t f s lf lt cur
	get healthz.json /healthz
	get metrics.txt /metrics
	get whoami.json /v1/whoami
	get tokens.json /v1/tokens
	for w in $W_MONTH $W_DAY $W_IDLE_DAY $W_LONG; do
		for a in team user cluster gpu_model; do
			get "idle_${w//[:,]/_}_$a.json" "/v1/idle?window=$w&aggregate=$a"
		done
		for t in allocated top_jobs unallocated; do
			get "idle_${w//[:,]/_}_$t.csv" "/v1/idle?window=$w&format=csv&table=$t"
		done
	done
	get idle_limit.json "/v1/idle?window=$W_LONG&limit=5&aggregate=project"
	for w in $W_MONTH $W_DAY $W_LONG; do
		for a in partition team project cost_center user account cluster qos namespace gpu_model gpus; do
			get "queue_${w//[:,]/_}_$a.json" "/v1/queue?window=$w&aggregate=$a"
		done
		get "queue_${w//[:,]/_}.csv" "/v1/queue?window=$w&format=csv"
	done
	for w in $W_DAY $W_IDLE_DAY $W_MONTH; do
		for s in none hour day; do
			[[ $w == "$W_MONTH" && $s == hour ]] && continue
			for a in cluster partition gpu_model; do
				get "capacity_${w}_${s}_$a.json" "/v1/capacity?window=$w&step=$s&aggregate=$a"
			done
			get "capacity_${w}_$s.csv" "/v1/capacity?window=$w&step=$s&aggregate=partition&format=csv"
			get "capacity_${w}_$s.sreport" "/v1/capacity?window=$w&step=$s&format=sreport"
		done
	done
	get capacity_cluster.json "/v1/capacity?window=$W_LONG&step=week&cluster=testgpu"
	get inventory.json /v1/inventory
	get inventory.csv "/v1/inventory?format=csv"
	get inventory_testgpu.json "/v1/inventory?cluster=testgpu"
	get inventory_c1.csv "/v1/inventory?cluster=c1&format=csv"
	get jobs.json /v1/jobs
	get jobs.csv "/v1/jobs?format=csv&limit=500"
	get jobs_page1.json "/v1/jobs?limit=7"
	cur=$(jq -r '.next_cursor // empty' <(sed '/^#/d' "$OUTD/jobs_page1.json"))
	[[ -n $cur ]] && get jobs_page2.json "/v1/jobs?limit=7&cursor=$cur"
	get jobs_page1.csv "/v1/jobs?limit=6&format=csv"
	get jobs_offset.json "/v1/jobs?limit=3&offset=4"
	for w in $W_MONTH $W_DAY $W_IDLE_DAY; do
		get "jobs_window_$w.json" "/v1/jobs?window=$w&limit=1000"
		get "jobs_window_$w.csv" "/v1/jobs?window=$w&limit=1000&format=csv"
	done
	get jobs_cluster.json "/v1/jobs?cluster=testgpu&limit=100"
	get jobs_state.json "/v1/jobs?state=COMPLETED&limit=20&cluster=philly"
	get jobs_jobid.json "/v1/jobs?job_id=107"
	get ingest_runs.json /v1/ingest/runs
	get ingest_runs.csv "/v1/ingest/runs?format=csv"
	for s in sacct kube dcgm slurm-nodes kube-nodes; do
		get "ingest_runs_$s.json" "/v1/ingest/runs?source=$s&limit=3"
	done
	lf=$(cat "$DIR/loaded_from") lt=$(cat "$DIR/loaded_to")
	get audit.json "/v1/audit?window=$lf,$lt&limit=1000"
	get audit.csv "/v1/audit?window=$lf,$lt&limit=1000&format=csv"
	get audit_page.json "/v1/audit?window=$lf,$lt&limit=3&action=token.create"
	get audit_verify.json "/v1/audit/verify?window=$lf,$lt"
	get reports.json /v1/reports
	get reports_month.json "/v1/reports?month=$W_MONTH"
	local hook
	hook=$(cat "$DIR/hook.token")
	get idle_candidates.json "/v1/idle/candidates?policy=snap-idle" "$hook"
	get hook_actions.json "/v1/hook/actions?window=$W_LONG" "$hook"
}

# bench_chargeback's month of N jobs: the reads whose work grows with the
# jobs (a request takes seconds to a minute there, so not every variant)
bench_routes() {
	local a m=$W_MONTH
	for a in team user account gpu_model team,cluster; do
		get "chargeback_${a/,/+}.json" "/v1/chargeback?window=$m&aggregate=$a"
	done
	get chargeback_step_day.json "/v1/chargeback?window=$m&aggregate=team&step=day"
	get chargeback_step_week.csv "/v1/chargeback?window=$m&aggregate=account&step=week&format=csv"
	get chargeback_step_hour.json "/v1/chargeback?window=2026-10-01T00:00:00Z,2026-10-08T00:00:00Z&aggregate=team&step=hour"
	get chargeback_prop_filtered.json "/v1/chargeback?window=$m&aggregate=team&shareIdle=proportional&filter=team:t1,t2"
	get chargeback_model.csv "/v1/chargeback?window=$m&aggregate=gpu_model&filter=gpu_model:h100&format=csv"
	[[ $OUTD == */live ]] || return 0
	get idle_team.json "/v1/idle?window=$m&aggregate=team"
	get idle_top_jobs.csv "/v1/idle?window=$m&format=csv&table=top_jobs"
	get queue_partition.json "/v1/queue?window=$m&aggregate=partition"
	get queue_team.json "/v1/queue?window=$m&aggregate=team"
	get queue_gpus.csv "/v1/queue?window=$m&aggregate=gpus&format=csv"
	get capacity_day.json "/v1/capacity?window=$m&step=day"
	get inventory.json /v1/inventory
	get jobs.json "/v1/jobs?limit=1000"
	get jobs_window.csv "/v1/jobs?window=2026-10-15&limit=1000&format=csv"
	get jobs_cursor.json "/v1/jobs?window=$m&limit=50&cursor=500000"
	get ingest_runs.json /v1/ingest/runs
	get metrics.txt /metrics
}

bench_reports() {
	local t
	for t in owners fleet top_cost top_idle waits daily reconciliation; do
		get "showback_$t.csv" "/v1/reports/showback?month=$W_MONTH&table=$t"
	done
	get showback.html "/v1/reports/showback?month=$W_MONTH&format=html"
	get forecast_team.json "/v1/forecast?metric=gpu_hours&aggregate=team&step=day&window=$W_FC&horizon=14"
	get forecast_cost.json "/v1/forecast?metric=cost&aggregate=team&step=week&window=$W_FC&horizon=4"
	get capacity_forecast.json "/v1/capacity/forecast?window=$W_FC&horizon=14"
}

record_set() { # the routes of DIR's data set into OUTD
	if [[ $(cat "$DIR/set") == bench ]]; then
		bench_routes
		bench_reports
		return
	fi
	chargeback_routes
	report_routes
	forecast_routes
	[[ $OUTD == */live ]] && other_routes
	return 0
}

cli_outputs() { # read-only commands, and the report files `report showback` writes
	local f rc
	mkdir -p "$OUTD/report"
	rc=0 && gl hook idle --dry-run --format json --policy snap-idle >"$OUTD/hook_idle.raw" 2>&1 || rc=$?
	{ normalise hook_idle.json <"$OUTD/hook_idle.raw" && echo "exit $rc"; } >"$OUTD/hook_idle.json" && rm "$OUTD/hook_idle.raw"
	gl rates list >"$OUTD/rates_list.txt" 2>&1
	gl token list 2>&1 | sed -E 's/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z/(time)/g' >"$OUTD/token_list.txt"
	for f in csv html; do
		gl report showback --month $W_MONTH --format $f --out "$OUTD/report" | awk '{print $1, $2}' >"$OUTD/report_$f.txt"
	done
	for f in "$OUTD"/report/*.html; do
		normalise showback.html <"$f" >"$f.n" && mv "$f.n" "$f"
	done
}

cmd_record() {
	local out=$1
	[[ ! -e $out ]] || die "$out exists"
	mkdir -p "$out"
	out=$(realpath "$out")
	# what a previous record or the daemon left: built days, recorded reports
	sql -c "TRUNCATE usage_daily, usage_daily_owner, usage_daily_built" -c "DELETE FROM report_files"
	rm -rf "$DIR/reports"
	trap '[[ -n $PID ]] && kill -TERM $PID 2>/dev/null' EXIT
	serve_start
	OUTD=$out/live && mkdir -p "$OUTD"
	record_set
	serve_stop
	OUTD=$out && cli_outputs
	gl rollup --days 400 >"$out/rollup.txt"
	# the rollup itself, row by row (the live reads above answered without it)
	sql -c "SELECT * FROM usage_daily ORDER BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13" >"$out/usage_daily.txt"
	sql -c "SELECT * FROM usage_daily_owner ORDER BY 1, 2, 3, 4, 5, 6, 7, 8, 9" >"$out/usage_daily_owner.txt"
	serve_start
	OUTD=$out/built && mkdir -p "$OUTD"
	record_set
	serve_stop
	trap - EXIT
	echo "route-snapshot: $(find "$out" -type f | wc -l) files in $out"
}

case $cmd in
init) shift 3; cmd_init "$@" ;;
record) [[ $# -eq 4 ]] || die "record BIN DIR OUT"; cmd_record "$4" ;;
stop) gl db stop ;;
*) die "unknown command $cmd" ;;
esac
