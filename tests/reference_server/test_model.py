"""Behaviour of the bundled ONNX stand-in model: determinism, cost shape, tiers, caching."""

from __future__ import annotations

import collections
from pathlib import Path

import pytest

from rushhour.reference_server.model import (
    TIERS,
    ModelInput,
    Seq2SeqModel,
    build_model,
    load_model,
    output_tokens,
)
from rushhour.reference_server.model.runtime import OnnxSeq2SeqModel
from rushhour.reference_server.model.samples import sample_text

LENGTHS = (1, 9, 63, 200, 517)


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="module", params=TIERS)
def model(request: pytest.FixtureRequest, cache_dir: Path) -> OnnxSeq2SeqModel:
    return load_model(request.param, cache_dir=cache_dir)


def _inputs(target: str = "de") -> list[ModelInput]:
    return [ModelInput(sample_text(n, salt=n), "en", target) for n in LENGTHS]


@pytest.mark.slow
def test_model_satisfies_protocol_and_names_itself(model: OnnxSeq2SeqModel) -> None:
    assert isinstance(model, Seq2SeqModel)
    assert model.name == f"rushhour-{model.tier}-v1"


@pytest.mark.slow
def test_model_reports_cpu_provider_here(model: OnnxSeq2SeqModel) -> None:
    assert model.provider == "CPUExecutionProvider"


@pytest.mark.slow
def test_model_batch_matches_single_runs(model: OnnxSeq2SeqModel) -> None:
    inputs = _inputs()
    alone = [model.translate_batch([item])[0] for item in inputs]
    assert model.translate_batch(inputs) == alone
    assert model.translate_batch(inputs[::-1]) == alone[::-1]


@pytest.mark.slow
def test_model_padding_does_not_leak_next_to_long_document(model: OnnxSeq2SeqModel) -> None:
    short = ModelInput(sample_text(40), "en", "fr")
    long_doc = ModelInput(sample_text(3000, salt=3), "en", "fr")
    mixed = model.translate_batch([short, long_doc, short])
    assert mixed[::2] == model.translate_batch([short]) * 2


@pytest.mark.slow
def test_model_repeated_runs_are_identical(model: OnnxSeq2SeqModel) -> None:
    inputs = _inputs()
    assert model.translate_batch(inputs) == model.translate_batch(inputs)


@pytest.mark.slow
def test_model_output_length_grows_with_input(model: OnnxSeq2SeqModel) -> None:
    outputs = model.translate_batch(_inputs())
    sizes = [len(text) for text in outputs]
    assert sizes == sorted(sizes)
    assert sizes[-1] > 10 * sizes[0]


def test_model_target_language_changes_output(model: OnnxSeq2SeqModel) -> None:
    text = sample_text(120)
    german, french = model.translate_batch(
        [ModelInput(text, "en", "de"), ModelInput(text, "en", "fr")]
    )
    assert german != french


def test_model_empty_text_and_empty_batch(model: OnnxSeq2SeqModel) -> None:
    assert model.translate_batch([]) == []
    assert model.translate_batch([ModelInput("", "en", "de")]) == [""]


def test_model_accepts_any_unicode(model: OnnxSeq2SeqModel) -> None:
    texts = ["Grüße aus Köln 🚦", "東京の交通", "lone \ud800 surrogate"]
    outputs = model.translate_batch([ModelInput(t, "de", "en") for t in texts])
    assert [len(o) > 0 for o in outputs] == [True, True, True]


def test_output_tokens_tracks_characters() -> None:
    assert [output_tokens(n) for n in (0, 1, 3, 4, 200, 4000)] == [0, 1, 1, 2, 51, 1001]


def test_output_tokens_rejects_negative_count() -> None:
    with pytest.raises(ValueError, match="-1 characters"):
        output_tokens(-1)


def test_load_model_rejects_unknown_tier(cache_dir: Path) -> None:
    with pytest.raises(ValueError, match="Unknown model tier 'turbo'"):
        load_model("turbo", cache_dir=cache_dir)


def test_load_model_rejects_unavailable_provider(cache_dir: Path) -> None:
    with pytest.raises(ValueError, match="NoSuchExecutionProvider"):
        load_model("fast", cache_dir=cache_dir, providers=["NoSuchExecutionProvider"])


def test_build_writes_every_graph(cache_dir: Path) -> None:
    directory = build_model("quality", cache_dir=cache_dir)
    names = {p.name for p in directory.iterdir()}
    assert names == {"encoder.onnx", "decoder_step.onnx", "encoder_project.onnx", "encoder_attend.onnx", "spec.json"}


def test_fast_tier_is_quantized_and_quality_is_not(cache_dir: Path) -> None:
    import onnx
    from onnx import TensorProto

    for tier, expect_int8 in (("fast", True), ("quality", False)):
        graph = onnx.load(str(build_model(tier, cache_dir=cache_dir) / "decoder_step.onnx")).graph
        ops = collections.Counter(node.op_type for node in graph.node)
        int8_weights = [i for i in graph.initializer if i.data_type == TensorProto.INT8]
        assert (ops["MatMulInteger"] > 0 and len(int8_weights) > 0) is expect_int8, tier


def test_decoder_graph_has_documented_interface(cache_dir: Path) -> None:
    import onnx

    graph = onnx.load(str(build_model("quality", cache_dir=cache_dir) / "decoder_step.onnx")).graph
    assert [i.name for i in graph.input] == ["prev_token", "state", "memory", "memory_mask"]
    assert [o.name for o in graph.output] == ["next_token", "new_state"]
