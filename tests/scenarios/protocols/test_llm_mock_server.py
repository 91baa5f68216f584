"""`rushhour run` drills an OpenAI-compatible streaming server that is not ours: llm-mock-api (PyPI,
a Python port of llm-mock-server), whose chunks come at a set interval.

Started as its users start it (`llm-mock-api start -l MS -c CHARS -f TEXT`): a role chunk at once,
then TEXT in CHARS-sized pieces, MS apart, then a finish chunk and its usage (it reports 5
completion tokens whatever it sends). So the truth is: first content MS after the request, every
inter-token gap MS, TPOT = (pieces - 1) x MS / (5 - 1) from the tokens the server says it sent.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
import yaml
from click.testing import CliRunner

from rushhour.kernel.processes import die_with_parent, free_port, stop_process
from rushhour.scenarios.cli.run import run
from tests.support.waiting import wait_for_http

MOCK = Path(sys.executable).parent / "llm-mock-api"
# 10 pieces, 100 ms apart: long beside the few ms a busy machine adds to each of the server's
# sleeps and the client's reads, so a gap 10% off is the harness's error, not the machine's
EVERY_MS, PIECE_CHARS, TEXT = 100, 4, "0123456789abcdefghijklmnopqrstuvwxyzABCD"
REPORTED_TOKENS = 5
PIECES = len(TEXT) // PIECE_CHARS


@pytest.fixture(scope="module")
def mock_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if not MOCK.exists():
        pytest.skip(f"needs llm-mock-api ({MOCK} is missing): make test installs it with the test extra.")
    port = free_port()
    work = tmp_path_factory.mktemp("llm-mock")  # it looks for ./config.json: none here
    proc = subprocess.Popen([str(MOCK), "start", "-p", str(port), "-H", "127.0.0.1", "-l", str(EVERY_MS),
                             "-c", str(PIECE_CHARS), "-f", TEXT], cwd=work, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, preexec_fn=die_with_parent)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_http(f"{url}/v1/models", timeout_s=30.0, proc=proc)
        yield url
    finally:
        stop_process(proc, grace_s=5.0)


def _drill(tmp_path: Path, url: str, **target: object) -> tuple[int, str, pd.DataFrame]:
    scenario = {"name": "mock", "traffic": {"model": "constant:4", "duration": "3s"},
                "target": {"url": url, "protocol": "openai-chat", "model": "m", **target},
                "slos": [{"name": "latency", "kind": "latency", "percentile": 90, "threshold_ms": 2000}],
                "load": {"request_timeout_s": 10}}
    path = tmp_path / "mock.yaml"
    path.write_text(yaml.safe_dump(scenario))
    result = CliRunner().invoke(run, [str(path), "--out", str(tmp_path / "out"), "--no-chaos"])
    return result.exit_code, result.output, pd.read_parquet(tmp_path / "out" / "requests.parquet")


@pytest.mark.timeout(180)
@pytest.mark.slow
@pytest.mark.xdist_group("cpu-a")
def test_run_times_the_tokens_of_a_third_party_streaming_server(tmp_path: Path, mock_url: str) -> None:
    code, output, requests = _drill(tmp_path, mock_url)
    assert code == 0, output
    assert len(requests) >= 10 and requests["ok"].all(), requests["error"].value_counts()
    assert (requests["output_tokens"] == REPORTED_TOKENS).all()  # the server's own usage figure
    assert requests["itl_p50_ms"].median() == pytest.approx(EVERY_MS, rel=0.10)
    assert EVERY_MS <= requests["ttft_ms"].median() <= EVERY_MS + 25  # one gap after the role chunk
    tpot = (PIECES - 1) * EVERY_MS / (REPORTED_TOKENS - 1)
    assert requests["tpot_ms"].median() == pytest.approx(tpot, rel=0.10)


@pytest.mark.timeout(180)
@pytest.mark.slow
@pytest.mark.xdist_group("cpu-a")
def test_run_reads_a_third_party_servers_whole_answer_without_streaming(tmp_path: Path, mock_url: str) -> None:
    code, output, requests = _drill(tmp_path, mock_url, stream=False)
    assert code == 0, output
    assert requests["ok"].all() and (requests["output_tokens"] == REPORTED_TOKENS).all(), requests["error"].value_counts()
    assert requests["ttft_ms"].isna().all()  # nothing streamed, nothing to time per token
