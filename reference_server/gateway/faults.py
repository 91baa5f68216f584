"""The per-node fault proxy: an httpx transport in the gateway->node path.

Faults are switched on and off at run time, need no privileges, and each carries a
time-to-live after which it heals itself (a dead man's switch: a drill that crashes
can never leave the service broken).

- partition/blackhole: the request never reaches the node; the caller waits out its
  connect timeout (as with dropped SYNs) and sees `httpx.ConnectTimeout`.
- partition/reset: the connection is refused at once (`httpx.ConnectError`).
- latency: every call is delayed by `latency_ms` +/- `jitter_ms` before it is sent.
- errors: a share `error_rate` of calls is answered 500 without reaching the node.
- slowdown: the node's compute time is multiplied by `factor` (thermal throttling, a noisy
  neighbour, a slower build). The proxy stamps each call with the factor and the node sleeps
  `(factor - 1) x compute` after every batch while holding its batch slot, so capacity really
  drops, not only latency (see `rushhour.reference_server.node.protocol`).
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections.abc import Callable
from typing import Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from rushhour.reference_server.node.protocol import MAX_SLOWDOWN, NODE_TOKEN_HEADER, SLOWDOWN_HEADER, node_token

FaultKind = Literal["partition", "reset", "latency", "errors", "slowdown"]
DEFAULT_TTL_S = 300.0


class FaultSpec(BaseModel):
    """Body of `POST /admin/nodes/{id}/faults`."""

    model_config = ConfigDict(extra="forbid")

    kind: FaultKind
    mode: Literal["blackhole", "reset"] = "blackhole"
    latency_ms: float = Field(0.0, ge=0, le=120_000)
    jitter_ms: float = Field(0.0, ge=0, le=120_000)
    error_rate: float = Field(1.0, ge=0, le=1)
    factor: float | None = Field(None, description="slowdown: compute time multiplier, 1 to 20")
    ttl_s: float = Field(DEFAULT_TTL_S, gt=0, le=86_400)

    @field_validator("factor")
    @classmethod
    def _factor_in_range(cls, factor: float | None) -> float | None:
        if factor is not None and not (math.isfinite(factor) and 1.0 <= factor <= MAX_SLOWDOWN):
            raise ValueError(f"A slowdown factor must be between 1 and {MAX_SLOWDOWN:g}, not {factor!r}.")
        return factor

    @model_validator(mode="after")
    def _needs_its_parameter(self) -> FaultSpec:
        if self.kind == "latency" and self.latency_ms <= 0:
            raise ValueError("a latency fault needs latency_ms > 0")
        if self.kind == "slowdown" and self.factor is None:
            raise ValueError(f"A slowdown fault needs a factor between 1 and {MAX_SLOWDOWN:g}.")
        return self


class ActiveFault:
    def __init__(self, spec: FaultSpec, clock: Callable[[], float]) -> None:
        self.spec = spec
        self.expires_at = clock() + spec.ttl_s

    def describe(self, now: float) -> dict[str, object]:
        data = self.spec.model_dump(exclude_none=True)
        data["expires_in_s"] = round(max(0.0, self.expires_at - now), 3)
        return data


class FaultTransport(httpx.AsyncBaseTransport):
    """Wraps the real transport of one node; the gateway owns one per node."""

    def __init__(
        self,
        inner: httpx.AsyncBaseTransport,
        *,
        connect_timeout_s: float,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
        token: str | None = None,
    ) -> None:
        self._inner = inner
        self._token = node_token() if token is None else token
        self._connect_timeout_s = connect_timeout_s
        self._clock = clock
        self._rng = rng or random.Random()
        self._faults: dict[str, ActiveFault] = {}

    def inject(self, spec: FaultSpec) -> None:
        """One fault per kind; injecting a kind again replaces it (and its TTL)."""
        key = "partition" if spec.kind in ("partition", "reset") else spec.kind
        if spec.kind == "reset":
            spec = spec.model_copy(update={"kind": "partition", "mode": "reset"})
        self._faults[key] = ActiveFault(spec, self._clock)

    def heal(self) -> None:
        self._faults.clear()

    def renew(self, ttl_s: float) -> int:
        """Push every active fault's end to `ttl_s` from now (a held fault's lease renewed);
        returns how many were renewed (0: nothing left to hold, e.g. healed or expired)."""
        self._expire()
        expires_at = self._clock() + ttl_s
        for fault in self._faults.values():
            fault.expires_at = expires_at
        return len(self._faults)

    def active(self) -> list[dict[str, object]]:
        self._expire()
        now = self._clock()
        return [f.describe(now) for f in self._faults.values()]

    def _expire(self) -> None:
        now = self._clock()
        for key in [k for k, f in self._faults.items() if f.expires_at <= now]:
            del self._faults[key]

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self._expire()
        partition = self._faults.get("partition")
        if partition is not None:
            if partition.spec.mode == "reset":
                raise httpx.ConnectError("Connection refused (injected reset).", request=request)
            await asyncio.sleep(self._connect_timeout_s)
            raise httpx.ConnectTimeout("Connect timed out (injected blackhole).", request=request)
        latency = self._faults.get("latency")
        if latency is not None:
            jitter = self._rng.uniform(-latency.spec.jitter_ms, latency.spec.jitter_ms)
            await asyncio.sleep(max(0.0, latency.spec.latency_ms + jitter) / 1000.0)
        errors = self._faults.get("errors")
        if errors is not None and self._rng.random() < errors.spec.error_rate:
            return httpx.Response(500, json={"error": {"code": "injected_error", "message": "Injected node error."}}, request=request)
        request.headers[NODE_TOKEN_HEADER] = self._token  # the node takes a slowdown from its gateway only
        slowdown = self._faults.get("slowdown")
        if slowdown is not None and slowdown.spec.factor is not None:
            request.headers[SLOWDOWN_HEADER] = repr(slowdown.spec.factor)
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()
