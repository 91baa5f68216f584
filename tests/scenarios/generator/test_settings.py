"""The load settings are built once, serialised once and validated where they arrive."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

import pandas as pd
import pytest

from rushhour.scenarios.generator.settings import ENV_SETTINGS, LoadSettings, SettingsError
from rushhour.scenarios.spec.model import LoadSpec
from rushhour.scenarios.spec.target import TargetProtocol

SETTINGS = LoadSettings(host="http://127.0.0.1:8000", schedule_path=Path("/r/schedule.parquet"),
                        work_dir=Path("/r/load"), duration_s=30.0, processes=2, languages=("en-de", "en-fr"),
                        timeout_margin_s=1.5, documents_via_jobs=True, master_bind=("127.0.0.1", 6000),
                        target=TargetProtocol(protocol="openai-chat", model="m", headers={"X-Team": "a"}))
SCHEDULE = pd.DataFrame({"offset_s": [0.0, 1.0], "deadline_ms": [2000.0, 8000.0]})


def test_load_settings_arrive_as_they_were_sent() -> None:
    assert LoadSettings.from_env({ENV_SETTINGS: SETTINGS.to_env()}) == SETTINGS
    assert LoadSettings.arrive(json.loads(json.dumps(SETTINGS.to_wire())), source="a message") == SETTINGS


@pytest.mark.parametrize("change, field", [
    ({"processes": "two"}, "processes"), ({"languages": 3}, "languages"), ({"surprise": 1}, "surprise"),
    ({"timeout_margin_s": -1}, "timeout_margin_s"), ({"mode": "sideways"}, "mode"),
    ({"target": {"protocol": "kserve-v2"}}, "target"), ({"work_dir": None}, "work_dir"),
])
def test_load_settings_refuse_a_payload_they_cannot_read_naming_the_field(change: dict[str, object], field: str) -> None:
    raw = json.dumps({**json.loads(SETTINGS.to_env()), **change})
    with pytest.raises(SettingsError, match=f"^{ENV_SETTINGS} .*: {field}"):
        LoadSettings.from_env({ENV_SETTINGS: raw})


def test_load_settings_missing_from_the_environment_say_how_to_run() -> None:
    with pytest.raises(SettingsError, match="rushhour run"):
        LoadSettings.from_env({})


def test_load_settings_from_the_scenario_derive_the_longest_wait_and_the_folders(tmp_path: Path) -> None:
    load = LoadSpec(processes=3, timeout_margin_s=2.0, languages=("en-es",), documents_via_jobs=True)
    built = LoadSettings.from_spec(load, SCHEDULE, host="http://127.0.0.1:1", schedule_path=Path("s.parquet"),
                                   work_dir=tmp_path / "load", duration_s=10.0, target=None)
    assert (built.processes, built.workers, built.languages, built.max_timeout_s) == (3, 3, ("en-es",), 10.0)
    assert built.schedule_path.is_absolute() and built.control_dir == tmp_path / "load" / "control"
    assert built.jobs_in_use and built.via_name == "translate"
    fixed = LoadSettings.from_spec(load.model_copy(update={"request_timeout_s": 4.0}), SCHEDULE, host="",
                                   schedule_path=Path("s"), work_dir=tmp_path, duration_s=1.0, target=None)
    assert fixed.max_timeout_s == 4.0


def test_load_settings_overrides_and_closed_mode_keep_documents_off_the_jobs_api(tmp_path: Path) -> None:
    closed = LoadSpec(mode="closed", documents_via_jobs=True)

    def build(target: TargetProtocol | None = None, *, mode: Literal["open"] | None = None,
              jobs: bool | None = None) -> LoadSettings:
        return LoadSettings.from_spec(closed, SCHEDULE, host="", schedule_path=tmp_path / "s", work_dir=tmp_path,
                                      duration_s=1.0, target=target, mode=mode, documents_via_jobs=jobs)

    assert not build().jobs_in_use and build(mode="open").jobs_in_use
    assert not build(mode="open", jobs=False).jobs_in_use
    chat = build(TargetProtocol(protocol="openai-chat", model="m"))
    assert chat.target is not None and chat.target.model == "m" and chat.via_name == "openai-chat"
