"""State files written through kernel/atomic: a link planted at a predictable name writes nothing through it.

Each test is the attack: a local user who can write the state or control folder plants a symbolic
link, at a predictable temporary name (`<key>.<pid>.tmp`, `<key>.tmp`, `.<name>.tmp`,
`start.tmp`), pointing at a file of the victim's; a writer that wrote through such a name would
overwrite the victim's file with the cache record or marker. Each writer creates its
temporary file exclusively under a random name and never follows a link, so the victim's file is
untouched and the state file holds what the writer meant (the verdict the cache feeds is unchanged).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from rushhour.kernel.atomic import LinkedOutputError, write_text_atomic
from rushhour.scenarios.capacity import calibrate
from rushhour.scenarios.generator import master_relay
from rushhour.scenarios.generator.share_run import START_FILE, publish_start
from rushhour.scenarios.run import overhead
from tests.support.planted import VICTIM_TEXT, plant, victim_file


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RUSHHOUR_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


def test_the_overhead_cache_never_writes_through_its_old_temporary_name(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: `<key>.<pid>.tmp` was opened with write_text, following a link planted there."""
    victim = victim_file(tmp_path)
    key, _ = overhead.overhead_key("rushhour", False)
    path = overhead.cache_dir() / f"{key}.json"
    plant(path.with_suffix(f".{os.getpid()}.tmp"), victim)
    fresh = {"steps": [{"rate_rps": 50.0, "latency_ms": {"p99": 1.0}}], "max_valid_rps_per_process": 50.0}
    monkeypatch.setattr(overhead, "measure_overhead", lambda *a, **k: dict(fresh))
    record = overhead.cached_or_measured(None, target=None, lag_limit_ms=10.0,  # type: ignore[arg-type]
                                         languages=("en-de",), say=lambda line: None)
    assert victim.read_text(encoding="utf-8") == VICTIM_TEXT
    assert not path.is_symlink() and json.loads(path.read_text())["steps"] == fresh["steps"]
    assert record["max_valid_rps_per_process"] == 50.0 and record["cached"] is False


def test_the_overhead_cache_refuses_a_link_planted_at_the_cache_file_itself(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    victim = victim_file(tmp_path)
    key, _ = overhead.overhead_key("rushhour", False)
    plant(overhead.cache_dir() / f"{key}.json", victim)
    monkeypatch.setattr(overhead, "measure_overhead", lambda *a, **k: {"steps": []})
    with pytest.raises(LinkedOutputError, match="is a symbolic link"):
        overhead.cached_or_measured(None, target=None, lag_limit_ms=10.0,  # type: ignore[arg-type]
                                    languages=("en-de",), say=lambda line: None)
    assert victim.read_text(encoding="utf-8") == VICTIM_TEXT


def _job(tmp_path: Path) -> Any:
    """The fields `remember` reads of a calibration job, with one SLO the scenario also has."""
    slo = SimpleNamespace(name="p99")
    scenario = SimpleNamespace(name="cal", slos=[slo])
    return SimpleNamespace(scenario=scenario, slos=[slo], source="cal.yaml", base_dir=tmp_path, target_url=None,
                           out_dir=tmp_path / "out", rules=SimpleNamespace(met_error=0.05))


def test_the_calibration_cache_never_writes_through_its_old_temporary_name(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: `<key>.tmp` (a fixed name) was opened with write_text, following a planted link."""
    victim = victim_file(tmp_path)
    monkeypatch.setattr(calibrate, "calibration_key", lambda *a, **k: ("k" * 16, {"what": "stand-in"}))
    monkeypatch.setattr(calibrate, "_target_name", lambda *a, **k: "embedded")
    plant(calibrate.cache_dir() / f"{'k' * 16}.tmp", victim)
    entry = {"condition": "none", "capacity_rps": 42.0, "bracket": [42.0, 50.0], "summary": "s",
             "generator_bound": False, "ceiling": False, "confirmed": True}
    written = calibrate.remember(_job(tmp_path), {"conditions": [entry]})
    assert victim.read_text(encoding="utf-8") == VICTIM_TEXT
    assert [p.name for p in written] == [f"{'k' * 16}.json"]
    assert not written[0].is_symlink() and json.loads(written[0].read_text())["capacity_rps"] == 42.0


def test_the_start_file_never_writes_through_its_old_temporary_name(tmp_path: Path) -> None:
    """Before: the runner wrote `start.tmp` in the control folder with write_text."""
    victim, control = victim_file(tmp_path), tmp_path / "control"
    plant(control / f"{START_FILE}.tmp", victim)
    publish_start(control, 1234.5)
    assert victim.read_text(encoding="utf-8") == VICTIM_TEXT
    assert float((control / START_FILE).read_text(encoding="utf-8")) == 1234.5


def test_the_master_relays_markers_and_parts_never_write_through_their_old_temporary_names(tmp_path: Path) -> None:
    """Before: the master relay wrote `.<name>.tmp` beside each marker and relayed part."""
    victim, control, parts = victim_file(tmp_path), tmp_path / "control", tmp_path / "parts"
    plant(control / ".ready-0.tmp", victim)
    plant(parts / ".part-w000-00001.parquet.tmp", tmp_path / "victim.txt")
    relay = object.__new__(master_relay.MasterRelay)
    relay._control, relay._parts = control, parts  # the two folders the writers use
    relay._mark("ready-0", "17")
    master_relay.write_bytes_atomic(b"PAR1", parts / "part-w000-00001.parquet", sync=False)
    assert victim.read_text(encoding="utf-8") == VICTIM_TEXT
    assert (control / "ready-0").read_text(encoding="utf-8") == "17"
    assert (parts / "part-w000-00001.parquet").read_bytes() == b"PAR1"


def test_an_unsynced_write_is_still_whole_exclusive_and_never_through_a_link(tmp_path: Path) -> None:
    victim = victim_file(tmp_path)
    write_text_atomic("marker", tmp_path / "done-0", sync=False)
    assert (tmp_path / "done-0").read_text(encoding="utf-8") == "marker"
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
    (tmp_path / "done-1").symlink_to(victim)
    with pytest.raises(LinkedOutputError, match=r'"done-1".*symbolic link|done-1.*is a symbolic link'):
        write_text_atomic("marker", tmp_path / "done-1", sync=False)
    assert victim.read_text(encoding="utf-8") == VICTIM_TEXT
