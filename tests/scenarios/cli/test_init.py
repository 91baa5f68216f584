"""`rushhour init`: it identifies what a service speaks, writes a scenario that `rushhour run
--dry-run` accepts, falls back to an `http` template, and never overwrites a file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from rushhour.scenarios.cli.init import init
from rushhour.scenarios.cli.run import run
from rushhour.scenarios.spec.model import load_scenario
from tests.support.server import RunningServer, start_server
from tests.support.stub import Answer, stub_server
from tests.support.targets import StreamPlan, serve_target

KSERVE_ROUTES: dict[str, Answer] = {
    "/v2/models": (200, {}, {"models": ["translator"]}),
    "/v2/models/translator": (200, {}, {"name": "translator", "inputs": [
        {"name": "lengths", "datatype": "INT32", "shape": [1]}, {"name": "source", "datatype": "BYTES", "shape": [1]}]}),
    "/v2/models/translator/infer": (200, {}, {"model_name": "translator", "outputs": [
        {"name": "out", "datatype": "BYTES", "shape": [1], "data": ["olleh"]}]}),
}


def _init(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(init, list(args))
    return result.exit_code, result.output


def _dry_run(path: Path) -> tuple[int, str]:
    result = CliRunner().invoke(run, [str(path), "--dry-run"])
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    server = start_server(tmp_path_factory.mktemp("reference"))
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.slow
def test_init_reference_server_openai_endpoint_lists_models_and_streams(tmp_path: Path,
                                                                        reference: RunningServer) -> None:
    out = tmp_path / "chat.yaml"
    code, output = _init("--target", reference.url, "--protocol", "openai-chat", "--out", str(out))
    assert code == 0, output
    target = load_scenario(out).target
    assert (target.protocol, target.url, target.stream) == ("openai-chat", reference.url, True)
    assert target.model in {"quality", "fast"} and "lists models" in output
    assert f"rushhour run {out}" in output
    assert [s.kind for s in load_scenario(out).slos] == ["ttft", "tpot", "availability"]
    code, output = _dry_run(out)
    assert code == 0 and "openai-chat" in output, output


@pytest.mark.slow
def test_init_reference_server_without_protocol_names_both_and_uses_rushhour(tmp_path: Path,
                                                                             reference: RunningServer) -> None:
    out = tmp_path / "ref.yaml"
    code, output = _init("--target", reference.url, "--out", str(out))
    assert code == 0, output
    assert "it speaks rushhour, openai-chat" in output
    assert load_scenario(out).target.protocol == "rushhour"
    assert load_scenario(out).chaos == []


@pytest.mark.slow
def test_init_kserve_v2_stub_finds_model_and_bytes_input(tmp_path: Path) -> None:
    out = tmp_path / "kserve.yaml"
    with stub_server(KSERVE_ROUTES) as (url, asked):
        code, output = _init("--target", url, "--out", str(out))
        assert code == 0, output
        target = load_scenario(out).target
        assert (target.protocol, target.model, target.input_name) == ("kserve-v2", "translator", "source")
        assert "/v2/models/translator/infer" in asked
        code, output = _dry_run(out)
    assert code == 0, output


PLAIN_CHAT: dict[str, Answer] = {"/v1/chat/completions": (200, {}, {"id": "c", "object": "chat.completion", "model": "mine", "choices": [
    {"index": 0, "message": {"role": "assistant", "content": "hallo"}, "finish_reason": "stop"}],
    "usage": {"completion_tokens": 1}})}


@pytest.mark.slow
def test_init_openai_service_that_does_not_stream_switches_streaming_off(tmp_path: Path) -> None:
    out = tmp_path / "plain.yaml"
    with stub_server(PLAIN_CHAT) as (url, asked):
        code, output = _init("--target", url, "--protocol", "openai-chat", "--model", "mine", "--out", str(out))
    assert code == 0, output
    assert asked.count("/v1/chat/completions") == 2  # streamed first, then plain
    target = load_scenario(out).target
    assert (target.model, target.stream) == ("mine", False)
    assert [s.kind for s in load_scenario(out).slos] == ["latency", "availability"]


@pytest.mark.slow
def test_init_streaming_openai_service_without_model_list_uses_the_named_model(tmp_path: Path) -> None:
    out = tmp_path / "stream.yaml"
    with serve_target() as (url, state):
        state.plan = StreamPlan(tokens=4, first_s=0.05, every_s=0.01, stall_at=None)
        code, output = _init("--target", url, "--model", "mine", "--out", str(out))
        assert code == 0, output
        chat = [body for body in state.bodies if "messages" in body]
        assert chat and chat[0]["model"] == "mine" and chat[0]["stream"] is True
    target = load_scenario(out).target
    assert (target.protocol, target.model, target.stream) == ("openai-chat", "mine", True)


@pytest.mark.slow
def test_init_unknown_http_service_writes_http_template_that_dry_runs(tmp_path: Path) -> None:
    out = tmp_path / "unknown.yaml"
    with stub_server({"/": (200, {}, {"ok": True})}) as (url, _asked):
        code, output = _init("--target", url, "--out", str(out))
        assert code == 0, output
        assert "could not tell what" in output and "target.http" in output
        scenario = load_scenario(out)
        assert scenario.target.protocol == "http" and scenario.target.http is not None
        assert scenario.target.http.path == "/"
        code, output = _dry_run(out)
    assert code == 0, output


def test_init_refuses_to_overwrite_a_file(tmp_path: Path) -> None:
    out = tmp_path / "mine.yaml"
    out.write_text("keep me\n")
    code, output = _init("--target", "http://127.0.0.1:9", "--out", str(out))
    assert code == 2 and "already exists" in output and str(out) in output
    assert out.read_text() == "keep me\n"


def test_init_refuses_a_target_off_this_machine(tmp_path: Path) -> None:
    code, output = _init("--target", "http://[fd00::1]:8000", "--out", str(tmp_path / "x.yaml"))
    assert code == 2 and "--allow-remote" in output and "fd00::1" in output
    assert not (tmp_path / "x.yaml").exists()


def test_init_says_so_when_nothing_answers(tmp_path: Path) -> None:
    with stub_server({}) as (url, _asked):
        pass  # the port is free again once the stub has stopped
    code, output = _init("--target", url, "--out", str(tmp_path / "x.yaml"))
    assert code == 2 and "nothing answered" in output
    assert not (tmp_path / "x.yaml").exists()


def test_init_scenario_has_the_schema_line_first(tmp_path: Path) -> None:
    out = tmp_path / "s.yaml"
    with stub_server({"/": (200, {}, {"ok": True})}) as (url, _asked):
        code, output = _init("--target", url, "--protocol", "http", "--out", str(out))
    assert code == 0, output
    first = out.read_text().splitlines()[0]
    assert first.startswith("# yaml-language-server: $schema=") and first.endswith("scenario.schema.json")
    assert (tmp_path / first.split("=", 1)[1]).resolve().is_file()
    assert yaml.safe_load(out.read_text())["name"] == "s"


@pytest.mark.slow
def test_init_openai_service_that_lists_no_model_says_what_it_sends(tmp_path: Path) -> None:
    out = tmp_path / "nomodel.yaml"
    with serve_target() as (url, state):
        state.plan = StreamPlan(tokens=3, first_s=0.02, every_s=0.01, stall_at=None)
        code, output = _init("--target", url, "--protocol", "openai-chat", "--out", str(out))
    assert code == 0, output
    assert 'lists no model (GET /v1/models), so the scenario sends "default"' in output
    assert load_scenario(out).target.model == "default"


@pytest.mark.slow
def test_init_with_auth_env_probes_with_the_credential_and_names_the_variable(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_SERVICE_KEY", "sk-init-secret-4242")
    out = tmp_path / "auth.yaml"
    with serve_target() as (url, state):
        state.token = "sk-init-secret-4242"
        state.plan = StreamPlan(tokens=3, first_s=0.02, every_s=0.01, stall_at=None)
        code, output = _init("--target", url, "--protocol", "openai-chat", "--model", "m", "--out", str(out))
        assert code == 2 and "wants a credential" in output and "--auth-env" in output
        assert not out.exists()
        code, output = _init("--target", url, "--protocol", "openai-chat", "--model", "m", "--auth-env",
                             "MY_SERVICE_KEY", "--out", str(out))
    assert code == 0, output
    auth = load_scenario(out).target.auth
    assert auth is not None and auth.env == "MY_SERVICE_KEY"
    assert "sk-init-secret-4242" not in out.read_text() and "sk-init-secret-4242" not in output


def test_init_auth_env_that_is_not_set_exits_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOT_SET_ANYWHERE", raising=False)
    code, output = _init("--target", "http://127.0.0.1:9", "--auth-env", "NOT_SET_ANYWHERE", "--out",
                         str(tmp_path / "x.yaml"))
    assert code == 2 and '"NOT_SET_ANYWHERE" is not set' in output


def test_init_refuses_a_target_with_credentials_without_printing_them(tmp_path: Path) -> None:
    code, output = _init("--target", "http://probe-user:hunter2-secret@127.0.0.1:9", "--out", str(tmp_path / "x.yaml"))
    assert code == 2 and '"http://***@127.0.0.1:9" carries credentials' in output and "--auth-env" in output
    assert "hunter2-secret" not in output and "probe-user" not in output


@pytest.mark.parametrize(("url", "why"), [
    ("http://127.0.0.1:99999", "has port 99999, which is out of range (1 to 65535)"),
    ("http://127.0.0.1:0", "has port 0, which is out of range (1 to 65535)"),
    ("http://127.0.0.1:http", 'has port "http", which is not a number'),
])
def test_init_refuses_a_target_port_that_is_no_port(tmp_path: Path, url: str, why: str) -> None:
    code, output = _init("--target", url, "--out", str(tmp_path / "x.yaml"))
    assert code == 2 and f'--target: "{url}" {why}' in output and "nothing answered" not in output


def test_init_auth_env_that_is_no_variable_name_says_so(tmp_path: Path) -> None:
    code, output = _init("--target", "http://127.0.0.1:9", "--auth-env", "bad var!", "--out", str(tmp_path / "x.yaml"))
    assert code == 2 and '--auth-env: "bad var!" is not a valid variable name' in output


def test_init_with_a_pid_file_writes_a_live_pause_and_kill_of_that_process(tmp_path: Path) -> None:
    out, pid_file = tmp_path / "own.yaml", tmp_path / "service.pid"
    pid_file.write_text("4242\n")
    with stub_server({"/": (200, {}, {"ok": True})}) as (url, _asked):
        code, output = _init("--target", url, "--out", str(out), "--pid-file", str(pid_file))
        assert code == 0, output
        chaos = load_scenario(out).chaos
        assert [(c.name, c.experiment, c.env) for c in chaos] == [
            ("pause", "experiments/service-pause.json", {"PID_FILE": str(pid_file.resolve())}),
            ("kill", "experiments/service-kill.json", {"PID_FILE": str(pid_file.resolve())})]
        assert chaos[0].hold == "5m"
        code, output = _dry_run(out)
    assert code == 0, output
    assert "service-pause.json" in output and "service-kill.json" in output


def test_init_without_a_pid_file_comments_the_chaos_section_out_and_it_loads_uncommented(tmp_path: Path) -> None:
    out = tmp_path / "own.yaml"
    with stub_server({"/": (200, {}, {"ok": True})}) as (url, _asked):
        code, output = _init("--target", url, "--out", str(out))
    assert code == 0, output
    assert load_scenario(out).chaos == []
    text = out.read_text()
    assert "# chaos:" in text and "experiments/kubernetes/workload-pod-kill.json" in text
    head, _, tail = text.partition("# chaos:")
    live = tmp_path / "live.yaml"
    live.write_text(head + "chaos:" + "\n".join(line.removeprefix("# ") for line in tail.splitlines()) + "\n")
    assert [c.env for c in load_scenario(live).chaos] == [{"PID_FILE": "/run/my-service.pid"}] * 2


def test_init_refuses_a_pid_file_that_is_not_there(tmp_path: Path) -> None:
    code, output = _init("--target", "http://127.0.0.1:9", "--out", str(tmp_path / "x.yaml"),
                         "--pid-file", str(tmp_path / "missing.pid"))
    assert code == 2 and "--pid-file" in output and "missing.pid" in output and "is not a file" in output
