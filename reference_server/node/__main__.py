"""Entry point of a node process: started by the gateway's supervisor on an inherited socket
(`--fd`), or on a port of its own (`--port`) as `rushhour node` runs it in a Kubernetes pod."""

from __future__ import annotations

import argparse
import socket
import sys
from pathlib import Path

from rushhour.reference_server.defaults import DEFAULT_PREFILL_TOKENS, default_batching
from rushhour.reference_server.listening import LaunchError
from rushhour.reference_server.node.model_worker import NodeSettings
from rushhour.reference_server.node.serve import inherited_socket, listen_socket, serve_node


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m rushhour.reference_server.node")
    parser.add_argument("--id", default=None, help="default: the host name (a pod's name)")
    parser.add_argument("--pool", default=None, help="default: the tier")
    parser.add_argument("--tier", required=True, choices=("quality", "fast"))
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--fd", type=int, help="listening socket inherited from the gateway")
    where.add_argument("--port", type=int, help="listen on this port (a node as its own network service)")
    parser.add_argument("--host", default="127.0.0.1", help="with --port: the address to bind")
    parser.add_argument("--max-batch-size", type=int, default=8)
    parser.add_argument("--max-queue-delay-ms", type=float, default=10.0)
    parser.add_argument("--max-queue", type=int, default=256)
    parser.add_argument("--batching", choices=("dynamic", "continuous"), default=None,
                        help="default: continuous for the quality tier, dynamic for the fast one")
    parser.add_argument("--max-batch-tokens", type=int, default=4096)
    parser.add_argument("--max-prefill-tokens", type=int, default=DEFAULT_PREFILL_TOKENS)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--cold", action="store_true", help="skip warm-up (a cold start)")
    parser.add_argument("--warmup-lengths", default="32,256,1024")
    parser.add_argument("--model-cache-dir", type=Path, default=None)
    parser.add_argument("--parent-pid", type=int, default=0)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    settings = NodeSettings(
        node_id=args.id or socket.gethostname(),
        pool=args.pool or args.tier,
        tier=args.tier,
        max_batch_size=args.max_batch_size,
        max_queue_delay_ms=args.max_queue_delay_ms,
        max_queue=args.max_queue,
        batching=args.batching or default_batching(args.tier),
        max_batch_tokens=args.max_batch_tokens,
        max_prefill_tokens=args.max_prefill_tokens,
        intra_op_threads=args.threads,
        warm=not args.cold,
        warmup_lengths=[int(x) for x in args.warmup_lengths.split(",") if x],
        model_cache_dir=args.model_cache_dir,
    )
    try:
        sock = inherited_socket(args.fd) if args.fd is not None else listen_socket(args.host, args.port)
    except LaunchError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 2
    serve_node(settings, sock, parent_pid=args.parent_pid)
    return 0


if __name__ == "__main__":
    sys.exit(main())
