"""One request served as a stream of pieces, for `/v1/translate/stream` and `/v1/chat/completions`.

`PieceStream` runs the request through the service's normal path (rate limit, cache, admission,
breakers, fallback) with a piece sink, and lets a route wait for the first piece before it
commits to a status: a request refused before any piece gets its usual error status. A cached or
fallback answer arrives whole, as one piece. Time to first piece and the gaps between pieces are
observed per endpoint and priority (bounded labels).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

from rushhour.reference_server.gateway.api import TranslateRequest, TranslateResponse
from rushhour.reference_server.gateway.metrics import Metrics, bounded_label
from rushhour.reference_server.gateway.service import TranslationService

__all__ = ["PieceStream"]


class PieceStream:
    """Start with `start()`; iterate the pieces; then `result()` (raises the request's ApiError)."""

    def __init__(self, service: TranslationService, req: TranslateRequest, *, endpoint: str, metrics: Metrics) -> None:
        self._service = service
        self._req = req
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        self._task: asyncio.Task[TranslateResponse] | None = None
        self._endpoint = endpoint
        self._metrics = metrics
        self._started = time.monotonic()
        self._last: float | None = None
        self.pieces = 0
        classes = service.config.admission.classes
        self._priority = bounded_label(req.priority or service.config.admission.default_priority, classes)

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._service.translate(self._req, on_piece=self._queue.put_nowait))

    async def first(self) -> str | None:
        """The first piece, or None when the answer came whole; raises the request's error."""
        piece = await self._next()
        if piece is None:
            await self.result()
        return piece

    async def rest(self) -> AsyncIterator[str]:
        """The pieces after the first; a whole answer (cache, fallback) is one piece."""
        while (piece := await self._next()) is not None:
            yield piece
        if self.pieces == 0:
            whole = (await self.result()).translation
            if whole:
                self._observe()
                yield whole

    async def result(self) -> TranslateResponse:
        assert self._task is not None
        return await self._task

    async def close(self) -> None:
        """The client went away: stop the request (its node row leaves at the next step)."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _next(self) -> str | None:
        assert self._task is not None
        while self._queue.empty() and not self._task.done():
            getter = asyncio.ensure_future(self._queue.get())
            await asyncio.wait({getter, self._task}, return_when=asyncio.FIRST_COMPLETED)
            if getter.done():
                self._observe()
                return getter.result()
            getter.cancel()
        if self._queue.empty():
            return None
        self._observe()
        return self._queue.get_nowait()

    def _observe(self) -> None:
        now = time.monotonic()
        if self._last is None:
            self._metrics.ttft_seconds.labels(self._endpoint, self._priority).observe(now - self._started)
        else:
            self._metrics.inter_token_seconds.labels(self._endpoint, self._priority).observe(now - self._last)
        self._last = now
        self.pieces += 1
