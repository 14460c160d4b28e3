#!/bin/sh
# Run benches/images.yaml (one 512×512 JPEG per request, then none, against a zero-delay
# simulator: held at `rps`, then at concurrency 64) RUNS times (default 1) with the release
# build and print, per phase: requests/s, request bytes/s, images/s, the mean body size and
# whether the phase's client was trusted.
# Extra arguments go to `servebench run` (e.g. --set rps=1500 --set duration=30s).
# Usage: benches/images.sh [RUNS] [servebench run args...]
set -u
runs=${1:-1}
[ $# -gt 0 ] && shift
bin=${SERVEBENCH:-target/release/servebench}
scratch=$(mktemp -d)
for i in $(seq "$runs"); do
  "$bin" run benches/images.yaml --quiet -o "$scratch/run-$i" "$@" >/dev/null 2>&1
  echo "run $i exit $?"
  python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
for p in r["phases"]:
    trust = (p.get("client_trust") or {}).get("verdict", "unknown")
    sent = (p.get("request_bytes_per_second") or 0) / 1e6
    images = p.get("images_per_second") or 0
    size = p["request_bytes"]["mean"] / 1e3
    print("  %-10s %8.0f req/s  %7.1f MB/s sent  %7.0f images/s  %6.1f kB/request  %d errors  client %s"
          % (p["phase"], p["request_rate"], sent, images, size, p["errors"], trust))
    for reason in (p.get("client_trust") or {}).get("reasons", []):
        print("      " + reason)' "$scratch/run-$i/report.json"
done
rm -rf "$scratch"
