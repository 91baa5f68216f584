"""The probe's httpx client connects where the guard looked; the Host header stays the name.

The attack (DNS rebinding) on a command's own client: the name answers 127.0.0.1 to the guard,
then 192.0.2.1 (TEST-NET). httpx looked it up again when connecting, so the probe went there.
Through `pinned_transport` it reaches the loopback server, asked for by name, and the stand-in
DNS is asked once; a second lookup fails the test before any answer could send a request off loopback.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from rushhour.kernel.loopback import refused_address
from rushhour.kernel.pinning import forget_pins
from rushhour.scenarios.protocols.pinning import pinned_transport

NAME = "rebind.test"


@pytest.fixture
def server() -> Iterator[tuple[int, list[str]]]:
    hosts: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hosts.append(str(self.headers.get("Host")))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield httpd.server_address[1], hosts
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def test_the_probe_client_cannot_be_redirected_by_a_rebinding_name(server: tuple[int, list[str]],
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    port, hosts = server
    real, asked = socket.getaddrinfo, []

    def rebinding(host: str, *args: Any, **kwargs: Any) -> Any:
        if host != NAME:
            return real(host, *args, **kwargs)
        asked.append(host)
        if len(asked) > 1:  # the rebound answer (192.0.2.1) is never handed out, so never contacted
            raise AssertionError(f"the client looked {NAME} up again, where the rebound answer would send it")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", 0))]

    forget_pins()
    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    try:
        url = f"http://{NAME}:{port}"
        assert refused_address(url, allow_remote=False) is None
        with httpx.Client(transport=pinned_transport(), trust_env=False) as client:
            statuses = [client.get(f"{url}/health").status_code for _ in range(3)]
    finally:
        forget_pins()
    assert statuses == [204, 204, 204] and asked == [NAME]
    assert set(hosts) == {f"{NAME}:{port}"}
