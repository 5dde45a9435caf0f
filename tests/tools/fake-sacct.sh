#!/usr/bin/env bash
# A stand-in for sacct in daemon tests: prints a saved sacct dump (whose
# field list is in sacct_fields.txt next to it) re-ordered into the fields
# requested with --format, honouring --delimiter, as real sacct would.
# Test-only flags (passed through sources.sacct[].extra_args):
#   --gl-fixture=FILE    the dump to print
#   --gl-argv-log=FILE   append "TZ=<tz> <argv>" per call
#   --gl-fail-flag=FILE  when FILE exists: print an error and exit 1
#   --gl-window          print only the jobs active in --starttime..--endtime
#                        (Start, or Submit before it starts, <= end and End >=
#                        start, or End Unknown), as sacct -S/-E selects them
#   --gl-hold=FILE       when FILE exists: create FILE.started, then wait
#                        until FILE is removed before printing (a test pauses
#                        the daemon in the middle of a run)
set -euo pipefail
fixture= argvlog= failflag= format= delim='|' window= hold= from= to=
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
	a=${args[i]}
	case $a in
	--gl-fixture=*) fixture=${a#*=} ;;
	--gl-argv-log=*) argvlog=${a#*=} ;;
	--gl-fail-flag=*) failflag=${a#*=} ;;
	--gl-window) window=1 ;;
	--gl-hold=*) hold=${a#*=} ;;
	--format) format=${args[i + 1]} ;;
	--delimiter) delim=${args[i + 1]} ;;
	--starttime) from=${args[i + 1]} ;;
	--endtime) to=${args[i + 1]} ;;
	esac
done
[[ -n $argvlog ]] && echo "TZ=${TZ:-} $*" >>"$argvlog"
if [[ -n $failflag && -e $failflag ]]; then
	echo "sacct: error: Problem talking to the database: Connection refused" >&2
	exit 1
fi
if [[ -n $hold && -e $hold ]]; then
	: >"$hold.started"
	while [[ -e $hold ]]; do sleep 0.1; done
fi
src_fields=$(cat "$(dirname "$fixture")/sacct_fields.txt")
awk -v src="$src_fields" -v want="$format" -v d="$delim" -v win="$window" -v from="$from" -v to="$to" '
BEGIN { FS = "|"; n = split(src, s, "|"); for (i = 1; i <= n; i++) pos[tolower(s[i])] = i
        m = split(want, w, ",") }
win { st = $(pos["start"]); if (st == "Unknown" || st == "None") st = $(pos["submit"])
      if (!(st <= to && ($(pos["end"]) >= from || $(pos["end"]) == "Unknown"))) next }
{ out = ""; for (i = 1; i <= m; i++) { k = tolower(w[i]); v = (k in pos) ? $(pos[k]) : ""
    out = out (i > 1 ? d : "") v }
  print out }' "$fixture"
