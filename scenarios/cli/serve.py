"""`rushhour serve`: run the reference translation server (gateway + node processes)."""

from __future__ import annotations

from pathlib import Path

import click

from rushhour.reference_server.config import ConfigError, load_config
from rushhour.reference_server.launch import LaunchError
from rushhour.reference_server.launch import serve as serve_forever
from rushhour.scenarios.cli.errors import BadInput


@click.command("serve")
@click.option("--config", "config_path", type=click.Path(path_type=Path), default=None, help="Server config YAML.")
@click.option("--host", default=None, help="Address to bind (default 127.0.0.1).")
@click.option("--port", type=click.IntRange(0, 65535), default=None, help="Port (default 8000).")
@click.option("--nodes", type=click.IntRange(0, 64), default=None, help="Nodes in the quality pool.")
@click.option("--max-batch-size", type=click.IntRange(1, 256), default=None, help="Batch limit of every node.")
@click.option("--require-provider", type=click.Choice(["cuda"]), default=None,
              help="Refuse to start (exit 2) unless the quality tier really runs on CUDA.")
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]), default="info")
def serve(config_path: Path | None, host: str | None, port: int | None, nodes: int | None, max_batch_size: int | None,
          require_provider: str | None, log_level: str) -> None:
    """Run the reference server until SIGINT/SIGTERM, which also stops every node."""
    try:
        config = load_config(config_path, host=host, port=port, nodes=nodes, max_batch_size=max_batch_size,
                             require_provider=require_provider)
        serve_forever(config, log_level=log_level)
    except (ConfigError, LaunchError) as exc:
        raise BadInput(str(exc)) from exc
