"""For `test_master_relay`, run in its own process (Locust monkey-patches the interpreter): a real Locust master
with rushhour's relay, a real worker, and strangers who send it what Locust's own handlers trust. Prints what
the master still knows and what it counted."""
import json
import sys
import tempfile
from pathlib import Path

import gevent
import msgpack  # type: ignore[import-untyped]
import pandas as pd
from locust import User, constant, task
from locust.env import Environment
from locust.rpc import Message, rpc

from rushhour.scenarios.generator import clusterauth
from rushhour.scenarios.generator.master_relay import MSG_CHALLENGE, MSG_HELLO, MSG_READY, REJECTIONS_FILE, MasterRelay
from rushhour.scenarios.generator.settings import LoadSettings


class Waiting(User):
    wait_time = constant(1)

    @task
    def nothing(self) -> None:
        pass


def _settings(folder: Path) -> LoadSettings:
    pd.DataFrame({"offset_s": [0.0]}).to_parquet(folder / "schedule.parquet")
    for name in ("control", "parts"):
        (folder / name).mkdir()
    return LoadSettings(host="http://127.0.0.1:1", schedule_path=folder / "schedule.parquet", work_dir=folder,
                        duration_s=1.0, remote_workers=1, timeout_margin_s=1.0)


def _attack(port: int, victim: str) -> None:
    stranger = rpc.Client("127.0.0.1", port, "stranger")
    for msg in (Message("exception", None, "stranger"),  # raises inside Locust's own handler
                Message("exception", {"msg": "forged", "traceback": ""}, victim),  # speaks for the worker
                Message("client_stopped", None, victim), Message("quit", None, victim),
                Message("heartbeat", {"state": "stopped", "current_cpu_usage": 0}, victim),
                Message(MSG_READY, {"index": 0, "rows": 1, "offset_s": 0, "rtt_s": 0}, "stranger")):
        stranger.send(msg)
    for frame in (b"\xc1 not msgpack", msgpack.dumps(["two", "fields"]), msgpack.dumps(7)):
        stranger.socket.send(frame)


def main() -> None:
    folder = Path(tempfile.mkdtemp())
    master = Environment(user_classes=[Waiting]).create_master_runner("127.0.0.1", 0)
    MasterRelay(master, _settings(folder), "hostile-senders-secret-0").install()
    port = master.server.port
    worker = Environment(user_classes=[Waiting]).create_worker_runner("127.0.0.1", port)
    for _ in range(100):
        if worker.client_id in master.clients:
            break
        gevent.sleep(0.05)
    _attack(port, worker.client_id)
    gevent.sleep(1.5)
    prober = rpc.Client("127.0.0.1", port, "prober")
    prober.send(Message(MSG_HELLO, {"host": "prober", "nonce": clusterauth.new_nonce()}, "prober"))
    reply = gevent.with_timeout(5, prober.recv, timeout_value=None)
    seen = {"worker_kept": worker.client_id in master.clients,
            "listener_answers": reply is not None and reply.type == MSG_CHALLENGE,
            "dropped": json.loads((folder / "control" / REJECTIONS_FILE).read_text())["dropped"]}
    worker.quit()
    master.quit()
    json.dump(seen, sys.stdout)


main()
