#!/usr/bin/env bash
# Installs every build and test dependency of gpuinv on Debian 12.
# Idempotent: installs only what is missing. Usage: scripts/deps.sh [--bench]
set -euo pipefail
cd "$(dirname "$0")/.."

pkgs=(build-essential cmake pkg-config libmicrohttpd-dev libjansson-dev libsqlite3-dev openssl
      libsodium-dev libxml2-dev libcurl4-gnutls-dev libcmocka-dev sqlite3 curl chromium procps clang-format prometheus)
if [ "${1:-}" = "--bench" ]; then
  pkgs+=(wrk nginx-light)
fi
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

# Test tooling (playwright-core drives Debian's chromium; it downloads no browser).
if [ ! -d node_modules/playwright-core ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
