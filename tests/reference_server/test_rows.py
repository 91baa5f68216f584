"""HostRowDecoder: rows that join and leave a running decode get exactly `translate_batch`'s output,
with their encoder run at once or a chunk per step (chunked prefill)."""

from __future__ import annotations

import pytest

from rushhour.reference_server.model import TIERS, ModelInput, load_model
from rushhour.reference_server.model.rows import HostRowDecoder, row_steps
from rushhour.reference_server.model.runtime import OnnxSeq2SeqModel
from rushhour.reference_server.model.samples import sample_text
from tests.support.models import shared_models

LENGTHS = (1, 9, 63, 200, 517, 0, 40, 3000)


@pytest.fixture(scope="module", params=TIERS)
def model(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> OnnxSeq2SeqModel:
    return load_model(request.param, cache_dir=shared_models(tmp_path_factory))


def _inputs() -> list[ModelInput]:
    items = [ModelInput(sample_text(n, salt=n), "en", ("de", "fr")[n % 2]) for n in LENGTHS]
    return items + [ModelInput(sample_text(300), "en", "de", max_tokens=5)]


@pytest.fixture(scope="module")
def alone(model: OnnxSeq2SeqModel) -> list[str]:
    """Each of `_inputs()` translated by itself, once per model: the output every decode must match."""
    return [model.translate_batch([item])[0] for item in _inputs()]


def _decode(decoder: HostRowDecoder, items: list[ModelInput], join_every: int) -> dict[int, list[str]]:
    """Admit one item every `join_every` steps, retire rows as they finish; pieces per item."""
    pending, rows, pieces, step = list(range(len(items))), [], {}, 0  # type: ignore[var-annotated]
    while pending or rows:
        if pending and step % join_every == 0:
            index = pending.pop()
            decoder.admit([items[index]])
            rows.append(index)
            pieces[index] = []
        out = decoder.step()
        done = [i for i, piece in enumerate(out) if piece.done]
        for index, piece in zip(rows, out):
            pieces[index].append(piece.text)
        decoder.retire(done)
        rows = [index for i, index in enumerate(rows) if i not in done]
        step += 1
    return pieces


@pytest.mark.parametrize(("join_every", "budget"), [
    (1, 0), (3, 0), (7, 0), (3, 5),
    pytest.param(7, 64, marks=pytest.mark.slow), pytest.param(2, 1000, marks=pytest.mark.slow),
])
@pytest.mark.slow
def test_rows_joining_and_leaving_match_translate_batch(model: OnnxSeq2SeqModel, alone: list[str], join_every: int,
                                                        budget: int) -> None:
    items = _inputs()
    pieces = _decode(model.row_decoder(budget), items, join_every)
    assert ["".join(pieces[i]) for i in range(len(items))] == alone
    for i, item in enumerate(items):
        waited = len(pieces[i]) - max(row_steps(item), 1)  # steps spent prefilling: empty pieces
        assert waited >= 0 and not any(pieces[i][:waited])
        if budget == 0:
            assert waited == 0


@pytest.mark.slow
def test_rows_max_tokens_caps_the_output_in_both_paths(model: OnnxSeq2SeqModel) -> None:
    full = ModelInput(sample_text(300), "en", "de")
    capped = ModelInput(full.text, "en", "de", max_tokens=5)
    assert row_steps(capped) == 5 < row_steps(full)
    assert model.translate_batch([capped])[0] == "".join(_decode(model.row_decoder(), [capped], 1)[0])


@pytest.mark.slow
def test_rows_retire_names_a_missing_row(model: OnnxSeq2SeqModel) -> None:
    decoder = model.row_decoder()
    decoder.admit([ModelInput("hello", "en", "de")])
    with pytest.raises(IndexError, match=r"Rows \[3\] are not in the active set of 1 rows"):
        decoder.retire([3])


@pytest.mark.slow
def test_rows_decoder_path_does_not_touch_a_fresh_batch(tmp_path_factory: pytest.TempPathFactory) -> None:
    model = load_model("fast", cache_dir=shared_models(tmp_path_factory))
    decoder = model.row_decoder()
    assert decoder.size == 0 and decoder.step() == []


@pytest.mark.slow
def test_rows_short_rows_decode_apart_from_a_document_with_the_same_output(model: OnnxSeq2SeqModel) -> None:
    shorts = [ModelInput(sample_text(90 + k, salt=k), "en", "de") for k in range(3)]
    doc = ModelInput(sample_text(2000, salt=5), "en", "fr")
    decoder = model.row_decoder()
    decoder.admit([doc, *shorts])
    groups = decoder._groups()
    assert [(first, end) for first, end, _ in groups] == [(0, 3), (3, 4)]  # shortest first, the document alone
    assert (groups[0][2], groups[1][2]) == (1 + 92 // 4, 1 + 2000 // 4)  # each run trimmed to its longest source
    pieces: list[list[str]] = [[] for _ in range(4)]
    done = False
    while not done:
        out = decoder.step()
        for index, piece in enumerate(out):
            pieces[index].append(piece.text)
        done = all(piece.done for piece in out)
    assert ["".join(p) for p in pieces] == [model.translate_batch([item])[0] for item in (doc, *shorts)]
