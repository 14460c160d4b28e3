#!/bin/sh
# Run plans/verdict-search.yaml RUNS times (default 1) with load on every core beside it:
# one busy loop per core, a disk writer and a build of this crate into a scratch target
# directory (`BUILD_CMD`, default `cargo check`). Prints each run's search from report.json
# and its exit code.
# Extra arguments go to `servebench run` (e.g. --set 'ttft={p95: 400ms}' --set probe=40s).
# QUIET=1 runs without the load (the quiet-machine benchmark).
# Usage: benches/loaded_search.sh [RUNS] [servebench run args...]
set -u
runs=${1:-1}
[ $# -gt 0 ] && shift
bin=${SERVEBENCH:-target/release/servebench}
scratch=$(mktemp -d)
pids=""
if [ "${QUIET:-0}" != 1 ]; then
for _ in $(seq "$(nproc)"); do
  sh -c 'while :; do :; done' &
  pids="$pids $!"
done
sh -c "while :; do dd if=/dev/zero of=$scratch/disk bs=1M count=256 conv=fsync 2>/dev/null; done" &
pids="$pids $!"
CARGO_TARGET_DIR="$scratch/target" ${BUILD_CMD:-cargo check} --quiet >/dev/null 2>&1 &
pids="$pids $!"
fi
for i in $(seq "$runs"); do
  "$bin" run plans/verdict-search.yaml --quiet -o "$scratch/run-$i" "$@" >/dev/null 2>&1
  code=$?
  python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
s = r["searches"][0]
bound = [p for p in r["phases"] if (p.get("client_trust") or {}).get("verdict") == "client_bound"]
held = [p for p in bound if ((p.get("probe") or {}).get("despite_client") or {}).get("holds")]
print(sys.argv[2], {k: s[k] for k in ("capacity", "lower_bound", "capacity_interval", "bracket", "stop_reason") if k in s},
      "probes", len(s["probes"]), "client-bound", len(bound), "of them held", len(held))' \
    "$scratch/run-$i/report.json" "run $i exit $code"
done
for p in $pids; do kill "$p" 2>/dev/null; done
rm -rf "$scratch"
