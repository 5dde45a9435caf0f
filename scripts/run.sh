#!/usr/bin/env bash
# `make run`: embedded PostgreSQL, migrations, demo data (once), then the
# daemon on server.listen (127.0.0.1:8080 by default) until Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BUILD:-build}/gpuledger
CONFIG=${GPULEDGER_CONFIG:-gpuledger.yaml}
[[ -f $CONFIG ]] || CONFIG=gpuledger.example.yaml
args=(--config "$CONFIG")
if ! "$BIN" "${args[@]}" check-config >/dev/null; then exit 1; fi
if [[ -z ${GPULEDGER_DSN:-} ]] && ! grep -qE '^\s*dsn:\s*\S' "$CONFIG"; then
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
echo "run: serving; press Ctrl-C to stop (the database keeps running: '$BIN ${args[*]} db stop')"
exec "$BIN" "${args[@]}" serve
