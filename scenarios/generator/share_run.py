"""What each Locust worker process does with its share of a drill: read it, wait for the common start, fire, report.

The runner and the Locust workers (one or `--processes N`) talk through a small control
directory instead of sockets: each worker writes `ready-<i>` once it has loaded its share, the
runner writes `start` holding one absolute start time for all of them, and each worker writes
`done-<i>` after its last reply (or timeout) is on disk. Files keep the Locust side free of any
protocol of ours and make a crashed worker visible afterwards.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

import gevent

from rushhour.kernel.atomic import write_text_atomic
from rushhour.scenarios.generator.openloop import OpenLoopFirer, Sender, Share
from rushhour.scenarios.generator.partwriter import PartWriter
from rushhour.scenarios.generator.settings import LoadSettings
from rushhour.scenarios.generator.sharestream import SHARE_BATCH_ROWS, Prefetched, share_size, share_stream

START_FILE = "start"
START_WAIT_S = 120.0
TEXT_CACHE_SIZE = 4096


@lru_cache(maxsize=TEXT_CACHE_SIZE)
def _text_for(text_id: int, chars: int) -> str:
    """The row's text; popular texts repeat (the mix's catalog), and making one costs ~40 us."""
    from rushhour.traffic_models.text import text_for

    return text_for(text_id, chars)


def share_batches(settings: LoadSettings, index: int, *, batch_rows: int = SHARE_BATCH_ROWS) -> Iterator[Share]:
    """Worker `index`'s share of the schedule, `batch_rows` schedule rows read at a time, ready to
    fire (the open loop fires each batch at its times; the closed loop's personas take its rows)."""
    return share_stream(settings, index, _text_for, batch_rows=batch_rows)


def warm_up(share: Share) -> None:
    """Build one payload before the clock starts: the first import of the text generator
    costs ~100 ms, which would otherwise show up as schedule lag on the first requests. Then
    move every object loaded so far (Locust, pyarrow, the share) out of the cyclic collector's
    reach: a full collection walks them all and pauses the event loop for tens of milliseconds."""
    if len(share.rows):
        share.payload(0)
    gc.collect()
    gc.freeze()


def wait_for_start(control: Path, *, limit_s: float = START_WAIT_S) -> float:
    """Block (cooperatively) until the runner publishes the common start time."""
    path = control / START_FILE
    give_up = time.monotonic() + limit_s
    while not path.exists():
        if time.monotonic() > give_up:
            raise TimeoutError(f"{path} never appeared; the runner did not start the load.")
        gevent.sleep(0.02)
    return float(path.read_text(encoding="utf-8"))


def run_worker(settings: LoadSettings, index: int, send: Sender, *, send_job: Sender | None = None) -> bool:
    """Load the share's first batch, signal ready, wait for the start, fire open-loop (the later
    batches read while the earlier ones fire, `rushhour.scenarios.generator.sharestream`), signal done.

    `send_job` follows a document through the jobs API; it is used only for document rows and
    only when the settings say so (`LoadSettings.jobs_in_use`). A share is fired at most once per run: Locust
    re-runs a task that raised, and that second call must not send the rows again, so it returns
    False without firing. A worker that raised leaves `failed-<i>` with the error beside `done-<i>`.
    """
    control = settings.control_dir
    if not claim_share(control, index):
        return False
    batches = share_batches(settings, index)
    share = next(batches)
    warm_up(share)
    writer = PartWriter(settings.parts_dir, index)
    later = Prefetched(batches)  # the second batch is read now, each later one while the one before fires
    write_text_atomic(str(share_size(settings.schedule_path, index, settings.workers)), control / f"ready-{index}",
                      sync=False)
    t0 = wait_for_start(control)
    try:
        OpenLoopFirer(share, send, writer, send_job=send_job).run(t0, more=later)
    except Exception as exc:
        write_text_atomic(f"{type(exc).__name__}: {exc}", control / f"failed-{index}", sync=False)
        raise
    finally:
        write_text_atomic(str(time.time()), control / f"done-{index}", sync=False)
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
    write_text_atomic(repr(t0), control / START_FILE, sync=False)


def count_markers(control: Path, prefix: str) -> int:
    """How many workers have written a `<prefix>-<i>` marker."""
    return len(list(control.glob(f"{prefix}-*")))
