-- wrk script for the benchmark: sends the bearer token from BENCH_TOKEN on
-- every request and, at the end, prints one machine-readable line
--   RESULT requests=N duration_us=N rps=X p50_us=N ... non2xx=N sockerr=N
-- that bench/run.sh parses. Latencies are in microseconds.
local token = os.getenv("BENCH_TOKEN")
if token and token ~= "" then
  wrk.headers["Authorization"] = "Bearer " .. token
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "RESULT requests=%d duration_us=%d rps=%.1f p50_us=%d p90_us=%d p99_us=%d " ..
    "p95_us=%d max_us=%d mean_us=%.1f bytes=%d non2xx=%d sockerr=%d\n",
    summary.requests, summary.duration, summary.requests / (summary.duration / 1e6),
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency:percentile(95),
    latency.max, latency.mean, summary.bytes, e.status,
    e.connect + e.read + e.write + e.timeout))
end
