"""A conversation whose turns, carried together, pass the text cap is refused before its text is built."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa  # type: ignore[import-untyped]
import pytest

from rushhour.scenarios.generator.openloop import worker_share
from rushhour.traffic_models import generate_schedule, load_traffic_model, text_for
from rushhour.traffic_models.limits import MAX_REQUEST_CHARS
from tests.scenarios.generator.truth import share_of


def test_a_conversation_past_the_cap_is_refused_before_its_text_is_built(tmp_path: Path,
                                                                         write_model: Callable[..., Path]) -> None:
    text = "duration: 4\nbase_rps: 1\nsessions: {turns_min: 3, turns_max: 3, think: 0.4s, think_distribution: constant}\n"
    schedule = generate_schedule(load_traffic_model(write_model(text)), seed=4)
    schedule["chars"] = MAX_REQUEST_CHARS // 2  # each turn within the cap, three of them past it
    plan = share_of(worker_share(pa.Table.from_pandas(schedule, preserve_index=False), 0, 1).to_pandas(),
                    text_for=text_for)
    first, second, third = plan.sessions[int(plan.columns.session[0])]
    began = time.monotonic()
    with pytest.raises(ValueError, match=r"turn 3 of its conversation would carry .* past the 8,000,000"):
        plan.payload(third)
    assert time.monotonic() - began < 2.0
