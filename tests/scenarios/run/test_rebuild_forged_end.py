"""A forged `run_end` in a killed run's timeline changes nothing of what `rushhour report` rebuilds.

The attack: a target (or whoever can append to `events.jsonl`) writes a `run_end` of its own
source, and a late event of its own, into the timeline of a run whose harness was killed, so
the report would take the run as finished and never rebuild it, or end it at the forged time.
The rebuild trusts only the harness's own `run_end`: the folder is rebuilt as the same folder
without the forged lines is, ending at the same moment.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from rushhour.scenarios.run.rebuild import needs_rebuild, rebuild_results
from tests.scenarios.run.test_rebuild import _killed_run

FORGED = [{"type": "run_end", "t_s": 1.0, "duration_s": 1.0, "source": "target"},
          {"type": "run_end", "t_s": 2.0, "duration_s": 2.0, "source": "server"},
          {"type": "target_event", "t_s": 9999.0, "source": "target", "target_kind": "scale", "target_seq": 1}]


def _forge(root: Path) -> None:
    """The forged lines go before the line the kill cut short, as an appending target would leave them."""
    path = root / "events.jsonl"
    whole, cut = path.read_text().rsplit("\n", 1)
    path.write_text(whole + "\n" + "".join(json.dumps(e) + "\n" for e in FORGED) + cut)


def _ending(root: Path) -> dict[str, object]:
    events = [json.loads(line) for line in (root / "events.jsonl").read_text().splitlines() if line.endswith("}")]
    return next(e for e in reversed(events) if e["type"] == "run_end")


@pytest.mark.slow
def test_a_forged_run_end_does_not_change_what_is_rebuilt(tmp_path: Path,
                                                          make_schedule: Callable[..., pd.DataFrame]) -> None:
    schedule = make_schedule(3.0, 10.0)
    plain, forged = tmp_path / "plain", tmp_path / "forged"
    _killed_run(plain, schedule, answered=9)
    _killed_run(forged, schedule, answered=9)
    _forge(forged)
    assert needs_rebuild(forged) and needs_rebuild(plain)
    assert rebuild_results(forged) == rebuild_results(plain) is not None
    assert not needs_rebuild(forged)
    assert _ending(forged)["rebuilt"] is True and _ending(forged)["duration_s"] == _ending(plain)["duration_s"]
    pd.testing.assert_frame_equal(pd.read_parquet(forged / "requests.parquet"),
                                  pd.read_parquet(plain / "requests.parquet"))
