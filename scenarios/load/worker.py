"""One load worker's side of a drill: read its share, wait for the common start, fire, report.

The runner and the Locust workers (one or `--processes N`) talk through a small control
directory instead of sockets: each worker writes `ready-<i>` once it has loaded its share, the
runner writes `start` holding one absolute start time for all of them, and each worker writes
`done-<i>` after its last reply (or timeout) is on disk. Files keep the Locust side free of any
protocol of ours and make a crashed worker visible afterwards.
"""

from __future__ import annotations

import os
import time
from functools import lru_cache
from pathlib import Path
from typing import Any

import gevent
import pandas as pd
from pydantic import BaseModel, ConfigDict, ValidationError

from kernel.validation import format_validation_errors
from scenarios.load.openloop import FirePlan, OpenLoopFirer, Sender, worker_share
from scenarios.load.parts import PartWriter

ENV_CONFIG = "RUSHHOUR_WORKER_CONFIG"
START_FILE = "start"
START_WAIT_S = 120.0
TEXT_CACHE_SIZE = 4096


class WorkerConfig(BaseModel):
    """What the runner tells every worker: serialised once (`to_env`, JSON in one env variable or
    the master's config message) and validated on arrival (`from_env`, or the relay's constructor),
    so a worker never fires on settings it misread."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schedule: str
    parts_dir: str
    control_dir: str
    workers: int
    languages: tuple[str, ...]
    timeout_margin_s: float
    request_timeout_s: float | None = None
    duration_s: float = 0.0
    documents_via_jobs: bool = False
    target: dict[str, Any] | None = None
    """The target's protocol fields (`TargetProtocol.wire_dict()`: credential sources, never values)."""

    @property
    def protocol_name(self) -> str:
        return str((self.target or {}).get("protocol") or "rushhour")

    def to_env(self) -> str:
        return self.model_dump_json()

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> WorkerConfig:
        raw = (environ or os.environ).get(ENV_CONFIG)
        if not raw:
            raise RuntimeError(f"{ENV_CONFIG} is not set; run this locustfile through `rushhour run`.")
        try:
            return cls.model_validate_json(raw)
        except ValidationError as exc:
            raise RuntimeError(format_validation_errors(f"{ENV_CONFIG} (the runner's worker settings)", exc)) from exc


@lru_cache(maxsize=TEXT_CACHE_SIZE)
def _text_for(text_id: int, chars: int) -> str:
    """The row's text; popular texts repeat (the mix's catalog), and making one costs ~40 us."""
    from traffic_models import text_for

    return text_for(text_id, chars)


def build_plan(config: WorkerConfig, index: int) -> FirePlan:
    """This worker's share of the schedule, ready to fire."""
    schedule = pd.read_parquet(config.schedule)
    return FirePlan(
        rows=worker_share(schedule, index, config.workers), languages=config.languages,
        timeout_margin_s=config.timeout_margin_s, request_timeout_s=config.request_timeout_s,
        text_for=_text_for, documents_via_jobs=config.documents_via_jobs,
        via_name="translate" if config.protocol_name == "rushhour" else config.protocol_name,
    )


def warm_up(plan: FirePlan) -> None:
    """Build one payload before the clock starts: the first import of the text generator
    costs ~100 ms, which would otherwise show up as schedule lag on the first requests."""
    if len(plan.rows):
        plan.payload(0)


def wait_for_start(control: Path, *, limit_s: float = START_WAIT_S) -> float:
    """Block (cooperatively) until the runner publishes the common start time."""
    path = control / START_FILE
    give_up = time.monotonic() + limit_s
    while not path.exists():
        if time.monotonic() > give_up:
            raise TimeoutError(f"{path} never appeared; the runner did not start the load.")
        gevent.sleep(0.02)
    return float(path.read_text(encoding="utf-8"))


def run_worker(config: WorkerConfig, index: int, send: Sender, *, send_job: Sender | None = None) -> bool:
    """Load the share, signal ready, wait for the start, fire open-loop, signal done.

    `send_job` follows a document through the jobs API; it is used only for document rows and
    only when the config says `documents_via_jobs`. A share is fired at most once per run: Locust
    re-runs a task that raised, and that second call must not send the rows again, so it returns
    False without firing. A worker that raised leaves `failed-<i>` with the error beside `done-<i>`.
    """
    control = Path(config.control_dir)
    if not claim_share(control, index):
        return False
    plan = build_plan(config, index)
    warm_up(plan)
    writer = PartWriter(Path(config.parts_dir), index)
    (control / f"ready-{index}").write_text(str(len(plan.rows)), encoding="utf-8")
    t0 = wait_for_start(control)
    try:
        OpenLoopFirer(plan, send, writer, send_job=send_job).run(t0)
    except Exception as exc:
        (control / f"failed-{index}").write_text(f"{type(exc).__name__}: {exc}", encoding="utf-8")
        raise
    finally:
        (control / f"done-{index}").write_text(str(time.time()), encoding="utf-8")
    return True


def claim_share(control: Path, index: int) -> bool:
    """Claim worker `index`'s share for this run (exclusive create); False if already claimed."""
    try:
        with (control / f"fired-{index}").open("x", encoding="utf-8") as marker:
            marker.write(str(os.getpid()))
    except FileExistsError:
        return False
    return True


def publish_start(control: Path, t0: float) -> None:
    """Runner side: tell every worker the absolute start time (atomically)."""
    tmp = control / f"{START_FILE}.tmp"
    tmp.write_text(repr(t0), encoding="utf-8")
    os.replace(tmp, control / START_FILE)


def count_markers(control: Path, prefix: str) -> int:
    """How many workers have written a `<prefix>-<i>` marker."""
    return len(list(control.glob(f"{prefix}-*")))
