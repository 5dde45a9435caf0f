#!/usr/bin/env bash
# `make run`: embedded PostgreSQL, migrations, demo data (once), then the
# daemon on server.listen (127.0.0.1:8080 by default) until Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BUILD:-build}/gpuledger
CONFIG=${GPULEDGER_CONFIG:-gpuledger.yaml}
[[ -f $CONFIG ]] || CONFIG=gpuledger.example.yaml
# the simulated demo fleet (scripts/demo, docs/demo.md) unless SIM=0 or a
# configuration of one's own; its database, token and reports are under var/sim
sim=0 var=var
[[ ${1:-} == --no-sim ]] && SIM=0
if [[ ${SIM:-1} != 0 && $CONFIG == gpuledger.example.yaml ]]; then
	sim=1 var=var/sim
	trap 'scripts/demo/sim.sh stop' EXIT
	CONFIG=$(scripts/demo/sim.sh start "${BUILD:-build}")
fi
args=(--config "$CONFIG")
check=$("$BIN" "${args[@]}" check-config) || exit 1
if [[ $check == *"database: embedded"* ]]; then
	"$BIN" "${args[@]}" db init
	"$BIN" "${args[@]}" db start
fi
"$BIN" "${args[@]}" migrate
marker=$var/.demo-loaded
if [[ ! -f $marker ]]; then
	if ((sim)); then
		scripts/demo/sim.sh history "$BIN" "${args[@]}"
	else
		echo "run: loading demo data (tests/fixtures, once)"
		scripts/demo-data.sh "$BIN" "${args[@]}"
	fi
	mkdir -p $var && touch "$marker"
fi
((sim)) && scripts/demo/sim.sh budgets "$BIN" "${args[@]}"
token_file=$var/demo-token
if [[ ! -s $token_file ]]; then
	# a local admin token for trying the API; shown once, kept only in this file
	(umask 077 && "$BIN" "${args[@]}" token create --name "demo-$(date +%s)" --role admin >"$token_file")
fi
# where server.listen puts the API (a wildcard address is reached on loopback)
listen=${check##*listen }
listen=${listen%)}
case $listen in
0.0.0.0:* | :*) base=http://127.0.0.1:${listen##*:} ;;
\[::\]:*) base=http://[::1]:${listen##*:} ;;
*) base=http://$listen ;;
esac
echo "run: API token (admin) in $token_file, e.g.:"
day=2026-11-22; ((sim)) && day=today
echo "     curl -H \"Authorization: Bearer \$(cat $token_file)\" '$base/v1/chargeback?window=$day&aggregate=team'"
echo "run: dashboard at $base/ (sign in with the token in $token_file)"
echo "run: serving; press Ctrl-C to stop (the database keeps running: '$BIN ${args[*]} db stop')"
# not exec'd with the simulator: the EXIT trap stops it after the daemon
((sim)) && { "$BIN" "${args[@]}" serve; exit; }
exec "$BIN" "${args[@]}" serve
