"""Experiments test fixtures: chiefly a stand-in for the reference server's admin API.

It lets the local actions and probes be tested for what they send (paths, bodies, token) while
the real server is not there; the live tests check the same actions against the real one.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

TOKEN = "fake-admin-token"


class FakeCluster:
    def __init__(self) -> None:
        self.states = {
            "quality-0": "ready",
            "quality-1": "ready",
            "quality-10": "ready",
            "fast-0": "ready",
        }
        self.calls: list[tuple[str, str, Any]] = []
        self.buckets = {0.1: 0.0, 0.5: 0.0, 1.0: 0.0, float("inf"): 0.0}
        self.by_status = {"200": 0.0, "503": 0.0}
        self.lock = threading.Lock()
        self.traffic_per_scrape: tuple[dict[float, float], dict[str, float]] | None = None

    def status(self) -> dict[str, Any]:
        nodes = [
            {"id": i, "pool": i.split("-")[0], "state": s, "breaker": "closed", "faults": []}
            for i, s in self.states.items()
        ]
        return {"ready": True, "nodes": nodes}

    def metrics_text(self) -> str:
        lines = ["# TYPE rushhour_request_duration_seconds histogram"]
        for le, count in self.buckets.items():
            bound = "+Inf" if le == float("inf") else str(le)
            labels = f'le="{bound}",pool="quality"'
            lines.append(f"rushhour_request_duration_seconds_bucket{{{labels}}} {count}")
        total = self.buckets[float("inf")]
        lines.append(f'rushhour_request_duration_seconds_count{{pool="quality"}} {total}')
        lines.append('rushhour_request_duration_seconds_sum{pool="quality"} 0.0')
        lines.append("# TYPE rushhour_requests_total counter")
        for status, count in self.by_status.items():
            lines.append(f'rushhour_requests_total{{status="{status}"}} {count}')
        if self.traffic_per_scrape is not None:  # the next scrape sees this much more traffic
            for le, count in self.traffic_per_scrape[0].items():
                self.buckets[le] += count
            for status, count in self.traffic_per_scrape[1].items():
                self.by_status[status] += count
        return "\n".join(lines) + "\n"


class _Handler(BaseHTTPRequestHandler):
    cluster: FakeCluster

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        return

    def _reply(self, code: int, body: Any, content_type: str = "application/json") -> None:
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path == "/v1/status":
            self._reply(200, self.cluster.status())
        elif self.path == "/readyz":
            self._reply(200, {"ready": True})
        elif self.path == "/metrics":
            self._reply(200, self.cluster.metrics_text(), "text/plain")
        else:
            self._reply(404, {"error": {"code": "not_found", "message": self.path}})

    def do_POST(self) -> None:
        self._admin("POST")

    def do_DELETE(self) -> None:
        self._admin("DELETE")

    def _admin(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        if self.path == "/v1/translate":
            degraded = self.cluster.states["quality-0"] == "down"
            self._reply(200, {"translation": "x", "degraded": degraded})
            return
        if self.headers.get("Authorization") != f"Bearer {TOKEN}":
            self._reply(401, {"error": {"code": "unauthorized", "message": "bad token"}})
            return
        match = re.fullmatch(r"/admin/nodes/([^/]+)/(kill|restart|faults)", self.path)
        if match and match.group(1) not in self.cluster.states:
            self._reply(404, {"error": {"code": "unknown_node", "message": match.group(1)}})
            return
        with self.cluster.lock:
            self.cluster.calls.append((method, self.path, body))
            if match and match.group(2) == "kill":
                self.cluster.states[match.group(1)] = "down"
            elif match and match.group(2) == "restart":
                self.cluster.states[match.group(1)] = "ready"
        self._reply(200, {"ok": True})


def serve() -> tuple[ThreadingHTTPServer, FakeCluster, str]:
    cluster = FakeCluster()
    handler = type("Handler", (_Handler,), {"cluster": cluster})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, cluster, f"http://127.0.0.1:{server.server_address[1]}"


@pytest.fixture
def fake_cluster() -> Iterator[tuple[FakeCluster, dict[str, Any], dict[str, Any]]]:
    """A fake server plus the configuration and secrets an experiment would pass."""
    server, cluster, url = serve()
    try:
        yield cluster, {"rushhour_url": url}, {"admin_token": TOKEN}
    finally:
        server.shutdown()
        server.server_close()
