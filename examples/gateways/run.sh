#!/usr/bin/env bash
# plans/gateway.yaml against real routers: two `servebench sim` replicas (prefix cache on) on
# loopback, three routers in front of them (power_of_two for the least-request target,
# random, cache_aware for the prefix-cache target), the direct target on replica 0, and every
# gateway's and replica's /metrics listed, so the report shows per-backend request shares and
# the replicas' prefix-cache hit rates for every phase.
#
#   bash tests/real/setup.sh                        # once: the routers' venv
#   examples/gateways/run.sh [servebench run options…]
#   ROUTER=sglang examples/gateways/run.sh --set duration=5s --set warmup=1s --output runs/gw
#
# ROUTER: vllm (default) or sglang. SERVEBENCH: the servebench binary (default: on PATH).
# Everything started here is stopped when the script ends.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
servebench="${SERVEBENCH:-servebench}"
real_dir="${SERVEBENCH_REAL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/servebench/real}"
venv="$real_dir/venv/bin"
case "${ROUTER:-vllm}" in
  vllm) router=("$venv/vllm-router") ;;
  sglang) router=("$venv/sglang-router" launch) ;;
  *) echo "ROUTER must be vllm or sglang, not ${ROUTER}" >&2; exit 2 ;;
esac
if [[ ! -x "${router[0]}" ]]; then
  echo "${router[0]} is not installed; run tests/real/setup.sh" >&2
  exit 2
fi

work="$(mktemp -d)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

free_port() {
  "$venv/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wait_healthy() { # URL LOG
  for _ in $(seq 1 600); do
    if curl -sf -o /dev/null "$1"; then return 0; fi
    sleep 0.1
  done
  echo "$1 did not answer; its log:" >&2
  cat "$2" >&2
  exit 3
}

# Replicas whose prefix caches hold about six of the plan's eight 4096-token prefixes, serving
# the model the plan names.
cat > "$work/replica.yaml" <<'YAML'
model: DeepSeek-V4-Flash-0731
max_running: 64
prefill_tok_s: 30000
decode_ms_per_token: 2
decode_ms_per_running: 0.02
prefix_cache: {capacity_tokens: 26000}
YAML
replicas=()
for i in 0 1; do
  port="$(free_port)"
  "$servebench" sim --port "$port" --seed "$((i + 1))" --config "$work/replica.yaml" > "$work/replica-$i.log" 2>&1 &
  pids+=($!)
  replicas+=("http://127.0.0.1:$port")
  wait_healthy "http://127.0.0.1:$port/health" "$work/replica-$i.log"
done

backends="{url: ${replicas[0]}/metrics, name: replica-0}, {url: ${replicas[1]}/metrics, name: replica-1}"
args=(--target "direct=${replicas[0]}/v1")
for route in least-request:power_of_two random:random prefix-cache:cache_aware; do
  target="${route%%:*}" policy="${route#*:}"
  port="$(free_port)" metrics_port="$(free_port)"
  "${router[@]}" --host 127.0.0.1 --port "$port" --policy "$policy" \
    --prometheus-host 127.0.0.1 --prometheus-port "$metrics_port" \
    --worker-startup-check-interval 1 --worker-urls "${replicas[@]}" > "$work/$target.log" 2>&1 &
  pids+=($!)
  wait_healthy "http://127.0.0.1:$port/health" "$work/$target.log"
  args+=(--target "$target=http://127.0.0.1:$port/v1")
  args+=(--set "${target//-/_}_metrics=[{url: http://127.0.0.1:$metrics_port/metrics, role: gateway, name: $policy}, $backends]")
done

"$servebench" run "$repo/plans/gateway.yaml" "${args[@]}" "$@"
