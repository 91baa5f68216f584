"""Claiming a listening socket: the one thing a node process needs of how the server launches."""

from __future__ import annotations

import socket

__all__ = ["LaunchError", "listen"]


class LaunchError(RuntimeError):
    """The server could not listen, exited early or never became ready; the message says why."""


def listen(host: str, port: int) -> socket.socket:
    """The listening socket, claimed before any node process picks a port."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise LaunchError(f"Cannot listen on {host}:{port}: {exc.strerror}.") from exc
    sock.listen(2048)
    sock.set_inheritable(False)
    return sock
