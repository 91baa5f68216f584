"""One `chaos run` of one experiment, as a child process of the drill.

Why SIGINT: Chaos Toolkit turns it into `KeyboardInterrupt`, which no activity provider
swallows, marks the journal "interrupted" and, with `--rollback-strategy always`, still plays
every rollback. SIGTERM raises an exception that a running Python activity reports as its own
failure (the method then carries on), and SIGUSR2 skips the rollbacks on purpose.

Each child gets its own session, so a Ctrl-C at the terminal reaches the drill only: the drill
then interrupts each experiment exactly once. A second SIGINT during the rollbacks would cut
them short.

A child also dies with the drill: the kernel sends it SIGINT when the thread that started it
ends (PR_SET_PDEATHSIG; the timeline keeps that thread alive until every run has stopped), so
its rollbacks play even when the drill was killed with SIGKILL, and `chaos_main` bounds how long
an orphaned run may take over them.

A child gets the drill's pinned host names in RUSHHOUR_PINNED_HOSTS, so the chaos extension's
admin client (`rushhour.experiments.client`) connects where the drill's guard looked.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Any

from rushhour.kernel.atomic import open_streamed
from rushhour.kernel.pinning import ENV_PINNED, pins_env
from rushhour.kernel.processes import child_env, die_with_parent
from rushhour.scenarios.run.chaos.main import PARENT_ENV

__all__ = ["ChaosProcess", "chaos_command"]


HYPOTHESIS_STRATEGIES = ("default", "before-method-only", "after-method-only", "during-method-only", "continuously")


def chaos_command(experiment: Path, journal: Path, *, hypothesis: str = "default") -> list[str]:
    """The command line of one run; rollbacks always play, even on interruption.

    A drill injects its faults at the peak on purpose, when the steady state may already be
    strained; with Chaos Toolkit's default strategy a failed check *before* the method would skip
    the fault altogether. Drills therefore use "after-method-only": the fault always happens and
    the hypothesis is judged after it."""
    return [
        sys.executable,
        "-m",
        "rushhour.scenarios.run.chaos.main",
        "--no-version-check",
        "--no-log-file",
        "run",
        "--rollback-strategy",
        "always",
        "--journal-path",
        str(journal),
        "--hypothesis-strategy",
        hypothesis,
        str(experiment),
    ]


class ChaosProcess:
    """Launches, interrupts and, as a last resort, kills one experiment run."""

    def __init__(self, *, name: str, experiment: Path, out_dir: Path, env: Mapping[str, str], hypothesis: str = "default"):
        self.name = name
        self.hypothesis = hypothesis
        self.experiment = experiment
        self.journal_path = out_dir / f"{name}.journal.json"
        self.log_path = out_dir / f"{name}.log"
        self._env = dict(env)
        self._proc: subprocess.Popen[bytes] | None = None
        self.interrupted = False
        self.killed = False

    def launch(self) -> None:
        self.journal_path.parent.mkdir(parents=True, exist_ok=True)
        env = child_env(extra=self._env)  # the admin token only as the drill hands it over; never the cluster secret
        env[PARENT_ENV] = str(os.getpid())
        env[ENV_PINNED] = pins_env()  # a name the drill admitted is connected where its guard looked
        with open_streamed(self.log_path) as log:
            self._proc = subprocess.Popen(
                chaos_command(self.experiment, self.journal_path, hypothesis=self.hypothesis),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=self.experiment.parent,
                start_new_session=True,
                preexec_fn=partial(die_with_parent, signal.SIGINT),
            )

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def interrupt(self) -> None:
        """Ask for an interruption once: the method stops, the rollbacks play."""
        if self.running and not self.interrupted and self._proc is not None:
            self.interrupted = True
            os.kill(self._proc.pid, signal.SIGINT)

    def wait(self, timeout_s: float | None = None) -> int | None:
        """The exit code, or None when it is still running after `timeout_s`."""
        if self._proc is None:
            return None
        try:
            return self._proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        """SIGKILL the whole session (the run and any process activity it started)."""
        if self.running and self._proc is not None:
            self.killed = True
            try:
                os.killpg(self._proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self._proc.wait()

    def journal(self) -> dict[str, Any] | None:
        try:
            loaded = json.loads(self.journal_path.read_text())
        except (OSError, ValueError):
            return None
        return loaded if isinstance(loaded, dict) else None

    def status(self) -> str:
        """The journal's status, "deviated" when the hypothesis failed, or why there is none."""
        if self.killed:
            return "killed"
        journal = self.journal()
        if journal is None:
            return "no-journal"
        if journal.get("deviated"):
            return "deviated"
        return str(journal.get("status") or "unknown")

    def rolled_back(self) -> bool:
        """True when the journal shows every rollback played and none failed."""
        journal = self.journal()
        if self.killed or journal is None:
            return False
        expected = len(journal.get("experiment", {}).get("rollbacks", []))
        runs = journal.get("rollbacks") or []
        return len(runs) == expected and all(r.get("status") == "succeeded" for r in runs)
