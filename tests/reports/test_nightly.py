"""ci/nightly.sh end to end, with `rushhour run` faked by the synthetic results writer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from benchmarks.synth import make_results

REPO = Path(__file__).resolve().parents[2]
FAKE = """#!{python}
import os, sys
from pathlib import Path
args = sys.argv[1:]
if args[0] == "run":
    from benchmarks.synth import make_results
    out = Path(args[args.index("--out") + 1])
    make_results(out, n_requests=2000, seed=7, slowdown=float(os.environ["FAKE_SLOWDOWN"]))
    sys.exit(0)
from scenarios.cli.report import compare, report
{{"report": report, "compare": compare}}[args[0]].main(args[1:], prog_name="rushhour")
"""


def _fake(tmp_path: Path) -> Path:
    fake = tmp_path / "rushhour"
    fake.write_text(FAKE.format(python=sys.executable))
    fake.chmod(0o755)
    return fake


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return dict(os.environ, RUSHHOUR=str(_fake(tmp_path)), PYTHONPATH=str(REPO),
                NIGHTLY_OUT=str(tmp_path / "out"), NIGHTLY_ARTIFACTS=str(tmp_path / "artifacts"), **extra)


def _nightly(tmp_path: Path, slowdown: float, baseline: Path | None = None) -> subprocess.CompletedProcess[str]:
    baseline = baseline or make_results(tmp_path / "baseline", n_requests=2000, seed=7)
    env = _env(tmp_path, FAKE_SLOWDOWN=str(slowdown), NIGHTLY_BASELINE=str(baseline))
    return subprocess.run(["bash", str(REPO / "ci" / "nightly.sh")], env=env, text=True,
                          capture_output=True, timeout=120)


@pytest.mark.parametrize(("slowdown", "expected"), [(1.0, 0), (1.3, 1)])
def test_nightly_gate_exit_code_and_kept_junit(tmp_path: Path, slowdown: float, expected: int) -> None:
    done = _nightly(tmp_path, slowdown)
    assert done.returncode == expected, done.stdout + done.stderr
    junit = ET.parse(tmp_path / "artifacts" / "junit.xml").getroot()
    regression = [case for case in junit.iter("testcase") if case.get("classname") == "regression"]
    assert len(regression) == 1
    assert (regression[0].find("failure") is not None) == (expected == 1)
    assert (tmp_path / "artifacts" / "report.html").exists()


def test_nightly_gate_with_a_baseline_of_several_runs(tmp_path: Path) -> None:
    # ci/refresh_baseline.sh with two same-code runs lays out run-1 and run-2; the gate pairs the
    # night's run with both (same seed), models their noise, and still catches a 30% slowdown.
    runs = [make_results(tmp_path / f"night-{i}", n_requests=2000, seed=7, noise=0.1, noise_seed=i)
            for i in (1, 2)]
    baseline = tmp_path / "baseline"
    refresh = subprocess.run(["bash", str(REPO / "ci" / "refresh_baseline.sh"), *map(str, runs)],
                             env=_env(tmp_path, NIGHTLY_BASELINE=str(baseline)), text=True,
                             capture_output=True, timeout=120)
    assert refresh.returncode == 0, refresh.stdout + refresh.stderr
    assert sorted(p.name for p in baseline.iterdir()) == ["run-1", "run-2"]
    assert (baseline / "run-2" / "schedule.parquet").exists()
    done = _nightly(tmp_path, 1.3, baseline)
    assert done.returncode == 1, done.stdout + done.stderr
    decision = json.loads((tmp_path / "artifacts" / "summary.json").read_text())["comparison"]["decision"]
    assert len(decision["baseline_runs"]) == 2 and decision["paired"] is True
    assert all(group["noise_band"] is not None for group in decision["groups"])
