"""A tiny, fast loopback HTTP target for `python -m benchmarks.generator` (gevent WSGI, fixed reply)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable

from gevent.pywsgi import WSGIServer

REPLY = (b'{"translation": "x", "model": "fast", "cached": false, "degraded": false, '
         b'"node": "bench-0", "chars": 1, "timing": {"queue_ms": 0, "infer_ms": 0, "total_ms": 0}}')


def app(environ: dict, start_response: Callable[..., object]) -> Iterable[bytes]:
    environ["wsgi.input"].read()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(REPLY)))])
    return [REPLY]


def main() -> None:
    port = int(sys.argv[1])
    host = sys.argv[2] if len(sys.argv) > 2 else "127.0.0.1"  # a test host inside a namespace the test made
    WSGIServer((host, port), app, log=None).serve_forever()


if __name__ == "__main__":
    main()
