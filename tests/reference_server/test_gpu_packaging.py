"""Packaging that cannot mix ONNX Runtime's CPU and GPU builds.

The fast tests read pyproject.toml and the Makefile. The slow one (built once per session by a
module fixture) asks uv, the installer `make install` uses, what `rushhour[gpu]` resolves to,
then installs that ONNX Runtime alone, held to the versions the resolver chose (nothing
byte-compiled), into a throwaway virtual environment and checks that it offers CUDA, is the only
ONNX Runtime there, and — with no GPU here — falls back to the CPU, which is what
`require_provider: cuda` catches. It skips, saying why, when the package index cannot be reached.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name

from rushhour.reference_server.model.providers import RUNTIME_DISTRIBUTIONS, installed_runtimes

REPO = Path(__file__).resolve().parents[2]
UV = Path(sys.executable).parent / "uv"
INSTALL_TIMEOUT_S = 600
UNREACHABLE = ("Failed to fetch", "error sending request", "dns error")  # uv's words for a network failure
_CHECK = """
import json
from importlib import metadata
import onnxruntime as ort
names = [d.metadata["Name"].lower() for d in metadata.distributions()]
session = ort.InferenceSession(__import__("sys").argv[1], providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
print(json.dumps({"available": ort.get_available_providers(), "distributions": names, "in_use": session.get_providers()[0]}))
"""


def _project() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def _names(requirements: list[str]) -> list[str]:
    return [re.split(r"[\[<>=!~; ]", r, maxsplit=1)[0].lower() for r in requirements]


def test_base_dependencies_have_no_onnxruntime() -> None:
    assert not [n for n in _names(_project()["dependencies"]) if n.startswith("onnxruntime")]


def test_cpu_and_gpu_extras_each_bring_one_build() -> None:
    extras = _project()["optional-dependencies"]
    assert _names(extras["cpu"]) == ["onnxruntime"]
    assert _names(extras["gpu"]) == ["onnxruntime-gpu"]
    assert not [n for name in ("test",) for n in _names(extras[name]) if n.startswith("onnxruntime")]


def _make_install_lines(target: str, *args: str) -> list[str]:
    done = subprocess.run(["make", "-n", "-B", target, *args], cwd=REPO, capture_output=True, text=True, timeout=60, check=True)
    return [line for line in done.stdout.splitlines() if "pip install -e" in line]


def test_makefile_installs_cpu_build_by_default_and_gpu_on_request() -> None:
    for build in ("cpu", "gpu"):
        flag = f"RUSHHOUR_GPU={int(build == 'gpu')}"
        (install,) = _make_install_lines("install", flag)  # what a user needs: no test extra
        assert f"-e '.[{build}]'" in install
        (tests,) = _make_install_lines("test-fast", flag)  # the tests: one install, with the test extra
        assert f"-e '.[{build},test]'" in tests


def test_this_environment_has_exactly_one_onnxruntime() -> None:
    assert len(installed_runtimes()) == 1, installed_runtimes()


@dataclass(frozen=True)
class GpuEnv:
    resolved: list[tuple[str, str]]
    check: dict


def _uv(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(UV), *args], capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, check=False)


def _pins(text: str) -> list[tuple[str, str]]:
    """(name, version) of every `name==version` line of a compiled requirements file."""
    return [(canonicalize_name(name), version.split()[0]) for name, _, version in
            (line.partition("==") for line in text.splitlines() if "==" in line and not line.startswith("#"))]


def _tiny_model(path: Path) -> Path:
    from onnx import TensorProto, helper, save_model

    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "tiny",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    save_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), str(path))
    return path


@pytest.fixture(scope="module")
def gpu_env(tmp_path_factory: pytest.TempPathFactory) -> GpuEnv:
    if not UV.exists():
        pytest.skip(f"uv is not installed at {UV} (`make install` installs it)")
    work = tmp_path_factory.mktemp("gpu-extra")
    pins = work / "pins.txt"
    resolved = _uv("pip", "compile", str(REPO / "pyproject.toml"), "--extra", "gpu", "--python", sys.executable,
                   "--quiet", "--no-header", "--output-file", str(pins))
    if resolved.returncode != 0 and any(word in resolved.stderr for word in UNREACHABLE):
        pytest.skip(f"the package index cannot be reached (uv pip compile: {resolved.stderr.strip()[-300:]})")
    assert resolved.returncode == 0, resolved.stderr[-3000:]
    runtimes = [(name, version) for name, version in _pins(pins.read_text()) if name in RUNTIME_DISTRIBUTIONS]
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    # the runtime without extras (no CUDA wheels: this machine has no GPU to load them), every
    # package it needs held by the constraints to the version the project's resolution chose
    installed = _uv("pip", "install", "--python", str(python), "--quiet", "--constraint", str(pins),
                    *(f"{name}=={version}" for name, version in runtimes))
    assert installed.returncode == 0, installed.stderr[-3000:]
    checked = subprocess.run([str(python), "-c", _CHECK, str(_tiny_model(work / "tiny.onnx"))], capture_output=True,
                             text=True, timeout=120, check=False)
    assert checked.returncode == 0, checked.stderr[-3000:]
    return GpuEnv(runtimes, json.loads(checked.stdout.strip().splitlines()[-1]))


@pytest.mark.slow
def test_gpu_extra_resolves_to_onnxruntime_gpu_only(gpu_env: GpuEnv) -> None:
    assert [name for name, _ in gpu_env.resolved] == ["onnxruntime-gpu"]


@pytest.mark.slow
def test_gpu_build_offers_cuda(gpu_env: GpuEnv) -> None:
    assert "CUDAExecutionProvider" in gpu_env.check["available"]


@pytest.mark.slow
def test_gpu_environment_holds_one_onnxruntime(gpu_env: GpuEnv) -> None:
    assert [n for n in gpu_env.check["distributions"] if n in RUNTIME_DISTRIBUTIONS] == ["onnxruntime-gpu"]


@pytest.mark.slow
def test_gpu_build_without_gpu_falls_back_to_cpu(gpu_env: GpuEnv) -> None:
    """Without a GPU the session quietly runs on the CPU; only checking the provider in use tells."""
    if Path("/dev/nvidia0").exists():
        pytest.skip("this machine has an NVIDIA GPU, so the fallback cannot be seen here")
    assert gpu_env.check["in_use"] == "CPUExecutionProvider"
