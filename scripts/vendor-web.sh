#!/usr/bin/env bash
# Re-vendors the dashboard's third-party code from npm at the versions pinned
# in web/vendor/package-lock.json: the files the page loads and their
# licences are committed under web/vendor/, so serving needs no build step
# and no network (air-gapped sites). Run after changing a pin, commit the diff.
set -euo pipefail
cd "$(dirname "$0")/../web/vendor"
npm ci --ignore-scripts --no-audit --no-fund >/dev/null
m=node_modules/uplot
mkdir -p uplot
cp "$m/dist/uPlot.esm.js" "$m/dist/uPlot.min.css" "$m/LICENSE" uplot/
echo "uplot $(node -p "require('./$m/package.json').version")" >uplot/VERSION
rm -rf node_modules
echo "vendor-web: web/vendor/uplot updated"
