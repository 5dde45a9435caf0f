#!/usr/bin/env bash
# A stand-in for sacct in daemon tests: prints a saved sacct dump (whose
# field list is in sacct_fields.txt next to it) re-ordered into the fields
# requested with --format, honouring --delimiter, as real sacct would.
# Test-only flags (passed through sources.sacct[].extra_args):
#   --gl-fixture=FILE    the dump to print
#   --gl-argv-log=FILE   append "TZ=<tz> <argv>" per call
#   --gl-fail-flag=FILE  when FILE exists: print an error and exit 1
set -euo pipefail
fixture= argvlog= failflag= format= delim='|'
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
	a=${args[i]}
	case $a in
	--gl-fixture=*) fixture=${a#*=} ;;
	--gl-argv-log=*) argvlog=${a#*=} ;;
	--gl-fail-flag=*) failflag=${a#*=} ;;
	--format) format=${args[i + 1]} ;;
	--delimiter) delim=${args[i + 1]} ;;
	esac
done
[[ -n $argvlog ]] && echo "TZ=${TZ:-} $*" >>"$argvlog"
if [[ -n $failflag && -e $failflag ]]; then
	echo "sacct: error: Problem talking to the database: Connection refused" >&2
	exit 1
fi
src_fields=$(cat "$(dirname "$fixture")/sacct_fields.txt")
awk -v src="$src_fields" -v want="$format" -v d="$delim" '
BEGIN { FS = "|"; n = split(src, s, "|"); for (i = 1; i <= n; i++) pos[tolower(s[i])] = i
        m = split(want, w, ",") }
{ out = ""; for (i = 1; i <= m; i++) { k = tolower(w[i]); v = (k in pos) ? $(pos[k]) : ""
    out = out (i > 1 ? d : "") v }
  print out }' "$fixture"
