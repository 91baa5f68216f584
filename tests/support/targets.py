"""Small loopback servers that speak the target protocols, for the protocol and load tests.

`ChatServer` is OpenAI-compatible and streams at known times (the ground truth for TTFT and
inter-token latency): the first token `first_s` after the request arrived, then one every
`every_s`, with one stall of `stall_s` before token `stall_at`; every write is scheduled against
the request's arrival (no drift) and logged. With `cut_every` = k, every k-th streamed answer
after the first (the probe's) ends cleanly after two tokens, with neither a finish reason nor
[DONE]. It also serves `/v2/models/{m}/infer` (KServe v2)
and `/echo` (a plain JSON service), and refuses a request without the expected bearer token.
"""

from __future__ import annotations

import json
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HOLD_LIMIT_S = 15.0


@dataclass
class StreamPlan:
    """When the tokens of every streamed answer are written (seconds after arrival)."""

    tokens: int = 40
    first_s: float = 0.3
    every_s: float = 0.015
    stall_at: int | None = 20
    stall_s: float = 1.0

    def offsets(self, count: int | None = None) -> list[float]:
        n = min(count or self.tokens, self.tokens)
        out, t = [], self.first_s
        for k in range(n):
            if k:
                t += self.stall_s if k == self.stall_at else self.every_s
            out.append(t)
        return out


@dataclass
class TargetState:
    plan: StreamPlan = field(default_factory=StreamPlan)
    token: str | None = None
    seen_auth: list[str] = field(default_factory=list)
    bodies: list[dict] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    cut_every: int = 0
    streams: int = 0
    cut: int = 0
    check: Callable[[dict], str | None] | None = None
    """Judges each body (under the lock); a problem it names is answered 409 with that message."""

    def cuts_next(self) -> bool:
        """Count one streamed answer; whether it is one to cut short."""
        with self.lock:
            index, self.streams = self.streams, self.streams + 1
            cut = self.cut_every > 0 and index > 0 and index % self.cut_every == 0
            self.cut += cut
            return cut


def _handler(state: TargetState) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_args: object) -> None:
            pass

        def _json(self, status: int, data: object) -> None:
            body = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            self._json(404, {"detail": "Not Found"})

        def do_POST(self) -> None:
            arrived = time.monotonic()
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            auth = self.headers.get("Authorization", "")
            with state.lock:
                state.seen_auth.append(auth)
            if state.token is not None and auth != f"Bearer {state.token}":
                return self._json(401, {"error": {"code": "invalid_api_key", "message": "bad key"}})
            try:
                body = json.loads(raw)
            except ValueError:
                return self._json(400, {"error": {"code": "bad_json"}})
            with state.lock:
                state.bodies.append(body)
                problem = state.check(body) if state.check is not None else None
            if problem:
                return self._json(409, {"error": {"code": "bad_turn", "message": problem}})
            if self.path == "/v1/chat/completions":
                return self._chat(body, arrived)
            if self.path.startswith("/v2/models/") and self.path.endswith("/infer"):
                text = body["inputs"][0]["data"][0]
                return self._json(200, {"model_name": self.path.split("/")[3], "id": "1",
                                        "outputs": [{"name": "out", "shape": [1], "datatype": "BYTES", "data": [text[::-1]]}]})
            if self.path == "/echo":
                return self._json(200, {"result": {"text": str(body.get("q", ""))[::-1]}})
            if self.path.startswith("/html"):  # a web page, whatever the path below it
                page = b"<html>hello</html>"
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(page)))
                self.end_headers()
                self.wfile.write(page)
                return None
            return self._json(404, {"detail": "Not Found"})

        def _chat(self, body: dict, arrived: float) -> None:
            offsets = state.plan.offsets(int(body.get("max_tokens") or 0))
            if not body.get("stream"):
                time.sleep(min(offsets[-1], HOLD_LIMIT_S))
                return self._json(200, {"id": "c", "object": "chat.completion", "model": body.get("model"),
                                        "choices": [{"index": 0, "message": {"role": "assistant", "content": "x" * len(offsets)}}],
                                        "usage": {"completion_tokens": len(offsets)}})
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            cut = state.cuts_next()
            for k, offset in enumerate(offsets[:2] if cut else offsets):
                time.sleep(max(0.0, arrived + offset - time.monotonic()))
                event = {"object": "chat.completion.chunk", "model": body.get("model"),
                         "choices": [{"index": 0, "delta": {"content": f"t{k} "}, "finish_reason": None}]}
                self._chunk(b"data: " + json.dumps(event).encode() + b"\n\n")
            if cut:
                return self._chunk(b"")
            usage = {"object": "chat.completion.chunk", "choices": [], "usage": {"completion_tokens": len(offsets)}}
            self._chunk(b"data: " + json.dumps(usage).encode() + b"\n\ndata: [DONE]\n\n")
            self._chunk(b"")

        def _chunk(self, data: bytes) -> None:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

    return Handler


@contextmanager
def serve_handler(handler: type[BaseHTTPRequestHandler], *, tls: ssl.SSLContext | None = None) -> Iterator[str]:
    """`handler` served on 127.0.0.1 (https with `tls`) in a thread; yields its url, stops it on exit."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    scheme = "https" if tls is not None else "http"
    try:
        yield f"{scheme}://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def serve_target(state: TargetState | None = None, *, tls: ssl.SSLContext | None = None) -> Iterator[tuple[str, TargetState]]:
    """A TargetState-driven server on 127.0.0.1 (https with `tls`); yields (url, state)."""
    state = state or TargetState()
    with serve_handler(_handler(state), tls=tls) as url:
        yield url, state
