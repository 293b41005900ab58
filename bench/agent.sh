#!/usr/bin/env bash
# Agent cost on a host with 8 GPUs at the default intervals (10 s readings,
# 60 s pushes), of the standalone gpuinv-agent binary: RSS (and its peak)
# and CPU share over a measured window, for the NVML path
# (the stand-in libnvidia-ml.so.1) next to the nvidia-smi fallback path
# (a stand-in nvidia-smi printing recorded output), measured in the same run.
# Usage: bench/agent.sh [SECONDS]   (default 180; needs build/gpuinv)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-180}
work=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
token=bench-token-$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n')
GPUINV_ADMIN_TOKEN=$token build/gpuinv serve --db "$work/g.db" --listen 127.0.0.1:0 >"$work/out" 2>/dev/null &
pids+=($!)
for _ in $(seq 100); do grep -q listening "$work/out" 2>/dev/null && break; sleep 0.1; done
url=$(sed -n 's/.*listening on \(http:[^ ]*\)\/$/\1/p' "$work/out")
ptoken=$(curl -s -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
  -d '{"name":"bench","role":"pusher","source":"bench"}' "$url/api/v1/tokens" | sed 's/.*"token":"\([^"]*\)".*/\1/')

FAKE_NVML_CONFIG=tests/fake-nvml/h100x8.json build/gpuinv-agent --server "$url" --token "$ptoken" \
  --nvml build/fake-nvml/libnvidia-ml.so.1 --spool "$work/s1" --hostname bench-nvml 2>/dev/null &
nvml=$!
pids+=($nvml)
build/gpuinv-agent --server "$url" --token "$ptoken" --collector nvidia-smi \
  --nvidia-smi tests/fixtures/bin/nvidia-smi --spool "$work/s2" --hostname bench-smi 2>/dev/null &
smi=$!
pids+=($smi)
sleep 2
ticks=$(getconf CLK_TCK)
# CPU of a process and its reaped children (the spool sender and, on the
# nvidia-smi path, nvidia-smi itself run as children).
cpu() { awk '{print $14 + $15 + $16 + $17}' "/proc/$1/stat"; }
a0=$(cpu $nvml); b0=$(cpu $smi); t0=$(date +%s.%N)
sleep "$secs"
a1=$(cpu $nvml); b1=$(cpu $smi); t1=$(date +%s.%N)
rss() { awk -v k="$2" '$1 == k":" {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }
pushed=$(curl -s -H "Authorization: Bearer $token" "$url/api/v1/gpus?host=bench-nvml" | sed 's/.*"total":\([0-9]*\).*/\1/')
awk -v a="$((a1 - a0))" -v b="$((b1 - b0))" -v hz="$ticks" -v t0="$t0" -v t1="$t1" \
    -v ra="$(rss $nvml VmRSS)" -v ha="$(rss $nvml VmHWM)" -v rb="$(rss $smi VmRSS)" -v hb="$(rss $smi VmHWM)" \
    -v n="$pushed" -v secs="$secs" 'BEGIN {
  el = t1 - t0
  printf "{\"seconds\":%.0f,\"gpus\":8,\"nvml\":{\"cpu_pct\":%.3f,\"rss_mib\":%s,\"hwm_mib\":%s,\"gpus_reported\":%s},", el, 100 * a / hz / el, ra, ha, n
  printf "\"nvidia_smi\":{\"cpu_pct\":%.3f,\"rss_mib\":%s,\"hwm_mib\":%s}}\n", 100 * b / hz / el, rb, hb
}'
