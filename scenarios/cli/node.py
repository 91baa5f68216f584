"""`rushhour node`: one model node as its own network service (a pod of a Kubernetes pool).

A gateway whose pool lists the node (`remote:` URLs, or the pool's headless Service under
`kubernetes:`) polls its `/readyz` and sends it `/infer`; it never starts or kills it.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import click

from rushhour.reference_server.config import MIN_PREFILL_TOKENS
from rushhour.reference_server.defaults import DEFAULT_PREFILL_TOKENS, default_batching
from rushhour.reference_server.launch import LaunchError
from rushhour.reference_server.model.providers import REQUIRE_ENV
from rushhour.reference_server.node.model_worker import NodeSettings
from rushhour.reference_server.node.serve import listen_socket, serve_node
from rushhour.scenarios.cli.errors import BadInput


def _lengths(value: str) -> list[int]:
    try:
        lengths = [int(x) for x in value.split(",") if x.strip()]
    except ValueError:
        raise BadInput(f'--warmup-lengths "{value}" is not a comma-separated list of character counts.') from None
    if any(n <= 0 for n in lengths):
        raise BadInput(f'--warmup-lengths "{value}" has a length that is not positive.')
    return lengths


@click.command("node")
@click.option("--tier", type=click.Choice(["quality", "fast"]), required=True, help="The model this node serves.")
@click.option("--port", type=click.IntRange(0, 65535), default=9000, show_default=True, help="Port to listen on.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (0.0.0.0 in a pod).")
@click.option("--id", "node_id", default=None, help="The node's name in its answers (default: the host name, a pod's name).")
@click.option("--pool", default=None, help="The pool it belongs to (default: the tier).")
@click.option("--max-batch-size", type=click.IntRange(1, 256), default=8, show_default=True)
@click.option("--max-queue-delay-ms", type=click.FloatRange(0, 10_000), default=10.0, show_default=True)
@click.option("--max-queue", type=click.IntRange(1), default=256, show_default=True, help="Requests the node queues before 503.")
@click.option("--batching", type=click.Choice(["dynamic", "continuous"]), default=None,
              help="How the node batches (default: continuous for both bundled tiers).")
@click.option("--max-batch-tokens", type=click.IntRange(1, 1_000_000), default=4096, show_default=True)
@click.option("--max-prefill-tokens", type=click.IntRange(0, 1_000_000), default=DEFAULT_PREFILL_TOKENS, show_default=True,
              help="Continuous: encoder token-passes per decode step for joining rows (chunked prefill; 0: none).")
@click.option("--threads", type=click.IntRange(1, 64), default=1, show_default=True, help="ONNX Runtime intra-op threads.")
@click.option("--cold", is_flag=True, help="Skip warm-up: ready at once, the first requests pay for the start.")
@click.option("--warmup-lengths", default="32,256,1024", show_default=True,
              help="Text lengths warmed up before ready (on the CPU the shortest only).")
@click.option("--model-cache-dir", type=click.Path(path_type=Path), default=None, help="Where the model is built and kept.")
@click.option("--require-provider", type=click.Choice(["cuda"]), default=None,
              help="Exit (code 2) instead of serving a quality model from the CPU.")
def node(tier: str, port: int, host: str, node_id: str | None, pool: str | None, max_batch_size: int,
         max_queue_delay_ms: float, max_queue: int, batching: str | None, max_batch_tokens: int, max_prefill_tokens: int,
         threads: int, cold: bool,
         warmup_lengths: str, model_cache_dir: Path | None, require_provider: str | None) -> None:
    """Serve one model replica on HOST:PORT until SIGINT/SIGTERM.

    /healthz answers 200 while the process lives; /readyz answers 200 once the model is loaded
    and warmed. The gateway reaches it through its fault proxy like any local node.
    """
    if 0 < max_prefill_tokens < MIN_PREFILL_TOKENS:
        raise BadInput(f"--max-prefill-tokens {max_prefill_tokens} is too small; give 0 (no chunked prefill) "
                       f"or at least {MIN_PREFILL_TOKENS}.")
    if require_provider is not None:
        os.environ[REQUIRE_ENV] = require_provider
    settings = NodeSettings(
        node_id=node_id or socket.gethostname(), pool=pool or tier, tier=tier, max_batch_size=max_batch_size,
        max_queue_delay_ms=max_queue_delay_ms, max_queue=max_queue, batching=batching or default_batching(tier),
        max_batch_tokens=max_batch_tokens, max_prefill_tokens=max_prefill_tokens, intra_op_threads=threads, warm=not cold,
        warmup_lengths=_lengths(warmup_lengths), model_cache_dir=model_cache_dir,
    )
    try:
        sock = listen_socket(host, port)
    except LaunchError as exc:
        raise BadInput(str(exc)) from exc
    click.echo(f"rushhour: node {settings.node_id} ({tier}) on http://{host}:{sock.getsockname()[1]}", err=True)
    serve_node(settings, sock)
