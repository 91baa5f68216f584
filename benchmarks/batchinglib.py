"""Measurements behind `python -m benchmarks.batching`: the promo-day mix, solo and streamed.

Short texts go through `/v1/translate/stream` (time to first piece and to the end), documents
through `/v1/translate`; every text is distinct, so nothing is a cache hit or coalesced. Load
goes only to the loopback server the bench started.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from dataclasses import dataclass, field

import httpx
import numpy as np
import psutil

from benchmarks.serverlib import BenchServer
from rushhour.kernel.quantiles import percentile_value
from rushhour.reference_server.model import ModelInput, load_model
from rushhour.reference_server.model.samples import sample_text

__all__ = ["HOL_GAP_S", "HOL_SHORTS", "HeadOfLine", "MixResult", "Request", "closed_mix", "head_of_line", "mix", "open_mix",
           "prefill_profile", "solo_model_times", "solo_shorts", "step_profile", "window_share"]

SHORT_CHARS = (20, 200)
DOC_CHARS = (1000, 5000)
DOC_SHARE = 0.15
HOL_DOC_CHARS = 4000
HOL_SHORT_CHARS = 100
HOL_SHORTS = 6
HOL_GAP_S = 0.1


@dataclass(frozen=True)
class Request:
    text: str
    doc: bool
    mode: str = "quality"


@dataclass
class MixResult:
    """Latencies (ms, from the intended send time) by kind; characters done (`chars`) and those of
    the requests that finished (`completed_chars`, the same outside the saturation windows); errors."""

    short_ms: list[float] = field(default_factory=list)
    short_ttft_ms: list[float] = field(default_factory=list)
    doc_ms: list[float] = field(default_factory=list)
    chars: float = 0.0
    completed_chars: int = 0
    errors: int = 0
    seconds: float = 0.0

    def p(self, kind: str, q: float) -> float:
        return percentile_value(getattr(self, kind), q)

    def summary(self) -> dict[str, float]:
        return {
            "short_p50_ms": self.p("short_ms", 50), "short_p99_ms": self.p("short_ms", 99),
            "short_ttft_p50_ms": self.p("short_ttft_ms", 50), "short_ttft_p99_ms": self.p("short_ttft_ms", 99),
            "doc_p50_ms": self.p("doc_ms", 50), "doc_p99_ms": self.p("doc_ms", 99),
            "chars_per_s": self.chars / self.seconds if self.seconds else 0.0,
            "completed_chars_per_s": self.completed_chars / self.seconds if self.seconds else 0.0,
            "requests": len(self.short_ms) + len(self.doc_ms), "errors": self.errors,
        }


def mix(count: int, *, seed: int, start: int = 0, mode: str = "quality") -> list[Request]:
    """The promo-day mix: 85% short texts (20-200 chars), 15% documents (1-5k chars), all distinct."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        doc = bool(rng.random() < DOC_SHARE)
        low, high = DOC_CHARS if doc else SHORT_CHARS
        chars = int(rng.integers(low, high + 1))
        prefix = f"{start + i:07d} "
        out.append(Request(prefix + sample_text(chars - len(prefix), start + i), doc, mode))
    return out


def _body(text: str, mode: str) -> dict[str, object]:
    return {"text": text, "source_lang": "en", "target_lang": "de", "mode": mode, "priority": "paid",
            "tenant": "bench", "deadline_ms": 120_000}


async def _one(client: httpx.AsyncClient, req: Request, intended: float, result: MixResult) -> None:
    try:
        if req.doc:
            response = await client.post("/v1/translate", json=_body(req.text, req.mode))
            ok = response.status_code == 200
            if ok:
                result.doc_ms.append((time.perf_counter() - intended) * 1000.0)
        else:
            ok = await _stream_short(client, req, intended, result)
    except httpx.HTTPError:
        ok = False
    if ok:
        result.chars += len(req.text)
        result.completed_chars += len(req.text)
    else:
        result.errors += 1


async def _stream_short(client: httpx.AsyncClient, req: Request, intended: float, result: MixResult) -> bool:
    first: float | None = None
    async with client.stream("POST", "/v1/translate/stream", json=_body(req.text, req.mode)) as response:
        if response.status_code != 200:
            return False
        async for line in response.aiter_lines():
            if line.startswith("event: piece") and first is None:
                first = time.perf_counter()
            elif line.startswith("event: error"):
                return False
    done = time.perf_counter()
    result.short_ttft_ms.append(((first or done) - intended) * 1000.0)
    result.short_ms.append((done - intended) * 1000.0)
    return True


def _client(url: str, connections: int) -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    return httpx.AsyncClient(base_url=url, limits=limits, timeout=180.0, trust_env=False)


async def _open(server: BenchServer, rate: float, duration_s: float, seed: int, mode: str) -> MixResult:
    rng = np.random.default_rng(seed)
    offsets = np.cumsum(rng.exponential(1.0 / rate, size=int(rate * duration_s * 1.5) + 10))
    offsets = offsets[offsets < duration_s]
    requests = mix(len(offsets), seed=seed, start=seed * 100_000, mode=mode)
    result = MixResult(seconds=duration_s)
    async with _client(server.url, 512) as client:
        start = time.perf_counter()
        tasks = []
        for offset, req in zip(offsets.tolist(), requests, strict=True):
            await asyncio.sleep(max(0.0, start + offset - time.perf_counter()))
            tasks.append(asyncio.create_task(_one(client, req, start + offset, result)))
        await asyncio.gather(*tasks)
    return result


def open_mix(server: BenchServer, *, rate: float, duration_s: float, seed: int, mode: str = "quality") -> MixResult:
    """Poisson arrivals of the mix at `rate` requests/s for `duration_s`; latency from intended send."""
    return asyncio.run(_open(server, rate, duration_s, seed, mode))


async def _closed(server: BenchServer, concurrency: int, warmup_s: float, duration_s: float, seed: int, mode: str) -> MixResult:
    requests = iter(mix(100_000, seed=seed, start=seed * 100_000, mode=mode))
    counted = MixResult(seconds=duration_s)
    start = time.perf_counter()
    window = (start + warmup_s, start + warmup_s + duration_s)
    running: set[int] = set()  # requests sent before the window's end and not answered yet

    async def worker(client: httpx.AsyncClient, slot: int) -> None:
        for key in itertools.count(slot, concurrency):
            req, scratch, sent = next(requests), MixResult(), time.perf_counter()
            if sent < window[1]:
                running.add(key)
            await _one(client, req, sent, scratch)
            running.discard(key)
            done = time.perf_counter()
            counted.chars += window_share(len(req.text) if scratch.chars else 0, sent, done, window)
            if window[0] <= done < window[1]:
                for name in ("short_ms", "short_ttft_ms", "doc_ms"):
                    getattr(counted, name).extend(getattr(scratch, name))
                counted.completed_chars += scratch.completed_chars
                counted.errors += scratch.errors

    async with _client(server.url, concurrency) as client:
        workers = [asyncio.create_task(worker(client, slot)) for slot in range(concurrency)]
        while time.perf_counter() < window[1] or running:  # the load goes on until the window's requests end
            await asyncio.sleep(0.05)
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
    return counted


def window_share(chars: int, sent: float, done: float, window: tuple[float, float]) -> float:
    """The part of a request's characters done inside the window, its time spread evenly over it."""
    overlap = min(done, window[1]) - max(sent, window[0])
    return chars * overlap / (done - sent) if overlap > 0 and done > sent else 0.0


def closed_mix(server: BenchServer, *, concurrency: int, warmup_s: float, duration_s: float, seed: int,
               mode: str = "quality") -> MixResult:
    """Saturation: `concurrency` back-to-back clients sending the mix. Latencies and errors of what
    finishes in the window; its characters per second count every request's share of the window
    (its characters spread over its time), so a document still running at the window's end
    counts for the part done, and a few documents that happen to finish inside or just after a
    short window do not swing the figure. The clients keep sending until every request sent
    before the window's end is answered, so the load is the same to the end of each."""
    return asyncio.run(_closed(server, concurrency, warmup_s, duration_s, seed, mode))


def solo_shorts(server: BenchServer, *, count: int, seed: int, mode: str = "quality") -> MixResult:
    """Short texts of the mix sent one at a time (the 'alone' baseline)."""
    async def run() -> MixResult:
        result = MixResult()
        shorts = [r for r in mix(count * 3, seed=seed, start=seed * 100_000, mode=mode) if not r.doc][:count]
        async with _client(server.url, 1) as client:
            for req in shorts:
                await _one(client, req, time.perf_counter(), result)
        return result
    return asyncio.run(run())


def solo_model_times(*, threads: int, chars: int = 110, repeats: int = 50) -> dict[str, float]:
    """In-process: the encoder time of one short text and one decode step of one row (ms, median)."""
    model = load_model("quality", intra_op_threads=threads)
    item = ModelInput(sample_text(chars), "en", "de")
    encode, step = [], []
    for _ in range(repeats):
        decoder = model.row_decoder()
        began = time.perf_counter()
        decoder.admit([item])
        encode.append(time.perf_counter() - began)
        began = time.perf_counter()
        decoder.step()
        step.append(time.perf_counter() - began)
    doc = [ModelInput(sample_text(DOC_CHARS[1], salt=k), "en", "de") for k in range(5)]
    doc_encode = []
    for one in doc:
        began = time.perf_counter()
        model.row_decoder().admit([one])
        doc_encode.append(time.perf_counter() - began)
    return {"encoder_ms": float(np.median(encode) * 1000.0), "step_ms": float(np.median(step) * 1000.0), "chars": chars,
            "doc_encoder_ms": float(np.median(doc_encode) * 1000.0)}


@dataclass
class HeadOfLine:
    """Short texts sent one at a time (`alone`), then the same texts beside a document."""

    alone: MixResult = field(default_factory=MixResult)
    beside: MixResult = field(default_factory=MixResult)
    cpu_share: list[float] = field(default_factory=list)  # node CPU seconds / wall seconds, document in flight

    def summary(self) -> dict[str, float]:
        out = {}
        for name, result in (("alone", self.alone), ("beside", self.beside)):
            out.update({f"{name}_p50_ms": result.p("short_ms", 50), f"{name}_p99_ms": result.p("short_ms", 99),
                        f"{name}_ttft_p99_ms": result.p("short_ttft_ms", 99)})
        out.update(median_ratio=out["beside_p50_ms"] / out["alone_p50_ms"], p99_ratio=out["beside_p99_ms"] / out["alone_p99_ms"],
                   doc_p50_ms=self.beside.p("doc_ms", 50), errors=self.alone.errors + self.beside.errors,
                   node_cpu_share_p50=float(np.median(self.cpu_share)) if self.cpu_share else float("nan"))
        return out


async def _head_of_line(server: BenchServer, seed: int, into: HeadOfLine, mode: str) -> None:
    prefix = f"{seed:07d} "
    shorts = [Request(prefix + sample_text(HOL_SHORT_CHARS - len(prefix), seed * 10 + k), False, mode) for k in range(HOL_SHORTS)]
    doc = Request(prefix + sample_text(HOL_DOC_CHARS - len(prefix), seed), True, mode)
    async with _client(server.url, HOL_SHORTS + 1) as client:
        for req in shorts:
            await _one(client, req, time.perf_counter(), into.alone)
        node = psutil.Process(next(n["pid"] for n in (await client.get("/v1/status")).json()["nodes"]))
        cpu, start = _cpu_s(node), time.perf_counter()
        tasks = [asyncio.create_task(_one(client, doc, start, into.beside))]
        for k, req in enumerate(shorts, start=1):
            await asyncio.sleep(max(0.0, start + k * HOL_GAP_S - time.perf_counter()))
            tasks.append(asyncio.create_task(_one(client, req, start + k * HOL_GAP_S, into.beside)))
        await tasks[0]
        into.cpu_share.append((_cpu_s(node) - cpu) / (time.perf_counter() - start))
        await asyncio.gather(*tasks)


def _cpu_s(process: psutil.Process) -> float:
    times = process.cpu_times()
    return float(times.user + times.system)


def head_of_line(server: BenchServer, *, seed: int, into: HeadOfLine, mode: str = "quality") -> None:
    """One round of the head-of-line check: six ~100-character texts alone, one after another;
    then a 4,000-character document and the same six texts arriving 100 ms apart while it runs."""
    asyncio.run(_head_of_line(server, seed, into, mode))


def step_profile(*, threads: int, repeats: int = 30) -> dict[str, float]:
    """In-process, quality tier: the median time (ms) of one decode step by the rows in it (100-char
    texts, with or without a 4,000-character document's row), and of one 32-token-pass prefill
    chunk of that document: what a short text pays per step beside a document on this machine."""
    model = load_model("quality", intra_op_threads=threads)
    shorts = [ModelInput(sample_text(HOL_SHORT_CHARS, salt=k), "en", "de") for k in range(8)]
    doc = ModelInput(sample_text(HOL_DOC_CHARS, salt=99), "en", "de")

    def step_ms(items: list[ModelInput]) -> float:
        decoder = model.row_decoder()
        decoder.admit(items)
        times = []
        for _ in range(repeats):
            began = time.perf_counter()
            decoder.step()
            times.append(time.perf_counter() - began)
        return float(np.median(times) * 1000.0)

    decoder = model.row_decoder(32)
    decoder.admit([ModelInput(sample_text(1000, salt=98), "en", "de")])  # a row that decodes through the prefill
    while not decoder.decoding:
        decoder.step()
    decoder.admit([doc])
    chunks = []
    while decoder.prefilling:
        began = time.perf_counter()
        decoder.step()
        chunks.append(time.perf_counter() - began)
    return {"step_1_short_ms": step_ms(shorts[:1]), "step_short_and_doc_ms": step_ms([shorts[0], doc]),
            "step_8_short_ms": step_ms(shorts), "step_7_short_and_doc_ms": step_ms(shorts[:7] + [doc]),
            "step_short_with_32_prefill_ms": float(np.median(chunks) * 1000.0), "prefill_steps": len(chunks)}


def prefill_profile(*, threads: int, budgets: tuple[int, ...] = (32, 64, 128, 256, 512)) -> dict[str, float]:
    """In-process, quality tier: the 4,000-character document's encoder whole, and chunked at each
    budget: total ms, and the longest chunk (what one step of the running rows waits for it)."""
    model = load_model("quality", intra_op_threads=threads)
    doc = ModelInput(sample_text(HOL_DOC_CHARS, salt=97), "en", "de")
    out: dict[str, float] = {}
    for _ in range(3):  # the last of three runs, warm
        began = time.perf_counter()
        model.row_decoder().admit([doc])
        out["encoder_whole_ms"] = (time.perf_counter() - began) * 1000.0
    stages = model._prefill_stages()  # the two encoder stages chunked prefill runs
    for budget in budgets:
        chunks = []
        prefill = stages.start(doc)
        while not prefill.done:
            began = time.perf_counter()
            stages.advance(prefill, budget)
            chunks.append(time.perf_counter() - began)
        out[f"prefill_{budget}_total_ms"] = sum(chunks) * 1000.0
        out[f"prefill_{budget}_max_chunk_ms"] = max(chunks) * 1000.0
    return out


def dumps(data: object) -> str:
    return json.dumps(data, indent=2, default=float)
