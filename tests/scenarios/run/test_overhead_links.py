"""The overhead check's schedule is written through kernel/atomic: a link planted where it goes is refused, its target untouched.

The attack: the schedule's folder is one a local user can predict (here, a temporary folder the
test hands the check), with `schedule.parquet` planted as a symbolic link to a file of the
victim's. The check refuses the link, naming it, and starts no null target for a ladder it cannot fire.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from rushhour.kernel.atomic import LinkedOutputError
from rushhour.scenarios.run import overhead
from tests.support.planted import VICTIM_TEXT, plant, victim_file


def test_a_link_planted_at_the_overhead_schedule_is_refused_and_its_target_untouched(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    victim = victim_file(tmp_path)
    work = tmp_path / "work"
    plant(work / "schedule.parquet", victim)

    @contextmanager
    def planted(prefix: str = "") -> Iterator[str]:
        yield str(work)

    monkeypatch.setattr(overhead, "tempfile", SimpleNamespace(TemporaryDirectory=planted))
    monkeypatch.setattr(overhead.NullServer, "start", lambda self: pytest.fail("a null target was started"))
    mix = pd.DataFrame({"offset_s": [0.0, 0.5], "kind": "short", "chars": 10, "priority": "paid", "mode": "auto",
                        "text_id": 1, "tenant": "t", "phase": "", "deadline_ms": 2000})
    with pytest.raises(LinkedOutputError, match="schedule.parquet"):
        overhead.measure_overhead(mix, target=None, lag_limit_ms=10.0)
    assert victim.read_text(encoding="utf-8") == VICTIM_TEXT
    assert (work / "schedule.parquet").is_symlink()
