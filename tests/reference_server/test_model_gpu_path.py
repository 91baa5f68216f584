"""The GPU path's pieces that run without a GPU: the placement plan for a given set of offered
providers, the IO-bound decode loop (on the CPU provider), the fp16 build, warm-up buckets."""

from __future__ import annotations

from pathlib import Path

import pytest

from rushhour.reference_server.model import ModelInput
from rushhour.reference_server.model.build import ensure_built, model_dir
from rushhour.reference_server.model.providers import (
    CPU,
    CUDA,
    SessionPlan,
    plan_session,
    warmup_batch_sizes,
    warmup_text_lengths,
)
from rushhour.reference_server.model.runtime import OnnxSeq2SeqModel, load_model
from rushhour.reference_server.model.samples import sample_text
from rushhour.reference_server.model.spec import get_spec
from tests.support.models import shared_models

GPU_BUILD = ["TensorrtExecutionProvider", CUDA, CPU]
CPU_BUILD = ["AzureExecutionProvider", CPU]
BOUND_ON_CPU = SessionPlan(providers=(CPU,), provider_options=({},), precision="fp32", device="cpu", io_binding=True)


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("models")


def _inputs() -> list[ModelInput]:
    return [ModelInput(sample_text(n, salt=n), "en", ("de", "fr")[n % 2]) for n in (1, 9, 63, 200, 517, 0, 40)]


def test_plan_puts_quality_on_cuda_in_fp16_with_io_binding_when_cuda_is_offered() -> None:
    plan = plan_session(False, GPU_BUILD)
    assert (plan.providers, plan.precision, plan.device, plan.io_binding) == ((CUDA, CPU), "fp16", "cuda", True)
    assert plan.provider_options[0] == {"device_id": "0"}


def test_plan_keeps_int8_tier_on_cpu_even_when_cuda_is_offered() -> None:
    plan = plan_session(True, GPU_BUILD)
    assert (plan.providers, plan.precision, plan.device, plan.io_binding) == ((CPU,), "int8", "cpu", False)


def test_plan_on_cpu_build_is_fp32_host_loop() -> None:
    plan = plan_session(False, CPU_BUILD)
    assert (plan.providers, plan.precision, plan.device, plan.io_binding) == ((CPU,), "fp32", "cpu", False)


def test_plan_honours_requested_cpu_on_gpu_build() -> None:
    assert plan_session(False, GPU_BUILD, requested=[CPU]).precision == "fp32"


def test_plan_refuses_requested_provider_not_offered() -> None:
    with pytest.raises(ValueError, match="'CUDAExecutionProvider'.*not all available"):
        plan_session(False, CPU_BUILD, requested=[CUDA])


@pytest.mark.parametrize(
    ("max_batch", "device", "sizes"),
    [(8, "cpu", [1, 8]), (8, "cuda", [1, 2, 4, 8]), (12, "cuda", [1, 2, 4, 8, 12]), (1, "cuda", [1]), (1, "cpu", [1])],
)
def test_warmup_batch_sizes_cover_every_power_of_two_on_cuda(max_batch: int, device: str, sizes: list[int]) -> None:
    assert warmup_batch_sizes(max_batch, device) == sizes


@pytest.mark.parametrize(
    ("lengths", "device", "warmed"),
    [([32, 256, 1024], "cuda", [32, 256, 1024]), ([32, 256, 1024], "cpu", [32]), ([512, 64], "cpu", [64]),
     ([], "cpu", [])],
)
def test_warmup_text_lengths_are_all_on_cuda_and_the_shortest_on_the_cpu(lengths: list[int], device: str,
                                                                       warmed: list[int]) -> None:
    assert warmup_text_lengths(lengths, device) == warmed


@pytest.mark.slow
def test_io_bound_decode_on_cpu_matches_host_loop(tmp_path_factory: pytest.TempPathFactory) -> None:
    spec, cache_dir = get_spec("quality"), shared_models(tmp_path_factory)
    host = load_model("quality", cache_dir=cache_dir)
    bound = OnnxSeq2SeqModel(spec, ensure_built(spec, cache_dir), BOUND_ON_CPU, 1)
    inputs = _inputs()
    assert bound.translate_batch(inputs) == host.translate_batch(inputs)
    assert bound.translate_batch(inputs[2:3]) == host.translate_batch(inputs[2:3])


@pytest.mark.slow
def test_fp16_build_halves_weights_and_keeps_fp32_interface(cache_dir: Path) -> None:
    import onnx
    from onnx import TensorProto

    spec = get_spec("quality")
    directory = ensure_built(spec, cache_dir, fp16=True)
    assert directory == model_dir(spec, cache_dir, fp16=True) != model_dir(spec, cache_dir)
    graph = onnx.load(str(directory / "decoder_step.onnx")).graph
    big = [i for i in graph.initializer if len(i.dims) == 2 and min(i.dims) >= 64]
    assert big and all(i.data_type == TensorProto.FLOAT16 for i in big)
    inputs = [i.type.tensor_type.elem_type for i in graph.input]
    assert inputs == [TensorProto.INT64, TensorProto.FLOAT, TensorProto.FLOAT, TensorProto.INT64]


@pytest.mark.slow
def test_fp16_build_runs_through_io_binding(cache_dir: Path) -> None:
    """On the CPU provider ONNX Runtime computes fp16 nodes in fp32, so this checks the graphs
    and the bound loop, not fp16 precision (gpucheck measures that on a GPU)."""
    spec = get_spec("quality")
    plan = SessionPlan(providers=(CPU,), provider_options=({},), precision="fp16", device="cpu", io_binding=True)
    half = OnnxSeq2SeqModel(spec, ensure_built(spec, cache_dir, fp16=True), plan, 1)
    outputs = half.translate_batch(_inputs())
    assert len(outputs) == 7 and outputs[5] == "" and all(outputs[:5])


def test_int8_tier_has_no_fp16_build(cache_dir: Path) -> None:
    with pytest.raises(ValueError, match="fast tier is INT8"):
        ensure_built(get_spec("fast"), cache_dir, fp16=True)


@pytest.mark.slow
def test_model_reports_what_really_runs(tmp_path_factory: pytest.TempPathFactory) -> None:
    model = load_model("quality", cache_dir=shared_models(tmp_path_factory))
    assert (model.provider, model.device, model.precision) == (CPU, "cpu", "fp32")
