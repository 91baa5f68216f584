"""The P99 gate's statistics: who is compared (population), and the ratio with its interval.

The gate compares the P99 of a homogeneous population (by default every request that is not a
long document, one group per priority) so the tail is not a mix dominated by documents. Every
attempted request counts, a failure at the moment it ended (reports.attempts).

Paired (same schedule): each request is compared with itself. The statistic is the ratio of the
current P99 to the baseline P99 over the same requests, and its interval comes from a paired
bootstrap over request ids (both runs resampled with the same ids), which cancels everything the
schedule fixes: bursts, text lengths, priorities. With several baseline runs the baseline value
of a request is its median over them. Unpaired (different schedules): each side is resampled on
its own, drawing the resampled P99 straight from the Beta law of the order statistic.

Run-to-run noise: with two or more baseline runs, the same ratio is computed between every pair
of them; the largest is the noise band, the change the same code showed against itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import permutations

import numpy as np
import pandas as pd

from reports.attempts import attempt_values
from reports.results import ResultsError
from reports.stats import nearest_rank, percentile_of

__all__ = ["DEFAULT_POPULATION", "GatePopulation", "noise_band", "paired_interval",
           "parse_population", "tail", "unpaired_interval"]

BOOTSTRAP_DRAWS = 2000
MAX_PAIRS = 20_000  # beyond this the paired bootstrap resamples a random subset (a wider, safe interval)
CHUNK_CELLS = 4_000_000


@dataclass(frozen=True, kw_only=True)
class GatePopulation:
    """Which requests the gate compares, and how they are grouped.

    kinds: only these request kinds (None: every kind); exclude_kinds: never these;
    priorities: only these priorities (None: every one); split_by: a requests column giving one
    group per value (None: one group); percentile: the tail the gate watches.
    """

    kinds: tuple[str, ...] | None = None
    exclude_kinds: tuple[str, ...] = ("document",)
    split_by: str | None = "priority"
    percentile: float = 99.0
    priorities: tuple[str, ...] | None = None
    metric: str = "latency_ms"
    """The requests.parquet column compared: latency_ms, or ttft_ms, tpot_ms, itl_max_ms... (a
    request without a value, e.g. no first token, is left out of a streaming metric)."""

    def describe(self) -> str:
        """One line, e.g. "P99 of attempted requests (kind not document), one group per priority"."""
        parts = []
        if self.kinds:
            parts.append("kind " + "/".join(self.kinds))
        if self.exclude_kinds:
            parts.append("kind not " + "/".join(self.exclude_kinds))
        if self.priorities:
            parts.append("priority " + "/".join(self.priorities))
        scope = ", ".join(parts) if parts else "every request"
        split = f"one group per {self.split_by}" if self.split_by else "one group"
        metric = "" if self.metric == "latency_ms" else f" {self.metric}"
        return f"P{self.percentile:g}{metric} of attempted requests ({scope}), {split}"

    def values(self, requests: pd.DataFrame) -> np.ndarray:
        """The compared metric per row, NaN where the request was not attempted or has no value."""
        if self.metric not in requests.columns:
            raise ResultsError(f'The gate compares "{self.metric}", a column requests.parquet does not have.')
        return attempt_values(requests, self.metric)

    def groups(self, requests: pd.DataFrame) -> dict[str, np.ndarray]:
        """Group name -> boolean mask over the rows (attempted or not: the caller pairs them)."""
        mask = np.ones(len(requests), dtype=bool)
        kind = requests["kind"].to_numpy()
        if self.kinds:
            mask &= np.isin(kind, self.kinds)
        if self.exclude_kinds:
            mask &= ~np.isin(kind, self.exclude_kinds)
        if self.priorities:
            mask &= np.isin(requests["priority"].to_numpy(), self.priorities)
        if self.split_by is None:
            return {"all": mask}
        if self.split_by not in requests.columns:
            raise ResultsError(f'The gate groups requests by "{self.split_by}", a column requests.parquet does not have.')
        labels = requests[self.split_by].astype(str).to_numpy()
        return {str(name) or "(none)": mask & (labels == name) for name in sorted(pd.unique(labels[mask]))}


DEFAULT_POPULATION = GatePopulation()
_LIST_KEYS = {"kinds": "kinds", "exclude": "exclude_kinds", "priorities": "priorities"}


def parse_population(text: str) -> GatePopulation:
    """A population from the CLI's spelling, e.g. "kinds=short,by=priority,p=99" or "exclude=document,by=none".

    Keys: kinds, exclude, priorities (values separated by "|"), by (a requests column or "none"),
    p (the percentile). Unnamed keys keep DEFAULT_POPULATION's values. Raises ValueError.
    """
    fields: dict[str, object] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not (value or key in _LIST_KEYS):
            raise ValueError(f'Gate population item "{item}" in "{text}" is not of the form key=value.')
        if key in _LIST_KEYS:
            values = tuple(v for v in value.split("|") if v)
            fields[_LIST_KEYS[key]] = values if values or key == "exclude" else None
        elif key == "by":
            fields["split_by"] = None if value == "none" else value
        elif key == "p":
            fields["percentile"] = _percentile(value, text)
        elif key == "metric":
            fields["metric"] = value
        else:
            raise ValueError(f'Gate population key "{key}" in "{text}" is unknown; use kinds, exclude, '
                             "priorities, by or p.")
    return GatePopulation(**fields)  # type: ignore[arg-type]


def _percentile(value: str, text: str) -> float:
    try:
        percentile = float(value)
    except ValueError:
        percentile = -1.0
    if not 0 < percentile < 100:
        raise ValueError(f'Gate percentile "{value}" in "{text}" must be a number between 0 and 100.')
    return percentile


def tail(values: np.ndarray, percentile: float) -> float | None:
    """The nearest-rank percentile of `values` (NaN dropped), None when empty."""
    return percentile_of(values, percentile).value


def reference_tail(reference: np.ndarray, percentile: float) -> float | None:
    """The baseline's percentile: of one run's values, or the median of several runs' own (runs x n)."""
    if reference.ndim == 1:
        return tail(reference, percentile)
    tails = [tail(row, percentile) for row in reference]
    known = [t for t in tails if t is not None]
    return float(np.median(known)) if known else None


def paired_interval(reference: np.ndarray, current: np.ndarray, percentile: float, confidence: float,
                    rng: np.random.Generator, draws: int = BOOTSTRAP_DRAWS) -> tuple[float, float]:
    """Interval of P(current) / P(reference) by a paired bootstrap over request ids.

    `reference` is one run's values (n,) or several runs' (runs x n); with several, each draw's
    reference is the median of the runs' percentiles over the same resampled requests.
    """
    reference = reference if reference.ndim == 2 else reference[None, :]
    n = current.size
    if n > MAX_PAIRS:
        pick = rng.choice(n, MAX_PAIRS, replace=False)
        reference, current, n = reference[:, pick], current[pick], MAX_PAIRS
    rank = nearest_rank(percentile, n) - 1
    per_chunk = max(1, CHUNK_CELLS // (n * reference.shape[0]))
    ratios = []
    for start in range(0, draws, per_chunk):  # chunks of draws, each fully vectorised
        ids = rng.integers(0, n, (min(per_chunk, draws - start), n))
        top_cur = np.partition(current[ids], rank, axis=1)[:, rank]
        top_ref = np.median([np.partition(row[ids], rank, axis=1)[:, rank] for row in reference], axis=0)
        ratios.append(top_cur / np.maximum(top_ref, 1e-9))
    return _quantiles(np.concatenate(ratios), confidence)


def unpaired_interval(reference: np.ndarray, current: np.ndarray, percentile: float, confidence: float,
                      rng: np.random.Generator, draws: int = BOOTSTRAP_DRAWS) -> tuple[float, float]:
    """Interval of P(current) / P(reference), each side resampled on its own."""
    ratio = _beta_draws(np.sort(current), percentile, rng, draws) / np.maximum(
        _beta_draws(np.sort(reference), percentile, rng, draws), 1e-9)
    return _quantiles(ratio, confidence)


def _beta_draws(ordered: np.ndarray, percentile: float, rng: np.random.Generator, draws: int) -> np.ndarray:
    """Resampled percentiles via the Beta law of the r-th order statistic: O(draws), not O(draws x n)."""
    n = ordered.size
    rank = nearest_rank(percentile, n)
    uniform = rng.beta(rank, n - rank + 1, draws)
    return ordered[np.clip(np.ceil(uniform * n).astype(np.int64), 1, n) - 1]


def _quantiles(ratios: np.ndarray, confidence: float) -> tuple[float, float]:
    side = (1.0 - confidence) / 2.0
    low, high = np.quantile(ratios, [side, 1.0 - side])
    return float(low), float(high)


def noise_band(baselines: list[np.ndarray], percentile: float, paired: bool) -> float | None:
    """The largest P ratio between two baseline runs (>= 1), or None with fewer than two runs.

    Paired: each array holds the same requests in the same order (NaN where a run did not attempt
    one), and only requests both runs attempted count.
    """
    if len(baselines) < 2:
        return None
    ratios = []
    for first, second in permutations(baselines, 2):
        keep = ~np.isnan(first) & ~np.isnan(second) if paired else None
        top_a = tail(first[keep] if paired else first, percentile)
        top_b = tail(second[keep] if paired else second, percentile)
        if top_a is not None and top_b is not None:
            ratios.append(top_a / max(top_b, 1e-9))
    return max(1.0, max(ratios)) if ratios else None

