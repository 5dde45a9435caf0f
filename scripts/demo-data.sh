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
