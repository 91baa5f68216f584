"""A rogue master on another host (its own network namespace) turns no worker.

The attack, across a real network boundary: on the master's host a Locust master that does not
hold the cluster secret, and a target of its choosing that records every request and its
`Authorization` header; on a worker's host a worker given the cluster secret, a credential for its
target (`--auth-env`) and the rogue's address as an allowed host, so that only the secret can stop
it. The worker must prove nothing, take nothing, exit 2 saying why, and send the rogue's target no
request: the canary request sent from the worker's host first shows the target was reachable.
Addresses are the test's own namespaces' (10.77.0.0/16, `tests.scenarios.distributed.netns`).
Skipped, with the reason, where namespaces cannot be made.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rushhour.scenarios.generator.clusterauth import SECRET_ENV
from rushhour.scenarios.load.locust import proxy_free_env
from tests.scenarios.distributed.netns import (
    MASTER_ADDRESS,
    NamespaceUnavailable,
    NetnsHosts,
    make_hosts,
    rushhour,
)

pytestmark = pytest.mark.slow
TARGET_PORT = 18081
CANARY = "Bearer canary-from-the-worker-host"
CREDENTIAL = "worker-credential-42"
RECORDER = """
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
log = open(sys.argv[3], "a", buffering=1)
class Handler(BaseHTTPRequestHandler):
    def answer(self):
        log.write(self.headers.get("Authorization", "") + "\\n")
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()
    do_GET = do_POST = answer
    def log_message(self, *args):
        pass
ThreadingHTTPServer((sys.argv[1], int(sys.argv[2])), Handler).serve_forever()
"""
CANARY_CALL = f"""
import urllib.request
request = urllib.request.Request("http://{MASTER_ADDRESS}:{TARGET_PORT}/canary", headers={{"Authorization": "{CANARY}"}})
urllib.request.urlopen(request, timeout=2).read()
"""


@pytest.fixture
def hosts() -> Iterator[NetnsHosts]:
    try:
        made = make_hosts(workers=1)
    except NamespaceUnavailable as exc:
        pytest.skip(f"no network namespaces here: {exc}")
    try:
        yield made
    finally:
        made.close()


def _canary(hosts: NetnsHosts) -> None:
    """One request from the worker's host to the rogue's target, once it listens."""
    for _ in range(50):
        if hosts.run(hosts.workers[0], [sys.executable, "-c", CANARY_CALL], timeout_s=10).returncode == 0:
            return
        time.sleep(0.2)
    pytest.fail(f"the rogue's target at {MASTER_ADDRESS}:{TARGET_PORT} is not reachable from the worker's host")


def _rogue_port(log: Path) -> int:
    for _ in range(150):
        lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
        port = next((int(line) for line in lines if line.strip().isdigit()), None)
        if port is not None:
            return port
        time.sleep(0.1)
    pytest.fail(f"the rogue master never said its port: {log.read_text(encoding='utf-8')[-2000:]}")


def _worker(port: int, work_dir: Path) -> list[str]:
    env = {**proxy_free_env(), SECRET_ENV: "the-workers-own-secret-0123", "RH_TEST_TOKEN": CREDENTIAL}
    return ["env", "-i", *(f"{k}={v}" for k, v in env.items()), *rushhour(
        "worker", "--master", f"{MASTER_ADDRESS}:{port}", "--name", "w0", "--auth-env", "RH_TEST_TOKEN",
        "--allowed-host", MASTER_ADDRESS, "--work-dir", str(work_dir), "--connect-timeout", "30")]


def test_namespaces_a_rogue_master_on_another_host_gets_no_proof_no_credential_and_no_request(
    hosts: NetnsHosts, tmp_path: Path,
) -> None:
    seen = tmp_path / "seen.log"
    hosts.start(hosts.master, [sys.executable, "-c", RECORDER, MASTER_ADDRESS, str(TARGET_PORT), str(seen)],
                tmp_path / "target.log")
    _canary(hosts)
    rogue_log = tmp_path / "rogue.log"
    rogue = hosts.start(hosts.master, [sys.executable, "-m", "tests.scenarios.distributed.rogue_master",
                                       f"http://{MASTER_ADDRESS}:{TARGET_PORT}", MASTER_ADDRESS], rogue_log)
    worker = hosts.run(hosts.workers[0], _worker(_rogue_port(rogue_log), tmp_path / "w"), timeout_s=90)
    assert rogue.wait(timeout=60) == 0, rogue_log.read_text(encoding="utf-8")[-3000:]
    said = json.loads(next(line for line in rogue_log.read_text(encoding="utf-8").splitlines() if line.startswith("{")))
    assert worker.returncode == 2 and "the master could not prove it holds this worker's secret" in worker.stderr, (
        worker.stderr[-3000:])
    assert [hello["host"] for hello in said["rh_hello"]] == ["w0"], "the worker never reached the rogue"
    assert said["rh_prove"] == [{"proof": "", "host": "w0"}], "the worker proved the secret to the rogue"
    assert seen.read_text(encoding="utf-8").splitlines() == [CANARY], "the rogue's target got the worker's requests"
