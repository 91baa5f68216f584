"""What each kind of rushhour process imports before its work, checked in fresh interpreters.

A drill starts a gateway, its nodes and Locust processes, a capacity search one Locust process per
step, and a fault restarts nodes; every import they do not need is paid again at each start
(benchmarks/startup.py measures it). A node serves four routes with plain Starlette and reads
none of the configuration's models; the command line judges and reports with `scipy.special`, not
`scipy.stats` (half a second to import); the Locust process is checked in
tests/scenarios/generator/test_locustfile.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from tests.reports.helpers import requests_frame, write_run

ROOT = Path(__file__).resolve().parents[1]
PROBE = """
import json, sys
{code}
print(json.dumps(sorted(name for name in {heavy!r} if name in sys.modules)))
"""


def _loaded(code: str, heavy: list[str]) -> list[str]:
    done = subprocess.run([sys.executable, "-c", PROBE.format(code=code, heavy=heavy)], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    loaded: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return loaded


def test_a_node_process_imports_no_web_framework_models_or_data_libraries() -> None:
    heavy = ["fastapi", "pydantic", "httpx", "pandas", "scipy", "rushhour.reference_server.config"]
    assert _loaded("import rushhour.reference_server.node.__main__, rushhour.reference_server.node.app", heavy) == []


def test_the_run_and_report_commands_import_no_scipy_stats() -> None:
    code = "import rushhour.scenarios.cli.main, rushhour.scenarios.cli.run, rushhour.scenarios.cli.report, rushhour.scenarios.cli.capacity"
    assert _loaded(code, ["scipy.stats", "scipy.optimize", "matplotlib.pyplot"]) == []


def test_a_whole_report_is_judged_and_drawn_without_scipy_stats(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    intended = np.sort(rng.random(400)) * 120.0
    run = write_run(tmp_path / "run", requests_frame(intended, rng.gamma(2.0, 40.0, 400)),
                    scenario={"slos": [{"name": "p99", "kind": "latency", "percentile": 99, "threshold_ms": 500},
                                       {"name": "avail", "kind": "availability", "objective": 0.99}]})
    code = ("from rushhour.reports.build import build_reports\n"
            f"summary = build_reports({str(run)!r})\n"
            "assert summary['verdict'] in ('pass', 'fail'), summary['verdict']")
    assert _loaded(code, ["scipy.stats"]) == []
    assert (run / "report.html").is_file() and json.loads((run / "summary.json").read_text())["slos"]
