"""`rushhour serve`: run the reference translation server (gateway + node processes)."""

from __future__ import annotations

import logging
import socket
import sys
from pathlib import Path

import click
import uvicorn

from reference_server.config import ConfigError, load_config
from scenarios.clierrors import BadInput


@click.command("serve")
@click.option("--config", "config_path", type=click.Path(path_type=Path), default=None, help="Server config YAML.")
@click.option("--host", default=None, help="Address to bind (default 127.0.0.1).")
@click.option("--port", type=click.IntRange(0, 65535), default=None, help="Port (default 8000).")
@click.option("--nodes", type=click.IntRange(0, 64), default=None, help="Nodes in the quality pool.")
@click.option("--max-batch-size", type=click.IntRange(1, 256), default=None, help="Batch limit of every node.")
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]), default="info")
def serve(config_path: Path | None, host: str | None, port: int | None, nodes: int | None, max_batch_size: int | None, log_level: str) -> None:
    """Run the reference server until SIGINT/SIGTERM, which also stops every node."""
    from reference_server.gateway.admin import resolve_admin_token
    from reference_server.gateway.app import create_app

    try:
        config = load_config(config_path, host=host, port=port, nodes=nodes, max_batch_size=max_batch_size)
    except ConfigError as exc:
        raise BadInput(str(exc)) from exc
    logging.basicConfig(level=log_level.upper(), stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    token, token_path = resolve_admin_token(config.state_dir)
    if token_path is not None:
        click.echo(f"rushhour: admin token written to {token_path}", err=True)
    pools = ", ".join(f"{name}={p.nodes}x{p.model}" for name, p in config.pools.items())
    click.echo(f"rushhour: serving on http://{config.host}:{config.port} (pools: {pools})", err=True)
    sock = _listen(config.host, config.port)  # claimed before any node process picks a port
    app = create_app(config, admin_token=token)
    server_config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on", timeout_graceful_shutdown=5)
    uvicorn.Server(server_config).run(sockets=[sock])


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise BadInput(f"Cannot listen on {host}:{port}: {exc.strerror}.") from exc
    sock.listen(2048)
    sock.set_inheritable(False)
    return sock
