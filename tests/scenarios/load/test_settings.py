"""The load settings a worker receives are serialised once and validated on arrival."""

from __future__ import annotations

import json

import pytest

from scenarios.load.worker import ENV_CONFIG, WorkerConfig

CONFIG = WorkerConfig(schedule="s.parquet", parts_dir="p", control_dir="c", workers=2, languages=("en-de", "en-fr"),
                      timeout_margin_s=1.5, request_timeout_s=None, documents_via_jobs=True,
                      target={"protocol": "openai-chat", "model": "m"})


def test_worker_config_arrives_as_it_was_sent() -> None:
    assert WorkerConfig.from_env({ENV_CONFIG: CONFIG.to_env()}) == CONFIG


@pytest.mark.parametrize("change, field", [
    ({"workers": "two"}, "workers"), ({"languages": 3}, "languages"), ({"surprise": 1}, "surprise"),
])
def test_worker_config_refuses_settings_it_cannot_read(change: dict[str, object], field: str) -> None:
    raw = json.dumps({**json.loads(CONFIG.to_env()), **change})
    with pytest.raises(RuntimeError, match=f"{ENV_CONFIG} .*: {field}"):
        WorkerConfig.from_env({ENV_CONFIG: raw})
