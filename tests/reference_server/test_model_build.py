"""Cache behaviour of model builds: reuse, rebuild on spec change, env override, concurrency."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from rushhour.reference_server.model import build_model
from rushhour.reference_server.model.build import CACHE_ENV, ensure_built, model_dir, resolve_cache_dir
from rushhour.reference_server.model.spec import SPECS

SMALL = dataclasses.replace(
    SPECS["fast"], d_model=32, enc_ffn=32, dec_ffn=32, src_vocab=128, tgt_vocab=96
)


def test_build_reuses_existing_directory(tmp_path: Path) -> None:
    first = ensure_built(SMALL, tmp_path)
    stamp = (first / "spec.json").stat().st_mtime_ns
    assert ensure_built(SMALL, tmp_path) == first
    assert (first / "spec.json").stat().st_mtime_ns == stamp


def test_build_changes_directory_when_spec_changes(tmp_path: Path) -> None:
    first = ensure_built(SMALL, tmp_path)
    second = ensure_built(dataclasses.replace(SMALL, seed=SMALL.seed + 1), tmp_path)
    assert first != second
    assert (second / "decoder_step.onnx").is_file()
    assert (first / "decoder_step.onnx").read_bytes() != (second / "decoder_step.onnx").read_bytes()


def test_build_leaves_no_staging_directories(tmp_path: Path) -> None:
    ensure_built(SMALL, tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == [model_dir(SMALL, tmp_path).name]


def test_concurrent_builds_end_with_one_complete_directory(tmp_path: Path) -> None:
    results: list[Path] = []
    errors: list[BaseException] = []

    def build() -> None:
        try:
            results.append(ensure_built(SMALL, tmp_path))
        except BaseException as exc:  # noqa: BLE001 - collected and re-asserted in the main thread
            errors.append(exc)

    threads = [threading.Thread(target=build) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(set(results)) == 1
    names = sorted(p.name for p in results[0].iterdir())
    assert names == ["decoder_step.onnx", "encoder.onnx", "encoder_attend.onnx", "encoder_project.onnx", "spec.json"]
    assert len(list(tmp_path.iterdir())) == 1


def test_cache_dir_comes_from_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "env-cache"))
    assert resolve_cache_dir() == tmp_path / "env-cache"
    assert resolve_cache_dir(tmp_path / "arg") == tmp_path / "arg"


def test_build_model_rejects_unknown_tier(tmp_path: Path) -> None:
    message = "Unknown model tier 'large'; expected one of quality, fast."
    with pytest.raises(ValueError, match=message):
        build_model("large", cache_dir=tmp_path)


def test_a_server_whose_build_is_in_place_never_loads_the_onnx_package() -> None:
    """The onnx package (and ml_dtypes under it) takes about half a second of CPU to import; every
    gateway and node boot would pay it for files it only reads through ONNX Runtime."""
    code = ("import sys, rushhour.reference_server.node.serve, rushhour.reference_server.gateway.app, rushhour.reference_server.model; "
            "print(sorted(m for m in sys.modules if m == 'onnx' or m.startswith(('onnx.', 'ml_dtypes'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
