#!/bin/bash
# The nightly workflow on a busy machine: the quickstart plan (4 phases of 500 ms) recorded
# 12 times against `servebench sim`, then against a simulator with a 50% longer decode
# (decode_ms_per_token 4 -> 6) until `history gate` opens an alert, all beside one busy loop
# per core. Prints after each slow run the gate's exit code and its `left out` line.
# Usage: benches/nightly_busy.sh [BUSY LOOPS, default: one per core]   (from the repository root)
# KEEP=path/history.sqlite keeps the store (to render its trend: `history trend --format html`).
set -eu
bin=${SERVEBENCH:-target/release/servebench}
loops=${1:-$(nproc)}
port=${PORT:-18441}
scratch=$(mktemp -d)
store="$scratch/history.sqlite"
sim_config() {
  printf 'seed: 7\nmax_running: 16\nprefill_tok_s: 20000\ndecode_ms_per_token: %s\n' "$1" > "$scratch/sim-$1.yaml"
  printf 'decode_ms_per_running: 0.2\nchunk_tokens: 1\njitter: 0.05\nprefix_cache: {capacity_tokens: 200000}\n' >> "$scratch/sim-$1.yaml"
}
start_sim() {
  sim_config "$1"
  "$bin" sim --port "$port" --config "$scratch/sim-$1.yaml" > /dev/null 2>&1 &
  sim=$!
  for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/health" > /dev/null && return; sleep 0.1; done
  echo "the simulator did not start" >&2; exit 3
}
night() {
  "$bin" run plans/quickstart.yaml -q --no-calibrate --set duration=500ms --history "$store" \
    --target "sim=http://127.0.0.1:$port/v1" -o "$scratch/night-$1" > /dev/null 2>&1 || true
}
busy=()
for _ in $(seq "$loops"); do (while :; do :; done) & busy+=($!); done
trap 'kill ${busy[@]} $sim 2>/dev/null; rm -rf "$scratch"' EXIT
start_sim 4
for n in $(seq 1 12); do night "$n"; done
kill "$sim"; wait "$sim" 2>/dev/null || true
start_sim 6
for n in $(seq 13 18); do
  night "$n"
  set +e
  gate=$("$bin" history --history "$store" gate --plan quickstart 2>&1)
  code=$?
  set -e
  echo "slow run $((n - 12)): gate exit $code; $(echo "$gate" | grep -E 'left out|alert' | head -3 | tr '\n' ' ')"
  [ "$code" = 5 ] && break
done
[ -n "${KEEP:-}" ] && cp "$store" "$KEEP"
exit 0
