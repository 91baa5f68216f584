"""The lease keeper's log is never written through a link planted at its name, and the keeper
starts all the same (a fault must never go without its keeper because of its log)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from rushhour.experiments import leases


@pytest.mark.slow
def test_a_keeper_whose_log_is_a_planted_link_starts_and_leaves_the_target_untouched(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: `lease-keeper.log` was opened with Path.open("ab"), appending the keeper's output to the link's target."""
    chaos_dir = tmp_path / "results" / "drill" / "chaos"
    chaos_dir.mkdir(parents=True)
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's own file\n", encoding="utf-8")
    (chaos_dir / "lease-keeper.log").symlink_to(victim)
    monkeypatch.setattr("sys.argv", ["chaos", "run", "--journal-path", str(chaos_dir / "p.journal.json")])
    pid = leases.spawn_keeper("no_such_undo", 1.0, {})
    deadline = time.monotonic() + 60
    while os.waitpid(pid, os.WNOHANG) == (0, 0) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert victim.read_text(encoding="utf-8") == "the user's own file\n"
    assert (chaos_dir / "lease-keeper.log").is_symlink()  # left as it was, not replaced or followed
