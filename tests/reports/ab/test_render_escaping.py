"""ab.md keeps names from files inside their line and cell, whatever they hold."""

from __future__ import annotations

import re

from rushhour.reports.ab.render import render_markdown

HOSTILE = "p99\n# Owned | x"


def _doc() -> dict:
    group = {"name": HOSTILE, "percentile": 99, "baseline_ms": 10.0, "candidate_ms": 11.0, "ratio_text": "1.10",
             "mde_text": "5%", "pairs": 40, "verdict": "no_regression", "reason": f"{HOSTILE} held"}
    return {"scenario": "s\n## forged heading", "sentence": "No regression.", "targets": {"baseline": "a", "candidate": "b"},
            "design": {"trials": 4, "trial_s": 2.0, "seed": 1}, "threshold": 1.1, "tests": 1, "test_confidence": 0.95,
            "error_margin": 0.01, "runner": "ci", "groups": [group],
            "errors": [{"population": HOSTILE, "text": "same"}], "cache": {}, "generator": {"valid": True, "reasons": []},
            "trials": [{"arm": "baseline", "value_ms": 10.0, "attempted": 5}]}


def test_ab_markdown_keeps_a_hostile_name_in_its_line_and_cell() -> None:
    lines = render_markdown(_doc()).splitlines()
    assert not [line for line in lines if line.startswith(("# Owned", "## forged"))]
    row = next(line for line in lines if line.startswith("| p99"))
    assert len(re.findall(r"(?<!\\)\|", row)) == 9  # eight cells, none added by the name
