#!/usr/bin/env bash
# Loads the demo data shipped in tests/fixtures (real Slurm testbed output)
# into the configured database. Usage: demo-data.sh BIN [--config FILE]
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$1; shift
F=tests/fixtures/sacct/testbed
fields=$(tr '|' ',' <"$F/sacct_fields.txt")
"$BIN" "$@" ingest sacct --cluster testgpu --file "$F/sacct_alloc.txt" --fields "$fields"
