"""Small asyncio helpers shared by the server's long-running loops."""

from __future__ import annotations

import asyncio
import contextlib


async def cancel_and_wait(task: asyncio.Task[None] | None) -> None:
    """Cancel a background loop and wait until it has really stopped (no stray task at shutdown)."""
    if task is None:
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
