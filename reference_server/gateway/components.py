"""The gateway's long-lived parts, built once per app and started and stopped by its lifespan.

Routes reach them through the dependencies in `deps.py`; nothing else is kept on `app.state`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from fastapi import FastAPI

from rushhour.reference_server.aio import cancel_and_wait
from rushhour.reference_server.config import ServerConfig
from rushhour.reference_server.gateway.autoscaler import Autoscaler
from rushhour.reference_server.gateway.cluster import Cluster
from rushhour.reference_server.gateway.events import EventLog
from rushhour.reference_server.gateway.jobs import JobManager
from rushhour.reference_server.gateway.metrics import Metrics
from rushhour.reference_server.gateway.service import TranslationService


@dataclass(kw_only=True)
class Gateway:
    config: ServerConfig
    metrics: Metrics
    events: EventLog
    cluster: Cluster
    service: TranslationService
    autoscaler: Autoscaler
    jobs: JobManager
    admin_token: str = field(repr=False)
    requests_total: int = 0
    _poker: asyncio.Task[None] | None = field(default=None, repr=False)

    async def start(self) -> None:
        await self.cluster.start()
        self._poker = asyncio.get_running_loop().create_task(self.service.poke_forever(), name="poker")
        self.autoscaler.start()

    async def stop(self) -> None:
        await cancel_and_wait(self._poker)
        await self.autoscaler.stop()
        await self.jobs.close()
        if self.service.l2 is not None:
            await self.service.l2.close()
        await self.cluster.stop()


def build_gateway(config: ServerConfig, *, admin_token: str) -> Gateway:
    metrics = Metrics()
    events = EventLog()
    cluster = Cluster(config, metrics, on_event=events.record)
    service = TranslationService(config, cluster, metrics)
    autoscaler = Autoscaler(config, cluster, service.dispatchers, metrics)
    jobs = JobManager(
        config.jobs, translate=service.translate, segment_chars=config.max_chars, check=service.check,
        rank_of=lambda priority: config.admission.classes[priority].rank,
    )
    return Gateway(
        config=config, metrics=metrics, events=events, cluster=cluster, service=service,
        autoscaler=autoscaler, jobs=jobs, admin_token=admin_token,
    )


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    gateway: Gateway = app.state.gateway
    await gateway.start()
    try:
        yield
    finally:
        await gateway.stop()
