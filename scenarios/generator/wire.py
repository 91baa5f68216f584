"""Sending one row through the target's protocol with Locust's FastHttpSession.

The protocol (`rushhour.scenarios.protocols`) builds the request and reads the answer; this module only
moves bytes. A streamed answer is read chunk by chunk as it arrives, each chunk stamped on the
monotonic clock before it is parsed, so the token times are the client's own observations.
The body is read line by line (geventhttpclient's `readline` returns as soon as a line is in;
its `read(n)` would wait for n bytes), which suits server-sent events, one event per line.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rushhour.scenarios.protocols.base import WireProtocol
from rushhour.scenarios.protocols.outcome import Outcome


def no_response(response: Any) -> str:
    """The error of a request that got no HTTP answer."""
    return type(response.error).__name__ if getattr(response, "error", None) else "no response"


class WireSender:
    """A `rushhour.scenarios.generator.openloop.Sender` for any protocol, over a FastHttpSession `client`."""

    def __init__(self, client: Any, protocol: WireProtocol) -> None:
        self._client = client
        self._protocol = protocol
        self._label = protocol.label

    def __call__(self, fields: Mapping[str, object], timeout_s: float) -> Outcome:
        request = self._protocol.request(fields)
        url = f"{fields.get('base_url') or ''}{request.path}"  # a row may name its own target (`rushhour ab`)
        response = self._client.request(request.method, url, data=request.body, headers=request.headers,
                                        name=self._label, stream=request.stream)
        status = int(response.status_code or 0)
        if not status:
            return Outcome(status=0, error=no_response(response))
        if not request.stream or not 200 <= status < 300:
            return self._protocol.parse(status, response.content)
        return self._read_stream(response, status)

    def _read_stream(self, response: Any, status: int) -> Outcome:
        raw = getattr(response, "_response", None)
        if raw is None or not hasattr(raw, "readline"):
            raise RuntimeError("Locust's FastResponse has no _response.readline; this version cannot time streamed tokens.")
        return self._protocol.read_stream(raw.readline, status)
