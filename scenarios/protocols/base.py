"""The interface every target protocol implements, and the one place a protocol is chosen.

A protocol turns the fields of one schedule row (`rushhour.scenarios.generator.openloop.Share.payload`)
into one HTTP request, and the answer into an `Outcome` (status, error, model, tokens). What it
can carry is declared, not discovered: `sends` names the row fields that reach the target (a
field it cannot say, like priority on openai-chat, is reported once at planning time by
`rushhour.scenarios.protocols.features`), and `features` names the server APIs beyond the request itself
(the jobs API for long documents, the admin API that chaos experiments drive).
"""

from __future__ import annotations

import abc
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import ClassVar

from rushhour.scenarios.protocols.credentials import auth_headers
from rushhour.scenarios.protocols.outcome import Outcome
from rushhour.scenarios.spec.target import ROW_FIELDS, TargetProtocol

__all__ = ["ROW_FIELDS", "StreamParser", "WireProtocol", "WireRequest", "json_body", "make_protocol",
           "protocol_class"]
MIN_DEFAULT_TOKENS = 16
CHARS_PER_TOKEN = 4


@dataclass(frozen=True)
class WireRequest:
    """One HTTP request as it goes on the wire (path relative to the target URL)."""

    method: str
    path: str
    body: bytes | None
    headers: dict[str, str] = field(default_factory=dict)
    stream: bool = False


class StreamParser(abc.ABC):
    """Reads a streamed answer chunk by chunk, each stamped with its arrival time."""

    @abc.abstractmethod
    def feed(self, chunk: bytes, at: float) -> None:
        """Take the next chunk of the body, which arrived at monotonic time `at`."""

    @abc.abstractmethod
    def outcome(self, status: int, error: str = "") -> Outcome:
        """What the whole answer amounted to (called once the body ended or the read failed)."""


class WireProtocol(abc.ABC):
    """One target protocol; `spec` is the scenario's target, `headers` include the credential."""

    name: ClassVar[str]
    sends: ClassVar[frozenset[str]]
    features: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, spec: TargetProtocol, headers: Mapping[str, str]) -> None:
        self.spec = spec
        self.headers = dict(headers)

    @property
    def streaming(self) -> bool:
        """Whether answers come as a stream (TTFT, ITL and TPOT are measured)."""
        return False

    @property
    def label(self) -> str:
        """The name Locust files these requests under (the path, without row-specific parts)."""
        return self.build(_SAMPLE).path

    @classmethod
    def fields_sent(cls, spec: TargetProtocol) -> frozenset[str]:
        """The row fields that reach the target: the protocol's own, the row headers, the extras."""
        spec = spec.resolved()
        return cls.sends | frozenset((spec.row_headers or {}).values()) | frozenset(spec.extra_fields or ())

    def request(self, fields: Mapping[str, object]) -> WireRequest:
        """The request for one row, with its row headers (`target.row_headers`) set."""
        request = self.build(fields)
        if not self.spec.row_headers:
            return request
        per_row = {name: _header_value(self.row_value(fields, field)) for name, field in self.spec.row_headers.items()}
        return replace(request, headers={**request.headers, **per_row})

    def extras(self, fields: Mapping[str, object]) -> dict[str, object]:
        """The row fields `target.extra_fields` adds to the body, under their own names."""
        values = {name: self.row_value(fields, name) for name in self.spec.extra_fields or ()}
        return {name: value for name, value in values.items() if value is not None}

    def row_value(self, fields: Mapping[str, object], name: str) -> object:
        """One field of the row as sent (`max_tokens` as asked for, not the schedule's 0 for "none")."""
        return self.max_tokens(fields) if name == "max_tokens" else fields.get(name)

    @abc.abstractmethod
    def build(self, fields: Mapping[str, object]) -> WireRequest:
        """The request for one row's fields (without the row headers: call `request`)."""

    @abc.abstractmethod
    def parse(self, status: int, body: bytes | None, error: str = "") -> Outcome:
        """The outcome of a whole (not streamed) answer; status 0 = no HTTP response."""

    def stream_parser(self) -> StreamParser:
        """A fresh parser for one streamed answer (streaming protocols only)."""
        raise NotImplementedError(f'protocol "{self.name}" does not stream')

    def read_stream(self, readline: Callable[[bytes], bytes], status: int) -> Outcome:
        """Feed a streamed answer to a fresh parser line by line, each line timed as it arrives.
        A connection that breaks mid-stream is this request's failure (its error named), never
        the caller's; the parser decides whether what arrived was a whole answer."""
        parser = self.stream_parser()
        error = ""
        try:
            while line := readline(b"\n"):
                parser.feed(line, time.monotonic())
        except Exception as exc:  # noqa: BLE001 - a cut stream is this request's failure, not the worker's
            error = type(exc).__name__
        return parser.outcome(status, error)

    def max_tokens(self, fields: Mapping[str, object]) -> int:
        """Output tokens to ask for: the schedule's, else the target's default, else chars / 4."""
        scheduled = int(fields.get("max_tokens") or 0)  # type: ignore[call-overload]
        if scheduled > 0:
            return scheduled
        if self.spec.max_tokens is not None:
            return self.spec.max_tokens
        return max(MIN_DEFAULT_TOKENS, int(fields.get("chars") or 0) // CHARS_PER_TOKEN)  # type: ignore[call-overload]

    def json_request(self, method: str, path: str, body: object, *, stream: bool = False) -> WireRequest:
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream" if stream else "application/json",
                   **self.headers}
        return WireRequest(method, path, json.dumps(body).encode("utf-8"), headers, stream)


_SAMPLE: dict[str, object] = {
    "text": "Hello, world.", "source_lang": "en", "target_lang": "de", "mode": "auto", "priority": "paid",
    "tenant": "probe", "deadline_ms": 5000.0, "kind": "short", "chars": 13, "max_tokens": 8,
}
"""A row's fields for the capability probe and for naming requests."""


def sample_fields() -> dict[str, object]:
    """A copy of the probe's sample row."""
    return dict(_SAMPLE)


def json_body(body: bytes | str | None) -> object:
    """The parsed JSON answer, or None when the body is empty or not JSON."""
    if not body:
        return None
    try:
        return json.loads(body)
    except ValueError:
        return None


def _header_value(value: object) -> str:
    """A row field as a header value: numbers without a trailing ".0", no line breaks."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return "" if value is None else " ".join(str(value).split())


def protocol_class(name: str) -> type[WireProtocol]:
    """The class of the protocol called `name` (one of `rushhour.scenarios.spec.target.PROTOCOL_NAMES`)."""
    from rushhour.scenarios.protocols.http_template import HttpTemplateProtocol
    from rushhour.scenarios.protocols.kserve_v2 import KServeV2Protocol
    from rushhour.scenarios.protocols.openai_chat import OpenAIChatProtocol
    from rushhour.scenarios.protocols.rushhour import RushhourProtocol

    kinds: dict[str, type[WireProtocol]] = {
        "rushhour": RushhourProtocol, "openai-chat": OpenAIChatProtocol,
        "kserve-v2": KServeV2Protocol, "http": HttpTemplateProtocol,
    }
    return kinds[name]


def make_protocol(spec: TargetProtocol | Mapping[str, object]) -> WireProtocol:
    """The protocol a target speaks, with its credential read (raises CredentialError if absent)."""
    target = spec.resolved() if isinstance(spec, TargetProtocol) else TargetProtocol.model_validate(spec)
    headers = {**target.headers, **auth_headers(target.auth)}
    return protocol_class(target.protocol)(target, headers)
