"""A planted results folder: `rushhour report` writes through no link, and prints names as text."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from rushhour.kernel.safetext import markdown_text, terminal_text
from rushhour.scenarios.cli.main import cli
from rushhour.scenarios.cli.report import REPORT_OUTPUTS
from tests.reports.helpers import requests_frame, write_run

PRECIOUS = "the user's own notes\n"
INJECTED = "p99\n# Owned\n| forged | row |\n- [click](https://example.invalid) <img src=x>"


def _run(root: Path, slo_name: str = "p99") -> Path:
    intended = np.arange(0.0, 10.0, 0.05)
    slo = {"name": slo_name, "kind": "latency", "percentile": 99, "threshold_ms": 500}
    return write_run(root, requests_frame(intended, np.full(intended.size, 20.0)), scenario={"slos": [slo]},
                     events=[{"type": "run_start", "t_s": 0.0}, {"type": "run_end", "t_s": 10.0, "duration_s": 10.0}])


@pytest.mark.parametrize("name", REPORT_OUTPUTS)
def test_report_refuses_a_folder_whose_output_is_a_link_and_keeps_the_target(tmp_path: Path, name: str) -> None:
    root = _run(tmp_path / "run")
    victim = tmp_path / "notes.md"
    victim.write_text(PRECIOUS)
    (root / name).symlink_to(victim)
    result = CliRunner().invoke(cli, ["report", str(root)])
    assert result.exit_code == 2, result.output
    assert name in result.output and "symbolic link" in result.output
    assert victim.read_text() == PRECIOUS
    assert [n for n in REPORT_OUTPUTS if (root / n).exists() and not (root / n).is_symlink()] == []


def test_report_markdown_keeps_a_hostile_slo_name_inside_its_cell(tmp_path: Path) -> None:
    root = _run(tmp_path / "run", INJECTED)
    result = CliRunner().invoke(cli, ["report", str(root)])
    assert result.exit_code == 0, result.output
    lines = (root / "report.md").read_text().splitlines()
    assert not [line for line in lines if line.startswith(("# Owned", "| forged", "- [click]"))]
    text = "\n".join(lines)
    assert "<img" not in text and not re.search(r"(?<!\\)\]\(https://example", text)
    row = next(line for line in lines if line.startswith("| p99"))
    assert len(re.findall(r"(?<!\\)\|", row)) == 9  # the SLO table's eight cells, none added by the name
    assert all("\x1b" not in line and "# Owned" not in line.split(":")[0] for line in result.output.splitlines())


def test_markdown_text_escapes_what_could_start_a_block_or_a_cell() -> None:
    assert markdown_text("# head") == "\\# head" and markdown_text("1. item") == "1\\. item"
    assert markdown_text("a|b\nc") == "a\\|b c" and markdown_text("[x](y)") == "\\[x\\](y)"
    assert markdown_text("#slo-p99") == "#slo-p99" and markdown_text("12.5 ms") == "12.5 ms"
    assert markdown_text("<b>") == "&lt;b&gt;"


def test_terminal_text_shows_escapes_instead_of_acting_on_them() -> None:
    assert terminal_text("p99 missed") == "p99 missed"
    assert terminal_text("a\x1b[2Jb\nc\u202ed") == "a\\x1b[2Jb\\nc\\u202ed"
