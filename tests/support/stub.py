"""A loopback HTTP stub with canned answers per path, for clients' proxy and redirect tests."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = tuple[int, dict[str, str], Any]


@contextmanager
def stub_server(routes: dict[str, Answer]) -> Iterator[tuple[str, list[str]]]:
    """Serve `routes` (path without query -> status, headers, JSON body) on 127.0.0.1; yields the
    base URL and the list of paths asked, in order. Unknown paths answer 404."""
    asked: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            path = self.path.split("?")[0]
            asked.append(path)
            status, headers, body = routes.get(path, (404, {}, {"error": {"code": "not_found"}}))
            data = json.dumps(body).encode()
            self.send_response(status)
            for key, value in {"Content-Type": "application/json", **headers}.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_DELETE = _answer  # noqa: N815 - http.server's naming

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", asked
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
