#!/usr/bin/env bash
# Install AIPerf (NVIDIA's benchmark client, from PyPI) into a venv outside the clone, so the
# history tests can produce a real AIPerf export against the simulator and import it. A
# second run with the same pin installs nothing.
#
#   bash tests/real/aiperf-setup.sh
#   SERVEBENCH_REAL_DIR=/some/dir bash tests/real/aiperf-setup.sh
set -euo pipefail

pin="aiperf==0.13.0"
real_dir="${SERVEBENCH_REAL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/servebench/real}"
venv="$real_dir/aiperf-venv"
stamp="$venv/stamp"
python="${PYTHON:-python3}"

if [[ -f "$stamp" && "$(cat "$stamp")" == "$pin" && -x "$venv/bin/aiperf" ]]; then
  echo "AIPerf up to date: $venv/bin/aiperf ($pin)"
  exit 0
fi
mkdir -p "$real_dir"
rm -f "$stamp"
[[ -x "$venv/bin/python" ]] || "$python" -m venv "$venv"
PIP_CACHE_DIR="$real_dir/pip-cache" "$venv/bin/pip" install --quiet "$pin"
"$venv/bin/aiperf" --version
echo "$pin" > "$stamp"
echo "AIPerf installed: $venv/bin/aiperf"
