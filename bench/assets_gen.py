#!/usr/bin/env python3
"""Fills a migrated gpuinv SQLite database with ASSETS assets (servers with
their GPUs, spares, PSUs, SSDs and NICs over four data centers, a spread of
stages, models and warranty ends) and EVENTS audit-trail events chained as
src/store/asset_events.c defines the chain, hashed here independently with
Python's hashlib. Writes every event's canonical byte string, in chain
order, to BYTES so that `sha256sum BYTES` hashes exactly the bytes that
`gpuinv audit verify` hashes.

Usage: assets_gen.py DB ASSETS EVENTS BYTES
"""
import hashlib
import json
import sqlite3
import sys
import time

MAGIC = b"gpuinv-asset-event-v1\n"
KINDS = ["gpu"] * 8 + ["server", "psu", "ssd", "nic"]
STAGES = ["active"] * 14 + ["spare", "spare", "diagnostic_repair", "refurbishment_candidate",
                            "received", "decommissioned"]
MODELS = {"gpu": ["NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", "NVIDIA L40S"],
          "server": ["PowerEdge XE9680", "HGX H100 8-GPU"], "psu": ["3000W Titanium"],
          "ssd": ["PM1733 7.68TB"], "nic": ["ConnectX-7 400G"]}
EVENT_KINDS = ["created", "updated", "stage_changed", "scanned", "located"]


def field(b: bytes) -> bytes:
    return str(len(b)).encode() + b":" + b + b"\n"


def canonical(seq, asset_id, at, kind, actor, detail, prev):
    return (MAGIC + field(str(seq).encode()) + field(str(asset_id).encode()) +
            field(str(at).encode()) + field(kind.encode()) + field(actor.encode()) +
            field(detail.encode()) + field(prev.encode()))


def main():
    db_path, n_assets, n_events, bytes_path = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), \
        sys.argv[4]
    now = int(time.time())
    db = sqlite3.connect(db_path)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("BEGIN")
    for dc in range(1, 5):
        db.execute("INSERT INTO datacenters (id, name, created_at, updated_at) VALUES (?, ?, ?, ?)",
                   (dc, f"bench-dc-{dc}", now, now))
    rows = []
    for i in range(1, n_assets + 1):
        kind = KINDS[i % len(KINDS)]
        stage = STAGES[(i * 7) % len(STAGES)]
        model = MODELS[kind][i % len(MODELS[kind])]
        dc = 1 + i % 4
        # Warranty ends spread over the next three years, some already past.
        wend = time.strftime("%Y-%m-%d", time.gmtime(now + ((i * 37) % 1200 - 100) * 86400))
        rows.append((i, f"BA-{i:07d}", kind, f"SN{i:09d}", model, dc, f"R{i % 40:02d}",
                     i % 42 + 1, stage, now - i, "2024-03-01", 25000 * 10**6, "USD", wend,
                     "api", now, now))
    db.executemany(
        "INSERT INTO assets (id, tag, kind, serial, model, datacenter_id, rack, rack_u, stage, "
        "stage_since, purchase_date, purchase_cost_micros, currency, warranty_end, source, "
        "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    prev = ""
    batch = []
    with open(bytes_path, "wb") as out:
        for seq in range(1, n_events + 1):
            asset_id = 1 + (seq * 7919) % n_assets
            at = now - (n_events - seq)
            kind = EVENT_KINDS[seq % len(EVENT_KINDS)]
            detail = json.dumps({"note": f"bench event {seq}", "stage": STAGES[seq % len(STAGES)]},
                                separators=(",", ":"), sort_keys=True, ensure_ascii=True)
            text = canonical(seq, asset_id, at, kind, "bench", detail, prev)
            out.write(text)
            h = hashlib.sha256(text).hexdigest()
            batch.append((seq, asset_id, at, kind, "bench", detail, prev, h))
            prev = h
            if len(batch) == 50000:
                db.executemany("INSERT INTO asset_events (seq, asset_id, at, kind, actor, detail, "
                               "prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", batch)
                batch = []
    if batch:
        db.executemany("INSERT INTO asset_events (seq, asset_id, at, kind, actor, detail, "
                       "prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", batch)
    db.execute("INSERT INTO asset_chain (id, seq, hash) VALUES (1, ?, ?)", (n_events, prev))
    db.commit()
    db.close()


if __name__ == "__main__":
    main()
