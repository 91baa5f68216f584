"""Run one node's HTTP server on a socket: one inherited from the gateway (local mode), or its
own TCP port (`rushhour node`, a pod of a Kubernetes pool Deployment)."""

from __future__ import annotations

import os
import signal
import socket
import threading
import time

import uvicorn

from rushhour.reference_server.listening import listen
from rushhour.reference_server.node.app import create_node_app
from rushhour.reference_server.node.model_worker import ModelWorker, NodeSettings

__all__ = ["inherited_socket", "listen_socket", "serve_node"]


def inherited_socket(fd: int) -> socket.socket:
    """The listening socket the gateway passed down.

    uvicorn's own `fd=` treats an inherited socket as AF_UNIX, so accepted connections would miss
    TCP_NODELAY and stall 40 ms on delayed ACKs; wrap the fd with its real family instead."""
    sock = socket.socket(fileno=fd)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def listen_socket(host: str, port: int) -> socket.socket:
    """A socket of the node's own on `host:port`; LaunchError says why it cannot listen."""
    sock = listen(host, port)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def _exit_with_parent(parent_pid: int) -> None:
    """A local node never outlives its gateway, even one killed with SIGKILL."""
    while True:
        time.sleep(0.5)
        if os.getppid() != parent_pid:
            os.kill(os.getpid(), signal.SIGKILL)


def serve_node(settings: NodeSettings, sock: socket.socket, *, parent_pid: int = 0) -> None:
    """Serve `/infer`, `/health`, `/healthz` and `/readyz` on `sock` until SIGINT/SIGTERM."""
    if parent_pid:
        threading.Thread(target=_exit_with_parent, args=(parent_pid,), daemon=True).start()
    app = create_node_app(ModelWorker(settings))
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on", timeout_graceful_shutdown=5)
    uvicorn.Server(config).run(sockets=[sock])
