#!/usr/bin/env bash
# Installs the dependencies of gpuinv on Debian 12. Idempotent: installs
# only what is missing.
# Usage: scripts/deps.sh          build and test (make test): everything
#        scripts/deps.sh --run    only what building and running the demo needs (make run):
#                                 no browser, Prometheus, cmocka or npm test tooling; the
#                                 dashboard's chart library (an npm package) is installed
#        scripts/deps.sh --bench  everything, plus the benchmark tools (wrk, nginx, haproxy, PostgreSQL)
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-}

# Building gpuinv, gpuinv-agent and the stand-in NVML, and running the demo
# (its simulated hosts are a node script that needs no npm package).
run_pkgs=(build-essential cmake pkg-config libmicrohttpd-dev libjansson-dev libsqlite3-dev
          libsodium-dev libxml2-dev zlib1g-dev libpq-dev libcurl4-gnutls-dev libqrencode-dev
          libgnutls28-dev procps)
# Tests and tooling on top of that.
# PostgreSQL 15: the test suites also run on a throwaway server (tests/lib/pg.sh).
# fusioninventory-agent: the real inventory agent the /glpi test reports with.
pkgs=("${run_pkgs[@]}" libcmocka-dev sqlite3 curl openssl chromium clang-format prometheus
      haproxy python3 python3-yaml postgresql-15 postgresql-client-15
      fusioninventory-agent)
case "$mode" in
  --run) pkgs=("${run_pkgs[@]}") ;;
  --bench) pkgs+=(wrk nginx-light haproxy postgresql-15 postgresql-client-15 victoria-metrics) ;;
  "") ;;
  *) echo "usage: scripts/deps.sh [--run|--bench]" >&2; exit 2 ;;
esac
command -v node >/dev/null 2>&1 || pkgs+=(nodejs)
command -v npm >/dev/null 2>&1 || pkgs+=(npm)

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  echo "deps: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# npm packages, as pinned in package-lock.json. The build embeds uPlot (the
# dashboard's charts) from node_modules, so every mode needs it; the rest is
# test tooling (playwright-core drives Debian's chromium; it downloads no
# browser), which make run leaves out.
stale=false
[ -f node_modules/uplot/dist/uPlot.iife.min.js ] || stale=true
[ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ] && stale=true
if [ "$mode" = --run ]; then
  if $stale; then npm ci --omit=dev --no-audit --no-fund --loglevel=error; fi
  exit 0
fi
if $stale || [ ! -d node_modules/playwright-core ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
