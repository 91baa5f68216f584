"""Ground truth for the streaming metrics: a server that writes tokens at known times.

The first token 500 ms after the request arrived, then one every 100 ms, with one stall of 1 s;
TTFT, the answers' inter-token gaps and TPOT measured through Locust must be within 10% of it.
The times are long next to what a busy two-core machine adds to a read (a few milliseconds, now
and then tens), so the 10% judges the harness's definitions rather than the neighbours.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rushhour.kernel.quantiles import percentile_value
from rushhour.scenarios.generator.settings import LoadSettings
from tests.scenarios.generator.truth import fire
from tests.support.targets import StreamPlan, serve_target

TOLERANCE = 0.10


def _fire(url: str, schedule: pd.DataFrame, work: Path, target: dict[str, object]) -> pd.DataFrame:
    path = work / "schedule.parquet"
    schedule.to_parquet(path, index=False)
    duration = float(schedule["offset_s"].max()) + 1.0
    settings = LoadSettings(host=url, schedule_path=path, work_dir=work / "load", duration_s=duration,
                            request_timeout_s=10.0, max_timeout_s=11.0, target=target)
    return fire(settings, schedule, grace_s=40.0)[0]


@pytest.mark.timeout(120)
@pytest.mark.slow
@pytest.mark.xdist_group("cpu-c")  # token times judged within 10% of a real clock: not beside six workers
def test_streaming_metrics_match_the_server_s_known_token_times(
        tmp_path: Path, make_schedule: Callable[..., pd.DataFrame]) -> None:
    plan = StreamPlan(tokens=20, first_s=0.5, every_s=0.1, stall_at=10, stall_s=1.0)
    schedule = make_schedule(4.0, 4.0).assign(max_tokens=plan.tokens)
    with serve_target() as (url, state):
        state.plan = plan
        requests = _fire(url, schedule, tmp_path, {"protocol": "openai-chat", "model": "truth"})
    assert requests["ok"].all(), requests["error"].value_counts()
    gaps = plan.tokens - 1  # one of them the stall
    truth_tpot_ms = ((gaps - 1) * 100.0 + 1000.0) / gaps
    for column, truth in (("ttft_ms", 500.0), ("itl_p50_ms", 100.0), ("itl_max_ms", 1000.0), ("tpot_ms", truth_tpot_ms)):
        for p in (50, 99):
            measured = percentile_value(requests[column].to_numpy(), p)
            assert abs(measured - truth) <= TOLERANCE * truth, (column, p, measured, truth)
    assert (requests["output_tokens"] == plan.tokens).all() and (requests["max_tokens"] == plan.tokens).all()
    assert (requests["via"] == "openai-chat").all()
    assert np.isnan(requests["first_segment_ms"]).all()
