#!/usr/bin/env bash
# `make test-slurm`: end to end against a REAL Slurm 22.05 (never part of
# `make test`; needs root, the Debian Slurm packages and about 5 minutes).
#
# 1. runs tests/slurm/testbed/run-all.sh with SLURMTB_NODE_EVENTS=1:
#    the 15-job workload while gpu04 is set DOWN, a node is drained and a
#    maintenance reservation is put on gpu03, then the forced rollup and the
#    dumps (sacct, scontrol show node -o, sacctmgr show event/reservation,
#    sreport cluster Utilization per hour);
# 2. ingests them with the real `gpuledger ingest sacct|slurm-nodes` into a
#    throwaway embedded PostgreSQL;
# 3. asks the real daemon for GET /v1/capacity?format=sreport for each hour
#    sreport reported and diffs it with sreport's own file: the Allocated,
#    Down, PLND Down, Idle and Reported GPU-seconds must be equal to the second.
# The dumps are kept in $GL_SLURM_OUT (default: a temp dir, printed) so they can
# be saved as fixtures. SLURMTB_OUT=DIR skips step 1 and uses an earlier run.
set -uo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
TB=${GL_SLURM_TESTBED:-tests/slurm/testbed}
T=$(mktemp -d /tmp/gpuledger-slurm.XXXXXX)
chmod 755 "$T"
G() { "$BUILD/gpuledger" --config "$T/config.yaml" "$@"; }
cleanup() {
	[[ -n ${pid:-} ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	G db stop >/dev/null 2>&1
	rm -rf "$T/var" # the throwaway database; the dumps and logs stay
}
trap cleanup EXIT
fail() { echo "test-slurm: $*" >&2; exit 1; }

if [[ -n ${SLURMTB_OUT:-} && -f ${SLURMTB_OUT}/sacct_alloc.txt ]]; then
	OUT=$SLURMTB_OUT
	echo "test-slurm: using the earlier run in $OUT"
else
	[[ $(id -u) == 0 ]] || fail "needs root (the testbed runs Slurm in a network namespace)"
	[[ -x $TB/run-all.sh ]] || fail "no slurm-testbed at $TB"
	OUT=${GL_SLURM_OUT:-$T/out}
	echo "test-slurm: running the real Slurm testbed (about 5 min), dumps in $OUT"
	SLURMTB_OUT=$OUT SLURMTB_NODE_EVENTS=1 "$TB/run-all.sh" >"$T/testbed.log" 2>&1 ||
		{ tail -30 "$T/testbed.log" >&2; fail "the testbed run failed (log: $T/testbed.log)"; }
fi
source "$OUT/run_info.env"
cluster=${CLUSTER:-testgpu}

printf 'database:\n  embedded_dir: %s/var\nlog:\n  level: warn\n' "$T" >"$T/config.yaml"
GL_PG_FAST=1 G db init >/dev/null && G db start >/dev/null || fail "no PostgreSQL"
G migrate >/dev/null || fail "migrate"
fields=$(tr '|' ',' <"$OUT/sacct_fields.txt")
G ingest sacct --cluster "$cluster" --file "$OUT/sacct_alloc.txt" --fields "$fields" >/dev/null || fail "ingest sacct"
G ingest slurm-nodes --cluster "$cluster" --nodes "$OUT/nodes/start_scontrol_show_node.txt" \
	--at "$(cat "$OUT/nodes/start_taken_at.txt")Z" >/dev/null || fail "ingest start nodes"
G ingest slurm-nodes --cluster "$cluster" --nodes "$OUT/nodes/end_scontrol_show_node.txt" \
	--events "$OUT/sacctmgr_events.txt" --reservations "$OUT/sacctmgr_reservations.txt" \
	--at "$(cat "$OUT/nodes/end_taken_at.txt")Z" >/dev/null || fail "ingest end nodes"
tok=$(G token create --name test-slurm --role viewer 2>/dev/null | tail -1)
[[ -n $tok ]] || fail "token create"
# not through G: a function in the background is a subshell, and $! would be
# its pid, which cleanup's kill leaves the daemon running past
"$BUILD/gpuledger" --config "$T/config.yaml" serve --listen 127.0.0.1:0 --port-file "$T/port" --no-ingest \
	>"$T/serve.log" 2>&1 &
pid=$!
for _ in $(seq 100); do [[ -s $T/port ]] && break; sleep 0.1; done
port=$(cat "$T/port" 2>/dev/null) || fail "the daemon did not start ($T/serve.log)"

ok=0 bad=0
for f in "$OUT"/sreport_cluster_utilization_gputres_hour_*.txt; do
	# the banner names the hour sreport really reported
	read -r a b < <(sed -n 's/^Cluster Utilization \(\S*\) - \(\S*\)$/\1 \2/p' "$f")
	[[ -n $a ]] || continue
	end=$(date -u -d "${b}Z + 1 second" +%Y-%m-%dT%H:%M:%SZ)
	got=$(curl -sf -H "Authorization: Bearer $tok" \
		"http://127.0.0.1:$port/v1/capacity?window=${a}Z,$end&format=sreport&cluster=$cluster")
	if diff <(printf '%s\n' "$got") "$f" >"$T/diff"; then
		echo "ok     $(basename "$f"): equal to the second"
		ok=$((ok + 1))
	else
		echo "not ok $(basename "$f"):"; cat "$T/diff"
		bad=$((bad + 1))
	fi
done
echo "test-slurm: $ok hours equal, $bad different (dumps: $OUT)"
((ok > 0 && bad == 0))
