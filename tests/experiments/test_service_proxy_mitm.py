"""Network faults through a real mitmdump with rushhour's addon, in front of a stand-in service
(tests/support/own_service.py): what a client sees, what reaches the service, and a drill through
the proxy whose report has each network fault's window."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import yaml
from click.testing import CliRunner
from scipy import stats

from rushhour.experiments import leases
from rushhour.experiments.service.proxy import ADDON, add_proxy_fault, fault_path, remove_proxy_fault
from rushhour.kernel.processes import free_port, stop_process
from rushhour.scenarios.cli.init import init
from rushhour.scenarios.cli.run import run
from rushhour.scenarios.run.chaos.process import ChaosProcess
from rushhour.scenarios.run.overhead import SKIP_ENV
from tests.support.targets import StreamPlan, TargetState, serve_target
from tests.support.waiting import wait_for_http

ROOT = Path(__file__).resolve().parents[2]
MITMDUMP = ROOT / ".venv" / "mitmproxy" / "bin" / "mitmdump"
NAME = "drill"  # the addon's --set rushhour_proxy
LEASE_S = 2.0
HOLDER = """
import json, sys
from rushhour.experiments.service.proxy import add_proxy_fault
print(json.dumps(add_proxy_fault("errors", rate=1.0, proxy=sys.argv[1], hold_s=600)), flush=True)
sys.stdin.read()
"""

# In one of make test's CPU lanes: the proxy boots once, and its latency and drill tests run on that lane's worker.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("cpu-b")]


@dataclass(frozen=True)
class Proxied:
    via: str  # the proxy, as the drill loads it
    service: str  # the stand-in service behind it
    lease_dir: Path


def _mitmdump(work: Path, upstream: str, lease_dir: Path) -> tuple[subprocess.Popen[bytes], str]:
    """A mitmdump with rushhour's addon in front of `upstream`, answering; its URL."""
    if not MITMDUMP.exists():
        pytest.skip(f"mitmproxy is not installed in {MITMDUMP.parent.parent}: `make mitmproxy` builds it there "
                    "(it needs the package index).")
    listen = free_port()
    with (work / "mitmdump.log").open("wb") as log:
        proxy = subprocess.Popen(
            [str(MITMDUMP), "-q", "--mode", f"reverse:{upstream}", "--listen-host", "127.0.0.1", "-p", str(listen),
             "-s", str(ADDON), "--set", f"rushhour_proxy={NAME}", "--set", f"confdir={work}"],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            env={**os.environ, "RUSHHOUR_LEASE_DIR": str(lease_dir)})
    if not wait_for_http(f"http://127.0.0.1:{listen}/healthz", timeout_s=30.0, proc=proxy):
        stop_process(proxy, grace_s=5.0)
        pytest.fail(f"mitmdump did not answer within 30 s: {(work / 'mitmdump.log').read_text()}")
    return proxy, f"http://127.0.0.1:{listen}"


@pytest.fixture(scope="module")
def proxied(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxied]:
    work = tmp_path_factory.mktemp("mitm")
    lease_dir = work / "leases"
    lease_dir.mkdir(mode=0o700)
    upstream = free_port()
    service = subprocess.Popen([sys.executable, str(ROOT / "tests" / "support" / "own_service.py"), str(upstream), "8",
                                "5"], stdin=subprocess.DEVNULL)
    try:
        assert wait_for_http(f"http://127.0.0.1:{upstream}/healthz", timeout_s=15.0, proc=service)
        proxy, via = _mitmdump(work, f"http://127.0.0.1:{upstream}", lease_dir)
        try:
            yield Proxied(via, f"http://127.0.0.1:{upstream}", lease_dir)
        finally:
            stop_process(proxy, grace_s=5.0)
    finally:
        stop_process(service, grace_s=2.0)


@pytest.fixture
def faults(proxied: Proxied, monkeypatch: pytest.MonkeyPatch) -> Iterator[Proxied]:
    """The proxy, with this test's faults written where its addon reads them and removed after."""
    monkeypatch.setenv("RUSHHOUR_LEASE_DIR", str(proxied.lease_dir))
    monkeypatch.setenv("RUSHHOUR_LEASE_MARGIN_S", "0")
    yield proxied
    remove_proxy_fault(NAME)


def _seen() -> None:
    """Wait past the addon's re-read interval (50 ms), so the next request meets the fault file as written."""
    time.sleep(0.1)


def _post(url: str, timeout_s: float = 10.0) -> int | str:
    """The answer's status, or the name of the transport error the client got instead."""
    try:
        return httpx.post(url, json={"text": "x"}, timeout=timeout_s, trust_env=False).status_code
    except httpx.TransportError as exc:
        return type(exc).__name__


def _took(url: str) -> float:
    began = time.monotonic()
    assert _post(url) == 200
    return time.monotonic() - began


def _fastest_s(url: str, count: int = 7) -> float:
    """The fastest of `count` answers: the path's own cost, least disturbed by a busy machine."""
    return min(_took(url) for _ in range(count))


def _served(proxied: Proxied) -> int:
    return int(httpx.get(f"{proxied.service}/count", timeout=5.0, trust_env=False).text)


def _seconds_until_answered(url: str, timeout_s: float) -> float | None:
    began = time.monotonic()
    while time.monotonic() - began < timeout_s:
        if _post(url, timeout_s=2.0) == 200:
            return time.monotonic() - began
        time.sleep(0.05)
    return None


def test_service_proxy_latency_adds_its_delay_to_what_the_same_path_took_unfaulted(faults: Proxied) -> None:
    unfaulted = _fastest_s(faults.via)
    add_proxy_fault("latency", latency_ms=300, proxy=NAME)
    faulted = _fastest_s(faults.via)
    # Every faulted answer waited the 300 ms on top of its own path: even the fastest is past the
    # delay. (Against the unfaulted fastest, a busy machine's slow spell alone can eat the margin.)
    assert faulted >= 0.29 and faulted > unfaulted, (unfaulted, faulted)
    remove_proxy_fault(NAME)
    assert _fastest_s(faults.via) < faulted - 0.2


def test_service_proxy_errors_answer_their_share_and_never_reach_the_service(faults: Proxied) -> None:
    count, rate = 300, 0.3
    before = _served(faults)
    add_proxy_fault("errors", rate=rate, status=503, proxy=NAME)
    _seen()
    answers = [_post(faults.via) for _ in range(count)]
    errors = answers.count(503)
    low, high = stats.binom.interval(0.9999, count, rate)
    assert low <= errors <= high, errors
    assert answers.count(200) == count - errors
    assert _served(faults) - before == count - errors  # an injected error is the proxy's answer, not the service's


def test_service_proxy_reset_closes_connections_unanswered(faults: Proxied) -> None:
    before = _served(faults)
    add_proxy_fault("reset", proxy=NAME)
    _seen()
    assert {_post(faults.via) for _ in range(5)} <= {"RemoteProtocolError", "ReadError", "ConnectError"}
    assert _served(faults) == before
    remove_proxy_fault(NAME)
    _seen()
    assert _post(faults.via) == 200


def test_service_proxy_blackhole_leaves_the_client_to_time_out_and_heals_on_removal(faults: Proxied) -> None:
    before = _served(faults)
    add_proxy_fault("blackhole", proxy=NAME)
    _seen()
    assert _post(faults.via, timeout_s=1.0) == "ReadTimeout"
    assert _served(faults) == before  # swallowed: the service never saw it
    remove_proxy_fault(NAME)
    _seen()
    assert _post(faults.via) == 200


def test_service_proxy_fault_past_its_end_heals_without_any_rollback(faults: Proxied) -> None:
    ttl_s = 3.0  # long enough that a loaded machine still sees the fault before its end
    add_proxy_fault("errors", rate=1.0, proxy=NAME, ttl_s=ttl_s)
    _seen()
    assert _post(faults.via) == 503
    answered_after = _seconds_until_answered(faults.via, timeout_s=10.0)
    assert answered_after is not None and answered_after <= ttl_s + 1.0, answered_after
    assert fault_path(NAME).exists()  # nobody removed it: the addon ignores it once it has ended


def test_service_proxy_fault_of_a_sigkilled_holder_ends_within_its_lease(faults: Proxied) -> None:
    env = {**os.environ, leases.LEASE_ENV: f"{LEASE_S:g}"}
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, NAME], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              cwd=ROOT, env=env)
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline()
        time.sleep(LEASE_S * 1.5)
        assert _post(faults.via) == 503  # renewed past its lease while the holder lives
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.communicate(timeout=10.0)
    answered_after = _seconds_until_answered(faults.via, timeout_s=LEASE_S + 10.0)
    assert answered_after is not None and answered_after <= LEASE_S + 1.5, answered_after


@pytest.mark.parametrize("kind, seen", [
    ("latency", "slow"), ("errors", "503"), ("reset", "RemoteProtocolError"), ("blackhole", "ReadTimeout"),
])
def test_service_proxy_experiment_faults_the_path_for_its_hold_then_heals(
        faults: Proxied, tmp_path: Path, kind: str, seen: str) -> None:
    env = {"RUSHHOUR_URL": faults.via, "RUSHHOUR_FAULT_HOLD_S": "2", "RUSHHOUR_LEASE_DIR": str(faults.lease_dir),
           "PROXY_NAME": NAME, "LATENCY_MS": "600", "JITTER_MS": "0", "ERROR_RATE": "1"}
    chaos = ChaosProcess(name=kind, experiment=ROOT / "experiments" / f"service-proxy-{kind}.json",
                         out_dir=tmp_path, env=env, hypothesis="after-method-only")
    observed: set[str] = set()
    chaos.launch()
    try:
        give_up = time.monotonic() + 30.0
        while seen not in observed and chaos.running and time.monotonic() < give_up:
            began = time.monotonic()
            answer = _post(faults.via, timeout_s=1.0)
            observed.add("slow" if answer == 200 and time.monotonic() - began >= 0.55 else str(answer))
        assert chaos.wait(timeout_s=60.0) == 0, chaos.log_path.read_text()
    finally:
        chaos.kill()
    assert seen in observed, observed
    assert chaos.status() == "completed" and not fault_path(NAME).exists()
    assert _post(faults.via) == 200


def _drill(scenario: Path, via: str) -> None:
    """The scenario `rushhour init` wrote for the proxy, made a 30 s drill with a latency and an
    errors fault through it."""
    data = yaml.safe_load(scenario.read_text())
    data["traffic"] = {"model": "constant:8", "duration": "30s", "seed": 7}
    data["slos"] = [{"name": "p95", "kind": "latency", "percentile": 95, "threshold_ms": 250}]
    env = {"PROXY_NAME": NAME, "LATENCY_MS": "400", "JITTER_MS": "0", "ERROR_RATE": "1"}
    data["chaos"] = [
        {"at": "00:00:04", "experiment": str(ROOT / "experiments" / "service-proxy-latency.json"), "name": "latency",
         "hold": "4s", "env": env},
        {"at": "00:00:16", "experiment": str(ROOT / "experiments" / "service-proxy-errors.json"), "name": "errors",
         "hold": "4s", "env": env},
    ]
    scenario.write_text(yaml.safe_dump(data, sort_keys=False))


@pytest.mark.timeout(300)
def test_service_proxy_drill_reports_each_network_fault_window(faults: Proxied, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUSHHOUR_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv(SKIP_ENV, "1")
    scenario = tmp_path / "via-proxy.yaml"
    made = CliRunner().invoke(init, ["--target", faults.via, "--out", str(scenario)])
    assert made.exit_code == 0, made.output
    _drill(scenario, faults.via)
    out = tmp_path / "results"
    result = CliRunner().invoke(run, [str(scenario), "--out", str(out)])
    assert result.exit_code in (0, 1), result.output  # a verdict either way: the drill ran validly
    rows = {row["name"]: row for row in json.loads((out / "summary.json").read_text())["faults"]}
    latency, errors = rows["latency"], rows["errors"]
    assert 4 <= latency["start_s"] < latency["end_s"] <= errors["start_s"] and errors["start_s"] >= 16
    assert latency["p99_during_ms"] is not None and latency["p99_during_ms"] >= 400
    assert latency["failed_requests"] == 0 and errors["failed_requests"] > 0
    for row in (latency, errors):
        assert row["recovered"], row
    assert not fault_path(NAME).exists()


def test_service_proxy_passes_a_streamed_answer_on_as_it_comes(tmp_path: Path) -> None:
    plan = StreamPlan(tokens=10, first_s=0.2, every_s=0.01, stall_at=5, stall_s=1.0)
    with serve_target(TargetState(plan=plan)) as (upstream, _):
        proxy, via = _mitmdump(tmp_path, upstream, tmp_path)
        try:
            began = time.monotonic()
            body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "x"}]}
            with httpx.stream("POST", f"{via}/v1/chat/completions", json=body, timeout=10.0, trust_env=False) as answer:
                chunks = answer.iter_raw()
                first = next(chunks)
                first_after = time.monotonic() - began
                rest = b"".join(chunks)
            whole_after = time.monotonic() - began
        finally:
            stop_process(proxy, grace_s=5.0)
    assert b"t0" in first and b"[DONE]" in first + rest
    assert first_after < whole_after - 0.8  # the first token came before the stall, not with the whole answer
