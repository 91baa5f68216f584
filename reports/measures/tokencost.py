"""Dollars per million output tokens and per million input tokens, with intervals, per pool,
priority and phase: the prices an LLM service is compared by, beside dollars per 1k characters.

The dollars are the node-seconds of `rushhour.reports.measures.cost` (fixed by the run). Output tokens are the
`output_tokens` the protocol reported for each successful answer (openai-chat's usage), the
input tokens its `input_tokens` (the server's `usage.prompt_tokens`). A pool's dollars are
shared among the tokens it served (`model` column); a class (priority, phase) pays each pool's
price for the tokens of its requests that pool served, so a class's price is a token-weighted
mean of pool prices.

The interval is the delta method on the token total: over n answers with token counts of
standard deviation s, the total T has standard error s·√n, and the price P = C/T has the interval
C/(T ± z·s·√n) (dollars held fixed: they were measured, not sampled). It says how much the
price would move had the same service answered another draw of the same traffic.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy.special import ndtri

from rushhour.reports.estimate.intervals import CONFIDENCE

PER = 1_000_000.0
TOKEN_COLUMNS = {"output": "output_tokens", "input": "input_tokens"}


def token_price(usd: float, tokens: np.ndarray) -> dict[str, Any]:
    """USD per 1M tokens over one group's answers, with its delta-method interval."""
    tokens = tokens[np.isfinite(tokens) & (tokens >= 0)]
    total = float(tokens.sum())
    if total <= 0:
        return {"tokens": int(total), "usd": usd, "usd_per_1m": None, "ci": [None, None]}
    spread = float(tokens.std(ddof=1)) * np.sqrt(len(tokens)) if len(tokens) > 1 else 0.0
    z = float(ndtri(0.5 + CONFIDENCE / 2.0))
    high_t, low_t = total + z * spread, total - z * spread
    return {"tokens": int(total), "usd": usd, "usd_per_1m": usd / total * PER,
            "ci": [usd / high_t * PER, usd / low_t * PER if low_t > 0 else None]}


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
    price_per_token = _pool_prices(frame["model"].astype(str).to_numpy(), tokens, priced)
    charged = tokens * price_per_token
    total = float(sum(priced.values()))
    return {"known": True, "reason": None, "confidence": CONFIDENCE,
            "whole": token_price(total, tokens),
            "by_pool": [{"pool": pool, **token_price(usd, tokens[frame["model"].to_numpy() == pool])}
                        for pool, usd in sorted(priced.items())],
            **{f"by_{key}": _by_class(frame[key].astype(str).to_numpy(), tokens, charged)
               for key in ("priority", "phase")}}


def _pool_prices(models: np.ndarray, tokens: np.ndarray, priced: dict[str, float]) -> np.ndarray:
    """Each answer's dollars per token: its pool's dollars over that pool's tokens; the dollars of
    a pool that served no token (overhead) spread over every token."""
    served = pd.Series(tokens).groupby(models).sum()
    rates = {pool: usd / served[pool] for pool, usd in priced.items() if served.get(pool, 0) > 0}
    overhead = sum(usd for pool, usd in priced.items() if pool not in rates)
    all_tokens = np.nansum(tokens)
    base = overhead / all_tokens if all_tokens > 0 else 0.0
    return np.array([rates.get(model, 0.0) for model in models], dtype=float) + base


def _by_class(labels: np.ndarray, tokens: np.ndarray, charged: np.ndarray) -> list[dict[str, Any]]:
    rows = []
    for label in sorted(set(labels)):
        mask = labels == label
        rows.append({"class": label, **token_price(float(np.nansum(charged[mask])), tokens[mask])})
    return rows
