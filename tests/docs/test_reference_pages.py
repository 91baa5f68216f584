"""The reference pages hold their generated parts as committed text (readable on the repository
page), and that text is current: the same as `python docs/hooks/reference.py` writes now."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
HOOK = REPO / "docs" / "hooks" / "reference.py"
GENERATED = {"cli": "reference/cli.md", "scenario": "reference/scenario.md", "exit-codes": "reference/exit-codes.md",
             "results-files": "reference/results.md", "requests-columns": "reference/results.md"}


def _hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("rushhour_docs_reference", HOOK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_reference_pages_hold_their_generated_parts_as_text() -> None:
    for name, page in GENERATED.items():
        text = (REPO / "docs" / page).read_text(encoding="utf-8")
        begin, end = f"<!-- generated: {name} -->\n", f"\n<!-- end generated: {name} -->"
        assert begin in text and end in text, f"docs/{page} has no committed {name} part"
        body = text.split(begin, 1)[1].split(end, 1)[0]
        assert len(body.strip().splitlines()) > 3, f"docs/{page}: the {name} part is empty"
    cli = (REPO / "docs" / "reference" / "cli.md").read_text(encoding="utf-8")
    assert "::: mkdocs-click" not in cli and "### rushhour run" in cli and "--dry-run" in cli


@pytest.mark.slow
def test_reference_pages_are_current() -> None:
    done = subprocess.run([sys.executable, str(HOOK), "--check"], cwd=REPO, capture_output=True, text=True,
                          timeout=300, env={"PATH": "/usr/bin:/bin", "COLUMNS": "37"})
    assert done.returncode == 0, done.stderr[-3000:] + "\nRun `python docs/hooks/reference.py` and commit the pages."


def test_fill_replaces_a_stale_part_keeps_the_rest_and_names_an_unknown_one() -> None:
    hook = _hook()
    stale = "# Exit codes\n\n<!-- generated: exit-codes -->\n| old |\n<!-- end generated: exit-codes -->\n\nafter\n"
    fresh = hook.fill(stale)
    assert "| old |" not in fresh and "| 3 | `INVALID` |" in fresh
    assert fresh.startswith("# Exit codes\n\n<!-- generated: exit-codes -->\n| code | name | meaning |")
    assert fresh.endswith("<!-- end generated: exit-codes -->\n\nafter\n") and hook.fill(fresh) == fresh
    assert hook.fill("<!-- generated: exit-codes -->\n") == hook.fill(fresh).split("\n\n", 1)[1].replace("\n\nafter", "")
    with pytest.raises(ValueError, match='No generated part is called "nope"'):
        hook.fill("<!-- generated: nope -->\n")
