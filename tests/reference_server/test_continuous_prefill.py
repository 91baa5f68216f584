"""Continuous batching over the real model with chunked prefill: a document's deadline or its
caller's cancellation retires it mid-encoder or mid-decode, the other rows keep their output, and
no step spends more than its prefill budget."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

import pytest

from rushhour.reference_server.batcher import DeadlineExceeded
from rushhour.reference_server.continuous import ContinuousBatcher
from rushhour.reference_server.model import ModelInput, load_model
from rushhour.reference_server.model.rows import IDLE_PREFILL_FACTOR, HostRowDecoder, row_steps
from rushhour.reference_server.model.runtime import OnnxSeq2SeqModel
from rushhour.reference_server.model.samples import sample_text
from rushhour.reference_server.node.model_worker import ModelWorker, NodeSettings
from tests.support.models import shared_models

BUDGET = 16
DOC = ModelInput(sample_text(4000, salt=11), "en", "de")
SHORT = ModelInput(sample_text(160, salt=12), "en", "fr")


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> OnnxSeq2SeqModel:
    return load_model("quality", cache_dir=shared_models(tmp_path_factory))


class Recorder:
    """The worker's step, counted; `hooks` run a callback after a given step, `when` once a condition
    on the row decoder holds (both on the decode thread, so the next plan already sees its effect)."""

    def __init__(self, worker: ModelWorker) -> None:
        self.worker = worker
        self.prefill: list[int] = []
        self.idle: list[bool] = []  # whether no row decoded during the step's prefill
        self.hooks: dict[int, Callable[[], None]] = {}
        self.when: tuple[Callable[[HostRowDecoder], bool], Callable[[], None]] | None = None

    def within_budget(self) -> bool:
        """Every step spent at most the budget, or IDLE_PREFILL_FACTOR times it when no row decoded."""
        return all(tokens <= BUDGET * (IDLE_PREFILL_FACTOR if idle else 1) for tokens, idle in zip(self.prefill, self.idle, strict=True))

    def __call__(self, retire: Sequence[int], admit: Sequence[ModelInput]) -> list[tuple[str, bool]]:
        pieces = self.worker.decode_step(retire, admit)
        rows = self.worker._rows
        self.prefill.append(rows.prefill_tokens if rows is not None else 0)  # type: ignore[attr-defined]
        self.idle.append(rows is None or rows.prefill_idle)  # type: ignore[attr-defined]
        if (hook := self.hooks.pop(len(self.prefill), None)) is not None:
            hook()
        if self.when is not None and rows is not None and self.when[0](rows):  # type: ignore[arg-type]
            self.when[1]()
            self.when = None
        return pieces


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


def _setup(model: OnnxSeq2SeqModel) -> tuple[ContinuousBatcher[ModelInput], Recorder, Clock]:
    settings = NodeSettings(node_id="n", pool="quality", tier="quality", batching="continuous", max_prefill_tokens=BUDGET)
    recorder, clock = Recorder(ModelWorker(settings, model=model)), Clock()
    batcher = ContinuousBatcher(recorder, max_batch_size=8, max_tokens=4096, clock=clock, steps=row_steps)
    return batcher, recorder, clock


async def _until(predicate: Callable[[], bool]) -> None:
    for _ in range(5000):
        if predicate():
            return
        await asyncio.sleep(0.002)
    raise AssertionError("condition never became true")


@pytest.mark.parametrize("when", ["mid-encoder", "mid-decode"])
def test_continuous_prefill_deadline_retires_a_document(model: OnnxSeq2SeqModel, when: str) -> None:
    async def main() -> None:
        batcher, recorder, clock = _setup(model)
        batcher.start()
        doc_pieces: list[str] = []
        decoded = [0]  # steps in which the document decoded, alone once the short text is done

        def third_piece(rows: HostRowDecoder) -> bool:
            decoded[0] += rows.size == rows.decoding == 1
            return decoded[0] == 3

        async def read_doc() -> None:
            async for piece in batcher.stream(DOC, deadline=1.0):
                doc_pieces.append(piece)
        short = asyncio.create_task(batcher.submit(SHORT))
        reader = asyncio.create_task(read_doc())
        if when == "mid-encoder":
            recorder.hooks[10] = lambda: setattr(clock, "now", 2.0)
        else:
            recorder.when = (third_piece, lambda: setattr(clock, "now", 2.0))
        with pytest.raises(DeadlineExceeded):
            await reader
        assert (await short)[0] == model.translate_batch([SHORT])[0]
        assert len(doc_pieces) == (0 if when == "mid-encoder" else 3)  # retired at the next step boundary
        assert recorder.within_budget()
        assert batcher.stats.expired == 1
        await batcher.close()

    asyncio.run(main())


def test_continuous_prefill_cancelled_document_leaves_at_the_next_step(model: OnnxSeq2SeqModel) -> None:
    async def main() -> None:
        batcher, recorder, _ = _setup(model)
        batcher.start()
        doc = asyncio.create_task(batcher.submit(DOC))
        short = asyncio.create_task(batcher.submit(SHORT))
        await _until(lambda: len(recorder.prefill) >= 8)
        assert batcher.active_rows == 2
        doc.cancel()  # the caller went away while the document was still being encoded
        assert (await short)[0] == model.translate_batch([SHORT])[0]
        await _until(lambda: batcher.active_rows == 0)
        assert recorder.worker._rows.size == 0  # type: ignore[union-attr]
        assert sum(recorder.prefill) < 2 * 1001  # its encoder never finished
        assert recorder.within_budget()
        await batcher.close()

    asyncio.run(main())
