#!/usr/bin/env bash
# `make reports-sample`: one report of each format (CSV tables, HTML, PDF)
# for the current month, month to date, from the demo data (scripts/demo-data.sh)
# in a throwaway embedded PostgreSQL, rendered with the templates in
# reports/ (or GPULEDGER_CONFIG's reports.template_dir). Written to
# build/reports-sample/ and never committed: the month and the figures
# change every time. Usage: reports-sample.sh [BUILD]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
BIN=$BUILD/gpuledger
OUT=$BUILD/reports-sample
rm -rf "$OUT"
mkdir -p "$OUT"
work=$(mktemp -d /tmp/gpuledger-sample.XXXXXX)
chmod 755 "$work"
cfg=$work/config.yaml
cleanup() {
	"$BIN" --config "$cfg" db stop >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT
# the example configuration (its rates and owner rules price the demo), with
# the database and the recorded reports in the scratch directory
sed -e "s|^  embedded_dir: var$|  embedded_dir: $work/var|" -e "s|^  dir: var/reports$|  dir: \"\"|" \
	gpuledger.example.yaml >"$cfg"
grep -q "embedded_dir: $work/var" "$cfg" || { echo "reports-sample: gpuledger.example.yaml has no 'embedded_dir: var'" >&2; exit 1; }
GL_PG_FAST=1 "$BIN" --config "$cfg" db init >/dev/null
"$BIN" --config "$cfg" db start >/dev/null
"$BIN" --config "$cfg" migrate >/dev/null
"$BIN" --config "$cfg" rates load "$cfg" >/dev/null
scripts/demo-data.sh "$BIN" --config "$cfg" >/dev/null
month=$(date -u +%Y-%m)
for f in csv html pdf; do
	"$BIN" --config "$cfg" report showback --month "$month" --format "$f" --out "$OUT"
done
echo "reports-sample: $(ls "$OUT" | wc -l) files for $month in $OUT/"
