"""`rushhour run` drills an OpenAI-compatible streaming service end to end: TTFT/TPOT/goodput report,
and a kserve-v2 and an https target (verified against a CA bundle) through the same load path."""

from __future__ import annotations

import json
import ssl
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml
from click.testing import CliRunner

from rushhour.scenarios.cli.run import run
from tests.support.targets import StreamPlan, serve_target

SLOS = [{"name": "ttft", "kind": "ttft", "percentile": 90, "threshold_ms": 1000},
        {"name": "tpot", "kind": "tpot", "percentile": 90, "threshold_ms": 100},
        {"name": "goodput", "kind": "goodput", "min_rps": 1.0}]


def _drill(tmp_path: Path, url: str, target: dict[str, object], *extra: str,
           load: dict[str, object] | None = None) -> tuple[int, str, Path]:
    scenario = {"name": "own", "traffic": {"model": "constant:4", "duration": "3s"}, "slos": SLOS,
                "target": {"url": url, **target}, "load": {"request_timeout_s": 10, **(load or {})}}
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "own.yaml"
    path.write_text(yaml.safe_dump(scenario))
    out = tmp_path / "results"
    result = CliRunner().invoke(run, [str(path), "--out", str(out), *extra])
    return result.exit_code, result.output, out


@pytest.mark.timeout(180)
@pytest.mark.slow
def test_run_drills_a_streaming_openai_service_with_ttft_tpot_and_goodput(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OWN_SERVICE_KEY", "sk-own-service-secret-4242")
    with serve_target() as (url, state):
        state.token = "sk-own-service-secret-4242"
        state.plan = StreamPlan(tokens=20, first_s=0.2, every_s=0.02, stall_at=None)
        code, output, out = _drill(tmp_path, url, {"protocol": "openai-chat", "model": "own",
                                                   "auth": {"env": "OWN_SERVICE_KEY"}, "max_tokens": 20})
    assert code == 0, output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["verdict"] == "pass" and summary["goodput"]["good"] == summary["requests"]["ok"] > 0
    ttft = summary["streaming"]["metrics"]["ttft_ms"]
    assert 180 <= ttft["p50"] <= 260, ttft
    assert 18 <= summary["streaming"]["metrics"]["tpot_ms"]["p50"] <= 24
    assert "TTFT and TPOT over time" in (out / "report.html").read_text()
    for name in ("scenario.yaml", "summary.json", "report.html", "report.md", "events.jsonl", "junit.xml"):
        assert "sk-own-service-secret" not in (out / name).read_text(), name
    assert all(seen == "Bearer sk-own-service-secret-4242" for seen in state.seen_auth)


@pytest.mark.timeout(180)
@pytest.mark.slow
def test_run_drills_a_kserve_v2_target_over_https_with_a_ca_bundle(tmp_path: Path) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True, timeout=60)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    with serve_target(tls=tls) as (url, state):
        _, output, out = _drill(tmp_path, url, {"protocol": "kserve-v2", "model": "mt", "ca_bundle": str(cert)},
                                   "--no-chaos")
        unverified, refused, _ = _drill(tmp_path / "no-ca", url, {"protocol": "kserve-v2", "model": "mt"}, "--dry-run")
    requests = pd.read_parquet(out / "requests.parquet")
    assert requests["ok"].all() and (requests["via"] == "kserve-v2").all(), output
    assert state.bodies and state.bodies[-1]["inputs"][0]["datatype"] == "BYTES"
    assert unverified == 2 and "CERTIFICATE_VERIFY_FAILED" in refused


@pytest.mark.timeout(300)
@pytest.mark.slow
def test_run_drills_the_reference_server_through_its_openai_endpoint(tmp_path: Path) -> None:
    scenario = {"name": "ref-chat", "traffic": {"model": "constant:3", "duration": "3s"}, "slos": SLOS[:1],
                "target": {"embedded": {"nodes": 1}, "protocol": "openai-chat", "model": "fast", "max_tokens": 16}}
    path = tmp_path / "ref.yaml"
    path.write_text(yaml.safe_dump(scenario))
    out = tmp_path / "results"
    result = CliRunner().invoke(run, [str(path), "--out", str(out), "--no-chaos"])
    summary = json.loads((out / "summary.json").read_text())
    requests = pd.read_parquet(out / "requests.parquet")
    assert requests["ok"].mean() > 0.9, (result.output, requests["error"].value_counts())
    assert summary["streaming"]["metrics"]["ttft_ms"]["samples"] > 0
    assert (requests.loc[requests["ok"], "output_tokens"] > 0).all()


@pytest.mark.timeout(180)
@pytest.mark.slow
def test_closed_loop_personas_speak_the_targets_protocol_and_time_its_tokens(tmp_path: Path) -> None:
    with serve_target() as (url, state):
        state.plan = StreamPlan(tokens=10, first_s=0.2, every_s=0.02, stall_at=None)
        code, output, out = _drill(tmp_path, url, {"protocol": "openai-chat", "model": "own", "max_tokens": 10,
                                                   "row_headers": {"X-Tenant": "tenant"}},
                                   load={"mode": "closed", "max_lag_p99_ms": 5000})  # personas pace: rows go late
    assert code == 0, output
    scheduled = pd.read_parquet(out / "requests.parquet")
    requests = scheduled.dropna(subset=["sent_s"])  # the closed loop may leave the last row or two unsent
    assert len(requests) >= len(scheduled) - 2 and requests["ok"].all(), scheduled["error"].value_counts()
    assert (requests["via"] == "openai-chat").all() and (requests["output_tokens"] == 10).all()
    late_ms = (requests["sent_s"] - requests["intended_s"]) * 1000.0
    assert (requests["ttft_ms"] - late_ms).median() == pytest.approx(200, rel=0.15)  # the server's 200 ms, once sent
    assert (requests["ttft_ms"] >= late_ms + 190).all()  # and every TTFT counts from the intended send
    assert all(body["messages"] and body["user"] for body in state.bodies)  # chat bodies, the tenant as `user`
