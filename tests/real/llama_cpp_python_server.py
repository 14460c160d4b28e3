"""Serve a GGUF model with llama-cpp-python's OpenAI server (FastAPI on uvicorn) on loopback.

The app is llama_cpp.server's own `create_app`, as `python -m llama_cpp.server` builds it,
served by uvicorn on a socket bound here, so that port 0 works and the real port is known.
Prints one line `listening http://HOST:PORT` once uvicorn accepts connections (the model is
loaded before that, inside `create_app`), then serves until SIGTERM/SIGINT, or with
--exit-on-stdin-eof until its standard input closes (how the tests make sure it never
outlives them).
"""

import argparse
import asyncio
import signal
import socket
import sys
import threading

import uvicorn
from llama_cpp.server.app import create_app
from llama_cpp.server.settings import ModelSettings, ServerSettings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", required=True, help="path of the GGUF file")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--ctx-size", type=int, default=4096)
    parser.add_argument("--alias", default="smollm2-135m-instruct")
    parser.add_argument(
        "--keep-alive",
        type=float,
        default=5,
        metavar="SECONDS",
        help="how long an idle keep-alive connection stays open (uvicorn's timeout_keep_alive)",
    )
    parser.add_argument("--exit-on-stdin-eof", action="store_true")
    args = parser.parse_args()

    model = ModelSettings(
        model=args.model,
        model_alias=args.alias,
        n_ctx=args.ctx_size,
        n_threads=args.threads,
        n_threads_batch=args.threads,
        # Logs each request's prompt tokens (prefix-match hit + remaining, prompt eval): the
        # tests read them, since the server's streamed responses carry no `usage`.
        verbose=True,
    )
    # The server runs one request at a time (a lock around the model). By default a streamed
    # response is cut short with `[DONE]` as soon as another request waits for that lock;
    # off, waiting requests queue and every stream runs to its end, as at any other server.
    server_settings = ServerSettings(
        host=args.host, port=args.port, interrupt_requests=False
    )
    app = create_app(server_settings=server_settings, model_settings=[model])

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    host, port = sock.getsockname()[:2]

    config = uvicorn.Config(
        app,
        timeout_keep_alive=args.keep_alive,
        log_level="info",
    )
    server = uvicorn.Server(config)

    # uvicorn catches SIGINT/SIGTERM while it serves, shuts down, then raises the signal
    # again with the handlers it found: these, so the process ends with status 0.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: None)

    if args.exit_on_stdin_eof:
        # The parent holds our stdin open; when it dies, stdin reaches EOF and we stop too.
        def watch_stdin() -> None:
            sys.stdin.read()
            server.should_exit = True

        threading.Thread(target=watch_stdin, daemon=True).start()

    async def serve() -> None:
        task = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started:
            if task.done():
                # Startup failed; uvicorn has logged why.
                await task
                return
            await asyncio.sleep(0.02)
        print(f"listening http://{host}:{port}", flush=True)
        await task

    asyncio.run(serve())
    return 0 if server.started else 1


if __name__ == "__main__":
    sys.exit(main())
