#!/usr/bin/env bash
# Installs the Debian packages gpuledger needs to build, test and run, and
# those named as arguments (a target's own: valgrind for test-valgrind).
# As root: apt-get installs what is missing. Otherwise: prints the command.
set -euo pipefail
PKGS=(build-essential pkg-config libpq-dev libmicrohttpd-dev libcjson-dev libyaml-dev
      libcurl4-openssl-dev libssl-dev libcmocka-dev zlib1g-dev postgresql-15 curl
      libcairo2-dev libpango1.0-dev fonts-dejavu-core fonts-wqy-microhei poppler-utils unzip
      chromium nodejs)
# the web suite (tests/web) drives Debian's chromium with playwright-core
# from npm; a Node.js that ships its own npm (NodeSource) conflicts with
# Debian's npm package, so that is only asked for when npm is absent
command -v npm >/dev/null 2>&1 || PKGS+=(npm)
PKGS+=("$@")
missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
	exit 0
fi
cmd="apt-get install -y --no-install-recommends ${missing[*]}"
if [[ $(id -u) -ne 0 ]]; then
	echo "deps: missing Debian packages: ${missing[*]}" >&2
	echo "deps: run as root:  apt-get update && $cmd" >&2
	exit 1
fi
echo "deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
$cmd >/dev/null
