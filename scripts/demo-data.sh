#!/usr/bin/env bash
# Loads the demo data shipped in tests/fixtures into the configured database:
# the real Slurm testbed run that also recorded node state (its jobs, two
# `scontrol show node` snapshots, the node events and the reservations), so
# the demo has capacity, idle GPUs, a down and a drained node besides the
# jobs. Usage: demo-data.sh BIN [--config FILE]
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$1; shift
F=tests/fixtures/nodes/testbed
fields=$(tr '|' ',' <"$F/sacct_fields.txt")
"$BIN" "$@" ingest sacct --cluster testgpu --file "$F/sacct_alloc.txt" --fields "$fields"
"$BIN" "$@" ingest slurm-nodes --cluster testgpu --nodes "$F/start_scontrol_show_node.txt" \
	--at "$(cat "$F/start_taken_at.txt")Z"
"$BIN" "$@" ingest slurm-nodes --cluster testgpu --nodes "$F/end_scontrol_show_node.txt" \
	--events "$F/sacctmgr_events.txt" --reservations "$F/sacctmgr_reservations.txt" \
	--at "$(cat "$F/end_taken_at.txt")Z"

# Ten weeks of real history for the forecast, queue and chargeback views:
# the Philly sample (tests/fixtures/philly, CC-BY-4.0) as a second cluster,
# `philly`, moved by whole days so that its last job ends within the day
# before the load: the forecasts then start from where the history ends
# (a week-aligned move would leave up to six empty days before now, which
# the forecasts read as demand dropping to nothing). Weekdays move with it.
# The trace carries no GPU model: the example config prices untyped GPUs
# with `*`; its VCs are accounts, mapped to teams by the example's owners.
P=tests/fixtures/philly/demo_jobs.txt
export TZ=UTC
printf -v now '%(%s)T' -1
last=0
while IFS='|' read -r _ _ e _; do ((e > last)) && last=$e; done <"$P"
t0=$((now - last))
base=$((t0 - t0 % 86400))
tmp=$(mktemp /tmp/gpuledger-demo.XXXXXX)
trap 'rm -f "$tmp"' EXIT
n=0
while IFS='|' read -r s st e acct user state gpus nodes jid; do
	n=$((n + 1))
	printf -v S '%(%Y-%m-%dT%H:%M:%S)T' $((base + s))
	printf -v T '%(%Y-%m-%dT%H:%M:%S)T' $((base + st))
	printf -v E '%(%Y-%m-%dT%H:%M:%S)T' $((base + e))
	printf '%d|%d|philly|gpu|%s|%s|%s|%s|%s|%s|%d|%s|gres/gpu=%d|gres/gpu=%d|%s|%d|%s\n' \
		"$n" "$n" "$acct" "$user" "$S" "$S" "$T" "$E" $((e - st)) "$state" "$gpus" "$gpus" "$nodes" "$n" "$jid"
done <"$P" >"$tmp"
"$BIN" "$@" ingest sacct --cluster philly --file "$tmp" \
	--fields JobID,JobIDRaw,Cluster,Partition,Account,User,Submit,Eligible,Start,End,ElapsedRaw,State,ReqTRES,AllocTRES,NodeList,DBIndex,JobName
