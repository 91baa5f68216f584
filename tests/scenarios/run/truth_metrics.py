"""A ground-truth Prometheus endpoint for tests: gauges and counters the test sets itself."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from rushhour.kernel.processes import free_port


class TruthServer:
    """A /metrics endpoint with a running-requests gauge per model and a token counter."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.running = Gauge("vllm:num_requests_running", "running", ["model_name"], registry=self.registry)
        self.tokens = Counter("vllm:generation_tokens", "tokens", registry=self.registry)
        Histogram("vllm:e2e_request_latency_seconds", "latency", registry=self.registry).observe(0.2)
        registry = self.registry

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = generate_latest(registry)
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                return

        self.port = free_port()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.port}/metrics"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
