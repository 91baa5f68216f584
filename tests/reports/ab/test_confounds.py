"""The cache check on stand-in nights whose shares are known: it answers in ab.json's own
`CacheShares`, reported hits first, the latency mixture where none are reported."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rushhour.reports.ab.confounds import cache_check
from rushhour.reports.ab.document_model import AbDocument, CacheShares


def _night(cached_baseline: float, cached_candidate: float, n: int = 2000) -> pd.DataFrame:
    """`n` answered requests in pairs, the first of each pair the baseline's; each arm's first
    `cached_*` share of its requests served from cache; every latency 40 ms."""
    index = np.arange(n)
    arm = np.where(index % 2 == 0, "baseline", "candidate")
    rank = index // 2 / (n // 2)
    cached = np.where(arm == "baseline", rank < cached_baseline, rank < cached_candidate)
    return pd.DataFrame({"trial": index // 10, "arm": arm, "ok": True, "cached": cached, "latency_ms": 40.0,
                         "sent_s": index / 100, "done_s": index / 100 + 0.04})


def test_cache_check_reported_shares_apart_make_the_night_invalid_in_ab_jsons_model() -> None:
    check = cache_check(_night(0.5, 0.0))
    assert isinstance(check, CacheShares) and "cache" in AbDocument.model_fields
    assert check.method == "reported" and check.reported and check.confounded
    assert check.baseline == pytest.approx(0.5) and check.candidate == 0.0
    assert check.high is not None and check.high < -0.05
    assert "the baseline answered 50% of requests from its cache and the candidate 0%" in check.sentence


def test_cache_check_equal_reported_shares_are_no_confound() -> None:
    check = cache_check(_night(0.2, 0.2))
    assert check.method == "reported" and not check.confounded and check.sentence == ""
    assert check.baseline == pytest.approx(0.2) and check.candidate == pytest.approx(0.2)


def test_cache_check_without_reported_hits_reads_the_latency_mixture() -> None:
    requests = _night(0.0, 0.0).drop(columns="cached")
    requests.loc[(requests["arm"] == "baseline") & (requests.index % 4 == 0), "latency_ms"] = 2.0
    check = cache_check(requests)
    assert check.method == "latency mixture" and not check.reported and check.confounded
    assert check.baseline == pytest.approx(0.5) and check.candidate == 0.0
    assert CacheShares.model_validate(check.model_dump()) == check
