"""The documentation cannot rot: the site builds strictly (every link, anchor and generated
reference page), and every `rushhour ...` command the README and the guides show exists, with
every flag it is shown with."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from rushhour.scenarios.cli.main import _register, cli

REPO = Path(__file__).resolve().parents[2]
README_LINES = 300
SHOWN_IN = ["README.md", "docs/getting-started.md", "docs/gate.md", *sorted(
    str(p.relative_to(REPO)) for p in (REPO / "docs" / "guides").glob("*.md"))]
HISTORY_WORDS = re.compile(r"\b(earlier|today|used to|previous|the machine was slower)\b", re.IGNORECASE)
FENCE = re.compile(r"^```(bash|sh|shell|console)?[^\n]*$(.*?)^```", re.MULTILINE | re.DOTALL)
INLINE = re.compile(r"`(rushhour [^`]+)`")
ENV_PREFIX = re.compile(r"^(?:[A-Z_][A-Z0-9_]*=\S*\s+)+")
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")


def shown_commands(text: str) -> list[str]:
    """Every `rushhour <command> ...` line in a shell code block or inline code span of a page (output
    blocks, fenced without a shell language, are left out)."""
    lines = [line for lang, block in FENCE.findall(text) if lang for line in _joined(block)]
    lines += INLINE.findall(FENCE.sub("", text))
    commands = []
    for line in lines:
        line = " ".join(ENV_PREFIX.sub("", line.strip()).split(" #")[0].split())
        for prefix in (".venv/bin/rushhour ", "rushhour "):
            if line.startswith(prefix):
                commands.append("rushhour " + line[len(prefix):])
    return commands


def _joined(block: str) -> list[str]:
    """The block's lines with backslash continuations joined."""
    return block.replace("\\\n", " ").splitlines()


def _help(name: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, [name, "--help"])
    return result.exit_code, result.output


def _cases() -> list[tuple[str, str]]:
    return [(page, command) for page in SHOWN_IN if (REPO / page).exists()
            for command in shown_commands((REPO / page).read_text(encoding="utf-8"))]


def test_shown_commands_finds_blocks_inline_spans_and_env_prefixes() -> None:
    text = "Run `rushhour schema`.\n```bash\nKEY=1 rushhour run x.yaml \\\n    --dry-run  # plan\nkubectl -n rushhour get pods\n```\n"
    assert shown_commands(text) == ["rushhour run x.yaml --dry-run", "rushhour schema"]
    assert shown_commands("```\nrushhour drill live-demo  phase base\n```\n") == []


@pytest.mark.parametrize(("page", "command"), _cases())
def test_docs_command_exists_with_every_flag_shown(page: str, command: str) -> None:
    _register()
    name = command.split()[1]
    code, output = _help(name)
    assert code == 0, f'{page}: "{command}": rushhour has no command "{name}" ({output.strip()[:200]})'
    missing = [flag for flag in FLAG.findall(command) if flag not in output]
    assert not missing, f'{page}: "{command}": rushhour {name} --help has no {", ".join(missing)}'


def test_readme_is_a_short_product_page() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= README_LINES
    assert "make drill" in text and "make test" in text
    assert not HISTORY_WORDS.findall(text), HISTORY_WORDS.findall(text)
    assert not re.search(r"\bissue \d+", text, re.IGNORECASE)
    for target in re.findall(r"\]\(((?!https?:)[^)#]+)", text):
        assert (REPO / target).exists(), f"README.md links to {target}, which does not exist"


def test_readme_picture_is_small() -> None:
    picture = REPO / "docs" / "assets" / "report.png"
    assert picture.stat().st_size < 200_000


def test_makefile_has_the_readme_two_commands() -> None:
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^drill:", makefile, re.MULTILINE) and re.search(r"^test:", makefile, re.MULTILINE)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_site_builds_strictly(tmp_path: Path) -> None:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                            cwd=REPO, capture_output=True, text=True, env=env, timeout=280)
    assert result.returncode == 0, result.stderr[-4000:]
    cli_page = (tmp_path / "site" / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    for name in ("run", "capacity", "init", "schema", "compare"):
        assert f'id="rushhour-{name}"' in cli_page
    scenario_page = (tmp_path / "site" / "reference" / "scenario" / "index.html").read_text(encoding="utf-8")
    assert "max_lag_p99_ms" in scenario_page and "threshold_ms" in scenario_page
    results_page = (tmp_path / "site" / "reference" / "results" / "index.html").read_text(encoding="utf-8")
    assert "pool_wait_ms" in results_page and "float64" in results_page
