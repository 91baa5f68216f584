"""Part files and closed-loop markers written through kernel/atomic: a link planted at a
predictable name writes nothing through it.

Each test is the attack: someone who can write the run's load folder plants a symbolic link, at the
predictable temporary name (`part-w000-000000.tmp`, `.warm-w000.tmp`) or at a marker's
own name (`ready-<i>`, `done-<i>`), pointing at a file of the victim's. The writers create their
temporary files exclusively under a random name and never follow a link, so the victim's file is
untouched and the parts hold every row recorded.
"""

from __future__ import annotations

import gc
import time
from pathlib import Path

import pytest

from rushhour.kernel.atomic import LinkedOutputError
from rushhour.scenarios.generator.closed import ClosedDrill
from rushhour.scenarios.generator.partwriter import PartWriter, list_parts
from rushhour.scenarios.generator.settings import LoadSettings
from rushhour.scenarios.generator.share_run import publish_start
from rushhour.scenarios.load.parts import read_parts
from rushhour.scenarios.protocols.outcome import Outcome
from rushhour.traffic_models import load_traffic_model
from rushhour.traffic_models.chunked import iter_schedule, write_schedule
from tests.support.planted import VICTIM_TEXT, plant, victim_file


def test_part_files_never_write_through_their_old_temporary_names(tmp_path: Path) -> None:
    """Before: each part went to `part-w<i>-<seq>.tmp` and the warm-up to `.warm-w<i>.tmp`, opened by
    pyarrow following a link planted there."""
    victim, parts = victim_file(tmp_path), tmp_path / "parts"
    for name in (".warm-w000.tmp", "part-w000-000000.tmp", "part-w000-000001.tmp"):
        plant(parts / name, victim)
    writer = PartWriter(parts, 0, batch_rows=3, flush_s=3600.0)
    for row in range(5):
        writer.add(row=row, intended_s=row / 10, sent_s=row / 10, done_s=row / 10 + 0.05, status=200)
    writer.flush()
    assert victim.read_text(encoding="utf-8") == VICTIM_TEXT
    files = list_parts(parts)
    assert [f.name for f in files] == ["part-w000-000000.parquet", "part-w000-000001.parquet"]
    assert sorted(read_parts(files)["row"].tolist()) == [0, 1, 2, 3, 4]  # every row recorded, none lost
    assert not list(parts.glob(".*.parquet*"))  # the warm-up scratch and the temporary files are gone


def test_a_part_file_planted_as_a_link_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    victim, parts = victim_file(tmp_path), tmp_path / "parts"
    plant(parts / "part-w000-000000.parquet", victim)
    writer = PartWriter(parts, 0, flush_s=3600.0)
    writer.add(row=0, status=200)
    with pytest.raises(LinkedOutputError, match=r'part-w000-000000.parquet": it is a symbolic link'):
        writer.flush()
    assert victim.read_text(encoding="utf-8") == VICTIM_TEXT


def _closed_settings(tmp_path: Path) -> LoadSettings:
    path = tmp_path / "schedule.parquet"
    write_schedule(path, iter_schedule(load_traffic_model("diurnal"), seed=4, time_scale=2880.0, duration_s=10,
                                       rate_scale=2.0, chunk_rows=250))
    settings = LoadSettings(host="", schedule_path=path, work_dir=tmp_path / "load", duration_s=10.0, processes=1,
                            mode="closed")
    settings.control_dir.mkdir(parents=True)
    publish_start(settings.control_dir, time.time() - 3600.0)  # begun long ago: no row waits for its time
    return settings


def _send(_payload: dict[str, object], _timeout_s: float) -> Outcome:
    return Outcome(status=200, model="fast")


def _run(drill: ClosedDrill) -> int:
    sent = 0
    try:
        while drill.step(_send):
            sent += 1
    finally:
        gc.unfreeze()  # the drill froze what it loaded before its start, as a worker does
    return sent


def test_the_closed_loop_ready_marker_never_writes_through_a_planted_link(tmp_path: Path) -> None:
    """Before: `ready-<i>` was written with write_text, following a link planted there."""
    victim, settings = victim_file(tmp_path), _closed_settings(tmp_path)
    plant(settings.control_dir / "ready-0", victim)
    with pytest.raises(LinkedOutputError, match=r'ready-0": it is a symbolic link'):
        _run(ClosedDrill(settings, 0))
    assert victim.read_text(encoding="utf-8") == VICTIM_TEXT


def test_the_closed_loop_done_marker_never_creates_a_file_through_a_dangling_link(tmp_path: Path) -> None:
    """Before: `done-<i>` linked to a path that did not exist was followed, creating that file."""
    settings = _closed_settings(tmp_path)
    absent = tmp_path / "elsewhere" / "chosen-by-someone-else"
    absent.parent.mkdir()
    plant(settings.control_dir / "done-0", absent)
    with pytest.raises(LinkedOutputError, match=r'done-0": it is a symbolic link'):
        _run(ClosedDrill(settings, 0))
    assert not absent.exists()
    assert (settings.control_dir / "ready-0").read_text(encoding="utf-8").isdigit()  # written as a plain file
    assert read_parts(list_parts(settings.parts_dir))["status"].eq(200).all()  # every answer is on disk
