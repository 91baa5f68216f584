"""A tiny process supervisor: `python supervisor.py ARGV...` runs ARGV and starts it again whenever it exits.

The stand-in for systemd's `Restart=always` in the own-service game day: a SIGKILLed service is
back a moment later, so a drill can measure the recovery its users see. A paused (SIGSTOPped)
child is not an exit and is left alone. SIGTERM stops the child and then the supervisor. At most
MAX_RESTARTS restarts, so a child that cannot start never loops for ever.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from types import FrameType

MAX_RESTARTS = 50
RESTART_DELAY_S = 0.2


def main(argv: list[str]) -> int:
    stopping = False
    child: subprocess.Popen[bytes] | None = None

    def stop(_signum: int, _frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True
        if child is not None and child.poll() is None:
            child.send_signal(signal.SIGCONT)  # a paused child must run to exit
            child.terminate()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    for _ in range(MAX_RESTARTS + 1):
        child = subprocess.Popen(argv, stdin=subprocess.DEVNULL)
        while child.poll() is None:
            try:
                child.wait(timeout=0.5)
            except subprocess.TimeoutExpired:
                continue
        if stopping:
            return 0
        print(f"supervisor: {argv[0]} exited with {child.returncode}; restarting", file=sys.stderr, flush=True)
        time.sleep(RESTART_DELAY_S)
    return 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
