"""Both drills' Locust users as Locust itself loads them from the locustfiles: the shared base is
never spawned, and each user speaks the scenario's target through a stamping pool, following no
redirect. Probed in a process of its own (importing Locust monkey-patches the interpreter)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from rushhour.scenarios.generator.settings import ENV_SETTINGS, LoadSettings
from rushhour.scenarios.spec.target import TargetProtocol
from rushhour.traffic_models import load_traffic_model
from rushhour.traffic_models.chunked import iter_schedule, write_schedule

ROOT = Path(__file__).resolve().parents[3]
GENERATOR = ROOT / "scenarios" / "generator"

PROBE = """
import json, sys
from locust.env import Environment
from locust.util.load_locustfile import load_locustfile

seen = {}
for path in sys.argv[1:]:
    users, _shapes = load_locustfile(path)
    for name, user_class in users.items():
        user_class.host = "http://127.0.0.1:1"  # as Locust's runner sets it before spawning
        user = user_class(Environment(user_classes=[user_class]))
        seen[name] = {"pool": type(user.client.client.clientpool).__name__, "redirects": user.max_redirects,
                      "retries": user.max_retries, "insecure": user.insecure, "headers": user.protocol.headers,
                      "bases": [base.__name__ for base in user_class.__mro__[1:3]]}
print(json.dumps(seen))
"""


def test_each_drill_has_one_user_built_on_the_shared_target_user(tmp_path: Path) -> None:
    schedule = tmp_path / "schedule.parquet"  # the closed drill's shape reads it when Locust loads the file
    write_schedule(schedule, iter_schedule(load_traffic_model("constant:5"), seed=1, duration_s=2))
    target = TargetProtocol(headers={"X-Drill": "gameday"})
    settings = LoadSettings(host="http://127.0.0.1:1", schedule_path=schedule,
                            work_dir=tmp_path / "load", duration_s=1.0, target=target)
    env = {**os.environ, "PYTHONPATH": str(ROOT), ENV_SETTINGS: settings.to_env()}
    files = [str(GENERATOR / "locustfile.py"), str(GENERATOR / "locustfile_closed.py")]
    probe = subprocess.run([sys.executable, "-c", PROBE, *files], env=env, cwd=ROOT, capture_output=True, text=True,
                           timeout=60, check=False)
    assert probe.returncode == 0, probe.stderr[-3000:]
    seen = json.loads(probe.stdout.strip().splitlines()[-1])
    assert sorted(seen) == ["OpenLoopUser", "PersonaUser"]  # TargetUser is abstract: Locust never spawns it
    for name, user in seen.items():
        assert user["bases"] == ["TargetUser", "FastHttpUser"], name
        assert user["pool"] == "StampedClientPool", name
        assert (user["redirects"], user["retries"], user["insecure"]) == (0, 0, False), name
        assert user["headers"].get("X-Drill") == "gameday", name
