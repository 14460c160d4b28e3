"""Recompute a phase's TTFT/TPOT/e2e percentiles from a run's records (the Parquet parts its
requests/_manifest.json lists, or an older run's requests.parquet) and compare them with
report.json, bit for bit (numpy's linear method, the report's default).

    python benches/soak_check.py RUN_DIR PHASE      # needs `pip install duckdb`
"""
import json
import math
import os
import sys

import duckdb


def lerp(a, b, t):
    """numpy's _lerp: interpolated from the nearer end, as the report does."""
    if t == 0.0:
        return a
    d = b - a
    return b - d * (1.0 - t) if t >= 0.5 else a + d * t


def linear_percentile(xs, q):
    v = (len(xs) - 1) * q
    below = math.floor(v)
    t = v - below
    i = min(int(below), len(xs) - 1)
    return lerp(xs[i], xs[i + 1], t) if t > 0 and i + 1 < len(xs) else xs[i]


def record_files(run_dir):
    """The run's Parquet files, in record order."""
    manifest = f"{run_dir}/requests/_manifest.json"
    if os.path.exists(manifest):
        return [f"{run_dir}/requests/{p['file']}" for p in json.load(open(manifest))["parts"]]
    return [f"{run_dir}/requests.parquet"]


def main(run_dir, phase):
    report = json.load(open(f"{run_dir}/report.json"))
    result = next(p for p in report["phases"] if p["phase"] == phase)
    con = duckdb.connect()
    files = ", ".join(f"'{f}'" for f in record_files(run_dir))
    con.execute(f"CREATE VIEW r AS SELECT * FROM read_parquet([{files}])")
    measured = f"\"window\" = 'measured' AND phase = '{phase}'"
    rows, in_phase = con.execute(f"SELECT count(*), count(*) FILTER (WHERE {measured}) FROM r").fetchone()
    print(f"rows {rows}; measured in {phase}: {in_phase}; report requests {result['requests']}")
    mismatches = int(in_phase != result["requests"])
    for name, column in [("ttft", "ttft_ms"), ("tpot", "tpot_ms"), ("e2e", "e2e_ms")]:
        query = f"SELECT {column} FROM r WHERE {measured} AND error_kind IS NULL AND {column} IS NOT NULL"
        xs = sorted(x * 1e-3 for (x,) in con.execute(query).fetchall())
        figures = result[name]
        mine = {"p50": linear_percentile(xs, 0.5), "p95": linear_percentile(xs, 0.95),
                "p99": linear_percentile(xs, 0.99), "min": xs[0], "max": xs[-1]}
        equal = all(figures[k] == v for k, v in mine.items()) and figures["samples"] == len(xs)
        mismatches += not equal
        print(f"{name}: {len(xs)} samples, p50/p95/p99/min/max equal to the report: {equal}")
    sys.exit(1 if mismatches else 0)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
