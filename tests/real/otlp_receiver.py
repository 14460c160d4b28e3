"""Receive OTLP trace exports over gRPC on loopback and write one JSON line per span.

The OTLP/gRPC TraceService (the protocol vLLM's `--otlp-traces-endpoint` exporter speaks by
default), built on grpcio and opentelemetry-proto, both vLLM's own dependencies. Each span
becomes one line of --out, flushed as it is written:

    {"trace_id": "<32 hex>", "span_id": "<16 hex>", "parent_span_id": "<16 hex or empty>",
     "name": "llm_request", "attributes": {...}, "resource": {...}}

Prints one line `listening http://HOST:PORT` once it accepts exports, then serves until
SIGTERM/SIGINT, or with --exit-on-stdin-eof until its standard input closes.

    python tests/real/otlp_receiver.py --port 4317 --out spans.jsonl
"""

import argparse
import json
import signal
import sys
import threading
from concurrent import futures

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc


def any_value(value):
    """An OTLP AnyValue as plain JSON."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return attributes(value.kvlist_value.values)
    if kind == "bytes_value":
        return value.bytes_value.hex()
    return getattr(value, kind)


def attributes(key_values):
    return {kv.key: any_value(kv.value) for kv in key_values}


class Receiver(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self, out):
        self.out = out
        # gRPC serves exports on a thread pool: one writer at a time keeps lines whole.
        self.lock = threading.Lock()

    def Export(self, request, context):
        lines = []
        for resource_spans in request.resource_spans:
            resource = attributes(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    line = {
                        "trace_id": span.trace_id.hex(),
                        "span_id": span.span_id.hex(),
                        "parent_span_id": span.parent_span_id.hex(),
                        "name": span.name,
                        "start_time_unix_nano": span.start_time_unix_nano,
                        "end_time_unix_nano": span.end_time_unix_nano,
                        "attributes": attributes(span.attributes),
                        "resource": resource,
                    }
                    lines.append(json.dumps(line, sort_keys=True))
        with self.lock:
            for line in lines:
                self.out.write(line + "\n")
                self.out.flush()
        return trace_service_pb2.ExportTraceServiceResponse()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--out", required=True, help="the JSON-lines file spans go to")
    parser.add_argument("--exit-on-stdin-eof", action="store_true")
    args = parser.parse_args()

    out = open(args.out, "a", encoding="utf-8")
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Receiver(out), server)
    port = server.add_insecure_port(f"{args.host}:{args.port}")
    if port == 0:
        print(f"cannot listen on {args.host}:{args.port}", file=sys.stderr, flush=True)
        return 1
    server.start()

    stopped = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stopped.set())
    if args.exit_on_stdin_eof:
        # The parent holds our stdin open; when it dies, stdin reaches EOF and we stop too.
        def watch_stdin() -> None:
            sys.stdin.read()
            stopped.set()

        threading.Thread(target=watch_stdin, daemon=True).start()

    print(f"listening http://{args.host}:{port}", flush=True)
    stopped.wait()
    server.stop(grace=2).wait()
    out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
