"""Network faults on the path to a user's service (experiments/service-network-*.json) through
Toxiproxy: against a stand-in for Toxiproxy's HTTP API, and against the real toxiproxy-server
where it is installed."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from chaoslib.exceptions import ActivityFailed

from rushhour.experiments.service.network import add_toxic, remove_toxics, toxics
from rushhour.kernel.processes import free_port, stop_process
from rushhour.scenarios.run.chaos.process import ChaosProcess
from tests.support.waiting import wait_for_http

ROOT = Path(__file__).resolve().parents[2]
LEASE_S = 2.0
HOLDER = """
import json, sys, time
from rushhour.experiments.service.network import add_toxic
print(json.dumps(add_toxic("service", "latency", {"latency": 300}, hold_s=600,
                           configuration={"toxiproxy_url": sys.argv[1]})), flush=True)
time.sleep(3600)
"""


class FakeToxiproxy(BaseHTTPRequestHandler):
    """Toxiproxy's toxic routes for one proxy named "service": list, add (409 on a repeated name), delete."""

    toxics: dict[str, dict[str, Any]] = {}

    def log_message(self, *_: object) -> None:
        return None

    def _send(self, status: int, body: object = None) -> None:
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path == "/proxies/service/toxics":
            self._send(200, list(self.toxics.values()))
        else:
            self._send(404, {"error": "proxy not found", "status": 404})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path != "/proxies/service/toxics":
            self._send(404, {"error": "proxy not found", "status": 404})
        elif body["name"] in self.toxics:
            self._send(409, {"error": "toxic already exists", "status": 409})
        else:
            self.toxics[body["name"]] = body
            self._send(200, body)

    def do_DELETE(self) -> None:
        name = self.path.rsplit("/", 1)[-1]
        if self.toxics.pop(name, None) is None:
            self._send(404, {"error": "toxic not found", "status": 404})
        else:
            self._send(204)


@pytest.fixture
def fake_api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    FakeToxiproxy.toxics = {}
    monkeypatch.setenv("RUSHHOUR_LEASE_S", f"{LEASE_S:g}")
    monkeypatch.setenv("RUSHHOUR_LEASE_MARGIN_S", "0")
    monkeypatch.setenv("RUSHHOUR_LEASE_DIR", str(tmp_path / "leases"))
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeToxiproxy)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _until_gone(timeout_s: float) -> float | None:
    began = time.monotonic()
    while time.monotonic() - began < timeout_s:
        if not FakeToxiproxy.toxics:
            return time.monotonic() - began
        time.sleep(0.05)
    return None


def test_service_network_adds_a_named_toxic_and_removes_only_ours(fake_api: str) -> None:
    config = {"toxiproxy_url": fake_api}
    FakeToxiproxy.toxics["operator-latency"] = {"name": "operator-latency", "type": "latency"}
    added = add_toxic("service", "latency", {"latency": 300, "jitter": 50}, configuration=config)
    assert added["toxic"] == "rushhour-latency"
    assert FakeToxiproxy.toxics["rushhour-latency"]["attributes"] == {"latency": 300, "jitter": 50}
    assert FakeToxiproxy.toxics["rushhour-latency"]["stream"] == "downstream"
    assert sorted(toxics("service", configuration=config)) == ["operator-latency", "rushhour-latency"]
    assert remove_toxics("service", configuration=config) == ["rushhour-latency"]
    assert list(FakeToxiproxy.toxics) == ["operator-latency"]  # an operator's own toxic stays


def test_service_network_refuses_what_it_cannot_do(fake_api: str) -> None:
    with pytest.raises(ActivityFailed, match="is not on this machine"):
        add_toxic("service", "latency", configuration={"toxiproxy_url": "http://192.0.2.1:8474"})
    with pytest.raises(ActivityFailed, match='"packet_loss" is not a Toxiproxy toxic type'):
        add_toxic("service", "packet_loss", configuration={"toxiproxy_url": fake_api})
    with pytest.raises(ActivityFailed, match=r'refused the toxic .* "nope" \(HTTP 404\)'):
        add_toxic("nope", "latency", configuration={"toxiproxy_url": fake_api})


@pytest.mark.slow
def test_service_network_toxic_outlives_a_sigkilled_holder_by_at_most_its_lease(fake_api: str) -> None:
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, fake_api], stdout=subprocess.PIPE, cwd=ROOT)
    try:
        assert holder.stdout is not None
        json.loads(holder.stdout.readline())
        assert "rushhour-latency" in FakeToxiproxy.toxics
        time.sleep(LEASE_S * 1.5)
        assert "rushhour-latency" in FakeToxiproxy.toxics  # renewed while the holder lives
    finally:
        holder.kill()
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()
    removed_after = _until_gone(LEASE_S + 5.0)
    assert removed_after is not None and removed_after <= LEASE_S + 1.5, removed_after


@pytest.mark.slow
@pytest.mark.parametrize("name, toxic, attributes", [
    ("latency", "latency", {"latency": 300, "jitter": 50}),
    ("reset", "reset_peer", {"timeout": 0}),
    ("blackhole", "timeout", {"timeout": 0}),
])
def test_service_network_experiment_adds_its_toxic_for_the_hold_then_removes_it(
        tmp_path: Path, fake_api: str, name: str, toxic: str, attributes: dict[str, int]) -> None:
    seen: list[dict[str, Any]] = []
    service = ThreadingHTTPServer(("127.0.0.1", 0), FakeToxiproxy)  # the service behind the proxy answers
    threading.Thread(target=service.serve_forever, daemon=True).start()
    env = {"TOXIPROXY_URL": fake_api, "RUSHHOUR_FAULT_HOLD_S": "1.5", "RUSHHOUR_LEASE_DIR": str(tmp_path / "leases"),
           "RUSHHOUR_URL": f"http://127.0.0.1:{service.server_address[1]}/proxies/service"}
    chaos = ChaosProcess(name=name, experiment=ROOT / "experiments" / f"service-network-{name}.json",
                         out_dir=tmp_path, env=env, hypothesis="after-method-only")
    chaos.launch()
    try:
        give_up = time.monotonic() + 30.0
        while not seen and time.monotonic() < give_up and chaos.running:
            seen.extend(FakeToxiproxy.toxics.values())
            time.sleep(0.02)
        assert chaos.wait(timeout_s=60.0) == 0, chaos.log_path.read_text()
    finally:
        chaos.kill()
        service.shutdown()
        service.server_close()
    assert [(t["name"], t["type"], t["attributes"]) for t in seen] == [(f"rushhour-{toxic}", toxic, attributes)]
    assert chaos.status() == "completed" and not FakeToxiproxy.toxics


@pytest.fixture
def toxiproxy(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """A real toxiproxy-server and a proxy named "service" in front of a stand-in service."""
    binary = shutil.which("toxiproxy-server")
    if binary is None:
        pytest.skip("toxiproxy-server is not installed: Debian does not package it and it is a Go binary that this "
                    "machine's registries do not carry; install it from the Toxiproxy releases to run this test.")
    api_port, listen, upstream = free_port(), free_port(), free_port()
    proxy_server = subprocess.Popen([binary, "-host", "127.0.0.1", "-port", str(api_port)], stdin=subprocess.DEVNULL)
    service = subprocess.Popen([sys.executable, str(ROOT / "tests" / "support" / "own_service.py"), str(upstream), "4",
                                "5"], stdin=subprocess.DEVNULL)
    api = f"http://127.0.0.1:{api_port}"
    try:
        assert wait_for_http(f"{api}/version", timeout_s=15.0, proc=proxy_server)
        assert wait_for_http(f"http://127.0.0.1:{upstream}/healthz", timeout_s=15.0, proc=service)
        httpx.post(f"{api}/proxies", json={"name": "service", "listen": f"127.0.0.1:{listen}",
                                           "upstream": f"127.0.0.1:{upstream}"}, trust_env=False).raise_for_status()
        yield api, f"http://127.0.0.1:{listen}"
    finally:
        stop_process(service, grace_s=2.0)
        stop_process(proxy_server, grace_s=2.0)


def test_service_network_latency_through_a_real_toxiproxy(toxiproxy: tuple[str, str]) -> None:
    api, via = toxiproxy
    config = {"toxiproxy_url": api}

    def took() -> float:
        began = time.monotonic()
        httpx.post(via, json={"text": "x"}, timeout=10.0, trust_env=False).raise_for_status()
        return time.monotonic() - began

    assert took() < 0.25
    add_toxic("service", "latency", {"latency": 400}, configuration=config)
    assert took() >= 0.4
    assert remove_toxics("service", configuration=config) == ["rushhour-latency"]
    assert took() < 0.25
