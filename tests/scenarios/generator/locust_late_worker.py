"""For `test_master_relay`, run in its own process (Locust monkey-patches the interpreter): a real Locust master whose
headless start ran before any worker was left, and the worker that joins after it."""
import json
import sys

import gevent
from locust import User, constant, task
from locust.env import Environment
from locust.runners import STATE_INIT, STATE_MISSING, STATE_SPAWNING


class Waiting(User):
    wait_time = constant(1)

    @task
    def nothing(self) -> None:
        pass


def main() -> None:
    master = Environment(user_classes=[Waiting]).create_master_runner("127.0.0.1", 0)
    port = master.server.port
    master.start(8, 8.0)  # the start found no worker: the node it counted had been refused and forgotten
    worker = Environment(user_classes=[Waiting]).create_worker_runner("127.0.0.1", port)
    gevent.sleep(2.5)
    idle = {"master": master.state, "worker": next(iter(master.clients.values())).state, "users": worker.user_count}
    master.start(master.target_user_count, float(master.target_user_count))  # what the relay does
    gevent.sleep(2.5)
    after = {"master": master.state, "users": worker.user_count}
    worker.quit()
    master.quit()
    json.dump({"idle": idle, "after": after, "states": [STATE_INIT, STATE_SPAWNING, STATE_MISSING]}, sys.stdout)


main()
