"""The overhead ladder runs in a run's order: a load that cannot start is raised, not recorded, and
the null target it booted is stopped and the temporary folder removed first."""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
import pytest

from rushhour.scenarios.load.locust import LoadError
from rushhour.scenarios.run import overhead


def _refuse(self: object) -> float:
    raise LoadError("locust did not start: port 5557 is taken")


@pytest.mark.slow
def test_a_ladder_whose_load_cannot_start_stops_its_null_target_and_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(overhead.LoadSession, "start", _refuse)
    mix = pd.DataFrame({"offset_s": [0.0, 0.5], "kind": "short", "chars": 10, "priority": "paid", "mode": "auto",
                        "text_id": 1, "tenant": "t", "phase": "", "deadline_ms": 2000})
    run = overhead.LadderRun(overhead.ladder_schedule(mix), None, 10.0, ("en-de",), stream=io.StringIO())
    with pytest.raises(LoadError, match="port 5557 is taken"):
        run.run()
    server = run._server
    assert server is not None and server.proc is not None
    assert server.proc.poll() is not None  # the null target's process has ended
    assert not Path(run._work).exists()
    assert run.abort_reason is None
