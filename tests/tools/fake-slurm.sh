#!/usr/bin/env bash
# A stand-in for scontrol and sacctmgr in daemon tests: answers
#   scontrol show node -o           with $GL_FAKE_SLURM_FIXTURES/end_scontrol_show_node.txt
#   scontrol show reservation -o    with .../scontrol_show_reservation.txt
#   sacctmgr -P show event ...      with .../sacctmgr_events.txt
# (the real outputs of the slurm-testbed-nodes run). When the file
# $GL_FAKE_SLURM_FAIL exists it fails as scontrol does when slurmctld is down.
# Every call is appended to $GL_FAKE_SLURM_LOG when set.
set -euo pipefail
d=${GL_FAKE_SLURM_FIXTURES:?}
[[ -n ${GL_FAKE_SLURM_LOG:-} ]] && echo "$*" >>"$GL_FAKE_SLURM_LOG"
if [[ -n ${GL_FAKE_SLURM_FAIL:-} && -e $GL_FAKE_SLURM_FAIL ]]; then
	echo "slurm_load_node error: Unable to contact slurm controller (connect failure)" >&2
	exit 1
fi
case "$*" in
"show node -o") cat "$d/end_scontrol_show_node.txt" ;;
"show reservation -o") cat "$d/scontrol_show_reservation.txt" ;;
"-P show event "*) cat "$d/sacctmgr_events.txt" ;;
*) echo "fake-slurm: unexpected arguments: $*" >&2; exit 2 ;;
esac
