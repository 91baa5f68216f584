"""Chunked prefill: chunk sizes, the per-step budget, running rows decoding while a document is
encoded, and rows retired before their encoder finished."""

from __future__ import annotations

import math

import pytest

from rushhour.reference_server.model import ModelInput, load_model
from rushhour.reference_server.model.prefill import MIN_BUDGET, chunk_size
from rushhour.reference_server.model.rows import IDLE_PREFILL_FACTOR, HostRowDecoder, row_steps
from rushhour.reference_server.model.runtime import OnnxSeq2SeqModel
from rushhour.reference_server.model.samples import sample_text
from rushhour.reference_server.model.tokenizer import encode_batch
from tests.support.models import shared_models

DOC = ModelInput(sample_text(4000, salt=7), "en", "de")


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> OnnxSeq2SeqModel:
    return load_model("quality", cache_dir=shared_models(tmp_path_factory))


def _tokens(item: ModelInput) -> int:
    return int(encode_batch([item.text], [item.source_lang], 8192)[0].shape[1])


@pytest.mark.parametrize(("left", "budget", "expected"), [
    (10, 4, 4), (5, 4, 3), (4, 4, 4), (3, 2, 0), (1, 4, 1), (2, 1, 0), (9, 8, 7), (100, 3, 3), (3, 3, 3), (0, 4, 0),
])
def test_prefill_chunk_size_never_cuts_one_token_from_several(left: int, budget: int, expected: int) -> None:
    take = chunk_size(left, budget)
    assert take == expected
    assert take <= budget and (take == left or (take >= 2 and left - take != 1) or take == 0)


@pytest.mark.parametrize("budget", [MIN_BUDGET, 37, 128])
def test_prefill_each_step_spends_at_most_the_budget_and_the_document_exactly_once(model: OnnxSeq2SeqModel, budget: int) -> None:
    decoder = model.row_decoder(budget)
    items = [DOC, ModelInput(sample_text(120, salt=1), "en", "fr"), ModelInput(sample_text(2500, salt=2), "en", "de")]
    decoder.admit(items)
    spent, idle = [], []
    while decoder.prefilling:
        decoder.step()
        spent.append(decoder.prefill_tokens)
        idle.append(decoder.prefill_idle)
    assert idle[0] and not all(idle)  # nothing decoded at first; the short text decoded once encoded
    assert all(tokens <= budget * (IDLE_PREFILL_FACTOR if nothing else 1) for tokens, nothing in zip(spent, idle, strict=True))
    assert max(tokens for tokens, nothing in zip(spent, idle, strict=True) if not nothing) == budget
    assert sum(spent) == 2 * sum(_tokens(item) for item in items)  # every token projected once, attended once


def test_prefill_a_running_row_gets_a_piece_every_step_while_a_document_is_encoded(model: OnnxSeq2SeqModel) -> None:
    budget = 32  # a decoding row holds the budget to this, not to IDLE_PREFILL_FACTOR times it
    short = ModelInput(sample_text(600, salt=3), "en", "de")
    decoder = model.row_decoder(budget)
    decoder.admit([short])
    while not decoder.step()[0].text:
        pass  # the short text's own prefill
    before = [decoder.step()[0] for _ in range(3)]
    decoder.admit([DOC])
    during = []
    while True:
        short_piece, doc_piece = decoder.step()
        during.append(short_piece)
        if doc_piece.text:
            break
    # the document took its encoder over many steps, and the running row decoded in every one
    assert len(during) == math.ceil(2 * _tokens(DOC) / budget)
    assert all(piece.text and not piece.done for piece in before + during)
    assert len(before + during) < row_steps(short)


def test_prefill_a_row_retired_mid_encoder_leaves_the_others_intact(model: OnnxSeq2SeqModel) -> None:
    short = ModelInput(sample_text(80, salt=4), "en", "de")
    decoder = model.row_decoder(16)
    decoder.admit([DOC, short])
    pieces = [decoder.step()[1].text for _ in range(5)]
    assert decoder.prefilling == 1 and decoder.size == 2
    decoder.retire([0])  # the document leaves (deadline or cancellation) before its encoder finished
    assert decoder.prefilling == 0 and decoder.size == 1
    while not (piece := decoder.step()[0]).done:
        pieces.append(piece.text)
    assert "".join(pieces) + piece.text == model.translate_batch([short])[0]


@pytest.mark.parametrize("budget", [1, 3])
def test_prefill_budget_below_the_minimum_is_refused(model: OnnxSeq2SeqModel, budget: int) -> None:
    with pytest.raises(ValueError, match=f"max_prefill_tokens must be 0 .* not {budget}"):
        model.row_decoder(budget)


def test_prefill_without_a_budget_encodes_in_the_admitting_step(model: OnnxSeq2SeqModel) -> None:
    decoder = model.row_decoder()
    assert isinstance(decoder, HostRowDecoder)
    decoder.admit([DOC])
    assert decoder.prefilling == 0 and decoder.step()[0].text
