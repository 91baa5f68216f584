"""`rushhour run --protocol`: notes at planning time, the probe at --dry-run, exit 2 on a misfit."""

from __future__ import annotations

from pathlib import Path

import pytest

from rushhour.scenarios.cli.run import run
from tests.support.cli import invoke, scenario_file
from tests.support.targets import StreamPlan, serve_target


def test_dry_run_probes_an_openai_target_and_notes_unsent_fields(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLI_TEST_KEY", "sk-test-abcdefgh-9876")
    target = {"url": "http://127.0.0.1:1", "protocol": "openai-chat", "model": "m", "auth": {"env": "CLI_TEST_KEY"}}
    with serve_target() as (url, state):
        state.plan = StreamPlan(tokens=3, first_s=0.02, every_s=0.01, stall_at=None)
        code, output = invoke(run, str(scenario_file(tmp_path, target=target)), "--target", url, "--dry-run")
    assert code == 0, output
    assert "protocol   openai-chat, model m, streaming" in output and "(****9876)" in output
    assert "sk-test-abcdefgh" not in output
    assert "does not send priority, mode, deadline_ms" in output
    assert "probe      openai-chat: /v1/chat/completions answered 200" in output and "3 token(s)" in output


def test_dry_run_exits_2_when_the_target_speaks_another_protocol(tmp_path: Path) -> None:
    with serve_target() as (url, _state):
        code, output = invoke(run, str(scenario_file(tmp_path)), "--target", url, "--protocol", "rushhour", "--dry-run")
    assert code == 2 and "capability probe failed" in output and "/v1/translate answered 404" in output


def test_jobs_on_openai_chat_are_refused_up_front_or_switched_off(tmp_path: Path) -> None:
    target = {"url": "http://127.0.0.1:9", "protocol": "openai-chat"}
    load = {"documents_via_jobs": True}
    code, output = invoke(run, str(scenario_file(tmp_path, target=target, load=load)), "--dry-run", "--no-probe")
    assert code == 2 and 'protocol "openai-chat" has no such API' in output and "unsupported: warn" in output
    code, output = invoke(run, str(scenario_file(tmp_path, target={**target, "unsupported": "warn"}, load=load)),
                           "--dry-run", "--no-probe")
    assert code == 0 and "switched off, documents are sent like every other request" in output


def test_a_credential_header_in_the_scenario_is_refused(tmp_path: Path) -> None:
    target = {"url": "http://127.0.0.1:9", "protocol": "openai-chat", "headers": {"Authorization": "Bearer x"}}
    code, output = invoke(run, str(scenario_file(tmp_path, target=target)), "--dry-run", "--no-probe")
    assert code == 2 and "use auth (env or file)" in output
