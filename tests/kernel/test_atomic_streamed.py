"""Logs opened through kernel/atomic's `open_streamed`, and files created with a narrower mode:
a link planted at the log's name is refused and its target untouched."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from rushhour.kernel.atomic import LinkedOutputError, open_streamed, write_text_atomic
from tests.support.planted import VICTIM_TEXT, plant, victim_file


@pytest.mark.parametrize("append", [False, True])
def test_open_streamed_refuses_a_link_at_the_logs_name_and_leaves_its_target(tmp_path: Path, append: bool) -> None:
    """Before: a chaos, Locust or server log was opened with Path.open, writing into a planted link's target."""
    victim = victim_file(tmp_path)
    plant(tmp_path / "chaos.log", victim)
    with pytest.raises(LinkedOutputError, match=r'chaos.log": it is a symbolic link'):
        open_streamed(tmp_path / "chaos.log", append=append)
    assert victim.read_text(encoding="utf-8") == VICTIM_TEXT


def test_open_streamed_refuses_a_dangling_link_without_creating_its_target(tmp_path: Path) -> None:
    absent = tmp_path / "chosen" / "by-someone-else"
    absent.parent.mkdir()
    plant(tmp_path / "server.log", absent)
    with pytest.raises(LinkedOutputError):
        open_streamed(tmp_path / "server.log", append=True)
    assert not absent.exists()


def test_open_streamed_truncates_or_appends_a_plain_file(tmp_path: Path) -> None:
    path = tmp_path / "run.log"
    path.write_bytes(b"first\n")
    with open_streamed(path, append=True) as log:
        log.write(b"second\n")
    assert path.read_bytes() == b"first\nsecond\n"
    with open_streamed(path) as log:
        log.write(b"third\n")
    assert path.read_bytes() == b"third\n"


def test_a_file_written_with_mode_0600_is_never_readable_by_others(tmp_path: Path) -> None:
    path = tmp_path / "admin_token"
    path.write_text("old\n", encoding="utf-8")
    os.chmod(path, 0o644)
    write_text_atomic("secret\n", path, mode=0o600)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and path.read_text(encoding="utf-8") == "secret\n"
