"""`python -m rushhour.reference_server.gpucheck` runs on the CPU build too: it says CUDA is absent,
measures the CPU, prints its table and writes its JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rushhour.reference_server.gpucheck import render
from rushhour.reference_server.model.build import ensure_built
from rushhour.reference_server.model.compare import FP16_TOLERANCE, agreement, batch_independence, check_inputs
from rushhour.reference_server.model.providers import CPU, SessionPlan
from rushhour.reference_server.model.runtime import OnnxSeq2SeqModel, load_model
from rushhour.reference_server.model.spec import get_spec
from tests.support.models import shared_models

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    work = tmp_path_factory.mktemp("gpucheck")
    out = work / "gpucheck.json"
    done = subprocess.run([sys.executable, "-m", "rushhour.reference_server.gpucheck", "--quick", "--out", str(out),
                           "--model-cache-dir", str(shared_models(tmp_path_factory))],
                          cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return done, json.loads(out.read_text())


@pytest.mark.slow
def test_gpucheck_reports_cuda_absent_on_cpu_build(quick_run: tuple[subprocess.CompletedProcess[str], dict[str, Any]]) -> None:
    done, result = quick_run
    assert result["environment"]["cuda"] == "absent"
    assert "CUDA" in done.stdout and "absent" in done.stdout and "wrote " in done.stdout
    assert done.stdout.startswith("no CUDA provider: CPU figures only\n")


@pytest.mark.slow
def test_gpucheck_reports_every_tier_in_agreement(quick_run: tuple[subprocess.CompletedProcess[str], dict[str, Any]]) -> None:
    tiers = quick_run[1]["tiers"]
    assert {t: (v["provider"], v["precision"], v["ok"]) for t, v in tiers.items()} == {
        "quality": (CPU, "fp32", True), "fast": (CPU, "int8", True)}
    assert all(v["identical_share"] == 1.0 and v["batch_independent_share"] == 1.0 for v in tiers.values())


@pytest.mark.slow
def test_gpucheck_measures_batching_served_and_cold_start(quick_run: tuple[subprocess.CompletedProcess[str], dict[str, Any]]) -> None:
    result = quick_run[1]
    assert result["batching"]["gain"] > 1.0
    assert result["served"]["served_rps"] > 0 and result["served"]["errors"] == 0 and result["served"]["ratio"] > 0
    assert result["cold_start"]["total_s"] > result["cold_start"]["load_s"] > 0
    assert result["ok"] is True and result["elapsed_s"] < 300


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shared_models(tmp_path_factory)


@pytest.mark.slow
def test_agreement_of_fp16_build_is_judged_by_tolerance(cache_dir: Path) -> None:
    spec = get_spec("quality")
    plan = SessionPlan(providers=(CPU,), provider_options=({},), precision="fp16", device="cpu", io_binding=True)
    half = OnnxSeq2SeqModel(spec, ensure_built(spec, cache_dir, fp16=True), plan, 1)
    reference = load_model("quality", cache_dir=cache_dir)
    found = agreement(half, reference, check_inputs(4))
    assert found.tolerance == FP16_TOLERANCE and found.ok and found.encoder_max_rel_error <= FP16_TOLERANCE
    assert batch_independence(half, check_inputs(4)) == 1.0


def _cuda_result() -> dict[str, Any]:
    tier = {"provider": "CUDAExecutionProvider", "precision": "fp16", "io_binding": True, "reference": f"{CPU} fp32",
            "identical_share": 0.75, "encoder_max_rel_error": 0.003, "tolerance": FP16_TOLERANCE, "ok": True,
            "batch_independent_share": 1.0}
    return {
        "environment": {"installed": ["onnxruntime-gpu 1.31.1"], "available": ["CUDAExecutionProvider", CPU], "cuda": "in use"},
        "tiers": {"quality": tier, "fast": {**tier, "provider": CPU, "precision": "int8", "io_binding": False,
                                            "reference": f"{CPU} int8", "tolerance": 0.0, "identical_share": 1.0}},
        "batching": {"batch_size": 8, "gain": 6.5, "raw_rps": 650.0, "raw_batch1_rps": 100.0},
        "served": {"ratio": 0.9, "served_rps": 585.0, "raw_rps": 650.0, "errors": 0, "node_cold_start_s": 4.2},
        "cold_start": {"total_s": 6.0, "import_s": 0.5, "load_s": 5.0, "first_translation_s": 0.5},
        "ok": True, "elapsed_s": 95.0,
    }


def test_render_shows_cuda_tier_with_its_tolerance() -> None:
    table = render(_cuda_result())
    assert "CPU figures only" not in table
    assert "quality: provider, precision, IO binding  CUDAExecutionProvider, fp16, yes" in table
    assert "75% identical texts, encoder max rel. error 0.003 (<= 0.01)" in table
    assert "fast: provider, precision, IO binding     CPUExecutionProvider, int8, no" in table
    assert "6.50x" in table and "0.90x" in table


def test_render_says_when_cold_start_failed() -> None:
    result = _cuda_result()
    result["cold_start"] = {"error": "the cold-start process exited with 1: boom"}
    assert "the cold-start process exited with 1: boom" in render(result)
