#!/usr/bin/env bash
# `make run`: embedded PostgreSQL, migrations, demo data (once), then the
# daemon on server.listen (127.0.0.1:8080 by default) until Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BUILD:-build}/gpuledger
CONFIG=${GPULEDGER_CONFIG:-gpuledger.yaml}
[[ -f $CONFIG ]] || CONFIG=gpuledger.example.yaml
args=(--config "$CONFIG")
check=$("$BIN" "${args[@]}" check-config) || exit 1
if [[ $check == *"database: embedded"* ]]; then
	"$BIN" "${args[@]}" db init
	"$BIN" "${args[@]}" db start
fi
"$BIN" "${args[@]}" migrate
marker=var/.demo-loaded
if [[ ! -f $marker ]]; then
	echo "run: loading demo data (tests/fixtures, once)"
	scripts/demo-data.sh "$BIN" "${args[@]}"
	mkdir -p var && touch "$marker"
fi
token_file=var/demo-token
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
echo "     curl -H \"Authorization: Bearer \$(cat $token_file)\" '$base/v1/chargeback?window=2026-11-22&aggregate=team'"
echo "run: dashboard at $base/ (sign in with the token in $token_file)"
echo "run: serving; press Ctrl-C to stop (the database keeps running: '$BIN ${args[*]} db stop')"
exec "$BIN" "${args[@]}" serve
