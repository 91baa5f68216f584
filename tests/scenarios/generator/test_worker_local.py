"""A remote worker decides for itself what it loads and with which credential: the master's
`auth.file`, CA bundle and a remote host are not taken on the master's word."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from rushhour.scenarios.generator.settings import SettingsError
from rushhour.scenarios.generator.worker_local import WorkerLocal, remote_target
from rushhour.scenarios.generator.worker_relay import WorkerRelay

MASTERS_TARGET = {"protocol": "rushhour", "headers": {"X-Team": "a"},
                  "auth": {"scheme": "bearer", "file": "/etc/shadow", "env": None, "header": None},
                  "ca_bundle": "/master/only/ca.pem"}


def test_remote_target_drops_what_names_a_local_file_or_credential() -> None:
    assert remote_target(MASTERS_TARGET) == {"protocol": "rushhour", "headers": {"X-Team": "a"}}
    assert remote_target(None) is None


def test_worker_local_fires_with_its_own_credential_never_the_masters() -> None:
    own = {"scheme": "bearer", "env": "MY_TOKEN", "file": None, "header": None}
    assert WorkerLocal(auth=own).target(MASTERS_TARGET)["auth"] == own
    assert "auth" not in WorkerLocal().target(MASTERS_TARGET) and "ca_bundle" not in WorkerLocal().target(MASTERS_TARGET)


def test_worker_local_guard_refuses_a_remote_host_unless_allowed() -> None:
    assert WorkerLocal().refusal("http://127.0.0.1:8000") is None
    assert "not on this worker's machine" in str(WorkerLocal().refusal("http://[2001:db8::9]:8000"))
    assert WorkerLocal(allowed_hosts=("2001:db8::9",)).refusal("http://[2001:db8::9]:8000") is None
    assert WorkerLocal(allow_remote=True).refusal("https://api.example.com") is None
    why = str(WorkerLocal(allow_remote=True).refusal("http://u:pw-123@127.0.0.1:8000"))
    assert "credentials" in why and "pw-123" not in why


def test_worker_local_round_trips_through_its_environment_variable() -> None:
    local = WorkerLocal(allow_remote=True, allowed_hosts=("fd77::1",), ca_bundle="/here/ca.pem")
    assert WorkerLocal.from_env({"RUSHHOUR_WORKER_LOCAL": local.to_env()}) == local
    assert WorkerLocal.from_env({}) == WorkerLocal()


MASTERS_SETTINGS: dict[str, Any] = {"host": "http://127.0.0.1:8000", "schedule_path": "/master/schedule.parquet",
                                    "work_dir": "/master/load", "duration_s": 1.0, "remote_workers": 1,
                                    "languages": ["en-de"], "timeout_margin_s": 1.0, "target": MASTERS_TARGET}


def test_worker_relay_builds_its_settings_from_the_masters_message_without_its_files(tmp_path: Path) -> None:
    schedule = tmp_path / "s.parquet"
    pd.DataFrame({"offset_s": [0.0]}).to_parquet(schedule)
    relay = WorkerRelay(runner=None, work_dir=tmp_path, name="w", local=WorkerLocal())
    built = relay._local_settings({"config": MASTERS_SETTINGS, "schedule": schedule.read_bytes()})
    assert built.target is not None and built.target.headers == {"X-Team": "a"}
    assert built.target.auth is None and built.target.ca_bundle is None
    assert all(p.is_relative_to(tmp_path) for p in (built.schedule_path, built.parts_dir, built.control_dir))
    assert built.schedule_path.read_bytes() == schedule.read_bytes() and built.control_dir.is_dir()


def test_worker_relay_refuses_malformed_settings_naming_the_field(tmp_path: Path) -> None:
    relay = WorkerRelay(runner=None, work_dir=tmp_path, name="w", local=WorkerLocal())
    with pytest.raises(SettingsError, match=r"the master's load settings: timeout_margin_s: must be >= 0"):
        relay._local_settings({"config": {**MASTERS_SETTINGS, "timeout_margin_s": -1.0}, "schedule": b""})


def test_worker_local_refuses_a_schedule_whose_rows_name_a_remote_target(tmp_path: Path) -> None:
    plain, rows = tmp_path / "plain.parquet", tmp_path / "rows.parquet"
    pd.DataFrame({"offset_s": [0.0]}).to_parquet(plain)
    pd.DataFrame({"offset_s": [0.0, 1.0], "base_url": ["http://127.0.0.1:1", "http://[2001:db8::9]:1"]}).to_parquet(rows)
    assert WorkerLocal().schedule_refusal(str(plain)) is None
    assert "2001:db8::9" in str(WorkerLocal().schedule_refusal(str(rows)))
    assert WorkerLocal(allowed_hosts=("2001:db8::9",)).schedule_refusal(str(rows)) is None


def test_worker_local_sends_its_credential_only_to_a_host_it_pinned_not_one_the_master_chose() -> None:
    own = {"scheme": "bearer", "env": "MY_TOKEN", "file": None, "header": None}
    why = str(WorkerLocal(auth=own, allow_remote=True).refusal("https://collector.example.net"))
    assert "the master's choice" in why and "--allow-target" in why
    assert WorkerLocal(auth=own, pinned_hosts=("api.example.com",)).refusal("https://api.example.com") is None
    assert WorkerLocal(auth=own, allowed_hosts=("fd77::1",)).refusal("http://[fd77::1]:80") is None
    assert WorkerLocal(auth=own).refusal("http://127.0.0.1:8000") is None
    assert WorkerLocal(allow_remote=True).refusal("https://collector.example.net") is None, "no credential, no pin needed"


@pytest.mark.parametrize("host", ["http://169.254.169.254:80", "http://[fe80::1]:80", "http://metadata.google.internal"])
def test_worker_refuses_a_metadata_target_even_under_allow_remote(host: str) -> None:
    refusal = WorkerLocal(allow_remote=True).refusal(host)
    assert refusal is not None and "never contacts" in refusal
