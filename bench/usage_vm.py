#!/usr/bin/env python3
"""Prints, as VictoriaMetrics JSON lines (/api/v1/import), the raw samples
bench/usage_gen.sh writes into gpu_samples: metric gpu_util with labels gpu
and team, one line per GPU, the same values at the same times (gaps
left out). Usage: bench/usage_vm.py GPUS RAW_DAYS RAW_STEP NOW"""
import json
import sys


def util(gpu, t):
    weekday = (t // 86400 + 3) % 7
    hod = (t // 3600) % 24
    work = weekday < 5 and 8 <= hod < 19
    job, host = (gpu - 1) // 4, (gpu - 1) // 8 + 1
    alloc = job % 10 < 6 or (job % 10 < 8 and work)
    if not alloc or (job % 10 == 1 and (gpu - 1) % 4 >= 2):
        return 0.0
    if host % 20 == 3:
        return 1.0
    return 70.0 if work else 20.0


def main():
    gpus, rdays, rstep, now = (int(a) for a in sys.argv[1:5])
    end = now - now % 3600
    start = end - rdays * 86400
    out = sys.stdout
    for g in range(1, gpus + 1):
        ts, vals = [], []
        for t in range(start, end, rstep):
            if (g * 31 + t // 3600) % 211 == 0:
                continue
            ts.append(t * 1000)
            vals.append(util(g, t))
        line = {"metric": {"__name__": "gpu_util", "gpu": "GPU-bench-%05d" % g, "team": "team-%d" % (((g - 1) // 8 + 1) % 20)},
                "values": vals, "timestamps": ts}
        out.write(json.dumps(line, separators=(",", ":")))
        out.write("\n")


main()
