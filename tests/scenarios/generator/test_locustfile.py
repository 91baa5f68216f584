"""The Locust user's HTTP client, probed in its own process (importing Locust monkey-patches the
interpreter): it follows no redirect, uses no proxy from the environment, stamps connections."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rushhour.scenarios.generator.settings import LoadSettings
from rushhour.scenarios.load.locust import worker_env
from tests.scenarios.generator.truth import Fate, connection_trap, proxied, truth_server

ELSEWHERE = "http://[2001:db8::1]:9/v1/translate"  # a documentation address: never reachable, never contacted
ELSEWHERE_V6 = "http://[2001:db8::1]:9/v1/translate"
ROOT = Path(__file__).resolve().parents[3]

PROBE = """
import json, sys
from geventhttpclient.connectionpool import ConnectionPool

attempts = []
real_connect = ConnectionPool._connect_socket

def spy(self, sock, address):
    attempts.append(list(address)[:2])
    return real_connect(self, sock, address)

ConnectionPool._connect_socket = spy

from locust.env import Environment
from rushhour.scenarios.generator import handoff
from rushhour.scenarios.generator.locustfile import OpenLoopUser

OpenLoopUser.host = sys.argv[1]
user = OpenLoopUser(Environment(user_classes=[OpenLoopUser], host=sys.argv[1]))
answers = []
for row in (0, 1, 2):
    handoff.begin()
    outcome = user._send({"text": "x", "tenant": f"r{row}"}, 5.0)
    answers.append({"status": outcome.status, "error": outcome.error,
                    "stamped": handoff.handed_at() is not None})
print(json.dumps({"answers": answers, "attempts": attempts}))
"""


def fate(row: int) -> Fate:
    return [Fate(200), Fate(302, location=ELSEWHERE), Fate(307, location=ELSEWHERE_V6)][row]


@pytest.mark.slow
def test_locust_user_records_a_redirect_and_never_contacts_its_target_or_a_proxy() -> None:
    with connection_trap() as (trap_port, trapped), truth_server(fate) as (host, ledger):
        proxy = f"http://127.0.0.1:{trap_port}"
        env = {**os.environ, "PYTHONPATH": str(ROOT), "HTTP_PROXY": proxy, "http_proxy": proxy,
               "HTTPS_PROXY": proxy, "ALL_PROXY": proxy, "NO_PROXY": ""}
        probe = subprocess.run([sys.executable, "-c", PROBE, host], env=env, cwd=ROOT,
                               capture_output=True, text=True, timeout=60, check=False)
        assert probe.returncode == 0, probe.stderr
        seen = json.loads(probe.stdout.strip().splitlines()[-1])
        served = len(ledger.frame())
    port = int(host.rsplit(":", 1)[1])
    assert [a["status"] for a in seen["answers"]] == [200, 302, 307]  # the 3xx is the answer
    assert all(a["stamped"] for a in seen["answers"])  # every send stamped by the pool
    assert seen["attempts"] and all(a == ["127.0.0.1", port] for a in seen["attempts"]), seen["attempts"]
    assert proxied(trapped) == [] and served == 3


def test_worker_env_drops_proxy_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    config = LoadSettings(host="http://127.0.0.1:1", schedule_path=Path("s"), work_dir=Path("w"), duration_s=1.0)
    for name in ("HTTP_PROXY", "https_proxy", "ALL_PROXY"):
        monkeypatch.setenv(name, "http://proxy.example:3128")
    monkeypatch.setenv("KEEP_ME", "1")
    env = worker_env(config)
    assert not {"HTTP_PROXY", "https_proxy", "ALL_PROXY"} & set(env) and env["KEEP_ME"] == "1"


FIRING = """
import sys
import types
import locust.main  # noqa: F401 - what a Locust process imports first
import rushhour.scenarios.generator.locustfile, rushhour.scenarios.generator.locustfile_closed  # noqa: F401, E401
from locust import events
from rushhour.scenarios.generator.partwriter import PartWriter, list_parts
from rushhour.scenarios.generator.settings import LoadSettings
from rushhour.scenarios.generator.sharestream import share_stream
from rushhour.traffic_models import text_for

# as Locust does once it has loaded the locustfiles (a runner on one machine: no relay)
events.init.fire(environment=types.SimpleNamespace(runner=None), runner=None, web_ui=None)
settings = LoadSettings.arrive(sys.argv[1], source="the test")
shares = list(share_stream(settings, 0, text_for))
writer = PartWriter(settings.parts_dir, 0)
for share in shares:
    for i in range(share.rows.num_rows):
        writer.add(row=share.row_number(i), intended_s=float(share.offsets[i]), status=200, via=share.via_name,
                   error="", model=share.payload(i)["mode"], cached=i % 2)  # 0/1 for a bool: converted
writer.flush()
heavy = sorted({name.split(".")[0] for name in sys.modules} & {"pandas", "scipy", "matplotlib"})
print(sum(share.rows.num_rows for share in shares), len(list_parts(settings.parts_dir)), heavy)
"""


def test_a_load_generator_process_reads_fires_and_records_without_pandas(tmp_path: Path) -> None:
    """A Locust process starts for every run, every capacity step and every --processes: it reads
    its share and writes its parts with pyarrow alone, since importing pandas would add about 0.4 s
    of CPU and tens of MB to each one."""
    from rushhour.traffic_models import load_traffic_model
    from rushhour.traffic_models.chunked import iter_schedule, write_schedule

    schedule = tmp_path / "schedule.parquet"
    rows = write_schedule(schedule, iter_schedule(load_traffic_model("constant:20"), seed=3, duration_s=5))
    settings = LoadSettings(host="http://127.0.0.1:1", schedule_path=schedule, work_dir=tmp_path / "load",
                            duration_s=5.0, processes=2)
    done = subprocess.run([sys.executable, "-c", FIRING, settings.to_env()], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == f"{(rows + 1) // 2} 1 []"  # worker 0 of 2: every even row
