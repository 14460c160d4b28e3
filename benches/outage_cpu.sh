#!/bin/bash
# The client's CPU while its target is down: a closed loop with
# `on_target_down: {then: continue}` against `servebench sim`, which is killed (SIGKILL) 2 s
# into the phase. The run's CPU time (utime + stime of /proc/PID/stat) is read 1 s into the
# outage and 10 s later; prints that as a share of one core, with the run's requests.
# Usage: benches/outage_cpu.sh [CONCURRENCY, default 16]
set -eu
bin=${SERVEBENCH:-target/release/servebench}
c=${1:-16}
port=${PORT:-18431}
scratch=$(mktemp -d)
cat > "$scratch/plan.yaml" <<PLAN
version: 1
name: outage-cpu
targets:
  t: {base_url: "http://127.0.0.1:$port/v1", model: sim}
workloads:
  w: {input_tokens: 32, output_tokens: 8}
phases:
  - {name: down, target: t, workload: w, concurrency: $c, duration: 15s, on_target_down: {then: continue}}
PLAN
"$bin" sim --port "$port" 2>/dev/null &
sim=$!
disown "$sim"
for _ in $(seq 200); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.05; done
"$bin" run -q --no-calibrate --no-history -o "$scratch/run" "$scratch/plan.yaml" >/dev/null 2>&1 &
run=$!
sleep 2
kill -9 "$sim"
sleep 1
ticks() { awk '{print $14 + $15}' "/proc/$run/stat"; }
t0=$(ticks)
sleep 10
t1=$(ticks)
wait "$run" || true
hz=$(getconf CLK_TCK)
awk -v d=$((t1 - t0)) -v hz="$hz" 'BEGIN { printf "client CPU over 10 s of outage: %.1f%% of one core\n", 100 * d / hz / 10 }'
python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))["phases"][0]
errors = p.get("errors_by_kind", {})
print("requests", p["requests"], "errors", errors, "outages", p.get("outages"))' "$scratch/run/report.json"
rm -rf "$scratch"
