"""`rushhour run` drills a real KServe ModelServer (kserve 0.21.0), not a stub of our own.

The server (`tests/support/kserve_app.py`) runs in its own virtualenv, `.venv/kserve`, which
`make test` builds once; it serves a v2 model "mt" and, where kserve's OpenAI API can load (it
imports vLLM: `kserve[llm]`), an OpenAI chat model "chat" whose tokens come at known times (first
after 200 ms, then one every 20 ms), so the TTFT and TPOT rushhour measures can be checked.
RUSHHOUR_KSERVE_PYTHON names another interpreter with kserve installed (one with kserve[llm],
for the chat tests).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import httpx
import pandas as pd
import pytest
import yaml
from click.testing import CliRunner

from rushhour.kernel.processes import die_with_parent, free_port, stop_process
from rushhour.scenarios.cli.run import run

ROOT = Path(__file__).resolve().parents[3]
APP = ROOT / "tests" / "support" / "kserve_app.py"
KSERVE_PYTHON = Path(os.environ.get("RUSHHOUR_KSERVE_PYTHON") or ROOT / ".venv" / "kserve" / "bin" / "python")
READY_TIMEOUT_S = 90.0
FIRST_TOKEN_MS, TOKEN_EVERY_MS, TOKENS = 200.0, 20.0, 20
SLOS = [{"name": "ttft", "kind": "ttft", "percentile": 90, "threshold_ms": 1000},
        {"name": "tpot", "kind": "tpot", "percentile": 90, "threshold_ms": 100},
        {"name": "goodput", "kind": "goodput", "min_rps": 1.0}]
LATENCY_SLOS = [{"name": "latency", "kind": "latency", "percentile": 90, "threshold_ms": 1000},
                {"name": "goodput", "kind": "goodput", "min_rps": 1.0}]


@pytest.fixture(scope="module")
def kserve_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A KServe ModelServer on a free loopback port, for the whole module; stopped by PID."""
    if not KSERVE_PYTHON.exists():
        pytest.skip(f"needs KServe's own virtualenv at {KSERVE_PYTHON}: make test builds it; an install that "
                    "failed (no package index) leaves it out, and its log is .venv/kserve-install.log.")
    workdir = tmp_path_factory.mktemp("kserve")
    port = free_port()
    log_path = workdir / "kserve.log"
    with log_path.open("wb") as log:
        # -P: the script's folder (tests/support, with modules named redis.py, server.py) stays off sys.path.
        proc = subprocess.Popen([str(KSERVE_PYTHON), "-P", str(APP), str(port)], stdout=log, stderr=subprocess.STDOUT,
                                cwd=workdir, env=_server_env(), preexec_fn=die_with_parent)
    try:
        url = f"http://127.0.0.1:{port}"
        _wait_ready(proc, url, log_path)
        yield url
    finally:
        stop_process(proc, grace_s=10)


def _server_env() -> dict[str, str]:
    """The environment without this venv's Python settings, with KServe's OpenAI prefix fixed."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    return {**env, "KSERVE_OPENAI_ROUTE_PREFIX": "/openai"}


def _wait_ready(proc: subprocess.Popen[bytes], url: str, log_path: Path) -> None:
    """Wait (bounded) until the v2 health endpoint says ready; fail with the log's end if it never does."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if httpx.get(f"{url}/v2/health/ready", timeout=1.0, trust_env=False).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.25)
    tail = log_path.read_text(errors="replace")[-3000:]
    state = f"exited with {proc.returncode}" if proc.poll() is not None else f"not ready in {READY_TIMEOUT_S:.0f} s"
    pytest.fail(f"The KServe ModelServer {state}; the end of its log:\n{tail}")


@pytest.fixture(scope="module")
def chat_url(kserve_url: str) -> str:
    """The OpenAI base URL (rushhour appends /v1/chat/completions), or a skip when "chat" is not served."""
    models = httpx.get(f"{kserve_url}/openai/v1/models", timeout=5.0, trust_env=False)
    if models.status_code != 200 or "chat" not in models.text:
        pytest.skip("KServe's OpenAI endpoints need vLLM (kserve[llm]), which .venv/kserve does not have; set "
                    "RUSHHOUR_KSERVE_PYTHON to a Python with kserve[llm]==0.21.0 to run the chat tests.")
    return f"{kserve_url}/openai"


def _drill(tmp_path: Path, url: str, target: Mapping[str, object], slos: list[dict[str, object]],
           *extra: str) -> tuple[int, str, Path]:
    scenario = {"name": "kserve", "traffic": {"model": "constant:4", "duration": "3s"}, "slos": slos,
                "target": {"url": url, **target}, "load": {"request_timeout_s": 10, "max_lag_p99_ms": 2000}}
    path = tmp_path / "kserve.yaml"
    path.write_text(yaml.safe_dump(scenario))
    out = tmp_path / "results"
    result = CliRunner().invoke(run, [str(path), "--out", str(out), "--no-chaos", *extra])
    return result.exit_code, result.output, out


@pytest.mark.timeout(180)
@pytest.mark.slow
def test_run_drills_a_kserve_v2_model(tmp_path: Path, kserve_url: str) -> None:
    code, output, out = _drill(tmp_path, kserve_url, {"protocol": "kserve-v2", "model": "mt"}, LATENCY_SLOS)
    requests = pd.read_parquet(out / "requests.parquet")
    assert code == 0, output
    assert len(requests) >= 10 and requests["ok"].all(), requests["error"].value_counts()
    assert (requests["via"] == "kserve-v2").all() and (requests["model"] == "mt").all()


@pytest.mark.timeout(180)
@pytest.mark.slow
def test_run_drills_kserve_openai_chat_streaming_with_ttft_and_tpot(tmp_path: Path, chat_url: str) -> None:
    code, output, out = _drill(tmp_path, chat_url, {"protocol": "openai-chat", "model": "chat", "max_tokens": TOKENS},
                               SLOS)
    assert code == 0, output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["verdict"] == "pass" and summary["goodput"]["good"] == summary["requests"]["ok"] > 0
    metrics = summary["streaming"]["metrics"]
    assert FIRST_TOKEN_MS * 0.9 <= metrics["ttft_ms"]["p50"] <= FIRST_TOKEN_MS * 1.1, metrics["ttft_ms"]
    assert TOKEN_EVERY_MS * 0.9 <= metrics["tpot_ms"]["p50"] <= TOKEN_EVERY_MS * 1.1, metrics["tpot_ms"]
    requests = pd.read_parquet(out / "requests.parquet")
    assert requests["ok"].all(), requests["error"].value_counts()
    assert (requests["output_tokens"] == TOKENS).all() and (requests["model"] == "chat").all()


@pytest.mark.timeout(180)
@pytest.mark.slow
def test_run_drills_kserve_openai_chat_without_streaming(tmp_path: Path, chat_url: str) -> None:
    target = {"protocol": "openai-chat", "model": "chat", "max_tokens": TOKENS, "stream": False}
    code, output, out = _drill(tmp_path, chat_url, target, LATENCY_SLOS)
    assert code == 0, output
    requests = pd.read_parquet(out / "requests.parquet")
    assert requests["ok"].all() and (requests["output_tokens"] == TOKENS).all(), requests["error"].value_counts()
    # The whole answer comes when the last token would have: 200 ms + 19 x 20 ms = 580 ms.
    assert 0.9 * 580 <= requests["latency_ms"].median() <= 1.1 * 580, requests["latency_ms"].describe()


@pytest.mark.timeout(120)
@pytest.mark.slow
def test_dry_run_against_a_model_kserve_does_not_have_exits_2_and_says_so(tmp_path: Path, kserve_url: str) -> None:
    target = {"protocol": "kserve-v2", "model": "nope"}
    code, output, _ = _drill(tmp_path, kserve_url, target, LATENCY_SLOS, "--dry-run")
    assert code == 2, output
    assert "/v2/models/nope/infer answered 404" in output and "does not serve this path" in output, output
    assert "nope does not exist" in output, output  # KServe's own words, quoted
