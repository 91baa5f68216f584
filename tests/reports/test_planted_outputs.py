"""A results folder with a link planted at an output's name: the A/B and variant comparison
writers refuse it, naming the file, and the file the link points to keeps its text (what
`rushhour report` does for its own outputs is in test_planted_results)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rushhour.kernel.atomic import LinkedOutputError
from rushhour.reports.ab.build import build_ab
from rushhour.reports.variants import write_comparison
from tests.reports.ab.test_build import _folder, _night
from tests.support.planted import VICTIM_TEXT, plant, victim_file


@pytest.mark.parametrize("name", ["comparison.json", "comparison.html", "comparison.md"])
def test_variant_comparison_refuses_a_planted_link_and_keeps_its_target(tmp_path: Path, name: str) -> None:
    victim = victim_file(tmp_path)
    plant(tmp_path / "top" / name, victim)
    with pytest.raises(LinkedOutputError, match=name.replace(".", r"\.")):
        write_comparison(tmp_path / "top", [("gone", tmp_path / "gone")])
    assert victim.read_text(encoding="utf-8") == VICTIM_TEXT


@pytest.mark.parametrize("name", ["ab.json", "junit.xml"])
def test_ab_outputs_refuse_a_planted_link_and_keep_its_target(tmp_path: Path, name: str) -> None:
    root = _folder(tmp_path / "ab", _night(1.0, seed=4))
    victim = victim_file(tmp_path)
    plant(root / name, victim)
    with pytest.raises(LinkedOutputError, match=name.replace(".", r"\.")):
        build_ab(root)
    assert victim.read_text(encoding="utf-8") == VICTIM_TEXT
