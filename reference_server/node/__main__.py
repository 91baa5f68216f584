"""Entry point of a node process, started by the gateway's supervisor (not by users)."""

from __future__ import annotations

import argparse
import os
import signal
import socket
import threading
import time
from pathlib import Path

import uvicorn

from reference_server.node.app import create_node_app
from reference_server.node.worker import ModelWorker, NodeSettings


def _parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m reference_server.node")
    parser.add_argument("--id", required=True)
    parser.add_argument("--pool", required=True)
    parser.add_argument("--tier", required=True)
    parser.add_argument("--fd", type=int, required=True, help="listening socket inherited from the gateway")
    parser.add_argument("--max-batch-size", type=int, default=8)
    parser.add_argument("--max-queue-delay-ms", type=float, default=10.0)
    parser.add_argument("--max-queue", type=int, default=256)
    parser.add_argument("--batching", choices=("dynamic", "continuous"), default="dynamic")
    parser.add_argument("--max-batch-tokens", type=int, default=4096)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--cold", action="store_true", help="skip warm-up (a cold start)")
    parser.add_argument("--warmup-lengths", default="32,256,1024")
    parser.add_argument("--model-cache-dir", type=Path, default=None)
    parser.add_argument("--parent-pid", type=int, default=0)
    return parser.parse_args()


def _exit_with_parent(parent_pid: int) -> None:
    """A node never outlives its gateway, even one killed with SIGKILL."""
    while True:
        time.sleep(0.5)
        if os.getppid() != parent_pid:
            os.kill(os.getpid(), signal.SIGKILL)


def main() -> None:
    args = _parse()
    settings = NodeSettings(
        node_id=args.id,
        pool=args.pool,
        tier=args.tier,
        max_batch_size=args.max_batch_size,
        max_queue_delay_ms=args.max_queue_delay_ms,
        max_queue=args.max_queue,
        batching=args.batching,
        max_batch_tokens=args.max_batch_tokens,
        intra_op_threads=args.threads,
        warm=not args.cold,
        warmup_lengths=[int(x) for x in args.warmup_lengths.split(",") if x],
        model_cache_dir=args.model_cache_dir,
    )
    if args.parent_pid:
        threading.Thread(target=_exit_with_parent, args=(args.parent_pid,), daemon=True).start()
    app = create_node_app(ModelWorker(settings))
    # uvicorn's own `fd=` treats an inherited socket as AF_UNIX, so accepted connections would
    # miss TCP_NODELAY and stall 40 ms on delayed ACKs; wrap the fd with its real family instead.
    sock = socket.socket(fileno=args.fd)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
