"""Prompt tokens the server counted travel from the part files into requests.parquet."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from rushhour.scenarios.load.parts import REQUEST_COLUMNS, merge_requests


def _schedule(n: int) -> pd.DataFrame:
    return pd.DataFrame({"offset_s": np.arange(n) * 0.5, "kind": "short", "text_id": 1, "chars": 20,
                         "mode": "auto", "priority": "paid", "tenant": "a", "deadline_ms": 5000.0, "phase": "base"})


def _parts(**extra: list[object]) -> pd.DataFrame:
    return pd.DataFrame({"row": [0, 1], "intended_s": [0.0, 0.5], "sent_s": [0.0, 0.5], "done_s": [0.2, 0.7],
                         "status": [200, 200], "error": ["", ""], "model": ["m", "m"], "cached": [False, False],
                         "degraded": [False, False], "node": ["", ""], "output_tokens": [5, 7], **extra})


def test_input_tokens_are_kept_and_unsaid_counts_are_empty() -> None:
    merged = merge_requests(_schedule(3), _parts(input_tokens=[812, -1]))
    assert list(merged.columns) == list(REQUEST_COLUMNS)
    tokens = merged["input_tokens"].tolist()
    assert tokens[0] == 812.0 and math.isnan(tokens[1]) and math.isnan(tokens[2])  # row 2 never sent


def test_parts_written_without_the_column_give_empty_input_tokens() -> None:
    merged = merge_requests(_schedule(2), _parts())
    assert merged["input_tokens"].isna().all() and merged["output_tokens"].tolist() == [5.0, 7.0]
