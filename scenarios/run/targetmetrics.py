"""Scrape the target's own Prometheus endpoint (`target.metrics_url`) once a second into
`target_metrics.parquet` rows: time on the run's clock, sample name, labels, value.

A vLLM, TGI, Triton or SGLang server publishes its queue, KV-cache use and token rates here; the
report draws them beside rushhour's client-side latency. Parsing is prometheus-client's own text
parser. The rows kept are bounded: histogram buckets and `_created` stamps are dropped (the
report reads gauges, counters, sums and counts), each sample name keeps at most
`MAX_SERIES_PER_METRIC` label sets and the scrape at most `MAX_SERIES` in all, so a target that
labels by request id cannot fill the disk. A failed scrape costs one sample, is reported through
`on_error` (rate-limited, see `rushhour.scenarios.run.poller.ErrorReporter`) and never stops the run.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path

import httpx
import pandas as pd
from prometheus_client.parser import text_string_to_metric_families

from rushhour.kernel.atomic import write_parquet_atomic
from rushhour.kernel.contract import TARGET_METRICS_COLUMNS, TARGET_METRICS_FILE
from rushhour.scenarios.run.poller import SCRAPE_INTERVAL_S, Poller

MAX_SERIES_PER_METRIC = 64
MAX_SERIES = 2000
DROPPED_SUFFIXES = ("_bucket", "_created")
ENDPOINT = "target metrics"


def sample_rows(text: str, t_s: float, known: dict[str, set[str]]) -> tuple[list[dict[str, object]], int]:
    """The rows of one scrape and how many samples the bounds dropped.

    `known` maps each sample name to the label sets already kept in this run; a new label set
    is admitted while its name has room and the run is under `MAX_SERIES`."""
    rows: list[dict[str, object]] = []
    dropped = 0
    for name, labels, value in _samples(text):
        key = json.dumps(labels, sort_keys=True)
        seen = known.setdefault(name, set())
        if key not in seen:
            if len(seen) >= MAX_SERIES_PER_METRIC or sum(map(len, known.values())) >= MAX_SERIES:
                dropped += 1
                continue
            seen.add(key)
        rows.append({"t_s": float(t_s), "metric": name, "labels": key, "value": float(value)})
    return rows, dropped


def _samples(text: str) -> Iterable[tuple[str, dict[str, str], float]]:
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if not sample.name.endswith(DROPPED_SUFFIXES):
                yield sample.name, dict(sample.labels), float(sample.value)


def target_metrics_frame(rows: list[dict[str, object]]) -> pd.DataFrame:
    """Rows as a frame with exactly the contract's columns and types (also when empty)."""
    frame = pd.DataFrame(rows, columns=list(TARGET_METRICS_COLUMNS))
    return frame.astype(TARGET_METRICS_COLUMNS)


class TargetMetricsScraper(Poller):
    """Polls the target's Prometheus endpoint once a second; `frame()` holds every sample kept."""

    def __init__(self, url: str, *, origin: float, interval_s: float = SCRAPE_INTERVAL_S,
                 on_error: Callable[[dict[str, object]], None] | None = None) -> None:
        super().__init__(url, origin=origin, interval_s=interval_s, name="target-metrics-scraper", on_error=on_error)
        self._known: dict[str, set[str]] = {}
        self.dropped = 0

    def tick(self, client: httpx.Client) -> bool:
        return self.scrape_once(client)

    def scrape_once(self, client: httpx.Client) -> bool:
        """One scrape, timed at the moment it was asked for; False when it failed (and was reported)."""
        t_s = self.elapsed_s()
        text = self._get(client)
        if text is None:
            return False
        try:
            rows, dropped = sample_rows(text, t_s, self._known)
        except ValueError as exc:
            self.errors.failed(ENDPOINT, f"GET {self._url} answered text that is not Prometheus format: {exc}")
            return False
        self.dropped += dropped
        self.keep(rows)
        return True

    def _get(self, client: httpx.Client) -> str | None:
        try:
            response = client.get(self._url)
        except httpx.HTTPError as exc:
            self.errors.failed(ENDPOINT, f"GET {self._url} failed: {type(exc).__name__}: {exc}")
            return None
        if not response.is_success:
            self.errors.failed(ENDPOINT, f"GET {self._url} answered {response.status_code} ({response.text[:200]!r}).")
            return None
        return response.text

    def summary(self) -> dict[str, object]:
        """For the run's `target_metrics` event: scrapes that worked, failures, samples dropped by the bounds."""
        return {"url": self._url, "samples": self.samples, "failed": sum(self.errors.totals.values()),
                "dropped_series_samples": self.dropped}

    def frame(self) -> pd.DataFrame:
        return target_metrics_frame(self.rows())

    def write_into(self, results_dir: Path) -> None:
        """`target_metrics.parquet` in the run's folder, written whole or not at all."""
        write_parquet_atomic(self.frame(), results_dir / TARGET_METRICS_FILE)
