"""Serve a GGUF model with llama.cpp's C++ HTTP server (from the xllamacpp wheel) on loopback.

Prints one line `listening http://HOST:PORT` once the model is loaded and the server accepts
connections, then serves until SIGTERM/SIGINT, or with --exit-on-stdin-eof until its standard
input closes (how the tests make sure it never outlives them).
"""

import argparse
import signal
import sys
import threading

import xllamacpp as xlc


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", required=True, help="path of the GGUF file")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--ctx-size", type=int, default=4096, help="shared by all slots")
    parser.add_argument("--parallel", type=int, default=4, help="slots served at once")
    parser.add_argument("--alias", default="smollm2-135m-instruct")
    parser.add_argument("--exit-on-stdin-eof", action="store_true")
    parser.add_argument(
        "--embeddings", action="store_true", help="serve /v1/embeddings (mean pooling)"
    )
    args = parser.parse_args()

    params = xlc.CommonParams()
    params.model.path = args.model
    params.model_alias = args.alias
    params.hostnames = [args.host]
    params.port = args.port
    params.n_ctx = args.ctx_size
    params.n_parallel = args.parallel
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.n_threads_http = args.parallel + 2
    params.endpoint_metrics = True
    params.warmup = False
    if args.embeddings:
        # A causal model has no pooling of its own; OpenAI-style embeddings need one.
        params.embedding = True
        params.pooling_type = xlc.llama_pooling_type.LLAMA_POOLING_TYPE_MEAN

    server = xlc.Server(params)
    print(f"listening {server.listening_address}", flush=True)

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    if args.exit_on_stdin_eof:
        # The parent holds our stdin open; when it dies, stdin reaches EOF and we stop too.
        threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    stop.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
