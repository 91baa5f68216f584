"""Dollars per million output tokens and per million input tokens, with intervals, per pool,
priority and phase: the prices an LLM service is compared by, beside dollars per 1k characters.

The dollars are the node-seconds of `rushhour.reports.measures.cost` (fixed by the run). Output tokens are the
`output_tokens` the protocol reported for each successful answer (openai-chat's usage), the
input tokens its `input_tokens` (the server's `usage.prompt_tokens`). A pool's dollars are
shared among the tokens it served (`model` column); a class (priority, phase) pays each pool's
price for the tokens of its requests that pool served, so a class's price is a token-weighted
mean of pool prices.

The interval is the delta method on the token total: over n answers with token counts of
standard deviation s, the total T has standard error s·n/√n_eff, and the price P = C/T has the
interval C/(T ± z·s·n/√n_eff) (dollars held fixed: they were measured, not sampled). Answers
close in time are alike (a burst of long documents, a tenant with long prompts), so n_eff is
the effective number of answers from batch means over the answers in time order
(rushhour.reports.estimate.blocks), not n. It says how much the price would move had the same
service answered another draw of the same traffic.

The whole run and each pool get an interval of their own. A class has none of its own: its
price is its pools' rates by construction, so its interval is theirs, weighted by the class's
tokens in each pool; a class figure can never claim more precision than the pools it pays.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy.special import ndtri

from rushhour.reports.estimate.blocks import dependence
from rushhour.reports.estimate.intervals import CONFIDENCE

PER = 1_000_000.0
TOKEN_COLUMNS = {"output": "output_tokens", "input": "input_tokens"}
CLASS_METHOD = "the pools' intervals weighted by the class's tokens in each pool"


def token_price(usd: float, tokens: np.ndarray) -> dict[str, Any]:
    """USD per 1M tokens over one group's answers (in time order), with its delta-method interval
    on the effective number of answers."""
    tokens = tokens[np.isfinite(tokens) & (tokens >= 0)]
    total = float(tokens.sum())
    if total <= 0:
        return {"tokens": int(total), "usd": usd, "usd_per_1m": None, "ci": [None, None],
                "method": None, "effective_answers": None}
    seen = dependence(tokens, CONFIDENCE)
    effective = max(seen.effective, 1.0)
    spread = float(tokens.std(ddof=1)) * len(tokens) / np.sqrt(effective) if len(tokens) > 1 else 0.0
    z = float(ndtri(0.5 + CONFIDENCE / 2.0))
    high_t, low_t = total + z * spread, total - z * spread
    return {"tokens": int(total), "usd": usd, "usd_per_1m": usd / total * PER,
            "ci": [usd / high_t * PER, usd / low_t * PER if low_t > 0 else None],
            "method": f"delta method on the token total, {seen.method} over answers in time order",
            "effective_answers": float(effective)}


def token_costs(requests: pd.DataFrame, phases: pd.Series, pools: list[dict[str, Any]],
                window: tuple[float, float]) -> dict[str, Any]:
    """`cost.tokens`: for output and input tokens, the whole run and per pool, priority and phase.

    `pools` are the priced rows of `rushhour.reports.measures.cost` (pool, usd); answers count when they succeeded
    and were scheduled inside `window`, the stretch the dollars were integrated over."""
    intended = requests["intended_s"].to_numpy(float)
    ok = requests["ok"].to_numpy(bool) & (intended >= window[0]) & (intended < window[1])
    frame = requests[ok].assign(phase=phases.to_numpy()[ok])
    return {direction: _direction(frame, column, pools) for direction, column in TOKEN_COLUMNS.items()}


def _direction(frame: pd.DataFrame, column: str, pools: list[dict[str, Any]]) -> dict[str, Any]:
    if column not in frame or not np.isfinite(frame[column].to_numpy(float)).any() \
            or (frame[column].to_numpy(float) < 0).all():
        return {"known": False, "reason": f"the requests carry no {column} (the protocol reports none)"}
    tokens = frame[column].to_numpy(float)
    tokens = np.where(tokens >= 0, tokens, np.nan)
    priced = {row["pool"]: float(row["usd"]) for row in pools if row.get("usd") is not None}
    models = frame["model"].astype(str).to_numpy()
    by_pool = [{"pool": pool, **token_price(usd, tokens[models == pool])} for pool, usd in sorted(priced.items())]
    total = float(sum(priced.values()))
    return {"known": True, "reason": None, "confidence": CONFIDENCE,
            "whole": token_price(total, tokens), "by_pool": by_pool,
            **{f"by_{key}": _by_class(frame[key].astype(str).to_numpy(), models, tokens, priced, by_pool)
               for key in ("priority", "phase")}}


def _pool_rates(models: np.ndarray, tokens: np.ndarray, priced: dict[str, float]) -> tuple[dict[str, float], float]:
    """Each pool's dollars per token (its dollars over its tokens), and the overhead per token:
    the dollars of pools that served no token spread over every token."""
    served = pd.Series(tokens).groupby(models).sum()
    rates = {pool: usd / served[pool] for pool, usd in priced.items() if served.get(pool, 0) > 0}
    overhead = sum(usd for pool, usd in priced.items() if pool not in rates)
    all_tokens = np.nansum(tokens)
    return rates, overhead / all_tokens if all_tokens > 0 else 0.0


def _by_class(labels: np.ndarray, models: np.ndarray, tokens: np.ndarray, priced: dict[str, float],
              by_pool: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each class's dollars and price at its pools' rates, and the pools' intervals weighted by
    the class's tokens in each (None where a pool's bound is)."""
    rates, overhead = _pool_rates(models, tokens, priced)
    per_answer = np.array([rates.get(model, 0.0) for model in models], dtype=float) + overhead
    bounds = {row["pool"]: row["ci"] for row in by_pool if row["usd_per_1m"] is not None}
    rows = []
    for label in sorted(set(labels)):
        mask = labels == label
        price = token_price(float(np.nansum(tokens[mask] * per_answer[mask])), tokens[mask])
        served = pd.Series(tokens[mask]).groupby(models[mask]).sum()
        ci: list[float | None] = [None, None]
        if price["usd_per_1m"] is not None:
            ci = [_weighted(served / served.sum(), bounds, side, overhead * PER) for side in (0, 1)]
        rows.append({"class": label, **price, "ci": ci, "method": CLASS_METHOD, "effective_answers": None})
    return rows


def _weighted(shares: pd.Series, bounds: dict[str, list[float | None]], side: int, overhead: float) -> float | None:
    """One end of a class's interval: its pools' bounds weighted by its token shares, plus the
    overhead per 1M tokens; a pool without a price (none of its dollars counted) costs 0."""
    total = overhead
    for pool, share in shares.items():
        end = bounds.get(str(pool), [0.0, 0.0])[side]
        if end is None:
            return None
        total += float(share) * float(end)
    return total
