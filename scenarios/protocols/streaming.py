"""Server-sent events in, token arrival times out: the measurements behind TTFT, ITL and TPOT.

Every chunk of the body is stamped when the client read it; an event that carries generated
text counts as one token arriving at its chunk's stamp (several events in one chunk share it,
which is what the client really saw). The answer's own inter-token gaps are summarised per
request (median, P99, worst); output tokens are the server's `usage.completion_tokens` when it
reports them (a server may pack several tokens per event), else the events counted.

A stream must end as the protocol says it ends: `data: [DONE]` or an event the protocol's
`ends` reads as final (an OpenAI `finish_reason`), with at least one token. One that stops
before either (a proxy timeout, a crashed worker, a load balancer closing the connection) is a
failed request, "stream cut", however clean the connection's close looked.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from rushhour.kernel.quantiles import percentile_value
from rushhour.scenarios.protocols.base import StreamParser
from rushhour.scenarios.protocols.outcome import Outcome, TokenTiming

__all__ = ["SseParser", "token_timing"]

DONE = b"[DONE]"
STREAM_ERROR_STATUS = 500


def token_timing(times: list[float], output_tokens: int | None) -> TokenTiming:
    """First and last arrival, the gaps' median, P99 and maximum (ms), and the token count."""
    if not times:
        return TokenTiming(output_tokens=output_tokens if output_tokens is not None else 0)
    gaps = np.diff(np.asarray(times, dtype=float)) * 1000.0
    nan = float("nan")
    return TokenTiming(
        first_at=times[0], last_at=times[-1],
        output_tokens=output_tokens if output_tokens is not None else len(times),
        itl_p50_ms=percentile_value(gaps, 50) if gaps.size else nan,
        itl_p99_ms=percentile_value(gaps, 99) if gaps.size else nan,
        itl_max_ms=float(gaps.max()) if gaps.size else nan,
    )


Event = Callable[[dict[str, object]], "tuple[int, str, str, int | None]"]
"""Reads one parsed event: (tokens in it, model, error code, usage tokens or None)."""

Ends = Callable[[dict[str, object]], bool]
"""Whether one parsed event says the answer is complete (e.g. it carries a finish reason)."""
CUT = "stream cut"


@dataclass
class SseParser(StreamParser):
    """Splits `data:` lines out of the chunks and hands each JSON event to `read_event`."""

    read_event: Event
    ends: Ends | None = None
    read_text: Callable[[dict[str, object]], str] | None = None
    """The generated text an event carries, kept as the answer (conversations carry it forward)."""
    read_input_tokens: Callable[[dict[str, object]], int | None] | None = None
    """The prompt tokens an event reports (the usage event), kept for the cost per input token."""
    input_tokens: int | None = None
    texts: list[str] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    model: str = ""
    error: str = ""
    usage: int | None = None
    done: bool = False
    _buffer: bytes = b""

    def feed(self, chunk: bytes, at: float) -> None:
        self._buffer += chunk
        *lines, self._buffer = self._buffer.split(b"\n")
        for line in lines:
            self._line(line.strip(), at)

    def _line(self, line: bytes, at: float) -> None:
        if not line.startswith(b"data:"):
            return
        data = line[5:].strip()
        if data == DONE:
            self.done = True
            return
        try:
            event = json.loads(data)
        except ValueError:
            self.error = self.error or "stream event is not JSON"
            return
        if not isinstance(event, dict):
            return
        tokens, model, error, usage = self.read_event(event)
        self.times.extend([at] * min(tokens, 1))
        if self.read_text is not None:
            self.texts.append(self.read_text(event))
        self.model = self.model or model
        self.error = self.error or error
        self.usage = usage if usage is not None else self.usage
        prompt = self.read_input_tokens(event) if self.read_input_tokens is not None else None
        self.input_tokens = prompt if prompt is not None else self.input_tokens
        self.done = self.done or (self.ends is not None and self.ends(event))

    def outcome(self, status: int, error: str = "") -> Outcome:
        if self._buffer.strip():
            self._line(self._buffer.strip(), self.times[-1] if self.times else 0.0)
            self._buffer = b""
        tokens = replace(token_timing(self.times, self.usage), input_tokens=self.input_tokens)
        if not 200 <= status < 300:
            return Outcome(status=status, error=error or f"http {status}", tokens=tokens)
        if self.error:
            return Outcome(status=STREAM_ERROR_STATUS, error=f"stream error: {self.error}", model=self.model, tokens=tokens)
        if error:
            return Outcome(status=0, error=f"{CUT}: {error}", model=self.model, tokens=tokens)
        if not self.done:
            return Outcome(status=0, error=f"{CUT}: the stream ended without [DONE] or a finish reason",
                           model=self.model, tokens=tokens)
        if not self.times:
            return Outcome(status=0, error=f"{CUT}: the stream ended without a token", model=self.model, tokens=tokens)
        return Outcome(status=status, model=self.model, tokens=tokens, text="".join(self.texts))
