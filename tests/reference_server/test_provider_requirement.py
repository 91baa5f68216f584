"""`require_provider: cuda`: on this CPU-only machine a quality node must refuse to start, with
a sentence that says why; the fast tier is not affected; the default still serves from the CPU."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rushhour.reference_server.config import ConfigError, load_config
from rushhour.reference_server.model import ProviderRequirementError, load_model
from rushhour.reference_server.model import providers as providers_module
from rushhour.reference_server.model.providers import CPU, CUDA, REQUIRE_ENV, parse_requirement, preflight
from rushhour.reference_server.node.model_worker import EXIT_REFUSED, ModelWorker, NodeSettings
from tests.support.models import shared_models

BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shared_models(tmp_path_factory)


def test_requiring_cuda_on_cpu_build_fails_with_reason(cache_dir: Path) -> None:
    with pytest.raises(ProviderRequirementError, match=r'quality tier must run on CUDA \(require_provider "cuda"\), but '
                       r"ONNX Runtime runs it on CPUExecutionProvider: this onnxruntime .* without CUDA; install the GPU build"):
        load_model("quality", cache_dir=cache_dir, require="cuda")


@pytest.mark.filterwarnings("ignore:Specified provider 'CUDAExecutionProvider' is not in available provider names")
@pytest.mark.slow
def test_requiring_cuda_when_offered_but_unusable_fails_after_loading(cache_dir: Path) -> None:
    """A GPU build on a machine without a GPU offers CUDA, and ONNX Runtime silently falls back."""
    with pytest.raises(ProviderRequirementError, match="offers CUDA but could not use it"):
        load_model("quality", cache_dir=cache_dir, require="cuda", available=[CUDA, CPU])


def test_requirement_names_mixed_installs(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(providers_module, "installed_runtimes", lambda: ["onnxruntime 1.32.0", "onnxruntime-gpu 1.31.1"])
    with pytest.raises(ProviderRequirementError,
                       match=r"several ONNX Runtime builds are installed together \(onnxruntime 1.32.0, onnxruntime-gpu"):
        load_model("quality", cache_dir=cache_dir, require="cuda")


@pytest.mark.slow
def test_requirement_does_not_apply_to_int8_tier(cache_dir: Path) -> None:
    assert load_model("fast", cache_dir=cache_dir, require="cuda").provider == CPU


@pytest.mark.slow
def test_default_serves_from_cpu_without_requirement(cache_dir: Path) -> None:
    assert load_model("quality", cache_dir=cache_dir).provider == CPU


@pytest.mark.parametrize(("value", "parsed"), [("cuda", "cuda"), (" CUDA ", "cuda"), ("", None), (None, None)])
def test_parse_requirement_accepts_cuda_or_nothing(value: str | None, parsed: str | None) -> None:
    assert parse_requirement(value) == parsed


def test_parse_requirement_names_bad_value() -> None:
    with pytest.raises(ValueError, match=f'{REQUIRE_ENV} is "gpu"; the only provider that can be required is "cuda"'):
        parse_requirement("gpu")


def test_preflight_without_requirement_does_nothing() -> None:
    assert preflight(None) is None


@pytest.mark.slow
def test_preflight_refuses_here() -> None:
    with pytest.raises(ProviderRequirementError, match="runs it on CPUExecutionProvider"):
        preflight("cuda")


def test_config_accepts_require_provider(tmp_path: Path) -> None:
    path = tmp_path / "server.yaml"
    path.write_text("require_provider: cuda\n")
    assert load_config(path).require_provider == "cuda"
    assert load_config(None).require_provider is None
    assert load_config(None, require_provider="cuda").require_provider == "cuda"


def test_config_names_bad_require_provider(tmp_path: Path) -> None:
    path = tmp_path / "server.yaml"
    path.write_text("require_provider: gpu\n")
    with pytest.raises(ConfigError, match="require_provider"):
        load_config(path)


def test_config_refuses_requirement_without_quality_pool(tmp_path: Path) -> None:
    path = tmp_path / "server.yaml"
    path.write_text("require_provider: cuda\npools: {quality: null}\n")
    with pytest.raises(ConfigError, match='require_provider "cuda" applies to quality pools, and there is none'):
        load_config(path)


def test_node_settings_take_requirement_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(REQUIRE_ENV, "cuda")
    assert NodeSettings(node_id="n", pool="quality", tier="quality").require_provider == "cuda"
    monkeypatch.setenv(REQUIRE_ENV, "")
    assert NodeSettings(node_id="n", pool="quality", tier="quality").require_provider is None


def test_warm_node_refuses_to_start_on_cpu(cache_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    exits: list[int] = []
    settings = NodeSettings(node_id="quality-0", pool="quality", tier="quality", model_cache_dir=cache_dir, require_provider="cuda")
    worker = ModelWorker(settings, exit_process=exits.append)
    with pytest.raises(ProviderRequirementError):
        worker.prepare()
    assert exits == [EXIT_REFUSED] and worker.state == "failed"
    assert "rushhour node quality-0: refusing to start. The quality tier must run on CUDA" in capsys.readouterr().err


@pytest.mark.parametrize("command", [[sys.executable, "-m", "rushhour.reference_server"], [str(BIN / "rushhour"), "serve"]])
@pytest.mark.slow
def test_serve_requiring_cuda_exits_2_before_listening(command: list[str], tmp_path: Path) -> None:
    done = subprocess.run([*command, "--require-provider", "cuda", "--port", "0"], capture_output=True, text=True, check=False,
                          timeout=120, env={"PATH": str(BIN), "RUSHHOUR_STATE_DIR": str(tmp_path), "HOME": str(tmp_path)})
    assert done.returncode == 2, done.stderr
    assert 'The quality tier must run on CUDA (require_provider "cuda")' in done.stderr
    assert "serving on" not in done.stderr


def test_scenario_embedded_target_passes_requirement_to_server_config(tmp_path: Path) -> None:
    from rushhour.scenarios.spec.model import load_scenario

    path = tmp_path / "gpu.yaml"
    path.write_text("name: gpu\ntraffic: {model: 'constant:5', duration: 10s}\n"
                    "target: {embedded: {require_provider: cuda, server: {cache: {enabled: false}}}}\n")
    embedded = load_scenario(path).target.embedded
    assert embedded is not None
    assert embedded.server == {"cache": {"enabled": False}, "require_provider": "cuda"}


def test_scenario_names_bad_requirement(tmp_path: Path) -> None:
    from rushhour.scenarios.spec.model import ScenarioError, load_scenario

    path = tmp_path / "gpu.yaml"
    path.write_text("name: gpu\ntraffic: {model: 'constant:5', duration: 10s}\ntarget: {embedded: {require_provider: tpu}}\n")
    with pytest.raises(ScenarioError, match="target.embedded.require_provider"):
        load_scenario(path)
