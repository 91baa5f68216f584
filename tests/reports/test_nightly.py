"""ci/nightly.sh end to end, with `rushhour run` faked by the synthetic results writer."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from reports.synth import make_results

REPO = Path(__file__).resolve().parents[2]
FAKE = """#!{python}
import os, sys
from pathlib import Path
args = sys.argv[1:]
if args[0] == "run":
    from reports.synth import make_results
    out = Path(args[args.index("--out") + 1])
    make_results(out, n_requests=2000, seed=7, slowdown=float(os.environ["FAKE_SLOWDOWN"]))
    sys.exit(0)
from reports.cli import compare, report
{{"report": report, "compare": compare}}[args[0]].main(args[1:], prog_name="rushhour")
"""


def _nightly(tmp_path: Path, slowdown: float) -> subprocess.CompletedProcess[str]:
    fake = tmp_path / "rushhour"
    fake.write_text(FAKE.format(python=sys.executable))
    fake.chmod(0o755)
    baseline = make_results(tmp_path / "baseline", n_requests=2000, seed=7)
    env = dict(os.environ, RUSHHOUR=str(fake), FAKE_SLOWDOWN=str(slowdown),
               NIGHTLY_BASELINE=str(baseline), NIGHTLY_OUT=str(tmp_path / "out"),
               NIGHTLY_ARTIFACTS=str(tmp_path / "artifacts"), PYTHONPATH=str(REPO))
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
