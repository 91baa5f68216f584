"""A worker pointed at a master that does not hold the cluster secret (a spoofed master, or one an
attacker runs on the path) proves nothing to it, takes nothing from it, and sends its target no
request: not the credential it was given, not one row of the rogue's schedule."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from rushhour.kernel.processes import stop_process
from rushhour.scenarios.generator.clusterauth import SECRET_ENV
from rushhour.scenarios.load.locust import proxy_free_env

pytestmark = pytest.mark.slow
HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]


@pytest.fixture
def listener() -> Iterator[tuple[str, list[str]]]:
    """A target on loopback that records the Authorization header of every request it gets."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            seen.append(self.headers.get("Authorization", ""))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()


def test_a_rogue_master_gets_no_proof_no_credential_and_no_request(tmp_path: Path, listener: tuple[str, list[str]]) -> None:
    target, seen = listener
    rogue = subprocess.Popen([sys.executable, "-m", "tests.scenarios.distributed.rogue_master", target], cwd=REPO,
                             stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True)
    try:
        assert rogue.stdout is not None
        port = int(rogue.stdout.readline())
        env = {**proxy_free_env(), SECRET_ENV: "the-workers-own-secret-0123", "RH_TEST_TOKEN": "worker-credential-42"}
        worker = subprocess.run([sys.executable, "-m", "rushhour.scenarios.cli.main", "worker", "--master",
                                 f"127.0.0.1:{port}", "--auth-env", "RH_TEST_TOKEN", "--work-dir", str(tmp_path / "w"),
                                 "--connect-timeout", "30"], env=env, capture_output=True, text=True, timeout=90, check=False)
        said = json.loads(rogue.communicate(timeout=60)[0])
    finally:
        stop_process(rogue, grace_s=5)  # type: ignore[arg-type]
    assert worker.returncode == 2 and "the master could not prove it holds this worker's secret" in worker.stderr, (
        worker.stderr[-3000:])
    assert len(said["rh_hello"]) == 1, "the worker never reached the rogue: the test proves nothing"
    assert said["rh_prove"] == [{"proof": "", "host": said["rh_hello"][0]["host"]}], "the worker proved the secret"
    assert seen == [], f"the rogue's target got {len(seen)} request(s)"
