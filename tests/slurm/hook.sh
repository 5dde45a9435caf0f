#!/usr/bin/env bash
# `make test-slurm` (the idle hook part): a REAL idle Slurm job cancelled by
# the hook's REAL scancel (root, the Debian Slurm packages, about 4 minutes).
#
# 1. configures and starts the testbed (tests/slurm/testbed: Slurm 22.05 in
#    a loopback-only network namespace) and submits, as alice, a 1-GPU job
#    named "idle; rm -rf /" that sleeps;
# 2. ingests its sacct line with the real `gpuledger ingest sacct`, then
#    every 20 s a dcgm-exporter scrape of its GPU that says it is idle
#    (HAND-WRITTEN: the testbed's GPUs are gres device files, there is no
#    GPU and no exporter) with the real `gpuledger ingest dcgm`;
# 3. runs `gpuledger hook idle --act` with a sliding 2-minute policy whose
#    action is the testbed's real scancel: the first run warns, the second
#    cancels; then sacct must say CANCELLED and the audit log must hold the
#    warning and the action with scancel's argv and exit status.
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BUILD=${BUILD:-build}
TB=${GL_SLURM_TESTBED:-tests/slurm/testbed}
fail() { echo "test-slurm hook: $*" >&2; exit 1; }
[[ $(id -u) == 0 ]] || fail "needs root (the testbed runs Slurm in a network namespace)"
[[ -x $TB/20-start.sh ]] || fail "no slurm-testbed at $TB"
T=$(mktemp -d /tmp/gpuledger-slurmhook.XXXXXX)
chmod 755 "$T"
G() { "$ROOT/$BUILD/gpuledger" --config "$T/config.yaml" "$@"; }
cleanup() {
	(cd "$TB" && ./90-stop.sh >/dev/null 2>&1)
	G db stop >/dev/null 2>&1
	rm -rf "$T/var"
}
trap cleanup EXIT

# the testbed's helpers (tb, as_user) and settings (SLURM_CONF, NETNS, CLUSTER)
source "$TB/lib.sh"
set +e
echo "test-slurm hook: starting the testbed (log: $T/testbed.log)"
( cd "$TB" && ./00-install.sh && { ./90-stop.sh || true; } && ./10-configure.sh && ./20-start.sh ) >"$T/testbed.log" 2>&1 ||
	{ tail -20 "$T/testbed.log" >&2; fail "the testbed did not start"; }

jid=$(as_user alice sbatch --parsable -J 'idle; rm -rf /' -A teama -p a100 --gres=gpu:a100:1 -t 10 \
	-o /dev/null -e /dev/null --chdir=/tmp --wrap 'sleep 600')
[[ $jid =~ ^[0-9]+$ ]] || fail "sbatch: $jid"
for _ in $(seq 60); do
	[[ $(tb squeue -h -j "$jid" -o %T) == RUNNING ]] && break
	sleep 1
done
node=$(tb squeue -h -j "$jid" -o %N)
[[ -n $node ]] || fail "job $jid is not running"
echo "test-slurm hook: job $jid running on $node"

fields=$(tr '|' ',' <tests/fixtures/sacct/testbed/sacct_fields.txt)
cat >"$T/config.yaml" <<YAML
database:
  embedded_dir: $T/var
log:
  level: warn
ingest:
  bucket_s: 60
hook:
  act: true
  max_actions_per_run: 5
  max_data_age_s: 120
  policies:
    - name: testbed-idle
      scope: {clusters: $CLUSTER, partitions: a100}
      rule: {kind: sliding, t1_min: 1, t3_min: 2}
      slurm_command: nsenter --net=/run/netns/$NETNS env SLURM_CONF=$SLURM_CONF scancel {job_id}
YAML
GL_PG_FAST=1 G db init >/dev/null && G db start >/dev/null && G migrate >/dev/null || fail "no PostgreSQL"
# slurmdbd learns of the start a moment after squeue: until then sacct shows a
# placeholder record (PENDING, no partition)
for _ in $(seq 60); do
	tb sacct --allusers --parsable2 --noheader -X -j "$jid" --format="$fields" >"$T/sacct.txt"
	grep -q '|RUNNING|' "$T/sacct.txt" && break
	sleep 1
done
grep -q '|RUNNING|' "$T/sacct.txt" || fail "sacct never showed job $jid RUNNING: $(cat "$T/sacct.txt")"
G ingest sacct --cluster "$CLUSTER" --file "$T/sacct.txt" --fields "$fields" >/dev/null || fail "ingest sacct"

start=$(date +%s)
scrape() {
	local lab="{gpu=\"0\",UUID=\"GPU-5e57be00-0000-4000-8000-00000000$jid\",device=\"nvidia0\",modelName=\"NVIDIA A100-SXM4-80GB\",Hostname=\"$node\",hpc_job=\"$jid\"}"
	{
		echo "# hand-written by tests/slurm/hook.sh: an idle GPU (dcgm-exporter format)"
		echo "DCGM_FI_PROF_GR_ENGINE_ACTIVE$lab 0.000020"
		echo "DCGM_FI_DEV_GPU_UTIL$lab 0"
		echo "DCGM_FI_DEV_FB_USED$lab 0"
		echo "DCGM_FI_DEV_FB_FREE$lab 80919"
		echo "DCGM_FI_DEV_POWER_USAGE$lab 61.2"
	} >"$T/scrape.prom"
	G ingest dcgm --cluster "$CLUSTER" --file "$T/scrape.prom" --at "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >/dev/null ||
		fail "ingest dcgm"
}
echo "test-slurm hook: scraping an idle GPU every 20 s for 150 s"
while (($(date +%s) - start < 150)); do
	scrape
	sleep 20
done
scrape

G hook idle --dry-run --format text >"$T/dry.txt"; rc=$?
cat "$T/dry.txt"
((rc == 3)) || fail "dry-run: exit $rc, expected 3 (candidates)"
G hook idle --act --format text >"$T/act1.txt"; rc=$?
cat "$T/act1.txt"
((rc == 0)) && grep -q "ran warn1 $CLUSTER/$jid" "$T/act1.txt" || fail "first --act run: exit $rc, expected the warning"
[[ $(tb squeue -h -j "$jid" -o %T) == RUNNING ]] || fail "the warning run cancelled the job"
scrape
G hook idle --act --format text >"$T/act2.txt"; rc=$?
cat "$T/act2.txt"
((rc == 0)) && grep -q "ran act $CLUSTER/$jid: .*scancel $jid -> ok (exit 0)" "$T/act2.txt" ||
	fail "second --act run: exit $rc, expected scancel $jid"

state=
for _ in $(seq 30); do
	state=$(tb sacct -n -X -P -j "$jid" -o State)
	[[ $state == CANCELLED* ]] && break
	sleep 1
done
echo "test-slurm hook: sacct says job $jid is '$state'"
[[ $state == CANCELLED* ]] || fail "job $jid is '$state', not CANCELLED"
G hook idle --act --format text >"$T/act3.txt" || fail "third --act run failed"
grep -q "^ran " "$T/act3.txt" && fail "the third run acted again"
n=$(G audit verify 2>&1) || fail "audit verify: $n"
echo "test-slurm hook: ok (job $jid warned once, cancelled once by the real scancel; audit chain verified)"
