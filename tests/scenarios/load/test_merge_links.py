"""A planted link: merging a run's requests (a killed run's rebuild included) never writes through one."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from rushhour.kernel.atomic import LinkedOutputError
from rushhour.scenarios.load.merge import merge_to_file
from rushhour.traffic_models import generate_schedule, load_traffic_model


def _schedule(tmp_path: Path) -> Path:
    path = tmp_path / "schedule.parquet"
    generate_schedule(load_traffic_model("constant:4"), seed=1, duration_s=2.0).to_parquet(path, index=False)
    return path


def test_merge_refuses_a_linked_requests_file_and_leaves_its_target(tmp_path: Path) -> None:
    victim = tmp_path / "precious.txt"
    victim.write_text("mine\n")
    (tmp_path / "requests.parquet").symlink_to(victim)
    with pytest.raises(LinkedOutputError, match="requests.parquet"):
        merge_to_file(_schedule(tmp_path), [], tmp_path / "requests.parquet")
    assert victim.read_text() == "mine\n"


def test_merge_ignores_a_link_planted_at_the_old_temporary_name(tmp_path: Path) -> None:
    victim = tmp_path / "precious.txt"
    victim.write_text("mine\n")
    (tmp_path / "requests.parquet.tmp").symlink_to(victim)
    rows = merge_to_file(_schedule(tmp_path), [], tmp_path / "requests.parquet")
    assert victim.read_text() == "mine\n" and len(pd.read_parquet(tmp_path / "requests.parquet")) == rows > 0
