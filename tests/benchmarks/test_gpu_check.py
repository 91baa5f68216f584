"""`python -m benchmarks.gpu_check --quick`, the one device call of docs/gpu.md, on the CPU build:
it says there is no CUDA provider, measures every part on the CPU and writes each under its output
folder; a part that fails is recorded and the others still run."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks import gpu_check
from tests.support.models import shared_models

REPO = Path(__file__).resolve().parents[2]
PARTS = ("gpucheck", "batches", "head_of_line", "smoke")
# Its smoke part is a drill judged on the generator keeping its schedule: in a CPU lane, so no more
# than three drills share the machine while it runs (six workers outside the lanes starve it).
pytestmark = pytest.mark.xdist_group("cpu-c")


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("out")
    models = shared_models(tmp_path_factory)
    done = subprocess.run([sys.executable, "-m", "benchmarks.gpu_check", "--quick", "--model-cache-dir", str(models)],
                          cwd=REPO, capture_output=True, text=True, timeout=600, check=False, env={**os.environ, "OUT": str(out)})
    assert done.returncode in (0, 1), done.stdout[-2000:] + done.stderr[-3000:]
    return done, out, json.loads((out / "gpu_check.json").read_text())


@pytest.mark.slow
def test_gpu_check_says_cpu_only_and_writes_every_part_under_out(quick: tuple[Any, Path, dict[str, Any]]) -> None:
    done, out, result = quick
    assert done.stdout.startswith(gpu_check.NO_CUDA + "\n") and result["note"] == gpu_check.NO_CUDA
    assert result["cuda"] is False and result["gpucheck"]["environment"]["cuda"] == "absent"
    for part in PARTS:
        assert "error" not in result[part], result[part]
        assert json.loads((out / f"{part}.json").read_text())["elapsed_s"] == result[part]["elapsed_s"]
    assert result["gpucheck"]["ok"] is True and "every part ran" in done.stdout


@pytest.mark.slow
def test_gpu_check_batch_sweep_covers_1_8_32_64_and_the_cpu_reference(quick: tuple[Any, Path, dict[str, Any]]) -> None:
    batches = quick[2]["batches"]
    rows = batches["served"]["rows"]
    assert [r["batch_size"] for r in rows] == [1, 8, 32, 64] and batches["served"]["provider"] == "CPUExecutionProvider"
    # How much a batch gains is a speed, measured by the benchmark on a quiet machine, never asserted
    # here (the test shares the machine with the suite): only that each figure is what its row says.
    assert all(r["requests_per_s"] > 0 and r["batch_latency_ms"] > 0 for r in rows)
    for row in rows:
        assert row["gain_vs_batch1"] == pytest.approx(row["requests_per_s"] / rows[0]["requests_per_s"])
        assert row["batch_latency_ms"] == pytest.approx(1000.0 * row["batch_size"] / row["requests_per_s"])
    cpu_rows = batches["cpu"]["rows"]
    assert [r["batch_size"] for r in cpu_rows] == [1, 8] and batches["cpu"]["provider"] == "CPUExecutionProvider"
    assert batches["cpu_gain_batch8"] == pytest.approx(cpu_rows[1]["requests_per_s"] / cpu_rows[0]["requests_per_s"])
    assert batches["gain_batch8"] == rows[1]["gain_vs_batch1"]


@pytest.mark.slow
def test_gpu_check_head_of_line_and_smoke_run_name_the_provider(quick: tuple[Any, Path, dict[str, Any]]) -> None:
    done, out, result = quick
    hol = result["head_of_line"]
    assert hol["provider"] == "CPUExecutionProvider" and hol["errors"] == 0
    assert all(math.isfinite(hol[k]) and hol[k] > 0 for k in ("alone_p50_ms", "beside_p50_ms", "alone_ttft_p99_ms"))
    smoke = result["smoke"]
    assert smoke["required_cuda"] is False and smoke["exit_code"] in (0, 1) and smoke["verdict"] in ("pass", "fail")
    assert smoke["providers_in_summary"] == ["CPUExecutionProvider"] == smoke["providers_in_report"]
    assert (out / "smoke-run" / "report.html").is_file()
    assert done.returncode == (0 if smoke["exit_code"] == 0 else 1)


def test_a_failed_part_is_recorded_and_does_not_stop_the_others(tmp_path: Path) -> None:
    def broken() -> dict[str, Any]:
        raise RuntimeError("no device")

    recorded = gpu_check._part("batches", broken, tmp_path)
    assert recorded["error"] == "RuntimeError: no device"
    assert json.loads((tmp_path / "batches.json").read_text())["error"] == "RuntimeError: no device"
    assert gpu_check._part("smoke", lambda: {"exit_code": 0}, tmp_path)["exit_code"] == 0
