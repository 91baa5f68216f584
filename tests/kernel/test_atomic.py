"""A planted link: results files are written whole, beside their destination, never through a link."""

from __future__ import annotations

from pathlib import Path
from typing import IO

import pandas as pd
import pytest

from rushhour.kernel import atomic
from rushhour.kernel.atomic import (
    LinkedOutputError,
    refuse_linked_outputs,
    write_json_atomic,
    write_parquet_atomic,
    write_text_atomic,
)
from tests.support.planted import VICTIM_TEXT, plant, victim_file


def test_atomic_write_refuses_a_link_and_leaves_its_target_alone(tmp_path: Path) -> None:
    victim = victim_file(tmp_path)
    plant(tmp_path / "report.md", victim)
    with pytest.raises(LinkedOutputError, match=r'report\.md.*symbolic link'):
        write_text_atomic("# planted\n", tmp_path / "report.md")
    with pytest.raises(LinkedOutputError):
        write_json_atomic({"verdict": "pass"}, tmp_path / "report.md")
    with pytest.raises(LinkedOutputError):
        write_parquet_atomic(pd.DataFrame({"a": [1]}), tmp_path / "report.md")
    assert victim.read_text() == VICTIM_TEXT and (tmp_path / "report.md").is_symlink()
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_atomic_write_refuses_a_dangling_link_without_creating_its_target(tmp_path: Path) -> None:
    plant(tmp_path / "junit.xml", tmp_path / "would-be-created")
    with pytest.raises(LinkedOutputError, match="junit.xml"):
        write_text_atomic("<x/>", tmp_path / "junit.xml")
    assert not (tmp_path / "would-be-created").exists()


def test_atomic_write_never_opens_a_planted_temporary_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    victim = victim_file(tmp_path)
    monkeypatch.setattr(atomic.secrets, "token_hex", lambda n: "guessed")
    plant(tmp_path / ".summary.json.guessed.tmp", victim)
    with pytest.raises(FileExistsError):
        write_json_atomic({"verdict": "pass"}, tmp_path / "summary.json")
    assert victim.read_text() == VICTIM_TEXT and not (tmp_path / "summary.json").exists()


def test_atomic_write_refuses_a_link_planted_while_it_writes(tmp_path: Path) -> None:
    victim = victim_file(tmp_path)
    target = tmp_path / "report.html"

    def write_then_plant(handle: IO[bytes]) -> None:
        handle.write(b"<html/>")
        plant(target, victim)

    with pytest.raises(LinkedOutputError):
        atomic._write(target, write_then_plant)
    assert victim.read_text() == VICTIM_TEXT


def test_atomic_write_replaces_a_plain_file_whole(tmp_path: Path) -> None:
    path = tmp_path / "summary.json"
    path.write_text("old")
    write_json_atomic({"verdict": "fail"}, path)
    write_parquet_atomic(pd.DataFrame({"a": [1, 2]}), tmp_path / "x.parquet")
    assert path.read_text() == '{\n  "verdict": "fail"\n}\n'
    assert pd.read_parquet(tmp_path / "x.parquet")["a"].tolist() == [1, 2]


def test_refuse_linked_outputs_names_a_directory_in_a_file_s_place(tmp_path: Path) -> None:
    (tmp_path / "report.md").mkdir()
    with pytest.raises(LinkedOutputError, match="report.md.*not a plain file"):
        refuse_linked_outputs(tmp_path, ("summary.json", "report.md"))


def test_atomic_output_that_raises_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "requests.parquet"
    path.write_text("old")
    with pytest.raises(RuntimeError), atomic.atomic_output(path) as handle:
        handle.write(b"half")
        raise RuntimeError("killed mid-write")
    assert path.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["requests.parquet"]


def test_a_lone_surrogate_is_written_as_its_escape_and_the_rest_of_the_file_whole(tmp_path: Path) -> None:
    """Before: encoding a report holding a lone surrogate raised, and no report.html was written."""
    write_text_atomic("SLO p99\ud800 missed\n", tmp_path / "report.md")
    assert (tmp_path / "report.md").read_text(encoding="utf-8") == "SLO p99\\ud800 missed\n"
