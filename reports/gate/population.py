"""The P99 gate's statistics: who is compared (population), and the ratio with its interval.

The gate compares the P99 of a homogeneous population (by default every request that is not a
long document, one group per priority) so the tail is not a mix dominated by documents. Every
attempted request counts, and a failed one as infinitely slow (rushhour.reports.rundata.attempts.gate_values): it
never delivered an answer, so it is slower than any answer for every percentile.

Paired (same schedule): each request is compared with itself. The statistic is the ratio of the
current P99 to the baseline P99 over the same requests, and its interval comes from a paired
bootstrap over request ids (both runs resampled with the same ids), which cancels everything the
schedule fixes: bursts, text lengths, priorities. Requests through a queue are not independent,
so the ids are drawn in runs of consecutive requests (a moving-block bootstrap, blocks of
BLOCK_SCALE n^(1/3) requests) rather than one at a time. With several baseline runs the baseline value
is the geometric mean of the runs' own P99s over the same requests. Unpaired (different
schedules): each side is resampled on its own, drawing the resampled P99 straight from the Beta
law of the order statistic. Run-to-run noise is rushhour.reports.gate.runnoise's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from rushhour.reports.estimate.intervals import nearest_rank, percentile_of
from rushhour.reports.rundata.attempts import gate_values
from rushhour.reports.rundata.results import ResultsError

__all__ = ["DEFAULT_POPULATION", "GatePopulation", "log_ratio", "paired_draws", "paired_interval",
           "parse_population", "quantiles", "reference_tail", "tail", "unpaired_draws", "unpaired_interval"]

BOOTSTRAP_DRAWS = 2000
MAX_PAIRS = 20_000  # beyond this the paired bootstrap resamples a random subset (a wider, safe interval)
CHUNK_CELLS = 4_000_000
BLOCK_SCALE = 2.0  # on the bench (AR(1) 0.9 latencies, 1,000 requests) 2 erred least: 1 gave more false alarms, 4 too


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
        """The compared metric per row: +inf where the request failed, NaN where it was not
        attempted or (a streaming metric of a successful request) has no value."""
        if self.metric not in requests.columns:
            raise ResultsError(f'The gate compares "{self.metric}", a column requests.parquet does not have.')
        return gate_values(requests, self.metric)

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
    """The baseline's percentile: of one run's values, or the geometric mean of several runs' own
    (runs x n); +inf when any run's percentile is a failure."""
    if reference.ndim == 1:
        return tail(reference, percentile)
    tails = [tail(row, percentile) for row in reference]
    known = np.array([t for t in tails if t is not None])
    return float(np.exp(np.mean(np.log(np.maximum(known, 1e-9))))) if known.size else None


def log_ratio(current: np.ndarray | float, reference: np.ndarray | float) -> np.ndarray:
    """log(current / reference), elementwise, where a failure is +inf: two failures are no change
    (0), a failure against an answer +inf, an answer against a failure -inf."""
    cur = np.log(np.maximum(np.asarray(current, dtype=float), 1e-9))
    ref = np.log(np.maximum(np.asarray(reference, dtype=float), 1e-9))
    both = np.isinf(cur) & np.isinf(ref) & (cur == ref)
    with np.errstate(invalid="ignore"):
        return np.where(both, 0.0, cur - ref)


def paired_draws(reference: np.ndarray, current: np.ndarray, percentile: float, rng: np.random.Generator,
                 draws: int = BOOTSTRAP_DRAWS) -> np.ndarray:
    """Bootstrap draws of log(P(current) / P(reference)), paired over request ids.

    `reference` is one run's values (n,) or several runs' (runs x n); with several, each draw's
    reference is the geometric mean of the runs' percentiles over the same resampled requests.
    """
    reference = reference if reference.ndim == 2 else reference[None, :]
    n = current.size
    if n > MAX_PAIRS:
        pick = np.sort(rng.choice(n, MAX_PAIRS, replace=False))  # thinned, still in time order
        reference, current, n = reference[:, pick], current[pick], MAX_PAIRS
    rank = nearest_rank(percentile, n) - 1
    per_chunk = max(1, CHUNK_CELLS // (n * reference.shape[0]))
    length = block_length(n)
    orders = [np.argsort(row, kind="stable") for row in (current, *reference)]
    logs = []
    for start in range(0, draws, per_chunk):  # chunks of draws, each fully vectorised
        starts = block_starts(rng, min(per_chunk, draws - start), n, length)
        top_cur = resampled_rank(current, orders[0], starts, length, rank)
        tops = np.log(np.maximum([resampled_rank(row, order, starts, length, rank)
                                  for row, order in zip(reference, orders[1:], strict=True)], 1e-9))
        logs.append(log_ratio(top_cur, np.exp(tops.mean(axis=0))))
    return np.concatenate(logs)


def block_length(n: int) -> int:
    """Requests per block of the moving-block bootstrap: BLOCK_SCALE n^(1/3)."""
    return max(1, min(n, round(BLOCK_SCALE * n ** (1.0 / 3.0))))


def block_starts(rng: np.random.Generator, draws: int, n: int, length: int) -> np.ndarray:
    """The first request id of each block (draws x blocks): a resample is its blocks' runs of
    `length` consecutive ids, joined and cut to n ids (the last block may be cut short)."""
    return rng.integers(0, n - length + 1, (draws, -(-n // length)))


def resampled_rank(values: np.ndarray, order: np.ndarray, starts: np.ndarray, length: int, rank: int) -> np.ndarray:
    """The value at 0-based `rank` of each draw's resample of `values` (`order` their argsort).

    The same value as np.partition over the resampled values, without building them: walking
    in from the nearer end of `order`, a draw's answer is the value at which the copies its
    blocks hold reach the rank. Most draws get there within a few times that many values of the
    end; the rest walk on.
    """
    n = values.size
    from_top = rank >= n // 2
    need = n - rank if from_top else rank + 1
    walk = order[::-1] if from_top else order
    result = np.empty(len(starts), dtype=values.dtype)
    todo, count = np.arange(len(starts)), min(n, 4 * need + 64)
    while todo.size:
        ids = walk[:count]
        held = np.cumsum(_copies(starts[todo], n, length, ids), axis=1) >= need
        found = held.any(axis=1)
        result[todo[found]] = values[ids[held[found].argmax(axis=1)]]
        todo, count = todo[~found], min(n, 4 * count)
    return result


def _copies(starts: np.ndarray, n: int, length: int, ids: np.ndarray) -> np.ndarray:
    """How often each of `ids` appears in each draw's resample (draws x ids).

    A block covers the `ids` of a range of their sorted order; one +1 where that range begins
    and one -1 where it ends, summed along the sorted order, count the blocks over each id."""
    draws, blocks = starts.shape
    below = np.zeros(n + 1, dtype=np.int64)  # below[i]: how many of `ids` are less than i
    below[ids + 1] = 1
    below = np.cumsum(below)
    ends = starts + length
    ends[:, -1] = starts[:, -1] + n - (blocks - 1) * length  # the last block holds the ids left to reach n
    row = (np.arange(draws) * (ids.size + 1))[:, None]
    size = draws * (ids.size + 1)
    edges = (np.bincount((below[starts] + row).ravel(), minlength=size)
             - np.bincount((below[ends] + row).ravel(), minlength=size))
    return np.cumsum(edges.reshape(draws, -1), axis=1)[:, below[ids]]


def unpaired_draws(reference: np.ndarray, current: np.ndarray, percentile: float, rng: np.random.Generator,
                   draws: int = BOOTSTRAP_DRAWS) -> np.ndarray:
    """Bootstrap draws of log(P(current) / P(reference)), each side resampled on its own."""
    return log_ratio(beta_draws(np.sort(current), percentile, rng, draws),
                     beta_draws(np.sort(reference), percentile, rng, draws))


def paired_interval(reference: np.ndarray, current: np.ndarray, percentile: float, confidence: float,
                    rng: np.random.Generator, draws: int = BOOTSTRAP_DRAWS) -> tuple[float, float]:
    """Interval of P(current) / P(reference) by a paired bootstrap over request ids."""
    return quantiles(paired_draws(reference, current, percentile, rng, draws), confidence)


def unpaired_interval(reference: np.ndarray, current: np.ndarray, percentile: float, confidence: float,
                      rng: np.random.Generator, draws: int = BOOTSTRAP_DRAWS) -> tuple[float, float]:
    """Interval of P(current) / P(reference), each side resampled on its own."""
    return quantiles(unpaired_draws(reference, current, percentile, rng, draws), confidence)


def beta_draws(ordered: np.ndarray, percentile: float, rng: np.random.Generator, draws: int) -> np.ndarray:
    """Resampled percentiles via the Beta law of the r-th order statistic: O(draws), not O(draws x n)."""
    n = ordered.size
    rank = nearest_rank(percentile, n)
    uniform = rng.beta(rank, n - rank + 1, draws)
    return ordered[np.clip(np.ceil(uniform * n).astype(np.int64), 1, n) - 1]


def quantiles(log_ratios: np.ndarray, confidence: float) -> tuple[float, float]:
    """The two-sided `confidence` interval of the ratio from draws of its logarithm.

    Order statistics (no interpolation), so infinite draws (failures) stay meaningful."""
    side = (1.0 - confidence) / 2.0
    low, high = np.quantile(log_ratios, [side, 1.0 - side], method="inverted_cdf")
    return float(np.exp(low)), float(np.exp(high))
